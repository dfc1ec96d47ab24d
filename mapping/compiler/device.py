"""Device choice: the :mod:`hw_models` object behind a chip's ``device`` name.

``mapping`` holds no device numbers: :func:`chip_device` returns a :class:`ChipDevice`, a thin record of
the chip's device name (the config's ``device``), the :class:`hw_models.devices.Oscillator` object and
the couplers that physically realise the chip's coupling matrix. Every figure (f₀, D, power, spreads,
coupling harmonics) is a call on those objects. How a layer on that device is simulated is the backend's
business (:mod:`mapping.backends`).

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

__all__ = ["DEVICE_PRESETS", "ChipDevice", "chip_device", "chip_device_from_dict", "normalised_harmonics"]

DEVICE_PRESETS = {
    "ideal": ("ideal", "default"),
    "ring-macromodel": ("ring", "cmos_65nm"),
    "ring-circuit": ("ring", "cmos_65nm"),
    "spin-torque": ("stno", "vortex"),
}
"""Chip ``device`` name -> (hw_models oscillator kind, preset)."""
PORTED_TO_NODE = {"ideal": False, "ring-macromodel": True, "ring-circuit": True, "spin-torque": False}
"""Chip ``device`` name -> whether its circuit is re-derived at the chip's node (a CMOS model card exists)."""

_NEGLIGIBLE = 1e-3  # harmonics below 1e-3 of a_1 are dropped from the chip's H (the engine's cost grows with M)


@dataclass(frozen=True, eq=False)
class ChipDevice:
    """The chip's device: its name, oscillator object, and the coupler for each matrix kind.

    Attributes
    ----------
    name : str
        The config's ``device`` ('ideal', 'ring-macromodel', 'ring-circuit', 'spin-torque'); written as
        ``level`` in the chip file (format ``oscsim-chip/3``).
    oscillator : hw_models.devices.Oscillator
    """

    name: str
    oscillator: object

    # ---- names the rest of mapping reads (all delegated)
    @property
    def is_ring(self) -> bool:
        """A CMOS ring oscillator (its nodes give phase taps; circuit-level rungs exist for it)."""
        from hw_models import RingOscillator

        return isinstance(self.oscillator, RingOscillator)

    @property
    def is_stno(self) -> bool:
        """A spin-torque oscillator (it has an amplitude degree of freedom, :mod:`mapping.backends.stno`)."""
        from hw_models import SpinTorqueOscillator

        return isinstance(self.oscillator, SpinTorqueOscillator)

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

    def coupler(self, one_way: bool, sign: int = 1):
        """The coupler that physically realises the chip's coupling matrix: ``one_way`` (Kuramoto attention:
        causal and signed) or bidirectional (SSA: symmetric pairs)."""
        if not isinstance(one_way, bool):
            raise ValueError(f"one_way must be True (causal, signed matrix) or False (symmetric), got {one_way!r}")
        c = self.oscillator.coupler(one_way=one_way, sign=sign)
        if hasattr(c, "require"):
            c.require(sign=sign, one_way=one_way,
                      argument=f"coupler for a {'one-way' if one_way else 'symmetric'} coupling matrix")
        return c

    def coupler_spread_rel(self, one_way: bool) -> float:
        """Relative spread of the coupler strengths (the coupler's ``sigma_rel``; 0 for abstract couplers)."""
        return float(getattr(self.coupler(one_way), "sigma_rel", 0.0))

    def coupling_function(self, one_way: bool, sign: int = 1, source_node: int = 0):
        """H(Δ) [rad/s] of one coupler of the chip's matrix (receiver node 0; source tapped at ``source_node``)."""
        osc, cp = self.oscillator, self.coupler(one_way, sign)
        if self.is_ring:
            return osc.coupling_function(cp, source_node=source_node)
        if source_node:
            raise ValueError("source_node: only ring devices have node taps")
        if self.is_stno:
            return osc.coupling_function(float(cp), beta_rad=_stno_beta(osc) + (math.pi if sign < 0 else 0.0))
        return osc.coupling_function(float(cp))

    def harmonics(self, one_way: bool = True) -> np.ndarray:
        """(M, 2) harmonics of H normalised to a₁ = 1 (κ sets the scale), negligible ones dropped."""
        return normalised_harmonics(self.coupling_function(one_way).harmonics)

    @property
    def sources(self) -> dict:
        return dict(self.oscillator.sources)

    def to_dict(self) -> dict:
        return {"level": self.name, "oscillator": self.oscillator.to_dict()}


