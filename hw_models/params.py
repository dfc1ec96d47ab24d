"""Frozen, validated parameter dataclasses for every device kind.

All quantities are SI (seconds, volts, amperes, farads, metres, ohms, watts, joules); the unit is in the field
name or its docstring. Presets live in :mod:`hw_models.presets` and cite the source of each number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace

from hw_models.constants import T_ROOM_K

__all__ = [
    "check_ranges",
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


def check_ranges(obj, ranges: dict, where: str | None = None):
    """Refuse field values outside ``ranges`` {field: (lo, hi, unit)} with a message naming the field.

    Used when params come from a file (chip JSON, TOML): a number that passes the type checks but is
    outside any physical device (``harmonics`` of 1e6, a 1 F load) is a corrupt or mistyped file.
    """
    where = where or type(obj).__name__
    for name, (lo, hi, unit) in ranges.items():
        v = getattr(obj, name)
        vals = [x for row in v for x in row] if name == "harmonics" else [v]
        for x in vals:
            if not (isinstance(x, (int, float)) and math.isfinite(x) and lo <= x <= hi):
                raise ValueError(f"{where}.{name} = {v!r} is outside the physical range [{lo:g}, {hi:g}] {unit}")


def _nonneg(obj, *names):
    for n in names:
        v = getattr(obj, n)
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
            raise ValueError(f"{type(obj).__name__}.{n} must be a finite number >= 0, got {v!r}")


def _require(coupler, sign, one_way, argument):
    if not coupler.can_realise(sign, one_way):
        what = []
        if sign < 0:
            what.append("a negative coupling")
        if one_way:
            what.append("a one-way (causal) coupling")
        raise ValueError(
            f"{argument}: a {type(coupler).__name__} cannot realise {' and '.join(what)} (it is a "
            f"{'bidirectional, positive' if coupler.bidirectional else 'unilateral'} element); use a "
            f"TransconductanceCoupler (unilateral, sign by a differential swap) for a causal, signed matrix")


def _vdd(device):
    p = getattr(device, "params", device)
    return float(p.vdd_v)


def _coupler_power(coupler, device, delta_rad):
    # the device object computes it from its limit cycle (params hold no behaviour that needs the circuit)
    if not hasattr(device, "coupler_power"):
        raise ValueError(f"device must be a RingOscillator (hw_models.devices), got {type(device).__name__}")
    return device.coupler_power(coupler, delta_rad)


class _DeviceParams:
    """What every oscillator params dataclass offers: a ``RANGES`` table {field: (lo, hi, unit)} checked by
    `check_ranges`, and `replace` that refuses unknown fields (and validates the copy again)."""

    RANGES: dict = {}

    def check_ranges(self, where: str | None = None):
        """Refuse fields outside ``RANGES`` (params read from files); returns self."""
        check_ranges(self, self.RANGES, where)
        return self

    def replace(self, **changes):
        """A copy with some fields changed (validated again)."""
        valid = {f.name for f in fields(self)}
        bad = sorted(set(changes) - valid)
        if bad:
            raise ValueError(f"unknown {type(self).__name__} field(s) {bad}; valid: {sorted(valid)}")
        return replace(self, **changes)


@dataclass(frozen=True, kw_only=True)
class RingOscillatorParams(_DeviceParams):
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

    RANGES = {
        # assumed envelopes of any planar CMOS process from 22 nm to 1 um (not a fit: they catch corrupt files)
        "n_stages": (3, 1001, "stages"), "vdd_v": (0.2, 5.0, "V"), "c_load_f": (1e-18, 1e-9, "F"),
        "vto_n_v": (0.0, 2.0, "V"), "vto_p_v": (-2.0, 0.0, "V"), "kp_n_a_per_v2": (1e-7, 1e-2, "A/V^2"),
        "kp_p_a_per_v2": (1e-7, 1e-2, "A/V^2"), "lambda_n_per_v": (0.0, 2.0, "1/V"),
        "lambda_p_per_v": (0.0, 2.0, "1/V"), "w_n_m": (1e-9, 1e-3, "m"), "l_n_m": (1e-9, 1e-4, "m"),
        "w_p_m": (1e-9, 1e-3, "m"), "l_p_m": (1e-9, 1e-4, "m"), "temperature_k": (1.0, 1000.0, "K"),
        "noise_gamma": (0.0, 5.0, "(dimensionless)"), "a_vt_n_v_m": (0.0, 1e-7, "V m"),
        "a_vt_p_v_m": (0.0, 1e-7, "V m"), "sigma_c_rel": (0.0, 0.5, "(relative)"),
    }
    """Physical envelope of every field (assumed), checked by :meth:`check_ranges` on params read from files."""



class _TwoTerminalCoupler:
    """Behaviour shared by couplers joining two nodes (resistor, transmission gate): current flows both ways,
    so the receiver loads the source and only a positive, symmetric coupling is realised (SSA pairs)."""

    bidirectional = True
    unilateral = False

    def can_realise(self, sign: int = 1, one_way: bool = False) -> bool:
        """Only a positive, symmetric coupling."""
        return sign > 0 and not one_way

    def require(self, sign: int = 1, one_way: bool = False, argument: str = "coupler"):
        _require(self, sign, one_way, argument)
        return self

    def power(self, device, delta_rad: float = math.pi / 2) -> float:
        """Static dissipation [W] between two copies of ``device`` (a ring) at phase difference Δ."""
        return _coupler_power(self, device, delta_rad)


@dataclass(frozen=True, kw_only=True)
class ResistiveCoupler(_TwoTerminalCoupler):
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

    kind = "resistive"


@dataclass(frozen=True, kw_only=True)
class TransmissionGateCoupler(_TwoTerminalCoupler):
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

    kind = "transmission-gate"


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
    g_out_s: float = 0.0
    """Output conductance to V_DD/2 [S] (finite output resistance of the OTA; loads the receiving node
    whatever the sign, so it enters the coupling offset and does not flip with ``sign``)."""
    gm_over_id_per_v: float = 10.0
    """g_m/I_D of the input pair [1/V] (assumed: moderate inversion; sets the bias current for :meth:`power`)."""

    def __post_init__(self):
        _positive(self, "gm_s", "gm_over_id_per_v")
        if self.sign not in (1, -1) or isinstance(self.sign, bool):
            raise ValueError(f"TransconductanceCoupler.sign must be +1 or -1, got {self.sign!r}")
        _nonneg(self, "sigma_rel", "g_out_s")

    bidirectional = False
    unilateral = True
    """The source node drives a gate (no current drawn): the coupling is one way, source -> receiver."""
    kind = "transconductance"

    def can_realise(self, sign: int = 1, one_way: bool = True) -> bool:
        """Either sign (the differential swap) and either direction (a one-way element; two make a pair)."""
        return sign in (1, -1)

    def require(self, sign: int = 1, one_way: bool = True, argument: str = "coupler"):
        _require(self, sign, one_way, argument)
        return self

    def swapped(self) -> "TransconductanceCoupler":
        """The same transconductor with its output pair crossed (sign −1 ↔ +1)."""
        return replace(self, sign=-self.sign)

    def with_gm(self, gm_s: float) -> "TransconductanceCoupler":
        return replace(self, gm_s=float(gm_s))

    def power(self, device=None, delta_rad: float = 0.0) -> float:
        """Static bias power [W]: tail current 2 g_m/(g_m/I_D) from V_DD (a differential pair, each side at I_D).

        ``device``: the ring (for V_DD); None uses 1.2 V (assumed)."""
        vdd = 1.2 if device is None else _vdd(device)
        return 2.0 * self.gm_s / self.gm_over_id_per_v * vdd


@dataclass(frozen=True, kw_only=True)
class STNOParams(_DeviceParams):
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

    RANGES = {
        "f0_hz": (1e6, 1e11, "Hz"), "n_shift_hz": (-1e11, 1e11, "Hz"), "gamma_g_per_s": (1.0, 1e12, "1/s"),
        "q_nonlinear_damping": (0.0, 100.0, ""), "supercriticality": (1.0, 100.0, ""),
        "energy_scale_j": (1e-24, 1e-9, "J"), "temperature_k": (1.0, 1000.0, "K"), "current_a": (1e-9, 1.0, "A"),
        "resistance_ohm": (1e-3, 1e7, "ohm"), "sigma_f0_rel": (0.0, 0.5, ""), "sigma_n_rel": (0.0, 0.5, ""),
        "sigma_gamma_rel": (0.0, 0.5, ""),
    }
    """Physical envelope of every field (assumed), checked on params read from files."""



@dataclass(frozen=True, kw_only=True)
class IdealOscillatorParams(_DeviceParams):
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

    RANGES = {
        "f0_hz": (1.0, 1e12, "Hz"), "diffusion_rad2_per_s": (0.0, 1e12, "rad^2/s"),
        "sigma_f_rel": (0.0, 0.5, "(relative)"), "power_w": (0.0, 1.0, "W"),
        # in units of the coupling strength: a coupling function is normalised to O(1) (assumed envelope)
        "harmonics": (-10.0, 10.0, "(units of the coupling strength)"),
    }
    """Physical envelope of every field (assumed), checked on params read from files."""

