"""Results of a design search: the trials table, the front, the verdict, written into the design folder.

- ``trials.parquet``: a row per trial in trial order: ``trial``, ``state`` (COMPLETE / FAIL / RUNNING; INFEASIBLE:
  not simulated because it cannot be printed, in a workload study), the searched fields (dotted names), the
  objectives, ``feasible`` (complete, every constraint met and no ``infeasible_reason``) and one
  ``constraint: ...`` column per constraint (its violation, ≤ 0 when met, relative to the bound), ``on_front``, every metric of
  :func:`mapping.design.evaluate.trial_metrics`, ``error``, ``same_as`` (the earlier trial of the same design
  whose result was copied rather than recomputed), ``config_json`` (the full chip config), the
  measured ``wall_s`` / ``chip_wall_s`` (not functions of the trial) and ``spec_hash``.
- ``front.parquet``: the rows on the front (complete, feasible, non-dominated over the objectives).
- ``report.json`` / ``report.md``: the verdict (:func:`verdict`) and the best design's energy decomposition.
- ``plots/``: :func:`mapping.design.plots.plot_design`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from .plots import plot_design
from .spec import VERDICT_BPC_LOSS, DesignSpec, fmt_value

__all__ = ["trials_table", "front_mask", "pareto_mask", "verdict", "write_results", "load_trials",
           "VERDICT_BPC_LOSS", "MEASURED_COLUMNS", "fmt_value", "load_recheck", "RECHECK", "FINETUNE",
           "load_finetune"]

RECHECK = "recheck.parquet"
"""The rescored front of a design folder (:func:`mapping.design.recheck.recheck_front` writes it)."""


def load_recheck(out: str | Path):
    """The rescored front of a design folder (``DIR/recheck.parquet``), or None."""
    import pandas as pd

    p = Path(out) / RECHECK
    if not p.is_file():
        return None
    try:
        return pd.read_parquet(p)
    except (OSError, ValueError) as exc:  # a cut or garbled file (pyarrow's errors are of these kinds)
        raise ValueError(f"{p} is damaged ({str(exc).splitlines()[0]}); delete it to rescore the front") from None


FINETUNE = "finetune.json"
"""The fine-tuned designs of a design folder and their sentence (:func:`mapping.design.finetune.finetune_front`)."""


def load_finetune(out: str | Path, spec_hash: str):
    """The fine-tune summary of a design folder for the study ``spec_hash`` (``DIR/finetune.json``), or None."""
    p = Path(out) / FINETUNE
    if not p.is_file():
        return None
    try:
        ft = json.loads(p.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{p} is damaged ({exc}); delete it and rerun with --finetune") from None
    return ft if isinstance(ft, dict) and ft.get("spec_hash") == spec_hash else None


#: Columns that are measurements of the run, not functions of the trial.
MEASURED_COLUMNS = ("wall_s", "chip_wall_s")


def pareto_mask(values) -> np.ndarray:
    """Mask of the non-dominated rows of ``values`` (n, m), every column minimised; rows with a NaN are never
    on the front; equal rows do not dominate each other."""
    v = np.asarray(values, float)
    if v.ndim != 2:
        raise ValueError(f"values must be 2-D (designs x objectives), got shape {v.shape}")
    ok = np.isfinite(v).all(axis=1)
    front = np.zeros(len(v), bool)
    for i in np.nonzero(ok)[0]:
        dom = ok & (v <= v[i]).all(axis=1) & (v < v[i]).any(axis=1)
        front[i] = not dom.any()
    return front


def front_mask(df, spec: DesignSpec) -> np.ndarray:
    """The front: complete, feasible trials not dominated over the spec's objectives (a trial whose result was
    copied from an earlier one of the same design is represented by that one)."""
    if not len(df):
        return np.zeros(0, bool)
    cand = (df["state"] == "COMPLETE").to_numpy() & df["feasible"].to_numpy(bool)
    if "same_as" in df:  # a copied result is its source trial's design, shown once
        cand &= df["same_as"].isna().to_numpy()
    vals = np.full((len(df), len(spec.objectives)), np.nan)
    for j, o in enumerate(spec.objectives):
        if o in df:
            vals[:, j] = df[o].to_numpy(float)
    vals[~cand] = np.nan
    return pareto_mask(vals)


def trials_table(study, spec: DesignSpec):
    """The trials of ``study`` as a DataFrame, one row per trial in trial order (see the module notes)."""
    import pandas as pd

    rows = []
    for t in sorted(study.get_trials(deepcopy=False), key=lambda t: t.number):
        ua = t.user_attrs
        m = ua.get("metrics") or {}
        # a design that cannot be printed, not simulated (a workload study, mapping.design.grid): INFEASIBLE
        state = "INFEASIBLE" if ua.get("not_simulated") else t.state.name
        row = {"trial": t.number, "state": state, **{f: t.params.get(f) for f in spec.fields}}
        row.update({o: m.get(o, math.nan) for o in spec.objectives})
        cons = ua.get("constraints")
        # feasible: complete, every constraint met, and printable (no infeasible_reason: the die within its limit)
        row["feasible"] = bool(t.state.name == "COMPLETE" and cons is not None and all(c <= 0 for c in cons)
                               and m.get("infeasible_reason") is None)
        for i, c in enumerate(spec.constraints):
            row[f"constraint: {c}"] = cons[i] if cons is not None else math.nan
        row.update({k: v for k, v in m.items() if k not in row})
        row["error"] = ua.get("error")
        row["same_as"] = ua.get("same_as")  # a design equal to an earlier trial's: its result, copied
        row["config_json"] = ua.get("config_json")
        row.update({c: (ua.get("measured") or {}).get(c) for c in MEASURED_COLUMNS})
        row["spec_hash"] = spec.spec_hash
        rows.append(row)
    df = pd.DataFrame(rows)
    if len(df):
        df.insert(df.columns.get_loc("feasible") + 1, "on_front", front_mask(df, spec))
    return df


def load_trials(out: str | Path):
    """The trials table of a design folder (``DIR/trials.parquet``)."""
    import pandas as pd

    return pd.read_parquet(Path(out) / "trials.parquet")


def _nj(x: float) -> str:
    return f"{x * 1e9:.4g} nJ"


def _with_recheck(df, recheck):
    """The trials table with the rescored front's columns (NaN where not rescored)."""
    if recheck is None or not len(recheck) or not len(df):
        return df
    cols = [c for c in recheck.columns if c.startswith("recheck_") or c == "trial"]
    return df.drop(columns=[c for c in cols if c != "trial" and c in df]).merge(recheck[cols], on="trial",
                                                                                 how="left")


