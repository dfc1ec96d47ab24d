"""The chip's energy per token: a sum of named terms, each with its source (DESIGN §5.5, §5.7).

Everything is per token, in one of two phases: **prefill** (the T tokens of a sequence at once; a sequence's
arrays are programmed once and amortised over its T tokens) and **decode** (one new token at position t
against the stored phases of the t − 1 earlier ones, averaged over t = 1..T). The cells and events of a pass
come from the one resource count (:func:`mapping.compiler.resources.pass_events`), the reuse of the physical
array from the schedule (:class:`mapping.energy.spec.ChipEnergySpec`: programs, SRAM reloads, rounds), the
constants from :mod:`mapping.energy.constants` carried to the chip's node by :mod:`hw_models.technology`,
device numbers from :mod:`hw_models` (:mod:`mapping.energy.device_power`, the device at the node).

Terms (:data:`TERMS`, in this order; per layer and summed over layers unless said):

- ``oscillators_j``: N_osc · P_osc · (τ_s + t_read);
- ``injection_j``: phase writing by injection locking, N_osc · (P_osc + P_driver) · t_inj, in every use of a
  tile (:mod:`mapping.periphery.injection`); SSA cells start free-running and write no phases;
- ``static_coupler_j``: N_couplers · P_coupler · the coupled time (Kuramoto: τ_s, the couplers open for the
  readout window; SSA: τ_s + averaging window), every coupler at full scale (an upper estimate);
- ``coupler_programming_j``: coupler-register bits written × E_bit (a latch write), for every unit whose tile
  takes a new coupling matrix (a tile that keeps its matrix for the next unit is not rewritten);
- ``dac_j``: the binary-weighted coupler DACs (with the programming) and the DACs updated per use (receive
  gains, also reset to unity for a reference-bank unit on a shared tile; SSA: frequency DACs),
  ½ (2^b − 1) C_u V² per conversion;
- ``clock_j``: the reference clock to every injection and detector site, (2 × pitch × c_wire + C_sink) V² f₀
  over the window (pitch from :mod:`mapping.energy.area`);
- ``phase_detector_j``: XOR/mixer detectors, C_det V² · 2 f₀ · t_read per channel;
- ``readout_j``: ADC conversions, FoM · 2^bits per channel;
- ``sram_j``: SRAM traffic of the weights, of the coupling values into the array (once written, read for every
  round that programs them), of the phases in (read for every round that injects them) and out, of the stored
  keys, plus the bus wires across the array (``sram_breakdown_j``);
- ``digital_periphery_j``: the attention's digital operations × ½ MAC energy at ``energy.digital_precision``
  and the chip's node, with its operand delivery and control (:func:`mapping.energy.constants.op_energy_j`);
- with analog scores (Kuramoto): ``score_oscillators_j``, ``score_mixers_j``, ``score_readout_j``
  (registered by :mod:`mapping.energy.analog_scores`); decode with held keys: ``held_keys_j`` (registered by
  :mod:`mapping.energy.phase_memory`, which also changes the decode pass's events);
- ``leakage_j`` (whole chip, not per layer): die area (with analog scores, the score array's included) × leakage
  density at the node × latency per token (:mod:`mapping.energy.latency`, the score rounds included).

A term is a :class:`~mapping.energy.terms.ChipTerm` in the one registry :data:`~mapping.energy.terms.TERMS`;
another module adds one with :func:`~mapping.energy.terms.register_term` (its energy and its source as functions
of the spec and the pass context :func:`pass_context`, optionally the events and report keys of its mode), and
every report, table and plot picks it up by name.

Amdahl: the array replaces ``offloaded_flops`` of the chip's digital work; with the offloaded fraction f, no
array can make the chip more than ``amdahl_max_gain`` = 1 / (1 − f) times better than the same chip doing that
work digitally (``digital_only_chip_j`` at the same node: the periphery's dynamic energy for all the work, the
SRAM traffic, and the leakage of its own die, SRAM + periphery, over its own time, L (dig + off) / (2 macs
f_clk) per token; ``digital_only`` gives that area, latency and leakage). The bound holds term by term where the
chip's die holds its SRAM and periphery (every spec built from a chip): each term of the digital-only chip is at
most 1 / (1 − f) times the chip's matching term or a lower bound of it.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..compiler.resources import pass_events
from . import constants as ec
from .area import periphery_area_mm2, sram_area_mm2
from .latency import pass_timeline
from .ops import PHASES, attention_cost
from .spec import LAYER_ENERGY, ChipEnergySpec, LayerEnergyModel
from .sram import sram_buffers
from .terms import TERMS, ChipTerm, array_terms, at_node_note, dac_conversion_j, register_term, t_sw

__all__ = ["ChipEnergySpec", "chip_energy_per_token", "chip_energy", "LAYER_ENERGY", "LayerEnergyModel", "PHASES",
           "ARRAY_TERMS", "array_terms", "TERMS", "ChipTerm", "register_term", "pass_context"]


def _dac_settle_s(bits: int) -> float:
    """Settling to ½ LSB of the MSB gate bank at 65 nm: (b + 1) ln 2 · R · 2^(b−1) C_u."""
    return (bits + 1) * math.log(2) * ec.R_DAC_DRIVER_OHM.value * 2 ** (bits - 1) * ec.C_UNIT_SWITCH_F.value


def _events(s: ChipEnergySpec, phase: str) -> dict:
    """Cells and events of one layer per pass (:func:`mapping.compiler.resources.pass_events`)."""
    return pass_events(s.layer_kind, n_heads=s.n_heads, head_dim=s.head_dim, T=s.T, banks=s.banks, taps=s.taps,
                       prefill=phase == PHASES[0])


def _node_figures(s: ChipEnergySpec, c: dict) -> None:
    """The node's supply, converters, DACs, wires, clocks and leakage (:mod:`hw_models.technology`)."""
    tn = c["node"] = s.node
    V = c["V"] = tn.vdd
    c["c_unit"] = ec.at_node(ec.C_UNIT_SWITCH_F.value, tn, "capacitance")
    c["t_dac"] = ec.at_node(max(_dac_settle_s(s.coupler_bits), _dac_settle_s(s.gain_bits)), tn, "delay")
    c["t_dac_score"] = ec.at_node(_dac_settle_s(s.score_gate_bits), tn, "delay")  # the gate DACs
    c["e_dac_c"] = dac_conversion_j(s.coupler_bits, c["c_unit"], V)
    c["e_dac_g"] = dac_conversion_j(s.gain_bits, c["c_unit"], V)
    c["fom"] = tn.adc_fom()
    c["e_conv"] = c["fom"].value * 2**s.readout_bits
    c["e_op"] = ec.op_energy_j(s.digital_precision, tn)
    c["c_wire"] = tn.wire_capacitance().value
    c["c_sink_load"] = ec.at_node(ec.C_CLOCK_SINK_F.value, tn, "capacitance")
    c["c_det"] = ec.at_node(ec.C_DETECTOR_F.value, tn, "capacitance")
    c["f_clk"] = ec.at_node(ec.PERIPHERY_CLOCK_HZ.value, tn, "rate")
    c["adc_rate"] = ec.at_node(ec.ADC_RATE_HZ.value, tn, "rate")
    c["leak_density"] = tn.leakage_density()


