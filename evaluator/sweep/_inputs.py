"""The files a sweep's configs name, by content: part of the run's identity (:func:`inputs_digest`).

A sweep's run id hashes its config and axes; a config names some of its inputs by file, a traffic file
(``traffic.path``, a job's or a study's) or a machine (``topology.name`` of ``topology=machine``, read from its
YAML file: ``conf/machine/`` or ``$EVALUATOR_MACHINE_PATH``). Until 2026-12-06 the run id did not see what those
files hold, so the same command after a file was edited returned the first run's dataset ("has already
finished; nothing to compute") with the old numbers. The digest covers every such file's content (files above
:data:`CONTENT_LIMIT` bytes by size and modification time instead, not read whole).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

__all__ = ["inputs_digest", "referenced_files", "CONTENT_LIMIT"]

CONTENT_LIMIT = 1 << 30
"""Files up to this size (1 GiB) are hashed by content; larger ones by size and modification time."""


def _plain(cfg: Any) -> Any:
    """A schema dataclass as nested mappings and sequences (OmegaConf's containers are both)."""
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        return dataclasses.asdict(cfg)
    return cfg


def _nested(v: Any) -> bool:
    return isinstance(v, Mapping) or (isinstance(v, Sequence) and not isinstance(v, (str, bytes)))


def _leaves(node: Any, key: str = "") -> Iterator[tuple[str, Any, Any]]:
    """``(key, value, parent)`` of every leaf of a plain config (``key``: the leaf's own name)."""
    if isinstance(node, Mapping):
        for k, v in node.items():
            if _nested(v):
                yield from _leaves(v, str(k))
            else:
                yield str(k), v, node
    elif _nested(node):
        for v in node:
            yield from _leaves(v, key) if _nested(v) else iter([(key, v, node)])


def _machine_file(name: Any) -> str | None:
    from ..machines import load_machine

    try:
        source = load_machine(name).source
    except Exception:  # noqa: BLE001 (an unknown machine is refused where the config is built, with its message)
        return None
    return source if isinstance(source, str) and os.path.isfile(source) else None


def referenced_files(configs: Iterable[Any], axes: Iterable[Any] = ()) -> list[str]:
    """The absolute paths of the files the configs and the axes' values name: every existing file under a key
    ``path``, and the machine file of every ``topology`` of kind ``machine`` (its ``name``)."""
    files: set[str] = set()
    machines: set[Any] = set()

    def visit(plain: Any) -> None:
        for key, value, parent in _leaves(plain):
            if key == "path" and isinstance(value, str) and os.path.isfile(value):
                files.add(os.path.abspath(value))
            if key == "kind" and value == "machine" and isinstance(parent, Mapping) and "name" in parent:
                machines.add(parent["name"])

    for cfg in configs:
        visit(_plain(cfg))
    for ax in axes:
        for row in ax.values:
            for key, value in zip(ax.keys, row):
                visit({key.rsplit(".", 1)[-1]: _plain(value)})
                if key == "topology.name":
                    machines.add(value)
    files.update(f for f in map(_machine_file, machines) if f is not None)
    return sorted(files)


def _file_digest(path: str) -> bytes:
    st = os.stat(path)
    if st.st_size > CONTENT_LIMIT:
        return f"size {st.st_size} mtime {st.st_mtime_ns}".encode()
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.digest()


def inputs_digest(configs: Iterable[Any], axes: Iterable[Any] = ()) -> str:
    """A SHA-256 (hex) of the contents of :func:`referenced_files`, not of where they are (the same checkout moved,
    or a clean clone, keeps its run ids; the config names the files already); ``""`` where there are none (the run
    ids of sweeps that name no file stay as they were)."""
    paths = referenced_files(configs, axes)
    if not paths:
        return ""
    h = hashlib.sha256()
    for digest in sorted(_file_digest(p) for p in paths):
        h.update(digest)
    return h.hexdigest()
