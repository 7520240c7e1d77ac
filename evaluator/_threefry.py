"""Threefry-2x32-20 (Salmon et al., SC'11; Random123's ``threefry2x32_20``): the one counter-based generator of
the package, for NumPy and ``jax.numpy`` alike (seeded placements, hashed ECMP's path choice)."""

from __future__ import annotations

__all__ = ["threefry2x32"]

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
