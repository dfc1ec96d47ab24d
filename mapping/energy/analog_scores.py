"""Energy terms of the analog-score mode (``[scores] mode = "analog"``; the chain: :mod:`mapping.backends.analog_scores`).

Per layer and pass, from the cells of :func:`mapping.compiler.resources.pass_events` (``rot_osc`` rotated
oscillators, ``mixers`` mixers, ``score_conv`` score conversions; decode with held keys adjusts them,
:mod:`mapping.energy.phase_memory`):

- ``score_oscillators_j``: rot_osc · [(P_osc + P_driver) t_inj + P_osc t_read] (written by injection, then running
  through the readout window the mixers average over);
- ``score_mixers_j``: mixers · C_det V² · 2 f₀ · t_read (a mixer's switching charge per half cycle, the detector
  figure of the phase readout, assumed);
- ``score_readout_j``: score_conv · FoM · 2^``scores.bits`` (one conversion per (query, key, head)) + 2 gate-DAC
  updates per rotated oscillator (the key gate on its amplitude, the query gate on its row's tail current),
  ½ (2^``gate_bits`` − 1) C_u V² each;
- added to ``clock_j``: the reference clock to every rotated oscillator over injection and window;
- added to ``sram_j`` (``scores_j``, ``array_bus_j``): each score written by the ADC and read by the softmax,
  and its bits across the array bus.

The digital q·key work (``score_flops``) moves to the offloaded side (Amdahl).
"""

from __future__ import annotations

from . import constants as ec

__all__ = ["TERMS", "events", "add_terms", "sources", "report"]

TERMS = ("score_oscillators_j", "score_mixers_j", "score_readout_j")


def events(s, phase: str, analog: bool, n: dict) -> dict:
    """The pass's events (unchanged: the analog-score cells are counted by pass_events)."""
    return n


def _gate_dac_j(bits: int, vdd: float) -> float:
    """One gate-DAC update, ½ (2^b − 1) C_u V² (the coupler DACs' rule)."""
    return 0.5 * (2**bits - 1) * ec.C_UNIT_SWITCH_F.value * vdd**2


def add_terms(s, c: dict, b: dict, sram: dict) -> None:
    """Add one layer's analog-score terms to the breakdown ``b`` and the SRAM terms ``sram`` [J/token] (called
    once per layer, in the chip's layer loop)."""
    if not c["analog"]:
        return
    n, per, V, f0 = c["n"], c["per"], c["V"], c["f0"]
    t_sw, t_inj = c["t_read"], c["t_inj"]  # the score mixers average over the readout window
    e_conv = ec.ADC_FOM_J_PER_STEP.value * 2**s.score_adc_bits
    for key in TERMS:
        b.setdefault(key, 0.0)
    b["score_oscillators_j"] += n["rot_osc"] * (c["inj_power"] * t_inj + s.p_osc_w * t_sw) / per
    b["score_mixers_j"] += n["mixers"] * ec.C_DETECTOR_F.value * V**2 * 2 * f0 * t_sw / per
    b["score_readout_j"] += (n["score_conv"] * e_conv + 2 * n["rot_osc"] * _gate_dac_j(s.score_gate_bits, V)) / per
    b["clock_j"] += n["rot_osc"] * c["c_sink"] * V**2 * f0 * (t_inj + t_sw) / per
    sc_bits = n["score_conv"] * s.score_adc_bits
    sram["scores_j"] += 2 * sc_bits * c["e_a"] / per
    sram["array_bus_j"] += sc_bits * c["e_bus_bit"] / per


def sources(s, c: dict) -> dict:
    """The sources of the analog-score terms."""
    if not c["analog"]:
        return {}
    e_conv = ec.ADC_FOM_J_PER_STEP.value * 2**s.score_adc_bits
    return {
        "score_oscillators_j": "one rotated oscillator per (token, coordinate) at theta + omega t, query and key "
                               "of its token, injected and run through the readout window (as the value banks)",
        "score_mixers_j": f"one mixer per (query, key <= query, coordinate), gains g^q g^k as mixer gains, low-passed "
                          f"over {s.read_cycles:g} cycles: {ec.C_DETECTOR_F.source}",
        "score_readout_j": f"one {s.score_adc_bits}-bit conversion per (query, key, head) of the summed mixer "
                           f"currents ({e_conv:.3g} J: {ec.ADC_FOM_J_PER_STEP.source}) + 2 {s.score_gate_bits}-bit "
                           f"gate-DAC updates per rotated oscillator ({ec.C_UNIT_SWITCH_F.source})",
    }


def report(s, c: dict) -> dict:
    """``analog_score_noise``: the chain's predicted score error per layer (:func:`mapping.backends.analog_scores.
    score_error_model`, computed when the spec is built from a chip)."""
    if not c["analog"]:
        return {}
    return {"analog_score_noise": s.score_noise}
