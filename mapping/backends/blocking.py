"""The blocked schedule for long contexts: a unit's causal T × T coupling split into B × B blocks on smaller tiles.

A Kuramoto unit (one bank, head and coordinate) is a network of T oscillators with T(T−1)/2 couplers; at
T = 4,096 that is 8.4 M couplers per unit (16.8 M entries of its T × T matrix). With ``[array] block = B``
(:class:`mapping.config.ArrayConfig`) the score matrix of every unit is cut into query blocks
I_i = [iB, min((i+1)B, T)) and key blocks I_j (the last one clipped when B does not divide T), and each causal
block (i, j ≤ i) runs as its own network on a tile of 2B oscillators, in a round of its own:

- diagonal block (i, i): the B tokens of I_i on the tile's first B oscillators, coupled by the causal
  A[I_i, I_i] (the unblocked network of those tokens);
- off-diagonal block (i, j < i): the key tokens I_j on the tile's first B oscillators, uncoupled (they
  free-run from their written phases: a one-way coupler only drives its receiver), and the query tokens I_i on
  the next B, each driven by the keys through A[I_i, I_j].

The periphery forms each block's increment estimate x̂ (:func:`mapping.backends.kuramoto.increment_estimate`)
and sums query block i's over its i + 1 key blocks digitally: x̂_t = Σ_j x̂_t^{(i,j)}.

**Why blocks, not a band.** The first-order step is linear in the couplings,
a_t = Σ_u A_{t,u} sin(θ_u − θ_t) = Σ_j Σ_{u ∈ I_j} A_{t,u} sin(θ_u − θ_t), so the sum of the blocks' first-order
increments is the unblocked one exactly: blocking keeps the model's computation and changes only what lies
beyond first order and the noise. A band (only the last W keys) would drop A_{t,u} for t − u > W, a different
model that the closed form (softmax over every earlier key) does not compute.

**Cost.** Latency: a unit takes n(n+1)/2 rounds instead of one (n = ⌈T/B⌉ query blocks). Energy, per block:
the injection of its 2B phases (B on the diagonal), the programming of its B² couplers (B(B−1)/2 on the
diagonal) and B receive gains, the readout of its B query phases, and B additions per (bank, coordinate) into the
digital accumulator; the oscillators run for n(n+1)/2 settle windows. Fidelity: each block's network evolves
under its own keys only, so (i) the second-order flow differs (in the unblocked network the keys move under their
own predecessors and the query under all its keys at once; here per block): a relative difference of order κτ_s,
vanishing in the first-order limit, and (ii) the readout error, injection error and phase diffusion enter once
per block: the increment of query block i carries i + 1 independent errors, each scaled by 1/(κτ_s), so its
noise standard deviation grows as √(i + 1) against the unblocked chip's.

:func:`block_plan` counts the blocks, rounds and tile size that the compiler, the resources and the energy read;
:func:`mapping.backends.blocked.blocked_step` runs any Kuramoto backend's prefill ``step`` this way and
:func:`mapping.backends.blocked_decode.blocked_decode_step` the decode pass (a token's keys in key blocks,
⌈t/B⌉ rounds: :func:`decode_rounds`);
:func:`mapping.energy.feasibility.infeasible_reason` says why a design does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["BlockPlan", "block_plan", "decode_rounds"]


@dataclass(frozen=True)
class BlockPlan:
    """The blocks of one unit's T × T causal coupling (see the module notes).

    Attributes
    ----------
    T : int
        Tokens of the context.
    block : int or None
        Block size B; None: unblocked.
    ranges : tuple of (start, stop)
        The token blocks I_0, I_1, … (the last clipped at T).
    """

    T: int
    block: int | None
    ranges: tuple

    @property
    def blocked(self) -> bool:
        """Whether the unit runs in more than one block (B < T)."""
        return len(self.ranges) > 1

    @property
    def n_query_blocks(self) -> int:
        """n = ⌈T / B⌉ (1 unblocked)."""
        return len(self.ranges)

    @property
    def pairs(self) -> tuple:
        """The causal blocks (i, j ≤ i), row by row."""
        n = self.n_query_blocks
        return tuple((i, j) for i in range(n) for j in range(i + 1))

    @property
    def rounds_per_unit(self) -> int:
        """Tile rounds one unit takes: n(n+1)/2 (1 unblocked)."""
        n = self.n_query_blocks
        return n * (n + 1) // 2

    @property
    def tile_tokens(self) -> int:
        """Oscillators a tile holds: T unblocked, min(T, 2B) blocked (an off-diagonal block's keys and queries)."""
        return self.T if not self.blocked else min(self.T, 2 * int(self.block))

    def sizes(self) -> dict:
        """Per pass of one unit: ``injected`` phases, ``couplers`` programmed (causal pairs carried by a
        coupler: B² off the diagonal, B(B−1)/2 on it), ``read`` query phases and ``accumulated`` digital
        additions of block increments (0 unblocked), all summed over the blocks."""
        inj = cpl = read = 0
        for i, j in self.pairs:
            nq = self.ranges[i][1] - self.ranges[i][0]
            nk = self.ranges[j][1] - self.ranges[j][0]
            if i == j:
                inj, cpl = inj + nq, cpl + nq * (nq - 1) // 2
            else:
                inj, cpl = inj + nq + nk, cpl + nq * nk
            read += nq
        return {"injected": inj, "couplers": cpl, "read": read, "accumulated": read - self.T}

    @property
    def mean_decode_rounds(self) -> float:
        """Tile rounds of one decoded token under the blocked decode, mean over its positions t = 0..T−1:
        ⌈t/B⌉ key blocks, at least 1 (:func:`decode_rounds`; 1 unblocked)."""
        return float(decode_rounds(self.T, self.block).mean())

    def to_json(self) -> dict:
        return {"T": self.T, "block": self.block, "query_blocks": self.n_query_blocks,
                "rounds_per_unit": self.rounds_per_unit, "decode_rounds_mean": self.mean_decode_rounds,
                "tile_tokens": self.tile_tokens, **self.sizes()}


def block_plan(T: int, block: int | None) -> BlockPlan:
    """The :class:`BlockPlan` of a context of ``T`` tokens at block size ``block`` (None or ≥ T: one block)."""
    T = int(T)
    if T < 1:
        raise ValueError(f"T must be a positive integer, got {T!r}")
    if block is not None and (isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block < 1):
        raise ValueError(f"block must be None or an integer >= 1, got {block!r}")
    if block is None or block >= T:
        return BlockPlan(T, None if block is None else int(block), ((0, T),))
    B = int(block)
    return BlockPlan(T, B, tuple((s, min(s + B, T)) for s in range(0, T, B)))


def decode_rounds(T: int, block: int | None) -> np.ndarray:
    """Tile rounds (T,) of each decoded token t = 0..T−1 under the blocked decode
    (:mod:`mapping.backends.blocked_decode`): one per key block holding one of its keys u < t, ⌈t/B⌉, and one
    for t = 0 (its receiver alone); all 1 unblocked (``block`` None or ≥ T)."""
    t = np.arange(int(T))
    if block is None or block >= T:
        return np.ones(int(T), dtype=np.int64)
    return np.maximum(1, -(-t // int(block)))
