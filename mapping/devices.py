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

__all__ = ["LEVELS", "ChipDevice", "chip_device", "chip_device_from_dict"]

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