def _sram_figures(s: ChipEnergySpec, c: dict, phase: str) -> None:
    """SRAM buffers, their sizes (bytes) -> energy per bit at the node, and the bits each pass moves."""
    tn, n, prefill, cost = c["node"], c["n"], c["prefill"], c["cost"]
    wbytes = ec.BYTES[s.digital_precision]
    c["w_bits_layer"] = cost["weights"] * wbytes * 8
    c["e_w"] = ec.sram_j_per_bit(cost["weights"] * wbytes * s.n_layers, tn)
    c["e_a"] = ec.sram_j_per_bit(s.n_heads * s.T * s.T * s.coupler_bits / 8, tn)
    c["e_ph"] = ec.sram_j_per_bit(max(1.0, prefill["read"]) * 2 * s.readout_bits / 8, tn)
    # stored keys of the digital scores (Kuramoto: key_u = g^k [cos, sin] of the rotated phase, 2k values per
    # token): read once per sequence in prefill (a score array reuses each key over the queries), for every
    # earlier token in decode; in the analog-score mode the same bits carry the key gates to the mixers (an
    # upper estimate: k gates would do)
    c["key_bits"] = 0.0
    if c["lk"].digital_scores:
        k_all = s.n_heads * s.head_dim
        c["key_bits"] = 2 * k_all * wbytes * 8 * n.get("keys_read", 1.0 if phase == PHASES[0] else (s.T + 1) / 2)
    c["e_key"] = ec.sram_j_per_bit(2 * s.n_heads * s.head_dim * s.T * wbytes, tn)
    c["a_bits"] = n["a_values"] * s.coupler_bits  # one coupling matrix per head
    c["a_loads"] = c["a_bits"] * s.matrix_load_factor  # read once per (round, matrix) that programs tiles
    c["th_bits"] = n["theta_in"] * s.readout_bits * s.input_load_factor  # read once per (round, input)
    c["out_bits"] = c["conversions"] * s.readout_bits
    c["w_reuse"] = s.batch * (c["per"] if phase == PHASES[0] else 1)
    if s.sram_bytes is None:
        c["sram_bytes"] = sram_buffers(s.kind, s.layer_kind, s.model_config, T=s.T, n_layers=s.n_layers,
                                       n_heads=s.n_heads, head_dim=s.head_dim, banks=s.banks, taps=s.taps,
                                       coupler_bits=s.coupler_bits, readout_bits=s.readout_bits,
                                       precision=s.digital_precision)["total"]
    else:
        c["sram_bytes"] = s.sram_bytes


