"""Devices as objects: one class per oscillator technology, built from its frozen params, one protocol.

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
============================  =====================================================================

Expensive results (ring limit cycle, PPV, mismatch sensitivities, D) are cached on the object
(:func:`functools.cached_property`) and, by params, in :func:`hw_models.ring_macro.limit_cycle`.
"""

from __future__ import annotations

import abc
import functools
import math
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from hw_models.constants import T_ROOM_K
from hw_models.ring_macro import CouplingFunction  # one H(Δ) type for every device
from hw_models.params import (IdealOscillatorParams, ResistiveCoupler, RingOscillatorParams, STNOParams,
                              TransconductanceCoupler, TransmissionGateCoupler)

__all__ = ["Oscillator", "RingOscillator", "SpinTorqueOscillator", "IdealOscillator", "DeviceInstances",
           "CouplingFunction", "device_for", "make_device", "device_from_dict"]


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
    def coupling_function(self, coupler=None, source=None, **kw):
        """H(Δ) on this device (receiver) from ``source`` (default: an identical device) through ``coupler``."""

    @abc.abstractmethod
    def diffusion(self, temperature_k: float | None = None) -> float:
        """Phase diffusion D [rad²/s] at ``temperature_k`` (default: the params' temperature)."""

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
    def draw_instances(self, n: int, seed, **kw) -> DeviceInstances:
        """n instances with mismatch, drawn from ``seed`` (int or numpy Generator)."""

    def netlist(self, *a, **kw) -> str:
        raise NotImplementedError(f"a {type(self).__name__} has no SPICE netlist (only RingOscillator)")

    @abc.abstractmethod
    def coupler(self, one_way: bool, sign: int = 1):
        """The preset coupler that physically realises a coupling of this kind."""

    @abc.abstractmethod
    def with_frequency(self, f0_hz: float) -> "Oscillator":
        """The same technology rescaled to ``f0_hz`` through a physical parameter (or ValueError)."""

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


