"""One sweep point, computed in whichever process runs it (a local worker, a Dask worker, the caller).

:func:`compute_point`: compile the chip from the point's config, :func:`mapping.run` with the point's noise
seed, torch on one thread, the metrics as one table row; the model and the token windows are loaded once per
process (:func:`cached_model`, the one cache the design study's driver uses too). A point that raises comes back
as a row with ``status = 'error'``.
"""

from __future__ import annotations

import json
import math
import time
import traceback

__all__ = ["compute_point", "cached_model"]


_CACHE: dict = {}  # per process: models and token windows, loaded once per worker


def cached_model(checkpoint: str):
    """(model in eval mode, its fingerprint) of ``checkpoint``, loaded once per process."""
    if ("model", checkpoint) not in _CACHE:
        from ..model_io import load_model, model_fingerprint

        model, _ = load_model(checkpoint)
        model.eval()
        _CACHE[("model", checkpoint)] = (model, model_fingerprint(model))
    return _CACHE[("model", checkpoint)]


def _tokens(model, tokens: dict, context: int | None = None):
    """Windows (x, y) of the sweep's tokens on a chip built for ``context`` tokens (None: the model's seq_len)."""
    ctx = int(context or model.config.seq_len)
    key = ("tokens", json.dumps(tokens, sort_keys=True), ctx)
    if key not in _CACHE:
        from oscsim.data import eval_windows, load_shakespeare

        from .spec import TokenSpec

        T = TokenSpec(**tokens).window(ctx)
        data = load_shakespeare().split(tokens["split"])
        x, y = eval_windows(data, T, max_windows=tokens["windows"])
        if x.shape[0] < tokens["windows"]:
            raise ValueError(f"tokens.windows = {tokens['windows']}: the {tokens['split']} split holds only "
                             f"{x.shape[0]} windows of {T}")
        _CACHE[key] = (x, y)
    return _CACHE[key]


def _mean(xs):
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    return float(sum(xs) / len(xs)) if xs else math.nan


def _metrics(rep, groups) -> dict:
    """The table's metric columns of one point from its :class:`mapping.simulation.SimulationReport`."""
    # the Kuramoto settle window; SSA chips have none (their windows are config.ssa's), so NaN in the table
    out = {"kappa_tau": math.nan if rep.kappa_tau is None else float(rep.kappa_tau)}
    if "bpc" in groups:
        out["bpc_chip"] = float(rep.bpc_chip)
        out["bpc_closed_form"] = float(rep.bpc_closed_form)
        out["bpc_difference"] = out["bpc_chip"] - out["bpc_closed_form"]
    if "fidelity" in groups:
        whole = []
        for i, L in enumerate(rep.fidelity):
            for k, v in L.items():  # whole-layer scalars, then per-head lists as means over heads
                if isinstance(v, list):
                    out[f"layer{i}_{k}_head_mean"] = _mean(v)
                else:
                    out[f"layer{i}_{k.removeprefix('layer_')}"] = math.nan if v is None else float(v)
            whole.append(L.get("layer_rel_error"))
        out["mean_layer_rel_error"] = _mean(whole)
    if "energy" in groups:
        from ..energy.baselines import baseline_columns

        en = rep.energy
        out["energy_chip_j_per_token"] = float(en["energy_per_token_chip_j"])
        out["energy_gpu_j_per_token"] = float(en["energy_per_token_gpu_j"])
        out.update(baseline_columns(en))  # the same-terms baselines (mapping.energy.baselines)
        out["infeasible_reason"] = en["infeasible_reason"]  # None, or what does not fit (mapping.energy.feasibility)
        for k, v in en["breakdown"].items():
            out[f"energy_{k}"] = float(v)
    return out


def compute_point(task: dict, metrics_of=None) -> dict:
    """Compute one sweep point in this process and return its table row (never raises for a point error).

    Parameters
    ----------
    task : dict
        ``point_id``, ``point_index``, ``params`` (swept values), ``config`` (the full nested config dict),
        ``noise_seed``, ``checkpoint``, ``tokens`` (TokenSpec as a dict), ``metrics``, ``spec_hash``.
    metrics_of : callable, optional
        ``metrics_of(report) -> dict`` of the point's :class:`~mapping.simulation.SimulationReport` instead of
        the sweep's metric groups (a top-level function, so that it travels to worker processes; the design
        search passes :func:`mapping.design.evaluate.trial_metrics`).

    Returns
    -------
    dict
        One row: ids, the swept parameters, ``status`` ('ok' or 'error'), ``error``, the metrics, the model
        fingerprint, the package version and the spec hash.
    """
    from oscsim import __version__

    t0 = time.perf_counter()
    row = {"point_id": task["point_id"], "point_index": int(task["point_index"]), **task["params"],
           "status": "ok", "error": None}
    import torch

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)  # one thread per point: reductions in one fixed order, workers do not compete
        from ..compiler.build import compile as compile_chip
        from ..config import config_from_dict
        from ..simulation.report import simulate_report

        model, fp = cached_model(task["checkpoint"])
        row["model_fingerprint"] = fp
        cfg = config_from_dict(task["config"])
        x, y = _tokens(model, task["tokens"], cfg.context_tokens)
        chip = compile_chip(model, cfg, checkpoint=task["checkpoint"])
        rep = simulate_report(chip, x, y, seed=int(task["noise_seed"]), progress=False,
                              energy="energy" in task["metrics"], measure_gpu=False, warn=False)
        row.update(_metrics(rep, task["metrics"]) if metrics_of is None else metrics_of(rep))
        if "wall_time" in task["metrics"]:  # measured for every point, whoever turns the report into metrics
            row["chip_wall_s"] = float(rep.chip_wall_s)
    except Exception as exc:  # a failing point is a result: record it, the sweep goes on
        row["status"] = "error"
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        row["error"] = f"{type(exc).__name__}: {exc} | {''.join(tb[-3:]).strip()[-1500:]}"
    finally:
        torch.set_num_threads(threads)  # in-process runs (workers=0) leave the caller's setting alone
    if "wall_time" in task["metrics"]:
        row["wall_s"] = time.perf_counter() - t0
    row["config_json"] = json.dumps(task["config"], sort_keys=True)
    row["oscsim_version"] = __version__
    row["spec_hash"] = task["spec_hash"]
    return row


def _error_row(task: dict, message: str) -> dict:
    from oscsim import __version__

    return {"point_id": task["point_id"], "point_index": int(task["point_index"]), **task["params"],
            "status": "error", "error": message, "config_json": json.dumps(task["config"], sort_keys=True),
            "oscsim_version": __version__, "spec_hash": task["spec_hash"]}
