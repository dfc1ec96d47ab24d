"""Flicker (1/f) noise: a sum of Ornstein–Uhlenbeck processes spanning a band, and its 1/f³ phase noise.

Notes
-----
**Current noise at a ring node.** The one-sided current-noise PSD is white plus flicker with corner f_c,
S_i(f) = S_w (1 + f_c/f) (S_w the channel thermal noise of :func:`hw_models.noise.thermal_current_psd`). The
1/f part is represented over a stated band [f_min, f_max] by K = per_decade · log10(f_max/f_min) + 1 OU
processes with log-spaced rates γ_k = 2π f_k and equal variances v: each has the one-sided PSD
4 v γ_k / (γ_k² + (2πf)²), and for a log-spaced bank (ratio r between rates) the sum is v/(f ln r) inside the
band (continuum limit; within 4 % for 2 per decade, 3.4 % measured: tests), so v = S_w f_c ln r gives
S_w f_c / f. Below f_min the sum flattens; above f_max it falls as 1/f². Each OU process is advanced exactly,
x ← x e^{−γΔt} + sqrt(v (1 − e^{−2γΔt})) z (:func:`ou_step`, Numba; the circuit engine calls it per node).

**Phase macromodel.** A slowly varying current i at node k shifts the frequency by v̄_k i / C_k, v̄_k the
cycle average of the PPV (Hajimiri & Lee's Γ_dc): the flicker current becomes frequency noise of one-sided
PSD S_δω(f) = A/f, A = Σ_k (v̄_k/C_k)² S_w f_c, while the white part gives the phase diffusion D of
:func:`hw_models.noise.isf_diffusion`. The single-sideband phase noise (small angle, L = S_φ/2) is

    L(f) = D / (4π² f²) + A / (8π² f³),

with the 1/f³ corner f_{1/f³} = f_c · Σ v̄_k² / Σ ⟨v_k²⟩ = f_c (Γ_dc/Γ_rms)² (Hajimiri & Lee 1998).
:func:`simulate_phase_noise` integrates dθ = (Σ_k x_k) dt + √D dW with the OU bank of frequency noise on
the engine (:class:`oscsim.engine.CustomODE`) and estimates L(f) from the simulated phase by Welch's method.

References
----------
A. Hajimiri, T. H. Lee, "A general theory of phase noise in electrical oscillators", IEEE JSSC 33, 179 (1998).
M. Hansen, "Achieving accurate on-wafer flicker noise measurements through 30 MHz", Cascade Microtech (2009):
flicker corners of scaled MOSFETs in the MHz range (the 1 MHz default corner is assumed from it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

__all__ = ["FlickerNoise", "cmos_65nm_flicker", "ou_step", "flicker_rhs", "ring_flicker_coefficient",
           "phase_noise_dbc_hz", "simulate_phase_noise"]


@dataclass(frozen=True, kw_only=True)
class FlickerNoise:
    """1/f current noise with a corner, represented by an OU bank over [f_min_hz, f_max_hz].

    Attributes
    ----------
    corner_hz : float
        f_c [Hz] where the flicker PSD equals the white PSD (> 0).
    f_min_hz, f_max_hz : float
        Band spanned by the OU processes [Hz], 0 < f_min < f_max.
    per_decade : int
        OU processes per decade (1–10).
    """

    corner_hz: float
    f_min_hz: float
    f_max_hz: float
    per_decade: int = 2

    def __post_init__(self):
        for n in ("corner_hz", "f_min_hz", "f_max_hz"):
            v = getattr(self, n)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v > 0):
                raise ValueError(f"FlickerNoise.{n} must be a finite number > 0 [Hz], got {v!r}")
        if not self.f_max_hz > self.f_min_hz:
            raise ValueError(f"FlickerNoise needs f_min_hz < f_max_hz, got {self.f_min_hz} >= {self.f_max_hz}")
        if isinstance(self.per_decade, bool) or not isinstance(self.per_decade, int) or not 1 <= self.per_decade <= 10:
            raise ValueError(f"FlickerNoise.per_decade must be an integer in [1, 10], got {self.per_decade!r}")

    @property
    def n_processes(self) -> int:
        return int(round(self.per_decade * math.log10(self.f_max_hz / self.f_min_hz))) + 1

    @property
    def ratio(self) -> float:
        """r = f_{k+1}/f_k."""
        return (self.f_max_hz / self.f_min_hz) ** (1.0 / (self.n_processes - 1))

    def rates(self) -> np.ndarray:
        """(K,) OU rates γ_k = 2π f_k [rad/s]."""
        return 2 * math.pi * np.geomspace(self.f_min_hz, self.f_max_hz, self.n_processes)

    def variance(self, white_psd: float) -> float:
        """Variance v of each OU process for a white one-sided PSD S_w [unit²/Hz]: v = S_w f_c ln r [unit²]."""
        return float(white_psd) * self.corner_hz * math.log(self.ratio)

    def psd(self, f_hz, white_psd: float) -> np.ndarray:
        """One-sided PSD of the OU bank (the flicker part only) at f [unit²/Hz]."""
        f = np.asarray(f_hz, dtype=float)[..., None]
        g = self.rates()
        return np.sum(4 * self.variance(white_psd) * g / (g**2 + (2 * math.pi * f) ** 2), axis=-1)


def cmos_65nm_flicker() -> FlickerNoise:
    """Flicker corner 1 MHz (assumed: MHz corners of scaled MOSFETs, Hansen 2009), band 1 kHz – 100 MHz
    (assumed: spans the phase-noise offsets reported, 10 kHz – 1 MHz, with a decade either side)."""
    return FlickerNoise(corner_hz=1e6, f_min_hz=1e3, f_max_hz=1e8, per_decade=2)


@numba.njit(cache=True)
def ou_step(x, rates, stds, dt, z):
    """Exact OU update in place: x ← x e^{−γΔt} + std sqrt(1 − e^{−2γΔt}) z (all (K,) arrays; std = sqrt(v))."""
    for k in range(x.shape[0]):
        a = math.exp(-rates[k] * dt)
        x[k] = x[k] * a + stds[k] * math.sqrt(1.0 - a * a) * z[k]


@numba.njit(cache=True)
def flicker_rhs(t, y, p, dydt):
    """CustomODE right-hand side: y = [θ, x_1..x_K], p = [K, γ_1..γ_K]; dθ/dt = Σ x_k, dx_k/dt = −γ_k x_k
    (the noise √D on θ and √(2 v γ_k) on x_k is the engine's additive sigma)."""
    K = int(p[0])
    s = 0.0
    for k in range(K):
        s += y[1 + k]
        dydt[1 + k] = -p[1 + k] * y[1 + k]
    dydt[0] = s


def ring_flicker_coefficient(ring, flicker: FlickerNoise) -> dict:
    """Frequency-noise coefficient A [rad²/s²] (S_δω = A/f) and the 1/f³ corner of a ring with flicker current
    noise at every node (white PSD from :func:`hw_models.noise.thermal_current_psd`)."""
    from hw_models.noise import isf_diffusion, thermal_current_psd
    from hw_models.ring_macro import limit_cycle

    lc = limit_cycle(ring)
    vbar = lc.ppv.mean(axis=0)  # (n,) rad/V
    vrms2 = (lc.ppv**2).mean(axis=0)
    sw = thermal_current_psd(ring)
    A = float(np.sum(vbar**2) / ring.c_load_f**2 * sw * flicker.corner_hz)
    return {"A_rad2_per_s2": A, "diffusion_rad2_per_s": isf_diffusion(ring),
            "corner_1_f3_hz": flicker.corner_hz * float(np.sum(vbar**2) / np.sum(vrms2)),
            "gamma_dc_over_rms": float(math.sqrt(np.sum(vbar**2) / np.sum(vrms2))),
            "flicker_corner_hz": flicker.corner_hz}


def phase_noise_dbc_hz(diffusion_rad2_per_s: float, offset_hz, flicker_a: float = 0.0, *,
                       lorentzian: bool = False) -> np.ndarray:
    """L(f) [dBc/Hz] = 10 log10(D/(4π² f²) + A/(8π² f³)) from the diffusion D and flicker coefficient A.

    ``lorentzian=True``: the white part as the signal's Lorentzian line (D/4π²)/((D/4π)² + f²) (Demir 2000),
    which flattens inside the linewidth; False: the small-angle phase spectrum S_φ/2 (what a phase PSD shows).
    """
    f = np.asarray(offset_hz, dtype=float)
    if np.any(f <= 0):
        raise ValueError("offset_hz must be > 0")
    D = float(diffusion_rad2_per_s)
    white = (D / (4 * math.pi**2)) / ((D / (4 * math.pi)) ** 2 + f**2) if lorentzian else D / (4 * math.pi**2 * f**2)
    return 10 * np.log10(white + flicker_a / (8 * math.pi**2 * f**3))


def simulate_phase_noise(diffusion: float, flicker_a: float, flicker: FlickerNoise, *, t1: float, dt: float,
                         n_groups: int = 8, save_every: int = 1, seed: int = 0, nperseg: int | None = None):
    """Phase noise L(f) [dBc/Hz] of the phase macromodel with white diffusion and OU-bank flicker frequency noise,
    from a simulated spectrum (engine, stochastic Heun; Welch's method over ``n_groups`` independent runs).

    Units: any time unit (rates and D in that unit); ``flicker`` holds its band in the inverse unit.

    Returns
    -------
    (f, L) : frequencies (inverse time unit) and L(f) = S_φ(f)/2 in dB.
    """
    from scipy.signal import welch

    from oscsim.engine import CustomODE, SaveEvery, StochasticHeun, simulate

    g = flicker.rates()
    K = g.size
    v = flicker.variance(1.0) * flicker_a / flicker.corner_hz  # A/f target: v = A ln r
    p = np.tile(np.concatenate([[K], g]), (n_groups, 1))
    sig = np.concatenate([[math.sqrt(diffusion)], np.sqrt(2 * v * g)])
    y0 = np.zeros((n_groups, K + 1))
    rng = np.random.default_rng(seed)
    y0[:, 1:] = math.sqrt(v) * rng.standard_normal((n_groups, K))  # start the OU bank stationary
    model = CustomODE(flicker_rhs, p, K + 1, sigma=sig)
    sol = simulate(model, StochasticHeun(), 0.0, t1, dt, y0, save=SaveEvery(save_every), seed=seed)
    th = np.asarray(sol.ys)[:, :, 0]  # (S, G)
    fs = 1.0 / (dt * save_every)
    f, S = welch(th.T, fs=fs, nperseg=nperseg or th.shape[0] // 8, detrend="linear", axis=-1)
    S = S.mean(axis=0)
    keep = f > 0
    return f[keep], 10 * np.log10(S[keep] / 2)