# ============================================================================== ring
class RingOscillator(Oscillator):
    """CMOS inverter ring (:class:`RingOscillatorParams`): circuit limit cycle, PPV, macromodel couplings."""

    kind = "ring"
    params_type = RingOscillatorParams
    derived_sources = {
        "frequency": "circuit model limit cycle (hw_models.ring_macro.limit_cycle, SPICE level-1 MOSFETs)",
        "diffusion": "ISF prediction from the PPV and the channel thermal noise (Hajimiri & Lee 1998; "
                     "Demir et al. 2000), hw_models.noise.isf_diffusion",
        "power": "average V_DD I_DD over the circuit limit cycle (hw_models.energy.ring_power_circuit)",
        "coupling_function": "receiver PPV x coupler current averaged over a cycle (hw_models.ring_macro)",
        "frequency_spread_rel": "Pelgrom V_T (A_VT) and load spread propagated with the PPV (hw_models.mismatch)",
        "instances": "per-instance D ~ f^2, P ~ f from the nominal (assumed)",
    }

    @functools.cached_property
    def _lc(self):
        from hw_models.ring_macro import limit_cycle

        return limit_cycle(self.params)

    def limit_cycle(self):
        """:class:`hw_models.ring_macro.LimitCycle` (x (M, n) [V], PPV (M, n) [rad/V], period)."""
        return self._lc

    def ppv(self) -> np.ndarray:
        """PPV ∂θ/∂V_k (M, n) [rad/V] on a uniform phase grid."""
        return self._lc.ppv

    def frequency(self) -> float:
        return self._lc.f0_hz

    def frequency_at(self, temperature_k: float) -> float:
        """f₀ [Hz] of the circuit at a device temperature (ngspice's level-1 law, :mod:`hw_models.pvt`)."""
        from hw_models.pvt import ring_f0_hz

        return ring_f0_hz(self.params, temperature_k)

    def df0_dT(self, temperature_k: float = 300.0) -> float:
        """df₀/dT [Hz/K] of the circuit (:func:`hw_models.pvt.ring_df0_dT`)."""
        from hw_models.pvt import ring_df0_dT

        return ring_df0_dT(self.params, temperature_k)

    def df0_dvdd(self, temperature_k: float = 300.0) -> float:
        """df₀/dV_DD [Hz/V] of the circuit (:func:`hw_models.pvt.ring_df0_dvdd`)."""
        from hw_models.pvt import ring_df0_dvdd

        return ring_df0_dvdd(self.params, temperature_k)

    def coupling_function(self, coupler=None, source=None, *, receiver_node: int = 0, source_node: int = 0,
                          n_harmonics: int = 12):
        """Macromodel H(Δ) [rad/s] on this ring from ``source`` (a RingOscillator or params; default: itself).

        H(Δ) = (1/T)∮ v_a(t)/C_a · i(V_a(t), V_b(t + Δ/ω)) dt with v the receiver's PPV and i the coupler's
        current into the receiving node (:func:`hw_models.couplers.coupler_current`); for a transconductor
        i = sign g_m (V_src − V_DD/2) − g_out (V_rcv − V_DD/2). Offset (loading) and harmonics kept.
        ``coupler`` None: the preset bidirectional coupler.
        """
        from hw_models.ring_macro import ring_coupling_function

        cp = self.coupler(one_way=False) if coupler is None else coupler
        if not isinstance(cp, (ResistiveCoupler, TransmissionGateCoupler, TransconductanceCoupler)):
            raise ValueError(f"coupler for a ring must be a ResistiveCoupler, TransmissionGateCoupler or "
                             f"TransconductanceCoupler, got {type(cp).__name__}")
        src = None if source is None else getattr(source, "params", source)
        if src is not None and not isinstance(src, RingOscillatorParams):
            raise ValueError(f"source must be a RingOscillator, got {type(source).__name__}")
        return ring_coupling_function(self.params, cp, src, node_a=receiver_node, node_b=source_node,
                                      n_harmonics=n_harmonics)

    @functools.cached_property
    def _d300(self):
        from hw_models.noise import isf_diffusion

        return isf_diffusion(self.params)

    def diffusion(self, temperature_k: float | None = None, noise_scale: float = 1.0) -> float:
        """ISF prediction κ² = Σ_k Γ_rms,k² S_i/(2 q_max²) [rad²/s]; S_i ∝ T (the PPV is at TNOM)."""
        T = self.params.temperature_k if temperature_k is None else temperature_k
        _check_t(T)
        return self._d300 * noise_scale * T / self.params.temperature_k

    @functools.cached_property
    def _power(self):
        from hw_models.energy import ring_power_circuit

        return ring_power_circuit(self.params)

    def power(self) -> float:
        """Average supply power ⟨V_DD I_DD⟩ over one limit cycle of the circuit model [W]."""
        return self._power

    def coupler_power(self, coupler, delta_rad: float = math.pi / 2) -> float:
        """Static dissipation [W] of one coupler between two copies of this ring at phase difference Δ."""
        from hw_models.energy import coupler_power

        return coupler_power(self.params, coupler, delta_rad)

    @functools.cached_property
    def _sens(self):
        from hw_models.mismatch import frequency_sensitivities

        return frequency_sensitivities(self.params)

    def frequency_spread_rel(self) -> float:
        """σ(f)/f₀ from Pelgrom V_T and load spread, first-order PPV propagation (dimensionless)."""
        sn, sp, sc = self._sens
        p = self.params
        var = np.sum(sn ** 2) * p.sigma_vt_n_v ** 2 + np.sum(sp ** 2) * p.sigma_vt_p_v ** 2
        var += np.sum(sc ** 2) * p.sigma_c_rel ** 2
        return float(math.sqrt(var)) / self.frequency()

    def draw_instances(self, n: int, seed, *, method: str = "linear") -> DeviceInstances:
        """Pelgrom V_T and load spread per transistor/node, mapped to f₀ by the PPV sensitivities (``linear``,
        validated against the circuit within a few % of σ_f) or by simulating every ring (``circuit``).
        Per-instance D ∝ f² and P ∝ f from the nominal (assumed: the load spread dominates f and D; for a pure
        load change P is constant, for a V_T change P ∝ f, so this P is an upper envelope of the spread)."""
        _check_n(n)
        valid = ("linear", "circuit")
        if method not in valid:
            raise ValueError(f"method must be one of {valid}, got {method!r}")
        from hw_models.mismatch import draw_ring_mismatch

        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        mm = draw_ring_mismatch(self.params, n, rng)
        f0 = self.frequency()
        if method == "linear":
            sn, sp, sc = self._sens
            f = f0 + mm.dvt_n_v @ sn + mm.dvt_p_v @ sp + mm.c_rel @ sc
        else:
            from hw_models.ring import RingMismatch, RingNetwork
            from hw_models.ring_sim import ring_frequencies, simulate_ring_networks

            T = self._lc.period_s
            net = RingNetwork.single(self.params)
            mms = [RingMismatch(dvt_n_v=mm.dvt_n_v[i:i + 1], dvt_p_v=mm.dvt_p_v[i:i + 1], c_rel=mm.c_rel[i:i + 1],
                                coupler_rel=np.zeros(0)) for i in range(n)]
            ts, ys = simulate_ring_networks([net] * n, 40 * T, dt_s=T / 200, mismatches=mms, save_every=2)
            f = ring_frequencies(ts, ys, net, 15 * T)[0][:, 0]
        D = np.full(n, self.diffusion()) * (f / f0) ** 2
        P = self.power() * f / f0
        return DeviceInstances(self.params, f, D, P, {"dvt_n_v": mm.dvt_n_v, "dvt_p_v": mm.dvt_p_v, "c_rel": mm.c_rel})

    def netlist(self, network=None, t_stop_s: float | None = None, dt_s: float | None = None, **kw) -> str:
        """ngspice netlist of ``network`` (default: this ring alone) for ``t_stop_s`` [s] (default 25 periods)."""
        from hw_models.ring import RingNetwork
        from hw_models.spice import ring_network_netlist

        T = self._lc.period_s
        net = RingNetwork.single(self.params) if network is None else network
        return ring_network_netlist(net, 25 * T if t_stop_s is None else t_stop_s, T / 400 if dt_s is None else dt_s, **kw)

    def coupler(self, one_way: bool, sign: int = 1):
        """Bidirectional positive: the 20 kΩ resistor preset; one-way or negative: the 50 µS transconductor."""
        from hw_models.presets import cmos_65nm_coupler, cmos_65nm_transconductor

        sign = _sign(sign)
        if one_way or sign < 0:
            return cmos_65nm_transconductor(sign=sign)
        return cmos_65nm_coupler()

    def with_frequency(self, f0_hz: float) -> "RingOscillator":
        """Rescale by the load capacitance: C dV/dt = I(V) makes f₀ ∝ 1/C exactly (time scaling), so the PPV
        shape is unchanged, H [rad/s] ∝ f₀ for a given coupler, D ∝ f₀² and the power stays constant — all
        recomputed from the new params. Refused when the load would leave its physical range."""
        _check_f0(f0_hz)
        c = self.params.c_load_f * self.frequency() / float(f0_hz)
        lo, hi, _ = RingOscillatorParams.RANGES["c_load_f"]
        if not lo <= c <= hi:
            raise ValueError(f"f0_hz = {f0_hz:g} Hz needs a ring load of {c:.3g} F, outside the physical range "
                             f"[{lo:g}, {hi:g}] F; valid f0_hz for this ring: "
                             f"[{self.frequency() * self.params.c_load_f / hi:.3g}, "
                             f"{self.frequency() * self.params.c_load_f / lo:.3g}] Hz")
        return self._rescaled(self.params.replace(c_load_f=c), "c_load_f",
                              f"rescaled from the preset so that f0 = {f0_hz:g} Hz (config f0_hz; f0 proportional "
                              f"to 1/C)")


