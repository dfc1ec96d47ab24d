"""The device protocol: one :class:`Oscillator` class per oscillator technology, built from its frozen params.

:class:`Oscillator` is the protocol every device implements (``mapping`` reads every device number through
it and holds none of its own):

============================  =====================================================================
member                        meaning (SI units)
============================  =====================================================================
``name``, ``kind``            preset name (e.g. ``"cmos_65nm"``) and kind (``ring``/``stno``/``ideal``)
``params``                    the frozen, validated params dataclass the object is built from
``sources``                   field or derived quantity -> citation, or "assumed"
``frequency()``               free-running frequency f₀ [Hz]
``limit_cycle()``/``ppv()``   ring only (others raise ``NotImplementedError`` naming the device)
``coupling_function(c, s)``   H(Δ) on this (receiving) device from ``s`` through coupler ``c``:
                              ``CouplingFunction(offset_rad_s, harmonics (M, 2) rad/s)``, Δ = θ_s − θ_r
``diffusion(T)``              phase diffusion D [rad²/s] at temperature T (Var θ(t) = D t)
``power()``                   average power of one running oscillator [W]
``energy_per_cycle()``        power / f₀ [J]
``draw_instances(n, seed)``   :class:`DeviceInstances`: per-instance f₀, D, power (n,), and ``detail``
``netlist(...)``              ngspice netlist (ring only)
``coupler(one_way, sign)``    the preset coupler that physically realises such a coupling, or a
                              ``ValueError`` naming ``one_way``/``sign`` when none can
``with_frequency(f0_hz)``     the same technology rescaled to f₀ by a physical parameter (every derived
                              number recomputed), or a ``ValueError`` when that leaves the valid range
``to_dict()``/``from_dict``   ``{"kind", "preset", "params"}``, validated against physical ranges
``at_node(node)``             the device drawn at a CMOS node (ring: its circuit ported and re-derived;
                              devices without a CMOS model card: unchanged)
``tap_nodes()``               nodes a coupler may tap on a source (ring: its stages; others 1)
``matrix_coupling_function``  H of one coupler of a chip's matrix as the compiler programs it
``area_um2(node, trim_bits)`` (oscillator cell area [µm²], its source); ``coupler_area_um2``,
                              ``detector_area_um2`` likewise (:mod:`hw_models.layout`)
``coupler_static_power``      (static dissipation of one coupler at full scale [W], its source)
``injection_driver(K)``       the reference driver that injection-locks it at strength K, or None
``drift_model()``             how f₀(T) is modelled (``frequency_at``, ``df0_dT``)
``inert_fields(label)``       chip-config fields that do not act on this device, with the reason
``operating_point_check``     the simulated model's validity at a coupling operating point, or None
``has_circuit``               a node-voltage circuit (and SPICE netlist) exists: circuit rungs run it
============================  =====================================================================

A new device is one module: its params dataclass, its ``Oscillator`` subclass (registered by kind with
:func:`hw_models.devices.registry.register_oscillator`) and the chip device names that run on it
(:func:`hw_models.devices.registry.register_device`); see docs/devices.md.

Expensive results (ring limit cycle, PPV, mismatch sensitivities, D) are cached on the object
(:func:`functools.cached_property`) and, by params, in :func:`hw_models.ring_macro.limit_cycle`.
"""

from __future__ import annotations

import abc
import functools
import math
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from hw_models import layout
from hw_models.ring_macro import CouplingFunction  # one H(Δ) type for every device

__all__ = ["Oscillator", "DeviceInstances", "CouplingFunction"]



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


