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
  keys, plus the bus wires across the array (``sram_breakdown_j``); the weights and keys past the die's SRAM
  capacity at the off-chip memory's energy per bit (``offchip_j``), stationary weights at their local store's
  (:func:`mapping.energy.sram.sram_plan`);
- ``digital_periphery_j``: the attention's digital operations × ½ MAC energy at ``energy.digital_precision``
  and the chip's node, with its operand delivery and control (:func:`mapping.energy.constants.op_energy_j`);
- with analog scores (Kuramoto): ``score_oscillators_j``, ``score_mixers_j``, ``score_readout_j``
  (registered by :mod:`mapping.energy.analog_scores`); decode with held keys: ``held_keys_j`` (registered by
  :mod:`mapping.energy.phase_memory`, which also changes the decode pass's events);
- ``leakage_j`` (whole chip, not per layer): (die area but the SRAM's, with analog scores the score array's
  included, × leakage density at the node + the SRAM macros' standby leakage from CACTI 7) × latency per token
  (:mod:`mapping.energy.latency`, the score rounds included).

A term is a :class:`~mapping.energy.terms.ChipTerm` in the one registry :data:`~mapping.energy.terms.TERMS`;
another module adds one with :func:`~mapping.energy.terms.register_term` (its energy and its source as functions
of the spec and the typed pass context :class:`~mapping.energy.context.PassContext`, optionally the events and
report keys of its mode), and every report, table and plot picks it up by name.

Amdahl: the array replaces ``offloaded_flops`` of the chip's digital work; with the offloaded fraction f, no
array can make the chip more than ``amdahl_max_gain`` = 1 / (1 − f) times better than the same chip doing that
work digitally (``digital_only_chip_j`` at the same node: the periphery's dynamic energy for all the work, the
SRAM traffic, and the leakage of its own die, SRAM + periphery, over its own time, L (dig + off) / (2 macs
f_clk) per token; ``digital_only`` gives that area, latency and leakage). The bound holds term by term where the
chip's die holds its SRAM and periphery (every spec built from a chip): each term of the digital-only chip is at
most 1 / (1 − f) times the chip's matching term or a lower bound of it.
"""

from __future__ import annotations

from . import constants as ec
from .context import PassContext, PassEvents, layer_events, pass_context
from .ops import PHASES
from .spec import LAYER_ENERGY, ChipEnergySpec, LayerEnergyModel
from .terms import TERMS, ChipTerm, array_terms, at_node_note, register_term, t_sw

__all__ = ["ChipEnergySpec", "chip_energy_per_token", "chip_energy", "LAYER_ENERGY", "LayerEnergyModel", "PHASES",
           "ARRAY_TERMS", "array_terms", "TERMS", "ChipTerm", "register_term", "pass_context", "PassContext",
           "PassEvents", "layer_events"]


def _sram_parts(s: ChipEnergySpec, c: PassContext) -> dict:
    """J per token of one layer of every SRAM buffer's traffic."""
    per = c.per
    m = c.sram
    d = {"weights_j": m.w_bits_layer * (1 - m.w_off) * m.e_w / m.w_reuse,
         "keys_j": m.key_bits * (1 - m.key_off) * m.e_key,
         # the weights and keys past the die's SRAM capacity, read from off-chip memory (mapping.energy.sram)
         "offchip_j": (m.w_bits_layer * m.w_off / m.w_reuse + m.key_bits * m.key_off) * m.plan.e_offchip_bit,
         # the periphery writes A once, the array loader reads it for every (round, matrix) that programs tiles
         "a_into_array_j": (c.sram.a_bits + c.sram.a_loads) * c.sram.e_a / per,
         "phases_in_j": c.sram.th_bits * c.sram.e_ph / per,
         "phases_out_j": 2 * c.sram.out_bits * c.sram.e_ph / per,  # ADC writes, periphery reads
         "scores_j": 0.0,
         "array_bus_j": (c.sram.a_loads + c.sram.th_bits + c.sram.out_bits) * c.e_bus_bit / per}
    if c.analog:
        sc_bits = c.events.score_conv * s.scores.adc_bits
        d["scores_j"] = 2 * sc_bits * c.sram.e_a / per
        d["array_bus_j"] += sc_bits * c.e_bus_bit / per
    return d


for _t in (
    ChipTerm("oscillators_j", lambda s, c: c.events.osc * s.array.p_osc_w * c.t_win / c.per,
             lambda s, c: f"N_osc x P_osc x (settle {s.array.settle_cycles:g} + readout {s.array.read_cycles:g} "
                          f"cycles) at f0 = "
                          f"{c.f0:.3g} Hz; P_osc = {s.array.p_osc_w:.3g} W: {s.sources.get('p_osc_w', 'assumed')}"),
    ChipTerm("injection_j", lambda s, c: c.events.osc * c.inj_power * c.t_inj / c.per,
             lambda s, c: (s.sources.get("injection", "assumed") + "; in every use of a tile") if c.events.inject
             else "not used: SSA cells start free-running (the locked state and the drift average do not depend "
                  "on the initial phases)"),
    ChipTerm("static_coupler_j", lambda s, c: c.events.coup * s.array.p_coupler_w * c.t_coupled / c.per,
             lambda s, c: f"N_couplers x {s.array.p_coupler_w:.3g} W x "
                          + ("settle window (couplers open for the readout, mapping.periphery.readout)"
                             if c.layer.couplers_open_for_readout else "settle + averaging window")
                          + f": {s.sources.get('p_coupler_w', 'assumed')}"),
    ChipTerm("coupler_programming_j",
             lambda s, c: (c.events.coup * s.schedule.program_fraction * s.array.coupler_bits * s.array.e_bit_write_j
                           / c.per),
             lambda s, c: f"N_couplers x {s.schedule.program_fraction:.3g} (units whose tile takes a new matrix; "
                          f"{s.sources.get('schedule', 'spatial')}) x {s.array.coupler_bits} bits x "
                          f"{s.array.e_bit_write_j:.3g} "
                          f"J/bit: {s.sources.get('e_bit_write_j', 'assumed')}" + at_node_note(c)),
    ChipTerm("dac_j",
             lambda s, c: (c.events.coup * s.schedule.program_fraction * c.tech.e_dac_coupler
                           + c.gain_updates * c.tech.e_dac_gain)
             / c.per,
             lambda s, c: f"coupler ({s.array.coupler_bits}-bit, with the programming) and {c.layer.pass_dacs} "
                          f"({s.array.gain_bits}-bit, every use"
                          f"{', reference-bank units reset to unity' if s.schedule.reference_gain_updates else ''}) "
                          f"DACs, "
                          f"1/2 (2^b - 1) C_u V^2 per update, settling {c.tech.t_dac * 1e9:.3g} ns: "
                          f"{ec.C_UNIT_SWITCH_F.source}; {ec.R_DAC_DRIVER_OHM.source}" + at_node_note(c)),
    ChipTerm("clock_j",
             lambda s, c: (c.sinks * c.c_sink * c.tech.vdd**2 * c.f0 * (c.t_inj + c.t_win)
                           + (c.events.rot_osc * c.c_sink * c.tech.vdd**2 * c.f0 * (c.t_inj + t_sw(s, c))
                              if c.analog else 0.0)) / c.per,
             lambda s, c: f"reference clock to {c.sinks:.3g} sinks per layer-pass, (2 x pitch "
                          f"{c.pitch_m * 1e6:.3g} um x {c.tech.c_wire * 1e9:.3g} fF/um + "
                          f"{c.tech.c_sink_load * 1e15:.3g}"
                          f" fF) V^2 f0 over injection + window: {ec.C_WIRE_F_PER_M.source}; "
                          f"{ec.CLOCK_TREE_FACTOR.source}; {ec.C_CLOCK_SINK_F.source}" + at_node_note(c)),
    ChipTerm("phase_detector_j",
             lambda s, c: c.channels * c.tech.c_det * c.tech.vdd**2 * 2 * c.f0 * c.t_read / c.per,
             lambda s, c: f"2 channels per phase, C_det V^2 x 2 f0 x readout window: {ec.C_DETECTOR_F.source}"
                          + at_node_note(c)),
    ChipTerm("readout_j", lambda s, c: c.conversions * c.tech.e_conv / c.per,
             lambda s, c: f"2 ADC conversions per phase"
                          f"{f' x {s.array.readout_samples:g} samples' if s.array.readout_samples > 1 else ''} "
                          f"x FoM x "
                          f"2^{s.array.readout_bits} ({c.tech.e_conv:.3g} J each): {c.tech.adc_fom.source}"),
    ChipTerm("sram_j", lambda s, c: sum(_sram_parts(s, c).values()),
             lambda s, c: f"weights (once per {c.sram.w_reuse} tokens"
                          + (", from the MACs' local stores" if c.sram.plan.local_bytes > 0 else "")
                          + f"), stored keys of the digital scores, coupling "
                          f"values into the array ({s.schedule.matrix_load_factor:.3g} reads per write), phases in "
                          f"({s.schedule.input_load_factor:.3g} reads per vector) and out, at {ec.SRAM_SOURCE}; plus "
                          f"the array "
                          f"bus ({c.e_bus_bit:.3g} J/bit over the {c.side_m * 1e3:.3g} mm array side, activity "
                          f"1/2)" + at_node_note(c) + f"; {c.sram.plan.source}", array=False),
    ChipTerm("digital_periphery_j", lambda s, c: c.dig_ops * c.tech.e_op,
             lambda s, c: f"{c.dig_ops:.4g} digital attention ops/token/layer x {c.tech.e_op:.3g} J "
                          f"({s.periphery.digital_precision} at {c.tech.node.node_nm:g} nm, {c.tech.vdd:g} V: "
                          f"{ec.PERIPHERY_OP_SOURCE}); the fidelity run computes this periphery at "
                          f"{s.periphery.digital_precision} too (mapping.periphery.precision)",
             array=False),
):
    register_term(_t)

# the modes' terms, after the array and periphery terms and before the whole-chip leakage
from . import analog_scores as _analog_scores  # noqa: E402,F401  (registers the score terms)
from . import phase_memory as _phase_memory  # noqa: E402,F401  (registers held_keys_j)

register_term(
    ChipTerm("leakage_j", lambda s, c: c.leak_w * c.latency_per_token_s,
             lambda s, c: f"(die {c.die_area_mm2:.4g} mm^2 but its SRAM's {c.sram_area_mm2:.4g} x leakage "
                          f"{c.tech.leak_density.value:.3g} W/mm^2 ({c.tech.leak_density.source}) + the SRAM macros' "
                          f"{c.sram_leak_w:.3g} W, CACTI 7) x latency {c.latency_per_token_s * 1e9:.4g} ns per token "
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
        spec = chip if T is None else chip.with_tokens(T)
        phase = PHASES[0] if phase is None else phase
        analog_scores = bool(analog_scores)
    else:
        spec = ChipEnergySpec.from_chip(chip, T)
        phase = chip.config.energy.phase if phase is None else phase
        if analog_scores is None:  # the chip's score stage (mapping.backends.scores)
            from ..backends.scores import score_stage

            analog_scores = score_stage(chip.config).on_array
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}")
    return chip_energy(spec, phase, analog_scores)


def _memory_report(plan) -> dict:
    """Where the chip's buffers live (:class:`mapping.energy.sram.SramPlan`), for the report."""
    return {"weights": plan.weights, "sram_max_bytes": plan.capacity_bytes, "on_die_bytes": plan.on_die_bytes,
            "buffers_bytes": plan.total_bytes, "weights_bytes": plan.weights_bytes,
            "over_capacity_bytes": max(0.0, plan.on_die_bytes - plan.capacity_bytes),
            "offchip": plan.offchip,
            "offchip_bytes": dict(plan.offchip_bytes), "offchip_j_per_bit": plan.e_offchip_bit,
            "local_store_bytes": plan.local_macro_bytes, "local_j_per_bit": plan.e_local_bit,
            "sram_mm2": plan.area_mm2, "source": plan.source}


def chip_energy(s: ChipEnergySpec, phase: str, analog: bool) -> dict:
    """:func:`chip_energy_per_token` of a spec (``phase`` checked by the caller)."""
    analog = bool(analog and LAYER_ENERGY[s.shape.layer_kind].digital_scores)
    c = pass_context(s, phase, analog)
    L = s.shape.n_layers
    terms = [t for t in TERMS.values() if t.when is None or t.when(s, c)]
    b = {t.name: t.energy(s, c) * (L if t.per_layer else 1) for t in terms}
    sram_detail = {k: v * L for k, v in _sram_parts(s, c).items()}
    if not analog:
        sram_detail.pop("scores_j")
    dig_ops, off_ops, e_op = c.dig_ops, c.off_ops, c.tech.e_op
    total = sum(b.values())
    sram_common = b["sram_j"] - sram_detail["array_bus_j"]
    # the digital-only chip leaks too: its own die (SRAM + periphery, no arrays) over its own time, the periphery
    # doing the offloaded work as well (mapping.energy.latency's digital window with dig + off operations)
    dig_area = c.digital_area_mm2
    dig_latency = L * (dig_ops + off_ops) / (2 * s.periphery.macs * c.tech.f_clk)
    dig_leak = ((dig_area - c.sram_area_mm2) * c.tech.leak_density.value + c.sram_leak_w) * dig_latency
    digital_only = (dig_ops + off_ops) * e_op * L + sram_common + dig_leak
    f_off = off_ops / (dig_ops + off_ops)
    tl = c.timeline
    out = {"energy_per_token_chip_j": total, "breakdown": b, "sram_breakdown_j": sram_detail,
           "digital_only_chip_j": digital_only,
           "digital_only": {"area_mm2": dig_area, "latency_per_token_s": dig_latency, "leakage_j": dig_leak},
           "offloaded_fraction": f_off,
           "amdahl_max_gain": 1.0 / (1.0 - f_off), "array_gain": digital_only / total,
           "ops": {"chip_digital": dig_ops * L, "offloaded": off_ops * L},
           "timeline_s": {k: v for k, v in tl.items() if k != "sources"}, "timeline_sources": tl["sources"],
           "latency_per_token_s": c.latency_per_token_s, "sram_bytes": c.sram.bytes,
           "leakage_w": c.leak_w, "memory": _memory_report(c.sram.plan),
           "node": {"node_nm": c.tech.node.node_nm, "flavor": c.tech.node.flavor, "vdd_v": c.tech.vdd},
           "phase": phase, "analog_scores": analog, "tokens_per_sequence": s.shape.T, "scope": "attention layers only"}
    for t in TERMS.values():
        if t.report is not None:
            out.update(t.report(s, c))
    out["sources"] = {t.name: t.source(s, c) for t in terms}
    return out
