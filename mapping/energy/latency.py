"""Latency per token: the schedule's windows in the order they run (DESIGN §5.7).

A pass of the array (prefill: a sequence's T tokens; decode: one new token) runs the layers one after another
(each reads the previous one's output). A layer is, in order:

0. with analog scores (``[scores] mode = "analog"``), its score rounds (⌈heads / ``[scores] units``⌉,
   :mod:`mapping.backends.score_array`), each: ``score_dac_settle`` (the gate DACs settle to ½ LSB),
   ``score_injection`` (the rotated oscillators written by injection locking), ``score_window`` (the mixers
   averaged over the readout window) and ``score_adc_serial`` (the score channels sharing one ADC converted in
   turn); the softmax needs every score of the layer, so these come first;
1. ``digital``: the periphery's work before and after the array (scores when digital, softmax, gates,
   rescaling) on ``[array] macs`` multiply-accumulate units at the periphery clock, two operations per MAC and
   cycle;
2. its rounds (one on the spatial chip, ⌈units / tiles⌉ on a multiplexed one; times a unit's block rounds under
   the blocked schedule, prefill n(n+1)/2, decode ⌈t/B⌉ for the token at t, mean over t), each:
   ``program`` (only in rounds where a tile takes a new coupling matrix: the coupler registers written one row
   per clock, :data:`mapping.energy.constants.ARRAY_ROWS_PER_CLOCK`), ``dac_settle`` (coupler and gain DACs
   settle to ½ LSB), ``injection`` (phases written by injection locking), ``settle`` (the coupled window
   τ_s), ``readout`` (the detector window), ``adc_serial`` (the channels sharing one ADC converted in turn).

Nothing overlaps (an upper estimate: a pipelined chip could convert one round while the next settles). Per
token: the pass over the tokens it produces. Every time at a node other than 65 nm scales with the
Stillmaker-Baas delay (the periphery clock, the ADC rate, the DACs' RC); the oscillator windows are cycles of
the device's own f₀.
"""

from __future__ import annotations

import math

from ..backends.blocking import block_plan
from . import constants as ec

__all__ = ["pass_timeline", "WINDOWS", "SCORE_WINDOWS"]

WINDOWS = ("program", "dac_settle", "injection", "settle", "readout", "adc_serial")
"""A round's windows, in the order they run."""
SCORE_WINDOWS = ("score_dac_settle", "score_injection", "score_window", "score_adc_serial")
"""A score round's windows (analog scores), in the order they run."""


def pass_timeline(s, c) -> dict:
    """The timeline of one pass of spec ``s`` in the context ``c`` (:class:`mapping.energy.context.PassContext`, whose
    ``timeline`` is not yet set).

    Returns
    -------
    dict with the windows of one round [s] (keys of :data:`WINDOWS`, ``program`` when it happens), with analog
    scores those of one score round (keys of :data:`SCORE_WINDOWS`), ``score_rounds_per_layer`` (0 with digital
    scores) and ``score_round_s``, ``digital`` (one layer's periphery work [s]), ``rounds_per_layer``,
    ``programming_rounds_per_layer``, ``layer_s``, ``pass_s``, ``tokens_per_pass``, ``latency_per_token_s`` and
    ``sources``.
    """
    n, prefill, per, f0 = c.events, c.prefill, c.per, c.f0
    plan = block_plan(s.shape.T, s.schedule.block)
    R = int(s.schedule.rounds_per_layer)
    if plan.blocked and c.phase == "decode":  # a token's key-block rounds, mean over its positions
        R = R // plan.rounds_per_unit * plan.mean_decode_rounds
    rows = plan.tile_tokens if per > 1 else 1  # a tile's rows (2B blocked); decode programs one row
    f_read = n.read / max(prefill.read, 1.0)
    conv_per_adc = max(1, math.ceil(s.array.channels_per_adc * f_read)) * s.array.readout_samples
    w = {"program": rows / (ec.ARRAY_ROWS_PER_CLOCK.value * c.tech.f_clk),
         "dac_settle": c.tech.t_dac, "injection": c.t_inj, "settle": s.array.settle_cycles / f0,
         "readout": s.array.read_cycles / f0, "adc_serial": conv_per_adc / c.tech.adc_rate}
    n_prog = min(R, math.ceil(s.schedule.program_fraction * R - 1e-9))
    digital = c.dig_ops * per / (2 * s.periphery.macs * c.tech.f_clk)
    round_s = sum(v for k, v in w.items() if k != "program")
    R_sc, sw, sc_conv = 0, {}, 0
    if c.analog:  # the score rounds (mapping.backends.score_array)
        R_sc = int(s.scores.rounds_per_layer)
        f_sc = n.score_conv / max(prefill.score_conv, 1.0)
        sc_conv = max(1, math.ceil(s.array.channels_per_adc * f_sc))
        sw = {"score_dac_settle": c.tech.t_dac_score, "score_injection": c.t_inj,
              "score_window": s.array.read_cycles / f0,
              "score_adc_serial": sc_conv / c.tech.adc_rate}
    score_round_s = sum(sw.values())
    layer = R_sc * score_round_s + digital + R * round_s + n_prog * w["program"]
    pass_s = s.shape.n_layers * layer
    sources = {}
    if c.analog:
        sources["score_adc_serial"] = (f"{sc_conv:g} score conversions per ADC ([array] channels_per_adc = "
                                       f"{s.array.channels_per_adc}) at {c.tech.adc_rate / 1e6:.4g} MS/s; {R_sc} score "
                                       f"round(s) per layer (mapping.backends.score_array)")
    return {**w, **sw, "score_rounds_per_layer": R_sc, "score_round_s": score_round_s, "digital": digital,
            "rounds_per_layer": R, "programming_rounds_per_layer": n_prog,
            "layer_s": layer, "pass_s": pass_s, "tokens_per_pass": per, "latency_per_token_s": pass_s / per,
            "sources": {**sources,
                "program": f"{rows} coupler row(s) per tile at {ec.ARRAY_ROWS_PER_CLOCK.value:g} row per periphery "
                           f"clock ({c.tech.f_clk / 1e6:.4g} MHz: {ec.PERIPHERY_CLOCK_HZ.source}; carried by the "
                           f"Stillmaker-Baas delay); {ec.ARRAY_ROWS_PER_CLOCK.source}",
                "adc_serial": f"{conv_per_adc:g} conversions per ADC ([array] channels_per_adc = "
                              f"{s.array.channels_per_adc}) at {c.tech.adc_rate / 1e6:.4g} MS/s: "
                              f"{ec.ADC_RATE_HZ.source}",
                "digital": f"{c.dig_ops:.4g} periphery ops per token and layer x {per} tokens / (2 ops x "
                           f"{s.periphery.macs} MACs ([array] macs) x {c.tech.f_clk / 1e6:.4g} MHz)",
                "order": ("per layer: the score rounds (gate-DAC settle, injection, mixer window, serial score "
                          "ADC), before the periphery's softmax, then " if c.analog else "per layer: ")
                         + "digital, then per round program (when a tile takes a new matrix), DAC settle, "
                           "injection, settle, readout, serial ADC; no overlap (an upper estimate)"}}
