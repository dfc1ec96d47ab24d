"""The pass context: what every chip term of one pass reads, typed and frozen (DESIGN §5.5).

:func:`pass_context` turns a :class:`~mapping.energy.spec.ChipEnergySpec` and a pass (phase, analog scores or
not) into a :class:`PassContext`, the ``c`` of every :class:`~mapping.energy.terms.ChipTerm`: the pass's cells
and events (:class:`PassEvents`, as the modes' ``events`` hooks change them), the node's per-event figures
(:class:`TechFigures`), the SRAM traffic (:class:`SramTraffic`), the windows, wire lengths and operation counts,
the timeline (:func:`mapping.energy.latency.pass_timeline`) and the die's area. A term that needs a new figure
adds a field to the group of its concept (with its unit) and computes it here, once per pass.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from ..compiler.resources import pass_events
from . import constants as ec
from .area import periphery_area_mm2
from .latency import pass_timeline
from .ops import PHASES, attention_cost
from .spec import ChipEnergySpec, LayerEnergyModel
from .sram import sram_buffers, sram_plan
from .terms import TERMS, dac_conversion_j

__all__ = ["PassEvents", "TechFigures", "SramTraffic", "PassContext", "pass_context", "layer_events"]


@dataclass(frozen=True, kw_only=True)
class PassEvents:
    """Cells and events of one layer per pass (:func:`mapping.compiler.resources.pass_events`), counts per pass.

    Attributes
    ----------
    osc, coup, read, gain : float
        Oscillators running, couplers, phases read, DACs updated.
    a_values, theta_in : float
        Coupler values written, phases written from SRAM.
    per : int
        Tokens sharing the pass (prefill: T; decode: 1).
    inject : bool
        The phases are written by injection.
    rot_osc, mixers, score_conv : float
        Analog-score cells (Kuramoto): rotated oscillators, mixers, score conversions; 0 for SSA layers.
    held, held_rot, hold_writes : float
        Decode with held keys (:mod:`mapping.energy.phase_memory`): key oscillators and rotated oscillators held
        over the inter-token time, and the new keys' hold writes; 0 otherwise.
    keys_read : float or None
        Tokens whose stored keys are read per pass; None: once per sequence in prefill, every earlier token in
        decode ((T + 1)/2 on average).
    accumulated : float
        Block increments the periphery adds per pass under the blocked schedule (``[array] block``); 0 otherwise.
    """

    osc: float
    coup: float
    read: float
    gain: float
    a_values: float
    theta_in: float
    per: int
    inject: bool
    rot_osc: float = 0.0
    mixers: float = 0.0
    score_conv: float = 0.0
    held: float = 0.0
    held_rot: float = 0.0
    hold_writes: float = 0.0
    keys_read: float | None = None
    accumulated: float = 0.0


def layer_events(s: ChipEnergySpec, phase: str) -> PassEvents:
    """Cells and events of one layer of ``s`` per pass of ``phase`` (:func:`mapping.compiler.resources.pass_events`,
    before any mode changes them)."""
    sh = s.shape
    return PassEvents(**pass_events(sh.layer_kind, n_heads=sh.n_heads, head_dim=sh.head_dim, T=sh.T, banks=sh.banks,
                                    taps=sh.taps, prefill=phase == PHASES[0], block=s.schedule.block))


@dataclass(frozen=True, kw_only=True)
class TechFigures:
    """The node's supply, converters, DACs, wires, clocks and leakage (:mod:`hw_models.technology`), per event.

    Attributes
    ----------
    node : hw_models.technology.TechnologyNode
    vdd : float
        Supply [V].
    c_unit : float
        DAC unit capacitance [F].
    t_dac, t_dac_score : float
        Settling of the coupler/gain DACs and of the score gate DACs to ½ LSB [s].
    e_dac_coupler, e_dac_gain : float
        One coupler-DAC and one gain-DAC update [J].
    adc_fom : mapping.energy.constants.Figure
        The node's ADC figure of merit [J per conversion step].
    e_conv : float
        One phase conversion at ``readout_bits`` [J].
    e_op : float
        One digital operation at the periphery's precision [J].
    c_wire, c_sink_load, c_det : float
        Wire capacitance [F/m], a clock sink's load and a detector's switched capacitance [F].
    f_clk, adc_rate : float
        Periphery clock [Hz] and ADC conversion rate [S/s].
    leak_density : mapping.energy.constants.Figure
        Leakage power density [W/mm²].
    """

    node: Any
    vdd: float
    c_unit: float
    t_dac: float
    t_dac_score: float
    e_dac_coupler: float
    e_dac_gain: float
    adc_fom: Any
    e_conv: float
    e_op: float
    c_wire: float
    c_sink_load: float
    c_det: float
    f_clk: float
    adc_rate: float
    leak_density: Any


def _dac_settle_s(bits: int) -> float:
    """Settling to ½ LSB of the MSB gate bank at 65 nm: (b + 1) ln 2 · R · 2^(b−1) C_u."""
    return (bits + 1) * math.log(2) * ec.R_DAC_DRIVER_OHM.value * 2 ** (bits - 1) * ec.C_UNIT_SWITCH_F.value


def tech_figures(s: ChipEnergySpec) -> TechFigures:
    """The :class:`TechFigures` of a spec at its node."""
    tn, a = s.node, s.array
    V = tn.vdd
    c_unit = ec.at_node(ec.C_UNIT_SWITCH_F.value, tn, "capacitance")
    fom = tn.adc_fom()
    return TechFigures(
        node=tn, vdd=V, c_unit=c_unit,
        t_dac=ec.at_node(max(_dac_settle_s(a.coupler_bits), _dac_settle_s(a.gain_bits)), tn, "delay"),
        t_dac_score=ec.at_node(_dac_settle_s(s.scores.gate_bits), tn, "delay"),  # the gate DACs
        e_dac_coupler=dac_conversion_j(a.coupler_bits, c_unit, V), e_dac_gain=dac_conversion_j(a.gain_bits, c_unit, V),
        adc_fom=fom, e_conv=fom.value * 2**a.readout_bits, e_op=ec.op_energy_j(s.periphery.digital_precision, tn),
        c_wire=tn.wire_capacitance().value, c_sink_load=ec.at_node(ec.C_CLOCK_SINK_F.value, tn, "capacitance"),
        c_det=ec.at_node(ec.C_DETECTOR_F.value, tn, "capacitance"),
        f_clk=ec.at_node(ec.PERIPHERY_CLOCK_HZ.value, tn, "rate"), adc_rate=ec.at_node(ec.ADC_RATE_HZ.value, tn, "rate"),
        leak_density=tn.leakage_density())


@dataclass(frozen=True, kw_only=True)
class SramTraffic:
    """The SRAM of one pass: buffer sizes -> energy per bit at the node, and the bits each buffer moves (one layer).

    Attributes
    ----------
    bytes : float
        The chip's on-die SRAM [B] (:attr:`plan`'s ``on_die_bytes``).
    plan : mapping.energy.sram.SramPlan
        Where the buffers live: on the die (global SRAM, stationary weights' local stores) or off chip.
    w_off, key_off : float
        Fractions of the weights and of the stored keys held off chip, read at the plan's ``e_offchip_bit``.
    w_bits_layer : float
        Weight bits of one layer.
    w_reuse : float
        Tokens sharing one weight fetch (batch × the pass's tokens in prefill; batch in decode).
    e_w, e_a, e_ph, e_key : float
        Energy per bit [J] of the weight (stationary: one MAC's local store), coupling-value, phase and key
        buffers.
    key_bits : float
        Stored-key bits read per token (digital scores; 0 for SSA).
    a_bits, a_loads : float
        Coupling-value bits written by the periphery and read by the array loader per pass.
    th_bits, out_bits : float
        Phase bits read into the array and written by the ADCs per pass.
    """

    bytes: float
    plan: Any
    w_off: float
    key_off: float
    w_bits_layer: float
    w_reuse: float
    e_w: float
    e_a: float
    e_ph: float
    e_key: float
    key_bits: float
    a_bits: float
    a_loads: float
    th_bits: float
    out_bits: float


def _sram_traffic(s: ChipEnergySpec, lk: LayerEnergyModel, n: PassEvents, prefill: PassEvents, cost: dict,
                  conversions: float, per: int, phase: str) -> SramTraffic:
    """The :class:`SramTraffic` of one pass."""
    tn, sh = s.node, s.shape
    wbytes = ec.BYTES[s.periphery.digital_precision]
    # stored keys of the digital scores (Kuramoto: key_u = g^k [cos, sin] of the rotated phase, 2k values per
    # token): read once per sequence in prefill (a score array reuses each key over the queries), for every
    # earlier token in decode; in the analog-score mode the same bits carry the key gates to the mixers (an
    # upper estimate: k gates would do)
    key_bits = 0.0
    if lk.digital_scores:
        keys_read = n.keys_read if n.keys_read is not None else (1.0 if phase == PHASES[0] else (sh.T + 1) / 2)
        key_bits = 2 * (sh.n_heads * sh.head_dim) * wbytes * 8 * keys_read
    a_bits = n.a_values * s.array.coupler_bits  # one coupling matrix per head
    p = s.periphery
    buffers = sram_buffers(sh.kind, sh.layer_kind, sh.model_config, T=sh.T, n_layers=sh.n_layers, n_heads=sh.n_heads,
                           head_dim=sh.head_dim, banks=sh.banks, taps=sh.taps, coupler_bits=s.array.coupler_bits,
                           readout_bits=s.array.readout_bits, precision=p.digital_precision,
                           block=s.schedule.block, sequences=s.workload.batch)
    plan = sram_plan(buffers, tn, capacity_bytes=p.sram_max_bytes, weights=p.weights, macs=p.macs,
                     offchip=p.offchip, total_bytes=p.sram_bytes)
    off = plan.offchip_bytes
    return SramTraffic(
        bytes=plan.on_die_bytes, plan=plan,
        w_off=off["weights"] / buffers["weights"] if buffers["weights"] > 0 else 0.0,
        key_off=off["keys"] / buffers["keys"] if buffers["keys"] > 0 else 0.0,
        w_bits_layer=cost["weights"] * wbytes * 8,
        w_reuse=s.workload.batch * (per if phase == PHASES[0] else 1),
        e_w=plan.e_local_bit if plan.local_bytes > 0 else ec.sram_j_per_bit(cost["weights"] * wbytes * sh.n_layers, tn),
        # the coupling buffer's macro: h T × T values, under the blocked schedule h × (a query block's rows) × T
        e_a=ec.sram_j_per_bit(sh.n_heads * min(sh.T, s.schedule.block or sh.T) * sh.T * s.array.coupler_bits / 8, tn),
        e_ph=ec.sram_j_per_bit(max(1.0, buffers["phases_out"]), tn),
        e_key=ec.sram_j_per_bit(2 * sh.n_heads * sh.head_dim * sh.T * wbytes, tn),
        key_bits=key_bits, a_bits=a_bits,
        a_loads=a_bits * s.schedule.matrix_load_factor,  # read once per (round, matrix) that programs tiles
        th_bits=n.theta_in * s.array.readout_bits * s.schedule.input_load_factor,  # once per (round, input)
        out_bits=conversions * s.array.readout_bits)


@dataclass(frozen=True, kw_only=True)
class PassContext:
    """Times, per-event energies and counts of one pass that the terms share (the ``c`` of a
    :class:`~mapping.energy.terms.ChipTerm`). Times in s, energies in J, lengths in m, areas in mm².

    Attributes
    ----------
    phase : {'prefill', 'decode'}
    analog : bool
        The pass measures the scores on the analog-score stage.
    layer : LayerEnergyModel
        How the layer kind uses its array.
    events, prefill : PassEvents
        The pass's cells and events (as the modes change them) and the prefill pass's (the array's size).
    per : int
        Tokens sharing the pass.
    f0 : float
        Oscillator frequency [Hz].
    t_win, t_read, t_coupled, t_inj : float
        Settle + readout window, readout window, coupled time (Kuramoto: τ_s; SSA: the whole window), injection
        time per write (0 when nothing is injected).
    inj_power : float
        Oscillator + injection-driver power during a write [W].
    tech : TechFigures
    pitch_m, side_m : float
        Oscillator pitch and side of the array a layer runs on.
    c_sink : float
        One clock sink: H-tree wire over the pitch plus its load [F].
    e_bus_bit : float
        One bit across the array bus (activity ½) [J].
    cost : dict
        The attention's operation counts per token and layer (:func:`mapping.energy.ops.attention_cost`).
    dig_ops, off_ops : float
        Operations per token and layer left to the periphery and offloaded to the array.
    channels, conversions, sinks, gain_updates : float
        Detector channels, ADC conversions, clock sinks and gain-DAC updates per pass.
    sram : SramTraffic
    timeline : dict
        The pass's windows in order (:func:`mapping.energy.latency.pass_timeline`).
    latency_per_token_s : float
    digital_area_mm2, die_area_mm2 : float
        The digital die (SRAM + periphery, what the digital-only comparison chip leaks on) and the leaking die
        (the score array's silicon included in an analog pass).
    sram_area_mm2, sram_leak_w : float
        The SRAM macros' area and standby leakage (CACTI 7, :mod:`mapping.energy.sram`): the SRAM leaks by
        CACTI, the rest of the die at the logic leakage density (:attr:`leak_w`).
    """

    phase: str
    analog: bool
    layer: LayerEnergyModel
    events: PassEvents
    prefill: PassEvents
    per: int
    f0: float
    t_win: float
    t_read: float
    t_coupled: float
    t_inj: float
    inj_power: float
    tech: TechFigures
    pitch_m: float
    side_m: float
    c_sink: float
    e_bus_bit: float
    cost: dict
    dig_ops: float
    off_ops: float
    channels: float
    conversions: float
    sinks: float
    gain_updates: float
    sram: SramTraffic
    digital_area_mm2: float
    die_area_mm2: float
    sram_area_mm2: float
    sram_leak_w: float
    timeline: dict | None = None
    latency_per_token_s: float = math.nan

    @property
    def leak_w(self) -> float:
        """Standby leakage of the die [W]: its logic (the die but the SRAM) at the node's density, its SRAM macros
        at CACTI 7's figure."""
        return max(0.0, self.die_area_mm2 - self.sram_area_mm2) * self.tech.leak_density.value + self.sram_leak_w


def pass_context(s: ChipEnergySpec, phase: str, analog: bool) -> PassContext:
    """The :class:`PassContext` of one pass of ``s`` (``analog``: with analog scores)."""
    f0, lk, sh = s.array.f0_hz, s.layer, s.shape
    n = layer_events(s, phase)
    for t in TERMS.values():  # a mode's changes to the pass (e.g. held decode keys)
        if t.events is not None:
            n = t.events(s, phase, analog, n)
    prefill = layer_events(s, PHASES[0])
    tech = tech_figures(s)
    t_win = (s.array.settle_cycles + s.array.read_cycles) / f0
    # clock and bus wires take their lengths from the array a layer runs on (mapping.energy.area)
    osc = s.array.oscillators or max(1.0, prefill.osc)
    pitch = math.sqrt(s.array.area_mm2 * 1e-6 / osc)
    side = math.sqrt(s.array.area_mm2 * 1e-6)
    cost = attention_cost(sh.kind, sh.model_config, sh.T)
    dig_ops = cost["chip_digital_flops"]
    if lk.digital_coherence:  # ⟨cos(θ_i − θ_j)⟩ accumulated digitally from the phase samples
        dig_ops += sh.n_heads * (sh.T + 1) / 2 * 4 * s.array.readout_samples
    off_ops = cost["offloaded_flops"]
    dig_ops += n.accumulated / n.per  # the blocked schedule's sums of block increments
    if analog:
        dig_ops -= cost["score_flops"]
        off_ops += cost["score_flops"]
    channels = 2 * n.read
    conversions = channels * s.array.readout_samples
    sram = _sram_traffic(s, lk, n, prefill, cost, conversions, n.per, phase)
    # the digital die: SRAM + periphery (mapping.energy.area), what the digital-only comparison chip leaks on
    sram_area = sram.plan.area_mm2  # the global SRAM and the stationary weights' local stores (CACTI 7)
    digital_area = sram_area + periphery_area_mm2(s.periphery.macs, s.periphery.digital_precision, tech.node)
    die = s.periphery.die_area_mm2 if s.periphery.die_area_mm2 is not None else \
        s.array.area_mm2 * sh.n_layers + digital_area
    c = PassContext(
        phase=phase, analog=analog, layer=lk, events=n, prefill=prefill, per=n.per, f0=f0, t_win=t_win,
        t_read=s.array.read_cycles / f0,
        # Kuramoto chips open the couplers at τ_s and read the free-running window (mapping.periphery.readout); SSA
        # cells stay coupled while they average
        t_coupled=s.array.settle_cycles / f0 if lk.couplers_open_for_readout else t_win,
        t_inj=s.array.injection_s if n.inject else 0.0, inj_power=s.array.p_osc_w + s.array.injection_driver_w,
        tech=tech, pitch_m=pitch, side_m=side,
        c_sink=ec.CLOCK_TREE_FACTOR.value * pitch * tech.c_wire + tech.c_sink_load,
        e_bus_bit=0.5 * tech.c_wire * side * tech.vdd**2,  # a bus line across the array, activity ½
        cost=cost, dig_ops=dig_ops, off_ops=off_ops, channels=channels, conversions=conversions,
        sinks=n.osc + channels, gain_updates=n.gain * (sh.banks if s.schedule.reference_gain_updates else 1),
        sram=sram, digital_area_mm2=digital_area, sram_area_mm2=sram_area,
        sram_leak_w=sram.plan.leakage_w,
        die_area_mm2=die + (s.scores.array_mm2 if analog else 0.0))  # the score array's silicon leaks too
    timeline = pass_timeline(s, c)
    return dataclasses.replace(c, timeline=timeline, latency_per_token_s=timeline["latency_per_token_s"])
