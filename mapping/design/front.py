"""``front.html``: the interactive page of a design search (plotly, self-contained, works offline).

Three parts, one page:

- **the front**: BPC loss, area and latency against energy per token, as the PNG views
  (:mod:`mapping.design.plots`); hovering a point shows its trial, its design and its metrics;
- **parallel coordinates** of the searched fields and the objectives (plotly's ``Parcoords``), one line per
  complete trial, the front in red: drag along an axis to select a range;
- **each field's importance to each objective**: Optuna's PED-ANOVA evaluator
  (``optuna.importance.get_param_importances`` with ``target=`` one objective; it needs no scikit-learn), over
  the complete trials, normalised per objective.

Plotly's log axes take shape and annotation positions in log10 units, so every reference line is placed at
log10 of its value on a log axis (the data value on a linear one), and every axis range is set from the data
(and the reference lines inside a decade of it); a reference line further away is named in a note, not drawn.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np

from .spec import DesignSpec, fmt_value

__all__ = ["write_front_html", "front_figure", "parallel_figure", "importance_figure", "field_importances"]

_DASH = {"gpu_lower_j": "dash", "gpu_upper_j": "dashdot", "anchor_j": "dot"}
_METRIC_LABEL = {"bpc_loss": "BPC loss [bits/char]", "energy_per_token_j": "energy per token [nJ]",
                 "area_mm2": "area [mm²]", "latency_per_token_s": "latency per token [ns]"}
_METRIC_SCALE = {"bpc_loss": 1.0, "energy_per_token_j": 1e9, "area_mm2": 1.0, "latency_per_token_s": 1e9}


def _hover(row, spec: DesignSpec) -> str:
    from oscsim.plotting import si_format

    design = "<br>".join(f"{f} = {fmt_value(row[f])}" for f in spec.fields)
    return (f"trial {int(row['trial'])} ({'on the front' if row['on_front'] else 'feasible' if row['feasible'] else 'infeasible'})"
            f"<br>{design}<br>BPC loss {row['bpc_loss']:.4g}<br>energy {si_format(row['energy_per_token_j'], 'J', 4)}"
            f"/token<br>area {row['area_mm2']:.4g} mm²<br>latency {si_format(row['latency_per_token_s'], 's', 4)}"
            f"/token<br>largest term {row.get('largest_term', '')}")


def _axis(values, extra=()) -> tuple[bool, list]:
    """(log?, range) of a plotly axis over ``values`` (positive, finite) and the ``extra`` values lying within a
    decade of them: log over a decade or more, the range padded by 5 % of the span (in log10 units on a log
    axis, as plotly takes it)."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v) & (v > 0)]
    lo, hi = float(v.min()), float(v.max())
    near = [x for x in extra if lo / 10 <= x <= hi * 10]
    lo, hi = min([lo, *near]), max([hi, *near])
    if hi >= 10 * lo:
        a, b = math.log10(lo), math.log10(hi)
        pad = 0.05 * (b - a)
        return True, [a - pad, b + pad]
    pad = 0.05 * (hi - lo) or 0.05 * hi
    return False, [max(lo - pad, 0.0), hi + pad]


