"""Threefry-2x32-20 (Salmon et al., SC'11; Random123's ``threefry2x32_20``): the one counter-based generator of
the package, for NumPy and ``jax.numpy`` alike (seeded placements, hashed ECMP's path choice)."""

from __future__ import annotations

__all__ = ["threefry2x32", "threefry2x32_int"]

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA


def threefry2x32(xp, k0, k1, x0, x1):
    """Threefry-2x32 with 20 rounds (Random123's ``threefry2x32_20``) on ``uint32`` arrays of ``xp``.

    ``(k0, k1)`` is the key, ``(x0, x1)`` the counter (broadcast against each
    other); returns the two ``uint32`` output words. Works with NumPy and
    ``jax.numpy`` alike (wrapping ``uint32`` arithmetic on both).
    """
    u32 = xp.uint32
    k0, k1 = xp.asarray(k0, dtype=u32), xp.asarray(k1, dtype=u32)
    ks = (k0, k1, k0 ^ k1 ^ u32(_PARITY))
    x0 = xp.asarray(x0, dtype=u32) + ks[0]
    x1 = xp.asarray(x1, dtype=u32) + ks[1]
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = x0 + x1
            x1 = (x1 << u32(r)) | (x1 >> u32(32 - r))
            x1 = x1 ^ x0
        x0 = x0 + ks[(i + 1) % 3]
        x1 = x1 + ks[(i + 2) % 3] + u32(i + 1)
    return x0, x1


def threefry2x32_int(k0: int, k1: int, x0: int, x1: int) -> tuple[int, int]:
    """:func:`threefry2x32` of one counter in Python ints (each argument taken mod 2^32, as the ``uint32`` cast
    does): the same two words without an array call per operation (a per-flow host walk: 100 NumPy calls on
    one-element arrays a word)."""
    M = 0xFFFFFFFF
    k0, k1 = k0 & M, k1 & M
    ks = (k0, k1, k0 ^ k1 ^ _PARITY)
    x0, x1 = (x0 + k0) & M, (x1 + k1) & M
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = (x0 + x1) & M
            x1 = (((x1 << r) & M) | (x1 >> (32 - r))) ^ x0
        x0 = (x0 + ks[(i + 1) % 3]) & M
        x1 = (x1 + ks[(i + 2) % 3] + i + 1) & M
    return x0, x1
