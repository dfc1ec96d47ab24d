"""SSA pairwise cells: P independent Adler cells (two oscillators each) per layer, and their backend.

Each allowed pair (i, j) of each head and sequence is one cell with detuning λΔω_ij and mutual coupling
κ_ij = λ K r J_ij / 2 (programmed thr / K on an unsigned coupler, with the chip's spread and residual
frequencies); the chip weight is S_ij = J_ij ⟨cos φ⟩ over the averaging window, read by the cell's detector
chain (:meth:`mapping.periphery.readout.PhaseReadout.measure_mean`). The cells are integrated as reduced
phase differences in one compiled loop, each cell's noise keyed on (seed, sequence, head, i, j)
(:func:`adler_cells`); see :mod:`mapping.backends.ssa` for the equations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba as nb
import numpy as np

from oscsim.engine.rng import fill_normals, seed_state

from ..periphery.programming import program_ssa
from ..periphery.quantise import Quantiser
from ..seeds import PURPOSE, keyed_normals, stream_seeds
from .base import SSAOutput
from .integrate import integrate_phase
from .registry import register
from .ssa import J_MIN, SSABackend

__all__ = ["adler_cells", "AdlerResult", "adler_cell_network", "SSAPairwise"]

_MAX_CELLS = 2**19  # cells per step (the default batch of a run)


@dataclass
class AdlerResult:
    """Pairwise cells: mean_cos (P,) = ⟨cos φ⟩ over the window; locked (P,) chip-detected lock (no slip)."""

    mean_cos: np.ndarray
    locked: np.ndarray
    backend: str = ""


def adler_cell_network(delta_omega, thr, *, lam: float, k_max: float, coupling_q: Quantiser | None = None,
                       freq_residual=None, coupler_gain=None) -> tuple[np.ndarray, np.ndarray]:
    """The P two-oscillator networks of the pairwise cells as programmed on the chip (see :func:`adler_cells`).

    Returns
    -------
    omega : (P, 2) natural frequencies [rad/cycle] (0 and λΔω, plus the residual errors).
    C : (P, 2, 2) mutual coupling κ [rad/cycle] after coupler quantisation and spread.
    """
    dw = np.asarray(delta_omega, dtype=np.float64).ravel()
    thr = np.asarray(thr, dtype=np.float64).ravel()
    P = dw.size
    kap = 0.5 * lam * k_max * program_ssa(thr, k_max, coupling_q)
    if coupler_gain is not None:
        kap = kap * np.asarray(coupler_gain, dtype=np.float64).ravel()
    omega = np.zeros((P, 2))
    omega[:, 1] = lam * dw
    if freq_residual is not None:
        omega = omega + np.asarray(freq_residual, dtype=np.float64).reshape(P, 2)
    C = np.zeros((P, 2, 2))
    C[:, 0, 1] = kap
    C[:, 1, 0] = kap
    return omega, C


def adler_cells(delta_omega, thr, *, lam: float, settle_cycles: float, averaging_cycles: float,
                steps_per_cycle: int, k_max: float, coupling_q: Quantiser | None = None, sigma: float = 0.0,
                freq_residual=None, coupler_gain=None, seed: int = 0, backend: str = "auto",
                harmonics=((1.0, 0.0),), cell_keys=None) -> AdlerResult:
    """Simulate P independent Adler cells (one batched engine call of P two-oscillator networks).

    Parameters
    ----------
    delta_omega : (P,) detuning Δω ≥ 0 in model rate units.
    thr : (P,) locking threshold K r J in model rate units (2κ of the cell).
    lam : float
        λ, chip rad/cycle per model rate unit.
    settle_cycles, averaging_cycles : float
        Discarded transient and averaging window [cycles].
    steps_per_cycle : int or (P,) int
        Integration steps per cycle, per cell when an array.
    k_max : float
        K, the full scale of the coupler (programmed value thr / K ∈ [0, 1]).
    coupling_q : Quantiser, optional
        Coupler quantiser over [0, 1] (unsigned).
    sigma : float or (P, 2)
        Phase noise [rad / sqrt(cycle)] of each oscillator (per oscillator of each cell when an array: the
        device's instance draw).
    freq_residual : (P, 2), optional
        Residual frequency errors of the two oscillators [rad/cycle].
    coupler_gain : (P,), optional
        Multiplicative coupler strength 1 + δ.
    seed : int
        Noise seed of this run and layer.
    cell_keys : (P, K) int, optional
        The indices that identify each cell in the run (e.g. sequence, head, i, j); cell p's noise stream is
        seeded by (seed, cell_keys[p]) alone, so it does not depend on which other cells share the batch.
        Default: the cell's position 0..P−1.
    harmonics : (M, 2)
        Device coupling function H (a₁ = 1). For a mutual pair only its odd part matters:
        dφ = Δω − 2κ Σ_m a_m sin(mφ) (the cos terms cancel).
    backend : {'auto', 'cells', 'engine', 'numpy'}
        'auto'/'cells': the vectorised reduced-cell integrator (:func:`_adler_heun`); 'engine'/'numpy':
        two-oscillator networks through :func:`mapping.backends.integrate.integrate_phase` (same equations).

    Returns
    -------
    AdlerResult
    """
    omega, C = adler_cell_network(delta_omega, thr, lam=lam, k_max=k_max, coupling_q=coupling_q,
                                  freq_residual=freq_residual, coupler_gain=coupler_gain)
    P = omega.shape[0]
    kap = C[:, 0, 1]
    t1 = settle_cycles + averaging_cycles
    n_steps = np.maximum(np.ceil(t1 * np.asarray(steps_per_cycle)).astype(np.int64), 1)
    n_steps = np.broadcast_to(n_steps, (P,)) if n_steps.ndim else int(n_steps)
    keys = np.arange(P)[:, None] if cell_keys is None else np.asarray(cell_keys)
    if keys.ndim != 2 or keys.shape[0] != P:
        raise ValueError(f"cell_keys must have shape ({P}, K), got {keys.shape}")
    cseed = stream_seeds(seed, PURPOSE["adler"], *[keys[:, c] for c in range(keys.shape[1])])
    if backend in ("auto", "cells"):
        odd = np.array([float(a) for a, _ in np.asarray(harmonics, dtype=float)])
        sg = np.asarray(sigma, dtype=np.float64)
        sphi = math.sqrt(2) * float(sg) if sg.ndim == 0 else np.sqrt(np.sum(sg.reshape(P, 2) ** 2, axis=1))
        mean_cos, phi = _adler_heun(omega[:, 1] - omega[:, 0], 2 * kap, sphi, t1, n_steps,
                                    settle_cycles, cseed, odd)
        return AdlerResult(mean_cos=mean_cos, locked=np.abs(phi) < np.pi, backend="cells")
    sg = np.asarray(sigma, dtype=np.float64)
    res = integrate_phase(omega, C, np.zeros((P, 2)), t1=t1, n_steps=n_steps,
                          sigma=sigma if sg.ndim == 0 else sg.reshape(P, 2), seed=cseed,
                          t_start=settle_cycles, backend=backend, harmonics=harmonics)
    mean_cos = res.coherence[:, 0, 1]
    phi = res.y_final[:, 1] - res.y_final[:, 0]
    locked = np.abs(phi) < np.pi
    return AdlerResult(mean_cos=mean_cos, locked=locked, backend=res.backend)


def _adler_heun(dw, k2, sig, t1, n_steps, t_start, cell_seeds, odd=(1.0,)):
    """Stochastic Heun for P reduced cells dφ = (Δω − 2κ Σ_m a_m sin mφ) dt + √2 σ dW (φ = θ_j − θ_i).

    The same equations as the two-oscillator networks the engine would integrate (their difference), with
    the coherence ⟨cos φ⟩ accumulated after ``t_start``. A compiled loop over cells, each with its own
    xoshiro256** stream seeded by ``cell_seeds[p]`` (the engine's generator, :mod:`oscsim.engine.rng`), used
    because the engine's cost per group dominates for two-oscillator groups.
    """
    dw = np.ascontiguousarray(dw, dtype=np.float64)
    k2 = np.ascontiguousarray(np.broadcast_to(k2, dw.shape), dtype=np.float64)
    seeds = np.ascontiguousarray(np.broadcast_to(cell_seeds, dw.shape), dtype=np.uint64)
    n_steps = np.ascontiguousarray(np.broadcast_to(n_steps, dw.shape), dtype=np.int64)  # each cell its own
    dt = t1 / n_steps
    start = np.ceil(t_start / dt - 1e-9).astype(np.int64)
    sig = np.ascontiguousarray(np.broadcast_to(np.asarray(sig, dtype=np.float64), dw.shape))
    return _adler_cells_kernel(dw, k2, sig, dt, n_steps, start, seeds, np.ascontiguousarray(odd, dtype=np.float64))


@nb.njit(cache=True, parallel=True)
def _adler_cells_kernel(dw, k2, sig, dt, n_steps, start, seeds, odd):
    P = dw.shape[0]
    acc = np.zeros(P)
    phi_out = np.zeros(P)
    M = odd.shape[0]
    nbuf = 64
    for p in nb.prange(P):
        h = dt[p]
        sqdt = math.sqrt(h)
        st = np.empty(4, dtype=np.uint64)
        seed_state(seeds[p], 0, 0, st)
        buf = np.empty(nbuf)
        scr = np.empty(4 * ((nbuf + 1) // 2) + 1)
        used = nbuf
        phi = 0.0
        a = 0.0
        n_avg = 0
        for k in range(n_steps[p]):
            g0 = 0.0
            for m in range(M):
                g0 += odd[m] * math.sin((m + 1) * phi)
            f0 = dw[p] - k2[p] * g0
            dW = 0.0
            if sig[p] > 0:  # per cell: √(σ_i² + σ_j²) of its two oscillators
                if used == nbuf:
                    fill_normals(st, buf, scr)
                    used = 0
                dW = sqdt * sig[p] * buf[used]
                used += 1
            pred = phi + f0 * h + dW
            g1 = 0.0
            for m in range(M):
                g1 += odd[m] * math.sin((m + 1) * pred)
            phi = phi + 0.5 * (f0 + dw[p] - k2[p] * g1) * h + dW
            if k + 1 > start[p]:
                a += math.cos(phi)
                n_avg += 1
        acc[p] = a / max(n_avg, 1)
        phi_out[p] = phi
    return acc, phi_out


@register
class SSAPairwise(SSABackend):
    """SSA layers as pairwise Adler cells (see the module notes)."""

    name = "SSA pairwise cells"
    layer_kinds = ("ssa-pairwise",)

    def batch_size(self, chip, T: int) -> int:
        """Sequences per step: as many as fit 2**19 cells (h · N² per sequence)."""
        return max(1, _MAX_CELLS // (chip.layers[0].n_heads * T * T))

    def _measure(self, s, inp, seq, seed, S, locked) -> SSAOutput:
        J, dw, thr, K = inp.J, inp.delta_omega, inp.threshold, inp.K
        N = J.shape[-1]
        tri = np.tril(np.ones((N, N), dtype=bool), -1)
        sel = np.broadcast_to(tri, J.shape) & (J >= J_MIN)
        b_i, h_i, i_i, j_i = np.nonzero(sel)
        if not b_i.size:
            return SSAOutput(S=S, locked=locked)
        fr, cg, sigma = s.freq_residual, s.coupler_gain, s.sigma
        # each sequence's own step from its own fastest cell
        top = np.full(J.shape[0], -np.inf)
        np.maximum.at(top, b_i, dw[sel] + thr[sel])
        res = adler_cells(
            dw[sel], thr[sel], lam=s.lam, settle_cycles=s.settle_cycles, averaging_cycles=s.averaging_cycles,
            steps_per_cycle=self._rate_steps(s, s.lam * top[b_i]), k_max=K,
            coupling_q=s.coupling_q, sigma=sigma * np.sqrt(s.diffusion_rel[h_i, i_i, j_i, :]) if sigma else sigma,
            freq_residual=fr[h_i, i_i, j_i, :] if fr is not None else None,
            coupler_gain=cg[h_i, i_i, j_i] if cg is not None else None, seed=seed, backend=s.integrator,
            harmonics=s.harmonics, cell_keys=np.stack([seq[b_i], h_i, i_i, j_i], axis=-1))
        mean_cos = res.mean_cos
        if s.readout is not None:  # the cell's mixer output, averaged over the window, sampler noise, ADC
            mean_cos = s.readout.measure_mean(mean_cos, normals=keyed_normals(
                stream_seeds(seed, PURPOSE["readout"], seq[b_i], h_i, i_i, j_i)))
        S[b_i, h_i, i_i, j_i] = J[sel] * mean_cos
        locked[b_i, h_i, i_i, j_i] = res.locked
        if not inp.causal:  # r is shared by all rows: the cell (i, j) serves (j, i) too
            S[b_i, h_i, j_i, i_i] = S[b_i, h_i, i_i, j_i]
            locked[b_i, h_i, j_i, i_i] = res.locked
        return SSAOutput(S=S, locked=locked, backend=res.backend)
