"""The one adapter between the chip models and the design search: a trial's objectives and metrics.

:func:`trial_metrics` is the only place the search reads the chip models: it takes the
:class:`~mapping.simulation.SimulationReport` of the trial's chip run (a sweep point computed on a worker,
:func:`mapping.sweep.run.compute_point` with ``metrics_of=trial_metrics``) and returns flat numbers: the simulated
BPC loss and its standard error, and from the report's energy the die area, the latency per token of the
schedule, the SRAM, the leakage and every energy term (:mod:`mapping.energy`). :func:`static_metrics` gives the
same numbers without a simulation (BPC NaN) for the feasibility probe of :func:`mapping.design.check_space`.
"""

from __future__ import annotations

import math

__all__ = ["trial_metrics", "static_metrics", "GAIN_CELL_ANCHOR", "anchor_j_per_token", "METRICS_KEY"]

#: The published analog-attention anchor (issue 20 item 7).
GAIN_CELL_ANCHOR = {
    "value": 6.15e-9, "unit": "J per head per token", "window_tokens": 1024,
    "source": "N. Leroux et al., 'Analog in-memory computing attention mechanism for fast and energy-efficient "
              "large language models', Nat. Comput. Sci. 5, 813 (2025) (gain-cell attention): 6.15 nJ per head per "
              "token at a 1,024-token window",
}
#: Where :func:`trial_metrics` puts its numbers in a sweep row.
METRICS_KEY = "design_metrics"


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


def _energy_metrics(en: dict) -> dict:
    """The static metrics of a design from its energy report (:func:`mapping.energy.energy_report`)."""
    from ..energy.baselines import baseline_columns
    from ..energy.chip_terms import TERMS

    breakdown = dict(en["breakdown"])
    array_j = sum(v for k, v in breakdown.items() if TERMS[k].array)
    shape, sc, area = en["attention_shape"], en["schedule"] or {}, en["area"]
    anchor, _ = anchor_j_per_token(shape["n_heads"], shape["n_layers"], shape["T"])
    tl = en["timeline_s"]
    return {
        "energy_per_token_j": float(en["energy_per_token_chip_j"]),
        **{f"energy_{k}": float(v) for k, v in breakdown.items()},
        "array_j": array_j,
        "floor_without_array_j": float(en["energy_per_token_chip_j"]) - array_j,
        "largest_term": max(breakdown, key=breakdown.get),
        "offloaded_fraction": float(en["offloaded_fraction"]),
        "amdahl_max_gain": float(en["amdahl_max_gain"]),
        "array_gain": float(en["array_gain"]),
        "digital_only_chip_j": float(en["digital_only_chip_j"]),
        "gpu_lower_j": float(en["gpu_energy_bounds_j"]["lower"]),
        "gpu_upper_j": float(en["gpu_energy_bounds_j"]["upper"]),
        **baseline_columns(en),
        "anchor_j": anchor,
        "area_mm2": float(en["area_mm2"]),
        "array_mm2": float(area["array_mm2"]), "sram_mm2": float(area["sram_mm2"]),
        "periphery_mm2": float(area["periphery_mm2"]),
        "sram_bytes": float(en["sram_bytes"]),
        "leakage_j": float(en["leakage_j"]),
        "latency_per_token_s": float(en["latency_per_token_s"]),
        "latency_per_pass_s": float(tl["pass_s"]),
        "tokens_per_pass": int(tl["tokens_per_pass"]),
        "schedule": sc.get("kind", "spatial"), "tiles": int(sc.get("tiles", 0)),
        "rounds_per_layer": int(sc.get("rounds_per_layer", 1)),
        "node_nm": float(en["node"]["node_nm"]),
        "phase": en["phase"],
        # what does not fit ([array] die_limit_mm2), or None (mapping.energy.feasibility)
        "infeasible_reason": en["infeasible_reason"],
        "T": int(shape["T"]),
    }


def trial_metrics(report) -> dict:
    """Objectives and metrics of one design from its :class:`~mapping.simulation.SimulationReport`.

    Returns
    -------
    dict
        ``{METRICS_KEY: metrics}`` (a sweep row's entry), metrics: ``bpc_loss`` (chip − closed-form BPC on the
        same tokens), ``bpc_loss_se`` (its standard error), ``bpc_chip``, ``bpc_closed_form`` [bits/char],
        ``energy_per_token_j``, ``energy_<term>`` (the chip's breakdown), ``array_j`` (the array's terms),
        ``floor_without_array_j`` (the rest: periphery, SRAM, leakage), ``largest_term``, ``offloaded_fraction``,
        ``amdahl_max_gain``, ``array_gain``, ``digital_only_chip_j``, ``gpu_lower_j``, ``gpu_upper_j``,
        ``anchor_j`` [J/token], ``area_mm2`` (and ``array_mm2``, ``sram_mm2``, ``periphery_mm2``),
        ``sram_bytes``, ``leakage_j``, ``latency_per_token_s``, ``latency_per_pass_s`` [s],
        ``tokens_per_pass``, ``schedule``, ``tiles``, ``rounds_per_layer``, ``node_nm``, ``phase``, ``T`` (the
        window the energy is computed for), ``n_tokens`` (tokens the loss was scored on), ``kind``,
        ``mean_layer_rel_error``, ``kappa_tau``, the same-terms baselines (``baseline_<key>_j``,
        ``chip_over_<key>``, :func:`mapping.energy.baselines.baseline_columns`).
    """
    if report.energy is None:
        raise ValueError("trial_metrics needs a report made with the energy report (energy=True)")
    rel = [L.get("layer_rel_error") for L in report.fidelity]
    rel = [float(x) for x in rel if x is not None and math.isfinite(x)]
    m = {"bpc_loss": float(report.bpc_difference), "bpc_loss_se": float(report.bpc_difference_se),
         "bpc_chip": float(report.bpc_chip), "bpc_closed_form": float(report.bpc_closed_form),
         "n_tokens": int(report.n_tokens), **_energy_metrics(report.energy), "kind": report.chip_kind,
         "mean_layer_rel_error": sum(rel) / len(rel) if rel else math.nan,
         "kappa_tau": math.nan if report.kappa_tau is None else float(report.kappa_tau)}
    return {METRICS_KEY: m}


