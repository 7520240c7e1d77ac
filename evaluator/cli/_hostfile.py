"""``--write-hostfile FILE --hostnames FORMAT|FILE`` of ``evaluator placement`` and ``evaluator map``: Slurm's
hostfile of the placement or mapping (:mod:`evaluator.placement.hostfile`), checked before anything is computed."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError
from ..io import check_writable
from ..placement.hostfile import hostnames

__all__ = ["add_options", "check_options", "names_of"]


def add_options(ap) -> None:
    ap.add_argument("--write-hostfile", metavar="FILE", default=None,
                    help="write FILE, Slurm's hostfile of the result: one host name per rank, rank 0 first (SLURM_"
                         "HOSTFILE=FILE srun --distribution=arbitrary -n N ...); needs --hostnames")
    ap.add_argument("--hostnames", metavar="FORMAT|FILE", default=None,
                    help="the host name of every node id, for --write-hostfile: a format with one field for the id "
                         "(nid{:05d}: Cray's names) or a file of one name per line, node 0 first")


def check_options(args) -> None:
    """Refused before anything is computed: one of the two options without the other, a FILE already there
    (without ``--force``) or in a directory that cannot be written."""
    if (args.write_hostfile is None) != (args.hostnames is None):
        given, missing = (("--write-hostfile", "--hostnames") if args.hostnames is None else
                          ("--hostnames", "--write-hostfile"))
        raise ConfigError(given, getattr(args, given[2:].replace("-", "_")), f"with {missing} (a hostfile names the "
                          "hosts: --write-hostfile FILE --hostnames nid{:05d}, or a file of names)",
                          f"Add {missing}, or drop {given}.")
    if args.write_hostfile is None:
        return
    f = Path(args.write_hostfile)
    if f.is_dir():
        raise ConfigError("--write-hostfile", args.write_hostfile, "a file path", "It is a directory.")
    if f.exists() and not args.force:
        raise ConfigError("--write-hostfile", args.write_hostfile, "a file not there yet",
                          "It exists; choose another path, or add --force to replace it.")
    check_writable("--write-hostfile", f.parent)


def names_of(args, n_nodes: int) -> list[str] | None:
    """Every node id's host name from ``--hostnames`` (None without ``--write-hostfile``)."""
    return None if args.write_hostfile is None else hostnames(args.hostnames, n_nodes)
