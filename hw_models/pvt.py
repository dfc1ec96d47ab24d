"""Process-voltage-temperature dependence of the devices: ring f₀(T) and df₀/dV_DD, trim and drift.

Notes
-----
**Ring (circuit model).** The ring's transistors are SPICE level-1 devices whose parameters are given at
TNOM = 27 °C (300.15 K, ngspice's default). At a device temperature T the circuit model uses exactly the
temperature law of ngspice's level-1 MOSFET (``mos1temp.c``; ngspice manual, ch. "MOSFETs", level 1–3
temperature dependence), with GAMMA = 0 and the default PHI = 0.6 V:

- mobility ∝ T^−m with m = 1.5: KP(T) = KP(TNOM) · (T/TNOM)^−1.5;
- V_TO(T) = V_TO + ½ (E_g(TNOM) − E_g(T)) + type · ½ (φ(T) − φ), with E_g(T) = 1.16 − 7.02e−4 T²/(T + 1108) eV,
  φ(T) = (T/T_ref) (φ − p(TNOM))/(TNOM/T_ref) + p(T), p(T) = −2 V_t(T) (1.5 ln(T/T_ref) + q·a(T)),
  a(T) = −E_g(T)/(2 k T) + 1.1150877/(2 k T_ref), T_ref = 300.15 K, V_t = kT/q (type +1 NMOS, −1 PMOS).

Its local slope is the linear law V_T(T) = V_T0 − k_VT (T − T0) with k_VT = −dV_TO/dT
(:func:`vt_temperature_coefficient`, about 1 mV/K here; the order of the 1–4 mV/K of bulk CMOS, Sze & Ng,
*Physics of Semiconductor Devices*, 3rd ed., ch. 6). f₀(T) is the limit-cycle frequency of the circuit at
the scaled parameters (:func:`ring_f0_hz`), checked against ngspice ``.temp`` in tests/test_realism_pvt.py.
The supply sensitivity df₀/dV_DD is a central difference of the same circuit model.

**Spin-torque oscillator.** No temperature coefficient of the universal model's parameters (ω₀, N, Γ_G, ζ)
is cited in the presets, so only the thermal noise depends on T (D_n ∝ T, :mod:`hw_models.stno`);
:func:`stno_df0_dT` returns 0 and says so. **Ideal oscillator**: no temperature dependence.

References
----------
ngspice manual (ngspice-42), section 11.2 "MOSFET models", level 1 temperature dependence; source
``src/spicelib/devices/mos1/mos1temp.c`` (github.com/imr/ngspice).
S. M. Sze, K. K. Ng, Physics of Semiconductor Devices, 3rd ed., Wiley 2007.
"""

from __future__ import annotations

import math

from hw_models.params import RingOscillatorParams

__all__ = ["TNOM_K", "MOBILITY_EXPONENT", "ngspice_level1_kp", "ngspice_level1_vto", "ring_at_temperature",
           "ring_f0_hz", "ring_df0_dT", "ring_df0_dvdd", "vt_temperature_coefficient", "stno_df0_dT"]

TNOM_K = 300.15
"""Parameter measurement temperature TNOM [K]: ngspice's default 27 °C (ngspice manual, .options TNOM)."""
REFTEMP_K = 300.15
"""ngspice's REFTEMP [K] (const.h)."""
MOBILITY_EXPONENT = 1.5
"""m in KP ∝ T^−m: fixed in ngspice level 1 (mos1temp.c: ratio4 = ratio · sqrt(ratio))."""
PHI_V = 0.6
"""Surface potential PHI [V]: the level-1 default (ngspice manual), the presets do not set it."""
_Q = 1.6021766208e-19  # elementary charge [C] (ngspice const.h CHARGE)
_K = 1.38064852e-23  # Boltzmann constant [J/K] (ngspice const.h CONSTboltz)


def _egap(t):
    return 1.16 - 7.02e-4 * t * t / (t + 1108.0)


def _pbfact(t):
    vt = t * _K / _Q
    arg = -_egap(t) / (2 * _K * t) + 1.1150877 / (_K * (REFTEMP_K + REFTEMP_K))
    return -2 * vt * (1.5 * math.log(t / REFTEMP_K) + _Q * arg)


def ngspice_level1_kp(kp: float, temperature_k: float, tnom_k: float = TNOM_K) -> float:
    """KP [A/V²] at T: KP · (T/TNOM)^−1.5 (ngspice level 1)."""
    _check_t(temperature_k)
    return kp / (temperature_k / tnom_k) ** MOBILITY_EXPONENT