def static_metrics(config, model, T: int, *, checkpoint: str | None = None) -> dict:
    """The metrics of :func:`trial_metrics` that need no simulation (BPC NaN), from ``config`` compiled with
    mismatch off (mismatch changes the per-instance draws, never the cells, the schedule, the windows or the GPU's
    work; the energy then differs from the trial's by the per-instance power draw only)."""
    from ..compiler import compile as compile_chip
    from ..energy import energy_report

    chip = compile_chip(model, config.replace(mismatch=False), checkpoint=checkpoint)
    return {"bpc_loss": math.nan, "bpc_loss_se": math.nan, "bpc_chip": math.nan, "bpc_closed_form": math.nan,
            **_energy_metrics(energy_report(chip, T)), "kind": chip.kind}


#: The metrics that come from a design's measured fidelity (the rest are its static figures): what a trial of a
#: workload study shares with one of the same :func:`mapping.design.workloads.fidelity_key`.
FIDELITY_KEYS = ("bpc_loss", "bpc_loss_se", "bpc_chip", "bpc_closed_form", "n_tokens", "mean_layer_rel_error",
                 "head_error", "head_error_se", "head_layer", "head_index", "fidelity_measure")


def _no_fidelity() -> dict:
    return {"bpc_loss": math.nan, "bpc_loss_se": math.nan, "bpc_chip": math.nan, "bpc_closed_form": math.nan,
            "mean_layer_rel_error": math.nan, "head_error": math.nan, "head_error_se": math.nan}


def evaluate_task(task: dict) -> dict:
    """One trial of a workload study (:mod:`mapping.design.grid`), computed where the task runs; the row of
    :func:`mapping.sweep.compute_point` with ``metrics_of=trial_metrics``.

    ``task["measure"]``: 'model' (the chip run of the whole model, then the head-level error of ``task["head"]``
    = [layer, head]), 'head' (the head-level error only, :func:`mapping.simulation.head.head_error`) or
    'energy' (the compiled chip's energy report only: a design whose fidelity another trial measured).
    ``fidelity_measure`` in the metrics says which was measured."""
    import json
    import time
    import traceback

    from ..sweep.point import _tokens, cached_model, compute_point

    measure = task.get("measure", "model")
    if measure == "model":
        row = compute_point(task, metrics_of=trial_metrics)
        if row["status"] != "ok":
            return row
    t0 = time.perf_counter()
    try:
        import torch

        from ..compiler.build import compile as compile_chip
        from ..config import config_from_dict
        from ..energy import energy_report
        from ..simulation.head import head_error

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            model, _ = cached_model(task["checkpoint"])
            cfg = config_from_dict(task["config"])
            chip = compile_chip(model, cfg, checkpoint=task["checkpoint"])
            layer, head = task.get("head", (0, 0))
            if measure == "model":
                x, _ = _tokens(model, task["tokens"], cfg.context_tokens)
                h = head_error(chip, model, x, layer=layer, head=head, seed=int(task["noise_seed"]))
                m = row[METRICS_KEY]
                m.update({k: v for k, v in h.items() if k not in ("head_backend", "head_wall_s")},
                         fidelity_measure="model")
                row["wall_s"] = float(row.get("wall_s", 0.0)) + time.perf_counter() - t0
                return row
            x, _ = _tokens(model, task["tokens"], cfg.context_tokens)
            T = int(x.shape[1])
            m = {**_no_fidelity(), **_energy_metrics(energy_report(chip, T)), "kind": chip.kind,
                 "kappa_tau": math.nan if chip.settle_window_rad is None else float(chip.settle_window_rad)}
            row = {"point_id": task["point_id"], "point_index": int(task["point_index"]), "status": "ok",
                   "error": None}
            if measure == "head":
                h = head_error(chip, model, x, layer=layer, head=head, seed=int(task["noise_seed"]))
                m.update({k: v for k, v in h.items() if k not in ("head_backend", "head_wall_s")},
                         n_tokens=int(x.numel()), fidelity_measure="head")
                row["chip_wall_s"] = float(h["head_wall_s"])
            elif measure == "energy":
                m["fidelity_measure"] = "energy"
                row["chip_wall_s"] = 0.0
            else:
                raise ValueError(f"task measure must be 'model', 'head' or 'energy', got {measure!r}")
            row[METRICS_KEY] = m
        finally:
            torch.set_num_threads(threads)
    except Exception as exc:  # a failing trial is a result
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        row = {"point_id": task["point_id"], "point_index": int(task["point_index"]), "status": "error",
               "error": f"{type(exc).__name__}: {exc} | {''.join(tb[-3:]).strip()[-1500:]}", "chip_wall_s": None}
    row["wall_s"] = time.perf_counter() - t0
    row["config_json"] = json.dumps(task["config"], sort_keys=True)
    row["spec_hash"] = task["spec_hash"]
    return row
