"""``evaluator._ops.differentiable`` holds per thread: the sweep's local chunk threads trace at the same time.

Before: one global flag. Thread A opened the context, thread B opened it, A closed it (restoring "off") while B
was still tracing, and B's ``jax.vjp`` met the ``custom_vmap`` scatter JAX cannot differentiate ("Linearization
failed to produce known values for all output primals"): the README's UGAL sweep (``ray.enabled=false``, two
chunk threads) failed that way once in a clean-clone run.
"""

from __future__ import annotations

import threading

import jax
import jax.numpy as jnp
import numpy as np

from evaluator._ops import differentiable, segment_add


def test_one_threads_exit_does_not_close_anothers_context():
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    out: dict = {}

    def a():
        with differentiable():
            a_in.set()
            b_in.wait(5)
        a_out.set()

    def b():
        a_in.wait(5)
        with differentiable():
            b_in.set()
            a_out.wait(5)  # A has left its context; this thread is still in its own
            idx = jnp.asarray([0, 2, 2, 3])
            try:
                _, pull = jax.vjp(lambda w: segment_add(w, idx, 4), jnp.ones(4))
                out["grad"] = np.asarray(pull(jnp.arange(4.0))[0])
            except Exception as exc:  # (the old global flag: not differentiable here)
                out["error"] = exc

    ta, tb = threading.Thread(target=a), threading.Thread(target=b)
    ta.start(), tb.start()
    ta.join(10), tb.join(10)
    assert "error" not in out, out.get("error")
    np.testing.assert_array_equal(out["grad"], [0.0, 2.0, 2.0, 3.0])
