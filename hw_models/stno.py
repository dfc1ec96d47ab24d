"""Spin-torque nano-oscillator: universal auto-oscillator model (Slavin & Tiberkevich 2009).

Notes
-----
dc/dt = −i ω(p) c − Γ₊(p) c + Γ₋(p) c + Σ_j Ω_ij e^{iβ_ij} c_j + F e^{−iω_e t} + f(t), p = |c|²,
ω(p) = ω₀ + N p, Γ₊(p) = Γ_G (1 + Q p), Γ₋(p) = σ I (1 − p), σ I = ζ Γ_G.

Closed forms (derived from the model):

* free-running power p₀ = (ζ − 1)/(ζ + Q); frequency ω_g = ω₀ + N p₀;
* amplitude relaxation rate Γ_p = p₀ (Γ_G Q + σ I); dimensionless nonlinearity ν = N p₀ / Γ_p;
* thermal noise ⟨f f*⟩ = 2 D_n δ(t − t'), D_n = Γ₊(p₀) k_B T / E₀ (so E|σ dZ|² = σ² dt with σ² = 2 D_n);
  at I = 0 this gives ⟨E₀ p⟩ = k_B T (equipartition);
* phase diffusion D = (D_n / p₀)(1 + ν²) [rad²/s] = Γ₊(p₀) (k_B T / E(p₀)) (1 + ν²): the Lorentzian
  generation line has FWHM Δω = D (the nonlinear linewidth enhancement 1 + ν²);
* injection locking to F e^{−iω_e t} (weak F, adiabatic amplitude): |ω_e − ω_g| ≤ (F/√p₀) √(1 + ν²);
* phase model for coupling Ω e^{iβ} between identical oscillators (c_i ∝ √p₀ e^{−iφ_i}):
  dφ_i/dt = ω_g + Ω √(1 + ν²) sin(φ_j − φ_i − β + arctan ν), see :func:`stno_coupling_function`.
* electrical power P = I² R (Joule heating of the bias current; the microwave output is ≪ 1 %).

References
----------
A. Slavin, V. Tiberkevich, IEEE Trans. Magn. 45, 1875 (2009).
"""

from __future__ import annotations

import math

import numpy as np

from hw_models.constants import K_B
from hw_models.params import STNOParams

__all__ = ["stno_power_p0", "stno_frequency_hz", "stno_nu", "stno_relaxation_rate", "stno_noise_sigma",
           "stno_diffusion", "stno_locking_half_range", "stno_model", "simulate_stno", "stno_coupling_function",
           "stno_unwrapped_phase"]


def _w0(p: STNOParams) -> float:
    return 2 * math.pi * p.f0_hz


def _n(p: STNOParams) -> float:
    return 2 * math.pi * p.n_shift_hz


def stno_power_p0(p: STNOParams) -> float:
    """Free-running dimensionless power p₀ = (ζ − 1)/(ζ + Q)."""
    return (p.supercriticality - 1.0) / (p.supercriticality + p.q_nonlinear_damping)


def stno_frequency_hz(p: STNOParams) -> float:
    """Free-running frequency (ω₀ + N p₀)/2π [Hz]."""
    return (_w0(p) + _n(p) * stno_power_p0(p)) / (2 * math.pi)


def stno_relaxation_rate(p: STNOParams) -> float:
    """Γ_p = p₀ (Γ_G Q + σI) [1/s]."""
    return stno_power_p0(p) * p.gamma_g_per_s * (p.q_nonlinear_damping + p.supercriticality)


def stno_nu(p: STNOParams) -> float:
    """ν = N p₀ / Γ_p (dimensionless nonlinear frequency shift)."""
    return _n(p) * stno_power_p0(p) / stno_relaxation_rate(p)


def stno_noise_sigma(p: STNOParams, noise_scale: float = 1.0) -> float:
    """σ = √(2 D_n) of the complex noise, D_n = Γ₊(p₀) k_B T / E₀ [1/√s] (times √noise_scale)."""
    gp = p.gamma_g_per_s * (1.0 + p.q_nonlinear_damping * stno_power_p0(p))
    return math.sqrt(2.0 * noise_scale * gp * K_B * p.temperature_k / p.energy_scale_j)


def stno_diffusion(p: STNOParams, noise_scale: float = 1.0) -> float:
    """Phase diffusion D = (σ²/(2 p₀)) (1 + ν²) [rad²/s] = FWHM linewidth in rad/s."""
    s = stno_noise_sigma(p, noise_scale)
    return s * s / (2.0 * stno_power_p0(p)) * (1.0 + stno_nu(p) ** 2)