def front_figure(ok, spec: DesignSpec, refs: dict):
    """The three views side by side (plotly figure); ``ok`` holds the complete trials."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from oscsim.plotting import si_format

    ok = ok.assign(energy_nj=ok["energy_per_token_j"] * 1e9, latency_ns=ok["latency_per_token_s"] * 1e9,
                   hover=[_hover(r, spec) for _, r in ok.iterrows()])
    ycols = (("loss_plot", "BPC loss [bits/char]"), ("area_mm2", "area [mm²]"),
             ("latency_ns", "latency per token [ns]"))
    fig = make_subplots(rows=1, cols=3, subplot_titles=("BPC loss vs energy", "area vs energy", "latency vs energy"),
                        horizontal_spacing=0.07)
    groups = (("infeasible", ~ok["feasible"], "darkgrey"), ("feasible", ok["feasible"] & ~ok["on_front"], "royalblue"),
              ("on the front", ok["on_front"], "crimson"))
    for label, mask, color in groups:
        g = ok[mask]
        for col, (ycol, _) in enumerate(ycols, start=1):
            fig.add_trace(go.Scatter(x=g["energy_nj"], y=g[ycol], mode="markers", name=label, legendgroup=label,
                                     showlegend=col == 1, marker={"color": color, "size": 9 if "front" in label else 7},
                                     text=g["hover"], hovertemplate="%{text}<extra></extra>"), row=1, col=col)
    ref_nj = {k: v * 1e9 for k, (v, _, _) in refs.items()}
    xlog, xrange = _axis(ok["energy_nj"], ref_nj.values())
    off = [f"{refs[k][1]} {si_format(v * 1e-9, 'J')}" for k, v in ref_nj.items()
           if not xrange[0] <= (math.log10(v) if xlog else v) <= xrange[1]]
    for col, (ycol, title) in enumerate(ycols, start=1):
        ylog, yrange = _axis(ok[ycol], [0.05] if ycol == "loss_plot" else [])
        fig.update_xaxes(type="log" if xlog else "linear", range=xrange, title_text="energy per token [nJ]",
                         row=1, col=col)
        fig.update_yaxes(type="log" if ylog else "linear", range=yrange, title_text=title, row=1, col=col)
        _reference_lines(fig, col, refs, ref_nj, xlog, xrange)
        if ycol == "loss_plot":
            y = math.log10(0.05) if ylog else 0.05
            if yrange[0] <= y <= yrange[1]:
                fig.add_shape(type="line", xref="x domain", yref="y", x0=0, x1=1, y0=y, y1=y,
                              line={"color": "orange", "width": 1})
                fig.add_annotation(xref="x domain", yref="y", x=1, y=y, text="BPC loss 0.05", showarrow=False,
                                   xanchor="right", yanchor="bottom", font={"size": 10, "color": "darkorange"})
    note = f" (off the energy range: {'; '.join(off)})" if off else ""
    fig.update_layout(title=f"design {spec.name} ({spec.spec_hash}): hover a point for its design{note}", height=540,
                      width=1500, legend={"orientation": "h", "y": -0.18})
    return fig


def _reference_lines(fig, col: int, refs: dict, ref_nj: dict, xlog: bool, xrange: list) -> None:
    """The energy references of one panel: a vertical line at log10(value) on a log axis, labelled in panel 1."""
    from oscsim.plotting import si_format

    xref = "x" if col == 1 else f"x{col}"
    yref = ("y" if col == 1 else f"y{col}") + " domain"
    for k, v in ref_nj.items():
        x = math.log10(v) if xlog else v
        if not xrange[0] <= x <= xrange[1]:
            continue
        fig.add_shape(type="line", xref=xref, yref=yref, x0=x, x1=x, y0=0, y1=1,
                      line={"color": "green" if k == "anchor_j" else "black", "width": 1, "dash": _DASH[k]})
        if col == 1:
            fig.add_annotation(xref=xref, yref=yref, x=x, y=1, text=f"{refs[k][1]} {si_format(v * 1e-9, 'J')}",
                               showarrow=False, textangle=-90, xanchor="right", yanchor="top", font={"size": 9})


def _codes(values) -> tuple[list, list, list]:
    """(numeric values, tick values, tick texts) of one searched field for a parallel-coordinates axis."""
    vals = list(values)
    if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and v is not None
           and np.isfinite(v) for v in vals):
        return [float(v) for v in vals], None, None
    cats = sorted({fmt_value(v) for v in vals})
    return [float(cats.index(fmt_value(v))) for v in vals], list(range(len(cats))), cats


def parallel_figure(ok, spec: DesignSpec):
    """Parallel coordinates of the searched fields and the objectives, one line per complete trial."""
    import plotly.graph_objects as go

    dims = []
    for f in spec.fields:
        vals, tv, tt = _codes(ok[f])
        d = {"label": f, "values": vals}
        if tv is not None:
            d.update(tickvals=tv, ticktext=tt)
        dims.append(d)
    for m in spec.objectives:
        dims.append({"label": _METRIC_LABEL[m], "values": (ok[m].to_numpy(float) * _METRIC_SCALE[m]).tolist()})
    fig = go.Figure(go.Parcoords(line={"color": ok["on_front"].astype(int).tolist(), "cmin": 0, "cmax": 1,
                                       "colorscale": [[0, "lightsteelblue"], [1, "crimson"]]}, dimensions=dims))
    fig.update_layout(title="searched fields and objectives, one line per complete trial (red: on the front); "
                            "drag along an axis to select a range", height=480, width=1500)
    return fig


def field_importances(ok, spec: DesignSpec) -> dict:
    """``{objective: {field: importance}}`` by Optuna's PED-ANOVA evaluator over the complete trials (an
    in-memory study built from the trials table), each objective's importances summing to 1."""
    import optuna
    from optuna.importance import PedAnovaImportanceEvaluator, get_param_importances
    from optuna.trial import create_trial

    dists = spec.distributions()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # no "a new study created in memory" line
    study = optuna.create_study(directions=["minimize"] * len(spec.objectives))
    for _, r in ok.iterrows():
        params = {f: (r[f].item() if isinstance(r[f], np.generic) else r[f]) for f in spec.fields}
        study.add_trial(create_trial(params=params, distributions=dists,
                                     values=[float(r[m]) for m in spec.objectives]))
    out = {}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*computes the importances of params to achieve low.*")
        for i, m in enumerate(spec.objectives):
            imp = get_param_importances(study, target=lambda t, i=i: t.values[i],
                                        evaluator=PedAnovaImportanceEvaluator(), normalize=True)
            out[m] = {f: float(imp.get(f, 0.0)) for f in spec.fields}
    return out