def _x(r: float) -> str:
    """A ratio as the text states it: four digits near 1 (where 1.005 and 0.995 say different things)."""
    return f"{r:.4g}x" if 0.95 < r < 1.05 else f"{r:.3g}x"


def _tokens(n) -> str:
    return f"{int(n):,} tokens" if n == n else "an unrecorded number of tokens"


def _judged(ok, spec: DesignSpec):
    """(pool, loss, se, judged_on, n_tokens) of the verdict: the rescored front when there is one, else the
    search's own losses (see :func:`verdict`)."""
    if "recheck_bpc_loss" in ok and ok["recheck_bpc_loss"].notna().any():
        pool = ok[ok["on_front"] & ok["recheck_bpc_loss"].notna()]
        w = int(pool["recheck_windows"].iloc[0])
        n = float(pool["recheck_n_tokens"].iloc[0]) if "recheck_n_tokens" in pool else (
            w * spec.tokens.seq_len if spec.tokens.seq_len else math.nan)
        return (pool, pool["recheck_bpc_loss"], pool["recheck_bpc_loss_se"],
                f"{len(pool)} front designs (the candidates at the loss threshold) rescored on {w} windows of the "
                f"test split, {_tokens(n)} per design that the search never saw", n)
    pool = ok[ok["feasible"]] if ok["feasible"].any() else ok
    n = float(pool["n_tokens"].iloc[0]) if "n_tokens" in pool else math.nan
    se = pool["bpc_loss_se"] if "bpc_loss_se" in pool else pool["bpc_loss"] * math.nan
    count = f"{int(n):,} per design" if n == n else "their count unrecorded"
    return (pool, pool["bpc_loss"], se, f"the search's own tokens ({count}; no rescoring, so the front's losses are "
            f"biased low)", n)


