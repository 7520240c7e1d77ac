"""The move evaluators' jitted functions, shared by content (:class:`CompiledMoves`).

A :class:`~evaluator.mapping._moves.MoveEvaluator` traces its functions (the loads of a mapping, its score, the
heat, and one scorer per call shape, batch state and listing count) from its own data: the topology, the routing's
operator and tables, the flow table, the slots' nodes and the module constants the tracing reads. Two evaluators
of the same content therefore trace the same programs, and the second reuses the first's functions with their
compilations (a search rebuilt on the same job, a bench case or a test that builds it again), as the batched
kernels are shared between networks of the same content (:func:`evaluator._batch.compiled.batch_kernel`).

What the key holds (:func:`content_key`): the evaluator's class, the kernels' content key (the topology and the
operator's data; an operator with a ``compile_key`` is not shared: its tables are captured by the functions, and
the key stands for operators of other tables), the flow table, the slots' nodes, the number of tasks, the pair
table's width and the device's platform; and, read at every lookup, the constants of the modules of the
evaluator's class and its bases (:func:`trace_constants`) and the compiler options, so that a changed constant
traces anew. An evaluator one of whose methods is replaced on the instance (a test's spy or stub) keeps functions
of its own: what it traces is not the class's.

The functions close over the evaluator that made them; that one stays alive while an evaluator of its content holds
them (:data:`_STORE` is weak-valued: nothing is kept once no evaluator holds them).
"""

from __future__ import annotations

import functools
import sys
import threading
import weakref

__all__ = ["CompiledMoves", "compiled_moves", "content_key", "forget_moves", "trace_constants"]

_STORE: "weakref.WeakValueDictionary[tuple, CompiledMoves]" = weakref.WeakValueDictionary()
_LOCK = threading.Lock()


class CompiledMoves:
    """The jitted functions of one content: ``loads``, ``score``, ``heat`` and the dicts of scorers (``scores``, per
    call shape), batch states (``state_calls``, per move size) and listing counts (``need_calls``)."""

    __slots__ = ("loads", "score", "heat", "scores", "state_calls", "need_calls", "__weakref__")

    def __init__(self, ev):
        from ._move_scores import move_jit

        self.loads = move_jit(ev._loads_fn)
        self.score = move_jit(ev._score_fn)
        self.heat = move_jit(ev._heat_fn)
        self.scores: dict = {}
        self.state_calls: dict = {}
        self.need_calls: dict = {}

    def __len__(self) -> int:
        return len(self.scores) + len(self.state_calls) + len(self.need_calls)


@functools.cache
def _modules(cls: type) -> tuple:
    """The modules of ``cls`` and of its bases in this package (the evaluator's, its calls' and its scores')."""
    return tuple(dict.fromkeys(sys.modules[c.__module__] for c in cls.__mro__
                               if c.__module__.startswith(__package__ + ".")))


_SIMPLE = (bool, int, float, str, tuple, type(None))


def trace_constants(cls: type) -> tuple:
    """The constants (upper-case names of numbers, strings and tuples) of the modules of ``cls`` and its bases, and
    the move scorers' compiler options, as they are now."""
    from ._move_scores import COMPILER_OPTIONS

    out = [tuple(sorted((str(k), repr(v)) for k, v in COMPILER_OPTIONS.items()))]
    for m in _modules(cls):
        out.extend((m.__name__, k, v) for k, v in vars(m).items() if k.isupper() and isinstance(v, _SIMPLE))
    return tuple(out)


@functools.cache
def _method_names(cls: type) -> frozenset:
    return frozenset(n for n in dir(cls) if callable(getattr(cls, n, None)))


def replaced_methods(ev) -> bool:
    """Whether a method of ``ev``'s class is replaced on the instance."""
    names = _method_names(type(ev))
    return any(k in names for k in vars(ev))


def content_key(ev) -> str | None:
    """What determines ``ev``'s traced functions apart from the constants, hashed; None where it is not shared
    (an operator with a ``compile_key``, or data that cannot be hashed)."""
    import numpy as np

    from .. import _program_store as store
    from .._batch.compiled import content_key as kernels_key

    op = ev.kernel.operator
    if op.compile_key is not None:
        return None
    kernels = kernels_key(ev.topology, op, False)
    if kernels is None:
        return None
    platform = next(iter(ev._dev["cap"].devices())).platform
    return store.fingerprint("move_evaluator", type(ev).__module__, type(ev).__qualname__, kernels, ev.table,
                             np.asarray(ev.slot_node), int(ev.n_tasks), getattr(ev, "width", -1), platform)


def compiled_moves(ev, own: dict) -> CompiledMoves:
    """The jitted functions ``ev`` calls now: those of its content and the constants as they are (made by the first
    evaluator of that content and kept in ``own``, ``ev``'s own dict of what it holds), or, where ``ev`` is not
    shared (:func:`content_key` is None, or a method is replaced on it), its own."""
    content = own.get("content", False)
    if content is False:
        content = own["content"] = content_key(ev)
    key = None if content is None or replaced_methods(ev) else (content, trace_constants(type(ev)))
    held = own.get(key)
    if held is not None:
        return held
    with _LOCK:
        held = own.get(key)
        if held is None:
            held = _STORE.get(key) if key is not None else None
            if held is None:
                held = CompiledMoves(ev)
                if key is not None:
                    _STORE[key] = held
            own[key] = held
    return held


def forget_moves() -> None:
    """Forget the functions shared by content: the next evaluator built traces its own (as a later process would).
    Evaluators already built keep theirs."""
    with _LOCK:
        _STORE.clear()
