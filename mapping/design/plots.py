"""Plots of a design search: BPC loss, area and latency against energy per token, and an interactive page.

- ``bpc_loss_vs_energy``: BPC loss [bits/char] vs chip energy per token; the GPU's lower and upper bounds and
  the gain-cell anchor as vertical lines (their median over the trials; the legend says when they vary because
  the search changes the energy section), the verdict's loss threshold as a horizontal line. A loss at or below
  the floor of the log axis (:data:`LOSS_FLOOR`, a chip no worse than the closed form on these tokens) is drawn
  at the floor with a downward marker.
- ``area_vs_energy``, ``latency_vs_energy``: the same designs, area [mm²] and latency per token.
- ``front.html`` (:mod:`mapping.design.front`): the three views, parallel coordinates of the searched fields and
  each field's importance to each objective, in one self-contained page.

An axis is logarithmic when its values span at least a decade and linear otherwise (within a decade a log axis
shows no tick number); energies on a log axis carry their SI prefix per tick ("10 nJ", "1 µJ"). Grey: complete
trials that violate a constraint; blue: feasible; red: on the front (disjoint sets, so every marker shows).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .spec import VERDICT_BPC_LOSS, DesignSpec

__all__ = ["plot_design", "LOSS_FLOOR", "reference_lines", "trial_groups"]

LOSS_FLOOR = 1e-4  # bits/char: the bottom of the log BPC-loss axis
_STYLE = {"gpu_lower_j": "--", "gpu_upper_j": "-.", "anchor_j": ":"}


def reference_lines(df) -> dict:
    """``{column: (median value [J], label, varies)}`` of the energy references present in the trials table."""
    out = {}
    for key, label in (("gpu_lower_j", "GPU board at peak"), ("gpu_upper_j", "GPU board, roofline time"),
                       ("anchor_j", "gain-cell attention (Leroux 2025)")):
        if key not in df:
            continue
        v = df[key].to_numpy(float)
        v = v[np.isfinite(v)]
        if len(v):
            out[key] = (float(np.median(v)), label, bool(v.min() != v.max()))
    return out


def trial_groups(ok) -> list:
    """``[(label, rows, colour, size, marker)]``: infeasible, feasible (off the front) and front trials."""
    return [("infeasible", ok[~ok["feasible"]], "0.6", 14, "o"),
            ("feasible", ok[ok["feasible"] & ~ok["on_front"]], "tab:blue", 18, "s"),
            ("on the front", ok[ok["on_front"]], "tab:red", 30, "D")]


def plot_design(df, spec: DesignSpec, plot_dir: str | Path, *, verdict: dict | None = None,
                formats=("png", "svg")) -> list:
    """Write the plots of a trials table into ``plot_dir`` and ``front.html`` beside it; returns the paths.

    Drawn in the project's style (:mod:`oscsim.plotting`: constrained layout, SI prefixes that keep numbers
    between 0.1 and 1000, the legend outside the axes naming every series and reference line).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from oscsim.plotting import save, si_scale

    from .front import write_front_html

    plot_dir = Path(plot_dir)
    plot_dir.mkdir(parents=True, exist_ok=True)
    ok = df[df["state"] == "COMPLETE"].copy()
    refs = reference_lines(ok)
    l_f, l_unit = si_scale(ok["latency_per_token_s"].to_numpy(float), "s")
    ok["loss_plot"] = ok["bpc_loss"].clip(lower=LOSS_FLOOR)
    ok["latency_plot"] = ok["latency_per_token_s"] * l_f
    views = (("bpc_loss_vs_energy", "loss_plot", "BPC loss [bits/char]", "bpc_loss", 1.0),
             ("area_vs_energy", "area_mm2", "area [mm²]", "area_mm2", 1.0),
             ("latency_vs_energy", "latency_plot", f"latency per token [{l_unit}]", "latency_per_token_s", l_f))
    best = (f"; best at loss ≤ {VERDICT_BPC_LOSS:g}: trial {verdict['best_trial']}"
            if verdict and verdict.get("best_trial") is not None else "")
    paths = []
    for name, ycol, ylabel, metric, scale in views:
        fig = _view(ok, spec, refs, ycol, ylabel, metric, scale,
                    f"{spec.name}: {len(ok)} trials, {int(ok['on_front'].sum())} on the front{best}")
        paths += save(fig, plot_dir / name, formats)
        plt.close(fig)
    paths.append(write_front_html(ok, spec, refs, plot_dir.parent / "front.html"))
    return paths


def _energy_axis(ax, ok, refs):
    """Chip energy per token on x: log with an SI prefix per tick over a decade or more, else linear in the
    prefix that fits. Returns (factor that turns joules into the plotted unit, unit of the reference labels)."""
    from oscsim.plotting import log_or_linear, si_log_ticks, si_scale

    e = ok["energy_per_token_j"].to_numpy(float)
    if log_or_linear(ax, "x", np.concatenate([e, [v for v, _, _ in refs.values()]])):
        si_log_ticks(ax, "x", "J")
        ax.set_xlabel("chip energy per token, attention layers [J]")
        return 1.0
    f, unit = si_scale(e, "J")
    ax.set_xlabel(f"chip energy per token, attention layers [{unit}]")
    return f


def _view(ok, spec: DesignSpec, refs: dict, ycol: str, ylabel: str, metric: str, scale: float, title: str):
    """One scatter view of the trials against energy, with its reference lines and a legend below."""
    from oscsim.plotting import figure, log_or_linear, si_format

    fig, ax = figure(width=6.4, height=4.6)
    e_f = _energy_axis(ax, ok, refs)
    for label, g, color, size, marker in trial_groups(ok):
        if not len(g):
            continue
        floor = g["bpc_loss"] <= LOSS_FLOOR if ycol == "loss_plot" else np.zeros(len(g), bool)
        ax.scatter(g.loc[~floor, "energy_per_token_j"] * e_f, g.loc[~floor, ycol], s=size, c=color, marker=marker,
                   label=label, zorder=3)
        if floor.any():
            ax.scatter(g.loc[floor, "energy_per_token_j"] * e_f, g.loc[floor, ycol], s=size, c=color, marker="v",
                       zorder=3, label=f"{label}, loss ≤ {LOSS_FLOOR:g} (at the floor)")
    for key, (v, label, varies) in refs.items():
        ax.axvline(v * e_f, ls=_STYLE[key], c="k" if "gpu" in key else "tab:green", lw=1,
                   label=f"{label} {si_format(v, 'J')}{' (median; varies)' if varies else ''}")
    ys = list(ok[ycol].to_numpy(float))
    if ycol == "loss_plot":
        ax.axhline(VERDICT_BPC_LOSS, c="tab:orange", lw=1, label=f"BPC loss {VERDICT_BPC_LOSS:g}")
        ys.append(VERDICT_BPC_LOSS)
    for c in spec.constraints:
        if c.metric == metric and c.bound * scale > 0:
            ax.axhline(c.bound * scale, c="tab:purple", lw=1, ls=":", label=f"constraint {c}")
            ys.append(c.bound * scale)
    log_or_linear(ax, "y", ys)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=2, fontsize=7)
    return fig
