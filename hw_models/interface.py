"""The uniform device interface used by ``mapping``: one function per question, dispatched on the params type.

Every function takes a params dataclass (:class:`RingOscillatorParams`, :class:`STNOParams`,
:class:`IdealOscillatorParams`) and answers in SI units. See docs/devices.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from hw_models.params import IdealOscillatorParams, ResistiveCoupler, RingOscillatorParams, STNOParams

__all__ = ["free_running_frequency", "phase_diffusion", "coupling_function", "power", "energy_per_cycle",
           "phase_noise_dbc_hz", "draw_mismatch", "DeviceInstances", "coupler_programming_energy"]

from hw_models.energy import coupler_programming_energy  # noqa: E402  (re-export)


def _kind(params):
    if isinstance(params, RingOscillatorParams):
        return "ring"
    if isinstance(params, STNOParams):
        return "stno"
    if isinstance(params, IdealOscillatorParams):
        return "ideal"
    raise ValueError(
        f"unknown device params {type(params).__name__}; valid: RingOscillatorParams, STNOParams, IdealOscillatorParams")


def free_running_frequency(params) -> float:
    """Free-running frequency f₀ [Hz]."""
    k = _kind(params)
    if k == "ring":
        from hw_models.ring_macro import limit_cycle

        return limit_cycle(params).f0_hz
    if k == "stno":
        from hw_models.stno import stno_frequency_hz

        return stno_frequency_hz(params)
    return params.f0_hz


def phase_diffusion(params, noise_scale: float = 1.0) -> float:
    """Phase diffusion D [rad²/s] (Var θ(t) = D t); a phase model uses σ = √D."""
    k = _kind(params)
    if k == "ring":
        from hw_models.noise import isf_diffusion

        return isf_diffusion(params, noise_scale)
    if k == "stno":
        from hw_models.stno import stno_diffusion

        return stno_diffusion(params, noise_scale)
    return params.diffusion_rad2_per_s * noise_scale


def phase_noise_dbc_hz(params, offset_hz) -> np.ndarray:
    """Single-sideband phase noise L(f_m) [dBc/Hz] at offset(s) ``offset_hz`` (Lorentzian, Demir 2000)."""
    from hw_models.noise import phase_noise_dbc_hz_from_diffusion

    return phase_noise_dbc_hz_from_diffusion(phase_diffusion(params), offset_hz)


@dataclass(frozen=True)
class _CF:
    offset_rad_s: float
    harmonics: np.ndarray


def coupling_function(params, coupler=None, *, beta_rad: float = 0.0, n_harmonics: int = 8):
    """Phase-macromodel coupling H(Δ) = offset + Σ a_m sin mΔ + b_m cos mΔ [rad/s], Δ = θ_source − θ_receiver.

    Ring: ``coupler`` a ResistiveCoupler/TransmissionGateCoupler (default: 20 kΩ) between node 0 of two
    identical rings, from the PPV (harmonics kept). STNO: ``coupler`` the coupling rate Ω [1/s] (float) with
    phase ``beta_rad``. Ideal: the preset harmonics times ``coupler`` (a strength in rad/s, default 1).
    Returns an object with ``offset_rad_s`` and ``harmonics`` (M, 2).
    """
    k = _kind(params)
    if k == "ring":
        from hw_models.ring_macro import ring_coupling_function

        cp = ResistiveCoupler(resistance_ohm=20e3) if coupler is None else coupler
        return ring_coupling_function(params, cp, n_harmonics=n_harmonics)
    if k == "stno":
        from hw_models.stno import stno_coupling_function

        if coupler is None or not np.isscalar(coupler):
            raise ValueError("for an STNO, coupler must be the coupling rate Ω [1/s] (a float)")
        off, h = stno_coupling_function(params, float(coupler), beta_rad)
        return _CF(off, h)
    s = 1.0 if coupler is None else float(coupler)
    return _CF(0.0, s * np.asarray(params.harmonics, float))


def power(params, coupler=None, n_couplers: int = 0) -> float:
    """Average power of one running oscillator [W] (+ n_couplers × coupler dissipation for rings)."""
    k = _kind(params)
    if k == "ring":
        from hw_models.energy import coupler_power, ring_power_circuit

        p = ring_power_circuit(params)
        if coupler is not None and n_couplers:
            p += n_couplers * coupler_power(params, coupler)
        return p
    if k == "stno":
        from hw_models.energy import stno_power

        return stno_power(params)
    return params.power_w


def energy_per_cycle(params, coupler=None, n_couplers: int = 0) -> float:
    """Energy per oscillation cycle of one oscillator [J] = power / f₀."""
    return power(params, coupler, n_couplers) / free_running_frequency(params)


@dataclass(frozen=True)
class DeviceInstances:
    """n device instances of one chip (mismatch drawn once from a seed).

    ``f0_hz``, ``diffusion_rad2_per_s``, ``power_w``: (n,) arrays; ``detail``: per-device draws
    (ring: ``dvt_n_v``, ``dvt_p_v``, ``c_rel`` of shape (n, stages); STNO: the per-instance STNOParams).
    """

    nominal: object
    f0_hz: np.ndarray
    diffusion_rad2_per_s: np.ndarray
    power_w: np.ndarray
    detail: dict = field(default_factory=dict)


def draw_mismatch(params, n: int, seed, *, method: str = "linear") -> DeviceInstances:
    """Draw n instances of a device with mismatch (same seed, same chip).

    Ring: Pelgrom V_T and load spread per transistor/node; ``method="linear"`` maps them to f₀ with the
    PPV sensitivities (fast; validated against the circuit within a few % of σ_f), ``"circuit"`` simulates
    every ring. STNO: Gaussian relative spread of ω₀, N, Γ_G. Ideal: Gaussian relative spread of f₀.
    """
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    valid = ("linear", "circuit")
    if method not in valid:
        raise ValueError(f"method must be one of {valid}, got {method!r}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    k = _kind(params)
    if k == "ring":
        from hw_models.mismatch import draw_ring_mismatch, frequency_sensitivities

        mm = draw_ring_mismatch(params, n, rng)
        f0 = free_running_frequency(params)
        if method == "linear":
            sn, sp, sc = frequency_sensitivities(params)
            f = f0 + mm.dvt_n_v @ sn + mm.dvt_p_v @ sp + mm.c_rel @ sc
        else:
            from hw_models.ring import RingMismatch, RingNetwork
            from hw_models.ring_macro import limit_cycle
            from hw_models.ring_sim import ring_frequencies, simulate_ring_networks

            T = limit_cycle(params).period_s
            net = RingNetwork.single(params)
            mms = [RingMismatch(dvt_n_v=mm.dvt_n_v[i:i + 1], dvt_p_v=mm.dvt_p_v[i:i + 1], c_rel=mm.c_rel[i:i + 1],
                                coupler_rel=np.zeros(0)) for i in range(n)]
            ts, ys = simulate_ring_networks([net] * n, 40 * T, dt_s=T / 200, mismatches=mms, save_every=2)
            f = ring_frequencies(ts, ys, net, 15 * T)[0][:, 0]
        D = np.full(n, phase_diffusion(params)) * (f / f0) ** 2  # D ∝ f² at fixed ISF shape and noise (assumed)
        P = power(params) * f / f0
        return DeviceInstances(params, f, D, P, {"dvt_n_v": mm.dvt_n_v, "dvt_p_v": mm.dvt_p_v, "c_rel": mm.c_rel})
    if k == "stno":
        from hw_models.energy import stno_power as sp
        from hw_models.stno import stno_diffusion, stno_frequency_hz

        inst = []
        for _ in range(n):
            inst.append(params.replace(
                f0_hz=params.f0_hz * (1 + rng.normal(0, params.sigma_f0_rel)),
                n_shift_hz=params.n_shift_hz * (1 + rng.normal(0, params.sigma_n_rel)),
                gamma_g_per_s=params.gamma_g_per_s * max(0.1, 1 + rng.normal(0, params.sigma_gamma_rel))))
        return DeviceInstances(params, np.array([stno_frequency_hz(q) for q in inst]),
                               np.array([stno_diffusion(q) for q in inst]), np.array([sp(q) for q in inst]),
                               {"instances": tuple(inst)})
    f = params.f0_hz * (1 + rng.normal(0, params.sigma_f_rel, n))
    return DeviceInstances(params, f, np.full(n, params.diffusion_rad2_per_s), np.full(n, params.power_w), {})
