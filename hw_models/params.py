"""Frozen, validated parameter dataclasses for every device kind.

All quantities are SI (seconds, volts, amperes, farads, metres, ohms, watts, joules); the unit is in the field
name or its docstring. Presets live in :mod:`hw_models.presets` and cite the source of each number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace

from hw_models.constants import T_ROOM_K

__all__ = [
    "RingOscillatorParams",
    "ResistiveCoupler",
    "TransmissionGateCoupler",
    "TransconductanceCoupler",
    "STNOParams",
    "IdealOscillatorParams",
]


def _positive(obj, *names):
    for n in names:
        v = getattr(obj, n)
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise ValueError(f"{type(obj).__name__}.{n} must be a finite number > 0, got {v!r}")


def _nonneg(obj, *names):
    for n in names:
        v = getattr(obj, n)
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
            raise ValueError(f"{type(obj).__name__}.{n} must be a finite number >= 0, got {v!r}")


@dataclass(frozen=True, kw_only=True)
class RingOscillatorParams:
    """A CMOS inverter ring: n identical stages, square-law (SPICE level-1) MOSFETs, a load C per node.

    Transistor model (identical to ngspice MOSFET LEVEL=1, Shichman-Hodges, GAMMA=0, no junction or
    gate capacitance; TNOM = 27 degC): with β = KP·W/L, V_ov = V_GS − V_TO,
    I_D = β (V_ov − V_DS/2) V_DS (1 + λ V_DS) for V_DS < V_ov (linear), I_D = (β/2) V_ov² (1 + λ V_DS)
    otherwise, and 0 for V_ov ≤ 0; drain and source swap when V_DS < 0. PMOS: the same with all
    voltages negated and V_TO < 0.

    Node equation (stage k drives node k from node k−1, indices mod n):
    C_k dV_k/dt = I_P(V_{k−1}, V_k) − I_N(V_{k−1}, V_k) + Σ coupler currents + noise.
    """

    n_stages: int
    """Number of inverters (odd, ≥ 3)."""
    vdd_v: float
    """Supply voltage [V]."""
    c_load_f: float
    """Load capacitance per node to ground [F] (wiring, next gate, coupler)."""
    vto_n_v: float
    """NMOS threshold voltage VTO [V] (> 0)."""
    vto_p_v: float
    """PMOS threshold voltage VTO [V] (< 0, SPICE sign convention)."""
    kp_n_a_per_v2: float
    """NMOS transconductance parameter KP = µ_n C_ox [A/V²]."""
    kp_p_a_per_v2: float
    """PMOS transconductance parameter KP = µ_p C_ox [A/V²]."""
    lambda_n_per_v: float = 0.0
    """NMOS channel-length modulation LAMBDA [1/V]."""
    lambda_p_per_v: float = 0.0
    """PMOS channel-length modulation LAMBDA [1/V]."""
    w_n_m: float
    """NMOS width [m]."""
    l_n_m: float
    """NMOS length [m]."""
    w_p_m: float
    """PMOS width [m]."""
    l_p_m: float
    """PMOS length [m]."""
    temperature_k: float = T_ROOM_K
    """Temperature for thermal noise [K] (the transistor model itself is at TNOM)."""
    noise_gamma: float = 2.0 / 3.0
    """Channel thermal-noise factor γ in S_i = 4 k_B T γ g_m (long-channel value 2/3; van der Ziel)."""
    a_vt_n_v_m: float = 3.9e-9
    """NMOS Pelgrom coefficient A_VT [V·m] (σ(ΔV_T) = A_VT/√(WL) for a pair; 3.9 mV·µm)."""
    a_vt_p_v_m: float = 3.9e-9
    """PMOS Pelgrom coefficient A_VT [V·m]."""
    sigma_c_rel: float = 0.0
    """Relative standard deviation of each node's load capacitance (dimensionless)."""

    def __post_init__(self):
        if not isinstance(self.n_stages, int) or isinstance(self.n_stages, bool):
            raise ValueError(f"RingOscillatorParams.n_stages must be an int, got {self.n_stages!r}")
        if self.n_stages < 3 or self.n_stages % 2 == 0:
            raise ValueError(
                f"RingOscillatorParams.n_stages must be odd and >= 3 (an even ring latches and does not "
                f"oscillate), got {self.n_stages}"
            )
        if not (math.isfinite(self.c_load_f) and self.c_load_f > 0):
            raise ValueError(f"RingOscillatorParams.c_load_f must be a capacitance > 0 F, got {self.c_load_f!r}")
        _positive(self, "vdd_v", "vto_n_v", "kp_n_a_per_v2", "kp_p_a_per_v2", "w_n_m", "l_n_m", "w_p_m",
                  "l_p_m", "temperature_k")
        _nonneg(self, "lambda_n_per_v", "lambda_p_per_v", "noise_gamma", "a_vt_n_v_m", "a_vt_p_v_m",
                "sigma_c_rel")
        if not (math.isfinite(self.vto_p_v) and self.vto_p_v < 0):
            raise ValueError(f"RingOscillatorParams.vto_p_v must be < 0 V (SPICE PMOS convention), got {self.vto_p_v!r}")
        if self.vdd_v <= max(self.vto_n_v, -self.vto_p_v):
            raise ValueError(
                f"RingOscillatorParams.vdd_v = {self.vdd_v} V is not above the thresholds (VTO_n = "
                f"{self.vto_n_v} V, |VTO_p| = {-self.vto_p_v} V): the inverters cannot switch; "
                f"use vdd_v > {max(self.vto_n_v, -self.vto_p_v)} V"
            )

    @property
    def beta_n_a_per_v2(self) -> float:
        """β_n = KP_n W_n / L_n [A/V²]."""
        return self.kp_n_a_per_v2 * self.w_n_m / self.l_n_m

    @property
    def beta_p_a_per_v2(self) -> float:
        """β_p = KP_p W_p / L_p [A/V²]."""
        return self.kp_p_a_per_v2 * self.w_p_m / self.l_p_m

    @property
    def sigma_vt_n_v(self) -> float:
        """Pelgrom σ(V_T) of one NMOS [V]: A_VT/√(2 W L) (A_VT is defined for the difference of a pair)."""
        return self.a_vt_n_v_m / math.sqrt(2.0 * self.w_n_m * self.l_n_m)

    @property
    def sigma_vt_p_v(self) -> float:
        """Pelgrom σ(V_T) of one PMOS [V]: A_VT/√(2 W L)."""
        return self.a_vt_p_v_m / math.sqrt(2.0 * self.w_p_m * self.l_p_m)

    def replace(self, **changes) -> "RingOscillatorParams":
        """A copy with some fields changed (validated again)."""
        valid = {f.name for f in fields(self)}
        bad = sorted(set(changes) - valid)
        if bad:
            raise ValueError(f"unknown RingOscillatorParams field(s) {bad}; valid: {sorted(valid)}")
        return replace(self, **changes)


