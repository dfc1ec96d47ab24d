"""The device data of coupled-ring networks: a chip's nominal ring, its limit cycle and the two-tap
transconductor coupling, built from the chip's own :class:`hw_models.RingOscillator`.

Coupling function of a unilateral transconductor from node ``k`` of a source ring into node 0 of a receiver
(cycle average, weak coupling): H(Δ) = (1/2π)∮ v₀(s)/C₀ · (x_k(s + Δ) − V_DD/2) ds [rad/s per S], v₀ the
receiver's PPV at node 0. The two-tap weights (:mod:`hw_models.two_tap`) make its first harmonic a pure sine.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from hw_models.two_tap import best_second_tap, tap_weights

__all__ = ["CircuitDevice", "circuit_device", "transconductor_coupling_function"]


@dataclass(frozen=True, eq=False)
class CircuitDevice:
    """The ring and coupler figures one circuit chip uses (from :mod:`hw_models`, see :func:`circuit_device`).

    Attributes
    ----------
    ring : RingOscillatorParams
        Nominal ring (loads scaled so that its free-running frequency is the chip's f₀).
    period_s, omega : float
        Free-running period [s] and angular frequency [rad/s] of the nominal ring (limit cycle).
    lc_theta : (M,) rad; lc_x : (M, n) V
        Nominal limit cycle on a uniform phase grid, phase 0 at the rising V_DD/2 crossing of node 0.
    tap_node : int
        Second tap k of the source ring.
    weights : (2,)
        Tap weights (w₁ at node 0, w₂ at node k), w₁ + w₂ = 1.
    a1_rad_s_per_s : float
        First sine harmonic of the two-tap coupling function per siemens [rad/s per S].
    harmonics : (M, 2)
        Two-tap coupling function harmonics normalised to a₁ = 1 (b₁ = 0 by construction).
    offset_norm : float
        H(0)/a₁ of the two-tap coupler including its loading offset a₀ (the periphery subtracts it).
    sens_vtn, sens_vtp : (n,) Hz/V; sens_c : (n,) Hz
        First-order frequency sensitivities to each stage's ΔV_T and relative load change.
    s_i_a2_per_hz : float
        One-sided node current-noise PSD [A²/Hz] at the chip temperature.
    sources : dict
    """

    ring: object
    period_s: float
    omega: float
    lc_theta: np.ndarray
    lc_x: np.ndarray
    tap_node: int
    weights: np.ndarray
    a1_rad_s_per_s: float
    harmonics: np.ndarray
    offset_norm: float
    sens_vtn: np.ndarray
    sens_vtp: np.ndarray
    sens_c: np.ndarray
    s_i_a2_per_hz: float
    sources: dict


def transconductor_coupling_function(lc_x, ppv, c_load_f, vmid, src_node, n_harmonics=8):
    """Coupling function of a unit (1 S) transconductor from node ``src_node`` of a source ring into node 0.

    H(Δ) = (1/2π)∮ v₀(s)/C · (x_src(s + Δ) − V_DD/2) ds [rad/s per S], Δ = θ_source − θ_receiver, both rings
    nominal (cycle average, weak coupling). Returns (a₀, harmonics (n_harmonics, 2) rows (a_m, b_m)).
    """
    M = lc_x.shape[0]
    v0 = ppv[:, 0] / c_load_f
    xs = lc_x[:, src_node] - vmid
    # H(Δ_j) = mean_s v0(s) xs(s + Δ_j): a circular cross-correlation, evaluated by FFT
    H = np.real(np.fft.ifft(np.conj(np.fft.fft(v0)) * np.fft.fft(xs))) / M
    c = np.fft.rfft(H) / M
    m = np.arange(1, n_harmonics + 1)
    return float(c[0].real), np.stack([-2 * c[m].imag, 2 * c[m].real], axis=1)


def circuit_device(ring=None, temperature_k: float = 300.0) -> CircuitDevice:
    """Nominal ring, limit cycle, two-tap transconductor coupling and noise of a chip's ring (cached).

    Parameters
    ----------
    ring : RingOscillator, RingOscillatorParams or None
        The chip's own ring (``chip.device.oscillator``: the preset, rescaled to the chip's f₀ by its load
        when the config sets one); None: the :func:`hw_models.cmos_65nm_ring` preset.
    temperature_k : float
        Chip temperature [K] (node thermal noise, level-1 temperature law).
    """
    import hw_models as hw

    params = hw.cmos_65nm_ring() if ring is None else getattr(ring, "params", ring)
    if not isinstance(params, hw.RingOscillatorParams):
        raise ValueError(f"ring must be a RingOscillator, RingOscillatorParams or None, got {type(ring).__name__}")
    return _circuit_device(params, float(temperature_k), "the chip's RingOscillator" if ring is not None
                           else "hw_models.cmos_65nm_ring()")


@lru_cache(maxsize=8)
def _circuit_device(params, temperature_k: float, origin: str) -> CircuitDevice:
    import hw_models as hw

    ring = params.replace(temperature_k=temperature_k)
    src = {"ring": origin, "coupler": "hw_models.TransconductanceCoupler (two taps)"}
    lc = hw.limit_cycle(ring)
    n = ring.n_stages
    vmid = 0.5 * ring.vdd_v
    taps = [transconductor_coupling_function(lc.x, lc.ppv, ring.c_load_f, vmid, k) for k in range(n)]
    first = [t[1][0, 0] + 1j * t[1][0, 1] for t in taps]
    best = best_second_tap(first[0], ((k, first[k]) for k in range(1, n)))
    if best is None:
        raise ValueError("no tap of the ring makes the transconductor's coupling function a pure sine")
    k, r = best
    w = tap_weights(r)
    a0 = w[0] * taps[0][0] + w[1] * taps[k][0]
    h = w[0] * taps[0][1] + w[1] * taps[k][1]
    a1 = float(h[0, 0])
    hn = h / a1
    hn[0, 1] = 0.0  # exact by construction (rounding)
    sn, sp, sc = hw.frequency_sensitivities(ring)
    return CircuitDevice(
        ring=ring, period_s=lc.period_s, omega=lc.omega, lc_theta=lc.theta.copy(), lc_x=lc.x.copy(),
        tap_node=int(k), weights=w, a1_rad_s_per_s=a1, harmonics=hn,
        offset_norm=float((a0 + h[:, 1].sum()) / a1), sens_vtn=np.asarray(sn), sens_vtp=np.asarray(sp),
        sens_c=np.asarray(sc), s_i_a2_per_hz=float(hw.thermal_current_psd(ring)), sources=src)
