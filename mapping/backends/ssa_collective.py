"""The collective SSA-1D network: per (sequence, head) one oscillator per token, coupled all-to-all.

Natural frequencies λω_i, coupling mutual C_ij = λ K r J_ij / 2 (non-causal) or directed C_ij = λ K r_i J_ij
for j < i (causal: token i listens to its prefix only, so an isolated pair has the same Adler threshold);
S^chip_ij = J_ij ⟨cos(θ_i − θ_j)⟩ over the window, each pair's coherence read through the detector chain,
and a pair counts as locked when its mean frequencies differ by less than one slip over the window. One
batched engine call per layer (:func:`ssa1d_collective`), each network's noise keyed on (seed, sequence, head).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..periphery.programming import program_ssa
from ..periphery.quantise import Quantiser
from ..seeds import PURPOSE, keyed_normals, stream_seeds
from .base import SSAOutput
from .integrate import integrate_phase
from .registry import register
from .ssa import SSABackend

__all__ = ["ssa1d_collective", "CollectiveResult", "collective_network", "SSACollective"]


@dataclass
class CollectiveResult:
    """Collective network: coherence (G, N, N) = ⟨cos(θ_i − θ_j)⟩; freq (G, N) mean frequency [rad/cycle]."""

    coherence: np.ndarray
    freq: np.ndarray
    backend: str = ""


def collective_network(omega, thr, *, causal: bool, lam: float, k_max: float, coupling_q: Quantiser | None = None,
                       freq_residual=None, coupler_gain=None) -> tuple[np.ndarray, np.ndarray]:
    """The G collective SSA-1D networks as programmed on the chip (see :func:`ssa1d_collective`).

    Returns
    -------
    omega : (G, N) natural frequencies [rad/cycle] (λω plus the residual errors).
    C : (G, N, N) coupling [rad/cycle], row i receives, after coupler quantisation and spread.
    """
    omega = np.asarray(omega, dtype=np.float64)
    thr = np.asarray(thr, dtype=np.float64)
    N = omega.shape[-1]
    C = lam * k_max * program_ssa(thr, k_max, coupling_q)
    if causal:
        C = C * np.tril(np.ones((N, N)), -1)
    else:
        C = 0.5 * C * (1 - np.eye(N))
    if coupler_gain is not None:
        C = C * coupler_gain
    om = lam * omega
    if freq_residual is not None:
        om = om + freq_residual
    return om, C


def ssa1d_collective(omega, thr, *, causal: bool, lam: float, settle_cycles: float, averaging_cycles: float,
                     steps_per_cycle: int, k_max: float, coupling_q: Quantiser | None = None, sigma: float = 0.0,
                     freq_residual=None, coupler_gain=None, seed: int = 0, backend: str = "auto",
                     harmonics=((1.0, 0.0),), group_keys=None):
    """Simulate G collective SSA-1D networks (one batched engine call).

    Parameters
    ----------
    omega : (G, N) scalar natural frequency per token [model rate units].
    steps_per_cycle : int or (G,) int
        Integration steps per cycle, per network when an array (the networks of each count share a call).
    thr : (G, N, N) K r_i J_ij per query row i [model rate units].
    causal : bool
        Directed coupling from the prefix (C_ij = λ thr_ij for j < i) instead of mutual (λ thr_ij / 2).
    group_keys : (G, K) int, optional
        Indices identifying each network in the run (e.g. sequence, head); network g's noise is seeded by
        (seed, group_keys[g]) alone. Default: 0..G−1.
    Other parameters as :func:`adler_cells`.

    Returns
    -------
    CollectiveResult
    """
    om, C = collective_network(omega, thr, causal=causal, lam=lam, k_max=k_max, coupling_q=coupling_q,
                               freq_residual=freq_residual, coupler_gain=coupler_gain)
    G, N = om.shape
    t1 = settle_cycles + averaging_cycles
    n_steps = np.maximum(np.ceil(t1 * np.asarray(steps_per_cycle)).astype(np.int64), 1)
    if n_steps.ndim:
        n_steps = np.broadcast_to(n_steps, (G,))
    else:
        n_steps = int(n_steps)
    y0 = np.zeros((G, N))
    keys = np.arange(G)[:, None] if group_keys is None else np.asarray(group_keys)
    if keys.ndim != 2 or keys.shape[0] != G:
        raise ValueError(f"group_keys must have shape ({G}, K), got {keys.shape}")
    gseed = stream_seeds(seed, PURPOSE["collective"], *[keys[:, c] for c in range(keys.shape[1])])
    res = integrate_phase(om, C, y0, t1=t1, n_steps=n_steps, sigma=sigma, seed=gseed, t_start=settle_cycles,
                          backend=backend, harmonics=harmonics)
    return CollectiveResult(coherence=res.coherence, freq=(res.y_final - y0) / t1, backend=res.backend)


@register
class SSACollective(SSABackend):
    """SSA-1D layers as collective networks (see the module notes)."""

    name = "SSA-1D collective network"
    layer_kinds = ("ssa1d-collective",)

    def _measure(self, s, inp, seq, seed, S, locked) -> SSAOutput:
        J, thr, K, causal = inp.J, inp.threshold, inp.K, inp.causal
        B, H, N, _ = J.shape
        fr, cg, sigma = s.freq_residual, s.coupler_gain, s.sigma
        omega = inp.omega[..., 0]  # (B, H, N)
        om = omega - omega.mean(-1, keepdims=True)  # rotating frame at the mean
        # each sequence's own step from its own fastest rate (repeated over its heads)
        spc = np.repeat(self._rate_steps(s, s.lam * (np.abs(om).max(axis=(1, 2)) + K)), H)
        res = ssa1d_collective(
            om.reshape(B * H, N), thr.reshape(B * H, N, N), causal=causal, lam=s.lam,
            settle_cycles=s.settle_cycles, averaging_cycles=s.averaging_cycles, steps_per_cycle=spc, k_max=K,
            coupling_q=s.coupling_q,
            sigma=(np.broadcast_to(sigma * np.sqrt(s.diffusion_rel[:, :N]), (B, H, N)).reshape(B * H, N)
                   if sigma else sigma),
            # the arrays are built for max_tokens: a shorter window uses the first N oscillators of each head
            freq_residual=np.broadcast_to(fr[:, :N], (B, H, N)).reshape(B * H, N) if fr is not None else None,
            coupler_gain=(np.broadcast_to(cg[:, :N, :N], (B, H, N, N)).reshape(B * H, N, N)
                          if cg is not None else None),
            seed=seed, backend=s.integrator, harmonics=s.harmonics,
            group_keys=np.stack(np.broadcast_arrays(seq[:, None], np.arange(H)[None, :]), -1).reshape(B * H, 2))
        coh = res.coherence.reshape(B, H, N, N)
        if s.readout is not None:  # each pair's ⟨cos(θ_i − θ_j)⟩ read through the same detector chain
            ar = np.arange(N)
            coh = s.readout.measure_mean(coh, normals=keyed_normals(stream_seeds(
                seed, PURPOSE["readout"], seq[:, None, None, None], np.arange(H)[None, :, None, None],
                ar[None, None, :, None], ar[None, None, None, :])))
        mask = np.tril(np.ones((N, N), dtype=bool)) if causal else np.ones((N, N), dtype=bool)
        idx = np.arange(N)
        S = np.where(mask, J * coh, 0.0)
        S[:, :, idx, idx] = J[:, :, idx, idx]
        fq = res.freq.reshape(B, H, N)
        slip = 2 * math.pi / (s.averaging_cycles + s.settle_cycles)
        locked = (np.abs(fq[..., :, None] - fq[..., None, :]) < slip) & mask
        return SSAOutput(S=S, locked=locked, coherence=coh, backend=res.backend)
