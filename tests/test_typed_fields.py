"""Every public array field of the package is typed with its shape (issue 36 item 4: shapes held): no field of a
public class (dataclass, NamedTuple, or annotated at class level) is a bare ``np.ndarray`` / ``jax.Array``; each is
a jaxtyping ``Int[np.ndarray, "flow"]``, ``Float[Array, "point link"]``, ... (or an alias of one from
``evaluator._types``), inside containers too (``dict[str, Int[np.ndarray, "task"]]``)."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import re
import typing

import pytest

import evaluator

_DTYPE = re.compile(r"\b(?:Float|Int|UInt|Bool|Shaped|Num|Real|Integer|Inexact|Complex|Key|BFloat16|Float\d+|Int\d+|"
                    r"UInt\d+|Complex\d+)\[")
_BARE = re.compile(r"(?<![\w.])(?:numpy\.ndarray|np\.ndarray|jax\.numpy\.ndarray|jnp\.ndarray|jax\.Array|jnp\.Array|"
                   r"ndarray|Array)(?![\w.])")


def _text(annotation: object) -> str:
    """An annotation as written: ``from __future__ import annotations`` keeps strings; NamedTuple wraps them in a
    ForwardRef; an evaluated class reads as its dotted name."""
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, typing.ForwardRef):
        return annotation.__forward_arg__
    if isinstance(annotation, type):
        return f"{annotation.__module__}.{annotation.__qualname__}"
    return repr(annotation)


def _without_shapes(text: str) -> str:
    """``text`` with every jaxtyping ``Dtype[...]`` subscript (brackets matched) replaced by a placeholder."""
    out, i = [], 0
    while (m := _DTYPE.search(text, i)) is not None:
        out.append(text[i:m.start()])
        j, depth = m.end(), 1
        while j < len(text) and depth:
            depth += {"[": 1, "]": -1}.get(text[j], 0)
            j += 1
        out.append("SHAPED")
        i = j
    out.append(text[i:])
    return "".join(out)


def is_bare(annotation: object) -> bool:
    """Whether an annotation names an array type outside any jaxtyping dtype/shape subscript."""
    return _BARE.search(_without_shapes(_text(annotation))) is not None


def _fields(cls: type) -> dict[str, object]:
    """The public annotated fields of ``cls`` (its own and those of the package's bases), name -> raw annotation."""
    out: dict[str, object] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__.split(".")[0] == "evaluator":
            out.update(klass.__dict__.get("__annotations__", {}))
    if dataclasses.is_dataclass(cls):  # every dataclass field is annotated (the walk above holds them all)
        assert {f.name for f in dataclasses.fields(cls)} <= set(out)
    return {k: v for k, v in out.items() if not k.startswith("_")}


def _modules() -> list:
    names = [m.name for m in pkgutil.walk_packages(evaluator.__path__, "evaluator.")
             if not m.name.endswith("__main__")]  # __main__ runs the command line
    return [evaluator] + [importlib.import_module(n) for n in names]


def _public_classes():
    for mod in _modules():
        for name, cls in vars(mod).items():
            if inspect.isclass(cls) and cls.__module__ == mod.__name__ and not name.startswith("_"):
                yield mod.__name__, name, cls


@pytest.mark.parametrize("annotation, bare", [
    ("np.ndarray", True), ("numpy.ndarray", True), ("jax.Array", True), ("Array", True), ("jnp.ndarray", True),
    ("np.ndarray | None", True), ("dict[str, np.ndarray]", True), ("tuple[np.ndarray, np.ndarray] | None", True),
    (typing.ForwardRef("list[tuple[np.ndarray, int]]"), True), (__import__("numpy").ndarray, True),
    ('Int[np.ndarray, "flow"]', False), ('Float[Array, "point link"] | None', False),
    ('dict[str, Shaped[np.ndarray, "point ..."]]', False), ('list[Float[jax.Array, "var"]]', False),
    ("LinkInts", False), ("ArrayLike", False), ("Callable | None", False), ("np.ndarrays", False),
    ('tuple[Int[np.ndarray, "pair"], np.ndarray]', True),
])
def test_is_bare(annotation, bare):
    assert is_bare(annotation) is bare


def test_bare_fields_are_found():
    """The scan sees fields: a throwaway dataclass, NamedTuple and annotated class with bare arrays are named."""
    import numpy as np  # noqa: F401

    @dataclasses.dataclass
    class D:
        a: "np.ndarray"
        b: 'Int[np.ndarray, "flow"]'

    class N(typing.NamedTuple):
        m: "dict[str, np.ndarray]"

    class C:
        x: "jax.Array | None"

    for cls in (D, N, C):
        cls.__module__ = "evaluator.fake"
    assert [k for k, v in _fields(D).items() if is_bare(v)] == ["a"]
    assert [k for k, v in _fields(N).items() if is_bare(v)] == ["m"]
    assert [k for k, v in _fields(C).items() if is_bare(v)] == ["x"]


def test_every_public_array_field_is_typed_with_its_shape():
    classes = list(_public_classes())
    assert len(classes) > 50  # the walk sees the package (it would pass vacuously on a broken walk)
    assert any(name == "RoutingOperator" for _, name, _ in classes)
    bare = [f"{mod}.{name}.{field}: {_text(ann)}" for mod, name, cls in classes
            for field, ann in _fields(cls).items() if is_bare(ann)]
    assert not bare, ("public array fields without a jaxtyping dtype and shape (write e.g. "
                      "Int[np.ndarray, \"flow\"]; axis names from evaluator._types.AXIS_MEANINGS):\n  "
                      + "\n  ".join(bare))
