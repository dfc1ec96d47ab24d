"""All unit conversions of the chip mapping, in one place.

Simulation time unit
--------------------
Chip networks are integrated with time measured in **oscillator cycles** (one unit = 1/f₀ seconds) and
phases in radians, in the frame rotating at the nominal angular frequency 2π f₀ (the natural-frequency bias
of every oscillator is known and subtracted). In this frame

- a coupling strength given as a fraction ``c`` of f₀ is κ = 2π c rad per cycle (κ_phys = 2π c f₀ rad/s);
- a settle time of ``n`` cycles is τ_s = n (τ_s,phys = n / f₀ s), so κ τ_s = 2π c n radians;
- a relative frequency error ε = δf / f₀ is a residual angular frequency 2π ε rad per cycle;
- a phase-diffusion coefficient D [rad²/s], defined by Var[θ(t) − θ(0)] = D t, becomes D / f₀ rad² per cycle,
  i.e. an additive noise intensity σ = sqrt(D / f₀) in dθ = … dt + σ dW (t in cycles).
  For a Lorentzian line of full width at half maximum Δf [Hz], D = 2π Δf.
- a model rate (the SSA frequencies ω and couplings K r J, in the model's own dimensionless time) is mapped
  to the chip by one scale λ [cycles⁻¹ per model unit] chosen so that the largest possible coupling K maps to
  the chip's coupling κ: λ = κ / K.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "TWO_PI",
    "coupling_rad_per_cycle",
    "coupling_rad_per_s",
    "settle_time_s",
    "kappa_tau",
    "settle_cycles_for_kappa_tau",
    "relative_frequency_to_rad_per_cycle",
    "diffusion_per_cycle",
    "noise_sigma_per_cycle",
    "lorentzian_fwhm_to_diffusion",
    "ssa_time_scale",
    "cycles_to_seconds",
]

TWO_PI = 2.0 * math.pi


def _positive(name: str, value: float) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite positive number, got {value!r}")
    return value


def coupling_rad_per_cycle(fraction: float) -> float:
    """κ in rad per cycle for a coupling strength given as a fraction of f₀ (κ = 2π · fraction)."""
    return TWO_PI * _positive("coupling fraction", fraction)


def coupling_rad_per_s(fraction: float, f0_hz: float) -> float:
    """κ in rad/s: 2π · fraction · f₀."""
    return TWO_PI * _positive("coupling fraction", fraction) * _positive("f0_hz", f0_hz)


def settle_time_s(cycles: float, f0_hz: float) -> float:
    """Settle time in seconds for a settle window of ``cycles`` oscillator periods."""
    return _positive("settle cycles", cycles) / _positive("f0_hz", f0_hz)


def cycles_to_seconds(cycles: float, f0_hz: float) -> float:
    """Duration in seconds of ``cycles`` oscillator periods (zero allowed)."""
    if cycles < 0:
        raise ValueError(f"cycles must be >= 0, got {cycles}")
    return float(cycles) / _positive("f0_hz", f0_hz)


def kappa_tau(fraction: float, cycles: float) -> float:
    """Dimensionless κ τ_s [rad] = 2π · fraction · cycles (independent of f₀)."""
    return coupling_rad_per_cycle(fraction) * _positive("settle cycles", cycles)


def settle_cycles_for_kappa_tau(kt: float, fraction: float) -> float:
    """Settle cycles giving the requested κ τ_s at the given coupling fraction."""
    return _positive("kappa_tau", kt) / coupling_rad_per_cycle(fraction)


def relative_frequency_to_rad_per_cycle(eps):
    """Residual angular frequency [rad/cycle] of a relative frequency error ε = δf/f₀ (array or scalar)."""
    return TWO_PI * np.asarray(eps, dtype=np.float64)


def diffusion_per_cycle(d_rad2_per_s: float, f0_hz: float) -> float:
    """Phase diffusion per cycle [rad²/cycle] from D [rad²/s] (Var = D t)."""
    d = float(d_rad2_per_s)
    if not (math.isfinite(d) and d >= 0):
        raise ValueError(f"phase diffusion must be finite and >= 0 rad^2/s, got {d!r}")
    return d / _positive("f0_hz", f0_hz)


def noise_sigma_per_cycle(d_rad2_per_s: float, f0_hz: float) -> float:
    """Additive noise intensity σ [rad/sqrt(cycle)] with σ² = D / f₀."""
    return math.sqrt(diffusion_per_cycle(d_rad2_per_s, f0_hz))


def lorentzian_fwhm_to_diffusion(fwhm_hz: float) -> float:
    """D [rad²/s] of a free-running oscillator whose Lorentzian line has full width Δf [Hz]: D = 2π Δf."""
    return TWO_PI * float(fwhm_hz)


def ssa_time_scale(coupling_fraction: float, k_max: float) -> float:
    """λ [rad/cycle per model rate unit] mapping model rates to chip rates: λ = κ / K (κ = 2π · fraction)."""
    return coupling_rad_per_cycle(coupling_fraction) / _positive("K (SSA coupling)", k_max)
