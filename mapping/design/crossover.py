"""The crossover map of a workload study: per (T, phase, batch), who wins and what bounds the chip.

For each workload (rows of the trials table with the same ``workload``), :func:`crossover_map` names:

- **the chip's design**: among the feasible trials (complete, every constraint met, printable) the one with the
  lowest energy per token at a BPC loss ≤ :data:`~mapping.design.spec.VERDICT_BPC_LOSS` (the verdict's rule: the
  measured loss, on the tokens the trials were scored on); when none reaches it, the feasible design with the
  lowest energy (its fidelity then bounds it, if its energy does not); when nothing is printable, the design with
  the smallest die (the die bounds it). Where only the head-level error is measured (T above the study's
  whole-model length, :mod:`mapping.design.workloads`), the lowest-energy feasible design: no conversion from
  head error to BPC is assumed, so such a design cannot meet the BPC threshold — if it spends least, the cell
  reads "chip, fidelity unproven", not "chip".
- **the winner**: the chip when its design meets the threshold and spends less per token than both same-terms
  baselines of that design (docs/energy.md: ``baseline_digital_same_node_j``, the same chip without the array;
  ``baseline_gpu_datapath_j``, the same operations at the GPU's node and the chip's precision); otherwise the
  lower of the two baselines.
- **the bound**: what keeps the chip from winning, or what its energy is made of where it wins: ``die`` (no
  printable design; the infeasible reason), ``fidelity`` (cheaper, but its lowest loss above the threshold),
  ``fidelity unproven`` (cheaper, head error only), or an energy term: ``periphery and SRAM floor`` when the
  design's energy without any array term is already above the winning baseline, else its largest term.

:func:`plot_crossover` draws it (``DIR/crossover.{png,svg}``) and :func:`crossover_text` says it in a sentence.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .spec import VERDICT_BPC_LOSS, fmt_value

__all__ = ["crossover_map", "crossover_text", "plot_crossover", "WINNERS", "BASELINE_NAMES"]

#: The baselines a cell's chip is held against, with their names in the map.
BASELINE_NAMES = {"baseline_digital_same_node_j": "digital same node", "baseline_gpu_datapath_j": "GPU datapath"}
WINNERS = ("chip", "chip, fidelity unproven", "digital same node", "GPU datapath")
_COLOURS = {"chip": "tab:green", "chip, fidelity unproven": "yellowgreen", "digital same node": "tab:blue",
            "GPU datapath": "tab:red"}


def _f(r, k) -> float:
    v = r.get(k) if hasattr(r, "get") else None
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _energy_bound(r, baseline_j: float) -> str:
    e, floor = _f(r, "energy_per_token_j"), _f(r, "floor_without_array_j")
    if floor == floor and floor >= baseline_j:
        return "periphery and SRAM floor"
    term = str(r.get("largest_term", "") or "")
    share = _f(r, f"energy_{term}_j") / e if term else math.nan
    return f"{term} {share:.0%}" if share == share else term or "energy"


def _fidelity_note(c: dict) -> str:
    """What the cell's fidelity is, in words."""
    if c.get("measure") == "head":
        return f"head error {c['head_error']:.3g} +- {c['head_error_se']:.2g} (BPC not measured)"
    if c.get("best_loss") is None:
        return "not measured (no printable design)"
    if c["fidelity_ok"]:
        return f"loss {c['bpc_loss']:.3g} +- {c['bpc_loss_se']:.2g} <= {VERDICT_BPC_LOSS:g}"
    return f"lowest loss {c['best_loss']:.3g} +- {c['best_loss_se']:.2g} > {VERDICT_BPC_LOSS:g}"