def pass_context(s: ChipEnergySpec, phase: str, analog: bool) -> dict:
    """Times, per-event energies and counts of one pass that the terms share (the ``c`` of a
    :class:`ChipTerm`)."""
    f0 = s.f0_hz
    lk = LAYER_ENERGY[s.layer_kind]
    n = _events(s, phase)
    for t in TERMS.values():  # a mode's changes to the pass (e.g. held decode keys)
        if t.events is not None:
            n = t.events(s, phase, analog, n)
    prefill = _events(s, PHASES[0])
    c = {"f0": f0, "lk": lk, "n": n, "prefill": prefill, "per": n["per"], "analog": analog, "phase": phase,
         "t_win": (s.settle_cycles + s.read_cycles) / f0, "t_read": s.read_cycles / f0}
    _node_figures(s, c)
    # Kuramoto chips open the couplers at τ_s and read the free-running window (mapping.periphery.readout); SSA
    # cells stay coupled while they average
    c["t_coupled"] = s.settle_cycles / f0 if lk.couplers_open_for_readout else c["t_win"]
    c["t_inj"] = s.injection_s if n["inject"] else 0.0
    c["inj_power"] = s.p_osc_w + s.injection_driver_w
    # clock and bus wires take their lengths from the array a layer runs on (mapping.energy.area)
    osc = s.array_oscillators or max(1.0, prefill["osc"])
    c["pitch_m"] = math.sqrt(s.array_area_mm2 * 1e-6 / osc)
    c["c_sink"] = ec.CLOCK_TREE_FACTOR.value * c["pitch_m"] * c["c_wire"] + c["c_sink_load"]
    c["side_m"] = math.sqrt(s.array_area_mm2 * 1e-6)
    c["e_bus_bit"] = 0.5 * c["c_wire"] * c["side_m"] * c["V"]**2  # a bus line across the array, activity ½
    c["cost"] = cost = attention_cost(s.kind, s.model_config, s.T)
    dig_ops = cost["chip_digital_flops"]
    if lk.digital_coherence:  # ⟨cos(θ_i − θ_j)⟩ accumulated digitally from the phase samples
        dig_ops += s.n_heads * (s.T + 1) / 2 * 4 * s.readout_samples
    off_ops = cost["offloaded_flops"]
    if analog:
        dig_ops -= cost["score_flops"]
        off_ops += cost["score_flops"]
    c["dig_ops"], c["off_ops"] = dig_ops, off_ops
    c["channels"] = 2 * n["read"]
    c["conversions"] = c["channels"] * s.readout_samples
    c["sinks"] = n["osc"] + c["channels"]
    c["gain_updates"] = n["gain"] * (s.banks if s.reference_gain_updates else 1)
    _sram_figures(s, c, phase)
    c["timeline"] = pass_timeline(s, c)
    c["latency_per_token_s"] = c["timeline"]["latency_per_token_s"]
    # the digital die: SRAM + periphery (mapping.energy.area), what the digital-only comparison chip leaks on
    c["digital_area_mm2"] = (sram_area_mm2(c["sram_bytes"], c["node"])
                             + periphery_area_mm2(s.macs, s.digital_precision, c["node"]))
    die = s.die_area_mm2 if s.die_area_mm2 is not None else s.array_area_mm2 * s.n_layers + c["digital_area_mm2"]
    c["die_area_mm2"] = die + (s.score_array_mm2 if analog else 0.0)  # the score array's silicon leaks too
    return c


