"""The CMOS inverter ring as a device object (:class:`RingOscillator`, params :class:`RingOscillatorParams`).

Circuit limit cycle and PPV (:mod:`hw_models.ring_macro`), ISF phase diffusion (:mod:`hw_models.noise`),
Pelgrom mismatch (:mod:`hw_models.mismatch`), temperature and supply laws (:mod:`hw_models.pvt`), layout
(:mod:`hw_models.layout`) and porting to another node (:meth:`hw_models.technology.TechnologyNode.ring_params`).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from hw_models import layout
from hw_models.devices.base import DeviceInstances, Oscillator, _check_f0, _check_n, _check_t, _sign
from hw_models.params import ResistiveCoupler, RingOscillatorParams, TransconductanceCoupler, TransmissionGateCoupler

__all__ = ["RingOscillator", "ChargedAsRing"]

_FULL_SCALE = " at full scale (an upper estimate: a coupler programmed to w dissipates about w times this)"


def _ring_area_source(n_stages: int, c_load_f: float, trim_bits) -> str:
    """The source line of :func:`hw_models.layout.ring_area_um2` for these figures."""
    ar = layout.DEVICE_AREA
    return (f"{n_stages} stages x (inverter {ar['inverter_um2'].value} um^2 + {c_load_f * 1e15:.3g} fF / MOS-cap "
            f"density) + {trim_bits}-bit trim DAC + injection switch: {ar['inverter_um2'].source}; "
            f"{ar['mos_cap_f_per_um2'].source}")


class RingOscillator(Oscillator):
    """CMOS inverter ring (:class:`RingOscillatorParams`): circuit limit cycle, PPV, macromodel couplings."""

    kind = "ring"
    params_type = RingOscillatorParams
    has_circuit = True
    temperature_coefficient = True
    cmos_sizing = True
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
                          n_harmonics: int | None = None, beta_rad: float = 0.0):
        """Macromodel H(Δ) [rad/s] on this ring from ``source`` (a RingOscillator or params; default: itself).

        H(Δ) = (1/T)∮ v_a(t)/C_a · i(V_a(t), V_b(t + Δ/ω)) dt with v the receiver's PPV and i the coupler's
        current into the receiving node (:func:`hw_models.couplers.coupler_current`); for a transconductor
        i = sign g_m (V_src − V_DD/2) − g_out (V_rcv − V_DD/2). Offset (loading) and harmonics kept.
        ``coupler`` None: the preset bidirectional coupler. ``n_harmonics``: harmonics kept (default 12).
        ``beta_rad``: a ring coupler has no programmable phase (0 only).
        """
        from hw_models.ring_macro import ring_coupling_function

        if beta_rad:
            raise ValueError(f"beta_rad: a ring coupler has no programmable coupling phase (0 only), got {beta_rad!r}")
        n_harmonics = 12 if n_harmonics is None else n_harmonics

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



    # -- what a chip asks of its device ------------------------------------------------------------------------
    def at_node(self, node) -> "RingOscillator":
        """This ring's circuit drawn at ``node`` (:meth:`hw_models.technology.TechnologyNode.ring_params`: self-similar
        porting, f₀, power, D, PPV and mismatch re-derived by the circuit model); itself at its own node and
        supply (the model card as it is)."""
        p = node.ring_params(self.params)
        if p is self.params:
            return self
        return RingOscillator(p, name=f"ring-{node.node_nm:g}nm", sources={"technology": node.porting_rule()})

    def tap_nodes(self) -> int:
        """The ring's stages: a coupler may tap any node (phase-shifted by about π/n per stage)."""
        return int(self.params.n_stages)

    def matrix_coupling_function(self, coupler, *, sign: int = 1, source_node: int = 0):
        """H(Δ) [rad/s] of ``coupler`` into node 0 from the source tapped at ``source_node`` (the swapped coupler
        carries the sign)."""
        _sign(sign)
        return self.coupling_function(coupler, source_node=source_node)

    def area_um2(self, node, trim_bits: int | None, *, latch_node=None) -> tuple[float, str]:
        """n_stages × (inverter + C_load / MOS-cap density) + trim DAC + injection switch at ``node`` [µm²] (the
        DAC's latches at ``latch_node``, default ``node``; :func:`hw_models.layout.ring_area_um2`), with this
        ring's own stages and load."""
        n, c = int(self.params.n_stages), float(self.params.c_load_f)
        return (layout.ring_area_um2(n, c, trim_bits=trim_bits, node=node, latch_node=latch_node),
                _ring_area_source(n, c, trim_bits))

    def sizing_check(self, node_nm: float, *, warn: bool = True, stacklevel: int = 2) -> str | None:
        """A ring sized below the model card's 65 nm is the level-1 long-channel card shrunk self-similarly (no
        model card exists there, and the square law is outside its long-channel range): stated and warned. At
        or above the card's node (up to the technology fits' 180 nm) the sizing is inside the model."""
        from hw_models.presets import cmos_65nm_ring
        from hw_models.validity import DeviceSizingWarning

        card_nm = round(cmos_65nm_ring().l_n_m * 1e9, 6)
        if float(node_nm) >= card_nm:
            return None
        msg = (f"device_node_nm = {float(node_nm):g} nm sizes the ring below its {card_nm:g} nm model card: the "
               f"level-1 (long-channel square-law) card is ported by self-similar scaling "
               f"(hw_models.technology.TechnologyNode.ring_params), an extrapolation of f0, power, phase noise and "
               f"mismatch; device_node_nm >= {card_nm:g} keeps the card's devices")
        if warn:
            import warnings

            warnings.warn(msg, DeviceSizingWarning, stacklevel=stacklevel + 1)
        return msg

    def coupler_static_power(self, one_way: bool, node=None) -> tuple[float, str]:
        """Static dissipation of this ring's coupler for the matrix (:meth:`coupler`) at full scale [W]
        (bidirectional: at Δ = π/2), cached on disk (:mod:`hw_models.derived_cache`: a limit cycle takes
        seconds); ``node`` is unused (the ring is already drawn at its node)."""
        from hw_models.derived_cache import cached_scalar

        c = self.coupler(one_way)
        p = cached_scalar(f"ring-coupler:{c!r}:{self.params!r}", lambda: c.power(self))
        return p, (f"hw_models {type(c).__name__}.power(device) of the chip's "
                   f"{'one-way' if one_way else 'symmetric'} coupler" + _FULL_SCALE)

    def injection_driver(self, strength_rad_s: float) -> dict:
        """The sinusoidal current I = K C / |V₁| that locks this ring at K through node 0, and its class-B
        driver's supply power (:func:`hw_models.injection.ring_injection_current`)."""
        from hw_models.injection import ring_injection_current

        return ring_injection_current(self.params, strength_rad_s)

    def drift_model(self) -> str:
        return ("circuit limit cycle with ngspice's level-1 temperature law (hw_models.pvt); common mode only, "
                "differential drift of mismatched devices not modelled")

    def operating_point_check(self, kappa_over_f0: float, fan_in: int, metric: str, *, warn: bool = True,
                              stacklevel: int = 2) -> dict:
        """The ring macromodel's measured validity map (:func:`hw_models.validity.check_operating_point`)."""
        from hw_models.validity import check_operating_point

        return check_operating_point(kappa_over_f0, fan_in, metric, warn=warn, stacklevel=stacklevel + 1)

    # -- the device report ----------------------------------------------------------------------------------------
    def at_temperature(self, temperature_k: float) -> "RingOscillator":
        """The circuit with KP and V_TO at T by ngspice's level-1 law and its thermal noise at T
        (:func:`hw_models.pvt.ring_at_temperature`), so f₀, the PPV, D, power and amplitude all belong to T."""
        from hw_models.devices.registry import device_for
        from hw_models.pvt import ring_at_temperature

        return device_for(ring_at_temperature(self.params, temperature_k))

    def flicker_phase_coefficient(self) -> float:
        """A [rad²/s²] of the flicker current noise through the PPV's cycle average (:mod:`hw_models.flicker`,
        the 65 nm flicker preset, corner assumed 1 MHz)."""
        from hw_models.flicker import cmos_65nm_flicker, ring_flicker_coefficient

        return ring_flicker_coefficient(self.params, cmos_65nm_flicker())["A_rad2_per_s2"]

    def report_figures(self, temperature_k: float) -> dict:
        from hw_models import pvt
        from hw_models.flicker import cmos_65nm_flicker, ring_flicker_coefficient

        T = float(temperature_k)
        dev, fl = self.at_temperature(T), cmos_65nm_flicker()
        lc = dev.limit_cycle()
        return {
            "df0_dT_hz_per_k": pvt.ring_df0_dT(self.params, T), "df0_dvdd_hz_per_v": pvt.ring_df0_dvdd(self.params, T),
            "k_vt_v_per_k": pvt.vt_temperature_coefficient(self.params, T), "flicker_corner_hz": fl.corner_hz,
            "phase_noise_1_f3_corner_hz": ring_flicker_coefficient(dev.params, fl)["corner_1_f3_hz"],
            "amplitude_v_pp": float(lc.x[:, 0].max() - lc.x[:, 0].min()),
            "realism_models": "every figure at T: the circuit with ngspice's level-1 temperature law (hw_models.pvt) "
                              "and thermal noise at T; f0, power and amplitude from its limit cycle; phase noise: ISF "
                              "diffusion + flicker through the PPV's cycle average (hw_models.flicker, corner assumed "
                              "1 MHz)"}

    def waveform(self, n_cycles: float = 1.0) -> tuple:
        """Every node's voltage over one period of the limit cycle."""
        lc = self.limit_cycle()
        return (lc.theta / (2 * math.pi * self.frequency()), lc.x, "node voltage [V]",
                [f"node {k}" for k in range(lc.x.shape[1])])