# ============================================================================== STNO
class SpinTorqueOscillator(Oscillator):
    """Spin-torque nano-oscillator in the universal auto-oscillator model (:class:`STNOParams`)."""

    kind = "stno"
    params_type = STNOParams
    derived_sources = {
        "frequency": "universal model closed form omega0 + N p0 (Slavin & Tiberkevich 2009)",
        "diffusion": "(D_n/p0)(1 + nu^2), Slavin & Tiberkevich 2009",
        "power": "Joule power I^2 R of the bias current",
        "coupling_function": "phase reduction of the coupling Omega e^{i beta} (hw_models.stno)",
        "frequency_spread_rel": "sigma_f0_rel of the params",
    }

    def frequency(self) -> float:
        from hw_models.stno import stno_frequency_hz

        return stno_frequency_hz(self.params)

    def coupling_function(self, coupler=None, source=None, *, beta_rad: float = 0.0):
        """Phase reduction of the electrical coupling Ω e^{iβ} between identical oscillators [rad/s].

        ``coupler``: the coupling rate Ω [1/s] (float; default 1), ``beta_rad`` its phase. ``source`` must be
        None (identical oscillators)."""
        from hw_models.stno import stno_coupling_function

        if source is not None:
            raise ValueError("source: the STNO phase reduction is for identical oscillators (pass None)")
        rate = 1.0 if coupler is None else coupler
        if isinstance(rate, bool) or not np.isscalar(rate) or not math.isfinite(float(rate)):
            raise ValueError("coupler for an STNO must be the coupling rate Ω [1/s] (a finite float)")
        off, h = stno_coupling_function(self.params, float(rate), beta_rad)
        return CouplingFunction(float(off), np.asarray(h, float))

    def diffusion(self, temperature_k: float | None = None, noise_scale: float = 1.0) -> float:
        """D = (D_n/p₀)(1 + ν²) [rad²/s] (Slavin & Tiberkevich 2009), D_n ∝ T."""
        from hw_models.stno import stno_diffusion

        p = self.params if temperature_k is None else self.params.replace(temperature_k=float(temperature_k))
        _check_t(p.temperature_k)
        return stno_diffusion(p, noise_scale)

    def power(self) -> float:
        """Joule power I² R of the bias current [W]."""
        from hw_models.energy import stno_power

        return stno_power(self.params)

    def relaxation_rate(self) -> float:
        """Amplitude relaxation rate Γ_p [1/s] (the phase reduction needs coupling ≪ Γ_p)."""
        from hw_models.stno import stno_relaxation_rate

        return stno_relaxation_rate(self.params)

    def frequency_spread_rel(self) -> float:
        """σ(f)/f from the ω₀ spread (dominant; the N and Γ_G spreads enter through N p₀, assumed small)."""
        p = self.params
        return p.sigma_f0_rel * p.f0_hz / self.frequency()

    def draw_instances(self, n: int, seed, **kw) -> DeviceInstances:
        """Gaussian relative spread of ω₀, N, Γ_G per instance; f₀, D, P recomputed per instance."""
        _check_n(n)
        from hw_models.energy import stno_power
        from hw_models.stno import stno_diffusion, stno_frequency_hz

        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        p = self.params
        inst = []
        for _ in range(n):
            inst.append(p.replace(
                f0_hz=p.f0_hz * (1 + rng.normal(0, p.sigma_f0_rel)),
                n_shift_hz=p.n_shift_hz * (1 + rng.normal(0, p.sigma_n_rel)),
                gamma_g_per_s=p.gamma_g_per_s * max(0.1, 1 + rng.normal(0, p.sigma_gamma_rel))))
        return DeviceInstances(p, np.array([stno_frequency_hz(q) for q in inst]),
                               np.array([stno_diffusion(q) for q in inst]), np.array([stno_power(q) for q in inst]),
                               {"instances": tuple(inst)})

    def coupler(self, one_way: bool, sign: int = 1):
        """The coupling rate Ω = 1 /s (unit shape; the chip sets the strength); a negative coupling is the phase
        β + π of the same electrical coupling (Ω e^{i(β+π)} = −Ω e^{iβ} in the model). A one-way coupling
        assumes an isolating buffer amplifier on the shared line (assumed, not modelled: the shared line
        itself is reciprocal)."""
        _sign(sign)
        return 1.0

    def with_frequency(self, f0_hz: float) -> "SpinTorqueOscillator":
        """Rescale ω₀ (the gyrotropic frequency, set by the disk aspect ratio) so that ω₀ + N p₀ = 2π f0_hz;
        D and power do not depend on ω₀ in the model and are recomputed unchanged."""
        _check_f0(f0_hz)
        from hw_models.stno import stno_power_p0

        w0 = float(f0_hz) - self.params.n_shift_hz * stno_power_p0(self.params)
        lo, hi, _ = STNOParams.RANGES["f0_hz"]
        if not lo <= w0 <= hi:
            raise ValueError(f"f0_hz = {f0_hz:g} Hz needs omega0/2pi = {w0:.3g} Hz, outside [{lo:g}, {hi:g}] Hz")
        return self._rescaled(self.params.replace(f0_hz=w0), "f0_hz",
                              f"rescaled so that f0 = {f0_hz:g} Hz (config f0_hz)")