def _sram_parts(s: ChipEnergySpec, c: dict) -> dict:
    """J per token of one layer of every SRAM buffer's traffic."""
    per = c["per"]
    d = {"weights_j": c["w_bits_layer"] * c["e_w"] / c["w_reuse"],
         "keys_j": c["key_bits"] * c["e_key"],
         # the periphery writes A once, the array loader reads it for every (round, matrix) that programs tiles
         "a_into_array_j": (c["a_bits"] + c["a_loads"]) * c["e_a"] / per,
         "phases_in_j": c["th_bits"] * c["e_ph"] / per,
         "phases_out_j": 2 * c["out_bits"] * c["e_ph"] / per,  # ADC writes, periphery reads
         "scores_j": 0.0,
         "array_bus_j": (c["a_loads"] + c["th_bits"] + c["out_bits"]) * c["e_bus_bit"] / per}
    if c["analog"]:
        sc_bits = c["n"]["score_conv"] * s.score_adc_bits
        d["scores_j"] = 2 * sc_bits * c["e_a"] / per
        d["array_bus_j"] += sc_bits * c["e_bus_bit"] / per
    return d


for _t in (
    ChipTerm("oscillators_j", lambda s, c: c["n"]["osc"] * s.p_osc_w * c["t_win"] / c["per"],
             lambda s, c: f"N_osc x P_osc x (settle {s.settle_cycles:g} + readout {s.read_cycles:g} cycles) at f0 = "
                          f"{c['f0']:.3g} Hz; P_osc = {s.p_osc_w:.3g} W: {s.sources.get('p_osc_w', 'assumed')}"),
    ChipTerm("injection_j", lambda s, c: c["n"]["osc"] * c["inj_power"] * c["t_inj"] / c["per"],
             lambda s, c: (s.sources.get("injection", "assumed") + "; in every use of a tile") if c["n"]["inject"]
             else "not used: SSA cells start free-running (the locked state and the drift average do not depend "
                  "on the initial phases)"),
    ChipTerm("static_coupler_j", lambda s, c: c["n"]["coup"] * s.p_coupler_w * c["t_coupled"] / c["per"],
             lambda s, c: f"N_couplers x {s.p_coupler_w:.3g} W x "
                          + ("settle window (couplers open for the readout, mapping.periphery.readout)"
                             if c["lk"].couplers_open_for_readout else "settle + averaging window")
                          + f": {s.sources.get('p_coupler_w', 'assumed')}"),
    ChipTerm("coupler_programming_j",
             lambda s, c: c["n"]["coup"] * s.program_fraction * s.coupler_bits * s.e_bit_write_j / c["per"],
             lambda s, c: f"N_couplers x {s.program_fraction:.3g} (units whose tile takes a new matrix; "
                          f"{s.sources.get('schedule', 'spatial')}) x {s.coupler_bits} bits x {s.e_bit_write_j:.3g} "
                          f"J/bit: {s.sources.get('e_bit_write_j', 'assumed')}" + at_node_note(c)),
    ChipTerm("dac_j",
             lambda s, c: (c["n"]["coup"] * s.program_fraction * c["e_dac_c"] + c["gain_updates"] * c["e_dac_g"])
             / c["per"],
             lambda s, c: f"coupler ({s.coupler_bits}-bit, with the programming) and {c['lk'].pass_dacs} "
                          f"({s.gain_bits}-bit, every use"
                          f"{', reference-bank units reset to unity' if s.reference_gain_updates else ''}) DACs, "
                          f"1/2 (2^b - 1) C_u V^2 per update, settling {c['t_dac'] * 1e9:.3g} ns: "
                          f"{ec.C_UNIT_SWITCH_F.source}; {ec.R_DAC_DRIVER_OHM.source}" + at_node_note(c)),
    ChipTerm("clock_j",
             lambda s, c: (c["sinks"] * c["c_sink"] * c["V"]**2 * c["f0"] * (c["t_inj"] + c["t_win"])
                           + (c["n"]["rot_osc"] * c["c_sink"] * c["V"]**2 * c["f0"] * (c["t_inj"] + t_sw(s, c))
                              if c["analog"] else 0.0)) / c["per"],
             lambda s, c: f"reference clock to {c['sinks']:.3g} sinks per layer-pass, (2 x pitch "
                          f"{c['pitch_m'] * 1e6:.3g} um x {c['c_wire'] * 1e9:.3g} fF/um + {c['c_sink_load'] * 1e15:.3g}"
                          f" fF) V^2 f0 over injection + window: {ec.C_WIRE_F_PER_M.source}; "
                          f"{ec.CLOCK_TREE_FACTOR.source}; {ec.C_CLOCK_SINK_F.source}" + at_node_note(c)),
    ChipTerm("phase_detector_j",
             lambda s, c: c["channels"] * c["c_det"] * c["V"]**2 * 2 * c["f0"] * c["t_read"] / c["per"],
             lambda s, c: f"2 channels per phase, C_det V^2 x 2 f0 x readout window: {ec.C_DETECTOR_F.source}"
                          + at_node_note(c)),
    ChipTerm("readout_j", lambda s, c: c["conversions"] * c["e_conv"] / c["per"],
             lambda s, c: f"2 ADC conversions per phase"
                          f"{f' x {s.readout_samples:g} samples' if s.readout_samples > 1 else ''} x FoM x "
                          f"2^{s.readout_bits} ({c['e_conv']:.3g} J each): {c['fom'].source}"),
    ChipTerm("sram_j", lambda s, c: sum(_sram_parts(s, c).values()),
             lambda s, c: f"weights (once per {c['w_reuse']} tokens), stored keys of the digital scores, coupling "
                          f"values into the array ({s.matrix_load_factor:.3g} reads per write), phases in "
                          f"({s.input_load_factor:.3g} reads per vector) and out, at {ec.SRAM_SOURCE}; plus the array "
                          f"bus ({c['e_bus_bit']:.3g} J/bit over the {c['side_m'] * 1e3:.3g} mm array side, activity "
                          f"1/2)" + at_node_note(c), array=False),
    ChipTerm("digital_periphery_j", lambda s, c: c["dig_ops"] * c["e_op"],
             lambda s, c: f"{c['dig_ops']:.4g} digital attention ops/token/layer x {c['e_op']:.3g} J "
                          f"({s.digital_precision} at {c['node'].node_nm:g} nm, {c['V']:g} V: {ec.PERIPHERY_OP_SOURCE}); "
                          f"the fidelity "
                          f"run computes this periphery at {s.digital_precision} too (mapping.periphery.precision)",
             array=False),
):
    register_term(_t)