def importance_figure(ok, spec: DesignSpec):
    """Grouped bars: each searched field's importance to each objective; a note instead where it cannot be
    computed (fewer complete trials than the evaluator needs, or a field that never varied)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    try:
        imp = field_importances(ok, spec)
    except (ValueError, RuntimeError) as exc:
        fig.add_annotation(xref="paper", yref="paper", x=0.5, y=0.5, showarrow=False,
                           text=f"importances not computed: {exc}")
        imp = {}
    for m, by_field in imp.items():
        fig.add_trace(go.Bar(x=list(by_field), y=list(by_field.values()), name=_METRIC_LABEL[m].split(" [")[0],
                             hovertemplate="%{x}: %{y:.3f}<extra>" + m + "</extra>"))
    fig.update_layout(barmode="group", height=420, width=1500,
                      title=f"importance of each searched field to each objective (Optuna PED-ANOVA over "
                            f"{len(ok)} complete trials; each objective sums to 1)",
                      yaxis={"title": {"text": "importance [fraction of the objective's]"}, "range": [0, 1]},
                      xaxis={"title": {"text": "searched field"}})
    return fig


def write_front_html(ok, spec: DesignSpec, refs: dict, path: Path) -> Path:
    """Write ``front.html``: the front, the parallel coordinates and the importances, plotly.js inlined once."""
    from ..sweep.run import atomic_write_bytes

    figs = (front_figure(ok, spec, refs), parallel_figure(ok, spec), importance_figure(ok, spec))
    parts = [f.to_html(full_html=False, include_plotlyjs=(k == 0), div_id=f"design-{name}")
             for k, (f, name) in enumerate(zip(figs, ("front", "parallel", "importance")))]
    page = (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>design {spec.name}</title></head>"
            f"<body>\n{''.join(parts)}\n</body></html>\n")
    path = Path(path)
    atomic_write_bytes(path, page.encode())
    return path