def _cell(g, fields) -> dict:
    """The crossover entry of one workload's trials ``g`` (see the module notes)."""
    first = g.iloc[0]
    out = {"workload": first["workload"], "T": int(first["T"]), "phase": first["phase"], "batch": int(first["batch"]),
           "n_trials": int(len(g)), "n_feasible": int(g["feasible"].sum()), "trial": None, "design": "",
           "winner": None, "bound": "no trial finished", "fidelity_ok": False, "measure": None}
    own = g[g["same_as"].isna()] if "same_as" in g else g
    done = own[own["state"].isin(["COMPLETE", "INFEASIBLE"])]
    if not len(done):
        return out
    feas = done[done["feasible"].astype(bool)]
    measured = feas[feas["fidelity_measure"].isin(["model", "head"])] if "fidelity_measure" in feas else feas
    head_only = len(measured) > 0 and not np.isfinite(measured["bpc_loss"].to_numpy(float)).any()
    out["measure"] = "head" if head_only else ("model" if len(measured) else None)
    if not len(feas):
        printable = done[done["infeasible_reason"].isna()] if "infeasible_reason" in done else done
        ref = (printable if len(printable) else done).sort_values(["area_mm2", "trial"]).iloc[0]
        out["bound"] = "constraints" if len(printable) else "die"
        out["infeasible_reason"] = ref.get("infeasible_reason")
        fid_ok = False
    else:
        loss = feas["bpc_loss"].to_numpy(float)
        ok = feas[np.isfinite(loss) & (loss <= VERDICT_BPC_LOSS)]
        fid_ok = bool(len(ok))
        ref = (ok if fid_ok else feas).sort_values(["energy_per_token_j", "trial"]).iloc[0]
        if np.isfinite(loss).any():
            best = feas.iloc[int(np.nanargmin(loss))]
            out.update(best_loss=float(best["bpc_loss"]), best_loss_se=_f(best, "bpc_loss_se"),
                       best_loss_trial=int(best["trial"]))
    e = _f(ref, "energy_per_token_j")
    base = {name: _f(ref, k) for k, name in BASELINE_NAMES.items()}
    lower = min(base, key=lambda n: base[n] if base[n] == base[n] else math.inf)
    out.update(trial=int(ref["trial"]), design=", ".join(f"{f} = {fmt_value(ref[f])}" for f in fields if f in ref),
               energy_per_token_j=e, area_mm2=_f(ref, "area_mm2"), latency_per_token_s=_f(ref, "latency_per_token_s"),
               bpc_loss=_f(ref, "bpc_loss"), bpc_loss_se=_f(ref, "bpc_loss_se"), head_error=_f(ref, "head_error"),
               head_error_se=_f(ref, "head_error_se"), fidelity_ok=fid_ok, largest_term=ref.get("largest_term"),
               baseline_gpu_board_j=_f(ref, "baseline_gpu_board_j"), fidelity_shared_with=ref.get(
                   "fidelity_shared_with"))
    for k in BASELINE_NAMES:
        out[k] = _f(ref, k)
    out["chip_over_digital_same_node"] = e / base["digital same node"]
    out["chip_over_gpu_datapath"] = e / base["GPU datapath"]
    out["chip_over_gpu_board"] = e / out["baseline_gpu_board_j"]
    out["fidelity"] = _fidelity_note(out)
    if out["bound"] in ("die", "constraints"):
        out["winner"] = lower
        return out
    cheaper = e < base[lower]
    if not cheaper:
        out["winner"], out["bound"] = lower, _energy_bound(ref, base[lower])
    elif fid_ok:
        out["winner"], out["bound"] = "chip", _energy_bound(ref, math.inf)
    elif head_only:
        out["winner"] = "chip, fidelity unproven"
        out["bound"] = f"fidelity unproven: head error {out['head_error']:.2g} +- {out['head_error_se']:.1g}"
    else:
        out["winner"] = lower
        out["bound"] = (f"fidelity: lowest loss {out['best_loss']:.2g} +- {out['best_loss_se']:.1g} > "
                        f"{VERDICT_BPC_LOSS:g}")
    return out


def crossover_map(df, fields=()):
    """One row per workload of a workload study's trials table ``df`` (see the module notes), in grid order."""
    import pandas as pd

    if not len(df) or "workload" not in df:
        return pd.DataFrame()
    rows = [_cell(g, fields) for _, g in df.sort_values(["workload_index", "trial"]).groupby("workload_index",
                                                                                            sort=True)]
    return pd.DataFrame(rows)


def _ts(v) -> str:
    return ", ".join(f"{int(t):,}" for t in sorted(set(v)))


