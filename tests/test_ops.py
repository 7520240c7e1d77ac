"""The kernels' array primitives (:mod:`evaluator._ops`) against NumPy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evaluator._ops import first_argmax, segment_add, take


@pytest.mark.parametrize("shape, axis", [((7,), 0), ((7, 3), 0), ((7, 3, 2), 0), ((5, 7), 1), ((5, 7, 4), 1),
                                         ((7, 3), 1), ((7, 3, 2), 1)])
@pytest.mark.parametrize("ishape", [(), (4,), (2, 3)])
def test_take_is_numpy_take(shape, ishape, axis):
    """``take`` (one ``lax.gather``) is ``np.take`` for every index shape and axis, also under ``vmap``."""
    rng = np.random.default_rng(len(shape) * 10 + len(ishape) + axis)
    x = rng.normal(size=shape)
    idx = rng.integers(0, shape[axis], size=ishape).astype(np.int32)
    ref = np.take(x, idx, axis=axis)
    got = np.asarray(take(jnp.asarray(x), jnp.asarray(idx), axis))
    assert got.shape == ref.shape and np.array_equal(got, ref)
    xs = np.stack([x, x + 1.0])
    idxs = np.stack([idx, idx[::-1] if idx.ndim else idx])
    batched = np.asarray(jax.vmap(lambda a, i: take(a, i, axis))(jnp.asarray(xs), jnp.asarray(idxs)))
    assert np.array_equal(batched, np.stack([np.take(a, i, axis=axis) for a, i in zip(xs, idxs)]))


def test_take_refuses_other_axes():
    with pytest.raises(ValueError, match="axis must be 0 or 1"):
        take(jnp.zeros((2, 2, 2)), jnp.zeros(1, jnp.int32), 2)


def test_segment_add_and_first_argmax_are_numpy():
    rng = np.random.default_rng(3)
    data = rng.integers(0, 9, size=50).astype(np.float64)
    idx = rng.integers(0, 6, size=50).astype(np.int32)
    assert np.array_equal(np.asarray(segment_add(jnp.asarray(data), jnp.asarray(idx), 6)),
                          np.bincount(idx, weights=data, minlength=6))
    x = np.array([1.0, 5.0, 2.0, 5.0, 0.0])
    i, m = first_argmax(jnp.asarray(x))
    assert int(i) == int(np.argmax(x)) == 1 and float(m) == 5.0