# the modes' terms, after the array and periphery terms and before the whole-chip leakage
from . import analog_scores as _analog_scores  # noqa: E402,F401  (registers the score terms)
from . import phase_memory as _phase_memory  # noqa: E402,F401  (registers held_keys_j)

register_term(
    ChipTerm("leakage_j", lambda s, c: c["die_area_mm2"] * c["leak_density"].value * c["latency_per_token_s"],
             lambda s, c: f"die {c['die_area_mm2']:.4g} mm^2 x leakage {c['leak_density'].value:.3g} W/mm^2 "
                          f"({c['leak_density'].source}) x latency {c['latency_per_token_s'] * 1e9:.4g} ns per token "
                          f"(mapping.energy.latency)", array=False, per_layer=False))


ARRAY_TERMS = array_terms()
"""Names of the array's terms (those of :data:`TERMS` registered with ``array=True`` when this module loaded)."""


def chip_energy_per_token(chip, T: int | None = None, *, phase: str | None = None,
                          analog_scores: bool | None = None) -> dict:
    """Chip energy per token [J] of the attention layers, with its breakdown and a source for every term.

    Parameters
    ----------
    chip : Chip or ChipEnergySpec
    T : int, optional
        Tokens per sequence (default: the chip's context).
    phase : {'prefill', 'decode'}, optional
        Default: ``chip.config.energy.phase`` (``'prefill'`` for a spec).
    analog_scores : bool, optional
        Analog-score mode (Kuramoto only); default the chip's ``[scores]`` mode.

    Returns
    -------
    dict with ``energy_per_token_chip_j``, ``breakdown`` (J per term), ``sources`` (same keys),
    ``digital_only_chip_j`` (the same chip with the offloaded work done by its digital periphery, its leakage
    included) and ``digital_only`` (its area, latency and leakage),
    ``offloaded_fraction``, ``amdahl_max_gain``, ``array_gain``, ``ops`` (per token), ``timeline_s``,
    ``latency_per_token_s``, ``sram_bytes``, ``leakage_w``, ``analog_score_noise`` (analog mode), ``phase_memory``
    (decode), ``phase``,
    ``tokens_per_sequence``, ``scope``.
    """
    if isinstance(chip, ChipEnergySpec):
        spec = chip if T is None else replace(chip, T=int(T))
        phase = PHASES[0] if phase is None else phase
        analog_scores = bool(analog_scores)
    else:
        spec = ChipEnergySpec.from_chip(chip, T)
        phase = chip.config.energy.phase if phase is None else phase
        analog_scores = chip.config.scores.analog if analog_scores is None else analog_scores
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}")
    return chip_energy(spec, phase, analog_scores)


