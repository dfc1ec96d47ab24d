"""Device choice: the :mod:`hw_models` object behind a chip's ``device`` name.

``mapping`` holds no device numbers and asks no device kind: :func:`chip_device` builds the device registered
under the chip's ``device`` name (:func:`hw_models.devices.device_spec`: ``ideal``, ``ring-macromodel``,
``ring-circuit``, ``spin-torque`` or a plug-in's), draws it at the chip's device node
(:meth:`hw_models.devices.Oscillator.at_node`) and f₀, and returns a :class:`ChipDevice`: a thin record of
the name and the :class:`hw_models.devices.Oscillator` object. Every figure (f₀, D, power, spreads, coupling
harmonics, areas, drift, which fields act) is a call on that object; how a layer on it is simulated is the
backends' business (:mod:`mapping.backends`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

__all__ = ["ChipDevice", "chip_device", "chip_device_from_dict", "normalised_harmonics"]

_NEGLIGIBLE = 1e-3  # harmonics below 1e-3 of a_1 are dropped from the chip's H (the engine's cost grows with M)


@dataclass(frozen=True, eq=False)
class ChipDevice:
    """The chip's device: its name, oscillator object, and the coupler for each matrix kind.

    Attributes
    ----------
    name : str
        The config's ``device`` (a registered chip device name); written as ``level`` in the chip file (format
        ``oscsim-chip/3``).
    oscillator : hw_models.devices.Oscillator
    """

    name: str
    oscillator: object

    # ---- names the rest of mapping reads (all delegated)
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
        """H(Δ) [rad/s] of one coupler of the chip's matrix (receiver node 0; source tapped at ``source_node``), as
        the compiler programs it (:meth:`hw_models.devices.Oscillator.matrix_coupling_function`)."""
        return self.oscillator.matrix_coupling_function(self.coupler(one_way, sign), sign=sign,
                                                        source_node=source_node)

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


@functools.lru_cache(maxsize=32)
def _device(level: str, f0_hz: float | None, node_nm: float, flavor: str):
    from hw_models.devices import device_spec
    from hw_models.technology import chip_node

    osc = device_spec(level).build().at_node(chip_node(node_nm, flavor))
    if f0_hz is not None and float(f0_hz) != osc.frequency():
        osc = osc.with_frequency(float(f0_hz))
    return ChipDevice(name=level, oscillator=osc)


def chip_device(name: str, *, f0_hz: float | None = None, node_nm: float = 65.0, flavor: str = "LP") -> ChipDevice:
    """The :class:`ChipDevice` for a chip's ``device`` name.

    Parameters
    ----------
    name : str
        A registered chip device (:func:`hw_models.devices.device_names`: 'ideal', 'ring-macromodel',
        'ring-circuit', 'spin-torque', or a plug-in's).
    f0_hz : float, optional
        Nominal frequency [Hz]: the device is rescaled by a physical parameter (ring: load C, so D ∝ f₀²,
        H ∝ f₀, power unchanged; STNO: ω₀; ideal: f₀) with every number recomputed, or refused (ValueError
        naming ``f0_hz``) when that leaves the device's valid range.
    node_nm, flavor : float, str
        The CMOS node and flavour the device is drawn at (:meth:`hw_models.devices.Oscillator.at_node`): a ring
        away from its model card's 65 nm is the card's circuit ported to the node
        (:meth:`hw_models.devices.RingOscillator.at_node`, whose source states the rule), so f₀, power, phase
        diffusion, PPV and mismatch are re-derived by the circuit model; a device without a CMOS model card
        (ideal, spin-torque) is the same at every node (its periphery scales, :mod:`mapping.energy`).
    """
    from hw_models.devices import device_spec

    device_spec(name)  # unknown names refused with the registered ones
    try:
        return _device(name, None if f0_hz is None else float(f0_hz), float(node_nm), str(flavor))
    except ValueError as exc:
        if f0_hz is None:
            raise
        raise ValueError(f"f0_hz: {exc}") from None


def chip_device_from_dict(d: dict, where: str = "device") -> ChipDevice:
    """Inverse of :meth:`ChipDevice.to_dict` (the oscillator's params validated against physical ranges)."""
    import hw_models as hw
    from hw_models.devices import device_names, device_spec

    if not isinstance(d, dict) or set(d) != {"level", "oscillator"}:
        raise ValueError(f"{where} must be an object with keys 'level' and 'oscillator'")
    if d["level"] not in device_names():
        raise ValueError(f"{where}.level must be one of {', '.join(device_names())}, got {d['level']!r}")
    osc = hw.device_from_dict(d["oscillator"], f"{where}.oscillator")
    want = type(device_spec(d["level"]).build())
    if type(osc) is not want:
        raise ValueError(f"{where}: level {d['level']!r} needs a {want.kind} oscillator, got {osc.kind!r}")
    return ChipDevice(name=d["level"], oscillator=osc)