def normalised_harmonics(h) -> np.ndarray:
    """(M, 2) harmonics divided by a₁, those below 1e-3 of a₁ dropped (the engine's cost grows with M)."""
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


@functools.lru_cache(maxsize=32)
def _device(level: str, f0_hz: float | None, node_nm: float, flavor: str):
    import hw_models as hw
    from hw_models.technology import REFERENCE_NODE, chip_node

    kind, preset = DEVICE_PRESETS[level]
    if PORTED_TO_NODE[level] and float(node_nm) != REFERENCE_NODE.node_nm:  # the card ported to the node
        osc = chip_node(node_nm, flavor).ring()
    else:
        osc = hw.make_device(kind, preset)
    if f0_hz is not None and float(f0_hz) != osc.frequency():
        osc = osc.with_frequency(float(f0_hz))
    return ChipDevice(name=level, oscillator=osc)


def chip_device(name: str, *, f0_hz: float | None = None, node_nm: float = 65.0, flavor: str = "LP") -> ChipDevice:
    """The :class:`ChipDevice` for a chip's ``device`` name.

    Parameters
    ----------
    name : {'ideal', 'ring-macromodel', 'ring-circuit', 'spin-torque'}
    f0_hz : float, optional
        Nominal frequency [Hz]: the device is rescaled by a physical parameter (ring: load C, so D ∝ f₀²,
        H ∝ f₀, power unchanged; STNO: ω₀; ideal: f₀) with every number recomputed, or refused (ValueError
        naming ``f0_hz``) when that leaves the device's valid range.
    node_nm, flavor : float, str
        Technology node and flavour: ring devices away from the model card's 65 nm are the card's circuit
        ported to the node (:meth:`hw_models.technology.TechnologyNode.ring`, which states its rule), so f₀, power,
        phase diffusion, PPV and mismatch are re-derived by the circuit model; the ideal and spin-torque devices
        have no CMOS node (their periphery scales, :mod:`mapping.energy`).
    """
    if name not in DEVICE_PRESETS:
        raise ValueError(f"unknown device {name!r}; valid: {', '.join(DEVICE_PRESETS)}")
    try:
        return _device(name, None if f0_hz is None else float(f0_hz), float(node_nm), str(flavor))
    except ValueError as exc:
        if f0_hz is None:
            raise
        raise ValueError(f"f0_hz: {exc}") from None


def chip_device_from_dict(d: dict, where: str = "device") -> ChipDevice:
    """Inverse of :meth:`ChipDevice.to_dict` (the oscillator's params validated against physical ranges)."""
    import hw_models as hw

    if not isinstance(d, dict) or set(d) != {"level", "oscillator"}:
        raise ValueError(f"{where} must be an object with keys 'level' and 'oscillator'")
    if d["level"] not in DEVICE_PRESETS:
        raise ValueError(f"{where}.level must be one of {', '.join(DEVICE_PRESETS)}, got {d['level']!r}")
    osc = hw.device_from_dict(d["oscillator"], f"{where}.oscillator")
    if osc.kind != DEVICE_PRESETS[d["level"]][0]:
        raise ValueError(f"{where}: level {d['level']!r} needs a {DEVICE_PRESETS[d['level']][0]} oscillator, got "
                         f"{osc.kind!r}")
    return ChipDevice(name=d["level"], oscillator=osc)
