"""Run a Kuramoto layer's prefill step under the blocked schedule (:mod:`mapping.backends.blocking`, whose notes
state the blocks, their cost and what changes): each causal block (i, j ≤ i) is a network of its own, with its
own noise streams, and query block i's increment estimates are summed over its key blocks."""

from __future__ import annotations

import numpy as np

from .blocking import BlockPlan
from ..seeds import PURPOSE, LayerSeeds, stream_seeds
from .base import KuramotoInputs, KuramotoOutput

__all__ = ["blocked_step", "block_inputs", "block_seeds"]


def block_seeds(seeds: LayerSeeds, i: int, j: int) -> LayerSeeds:
    """The layer's seeds for block (i, j): another run of the tile, with its own noise, injection and readout
    streams (keyed on the layer seed and the block; the sequence and physical-run keys are kept)."""
    return LayerSeeds(int(stream_seeds(seeds.seed, PURPOSE["block"], i, j)), seeds.sequence_ids, seeds.runs)


def block_inputs(inputs, plan: BlockPlan, i: int, j: int):
    """The :class:`~mapping.backends.base.KuramotoInputs` of block (i, j) and the query tokens' offset in it:
    (inputs, offset). Diagonal: the tokens of I_i with A[I_i, I_i]; off-diagonal: the tokens I_j then I_i, with
    A[I_i, I_j] in the lower-left block and every other coupling zero (the keys free-run)."""
    (q0, q1), (k0, k1) = plan.ranges[i], plan.ranges[j]
    th, A, v = inputs.theta, inputs.A, inputs.v
    if i == j:
        return KuramotoInputs(th[:, q0:q1], np.ascontiguousarray(A[:, :, q0:q1, q0:q1]), v[:, q0:q1]), 0
    nk = k1 - k0
    idx = np.r_[k0:k1, q0:q1]
    sub = np.zeros(A.shape[:2] + (idx.size, idx.size))
    sub[:, :, nk:, :nk] = A[:, :, q0:q1, k0:k1]
    return KuramotoInputs(th[:, idx], sub, v[:, idx]), nk


def blocked_step(step, prepared, inputs, seeds: LayerSeeds, plan: BlockPlan):
    """One Kuramoto layer's prefill step under the blocked schedule (see the module notes).

    Parameters
    ----------
    step : callable
        A backend's ``step(prepared, inputs, seeds) -> KuramotoOutput`` (the unblocked network of any length up
        to the tile's).
    prepared : object
        The backend's layer settings.
    inputs : KuramotoInputs
        The layer's inputs, θ (B, T, k), A (B, h, T, T), v (B, T, k).
    seeds : LayerSeeds
    plan : BlockPlan
        For T = ``inputs.theta.shape[1]``; unblocked, the step runs once on the inputs as they are (the same
        numbers as without a plan).

    Returns
    -------
    KuramotoOutput
        ``va`` and ``a`` (B, T, k): each query block's increment estimates summed over its key blocks.
    """
    T = inputs.theta.shape[1]
    if plan.T != T:
        raise ValueError(f"the block plan is for T = {plan.T} tokens, the inputs have {T}")
    if not plan.blocked:
        return step(prepared, inputs, seeds)
    va = np.zeros(inputs.theta.shape)
    a = None
    backend = ""
    for i, j in plan.pairs:
        sub, off = block_inputs(inputs, plan, i, j)
        out = step(prepared, sub, block_seeds(seeds, i, j))
        q0, q1 = plan.ranges[i]
        va[:, q0:q1] += out.va[:, off:]
        if out.a is not None:
            a = np.zeros(inputs.theta.shape) if a is None else a
            a[:, q0:q1] += out.a[:, off:]
        backend = out.backend
    return KuramotoOutput(va=va, a=a, backend=f"{backend}, blocked (B = {plan.block}, {len(plan.pairs)} blocks)")
