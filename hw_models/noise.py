"""Noise: thermal current noise of ring nodes, ISF phase diffusion, phase noise in dBc/Hz.

Notes
-----
Node noise (stated model): each ring node k receives a white, stationary current noise of one-sided PSD
S_i = i_n²/Δf = 4 k_B T γ (g_m,n + g_m,p) [A²/Hz], the channel thermal noise of the two transistors that
drive it, with g_m evaluated at the inverter switching point V_M (both devices saturated):
g_m = β (V_GS − V_T), V_M = (√β_n V_Tn + √β_p (V_DD − |V_Tp|)) / (√β_n + √β_p). The cyclostationary
modulation of the noise over the cycle is neglected (assumed). In the node SDE,
dV_k = … dt + σ_k dW_k with σ_k = √(S_i/2) / C_k [V/√s] (two-sided PSD S_i/2).

ISF (Hajimiri & Lee 1998): with Γ_k = v_k q_max / C_k (v: PPV, rad/V) and q_max = C V_DD,
Var θ(t) = κ² t with κ² = Σ_k Γ_rms,k² (i_n²/Δf) / (2 q_max²) = Σ_k ⟨v_k²⟩ S_i / (2 C_k²)  [rad²/s].

Phase noise (Demir 2000): with D = κ², L(f_m) = (D/4π²) / ((D/4π)² + f_m²) ≈ D / (4π² f_m²) [1/Hz];
FWHM linewidth D/(2π) Hz.
"""

from __future__ import annotations

import math

import numpy as np

from hw_models.constants import K_B
from hw_models.params import RingOscillatorParams
from hw_models.ring_macro import limit_cycle

__all__ = ["switching_point_v", "thermal_current_psd", "node_noise_sigma", "isf_diffusion", "isf_rms",
           "phase_noise_dbc_hz_from_diffusion", "measure_phase_diffusion"]


def switching_point_v(ring: RingOscillatorParams) -> float:
    """Inverter switching threshold V_M [V] (square law, λ neglected)."""
    bn, bp = math.sqrt(ring.beta_n_a_per_v2), math.sqrt(ring.beta_p_a_per_v2)
    return (bn * ring.vto_n_v + bp * (ring.vdd_v + ring.vto_p_v)) / (bn + bp)


def thermal_current_psd(ring: RingOscillatorParams) -> float:
    """One-sided current-noise PSD per node S_i = 4 k_B T γ (g_m,n + g_m,p) [A²/Hz]."""
    vm = switching_point_v(ring)
    gmn = ring.beta_n_a_per_v2 * (vm - ring.vto_n_v)
    gmp = ring.beta_p_a_per_v2 * (ring.vdd_v - vm + ring.vto_p_v)
    return 4.0 * K_B * ring.temperature_k * ring.noise_gamma * (gmn + gmp)


def node_noise_sigma(ring: RingOscillatorParams, noise_scale: float = 1.0) -> float:
    """Node-voltage noise intensity σ = √(scale · S_i / 2) / C [V/√s] for the node SDE."""
    if noise_scale < 0:
        raise ValueError(f"noise_scale must be >= 0, got {noise_scale}")
    return math.sqrt(noise_scale * thermal_current_psd(ring) / 2.0) / ring.c_load_f


def isf_rms(ring: RingOscillatorParams) -> np.ndarray:
    """Γ_rms of every node (n,) (dimensionless ISF, q_max = C V_DD)."""
    lc = limit_cycle(ring)
    gam = lc.ppv * ring.vdd_v  # v_k q_max / C_k with q_max = C V_DD
    return np.sqrt(np.mean(gam ** 2, axis=0))


def isf_diffusion(ring: RingOscillatorParams, noise_scale: float = 1.0) -> float:
    """ISF prediction κ² = Σ_k Γ_rms,k² (i_n²/Δf) / (2 q_max²) [rad²/s]."""
    s = noise_scale * thermal_current_psd(ring)
    qmax = ring.c_load_f * ring.vdd_v
    return float(np.sum(isf_rms(ring) ** 2) * s / (2.0 * qmax ** 2))


def phase_noise_dbc_hz_from_diffusion(diffusion_rad2_s: float, offset_hz) -> np.ndarray:
    """Single-sideband phase noise L(f_m) [dBc/Hz] of a free-running oscillator with phase diffusion D."""
    fm = np.asarray(offset_hz, float)
    D = float(diffusion_rad2_s)
    lin = (D / (4 * math.pi ** 2)) / ((D / (4 * math.pi)) ** 2 + fm ** 2)
    return 10.0 * np.log10(lin)


def measure_phase_diffusion(crossings, omega: float, block_cycles: int = 5, skip_cycles: int = 10):
    """Phase diffusion [rad²/s] and its 95 % CI from rising-crossing times of G noisy oscillators.

    ``crossings``: list of G arrays of crossing times [s]. Over non-overlapping blocks of K cycles the
    time increments have Var = κ² K T / ω²; blocks are independent (Wiener increments), so the estimate is
    κ² = ω² Var(Δt) / (K T) with a χ² confidence interval.
    """
    from scipy.stats import chi2

    T = 2 * math.pi / omega
    inc = []
    for tc in crossings:
        tc = np.asarray(tc)[skip_cycles:]
        nb = (len(tc) - 1) // block_cycles
        if nb < 1:
            continue
        idx = np.arange(nb + 1) * block_cycles
        inc.append(np.diff(tc[idx]))
    inc = np.concatenate(inc)
    if inc.size < 10:
        raise ValueError("too few crossings to estimate the phase diffusion")
    # mean per oscillator differs slightly with mismatch: remove each block's common mean (one pooled mean)
    var = float(np.var(inc, ddof=1))
    n = inc.size
    k = omega ** 2 / (block_cycles * T)
    lo = var * (n - 1) / chi2.ppf(0.975, n - 1)
    hi = var * (n - 1) / chi2.ppf(0.025, n - 1)
    return k * var, (k * lo, k * hi), n
