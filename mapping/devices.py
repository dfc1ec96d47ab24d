"""The device a chip is built from: the :mod:`hw_models` object for a chip's ``device`` name.

``mapping`` holds no device numbers: :func:`chip_device` returns a :class:`ChipDevice`, a thin record of
the simulation level (the config's ``device`` string), the :class:`hw_models.devices.Oscillator` object and
the couplers that physically realise the chip's coupling matrix. Every figure (f₀, D, power, spreads,
coupling harmonics) is a call on those objects.

==================  ========================  =================================================
``device``          hw_models object          couplers (Kuramoto: causal, signed / SSA: symmetric)
==================  ========================  =================================================
``ideal``           IdealOscillator default   ideal unit strength (any sign, any direction)
``ring-macromodel`` RingOscillator cmos_65nm  TransconductanceCoupler (+, swapped −) / ResistiveCoupler
``ring-circuit``    RingOscillator cmos_65nm  same (the circuit-level simulation is a separate module)
``spin-torque``     SpinTorqueOscillator      coupling rate Ω (β programmable) / same
==================  ========================  =================================================
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

__all__ = ["LEVELS", "ChipDevice", "chip_device", "chip_device_from_dict", "coupling_rule"]

LEVELS = {
    "ideal": ("ideal", "default"),
    "ring-macromodel": ("ring", "cmos_65nm"),
    "ring-circuit": ("ring", "cmos_65nm"),
    "spin-torque": ("stno", "vortex"),
}
"""Chip ``device`` name -> (hw_models kind, preset)."""

_NEGLIGIBLE = 1e-3  # harmonics below 1e-3 of a_1 are dropped from the chip's H (the engine's cost grows with M)


@dataclass(frozen=True, eq=False)
class ChipDevice:
    """The chip's device: level name, oscillator object, and the coupler for each matrix kind.

    Attributes
    ----------
    level : str
        The config's ``device`` ('ideal', 'ring-macromodel', 'ring-circuit', 'spin-torque').
    oscillator : hw_models.devices.Oscillator
    """

    level: str
    oscillator: object

    # ---- names the rest of mapping reads (all delegated)
    @property
    def name(self) -> str:
        return self.level

    @property
    def is_ring(self) -> bool:
        return self.oscillator.kind == "ring"

    @property
    def f0_hz(self) -> float:
        """Nominal frequency [Hz] (``oscillator.frequency()``)."""
        return float(self.oscillator.frequency())

    @property
    def power_w(self) -> float:
        """Power of one running oscillator [W] (``oscillator.power()``)."""
        return float(self.oscillator.power())

    @property
    def freq_spread_rel(self) -> float:
        """σ(f)/f₀ of the mismatch (``oscillator.frequency_spread_rel()``)."""
        return float(self.oscillator.frequency_spread_rel())

    def diffusion_at(self, temperature_k: float) -> float:
        """D [rad²/s] at a temperature (``oscillator.diffusion(T)``)."""
        return float(self.oscillator.diffusion(float(temperature_k)))

    def coupler(self, matrix: str, sign: int = 1):
        """The coupler that physically realises a ``matrix`` coupling: 'kuramoto' (causal, signed: one way)
        or 'ssa' (symmetric pairs: bidirectional)."""
        if matrix not in ("kuramoto", "ssa"):
            raise ValueError(f"matrix must be 'kuramoto' or 'ssa', got {matrix!r}")
        one_way = matrix == "kuramoto"
        c = self.oscillator.coupler(one_way=one_way, sign=sign)
        if hasattr(c, "require"):
            c.require(sign=sign, one_way=one_way, argument=f"coupler for a {matrix} chip")
        return c

    def coupler_spread_rel(self, matrix: str) -> float:
        """Relative spread of the coupler strengths (the coupler's ``sigma_rel``; 0 for abstract couplers)."""
        return float(getattr(self.coupler(matrix), "sigma_rel", 0.0))

    def coupling_function(self, matrix: str, sign: int = 1, source_node: int = 0):
        """H(Δ) [rad/s] of one coupler of the chip's kind (receiver node 0; source tapped at ``source_node``)."""
        osc, cp = self.oscillator, self.coupler(matrix, sign)
        if osc.kind == "ring":
            return osc.coupling_function(cp, source_node=source_node)
        if source_node:
            raise ValueError("source_node: only ring devices have node taps")
        if osc.kind == "stno":
            return osc.coupling_function(float(cp), beta_rad=_stno_beta(osc) + (math.pi if sign < 0 else 0.0))
        return osc.coupling_function(float(cp))

    def harmonics(self, matrix: str) -> np.ndarray:
        """(M, 2) harmonics of H normalised to a₁ = 1 (κ sets the scale), negligible ones dropped."""
        return _normalise(self.coupling_function(matrix).harmonics)

    def harmonics_array(self) -> np.ndarray:
        """Back-compatible name: the Kuramoto (one-way coupler) harmonics, a₁ = 1."""
        return self.harmonics("kuramoto")

    @property
    def sources(self) -> dict:
        return dict(self.oscillator.sources)

    def to_dict(self) -> dict:
        return {"level": self.level, "oscillator": self.oscillator.to_dict()}


def _normalise(h) -> np.ndarray:
    h = np.asarray(h, dtype=float)
    if h.ndim != 2 or h.shape[1] != 2 or not np.all(np.isfinite(h)) or h[0, 0] <= 0:
        raise ValueError(f"the device's coupling function has no positive first sine harmonic: {h[:2].tolist()}")
    h = h / h[0, 0]
    keep = np.any(np.abs(h) > _NEGLIGIBLE, axis=1) | (np.arange(len(h)) == 0)
    return h[keep]


def _stno_beta(osc) -> float:
    """The coupling phase β the compiler programs so that H's first harmonic is a pure sine (H₁ = R sin(Δ + ψ)
    -> β = ψ in hw_models' convention)."""
    h1 = np.asarray(osc.coupling_function(1.0, beta_rad=0.0).harmonics, dtype=float)[0]
    return math.atan2(h1[1], h1[0])


@functools.lru_cache(maxsize=16)
def _device(level: str, f0_hz: float | None):
    import hw_models as hw

    kind, preset = LEVELS[level]
    osc = hw.make_device(kind, preset)
    if f0_hz is not None and float(f0_hz) != osc.frequency():
        osc = osc.with_frequency(float(f0_hz))
    return ChipDevice(level=level, oscillator=osc)


def chip_device(name: str, *, f0_hz: float | None = None) -> ChipDevice:
    """The :class:`ChipDevice` for a chip's ``device`` name.

    Parameters
    ----------
    name : {'ideal', 'ring-macromodel', 'ring-circuit', 'spin-torque'}
    f0_hz : float, optional
        Nominal frequency [Hz]: the device is rescaled by a physical parameter (ring: load C, so D ∝ f₀²,
        H ∝ f₀, power unchanged; STNO: ω₀; ideal: f₀) with every number recomputed, or refused (ValueError
        naming ``f0_hz``) when that leaves the device's valid range.
    """
    if name not in LEVELS:
        raise ValueError(f"unknown device {name!r}; valid: {', '.join(LEVELS)}")
    try:
        return _device(name, None if f0_hz is None else float(f0_hz))
    except ValueError as exc:
        if f0_hz is None:
            raise
        raise ValueError(f"f0_hz: {exc}") from None


def chip_device_from_dict(d: dict, where: str = "device") -> ChipDevice:
    """Inverse of :meth:`ChipDevice.to_dict` (the oscillator's params validated against physical ranges)."""
    import hw_models as hw

    if not isinstance(d, dict) or set(d) != {"level", "oscillator"}:
        raise ValueError(f"{where} must be an object with keys 'level' and 'oscillator'")
    if d["level"] not in LEVELS:
        raise ValueError(f"{where}.level must be one of {', '.join(LEVELS)}, got {d['level']!r}")
    osc = hw.device_from_dict(d["oscillator"], f"{where}.oscillator")
    if osc.kind != LEVELS[d["level"]][0]:
        raise ValueError(f"{where}: level {d['level']!r} needs a {LEVELS[d['level']][0]} oscillator, got {osc.kind!r}")
    return ChipDevice(level=d["level"], oscillator=osc)


def coupling_rule(config, device, kind: str = "kuramoto") -> dict:
    """The coupler the chip uses for its matrix and the effective coupling function it programs.

    ``kind`` 'kuramoto' (causal, signed C: the device's one-way coupler, e.g. a ring's transconductor, a
    negative receive gain being its output-swapped circuit) or 'ssa' (symmetric pairs: the bidirectional
    coupler, e.g. a resistor). H of one coupler comes from the device object (ring: receiver PPV × the
    coupler's current waveform); harmonics are normalised to a₁ = 1 (κ sets the scale) and the loading offset
    is reported per coupler in units of a₁ (a constant frequency shift, cancelled by the trim bias).

    ``two-tap`` (ring devices): each coupling senses the source ring at node 0 (weight w₁) and at node k
    (w₂ ≥ 0), H_eff = w₁ H_0 + w₂ H_k with H_k computed for that tap from the circuit; the node k and w₂/w₁
    are chosen so that the first harmonic of H_eff is a pure sine (its cos term cancelled) with the largest
    a₁ per unit of coupler weight. Doubles the couplers.

    Raises
    ------
    ValueError
        The device's coupler cannot realise the matrix (one-way or negative), or a negative coupling whose
        circuit does not give −H (the chip's phase network takes one H shape per matrix).
    """
    matrix = "kuramoto" if kind == "kuramoto" else "ssa"
    cp = device.coupler(matrix)
    cf = device.coupling_function(matrix)
    h_raw = np.asarray(cf.harmonics, dtype=float)
    a1 = float(h_raw[0, 0])
    if not a1 > 0:
        raise ValueError(f"device {device.name!r}: the {matrix} coupler's H has no positive first sine harmonic")
    mode = config.coupling.phase_correction
    if mode == "auto":
        mode = "two-tap" if device.is_ring else "none"
    rule = {"matrix": matrix, "coupler": _describe_coupler(cp), "phase_correction": mode, "taps": 1,
            "tap_node": 0, "tap_phase_rad": 0.0, "weights": [1.0],
            "a1_rad_s_per_coupler": a1, "offset_per_coupler": float(cf.offset_rad_s) / a1,
            "harmonics": [list(map(float, r)) for r in _normalised(h_raw)]}
    if matrix == "kuramoto":
        cn = device.coupling_function(matrix, sign=-1)
        hn = np.asarray(cn.harmonics, dtype=float)
        if not np.allclose(hn, -h_raw, rtol=1e-6, atol=1e-9 * abs(a1)):
            raise ValueError(f"device {device.name!r}: the negative-gain coupler's H is not -H of the positive one; "
                             f"the chip's phase network takes one H shape per matrix")
        rule["negative_gain"] = "swapped coupler circuit; its H computed from the circuit equals -H in every harmonic"
        rule["offset_negative_per_coupler"] = float(cn.offset_rad_s) / a1
    if mode == "none":
        return rule
    if not device.is_ring:
        raise ValueError(f"coupling.phase_correction = 'two-tap' needs a ring device (its nodes provide the phase "
                         f"taps); the device is {device.name!r}")
    n = int(device.oscillator.params.n_stages)
    c0 = h_raw[:, 0] + 1j * h_raw[:, 1]
    if abs(c0[0].imag) < 1e-12 * abs(c0[0]):
        return rule
    best = None
    for k in range(1, n):
        hk = np.asarray(device.coupling_function(matrix, source_node=k).harmonics, dtype=float)
        ck = hk[:, 0] + 1j * hk[:, 1]
        if ck[0].imag == 0 or np.sign(ck[0].imag) == np.sign(c0[0].imag):
            continue
        r = -c0[0].imag / ck[0].imag
        eff = (c0[0].real + r * ck[0].real) / (1.0 + r)  # a_1 per unit of total coupler weight
        if eff > 0 and (best is None or eff > best[0]):
            best = (eff, k, r, ck)
    if best is None:
        raise ValueError("no ring tap can cancel the cos term of the coupling function's first harmonic")
    _, k, r, ck = best
    w = np.array([1.0, r]) / (1.0 + r)
    ce = w[0] * c0 + w[1] * ck
    he = np.stack([ce.real, ce.imag], axis=1)
    a1e = float(he[0, 0])
    he = he / a1e
    he[0, 1] = 0.0  # exact by construction (rounding)
    off_k = float(device.coupling_function(matrix, source_node=k).offset_rad_s)
    rule.update(taps=2, tap_node=int(k), tap_phase_rad=float(np.angle(ck[0] / c0[0])),
                weights=[float(x) for x in w], a1_rad_s_per_coupler=a1e,
                offset_per_coupler=(w[0] * float(cf.offset_rad_s) + w[1] * off_k) / a1e,
                harmonics=[list(map(float, r_)) for r_ in _normalised(he)])
    if matrix == "kuramoto":
        off_nk = float(device.coupling_function(matrix, sign=-1, source_node=k).offset_rad_s)
        rule["offset_negative_per_coupler"] = (w[0] * float(cn.offset_rad_s) + w[1] * off_nk) / a1e
    return rule


def _normalised(h):
    return _normalise(h)


def _describe_coupler(cp) -> dict:
    if isinstance(cp, float):
        return {"kind": "abstract", "strength": cp}
    from hw_models.couplers import coupler_to_dict

    return coupler_to_dict(cp)
