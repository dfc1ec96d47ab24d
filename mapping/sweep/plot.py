"""Plots of a sweep table: each metric against each swept parameter (seed spread as a band), heatmaps over
pairs of parameters, and the Pareto front of BPC loss against chip energy per token. PNG and SVG.

A *design* is one combination of the swept chip parameters; the seed columns (``noise_seed`` and, when it
comes from ``[seeds].mismatch``, ``mismatch_seed``) are repeats of a design. Curves show the mean over
seeds, the band the min–max over seeds; where several other parameters vary too, one curve is drawn per
combination of them (at most :data:`MAX_CURVES`, otherwise their mean, and the band then spans them too).
Only points with ``status == 'ok'`` are drawn.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["plot_sweep", "pareto_front", "parse_where", "unit_of", "MAX_CURVES"]

MAX_CURVES = 6
_DEFAULT_METRICS = ("bpc_difference", "bpc_chip", "mean_layer_rel_error", "energy_chip_j_per_token")
_LABELS = {
    "bpc_difference": "BPC loss (chip − closed form)",
    "bpc_chip": "BPC on the chip",
    "bpc_closed_form": "BPC closed form",
    "mean_layer_rel_error": "layer output rel. error (mean over layers)",
    "energy_chip_j_per_token": "chip energy per token (attention)",
    "energy_gpu_j_per_token": "GPU energy per token (attention, [energy] gpu_bound)",
    "wall_s": "wall time per point",
}
_PARAM_UNITS = {"bits": "bits", "fraction": "fraction of f0", "spread": "relative s.d.", "seed": "",
                "mismatch_seed": "", "noise_seed": ""}
_SUFFIX_UNITS = (("_j_per_token", "J/token"), ("_j", "J/token"), ("_hz", "Hz"), ("_k", "K"), ("_rad", "rad"),
                 ("cycles", "cycles"), ("_s", "s"), ("bpc_chip", "bits/char"), ("bpc_closed_form", "bits/char"),
                 ("bpc_difference", "bits/char"), ("rel_error", "relative"), ("cosine", "1"), ("kappa_tau", "rad"),
                 ("bits", "bits"))


def unit_of(name: str) -> str:
    """The unit of a column, from the naming convention of ChipConfig fields and sweep metrics (SI suffixes:
    ``_hz``, ``_k``, ``_rad``, ``_s``, ``_j``; ``*cycles``, ``*bits``; BPC in bits per character)."""
    leaf = name.split(".")[-1]
    if leaf in _PARAM_UNITS:
        return _PARAM_UNITS[leaf]
    for suf, u in _SUFFIX_UNITS:
        if leaf.endswith(suf):
            return u
    return ""


def _label(name: str, unit: str | None = None) -> str:
    u = unit_of(name) if unit is None else unit
    base = _LABELS.get(name, name)
    return f"{base} [{u}]" if u else base


_SCALABLE = ("J/token", "Hz", "s", "J")  # units shown with an SI prefix (nJ/token, GHz, ms)


def _scaled(name: str, values) -> tuple[float, str]:
    """(factor, axis label) of column ``name`` for ``values``: energies in nJ or µJ per token, not J."""
    from oscsim.plotting import si_scale

    u = unit_of(name)
    f, pu = si_scale(values, u) if u in _SCALABLE else (1.0, u)
    return f, _label(name, pu)


def _is_integer_axis(name: str, values) -> bool:
    """Bits, seeds and other whole-number parameters get whole-number ticks."""
    leaf = name.split(".")[-1]
    return (leaf.endswith("bits") or leaf.endswith("seed") or leaf in ("n_heads", "n_layers")) and _numeric(values) \
        and all(float(v).is_integer() for v in values)


def _title(text: str, width: int = 70) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width))


_MARKERS = ("o", "s", "^", "D", "v", "P")
_STYLES = ("-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1)))


def pareto_front(cost, loss) -> np.ndarray:
    """Mask of the non-dominated points when both ``cost`` and ``loss`` are minimised.

    A point is dominated when another is no worse in both and better in one. NaNs are never on the front.

    Parameters
    ----------
    cost, loss : (n,) array-like

    Returns
    -------
    (n,) bool array
    """
    c, l = np.asarray(cost, float), np.asarray(loss, float)
    if c.shape != l.shape or c.ndim != 1:
        raise ValueError(f"cost and loss must be 1-D of one length, got shapes {c.shape} and {l.shape}")
    ok = np.isfinite(c) & np.isfinite(l)
    front = np.zeros(c.shape, bool)
    for i in np.nonzero(ok)[0]:
        dom = ok & (c <= c[i]) & (l <= l[i]) & ((c < c[i]) | (l < l[i]))
        front[i] = not dom.any()
    return front


def _key(v) -> str:
    if isinstance(v, float) and math.isnan(v):
        v = None
    if isinstance(v, np.generic):
        v = v.item()
    return json.dumps(v)


def _numeric(values) -> bool:
    return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
               and math.isfinite(float(v)) for v in values)


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "none"
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.3g}"
    return str(v)


def _design_label(d: dict) -> str:
    return ", ".join(f"{k.split('.')[-1]}={_fmt(v)}" for k, v in d.items())


def _save(fig, path: Path, formats) -> list:
    from oscsim.plotting import save

    return save(fig, path, formats)


def _matches(v, want) -> bool:
    if _numeric([v]) and _numeric([want]):
        return float(v) == float(want)
    return _key(v) == _key(want)


def parse_where(items) -> dict:
    """``["coupling.bits=6", "device=ideal"]`` -> {field: value}; values parsed as numbers, ``none`` -> None."""
    out = {}
    for it in items or ():
        if "=" not in it:
            raise ValueError(f"--where takes FIELD=VALUE, got {it!r}")
        k, v = it.split("=", 1)
        v = v.strip()
        if v.lower() == "none":
            val = None
        else:
            try:
                val = json.loads(v)
            except json.JSONDecodeError:
                val = v
        out[k.strip()] = val
    return out


@dataclass
class _Sweep:
    """What every figure of one :func:`plot_sweep` call reads: the finished rows (dicts), the swept parameters
    that vary, the seed columns, the folder's meta, the ``--where`` filter, the seed count, and where and how the
    figures are saved (``save`` counts each on the progress bar)."""

    rows: list
    params: list
    meta: dict
    where: dict | None
    nseed: int
    plot_dir: Path
    formats: tuple
    save: Callable

    def title(self, text: str) -> str:
        return _title(f"{self.meta.get('name', '')}{_where_note(self.where)}: {text}")


def plot_sweep(out: str | Path, plot_dir: str | Path | None = None, *, metrics=None, formats=("png", "svg"),
               loss: str = "bpc_difference", cost: str = "energy_chip_j_per_token",
               where: dict | None = None, progress: bool | None = False) -> list[Path]:
    """Draw the plots of a sweep folder.

    Parameters
    ----------
    out : path
        Sweep folder (``oscsim sweep ... --out DIR``).
    plot_dir : path, optional
        Where the figures go (default ``DIR/plots``).
    metrics : list of str, optional
        Metric columns to plot against each parameter (default: BPC loss, chip BPC, mean layer error, chip
        energy per token, those present).
    formats : tuple of str
        Figure formats (matplotlib extensions).
    loss, cost : str
        Columns of the Pareto front (minimised both).
    where : dict, optional
        {swept field: value}: plot only the points with these values (e.g. the other parameters held at
        their preset values, so each curve shows one parameter and the band the seeds alone).
    progress : bool, optional
        A tqdm bar over the figures on stderr (None: when stderr is a terminal; default off).

    Returns
    -------
    list of Path
        The files written.
    """
    import matplotlib

    matplotlib.use("Agg")

    out = Path(out)
    meta, df = _finished_points(out, where)
    plot_dir = Path(plot_dir) if plot_dir else out / "plots"
    plot_dir.mkdir(parents=True, exist_ok=True)
    seeds = set(meta.get("seed_columns", ["noise_seed"]))
    params = [f for f in meta["swept_fields"] if f not in seeds and f in df.columns]
    params = [p for p in params if df[p].map(_key).nunique() > 1]
    metrics = [m for m in (metrics or _DEFAULT_METRICS) if m in df.columns]
    if not metrics:
        raise ValueError(f"none of the metrics {list(metrics or _DEFAULT_METRICS)} is in the table")
    rows = df.to_dict("records")
    nseed = len({tuple(_key(r.get(s)) for s in seeds if s in df.columns) for r in rows})
    heat_metrics = [m for m in (loss, "mean_layer_rel_error") if m in df.columns]
    n_figures = (len(metrics) * len(params) + len(heat_metrics) * len(params) * (len(params) - 1) // 2
                 + (loss in df.columns and cost in df.columns))
    bar = _bar(n_figures, progress)

    def save(fig, path, formats):  # the module's _save, counted on the bar
        bar.update(1)
        return _save(fig, path, formats)

    sw = _Sweep(rows=rows, params=params, meta=meta, where=where, nseed=nseed, plot_dir=plot_dir,
                formats=formats, save=save)
    written: list[Path] = []
    for m in metrics:
        for p in params:
            written += _metric_vs_parameter(sw, m, p)
    for i, p in enumerate(params):
        for q in params[i + 1:]:
            for m in heat_metrics:
                written += _heatmap(sw, m, p, q)
    if loss in df.columns and cost in df.columns:
        written += _pareto(sw, loss, cost)
    bar.close()
    return written


def _finished_points(out: Path, where: dict | None):
    """(meta, table) of a sweep folder: its finished points, those matching ``where``."""
    from .run import _read_meta, load_results

    meta = _read_meta(out)
    df = load_results(out)
    if len(df) == 0 or not (df["status"] == "ok").any():
        raise ValueError(f"{out}: no finished point to plot (see `oscsim sweep --status {out}`)")
    df = df[df["status"] == "ok"]
    for f, want in (where or {}).items():
        if f not in df.columns:
            raise ValueError(f"--where {f}: not a column of the table; swept: {', '.join(meta['swept_fields'])}")
        df = df[df[f].map(lambda v: _matches(v, want))]
        if len(df) == 0:
            raise ValueError(f"--where {f}={want!r}: no finished point has this value")
    return meta, df


def _metric_vs_parameter(sw: _Sweep, m: str, p: str) -> list:
    """Metric ``m`` against parameter ``p``: the mean over seeds, the band the min–max over seeds, one curve per
    combination of the other parameters (their mean when more than :data:`MAX_CURVES`)."""
    import matplotlib.pyplot as plt

    from oscsim.plotting import figure, integer_ticks, log_ticks

    rows, params = sw.rows, sw.params
    fm, ylab = _scaled(m, [r[m] for r in rows])
    others = [q for q in params if q != p]
    groups: dict = {}
    for r in rows:
        g = tuple(_key(r[q]) for q in others)
        groups.setdefault(g, []).append(r)
    if len(groups) > MAX_CURVES:
        groups = {(): rows}
        note = f"mean over seeds and over {', '.join(others)}; band: min–max"
    else:
        note = f"mean over {sw.nseed} seed(s); band: min–max over seeds"
    xs_all = [r[p] for r in rows]
    numeric = _numeric(xs_all)
    cats = sorted({_key(v) for v in xs_all})
    fx, xlab = _scaled(p, xs_all) if numeric else (1.0, _label(p))
    fig, ax = figure(width=5.6, height=3.8)
    for n, (g, rs) in enumerate(groups.items()):
        byx: dict = {}
        for r in rs:
            byx.setdefault(_key(r[p]), []).append(float(r[m]))
        keys = sorted(byx, key=(lambda k: float(json.loads(k))) if numeric else cats.index)
        x = np.array([float(json.loads(k)) * fx if numeric else cats.index(k) for k in keys])
        vals = [np.array(byx[k]) * fm for k in keys]
        mean = [np.nanmean(v) for v in vals]
        lo = [np.nanmin(v) for v in vals]
        hi = [np.nanmax(v) for v in vals]
        lab = _design_label({q: json.loads(v) for q, v in zip(others, g)}) if g else "mean"
        # curves that coincide stay visible: each its own marker and dash
        line, = ax.plot(x, mean, marker=_MARKERS[n % len(_MARKERS)], ls=_STYLES[n % len(_STYLES)],
                        ms=4.5 - 0.4 * n, lw=1.3, label=lab, alpha=0.9)
        ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.15, lw=0)
    if numeric:
        xv = np.array([float(v) for v in xs_all])
        if np.all(xv > 0) and xv.max() / xv.min() >= 20:
            ax.set_xscale("log")
            log_ticks(ax, "x")
        elif _is_integer_axis(p, xs_all):
            integer_ticks(ax, "x")
    else:
        ax.set_xticks(range(len(cats)), [_fmt(json.loads(c)) for c in cats])
    ax.set_xlabel(xlab)
    ax.set_ylabel(ylab)
    ax.set_title(sw.title(note), fontsize=8)
    if len(groups) > 1:
        ax.legend(fontsize=7, title=", ".join(q.split(".")[-1] for q in others), title_fontsize=7,
                  loc="center left", bbox_to_anchor=(1.01, 0.5))  # beside the axes: no curve hidden
    written = sw.save(fig, sw.plot_dir / f"{m}_vs_{p.replace('.', '_')}", sw.formats)
    plt.close(fig)
    return written


def _heatmap(sw: _Sweep, m: str, p: str, q: str) -> list:
    """Metric ``m`` over the pair of parameters (``p``, ``q``): the mean over seeds and the other parameters."""
    import matplotlib.pyplot as plt

    from oscsim.plotting import colorbar, figure

    rows = sw.rows
    kp = sorted({_key(r[p]) for r in rows}, key=_sort_key)
    kq = sorted({_key(r[q]) for r in rows}, key=_sort_key)
    Z = np.full((len(kq), len(kp)), np.nan)
    for a, x in enumerate(kp):
        for b, y in enumerate(kq):
            v = [float(r[m]) for r in rows if _key(r[p]) == x and _key(r[q]) == y]
            if v:
                Z[b, a] = np.nanmean(v)
    fz, zlab = _scaled(m, Z[np.isfinite(Z)])
    Z = Z * fz
    fig, ax = figure(width=5.6, height=4.2)
    ax.grid(False)
    im = ax.imshow(Z, origin="lower", aspect="auto", cmap="viridis")
    for a in range(len(kp)):
        for b in range(len(kq)):
            if np.isfinite(Z[b, a]):  # dark text on the light end of the colour map
                light = im.norm(Z[b, a]) > 0.6
                ax.text(a, b, f"{Z[b, a]:.3g}", ha="center", va="center", fontsize=7,
                        color="k" if light else "w")
    ax.set_xticks(range(len(kp)), [_fmt(json.loads(k)) for k in kp])
    ax.set_yticks(range(len(kq)), [_fmt(json.loads(k)) for k in kq])
    ax.set_xlabel(_label(p))
    ax.set_ylabel(_label(q))
    colorbar(fig, im, ax, zlab)
    ax.set_title(sw.title("mean over seeds and other parameters"), fontsize=8)
    written = sw.save(fig, sw.plot_dir / f"heatmap_{m}_{p.replace('.', '_')}_{q.replace('.', '_')}", sw.formats)
    plt.close(fig)
    return written


def _pareto(sw: _Sweep, loss: str, cost: str) -> list:
    """BPC loss against chip energy per token, one dot per design (mean over seeds, bars min–max), the front
    numbered at its points and named in the legend."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from oscsim.plotting import figure, log_ticks

    rows, params = sw.rows, sw.params
    designs: dict = {}  # combinations of the swept parameters, with per-seed values
    for r in rows:
        designs.setdefault(tuple(_key(r[p]) for p in params), []).append(r)
    keys = list(designs)
    fc_, xlab = _scaled(cost, [r[cost] for r in rows])
    c = np.array([np.nanmean([float(r[cost]) for r in designs[k]]) for k in keys]) * fc_
    lval = np.array([np.nanmean([float(r[loss]) for r in designs[k]]) for k in keys])
    lo = np.array([np.nanmin([float(r[loss]) for r in designs[k]]) for k in keys])
    hi = np.array([np.nanmax([float(r[loss]) for r in designs[k]]) for k in keys])
    front = pareto_front(c, lval)
    fig, ax = figure(width=6.4, height=4.6)
    ax.errorbar(c[~front], lval[~front], yerr=np.vstack([lval[~front] - lo[~front], hi[~front] - lval[~front]]),
                fmt="o", color="0.6", ms=4, elinewidth=0.8, label="dominated designs")
    order = np.argsort(c[front])
    fc, fl = c[front][order], lval[front][order]
    ax.errorbar(c[front], lval[front], yerr=np.vstack([lval[front] - lo[front], hi[front] - lval[front]]), fmt="o",
                color="C3", ms=5, elinewidth=0.8, label="Pareto front")
    ax.plot(fc, fl, "-", color="C3", lw=1, label="_front line")
    # front designs: a number at the point (kept inside the axes), the design it stands for in the legend
    front_keys = [k for k, f in zip(keys, front) if f]
    fx, fy = c[front], lval[front]
    xmid = np.nanmean(ax.get_xlim()) if not np.all(fx > 0) else np.sqrt(np.prod(ax.get_xlim()))
    handles, labels = ax.get_legend_handles_labels()
    for n, (k, x, y) in enumerate(sorted(zip(front_keys, fx, fy), key=lambda t: t[1]), start=1):
        dx = -10 if x > xmid else 6
        ax.annotate(str(n), (float(x), float(y)), textcoords="offset points", xytext=(dx, 5), fontsize=7,
                    color="C3", annotation_clip=True)
        handles.append(Line2D([], [], ls="none", marker=f"${n}$", color="C3", ms=6))
        labels.append(_design_label({p: json.loads(v) for p, v in zip(params, k)}))
    if np.all(c[np.isfinite(c)] > 0) and np.nanmax(c) / np.nanmin(c) >= 20:
        ax.set_xscale("log")
        log_ticks(ax, "x")
    ax.set_xlabel(xlab)
    ax.set_ylabel(_label(loss))
    ax.set_title(sw.title(f"{len(keys)} designs, mean over {sw.nseed} seed(s) (bars: min–max); front: lower "
                          "energy and lower loss"), fontsize=8)
    fig.legend(handles, labels, loc="outside lower center", ncols=2 if len(labels) > 4 else 1, fontsize=7)
    written = sw.save(fig, sw.plot_dir / "pareto_bpc_loss_vs_energy", sw.formats)
    plt.close(fig)
    return written


def _bar(total: int, progress: bool | None):
    import sys

    from tqdm import tqdm  # the plain bar: tqdm.auto warns in notebooks without ipywidgets

    if progress is None:
        progress = sys.stderr.isatty()
    return tqdm(total=total, disable=not progress, desc="plot", unit="figure", leave=False, file=sys.stderr,
                dynamic_ncols=True)


def _sort_key(k: str):
    v = json.loads(k)
    if v is None:
        return (1, 0.0, "")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (0, float(v), "")
    return (2, 0.0, str(v))


def _where_note(where) -> str:
    return f" ({_design_label(where)})" if where else ""