def _check_n(n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")


def _check_t(temperature_k):
    if not (isinstance(temperature_k, (int, float)) and math.isfinite(temperature_k) and 0 < temperature_k <= 1000):
        raise ValueError(f"temperature_k must be in (0, 1000] K, got {temperature_k!r}")


def _check_f0(f0_hz):
    if isinstance(f0_hz, bool) or not (isinstance(f0_hz, (int, float)) and math.isfinite(f0_hz) and f0_hz > 0):
        raise ValueError(f"f0_hz must be a frequency > 0 Hz, got {f0_hz!r}")


def _check_method(method):
    """A device whose instance draw is its closed form has the one method 'linear' (a ring also 'circuit')."""
    if method != "linear":
        raise ValueError(f"method must be 'linear' for this device (only a ring also simulates 'circuit'), got "
                         f"{method!r}")


def _sign(sign):
    if sign not in (1, -1) or isinstance(sign, bool):
        raise ValueError(f"sign must be +1 or -1, got {sign!r}")
    return int(sign)


class Oscillator(abc.ABC):
    """The device protocol (see the module table). Subclasses are built from one params dataclass."""

    kind: str = ""
    params_type: type = object
    #: derived quantity -> the model it comes from (citation or "assumed"); `sources` adds the params' own
    derived_sources: dict = {}

    def __init__(self, params, *, name: str = "custom", sources: dict | None = None):
        if not isinstance(params, self.params_type):
            raise ValueError(f"{type(self).__name__} needs {self.params_type.__name__}, got {type(params).__name__}")
        self.params = params
        self.name = str(name)
        self._sources = dict(sources or {})

    def __repr__(self):
        return f"{type(self).__name__}(name={self.name!r}, f0={self.frequency():.4g} Hz)"

    def __eq__(self, other):
        return type(self) is type(other) and self.params == other.params and self.name == other.name

    def __hash__(self):
        return hash((type(self).__name__, self.params, self.name))

    # ------------------------------------------------------------------ protocol
    @abc.abstractmethod
    def frequency(self) -> float:
        """Free-running frequency f₀ [Hz]."""

    def omega(self) -> float:
        """2π f₀ [rad/s]."""
        return 2 * math.pi * self.frequency()

    def limit_cycle(self):
        raise NotImplementedError(f"a {type(self).__name__} has no circuit limit cycle (only RingOscillator)")

    def ppv(self):
        raise NotImplementedError(f"a {type(self).__name__} has no PPV (only RingOscillator)")

    @abc.abstractmethod
    def coupling_function(self, coupler=None, source=None, *, beta_rad: float = 0.0, n_harmonics: int | None = None):
        """H(Δ) on this device (receiver) from ``source`` (default: an identical device) through ``coupler``;
        ``beta_rad`` the programmed coupling phase where the coupler has one (else 0), ``n_harmonics`` the
        harmonics kept where H is computed numerically (a closed form keeps its own)."""

    @abc.abstractmethod
    def diffusion(self, temperature_k: float | None = None, noise_scale: float = 1.0) -> float:
        """Phase diffusion D [rad²/s] at ``temperature_k`` (default: the params' temperature), × ``noise_scale``."""

    @abc.abstractmethod
    def frequency_spread_rel(self) -> float:
        """σ(f)/f₀ of the instance mismatch (dimensionless)."""

    @abc.abstractmethod
    def power(self) -> float:
        """Average power of one running oscillator [W]."""

    def energy_per_cycle(self) -> float:
        """Energy per oscillation cycle [J] = power / f₀."""
        return self.power() / self.frequency()

    # -- PVT (hw_models.pvt): devices without a cited temperature coefficient keep f₀ ---------------------
    def frequency_at(self, temperature_k: float) -> float:
        """f₀ [Hz] at a device temperature; this device has no cited temperature coefficient: f₀."""
        return self.frequency()

    def df0_dT(self, temperature_k: float = 300.0) -> float:
        """df₀/dT [Hz/K] (0: no cited temperature coefficient)."""
        return 0.0

    @abc.abstractmethod
    def draw_instances(self, n: int, seed, *, method: str = "linear") -> DeviceInstances:
        """n instances with mismatch, drawn from ``seed`` (int or numpy Generator); ``method``: 'linear' (the
        device's closed-form or first-order draw) or, where the device has a circuit, 'circuit'."""

    def netlist(self, *a, **kw) -> str:
        raise NotImplementedError(f"a {type(self).__name__} has no SPICE netlist (only RingOscillator)")

    @abc.abstractmethod
    def coupler(self, one_way: bool, sign: int = 1):
        """The preset coupler that physically realises a coupling of this kind."""

    @abc.abstractmethod
    def with_frequency(self, f0_hz: float) -> "Oscillator":
        """The same technology rescaled to ``f0_hz`` through a physical parameter (or ValueError)."""

    # -- what a chip asks of its device (mapping never asks the kind) -------------------------------------
    #: a node-voltage circuit model (and an ngspice netlist) exists: the circuit-level rungs can run it
    has_circuit: bool = False
    #: f₀ has a cited temperature coefficient (``frequency_at``): a chip calibrated at one temperature drifts
    temperature_coefficient: bool = False
    #: the device has an amplitude degree of freedom (a complex-amplitude model beside the phase reduction)
    amplitude_model: bool = False
    #: the device is a CMOS circuit with a model card that can be drawn at another node (``at_node``, sizing)
    cmos_sizing: bool = False

    def at_node(self, node) -> "Oscillator":
        """The device drawn at a CMOS node (a :class:`hw_models.technology.TechnologyNode`). A device without a
        CMOS model card is the same at every node (itself); a ring re-derives its circuit there."""
        return self

    def tap_nodes(self) -> int:
        """Nodes of a source device a coupler can tap (1: one output; a ring: its stages, phase-shifted taps)."""
        return 1

    def matrix_coupling_function(self, coupler, *, sign: int = 1, source_node: int = 0) -> CouplingFunction:
        """H(Δ) [rad/s] of one coupler of a chip's coupling matrix, as the compiler programs it: ``coupler`` from
        :meth:`coupler` (of the same ``sign``), the source tapped at ``source_node``."""
        _sign(sign)
        if source_node:
            raise ValueError(f"source_node: a {type(self).__name__} has one output ({self.tap_nodes()} tap)")
        return self.coupling_function(coupler)

    def sizing_check(self, node_nm: float, *, warn: bool = True, stacklevel: int = 2) -> str | None:
        """Whether drawing this device at ``node_nm`` (a chip's ``device_node_nm``) leaves its model's stated
        range: the reason (warned as :class:`hw_models.validity.DeviceSizingWarning` with ``warn``), or None."""
        return None

    @abc.abstractmethod
    def area_um2(self, node, trim_bits: int | None, *, latch_node=None) -> tuple[float, str]:
        """Area of one oscillator cell with its trim DAC and injection switch at ``node`` [µm²] (the trim DAC's
        latches at ``latch_node``, default ``node``: the chip's logic), and its source. A device without a layout
        of its own may inherit :class:`hw_models.devices.ring.ChargedAsRing` (the ring's cell, stated assumed)."""

    def coupler_area_um2(self, bits: int | None, node, *, latch_node=None) -> tuple[float, str]:
        """Area of one programmable coupler of ``bits`` bits [µm²] (None: analog, charged as
        :data:`hw_models.layout.ANALOG_BITS`): b latches at ``latch_node`` (default ``node``: the chip's logic) +
        (2^b − 1) binary-weighted unit cells at ``node`` (the device's sizing), × wiring."""
        b = bits or layout.ANALOG_BITS
        if b < 1:
            raise ValueError(f"bits must be >= 1, got {b}")
        ln = node if latch_node is None else latch_node
        a = (b * layout.latch_um2(ln) + (2**b - 1) * layout.cell_um2("unit_switch_um2", node)) \
            * layout.DEVICE_AREA["wiring_overhead"].value
        ar = layout.DEVICE_AREA
        return a, (f"{b} latches + {2 ** b - 1} unit gates, x {ar['wiring_overhead'].value} wiring: "
                   f"{ln.sram_cell_area().source}; {ar['unit_switch_um2'].source}; {ar['wiring_overhead'].source}")

    def detector_area_um2(self, node) -> tuple[float, str]:
        """Area of one phase detector with its hold capacitor at ``node`` [µm²], and its source."""
        return layout.cell_um2("detector_um2", node), layout.DEVICE_AREA["detector_um2"].source

    @abc.abstractmethod
    def coupler_static_power(self, one_way: bool, node) -> tuple[float, str]:
        """Static dissipation of one coupler of a chip's matrix at full scale [W], and its source (``node``: the
        node the device is drawn at; :class:`hw_models.devices.ring.ChargedAsRing` charges the ring's coupler)."""

    def injection_driver(self, strength_rad_s: float) -> dict | None:
        """The reference driver that injection-locks this device at strength ``strength_rad_s`` [rad/s]:
        {"driver_power_w", "amplitude_a", "source"}, or None where no driver circuit is modelled."""
        return None

    def drift_model(self) -> str:
        """How f₀(T) is modelled (the chip's ``timebase['pvt']`` line)."""
        return f"{self.kind}: no cited temperature coefficient of f0 (no drift)"

    def inert_fields(self, label: str) -> dict:
        """Chip-config fields (:class:`mapping.ChipConfig` names) that do not act on this device, with the reason;
        ``label`` is the chip's device name."""
        why = {}
        if not self.amplitude_model:
            why["stno_model"] = f"the {label!r} device has no amplitude model (spin-torque only)"
        if not self.cmos_sizing:
            why["device_node_nm"] = f"the {label!r} device has no CMOS model card to size (its cells follow node_nm)"
        if not self.temperature_coefficient:
            why["calibration_temperature_k"] = (f"the {label!r} device has no cited temperature coefficient of f0 "
                                                f"(no drift between calibration and run)")
        return why

    def operating_point_check(self, kappa_over_f0: float, fan_in: int, metric: str, *, warn: bool = True,
                              stacklevel: int = 2) -> dict | None:
        """Is a coupling operating point inside the region where this device's phase model holds (None: no
        measured validity map; the model is exact for the device, e.g. the ideal one)."""
        return None

    # -- the device report (``oscsim device``) -------------------------------------------------------------
    def at_temperature(self, temperature_k: float) -> "Oscillator":
        """The device at a device temperature, every figure belonging to it (default: itself; its diffusion
        takes the temperature as an argument)."""
        _check_t(float(temperature_k))
        return self

    def flicker_phase_coefficient(self) -> float:
        """A [rad²/s²] of the 1/f³ phase noise from flicker current noise (0: not modelled for this device)."""
        return 0.0

    def report_figures(self, temperature_k: float) -> dict:
        """The device-specific figures of ``oscsim device`` at ``temperature_k`` (drift slopes, amplitude, which
        models), called on the nominal device."""
        return {"df0_dT_hz_per_k": self.df0_dT(float(temperature_k)), "df0_dvdd_hz_per_v": None,
                "flicker_corner_hz": None,
                "realism_models": f"{type(self).__name__}: no supply or flicker dependence of f0 modelled"}

    def waveform(self, n_cycles: float = 3.0) -> tuple:
        """(t [s] (M,), signal (M, k), y-axis label, channel names or None) over ``n_cycles`` periods (default:
        a unit sinusoid at f₀, the phase model's own signal)."""
        f0 = self.frequency()
        t = np.linspace(0, n_cycles / f0, 300)
        return t, np.sin(2 * math.pi * f0 * t)[:, None], "signal [rel.]", None

    @property
    def sources(self) -> dict:
        """Field or derived quantity -> citation or "assumed": the preset's table for the params fields, the
        rescaling notes of `with_frequency`, and the class's `derived_sources`."""
        return self._src(self.derived_sources)

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict:
        return {"kind": self.kind, "preset": self.name, "params": _params_to_json(self.params)}

    def _src(self, derived: dict) -> dict:
        from hw_models.presets import PRESET_SOURCES

        base = dict(PRESET_SOURCES.get((self.kind, self.name), {}))
        if "*" in base:
            star = base.pop("*")
            base.update({f.name: star for f in fields(self.params)})
        for f in fields(self.params):
            base.setdefault(f.name, "user-given (params)")
        base.update(self._sources)
        base.update(derived)
        return base

    def _rescaled(self, params, field: str, note: str) -> "Oscillator":
        """The same device (kind and name) on new ``params``, with the source of ``field`` replaced by ``note``
        (what `with_frequency` returns)."""
        return type(self)(params, name=self.name, sources={**self._sources, field: note})


def _params_to_json(p) -> dict:
    d = asdict(p)
    if "harmonics" in d:
        d["harmonics"] = [list(r) for r in d["harmonics"]]
    return d