def _search_statistics(ok, spec: DesignSpec) -> tuple[dict, str]:
    """The search's tokens per trial and the median SE of its losses, against the verdict's threshold."""
    se = ok["bpc_loss_se"].to_numpy(float) if "bpc_loss_se" in ok else np.array([])
    se = se[np.isfinite(se)]
    n = float(ok["n_tokens"].iloc[0]) if "n_tokens" in ok and len(ok) else math.nan
    if not len(se):
        return ({"search_tokens_per_trial": n, "search_se_median": math.nan},
                f"The search scored each trial on {_tokens(n)}, too few for a standard error of its loss. ")
    med = float(np.median(se))
    out = {"search_tokens_per_trial": n, "search_se_median": med}
    if med < VERDICT_BPC_LOSS:
        return out, (f"The search scored each trial on {_tokens(n)}; the median standard error of its losses, "
                     f"{med:.2g}, is below the {VERDICT_BPC_LOSS:g} threshold. ")
    need = n * (med / VERDICT_BPC_LOSS) ** 2 if n == n else math.nan
    out["search_tokens_for_threshold"] = need
    more = f" (about {_tokens(math.ceil(need))} per trial would bring it below)" if need == need else ""
    return out, (f"The search scored each trial on {_tokens(n)}; the median standard error of its losses, "
                 f"{med:.2g}, is not below the {VERDICT_BPC_LOSS:g} threshold{more}: it ranks designs within "
                 f"their noise. ")


def _comparisons(b, spec: DesignSpec, e: float) -> tuple[dict, str]:
    """The chip against the same chip without the array and the GPU's datapath bound (the headline), then the
    GPU's board figure and roofline, each at the design's window T."""
    T = int(b["T"]) if "T" in b and b["T"] == b["T"] else None
    at = f"T = {T}" if T else "the search's window"
    gpu, gp = spec.base.energy.gpu, spec.base.energy.gpu_precision
    a = float(b.get("baseline_digital_same_node_j", b.get("digital_only_chip_j", math.nan)))
    d = float(b.get("baseline_gpu_datapath_j", math.nan))
    lo, hi = float(b["gpu_lower_j"]), float(b["gpu_upper_j"])
    out = {"ratio_to_digital_same_node": e / a, "ratio_to_gpu_datapath": e / d, "T": T}
    node = float(b["node_nm"]) if "node_nm" in b else math.nan
    prec = spec.base.energy.digital_precision
    text = f"At {at}, the design spends {_x(e / a)} the same chip without the array ({_nj(a)}: the attention on its "
    text += f"digital periphery at {node:g} nm, {prec})"
    if d == d:
        text += f" and {_x(e / d)} the {gpu} datapath bound ({_nj(d)}: the same operations at the GPU's node, {prec})"
    text += (f". Against the {gpu} board figure (TDP / peak at full utilisation, {gp}, plus physical bytes; {at}) "
             f"of {_nj(lo)} it spends {_x(e / lo)}; the board's roofline upper bound is {_nj(hi)} ({at}). ")
    return out, text