@dataclass(frozen=True, kw_only=True)
class ResistiveCoupler:
    """A resistor between one node of ring a and one node of ring b."""

    resistance_ohm: float
    """Coupling resistance [Ω]."""
    sigma_rel: float = 0.0
    """Relative standard deviation of the resistance across instances (dimensionless)."""

    def __post_init__(self):
        if not (math.isfinite(self.resistance_ohm) and self.resistance_ohm > 0):
            raise ValueError(f"ResistiveCoupler.resistance_ohm must be > 0 Ω, got {self.resistance_ohm!r}")
        _nonneg(self, "sigma_rel")

    @property
    def conductance_s(self) -> float:
        return 1.0 / self.resistance_ohm


@dataclass(frozen=True, kw_only=True)
class TransmissionGateCoupler:
    """A CMOS transmission gate (NMOS gate at V_DD, PMOS gate at 0) between two nodes, always on.

    Uses the ring's transistor model (KP, VTO, LAMBDA) with its own W and L.
    """

    w_n_m: float
    """NMOS pass-transistor width [m]."""
    w_p_m: float
    """PMOS pass-transistor width [m]."""
    l_m: float
    """Pass-transistor length [m]."""
    sigma_rel: float = 0.0
    """Relative standard deviation of the pass-transistor β across instances (dimensionless)."""

    def __post_init__(self):
        _positive(self, "w_n_m", "w_p_m", "l_m")
        _nonneg(self, "sigma_rel")


@dataclass(frozen=True, kw_only=True)
class TransconductanceCoupler:
    """A unilateral transconductance (OTA) coupler: source ring -> receiving ring, one way.

    It injects the current i = sign · g_m · (V_src − V_DD/2) into the receiving ring's node (out of the node
    when negative) and draws no current from the source node (ideal high-impedance input). ``sign = -1`` is
    the differential swap of the transconductor's output pair: the same circuit with its outputs crossed, so
    a negative weight is a physical circuit, not a sign flip of H.
    """

    gm_s: float
    """Transconductance g_m [S] (> 0; the magnitude of the coupling)."""
    sign: int = 1
    """+1 (non-inverting) or -1 (outputs swapped)."""
    sigma_rel: float = 0.0
    """Relative standard deviation of g_m across instances (dimensionless)."""

    def __post_init__(self):
        _positive(self, "gm_s")
        if self.sign not in (1, -1) or isinstance(self.sign, bool):
            raise ValueError(f"TransconductanceCoupler.sign must be +1 or -1, got {self.sign!r}")
        _nonneg(self, "sigma_rel")

    @property
    def unilateral(self) -> bool:
        return True


