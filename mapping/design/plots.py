"""Plots of a design search: BPC loss, area and latency against energy per token, and an interactive page.

- ``bpc_loss_vs_energy``: BPC loss [bits/char] vs chip energy per token (nJ or the SI prefix that fits), both log; the GPU's lower and
  upper bounds and the gain-cell anchor as vertical lines (their median over the trials; the title says when
  they vary because the search changes the energy section), the verdict's loss threshold as a horizontal
  line. A loss at or below the floor of the log axis (:data:`LOSS_FLOOR`, a chip no worse than the closed form
  on these tokens) is drawn at the floor with a downward marker.
- ``area_vs_energy``, ``latency_vs_energy``: the same designs, area [mm²] and latency per token.
- ``front.html``: plotly, the three views; hovering a point shows its trial, design and metrics.

Grey: every complete trial; blue: feasible; red: on the front.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .spec import VERDICT_BPC_LOSS, DesignSpec, fmt_value

__all__ = ["plot_design", "LOSS_FLOOR"]

LOSS_FLOOR = 1e-4  # bits/char: the bottom of the log BPC-loss axis
_STYLE = {"gpu_lower_j": "--", "gpu_upper_j": "-.", "anchor_j": ":"}


def _refs(df) -> dict:
    out = {}
    for key, label in (("gpu_lower_j", "GPU lower bound"), ("gpu_upper_j", "GPU upper bound"),
                       ("anchor_j", "gain-cell attention (Leroux 2025)")):
        v = df[key].to_numpy(float)
        v = v[np.isfinite(v)]
        if len(v):
            out[key] = (float(np.median(v)), label, bool(v.min() != v.max()))
    return out


def _hover(row, spec: DesignSpec) -> str:
    design = "<br>".join(f"{f} = {fmt_value(row[f])}" for f in spec.fields)
    return (f"trial {int(row['trial'])}<br>{design}<br>BPC loss {row['bpc_loss']:.4g}<br>"
            f"energy {row['energy_per_token_j'] * 1e9:.4g} nJ/token<br>area {row['area_mm2']:.4g} mm²<br>"
            f"latency {row['latency_per_token_s'] * 1e9:.4g} ns/token<br>largest term {row['largest_term']}")


def plot_design(df, spec: DesignSpec, plot_dir: str | Path, *, verdict: dict | None = None,
                formats=("png", "svg")) -> list:
    """Write the plots of a trials table into ``plot_dir``; returns the paths.

    Drawn in the project's style (:mod:`oscsim.plotting`: constrained layout, energies with the SI prefix that
    keeps them readable, at most six labelled decades per log axis, the legend outside the axes naming every
    series and reference line).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from oscsim.plotting import figure, log_ticks, save, si_scale

    plot_dir = Path(plot_dir)
    plot_dir.mkdir(parents=True, exist_ok=True)
    ok = df[df["state"] == "COMPLETE"].copy()
    refs = _refs(ok)
    e_all = np.concatenate([ok["energy_per_token_j"].to_numpy(float), [v for v, _, _ in refs.values()]])
    e_f, e_unit = si_scale(e_all, "J")
    l_f, l_unit = si_scale(ok["latency_per_token_s"].to_numpy(float), "s")
    ok["energy_plot"] = ok["energy_per_token_j"] * e_f
    ok["loss_plot"] = ok["bpc_loss"].clip(lower=LOSS_FLOOR)
    ok["latency_plot"] = ok["latency_per_token_s"] * l_f
    groups = (("all trials", ok, "0.7", 14, "o"), ("feasible", ok[ok["feasible"]], "tab:blue", 18, "s"),
              ("front", ok[ok["on_front"]], "tab:red", 30, "D"))
    views = (("bpc_loss_vs_energy", "loss_plot", "BPC loss [bits/char]", "bpc_loss", 1.0),
             ("area_vs_energy", "area_mm2", "area [mm²]", "area_mm2", 1.0),
             ("latency_vs_energy", "latency_plot", f"latency per token [{l_unit}]", "latency_per_token_s", l_f))
    best = (f"; best at loss ≤ {VERDICT_BPC_LOSS:g}: trial {verdict['best_trial']}"
            if verdict and verdict.get("best_trial") is not None else "")
    paths = []
    for name, ycol, ylabel, metric, scale in views:
        fig, ax = figure(width=6.4, height=4.6)
        for label, g, color, size, marker in groups:
            if not len(g):
                continue
            floor = g["bpc_loss"] <= LOSS_FLOOR if ycol == "loss_plot" else np.zeros(len(g), bool)
            ax.scatter(g.loc[~floor, "energy_plot"], g.loc[~floor, ycol], s=size, c=color, marker=marker, label=label,
                       zorder=3)
            if floor.any():
                ax.scatter(g.loc[floor, "energy_plot"], g.loc[floor, ycol], s=size, c=color, marker="v", zorder=3,
                           label=f"{label}, loss ≤ {LOSS_FLOOR:g} (at the floor)")
        for key, (v, label, varies) in refs.items():
            ax.axvline(v * e_f, ls=_STYLE[key], c="k" if "gpu" in key else "tab:green", lw=1,
                       label=f"{label} {v * e_f:.3g} {e_unit}{' (median; varies)' if varies else ''}")
        if ycol == "loss_plot":
            ax.axhline(VERDICT_BPC_LOSS, c="tab:orange", lw=1, label=f"BPC loss {VERDICT_BPC_LOSS:g}")
        for c in spec.constraints:
            if c.metric == metric and c.bound * scale > 0:
                ax.axhline(c.bound * scale, c="tab:purple", lw=1, ls=":", label=f"constraint {c}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        log_ticks(ax, "x")
        log_ticks(ax, "y")
        ax.set_xlabel(f"chip energy per token, attention layers [{e_unit}]")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{spec.name}: {len(ok)} trials, {int(ok['on_front'].sum())} on the front{best}")
        ax.grid(True, which="both", alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=2, fontsize=7)
        paths += save(fig, plot_dir / name, formats)
        plt.close(fig)
    paths.append(_html(ok.assign(energy_nj=ok["energy_per_token_j"] * 1e9,
                                 latency_ns=ok["latency_per_token_s"] * 1e9), spec, refs, plot_dir.parent / "front.html"))
    return paths


def _html(ok, spec: DesignSpec, refs: dict, path: Path) -> Path:
    """One self-contained page (plotly.js inlined, works offline): the three views side by side."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=3, subplot_titles=("BPC loss vs energy", "area vs energy",
                                                         "latency vs energy"))
    hover = [_hover(r, spec) for _, r in ok.iterrows()]
    ok = ok.assign(hover=hover)
    for label, mask, color in (("other", ~ok["feasible"], "lightgrey"), ("feasible", ok["feasible"] & ~ok["on_front"],
                                                                         "royalblue"), ("front", ok["on_front"], "crimson")):
        g = ok[mask]
        for col, ycol in enumerate(("loss_plot", "area_mm2", "latency_ns"), start=1):
            fig.add_trace(go.Scatter(x=g["energy_nj"], y=g[ycol], mode="markers", name=label, legendgroup=label,
                                     showlegend=col == 1, marker={"color": color, "size": 8 if label == "front" else 6},
                                     text=g["hover"], hovertemplate="%{text}<extra></extra>"), row=1, col=col)
    for key, (v, label, _) in refs.items():
        for col in (1, 2, 3):
            fig.add_vline(x=v * 1e9, line_dash={"--": "dash", "-.": "dashdot", ":": "dot"}[_STYLE[key]], line_width=1,
                          row=1, col=col,
                          annotation_text=label if col == 1 else None, annotation_font_size=9)
    for col, title in enumerate(("BPC loss [bits/char]", "area [mm²]", "latency per token [ns]"), start=1):
        fig.update_xaxes(type="log", title_text="energy per token [nJ]", row=1, col=col)
        fig.update_yaxes(type="log", title_text=title, row=1, col=col)
    fig.update_layout(title=f"design {spec.name} ({spec.spec_hash}): hover a point for its design", height=520,
                      width=1500)
    from ..sweep.run import atomic_path

    with atomic_path(path) as tmp:  # a full disk leaves no cut page behind
        fig.write_html(tmp, include_plotlyjs=True, full_html=True)
    return path