def _bound_phrase(bound: str) -> str:
    if bound == "die":
        return "no design of the space fits the die"
    if bound == "constraints":
        return "no printable design meets the constraints"
    if bound == "periphery and SRAM floor":
        return "the chip's periphery and SRAM alone spend more"
    if bound.startswith("fidelity"):
        return f"the chip would spend less but {bound}"
    return f"the chip bound by {bound}"


def crossover_text(cm) -> str:
    """The map in sentences: per (phase, batch), where the chip wins (or spends least with its fidelity
    unproven), who wins elsewhere and what bounds the chip there; then the fidelity reached."""
    if not len(cm):
        return "No workload has a finished trial."
    parts = []
    for (phase, batch), g in cm.groupby(["phase", "batch"], sort=False):
        wins = g[g["winner"] == "chip"]
        unproven = g[g["winner"] == "chip, fidelity unproven"]
        ratios = ", ".join(f"{r.chip_over_digital_same_node:.2g}x the digital chip and {r.chip_over_gpu_datapath:.2g}x "
                           f"the GPU datapath at {r.T:,}" for r in wins.itertuples())
        s = f"{phase}, batch {batch}: " + (f"the array wins at T = {_ts(wins['T'])} ({ratios})" if len(wins) else
                                           "the array wins at no T")
        if len(unproven):
            s += (f"; it spends least but its fidelity is unproven (head error only) at T = {_ts(unproven['T'])} "
                  f"({', '.join(f'{r.chip_over_gpu_datapath:.2g}x the GPU datapath' for r in unproven.itertuples())})")
        rest = g[~g["winner"].isin(["chip", "chip, fidelity unproven"])]
        for (winner, bound), h in rest.groupby(["winner", "bound"], sort=False):
            col = "chip_over_gpu_datapath" if winner == "GPU datapath" else "chip_over_digital_same_node"
            ratio = ", ".join(f"{getattr(r, col):.3g}x" for r in h.itertuples() if getattr(r, col) == getattr(r, col))
            s += f"; the {winner} wins at T = {_ts(h['T'])} ({_bound_phrase(bound)}" + (
                f"; the chip spends {ratio} its energy)" if ratio and bound != "die" else ")")
        parts.append(s + ".")
    meas = cm[cm["measure"] == "model"] if "measure" in cm else cm.iloc[:0]
    if len(meas) and "best_loss" in meas:
        ok = meas[meas["fidelity_ok"].astype(bool)]
        best = meas.loc[meas["best_loss"].astype(float).idxmin()]
        parts.append(f"Where the whole model ran (BPC measured), {len(ok)} of {len(meas)} workloads have a design at a "
                     f"loss <= {VERDICT_BPC_LOSS:g}; the lowest loss is {best['best_loss']:.3g} +- "
                     f"{best['best_loss_se']:.2g} ({best['workload']}). Where only the head-level error was measured "
                     f"the chip is not called a winner (no conversion to BPC is assumed).")
    return " ".join(parts)