# ============================================================================== ideal
class IdealOscillator(Oscillator):
    """Ideal Kuramoto phase oscillator (:class:`IdealOscillatorParams`): every number is a parameter."""

    kind = "ideal"
    params_type = IdealOscillatorParams
    derived_sources = {"frequency": "f0_hz of the params", "diffusion": "diffusion_rad2_per_s of the params "
                       "(at 300 K, scaled with T: assumed)", "power": "power_w of the params",
                       "coupling_function": "harmonics of the params", "frequency_spread_rel": "sigma_f_rel"}

    def frequency(self) -> float:
        return self.params.f0_hz

    def coupling_function(self, coupler=None, source=None, **kw):
        """The preset harmonics × ``coupler`` (a strength [rad/s], default 1); no offset."""
        s = 1.0 if coupler is None else coupler
        if isinstance(s, bool) or not np.isscalar(s) or not math.isfinite(float(s)):
            raise ValueError("coupler for an ideal oscillator must be a coupling strength [rad/s] (a float)")
        return CouplingFunction(0.0, float(s) * np.asarray(self.params.harmonics, float))

    def diffusion(self, temperature_k: float | None = None, noise_scale: float = 1.0) -> float:
        """``diffusion_rad2_per_s`` at T_ROOM = 300 K, scaled ∝ T (thermal noise; assumed)."""
        T = T_ROOM_K if temperature_k is None else temperature_k
        _check_t(T)
        return self.params.diffusion_rad2_per_s * noise_scale * T / T_ROOM_K

    def power(self) -> float:
        return self.params.power_w

    def frequency_spread_rel(self) -> float:
        return self.params.sigma_f_rel

    def draw_instances(self, n: int, seed, **kw) -> DeviceInstances:
        """Gaussian relative spread of f₀; D and power equal for all instances."""
        _check_n(n)
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        p = self.params
        f = p.f0_hz * (1 + rng.normal(0, p.sigma_f_rel, n))
        return DeviceInstances(p, f, np.full(n, p.diffusion_rad2_per_s), np.full(n, p.power_w), {})

    def coupler(self, one_way: bool, sign: int = 1):
        """Unit strength 1.0 [in units of κ]: an ideal coupler realises any sign and direction."""
        return float(_sign(sign))

    def with_frequency(self, f0_hz: float) -> "IdealOscillator":
        """f0_hz replaced; D, power and harmonics are parameters of the ideal device and stay as given."""
        _check_f0(f0_hz)
        return self._rescaled(self.params.replace(f0_hz=float(f0_hz)), "f0_hz", "config f0_hz")


