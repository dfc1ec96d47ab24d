"""Noise-stream keys of a chip run: one seed, one answer, whatever the batch size, thread count or executor.

Every random number a chip run draws belongs to one physical object of one sequence: an oscillator network
(sequence, layer, bank, head, coordinate) of a Kuramoto layer, an Adler cell (sequence, layer, head, i, j), a
collective SSA-1D network (sequence, layer, head), or the readout of one sequence's bank. Its stream is seeded
from the run seed and that object's indices only, never from its position in an engine batch, so splitting the
same windows into batches of 1, 3 or 16 sequences gives bit-identical outputs.

The key of a stream is a 64-bit hash (splitmix64 chained over the indices, as the engine's own per-group
seeding does) computed vectorised over arrays of indices (:mod:`hw_models.streams`, the primitive the circuit
networks key their derived streams with too); this module says which indices key which family.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hw_models.streams import keyed_normals, stream_seeds

__all__ = ["stream_seeds", "sequence_rng", "layer_seed", "keyed_normals", "PURPOSE", "LayerSeeds", "PHYSICAL_STREAM"]

PHYSICAL_STREAM = 2**31 - 1
"""Second key of the mismatch streams of a multiplexed chip's physical tiles and shared score units (a layer index
never reaches it). Kept here, not in :mod:`mapping.chip`, so that a backend can read it without importing the chip
(which imports the backends)."""

#: Distinct stream families of one run (so the readout of a sequence never reuses its oscillators' noise);
#: ``physical`` marks the keys of a multiplexed chip's physical runs (:meth:`LayerSeeds.unit_streams`), ``block``
#: the layer seed of one block of the blocked schedule (:func:`mapping.backends.blocking.block_seeds`).
PURPOSE = {"kuramoto": 1, "adler": 2, "collective": 3, "readout": 4, "compare": 5, "injection": 6,
           "scores": 7, "score_readout": 8, "decode": 9, "held_keys": 10, "physical": 11, "block": 12}


def sequence_rng(seed: int, *keys) -> np.random.Generator:
    """A NumPy generator for one object (e.g. the readout of one sequence's bank), seeded by its key."""
    return np.random.default_rng(int(stream_seeds(seed, *keys)))


def layer_seed(seed: int, layer: int) -> int:
    """The seed of one layer of a run: every stream of that layer is keyed on it (and its own indices)."""
    return int(stream_seeds(seed, layer))


@dataclass(frozen=True)
class LayerSeeds:
    """The keys of one layer step's noise streams: the layer's seed and each sequence's index in the run.

    Every backend (:mod:`mapping.backends`) keys its streams on these two and the object's own indices, so the
    same seed gives the same numbers whatever batch a sequence is simulated in. This is the one place a run's
    streams are keyed: a schedule that reuses physical oscillators re-keys them here.

    Attributes
    ----------
    seed : int
        The layer's seed (:func:`layer_seed` of the run seed and the layer index), or a seed given directly.
    sequence_ids : (B,) int array or None
        Index of each sequence of the call in the whole run (None: 0..B−1).
    runs : (banks, h, k_h, 2) int array or None
        The physical run (round, tile) of each unit of a Kuramoto layer on a time-multiplexed chip
        (:meth:`mapping.compiler.schedule.Schedule.runs`); None: the units' own indices (spatial chip).
    """

    seed: int
    sequence_ids: np.ndarray | None = None
    runs: np.ndarray | None = None

    @classmethod
    def for_layer(cls, run_seed: int, layer: int, sequence_ids=None, runs=None) -> "LayerSeeds":
        """The seeds of layer ``layer`` in a run with seed ``run_seed`` (``runs``: the layer's physical runs)."""
        return cls(layer_seed(run_seed, layer), sequence_ids, runs)

    def unit_streams(self, purpose: int, seq: np.ndarray, shape: tuple) -> np.ndarray:
        """(banks, B, h, k_h) uint64 stream seeds of every (sequence, unit) of a Kuramoto layer of unit ``shape``
        (banks, h, k_h): keyed on the sequence and the unit's (bank, head, coordinate), or, on a multiplexed chip,
        on the physical run (round, tile) the unit is served in — the same tile in another round is another
        run of the physical network, with its own noise."""
        seq = np.asarray(seq)[None, :, None, None]
        if self.runs is None:
            nb, h, kh = shape
            return stream_seeds(self.seed, purpose, seq, np.arange(nb)[:, None, None, None],
                                np.arange(h)[None, None, :, None], np.arange(kh)[None, None, None, :])
        runs = np.asarray(self.runs)
        if runs.shape[:-1] != tuple(shape):
            raise ValueError(f"runs cover units of shape {runs.shape[:-1]}, the step has {tuple(shape)}")
        return stream_seeds(self.seed, PURPOSE["physical"], purpose, seq, runs[:, None, :, :, 0],
                            runs[:, None, :, :, 1])

    def sequences(self, n: int) -> np.ndarray:
        """The (n,) sequence indices, checked (non-negative integers, one per sequence)."""
        seq = np.arange(n) if self.sequence_ids is None else np.asarray(self.sequence_ids)
        if seq.shape != (n,) or not np.issubdtype(seq.dtype, np.integer) or (n and seq.min() < 0):
            raise ValueError(f"sequence_ids must be {n} non-negative integers, got {self.sequence_ids!r}")
        return seq