def chip_energy(s: ChipEnergySpec, phase: str, analog: bool) -> dict:
    """:func:`chip_energy_per_token` of a spec (``phase`` checked by the caller)."""
    analog = bool(analog and LAYER_ENERGY[s.layer_kind].digital_scores)
    c = pass_context(s, phase, analog)
    L = s.n_layers
    terms = [t for t in TERMS.values() if t.when is None or t.when(s, c)]
    b = {t.name: t.energy(s, c) * (L if t.per_layer else 1) for t in terms}
    sram_detail = {k: v * L for k, v in _sram_parts(s, c).items()}
    if not analog:
        sram_detail.pop("scores_j")
    dig_ops, off_ops, e_op = c["dig_ops"], c["off_ops"], c["e_op"]
    total = sum(b.values())
    sram_common = b["sram_j"] - sram_detail["array_bus_j"]
    # the digital-only chip leaks too: its own die (SRAM + periphery, no arrays) over its own time, the periphery
    # doing the offloaded work as well (mapping.energy.latency's digital window with dig + off operations)
    dig_area = c["digital_area_mm2"]
    dig_latency = L * (dig_ops + off_ops) / (2 * s.macs * c["f_clk"])
    dig_leak = dig_area * c["leak_density"].value * dig_latency
    digital_only = (dig_ops + off_ops) * e_op * L + sram_common + dig_leak
    f_off = off_ops / (dig_ops + off_ops)
    tl = c["timeline"]
    out = {"energy_per_token_chip_j": total, "breakdown": b, "sram_breakdown_j": sram_detail,
           "digital_only_chip_j": digital_only,
           "digital_only": {"area_mm2": dig_area, "latency_per_token_s": dig_latency, "leakage_j": dig_leak},
           "offloaded_fraction": f_off,
           "amdahl_max_gain": 1.0 / (1.0 - f_off), "array_gain": digital_only / total,
           "ops": {"chip_digital": dig_ops * L, "offloaded": off_ops * L},
           "timeline_s": {k: v for k, v in tl.items() if k != "sources"}, "timeline_sources": tl["sources"],
           "latency_per_token_s": c["latency_per_token_s"], "sram_bytes": c["sram_bytes"],
           "leakage_w": c["die_area_mm2"] * c["leak_density"].value,
           "node": {"node_nm": c["node"].node_nm, "flavor": c["node"].flavor, "vdd_v": c["V"]},
           "phase": phase, "analog_scores": analog, "tokens_per_sequence": s.T, "scope": "attention layers only"}
    for t in TERMS.values():
        if t.report is not None:
            out.update(t.report(s, c))
    out["sources"] = {t.name: t.source(s, c) for t in terms}
    return out