def plot_crossover(cm, path, *, title: str = "", formats=("png", "svg")) -> list:
    """The crossover map as a figure: a panel per (phase, batch), T on a log axis, the chip's energy per token
    (its cell's design) and the two same-terms baselines (and the GPU's board figure) on a log axis, each T's
    region coloured by its winner and annotated with its bound. Returns the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    from oscsim.plotting import figure, save, si_log_ticks

    phases = list(dict.fromkeys(cm["phase"]))
    batches = sorted(set(int(b) for b in cm["batch"]))
    fig, axes = figure(len(phases), len(batches), width=4.0 * len(batches) + 0.6, height=3.0 * len(phases) + 1.2,
                       squeeze=False)
    Ts = sorted(set(int(t) for t in cm["T"]))
    edges = _edges(Ts)
    ys = cm[["energy_per_token_j", *BASELINE_NAMES, "baseline_gpu_board_j"]].to_numpy(float)
    ys = ys[np.isfinite(ys) & (ys > 0)]
    lo, hi = (float(ys.min()), float(ys.max())) if len(ys) else (1e-9, 1e-6)
    span = math.log10(hi / lo) + 1.0
    lo, hi = lo / 10 ** (0.35 * span), hi * 10 ** (0.1 * span)  # a band below the data for the annotations
    # markers of decreasing size upwards, so that a baseline equal to the chip still shows around it
    series = (("energy_per_token_j", "chip (the cell's design)", "k", "-", "o", 3.5),
              ("baseline_digital_same_node_j", "digital chip, same node", "tab:blue", "--", "s", 7),
              ("baseline_gpu_datapath_j", "GPU datapath", "tab:red", "-.", "^", 5),
              ("baseline_gpu_board_j", "GPU board at peak", "0.45", ":", "v", 5))
    for i, phase in enumerate(phases):
        for j, batch in enumerate(batches):
            ax = axes[i][j]
            g = cm[(cm["phase"] == phase) & (cm["batch"] == batch)].sort_values("T")
            for r in g.itertuples():
                a, b = edges[Ts.index(int(r.T))]
                ax.axvspan(a, b, color=_COLOURS.get(r.winner, "0.85"), alpha=0.25, lw=0)
                ax.text(math.sqrt(a * b), 0.03, _short(r), ha="center", va="bottom", fontsize=6,
                        transform=ax.get_xaxis_transform())
            for col, label, c, ls, mk, ms in series:
                y = g[col].to_numpy(float)
                if col == "energy_per_token_j":  # the chip where it is printable
                    y = np.where(g["bound"].to_numpy() == "die", np.nan, y)
                ax.plot(g["T"].to_numpy(float), y, ls=ls, c=c, marker=mk, ms=ms, lw=1.2, label=label,
                        zorder=3 if col == "energy_per_token_j" else 2)  # the chip on top of a baseline it equals
            ax.set_xscale("log")
            ax.set_xlim(edges[0][0], edges[-1][1])
            ax.set_yscale("log")
            ax.set_ylim(lo, hi)
            si_log_ticks(ax, "y", "J")
            ax.set_xticks(Ts, [str(t) for t in Ts])
            ax.minorticks_off()
            ax.set_title(f"{phase}, batch {batch}", fontsize=9)
            ax.set_xlabel("context T [tokens]")
            ax.set_ylabel("energy per token [J]")
            ax.grid(True, which="major", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    shown = [w for w in WINNERS if w in set(cm["winner"].dropna())]
    handles += [Patch(color=_COLOURS[w], alpha=0.35) for w in shown]
    labels += [f"winner: {w}" for w in shown]
    handles.append(Patch(color="none"))
    labels.append("in each region: the bound; the chip's energy over the lower baseline")
    fig.legend(handles, labels, loc="outside lower center", ncols=3, fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    paths = save(fig, Path(path), formats)
    plt.close(fig)
    return paths


def _edges(Ts: list) -> list:
    """Each T's region on a log axis: between the geometric midpoints of its neighbours."""
    lg = np.log(np.asarray(Ts, float))
    if len(lg) == 1:
        return [(Ts[0] / 2, Ts[0] * 2)]
    mid = (lg[1:] + lg[:-1]) / 2
    left = np.concatenate([[lg[0] - (mid[0] - lg[0])], mid])
    right = np.concatenate([mid, [lg[-1] + (lg[-1] - mid[-1])]])
    return [(float(np.exp(a)), float(np.exp(b))) for a, b in zip(left, right)]


def _short(r) -> str:
    """A cell's annotation: its bound, and the chip over the lower baseline (×) where a chip design exists."""
    import textwrap

    bound = str(r.bound)
    if bound.startswith("fidelity unproven"):
        bound = "head error only"
    elif bound.startswith("fidelity"):
        bound = f"loss {r.best_loss:.2g}"
    elif bound == "periphery and SRAM floor":
        bound = "periphery + SRAM"
    e = r.energy_per_token_j
    lower = min(r.baseline_digital_same_node_j, r.baseline_gpu_datapath_j)
    bound = "\n".join(textwrap.wrap(bound.replace("_", " "), 9, break_long_words=False))
    if bound == "die" or not (e == e and lower == lower):
        return bound
    return f"{bound}\n{e / lower:.2g}x"
