"""Counter-free stream keys: a 64-bit seed per physical object hashed from a run seed and the object's indices.

splitmix64 chained over the indices (as :mod:`oscsim.engine`'s own per-group seeding does), computed
vectorised over arrays of indices, so an object's random numbers never depend on its position in a batch.
This is the primitive; which indices key which stream family is the chip's policy (:mod:`mapping.seeds`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["stream_seeds", "keyed_normals"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_MIX = np.uint64(0xD1B54A32D192ED03)

def _splitmix64(z: np.ndarray) -> np.ndarray:
    z = z + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def _check_index(name: str, x) -> np.ndarray:
    a = np.asarray(x)
    if not (np.issubdtype(a.dtype, np.integer) or a.dtype == bool):
        raise ValueError(f"stream_seeds: {name} must be integer indices, got dtype {a.dtype}")
    if a.size and int(a.min()) < 0:
        raise ValueError(f"stream_seeds: {name} must be >= 0, got {int(a.min())}")
    return a.astype(np.uint64)


def stream_seeds(seed: int, *keys) -> np.ndarray:
    """64-bit stream seeds hashed from ``seed`` and integer index arrays (broadcast together).

    Parameters
    ----------
    seed : int
        Run seed, >= 0.
    *keys : int or array_like of int
        Indices of the object that owns the stream (e.g. purpose, sequence, layer, bank, head, coordinate),
        each >= 0; broadcast to a common shape.

    Returns
    -------
    ndarray of uint64, the broadcast shape of ``keys`` (a 0-d array when all are scalars).
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < 2**64:
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    arrs = np.broadcast_arrays(*[_check_index(f"key {i}", k) for i, k in enumerate(keys)]) if keys else []
    with np.errstate(over="ignore"):
        z = _splitmix64(np.full(arrs[0].shape if arrs else (), np.uint64(int(seed)), dtype=np.uint64))
        for a in arrs:
            z = _splitmix64(z ^ (a * _MIX))
    return z


def keyed_normals(seeds) -> np.ndarray:
    """One standard normal number per stream seed (same shape), for objects that need a single draw each
    (e.g. the readout of one Adler cell): Box–Muller on two 53-bit uniforms hashed from the seed."""
    z = np.asarray(seeds, dtype=np.uint64)
    with np.errstate(over="ignore"):
        a = _splitmix64(z ^ np.uint64(0x243F6A8885A308D3))
        b = _splitmix64(z ^ np.uint64(0x13198A2E03707344))
    u1 = ((a >> np.uint64(11)).astype(np.float64) + 1.0) / 9007199254740992.0  # (0, 1]
    u2 = (b >> np.uint64(11)).astype(np.float64) / 9007199254740992.0  # [0, 1)
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
