"""Energy terms of the analog-score mode (``[scores] mode = "analog"``; the chain: :mod:`mapping.backends.analog_scores`).

Per layer and pass, from the cells of :func:`mapping.compiler.resources.pass_events` (``rot_osc`` rotated
oscillators, ``mixers`` mixers, ``score_conv`` score conversions; decode with held keys adjusts them,
:mod:`mapping.energy.phase_memory`), every figure at the chip's node (:mod:`hw_models.technology`):

- ``score_oscillators_j``: rot_osc · [(P_osc + P_driver) t_inj + P_osc t_read] (written by injection, then running
  through the readout window the mixers average over);
- ``score_mixers_j``: mixers · C_det V² · 2 f₀ · t_read (a mixer's switching charge per half cycle, the detector
  figure of the phase readout, assumed);
- ``score_readout_j``: score_conv · FoM · 2^``scores.bits`` (one conversion per (query, key, head)) + 2 gate-DAC
  updates per rotated oscillator (the key gate on its amplitude, the query gate on its row's tail current),
  ½ (2^``gate_bits`` − 1) C_u V² each.

Charged elsewhere, on the same counts: ``clock_j`` (the reference clock to every rotated oscillator over injection
and window) and ``sram_j`` (``scores_j``: each score written by the ADC and read by the softmax; ``array_bus_j``:
its bits across the array bus) in :mod:`mapping.energy.chip_terms`. The digital q·key work (``score_flops``)
moves to the offloaded side (Amdahl). These are registered in the one registry of chip terms
(:data:`mapping.energy.terms.TERMS`).
"""

from __future__ import annotations

from . import constants as ec
from .terms import ChipTerm, at_node_note, dac_conversion_j, register_term, t_sw

__all__ = ["TERMS"]

TERMS = ("score_oscillators_j", "score_mixers_j", "score_readout_j")


def _analog(s, c) -> bool:
    return c.analog


def _e_conv(s, c) -> float:
    """One score conversion [J]: the node's ADC FoM × 2^bits."""
    return c.tech.adc_fom.value * 2**s.scores.adc_bits


def _report(s, c) -> dict:
    """``analog_score_noise``: the chain's predicted score error per layer (:func:`mapping.backends.analog_scores.
    score_error_model`, computed when the spec is built from a chip; None for a spec written by hand)."""
    return {"analog_score_noise": s.scores.noise} if c.analog else {}


register_term(ChipTerm(
    "score_oscillators_j",
    lambda s, c: c.events.rot_osc * (c.inj_power * c.t_inj + s.array.p_osc_w * t_sw(s, c)) / c.per,
    lambda s, c: "one rotated oscillator per (token, coordinate) at theta + omega t, query and key of its token, "
                 "injected and run through the readout window (as the value banks)",
    when=_analog, report=_report))
register_term(ChipTerm(
    "score_mixers_j",
    lambda s, c: c.events.mixers * c.tech.c_det * c.tech.vdd**2 * 2 * c.f0 * t_sw(s, c) / c.per,
    lambda s, c: f"one mixer per (query, key <= query, coordinate), gains g^q g^k as mixer gains, low-passed over "
                 f"{s.array.read_cycles:g} cycles: {ec.C_DETECTOR_F.source}" + at_node_note(c),
    when=_analog))
register_term(ChipTerm(
    "score_readout_j",
    lambda s, c: (c.events.score_conv * _e_conv(s, c)
                  + 2 * c.events.rot_osc * dac_conversion_j(s.scores.gate_bits, c.tech.c_unit, c.tech.vdd)) / c.per,
    lambda s, c: f"one {s.scores.adc_bits}-bit conversion per (query, key, head) of the summed mixer currents "
                 f"({_e_conv(s, c):.3g} J: {c.tech.adc_fom.source}) + 2 {s.scores.gate_bits}-bit gate-DAC updates per "
                 f"rotated oscillator ({ec.C_UNIT_SWITCH_F.source})" + at_node_note(c),
    when=_analog))