def ngspice_level1_vto(vto: float, temperature_k: float, mos_type: int, tnom_k: float = TNOM_K,
                       phi_v: float = PHI_V) -> float:
    """V_TO [V] at T with GAMMA = 0 (ngspice level 1, mos1temp.c); ``mos_type`` +1 NMOS, −1 PMOS."""
    _check_t(temperature_k)
    if mos_type not in (1, -1):
        raise ValueError(f"mos_type must be +1 (NMOS) or -1 (PMOS), got {mos_type!r}")
    t = float(temperature_k)
    fact1, fact2 = tnom_k / REFTEMP_K, t / REFTEMP_K
    phio = (phi_v - _pbfact(tnom_k)) / fact1
    tphi = fact2 * phio + _pbfact(t)
    return vto + 0.5 * (_egap(tnom_k) - _egap(t)) + mos_type * 0.5 * (tphi - phi_v)


def _check_t(t):
    if not (isinstance(t, (int, float)) and math.isfinite(t) and 1.0 <= t <= 1000.0):
        raise ValueError(f"temperature_k must be in [1, 1000] K, got {t!r}")


def ring_at_temperature(ring: RingOscillatorParams, temperature_k: float) -> RingOscillatorParams:
    """The ring's parameters at device temperature T (KP and V_TO by ngspice's level-1 law; thermal noise at T).

    ``ring`` holds the parameters at TNOM (the presets are written at 27 °C)."""
    t = float(temperature_k)
    return ring.replace(
        kp_n_a_per_v2=ngspice_level1_kp(ring.kp_n_a_per_v2, t), kp_p_a_per_v2=ngspice_level1_kp(ring.kp_p_a_per_v2, t),
        vto_n_v=ngspice_level1_vto(ring.vto_n_v, t, +1), vto_p_v=ngspice_level1_vto(ring.vto_p_v, t, -1),
        temperature_k=t)


def ring_f0_hz(ring: RingOscillatorParams, temperature_k: float) -> float:
    """Free-running frequency [Hz] of the circuit model at T."""
    from hw_models.ring_macro import limit_cycle

    return limit_cycle(ring_at_temperature(ring, temperature_k)).f0_hz


def ring_df0_dT(ring: RingOscillatorParams, temperature_k: float, dt_k: float = 2.0) -> float:
    """df₀/dT [Hz/K], central difference of the circuit model (±``dt_k``)."""
    return (ring_f0_hz(ring, temperature_k + dt_k) - ring_f0_hz(ring, temperature_k - dt_k)) / (2 * dt_k)


def ring_df0_dvdd(ring: RingOscillatorParams, temperature_k: float, dv_v: float = 0.01) -> float:
    """df₀/dV_DD [Hz/V], central difference of the circuit model (±``dv_v``) at T."""
    from hw_models.ring_macro import limit_cycle

    r = ring_at_temperature(ring, temperature_k)
    hi = limit_cycle(r.replace(vdd_v=r.vdd_v + dv_v)).f0_hz
    lo = limit_cycle(r.replace(vdd_v=r.vdd_v - dv_v)).f0_hz
    return (hi - lo) / (2 * dv_v)


def vt_temperature_coefficient(ring: RingOscillatorParams, temperature_k: float = TNOM_K) -> dict:
    """k_VT = −d|V_TO|/dT [V/K] of the NMOS and PMOS at T (the slope of ngspice's law)."""
    h = 0.5
    kn = -(ngspice_level1_vto(ring.vto_n_v, temperature_k + h, 1) - ngspice_level1_vto(ring.vto_n_v, temperature_k - h, 1)) / (2 * h)
    kp = (ngspice_level1_vto(ring.vto_p_v, temperature_k + h, -1) - ngspice_level1_vto(ring.vto_p_v, temperature_k - h, -1)) / (2 * h)
    return {"k_vt_n_v_per_k": kn, "k_vt_p_v_per_k": kp}


def stno_df0_dT(params) -> dict:
    """Spin-torque df₀/dT: not modelled (no cited temperature coefficient of ω₀, N, Γ_G, ζ); returns 0 with the
    reason."""
    return {"df0_dT_hz_per_k": 0.0, "note": "not modelled: no cited temperature coefficient of the universal-model "
                                           "parameters; only the thermal noise scales with T"}
