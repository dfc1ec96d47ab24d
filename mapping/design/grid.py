"""The loop of a workload study: a sub-study per workload, asked and told together, fidelity shared.

A spec with ``[workloads]`` (:mod:`mapping.design.workloads`) is run as one Optuna study per workload in the
same storage (each named by its own spec hash, :func:`mapping.design.workloads.workload_spec`). Every round asks
the next batch of every unfinished workload (each trial sampled as in :mod:`mapping.design.study`: a pure
function of that workload's stored trials and the seed), evaluates all of them together on the sweep's executors
(both workers busy whatever the workload), then tells them in (workload, trial) order. So the first round gives
a design at every workload (a map, however coarse), and a study stopped any way resumes where it stopped.

Per trial, in the driver, before any simulation:

- **Infeasible designs are not simulated**: the design is compiled with mismatch off and its energy report's
  ``infeasible_reason`` (the die past ``[array] die_limit_mm2``) read; such a trial keeps those static figures and
  its reason, and is told to the sampler as a failed trial (state ``INFEASIBLE`` in the table, no error).
- **Fidelity is measured once per fidelity key** (:func:`mapping.design.workloads.fidelity_key`): the first trial
  in (workload, trial) order measures it ('model' or 'head' by T); a later one with the same key gets an energy
  task (its own compiled chip's energy report) and the measured fidelity, naming its source in
  ``fidelity_shared_with`` ("WORKLOAD#TRIAL").
- A design equal to an earlier trial of its own workload is copied, as in a single study (``same_as``).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass

from ..sweep.spec import config_with
from .driver import kill_point
from .evaluate import FIDELITY_KEYS, METRICS_KEY
from .workloads import fidelity_key, workload_spec

__all__ = ["StudyOps", "workload_studies", "grid_loop", "grid_trials_table", "point_index", "SHARED_COLUMN"]

SHARED_COLUMN = "fidelity_shared_with"
_STRIDE = 1_000_000  # point_index = workload index * this + trial number


def point_index(w_index: int, number: int) -> int:
    return w_index * _STRIDE + number


@dataclass(frozen=True)
class StudyOps:
    """The single study's steps a workload study reuses (:mod:`mapping.design.study` hands them over, so that
    this module does not import it): ``open_study(spec, url)``, ``ask(spec, study, number, dists)``,
    ``finish(spec, study, number, result)``, ``acquire(study)``, the sweep metric groups of a trial and the
    measured columns."""

    open_study: Callable
    ask: Callable
    finish: Callable
    acquire: Callable
    row_metrics: tuple
    measured: tuple


def workload_studies(spec, url: str, ops: StudyOps) -> list:
    """[(workload, its sub-spec, its Optuna study)] in grid order, each opened (or created) in ``url``."""
    out = []
    for w in spec.workloads.workloads():
        sub = workload_spec(spec, w)
        out.append((w, sub, ops.open_study(sub, url)))
    return out


def _label(w, number: int) -> str:
    return f"{w.id}#{number}"


def _sources(subs) -> dict:
    """{fidelity key: (workload index, trial, label, fidelity metrics)} of the finished trials that measured it,
    the first in (workload, trial) order."""
    from ..config import config_from_dict

    known = {}
    for w, _sub, study in subs:
        for t in sorted(study.get_trials(deepcopy=False), key=lambda t: t.number):
            m = t.user_attrs.get("metrics")
            if (not t.state.is_finished() or m is None or m.get(SHARED_COLUMN) is not None
                    or m.get("fidelity_measure") not in ("model", "head") or t.user_attrs.get("same_as") is not None):
                continue
            key = fidelity_key(config_from_dict(json.loads(t.user_attrs["config_json"])))
            if key not in known:
                known[key] = (w.index, t.number, _label(w, t.number), {k: m.get(k) for k in FIDELITY_KEYS})
    return known


def _static(cfg, model, T: int, checkpoint: str, cache: dict) -> dict:
    from .evaluate import static_metrics

    from ..config import config_to_dict

    k = json.dumps(config_to_dict(cfg), sort_keys=True)
    if k not in cache:
        cache[k] = static_metrics(cfg, model, T, checkpoint=checkpoint)
    return cache[k]


def _task(sub, w, number: int, cfg, measure: str, head, row_metrics) -> dict:
    from ..config import config_to_dict

    return {"point_id": f"{sub.spec_hash}-t{number:06d}", "point_index": point_index(w.index, number), "params": {},
            "config": config_to_dict(cfg), "noise_seed": sub.noise_seed, "checkpoint": sub.checkpoint,
            "tokens": {"windows": sub.tokens.windows, "seq_len": sub.tokens.seq_len, "split": sub.tokens.split},
            "metrics": list(row_metrics), "spec_hash": sub.spec_hash, "measure": measure, "head": list(head)}


def _plan(spec, subs, active, model, static_cache, row_metrics) -> tuple[dict, list, dict]:
    """(results known now, tasks, waiting) of the RUNNING trials of the ``active`` workloads.

    ``waiting``: {point index: (source point index, label)} of trials whose fidelity a task of this round
    measures (they get an energy task each)."""
    from optuna.trial import TrialState

    from ..config import config_to_dict

    known = _sources(subs)
    results, tasks, waiting, pending = {}, [], {}, {}
    grid = spec.workloads
    for w, sub, study in active:
        stored = study.get_trials(deepcopy=False)
        done = {}
        for t in sorted(stored, key=lambda t: t.number):
            if t.state.is_finished() and t.user_attrs.get("config_json") and t.user_attrs.get("metrics") is not None:
                done.setdefault(t.user_attrs["config_json"], t)
        for t in sorted((t for t in stored if t.state == TrialState.RUNNING), key=lambda t: t.number):
            k = point_index(w.index, t.number)
            if set(t.params) != set(sub.fields):
                results[k] = {"error": f"incomplete parameters {sorted(t.params)}; not evaluated"}
                continue
            try:
                cfg = config_with(sub.base, t.params)
            except (ValueError, TypeError) as exc:
                results[k] = {"error": f"not a valid chip config: {exc}"}
                continue
            cj = json.dumps(config_to_dict(cfg), sort_keys=True)
            if cj in done:  # the same design as an earlier trial of this workload: its result, copied
                src = done[cj].user_attrs
                results[k] = {key: src[key] for key in ("config_json", "metrics", "constraints", "measured",
                                                        "not_simulated") if key in src}
                results[k]["same_as"] = done[cj].number
                continue
            T = sub.tokens.window(cfg.context_tokens)
            try:
                st = _static(cfg, model, T, sub.checkpoint, static_cache)
            except (ValueError, TypeError) as exc:
                results[k] = {"config_json": cj, "error": f"the chip does not compile: {exc}"}
                continue
            if st["infeasible_reason"] is not None:  # cannot be printed: not simulated
                m = {**st, "fidelity_measure": "none (infeasible)", SHARED_COLUMN: None, "head_error": math.nan,
                     "head_error_se": math.nan}
                results[k] = {"config_json": cj, "metrics": m, "not_simulated": True, "measured": {}}
                continue
            key = fidelity_key(cfg)
            if key in known:
                waiting[k] = (None, known[key][2], known[key][3])
                tasks.append(_task(sub, w, t.number, cfg, "energy", grid.head, row_metrics))
            elif key in pending:
                src = pending[key]
                waiting[k] = (src, _label(subs[src // _STRIDE][0], src % _STRIDE), None)
                tasks.append(_task(sub, w, t.number, cfg, "energy", grid.head, row_metrics))
            else:
                pending[key] = k
                tasks.append(_task(sub, w, t.number, cfg, grid.measure(T, w.phase), grid.head, row_metrics))
    return results, tasks, waiting


def _evaluate(spec, subs, active, workers, dask, bar, pool, model, static_cache, ops: StudyOps) -> dict:
    """Evaluate the RUNNING trials of the active workloads; {point index: result}."""
    from ..sweep.executors import run_tasks
    from .evaluate import evaluate_task

    results, tasks, waiting = _plan(spec, subs, active, model, static_cache, ops.row_metrics)
    sub_of = {w.index: sub for w, sub, _ in subs}
    rows = {}

    def sink(row: dict) -> None:
        rows[int(row["point_index"])] = row
        bar.update(1)

    scheduler, security = dask if isinstance(dask, tuple) else (dask, None)
    run_tasks(tasks, workers, scheduler, sink, compute=evaluate_task, pool=pool, security=security)
    for k, row in rows.items():
        res = {"config_json": row["config_json"], "measured": {c: row.get(c) for c in ops.measured}}
        if row["status"] != "ok":
            res["error"] = str(row["error"])
        else:
            res["metrics"] = dict(row[METRICS_KEY])
            res["metrics"].setdefault(SHARED_COLUMN, None)
        results[k] = res
    for k, (src, label, fid) in sorted(waiting.items()):
        res = results[k]
        if "metrics" not in res:
            continue
        if fid is None:  # measured this round by trial src
            s = results.get(src, {})
            if "metrics" not in s:
                res.pop("metrics")
                res["error"] = f"the trial that measured this design's fidelity ({label}) failed: {s.get('error')}"
                continue
            fid = {f: s["metrics"].get(f) for f in FIDELITY_KEYS}
        res["metrics"].update(fid)
        res["metrics"][SHARED_COLUMN] = label
    for k, res in results.items():
        sub = sub_of[k // _STRIDE]
        m = res.get("metrics")
        if m is not None and not res.get("not_simulated"):
            res["constraints"] = [c.violation(m[c.metric]) for c in sub.constraints]
    return results


def grid_loop(spec, subs, workers: int, dask, parent, progress, pool, model, ops: StudyOps) -> None:
    """Ask, evaluate and tell rounds until every workload holds its trials (see the module notes); ``parent``:
    the study holding the driver record on a shared storage (None: a local one), its heartbeat renewed every
    round."""
    from tqdm import tqdm

    from optuna.trial import TrialState

    P = spec.population
    if progress is None:
        progress = sys.stderr.isatty()
    total = len(subs) * spec.workloads.trials
    done0 = sum(t.state.is_finished() for _, _, s in subs for t in s.get_trials(deepcopy=False))
    bar = tqdm(total=max(total, done0), initial=done0, disable=not progress, desc=f"design {spec.name}",
               unit="trial", file=sys.stderr, dynamic_ncols=True)
    static_cache: dict = {}
    try:
        while True:
            active = []
            for w, sub, study in subs:
                trials = study.get_trials(deepcopy=False)
                running = [t for t in trials if t.state == TrialState.RUNNING]
                n, N = len(trials), sub.trials
                if not running and n >= N:
                    continue
                b = (min(t.number for t in running) if running else n) // P
                dists = sub.distributions()
                for m in range(n, min((b + 1) * P, N)):
                    ops.ask(sub, study, m, dists)
                active.append((w, sub, study))
            if not active:
                break
            kill_point("asked")
            results = _evaluate(spec, subs, active, workers, dask, bar, pool, model, static_cache, ops)
            kill_point("evaluated")
            for w, sub, study in active:
                for k in sorted(r for r in results if r // _STRIDE == w.index):
                    ops.finish(sub, study, k % _STRIDE, results[k])
                    kill_point("told")
            if parent is not None:
                ops.acquire(parent)
    finally:
        bar.close()


def grid_trials_table(spec, subs):
    """The trials of every workload, one table: the workload's columns (``workload``, ``workload_index``,
    ``T``, ``phase``, ``batch``, ``fidelity_measure``, ``fidelity_shared_with``) beside each study's own."""
    import pandas as pd

    from .results import trials_table

    parts = []
    for w, sub, study in subs:
        df = trials_table(study, sub)
        if not len(df):
            continue
        df.insert(0, "workload", w.id)
        df.insert(1, "workload_index", w.index)
        for col, v in (("T", w.T), ("phase", w.phase), ("batch", w.batch)):
            if col in df:
                df[col] = v
            else:
                df.insert(df.columns.get_loc("workload_index") + 1, col, v)
        for col in ("fidelity_measure", SHARED_COLUMN, "head_error", "head_error_se", "bpc_loss", "bpc_loss_se"):
            if col not in df:
                df[col] = None if col in ("fidelity_measure", SHARED_COLUMN) else math.nan
        parts.append(df)
    if not parts:
        return pd.DataFrame()
    return pd.concat(parts, ignore_index=True)