# ============================================================================== factories
_CLASSES = {"ring": RingOscillator, "stno": SpinTorqueOscillator, "ideal": IdealOscillator}


@functools.lru_cache(maxsize=64)
def device_for(params) -> Oscillator:
    """The device object for a params dataclass (cached per params, so derived numbers are computed once)."""
    for cls in _CLASSES.values():
        if isinstance(params, cls.params_type):
            return cls(params)
    raise ValueError(f"unknown device params {type(params).__name__}; valid: RingOscillatorParams, STNOParams, "
                     f"IdealOscillatorParams")


def make_device(kind: str, preset: str | None = None, **overrides) -> Oscillator:
    """A device from :data:`hw_models.presets.PRESETS`: ``make_device("ring", "cmos_65nm", n_stages=7)``."""
    from hw_models.presets import PRESETS

    if kind not in PRESETS:
        raise ValueError(f"kind must be one of {sorted(PRESETS)}, got {kind!r}")
    names = PRESETS[kind]
    preset = next(iter(names)) if preset is None else preset
    if preset not in names:
        raise ValueError(f"preset for kind {kind!r} must be one of {sorted(names)}, got {preset!r}")
    return _CLASSES[kind](names[preset](**overrides), name=preset)


def device_from_dict(d: dict, where: str = "device") -> Oscillator:
    """Inverse of :meth:`Oscillator.to_dict`; every field validated against the params' physical ranges."""
    if not isinstance(d, dict) or not {"kind", "preset", "params"} <= set(d):
        raise ValueError(f"{where} must be an object with keys 'kind', 'preset', 'params'")
    kind = d["kind"]
    if kind not in _CLASSES:
        raise ValueError(f"{where}.kind must be one of {sorted(_CLASSES)}, got {kind!r}")
    cls = _CLASSES[kind]
    names = {f.name for f in fields(cls.params_type)}
    pd = d["params"]
    if not isinstance(pd, dict):
        raise ValueError(f"{where}.params must be an object")
    bad, missing = sorted(set(pd) - names), sorted(f.name for f in fields(cls.params_type)
                                                  if f.name not in pd)
    if bad or missing:
        raise ValueError(f"{where}.params: unknown field(s) {bad}, missing field(s) {missing}")
    pd = dict(pd)
    if "harmonics" in pd:
        pd["harmonics"] = tuple(tuple(r) for r in pd["harmonics"])
    try:
        params = cls.params_type(**pd)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}.params: {exc}") from None
    params.check_ranges(f"{where}.params")
    return cls(params, name=str(d["preset"]))
