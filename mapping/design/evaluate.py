"""The one adapter between today's chip evaluation and the design search: a trial's objectives and metrics.

:func:`trial_metrics` is the only place the search reads the chip models. A trial's *simulated* part (chip BPC,
the closed-form BPC, per-term chip energy) is what a sweep point computes (:func:`mapping.sweep.compute_point`,
run on the workers); its *static* part (area, the time base, the GPU's bounds) needs no simulation and is
computed here, in the driver, from the same config compiled with mismatch off (mismatch changes the
per-instance draws, never the cell counts, the windows or the GPU's work).

Phase B of issue 20 replaces the inside of :func:`trial_metrics` with the compiler's ``SimulationReport`` (area,
latency of the schedule, SRAM, leakage); nothing else in :mod:`mapping.design` reads a chip model.

**Latency is provisional** (until phase B's schedule): the fully spatial chip runs the heads and coordinate
banks of a layer at once and the layers one after another; a layer's pass is, in order, the coupler/gain DAC
settling, the injection of the phases, the settle window, the readout window and the serial ADC conversions
of the channels sharing one ADC (``timeline_s`` of :func:`mapping.energy.chip_energy_per_token`). Per token:
the pass time over the tokens one pass produces (prefill T, decode 1). The digital periphery's own time is
not included (no throughput model of it exists yet).
"""

from __future__ import annotations

import math

__all__ = ["trial_metrics", "GAIN_CELL_ANCHOR", "anchor_j_per_token", "TIMELINE_ORDER"]

#: The published analog-attention anchor (issue 20 item 7).
GAIN_CELL_ANCHOR = {
    "value": 6.15e-9, "unit": "J per head per token", "window_tokens": 1024,
    "source": "N. Leroux et al., 'Analog in-memory computing attention mechanism for fast and energy-efficient "
              "large language models', Nat. Comput. Sci. 2025 (gain-cell attention): 6.15 nJ per head per token at "
              "a 1,024-token window",
}
#: A layer's windows, in the order they run (keys of ``timeline_s``).
TIMELINE_ORDER = ("dac_settle", "injection", "settle", "readout", "adc_serial")


def anchor_j_per_token(n_heads: int, n_layers: int, T: int) -> tuple[float, str]:
    """The gain-cell anchor normalised to this model: J per token of all attention layers at window T.

    6.15 nJ per head per token × heads per layer × layers × (T / 1024): the anchor's work per token and head is
    one dot product and one weighted sum over every token of its window, so it is taken linear in the window;
    the head dimension is not rescaled (the anchor's heads are full-size; this model's are smaller, so the line
    errs high for the anchor).
    """
    a = GAIN_CELL_ANCHOR
    v = a["value"] * n_heads * n_layers * T / a["window_tokens"]
    how = (f"{a['value'] * 1e9:g} nJ per head per token x {n_heads} heads x {n_layers} layers x (window {T} / "
           f"{a['window_tokens']}), linear in the window, head dimension not rescaled; {a['source']}")
    return v, how


def trial_metrics(config, model, T: int, row: dict | None = None, *, checkpoint: str | None = None) -> dict:
    """Objectives and metrics of one design.

    Parameters
    ----------
    config : ChipConfig
        The trial's chip.
    model : torch.nn.Module
        The closed-form model (loaded once by the driver).
    T : int
        Tokens per evaluation window (the energy is per token at this window).
    row : dict, optional
        The trial's sweep row (:func:`mapping.sweep.compute_point`, status ok); None gives the static metrics
        only (the feasibility probe of :func:`mapping.design.check_space`; energy then from the mismatch-free
        compile, within the per-instance power draw of the trial's).
    checkpoint : str, optional
        Recorded in the compiled chip.

    Returns
    -------
    dict
        ``bpc_loss``, ``bpc_chip``, ``bpc_closed_form`` [bits/char] (NaN without a row),
        ``energy_per_token_j``, ``energy_<term>_j`` (the chip's breakdown), ``array_j`` (the array's terms),
        ``floor_without_array_j`` (the rest: periphery and SRAM), ``largest_term``, ``offloaded_fraction``,
        ``amdahl_max_gain``, ``gpu_lower_j``, ``gpu_upper_j``, ``anchor_j`` [J/token], ``area_mm2``,
        ``latency_per_token_s``, ``latency_per_pass_s`` [s], ``tokens_per_pass``, ``phase``, ``kind``.
    """
    from ..compiler import compile as compile_chip
    from ..energy import energy_report
    from ..energy.chip_terms import ARRAY_TERMS

    chip = compile_chip(model, config.replace(mismatch=False), checkpoint=checkpoint)
    rep = energy_report(chip, T)
    phase = config.energy.phase
    tl = rep["timeline_s"]
    layers = len(chip.layers)
    pass_s = layers * sum(tl[k] for k in TIMELINE_ORDER)
    per_pass = T if phase == "prefill" else 1
    if row is None:
        breakdown = dict(rep["breakdown"])
        energy = rep["energy_per_token_chip_j"]
        bpc = {"bpc_chip": math.nan, "bpc_closed_form": math.nan, "bpc_loss": math.nan}
    else:
        breakdown = {k.removeprefix("energy_"): float(v) for k, v in row.items()
                     if k.startswith("energy_") and k.endswith("_j") and k != "energy_gpu_j_per_token"}
        energy = float(row["energy_chip_j_per_token"])
        bpc = {"bpc_chip": float(row["bpc_chip"]), "bpc_closed_form": float(row["bpc_closed_form"]),
               "bpc_loss": float(row["bpc_difference"])}
    array_j = sum(v for k, v in breakdown.items() if k in ARRAY_TERMS)
    lm = chip.layers[0]
    anchor, _ = anchor_j_per_token(lm.n_heads, layers, T)
    return {
        **bpc,
        "energy_per_token_j": energy,
        **{f"energy_{k}": v for k, v in breakdown.items()},
        "array_j": array_j,
        "floor_without_array_j": energy - array_j,
        "largest_term": max(breakdown, key=breakdown.get),
        "offloaded_fraction": float(rep["offloaded_fraction"]),
        "amdahl_max_gain": float(rep["amdahl_max_gain"]),
        "gpu_lower_j": float(rep["gpu_energy_bounds_j"]["lower"]),
        "gpu_upper_j": float(rep["gpu_energy_bounds_j"]["upper"]),
        "anchor_j": anchor,
        "area_mm2": float(rep["area_mm2"]),
        "latency_per_token_s": pass_s / per_pass,
        "latency_per_pass_s": pass_s,
        "tokens_per_pass": per_pass,
        "phase": phase,
        "kind": chip.kind,
    }