def grid_report_md(spec, cm, text: str, df) -> str:
    """``report.md`` of a workload study: the crossover sentence and its table, then the counts per workload."""
    lines = [f"# Design search {spec.name}: the crossover map", "", f"spec hash {spec.spec_hash}; sampler "
             f"{spec.sampler}, seed {spec.seed}, population {spec.population}; {len(cm)} workloads, "
             f"{spec.workloads.trials} trials each; objectives {', '.join(spec.objectives)}; whole-model BPC at "
             f"T <= {', '.join(f'{spec.workloads.whole_model_tokens(p):,} ({p})' for p in spec.workloads.phase)}, "
             f"the head-level error (layer {spec.workloads.head[0]}, head {spec.workloads.head[1]}) above.", "",
             "## Verdict", "", text, "", "## The map", "",
             "| T | phase | batch | winner | bound | trial | chip [nJ/token] | chip / digital same node | "
             "chip / GPU datapath | chip / GPU board | fidelity | feasible / trials |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in cm.itertuples():
        lines.append(f"| {r.T:,} | {r.phase} | {r.batch} | {r.winner} | {r.bound} | {r.trial} | "
                     f"{r.energy_per_token_j * 1e9:.4g} | {r.chip_over_digital_same_node:.3g} | "
                     f"{r.chip_over_gpu_datapath:.3g} | {r.chip_over_gpu_board:.3g} | {r.fidelity} | "
                     f"{r.n_feasible} / {r.n_trials} |")
    lines += ["", "Designs: " + "; ".join(f"{r.workload}: trial {r.trial} ({r.design})" for r in cm.itertuples()), ""]
    return "\n".join(lines)


def write_grid_results(spec, subs, out):
    """``trials.parquet`` (every workload's trials, with the workload columns), ``front.parquet`` (each workload's
    front), ``crossover.parquet`` (the map), ``report.json`` / ``report.md`` and ``crossover.{png,svg}``."""
    from pathlib import Path

    from ..sweep.run import atomic_write_bytes, write_df
    from .crossover import crossover_map, crossover_text, plot_crossover

    out = Path(out)
    df = grid_trials_table(spec, subs)
    if not len(df):
        return df
    write_df(df, out / "trials.parquet")
    write_df(df[df["on_front"]].reset_index(drop=True), out / "front.parquet")
    cm = crossover_map(df, spec.fields)
    write_df(cm, out / "crossover.parquet")
    text = crossover_text(cm)
    report = {"text": text, "n_trials": int(len(df)), "n_complete": int((df["state"] == "COMPLETE").sum()),
              "n_infeasible": int((df["state"] == "INFEASIBLE").sum()), "n_feasible": int(df["feasible"].sum()),
              "workloads": spec.workloads.to_json(), "crossover": cm.to_dict("records")}
    atomic_write_bytes(out / "report.json", json.dumps(report, indent=1, default=str).encode())
    atomic_write_bytes(out / "report.md", grid_report_md(spec, cm, text, df).encode())
    if cm["trial"].notna().any():
        plot_crossover(cm, out / "crossover", title=f"{spec.name}: winner per workload (the cell's best design)")
    return df