def stno_locking_half_range(p: STNOParams, drive_amplitude: float) -> float:
    """Half-width of the injection-locking band (F/√p₀) √(1 + ν²) [rad/s] for a drive F [1/s]."""
    return drive_amplitude / math.sqrt(stno_power_p0(p)) * math.sqrt(1.0 + stno_nu(p) ** 2)


def stno_model(params, coupling=None, *, noise_scale: float = 0.0, drive=None):
    """An engine ``StuartLandauNetwork`` for STNO parameters.

    ``params``: one STNOParams (N = 1), a sequence of N, or a nested G×N list (per-instance mismatch).
    ``coupling``: complex (N, N) or (G, N, N) [1/s], Ω_ij e^{iβ_ij}. Time unit: seconds.
    """
    from oscsim.engine import StuartLandauNetwork

    arr = np.array(params, dtype=object)
    if arr.ndim == 0:
        arr = arr.reshape(1, 1)
    elif arr.ndim == 1:
        arr = arr.reshape(1, -1)
    G, N = arr.shape
    a = np.empty((G, N), complex)
    b = np.empty((G, N), complex)
    sig = np.empty((G, N))
    for g in range(G):
        for i in range(N):
            q = arr[g, i]
            sI = q.supercriticality * q.gamma_g_per_s
            a[g, i] = -1j * _w0(q) + (sI - q.gamma_g_per_s)
            b[g, i] = -1j * _n(q) - (q.gamma_g_per_s * q.q_nonlinear_damping + sI)
            sig[g, i] = stno_noise_sigma(q, noise_scale) if noise_scale > 0 else 0.0
    C = np.zeros((N, N), complex) if coupling is None else np.asarray(coupling, complex)
    return StuartLandauNetwork(a=a, b=b, coupling=C, sigma=sig if noise_scale > 0 else 0.0, drive=drive)


def simulate_stno(params, t1_s: float, *, dt_s: float | None = None, coupling=None, noise_scale: float = 0.0,
                  drive=None, save_every: int = 1, seed: int = 0, y0=None):
    """Simulate STNOs with the engine (stochastic Heun when noisy, RK4 otherwise). Returns the Solution."""
    from oscsim.engine import RK4, SaveEvery, StochasticHeun, simulate

    model = stno_model(params, coupling, noise_scale=noise_scale, drive=drive)
    G, N = np.shape(model.a) if np.ndim(model.a) == 2 else (1, np.size(model.a))
    first = np.array(params, dtype=object).ravel()[0]
    if dt_s is None:
        dt_s = 1.0 / (stno_frequency_hz(first) * 40)
    if y0 is None:
        y0 = np.full((G, N), math.sqrt(stno_power_p0(first)) + 0j)
    solver = StochasticHeun() if noise_scale > 0 else RK4()
    return simulate(model, solver, 0.0, t1_s, dt_s, y0, save=SaveEvery(save_every), seed=seed)


def stno_unwrapped_phase(ys) -> np.ndarray:
    """Phase φ with c = √p e^{−iφ} (increasing in time), unwrapped along axis 0."""
    return np.unwrap(-np.angle(ys), axis=0)


def stno_coupling_function(p: STNOParams, coupling_rate: float, beta: float):
    """Phase-model coupling of identical STNOs through Ω e^{iβ} [1/s]: returns (offset [rad/s], (1, 2) harmonics).

    Notes
    -----
    With c = √p e^{−iφ} and Δ = φ_j − φ_i, the coupling term Ω e^{iβ} c_j adds −Ω sin(β − Δ) to dφ_i/dt
    directly and Ω cos(β − Δ) to the amplitude rate; adiabatic elimination (δp = p₀ Ω cos(β − Δ)/Γ_p, δω = N δp)
    gives H(Δ) = Ω [sin(Δ − β) + ν cos(Δ − β)] = Ω √(1+ν²) sin(Δ − β + arctan ν)
    = a sin Δ + b cos Δ with a = Ω (cos β + ν sin β), b = Ω (ν cos β − sin β).
    """
    nu = stno_nu(p)
    a1 = coupling_rate * (math.cos(beta) + nu * math.sin(beta))
    b1 = coupling_rate * (nu * math.cos(beta) - math.sin(beta))
    return 0.0, np.array([[a1, b1]])