def verdict(df, spec: DesignSpec, recheck=None) -> dict:
    """The best design at BPC loss ≤ :data:`VERDICT_BPC_LOSS` against the same chip without the array and the
    GPU's datapath bound (the headline), the GPU's board figure and the gain-cell anchor, or what bounds it, in
    words built from the numbers it states.

    With ``recheck`` (:func:`mapping.design.recheck.recheck_front`) the front's designs are judged by their loss
    on the rescoring tokens (independent of the search's), otherwise by the search's own loss; either way with
    its standard error and the tokens judged on. The search's own statistics (tokens per trial, median SE) are
    stated against the threshold. Among the designs at the threshold the one with the lowest energy per token
    is named.

    Returns
    -------
    dict with ``text`` (the verdict in words), ``best_trial`` (or None; ``closest_trial`` then), ``judged_on``,
    ``n_tokens_judged``, ``bpc_loss`` and ``bpc_loss_se`` of the named design, ``search_tokens_per_trial``,
    ``search_se_median`` (and ``search_tokens_for_threshold`` when that SE is not below the threshold),
    ``ratio_to_digital_same_node``, ``ratio_to_gpu_datapath``, ``ratio_to_gpu_lower`` (the board figure),
    ``ratio_to_anchor``, ``T``, ``decomposition_j`` (its terms, largest first), ``bounded_by``, ``array_gain``
    and ``amdahl_max_gain``, the counts and the reference lines (``gpu_lower_j``, ``gpu_upper_j``, ``anchor_j``).
    """
    out = {"threshold_bpc_loss": VERDICT_BPC_LOSS, "n_trials": int(len(df)), "best_trial": None}
    if not len(df):
        out["text"] = "No trial has finished."
        return out
    df = _with_recheck(df, recheck)
    ok = df[df["state"] == "COMPLETE"]
    out["n_complete"], out["n_feasible"] = int(len(ok)), int(ok["feasible"].sum()) if len(ok) else 0
    out["n_front"] = int(df["on_front"].sum())
    if "bpc_loss" not in ok or not len(ok):
        out["text"] = f"No trial completed ({len(df)} trials, {int((df['state'] == 'FAIL').sum())} failed)."
        return out
    pool, loss, se, out["judged_on"], out["n_tokens_judged"] = _judged(ok, spec)
    stats, stats_text = _search_statistics(ok, spec)
    out.update(stats)
    cand = pool[loss <= VERDICT_BPC_LOSS]
    reached = not cand.empty
    b = cand.loc[cand["energy_per_token_j"].idxmin()] if reached else pool.loc[loss.idxmin()]
    b_loss, b_se = float(loss.loc[b.name]), float(se.loc[b.name])
    e, lo, hi, anc = (float(b[k]) for k in ("energy_per_token_j", "gpu_lower_j", "gpu_upper_j", "anchor_j"))
    terms = {k.removeprefix("energy_"): float(b[k]) for k in b.index
             if k.startswith("energy_") and k.endswith("_j") and k != "energy_per_token_j" and math.isfinite(b[k])}
    terms = dict(sorted(terms.items(), key=lambda kv: -kv[1]))
    largest = next(iter(terms))
    floor = float(b["floor_without_array_j"])
    design = ", ".join(f"{f} = {fmt_value(b[f])}" for f in spec.fields)
    gain, amdahl = float(b.get("array_gain", math.nan)), float(b.get("amdahl_max_gain", math.nan))
    comp, comp_text = _comparisons(b, spec, e)
    out.update(best_trial=int(b["trial"]) if reached else None, closest_trial=None if reached else int(b["trial"]),
               bpc_loss=b_loss, bpc_loss_se=b_se, ratio_to_gpu_lower=e / lo, ratio_to_anchor=e / anc,
               decomposition_j=terms, gpu_lower_j=lo, gpu_upper_j=hi, anchor_j=anc, energy_per_token_j=e,
               area_mm2=float(b["area_mm2"]), latency_per_token_s=float(b["latency_per_token_s"]), design=design,
               array_gain=gain, amdahl_max_gain=amdahl, digital_only_chip_j=float(b.get("digital_only_chip_j",
                                                                                       math.nan)), **comp)
    pm = f" +- {b_se:.2g}" if math.isfinite(b_se) else " (no standard error: too few tokens)"
    what = (f"{int(b['trial'])} ({design}): BPC loss {b_loss:.3g}{pm}, {_nj(e)} per token, {b['area_mm2']:.4g} "
            f"mm^2, {b['latency_per_token_s'] * 1e9:.4g} ns per token. ")
    head = (f"Best design at BPC loss <= {VERDICT_BPC_LOSS:g}: trial {what}" if reached else
            f"No design reaches a BPC loss <= {VERDICT_BPC_LOSS:g}; the search cannot name a design at that loss "
            f"(widen the space or relax the constraints). The closest, with the lowest loss, is trial {what}")
    judged = f"Losses judged on {out['judged_on']}. " + stats_text
    ref = (f"Gain-cell attention (Leroux et al. 2025) {_nj(anc)}, normalised to this model and window: {e / anc:.3g}x "
           f"it. ")
    array = ""
    if math.isfinite(gain):
        array = (f"The array itself {'saves' if gain >= 1 else 'costs'} {_x(max(gain, 1 / gain))} against the same "
                 f"chip without it (Amdahl bound {amdahl:.3g}x)")
        array += (": what the design gains over the GPU's board figure is the node's and the periphery's, not the "
                  "oscillators'. " if e < lo and gain < 1.5 else ". ")
    share = terms[largest] / e
    if e < lo:
        out["bounded_by"] = largest
        out["text"] = (head + judged + comp_text + f"It beats the GPU's board figure by {lo / e:.3g}x. " + ref
                       + array + f"Its largest term is {largest} ({share:.0%} of its energy).")
        return out
    if floor >= lo:
        bound = (f"Without any array term (every oscillator, coupler, DAC, clock, detector and ADC charge at zero) it "
                 f"would still spend {_nj(floor)}, {floor / lo:.3g}x the GPU's board figure: the digital periphery, "
                 f"SRAM and leakage bound it, not the array.")
        out["bounded_by"] = "periphery, SRAM and leakage (floor_without_array_j)"
    else:
        bound = (f"The array's terms are {_nj(e - floor)} of it; the rest (periphery, SRAM, leakage) is {_nj(floor)}, "
                 f"below the GPU's board figure, so the array terms bound it: {largest} is the largest.")
        out["bounded_by"] = largest
    beaten = "No design at that loss beats" if reached else "It does not beat"
    out["text"] = (head + judged + comp_text + f"{beaten} the GPU's board figure. " + ref + array
                   + f"Its largest term is {largest} ({share:.0%} of its energy). " + bound)
    return out


