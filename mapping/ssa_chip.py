"""SSA on an oscillator chip: pairwise Adler cells (exact in the limit) and the collective SSA-1D network.

Notes
-----
**Pairwise cell.** Two oscillators with detuning Δω and mutual coupling κ obey the Adler equation for
φ = θ_j − θ_i:  dφ/dt = Δω − 2κ sin φ. With 2κ = K r J: if Δω ≤ K r J the pair locks at sin φ* = Δω/(K r J)
and cos φ* = sqrt(1 − (Δω/(K r J))²); otherwise it drifts and the time average of cos φ over a whole slip
period is exactly 0 (∫cos φ dt = ∫cos φ dφ / (Δω − 2κ sin φ) = −ln(Δω − 2κ sin φ)/(2κ), periodic). So
S_ij = J_ij ⟨cos φ⟩ is the closed form. Over a finite window W the drifting average is off by at most
ln((Δω + 2κ)/(Δω − 2κ)) / (2κ W), which diverges at the locking boundary; near it the locked transient
(relaxation rate sqrt((2κ)² − Δω²)) is slow too. That is the error band the chip adds.

**Collective SSA-1D network.** Per (sequence, head) one oscillator per token with natural frequency λω_i,
coupled all-to-all: mutual C_ij = λ K r J_ij / 2 (non-causal), or directed C_ij = λ K r_i J_ij for j < i
(causal: token i listens to its prefix only, so an isolated pair has the same Adler threshold). The chip
weight is S^chip_ij = J_ij ⟨cos(θ_i − θ_j)⟩ over the window. The closed form is the pairwise approximation
of this collective flow; how far they differ is a measured result, not a test.

Model rates are mapped to the chip with λ = κ / K (:func:`mapping.units.ssa_time_scale`), so the largest
possible coupling K (r = J = 1) is the chip coupling κ. Time is in cycles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba as nb
import numpy as np

from oscsim.engine.rng import fill_normals, seed_state

from ._backend import integrate_phase
from .quantise import Quantiser
from .seeds import PURPOSE, stream_seeds

__all__ = ["ssa_closed_form", "adler_cells", "AdlerResult", "ssa1d_collective", "CollectiveResult",
           "adler_window_error_bound", "adler_cell_network", "collective_network"]


def ssa_closed_form(delta_omega, thr):
    """Closed-form S/J = sqrt(1 − (Δω/thr)²) on the locked set, 0 elsewhere; returns (S_over_J, locked)."""
    dw = np.asarray(delta_omega, dtype=np.float64)
    thr = np.asarray(thr, dtype=np.float64)
    locked = dw <= thr
    ratio = np.where(thr > 0, dw / np.where(thr > 0, thr, 1.0), np.inf)
    s = np.where(locked, np.sqrt(np.clip(1.0 - ratio**2, 0.0, 1.0)), 0.0)
    return s, locked


def adler_window_error_bound(delta_omega, thr, window):
    """Upper bound on |⟨cos φ⟩_W| for a drifting pair: ln((Δω + thr)/(Δω − thr)) / (thr W) (model time units)."""
    dw = np.asarray(delta_omega, dtype=np.float64)
    thr = np.asarray(thr, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        b = np.log((dw + thr) / (dw - thr)) / (thr * window)
    return np.where(dw > thr, b, np.nan)


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
    prog = thr / k_max
    if coupling_q is not None:
        prog = coupling_q(prog)
    kap = 0.5 * lam * k_max * prog
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
    steps_per_cycle : int
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
        two-oscillator networks through :func:`mapping._backend.integrate_phase` (same equations).

    Returns
    -------
    AdlerResult
    """
    omega, C = adler_cell_network(delta_omega, thr, lam=lam, k_max=k_max, coupling_q=coupling_q,
                                  freq_residual=freq_residual, coupler_gain=coupler_gain)
    P = omega.shape[0]
    kap = C[:, 0, 1]
    t1 = settle_cycles + averaging_cycles
    n_steps = max(int(np.ceil(t1 * steps_per_cycle)), 1)
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
    dt = t1 / n_steps
    start = int(np.ceil(t_start / dt - 1e-9))
    sig = np.ascontiguousarray(np.broadcast_to(np.asarray(sig, dtype=np.float64), dw.shape))
    return _adler_cells_kernel(dw, k2, sig, float(dt), int(n_steps), start, seeds,
                               np.ascontiguousarray(odd, dtype=np.float64))


@nb.njit(cache=True, parallel=True)
def _adler_cells_kernel(dw, k2, sig, dt, n_steps, start, seeds, odd):
    P = dw.shape[0]
    acc = np.zeros(P)
    phi_out = np.zeros(P)
    sqdt = math.sqrt(dt)
    M = odd.shape[0]
    nbuf = 64
    for p in nb.prange(P):
        st = np.empty(4, dtype=np.uint64)
        seed_state(seeds[p], 0, 0, st)
        buf = np.empty(nbuf)
        scr = np.empty(4 * ((nbuf + 1) // 2) + 1)
        used = nbuf
        phi = 0.0
        a = 0.0
        n_avg = 0
        for k in range(n_steps):
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
            pred = phi + f0 * dt + dW
            g1 = 0.0
            for m in range(M):
                g1 += odd[m] * math.sin((m + 1) * pred)
            phi = phi + 0.5 * (f0 + dw[p] - k2[p] * g1) * dt + dW
            if k + 1 > start:
                a += math.cos(phi)
                n_avg += 1
        acc[p] = a / max(n_avg, 1)
        phi_out[p] = phi
    return acc, phi_out


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
    prog = thr / k_max
    if coupling_q is not None:
        prog = coupling_q(prog)
    C = lam * k_max * prog
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
    n_steps = max(int(np.ceil(t1 * steps_per_cycle)), 1)
    y0 = np.zeros((G, N))
    keys = np.arange(G)[:, None] if group_keys is None else np.asarray(group_keys)
    if keys.ndim != 2 or keys.shape[0] != G:
        raise ValueError(f"group_keys must have shape ({G}, K), got {keys.shape}")
    gseed = stream_seeds(seed, PURPOSE["collective"], *[keys[:, c] for c in range(keys.shape[1])])
    res = integrate_phase(om, C, y0, t1=t1, n_steps=n_steps, sigma=sigma, seed=gseed, t_start=settle_cycles,
                          backend=backend, harmonics=harmonics)
    return CollectiveResult(coherence=res.coherence, freq=(res.y_final - y0) / t1, backend=res.backend)
