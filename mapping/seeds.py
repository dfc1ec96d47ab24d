"""Noise-stream keys of a chip run: one seed, one answer, whatever the batch size, thread count or executor.

Every random number a chip run draws belongs to one physical object of one sequence: an oscillator network
(sequence, layer, bank, head, coordinate) of a Kuramoto layer, an Adler cell (sequence, layer, head, i, j), a
collective SSA-1D network (sequence, layer, head), or the readout of one sequence's bank. Its stream is seeded
from the run seed and that object's indices only, never from its position in an engine batch, so splitting the
same windows into batches of 1, 3 or 16 sequences gives bit-identical outputs.

The key of a stream is a 64-bit hash (splitmix64 chained over the indices, as the engine's own per-group
seeding does) computed vectorised over arrays of indices.
"""

from __future__ import annotations

import numpy as np

__all__ = ["stream_seeds", "sequence_rng", "layer_seed", "keyed_normals", "PURPOSE"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_MIX = np.uint64(0xD1B54A32D192ED03)

#: Distinct stream families of one run (so the readout of a sequence never reuses its oscillators' noise).
PURPOSE = {"kuramoto": 1, "adler": 2, "collective": 3, "readout": 4, "compare": 5}


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


def sequence_rng(seed: int, *keys) -> np.random.Generator:
    """A NumPy generator for one object (e.g. the readout of one sequence's bank), seeded by its key."""
    return np.random.default_rng(int(stream_seeds(seed, *keys)))


def layer_seed(seed: int, layer: int) -> int:
    """The seed of one layer of a run: every stream of that layer is keyed on it (and its own indices)."""
    return int(stream_seeds(seed, layer))


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
