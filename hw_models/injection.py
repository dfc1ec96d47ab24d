"""Phase injection at device level: the Adler lock-in transient and the circuit-level injection current.

Notes
-----
An oscillator injection-locked to a reference of phase θ_ref obeys, for the phase error ψ = θ − θ_ref in the
frame of the reference (time in any unit, rates in rad per that unit), Adler's equation

    dψ/dt = Δω − K sin ψ,

with Δω the oscillator's detuning from the reference and K the injection strength (half the locking range).
For |Δω| < K it locks at ψ* = arcsin(Δω/K); with u = tan(ψ/2), a± = K ± ρ, ρ = sqrt(K² − Δω²), the exact
solution is the Möbius map (divided through by Δω so that Δω → 0 is regular; a₋ = Δω²/a₊)

    tan(ψ(t)/2) = N/D,  N = (a₊ s₀ − Δω c₀) e^{−ρt} + Δω c₀ − (Δω²/a₊) s₀,
                        D = (Δω s₀ − (Δω²/a₊) c₀) e^{−ρt} + a₊ c₀ − Δω s₀,

s₀, c₀ = sin(ψ₀/2), cos(ψ₀/2); ψ = 2 atan2(N, D) (mod 2π). The error decays at the locking rate ρ. For
|Δω| ≥ K (no lock) the same expression holds with ρ imaginary (a beat), evaluated in complex arithmetic.

Circuit level (ring oscillator): a sinusoidal current i(t) = I cos(ω_ref t + θ_ref) into node k adds
v_k(θ) i(t)/C_k to dθ/dt (v_k the PPV [rad/V]); averaged over a cycle this is K sin(θ_ref − θ + α_k) with
K = I |V₁| / C_k, V₁ = (1/2π)∮ v_k(θ) e^{−iθ} dθ, so the current for a strength K is I = K C_k / |V₁| and the
reference phase is rotated by the PPV's phase α_k = arg V₁ (known, compensated).

References
----------
R. Adler, "A study of locking phenomena in oscillators", Proc. IRE 34, 351 (1946).
P. Bhansali, J. Roychowdhury, "Gen-Adler: the generalized Adler's equation for injection locking analysis
in oscillators", ASP-DAC 2009 (PPV-based injection).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["adler_phase_error", "adler_lock_rate", "ring_injection_current", "injection_current"]


def adler_lock_rate(detuning, strength):
    """ρ = sqrt(K² − Δω²) [rad per time unit] (0 where unlocked)."""
    d, k = np.asarray(detuning, dtype=float), np.asarray(strength, dtype=float)
    return np.sqrt(np.clip(k * k - d * d, 0.0, None))


def adler_phase_error(psi0, detuning, strength, t):
    """Phase error ψ(t) [rad, wrapped to (−π, π]] of Adler's equation dψ/dt = Δω − K sin ψ (closed form).

    Parameters
    ----------
    psi0 : array_like
        Initial error ψ(0) [rad].
    detuning : array_like
        Δω [rad per time unit] (broadcasts with psi0).
    strength : float or array_like
        K > 0 [rad per time unit].
    t : float or array_like
        Time [time unit] (>= 0).
    """
    psi0, d, k, t = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (psi0, detuning, strength, t)))
    if np.any(k <= 0) or not np.all(np.isfinite(k)):
        raise ValueError("strength K must be finite and > 0")
    if np.any(t < 0):
        raise ValueError("t must be >= 0")
    rho = np.sqrt((k * k - d * d).astype(complex))
    ap = k + rho
    s0, c0 = np.sin(psi0 / 2), np.cos(psi0 / 2)
    e = np.exp(-rho * t)
    N = (ap * s0 - d * c0) * e + d * c0 - (d * d / ap) * s0
    D = (d * s0 - (d * d / ap) * c0) * e + ap * c0 - d * s0
    locked = np.abs(d) < k
    # locked: N, D real, atan2 keeps the branch; unlocked: u = N/D real up to rounding
    psi_locked = 2 * np.arctan2(N.real, D.real)
    u = N / np.where(D == 0, 1e-300, D)
    psi_free = 2 * np.arctan(u.real)
    psi = np.where(locked, psi_locked, psi_free)
    return np.pi - np.mod(np.pi - psi, 2 * np.pi)


def ring_injection_current(ring, strength_rad_s: float, node: int = 0) -> dict:
    """Sinusoidal injection current that locks a ring with strength K [rad/s] through ``node``.

    Returns a dict with ``amplitude_a`` (I = K C / |V₁|), ``ppv_phase_rad`` (α = arg V₁, the rotation of the
    reference phase to compensate), ``ppv_first_harmonic_rad_per_v`` (|V₁|), ``driver_power_w`` (the supply
    power of a class-B current driver, V_DD · I · 2/π: assumed driver) and ``source``.
    """
    from hw_models.ring_macro import limit_cycle

    if not (math.isfinite(strength_rad_s) and strength_rad_s > 0):
        raise ValueError(f"strength_rad_s must be finite and > 0, got {strength_rad_s!r}")
    if not 0 <= node < ring.n_stages:
        raise ValueError(f"node must be in [0, {ring.n_stages - 1}], got {node}")
    lc = limit_cycle(ring)
    v1 = complex(np.mean(lc.ppv[:, node] * np.exp(-1j * lc.theta)))
    amp = strength_rad_s * ring.c_load_f / abs(v1)
    return {"amplitude_a": amp, "ppv_phase_rad": math.atan2(v1.imag, v1.real),
            "ppv_first_harmonic_rad_per_v": abs(v1), "driver_power_w": ring.vdd_v * amp * 2 / math.pi,
            "source": "K = I |V1| / C from the ring's PPV (Bhansali & Roychowdhury 2009); driver power V_DD I 2/pi "
                      "of a class-B current source (assumed)"}


def injection_current(t, amplitude_a: float, f_ref_hz: float, phase_rad):
    """i(t) = I cos(2π f_ref t + θ_ref) [A] (circuit-level reference current; broadcasts over phases)."""
    return amplitude_a * np.cos(2 * math.pi * f_ref_hz * np.asarray(t, dtype=float) + np.asarray(phase_rad, dtype=float))