def _report_md(spec: DesignSpec, v: dict, df) -> str:
    lines = [f"# Design search {spec.name}", "", f"spec hash {spec.spec_hash}; sampler {spec.sampler}, seed "
             f"{spec.seed}, population {spec.population}; objectives {', '.join(spec.objectives)}; constraints "
             f"{', '.join(map(str, spec.constraints)) or 'none'}.", "",
             f"{v.get('n_trials', 0)} trials, {v.get('n_complete', 0)} complete, {v.get('n_feasible', 0)} feasible, "
             f"{v.get('n_front', 0)} on the front.", "", "## Verdict", "", v["text"], ""]
    if v.get("decomposition_j"):
        which = "best" if v.get("best_trial") is not None else "closest"
        lines += [f"## Energy of the {which} design, per token", "", "| term | nJ | share |", "|---|---|---|"]
        e = v["energy_per_token_j"]
        lines += [f"| {k} | {x * 1e9:.4g} | {x / e:.1%} |" for k, x in v["decomposition_j"].items()]
        lines += [""]
    front = df[df["on_front"]] if len(df) else df
    if len(front):
        extra = [c for c in ("bpc_loss_se", "recheck_bpc_loss", "recheck_bpc_loss_se", "chip_over_digital_same_node",
                             "chip_over_gpu_datapath", "largest_term") if c in front]
        cols = ["trial", *spec.fields, *spec.objectives, *extra]
        lines += ["## Front", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for _, r in front.sort_values(spec.objectives[0]).iterrows():
            lines.append("| " + " | ".join(f"{r[c]:.4g}" if isinstance(r[c], float) else str(r[c]) for c in cols) + " |")
    return "\n".join(lines) + "\n"


def write_results(study, spec: DesignSpec, out: str | Path, *, T: int | None = None, plots: bool = True):
    """Write the tables, the report and the plots of ``study`` into ``out``; returns the trials table."""
    from ..sweep.run import atomic_write_bytes, write_df

    out = Path(out)
    df = trials_table(study, spec)
    if len(df):
        write_df(df, out / "trials.parquet")
        write_df(df[df["on_front"]].reset_index(drop=True), out / "front.parquet")
    recheck = load_recheck(out)
    v = verdict(df, spec, recheck)
    ft = load_finetune(out, spec.spec_hash)
    if ft is not None:  # the front's designs fine-tuned for their chips (mapping.design.finetune)
        v["finetune"], v["text"] = ft["designs"], f"{v['text']} {ft['text']}"
    atomic_write_bytes(out / "report.json", json.dumps(v, indent=1, default=str).encode())
    atomic_write_bytes(out / "report.md", _report_md(spec, v, _with_recheck(df, recheck)).encode())
    if plots and len(df) and (df["state"] == "COMPLETE").any():
        plot_design(df, spec, out / "plots", verdict=v)
    return df