class ChargedAsRing:
    """Mixin for a device with no layout or coupler circuit of its own (the ideal oscillator): its cell and its
    couplers are charged as the 65 nm card's ring at the node it is drawn at (assumed, said in every source)."""

    def area_um2(self, node, trim_bits: int | None, *, latch_node=None) -> tuple[float, str]:
        """The card's n_stages × (inverter + its load carried by the node's capacitance scaling / MOS-cap density)
        + trim DAC + injection switch at ``node`` [µm²]."""
        from hw_models.presets import cmos_65nm_ring
        from hw_models.technology import REFERENCE_NODE

        card = cmos_65nm_ring()
        c_l = node.scale_capacitance(card.c_load_f, REFERENCE_NODE)
        a = layout.ring_area_um2(card.n_stages, c_l, trim_bits=trim_bits, node=node, latch_node=latch_node)
        return a, (f"{type(self).__name__} charged as the ring at the chip's node (assumed): "
                   + _ring_area_source(card.n_stages, c_l, trim_bits))

    def coupler_static_power(self, one_way: bool, node) -> tuple[float, str]:
        """The coupler of the same kind between two rings of the card drawn at ``node`` (assumed); bidirectional
        ones at Δ = π/2."""
        from hw_models.derived_cache import cached_scalar
        from hw_models.presets import cmos_65nm_ring

        ring = RingOscillator(cmos_65nm_ring(), name="cmos_65nm").at_node(node)
        c = ring.coupler(one_way=one_way)
        p = cached_scalar(f"ring-coupler:{c!r}:{ring.params!r}", lambda: c.power(ring))
        return p, (f"{type(self).__name__} charged as the {node.node_nm:g} nm ring's {type(c).__name__} (assumed): "
                   f"hw_models {type(c).__name__}.power(device)" + _FULL_SCALE)