@dataclass(frozen=True, kw_only=True)
class STNOParams:
    """Spin-torque nano-oscillator, universal auto-oscillator model (Slavin & Tiberkevich 2009).

    dc/dt = −i ω(p) c − Γ₊(p) c + Γ₋(p) c + f(t), p = |c|², ω(p) = ω₀ + N p, Γ₊ = Γ_G (1 + Q p),
    Γ₋ = σ I (1 − p); thermal noise ⟨f(t) f*(t')⟩ = 2 D_n δ(t − t'), D_n = Γ₊(p₀) k_B T / E₀ where E₀ p is
    the oscillation energy.
    """

    f0_hz: float
    """Small-amplitude (FMR / gyrotropic) frequency ω₀/2π [Hz]."""
    n_shift_hz: float
    """Nonlinear frequency shift N/2π [Hz] (ω = ω₀ + N p)."""
    gamma_g_per_s: float
    """Linear (Gilbert) damping rate Γ_G [1/s]."""
    q_nonlinear_damping: float = 0.0
    """Nonlinear damping coefficient Q (dimensionless)."""
    supercriticality: float
    """ζ = σI/Γ_G = I/I_th (dimensionless, > 1 for auto-oscillation)."""
    energy_scale_j: float
    """E₀: oscillation energy at p = 1 [J] (E(p) = E₀ p)."""
    temperature_k: float = T_ROOM_K
    """Temperature [K]."""
    current_a: float
    """Bias current I [A] (sets I_th = I/ζ)."""
    resistance_ohm: float
    """Device resistance R [Ω] (Joule power I² R)."""
    sigma_f0_rel: float = 0.0
    """Relative spread of ω₀ across instances (dimensionless)."""
    sigma_n_rel: float = 0.0
    """Relative spread of N across instances (dimensionless)."""
    sigma_gamma_rel: float = 0.0
    """Relative spread of Γ_G across instances (dimensionless)."""

    def __post_init__(self):
        _positive(self, "f0_hz", "gamma_g_per_s", "energy_scale_j", "temperature_k", "current_a", "resistance_ohm")
        _nonneg(self, "q_nonlinear_damping", "sigma_f0_rel", "sigma_n_rel", "sigma_gamma_rel")
        if not math.isfinite(self.n_shift_hz):
            raise ValueError(f"STNOParams.n_shift_hz must be finite, got {self.n_shift_hz!r}")
        if not (math.isfinite(self.supercriticality) and self.supercriticality > 1):
            raise ValueError(
                f"STNOParams.supercriticality (I/I_th) must be > 1 for auto-oscillation, got {self.supercriticality!r}"
            )

    def replace(self, **changes) -> "STNOParams":
        valid = {f.name for f in fields(self)}
        bad = sorted(set(changes) - valid)
        if bad:
            raise ValueError(f"unknown STNOParams field(s) {bad}; valid: {sorted(valid)}")
        return replace(self, **changes)


@dataclass(frozen=True, kw_only=True)
class IdealOscillatorParams:
    """Ideal (Kuramoto) phase oscillator: dθ = [ω + coupling] dt + √D dW, with ω spread across instances."""

    f0_hz: float
    """Nominal frequency [Hz]."""
    diffusion_rad2_per_s: float = 0.0
    """Phase diffusion D [rad²/s] (Var θ(t) = D t; FWHM linewidth D/2π Hz)."""
    sigma_f_rel: float = 0.0
    """Relative standard deviation of the frequency across instances (dimensionless)."""
    power_w: float = 0.0
    """Power while running [W] (assumed; 0 = not modelled)."""
    harmonics: tuple = ((1.0, 0.0),)
    """Coupling function H(x) = Σ a_m sin(mx) + b_m cos(mx), ((a_1, b_1), ...)."""

    def __post_init__(self):
        _positive(self, "f0_hz")
        _nonneg(self, "diffusion_rad2_per_s", "sigma_f_rel", "power_w")
        try:
            h = tuple(tuple(float(x) for x in row) for row in self.harmonics)
        except TypeError as exc:
            raise ValueError("IdealOscillatorParams.harmonics must be ((a_1, b_1), (a_2, b_2), ...)") from exc
        if not h or any(len(r) != 2 for r in h):
            raise ValueError("IdealOscillatorParams.harmonics must be a non-empty sequence of (a_m, b_m) pairs")
        object.__setattr__(self, "harmonics", h)
