"""One plot style for every figure of the project, and a check that a drawn figure reads.

Every package draws through this module (imports go ``mapping -> hw_models -> oscsim``, so all can use it).
The conventions:

- every axis label names its quantity and, in square brackets, its unit: ``"energy per token [nJ]"``;
  counts and ratios name what they count (``"[bits]"``, ``"[layer]"``, ``"[rel.]"``);
- a quantity is shown in the SI prefix that keeps its numbers between 0.1 and 1000 (:func:`si_scale`:
  energies in nJ or µJ, not J), so no axis needs an offset or a ``1e−7`` multiplier above it (both are
  switched off here, and :func:`layout_problems` reports one that appears);
- axes of integers (bits, layers, heads) get integer ticks (:func:`integer_ticks`); a log axis labels at
  most six decades (:func:`log_ticks`);
- figures use constrained layout (:func:`figure`), so titles, labels and legends stay inside; a legend names
  every series of its axes.

:func:`layout_problems` checks a figure as it is drawn, from matplotlib's own extents of the text
(tight bounding boxes): tick labels of an axis do not overlap each other, titles and axis labels overlap no
tick label or other label, every text lies inside the figure (and an annotation inside its axes), every axis
that shows data has a label with a unit, and several series come with a legend. The tests run it on every
figure kind the project draws (tests/test_plots_layout.py).
"""

from __future__ import annotations

import math
import re
from contextlib import contextmanager

import numpy as np

__all__ = ["RC", "style", "figure", "colorbar", "si_scale", "integer_ticks", "log_ticks", "save", "layout_problems",
           "UNIT_PATTERN"]

RC = {
    "figure.dpi": 110,
    "savefig.dpi": 120,
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 7.5,
    "legend.framealpha": 0.85,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.formatter.useoffset": False,  # an offset ("+1.8e9") reads as part of the title
    "axes.formatter.limits": (-4, 5),  # scientific multipliers only outside 1e-4..1e5 (scale the data instead)
    "axes.formatter.use_mathtext": True,
    "lines.markersize": 4,
}
"""The rcParams of every figure (used by :func:`style` and :func:`figure`)."""

UNIT_PATTERN = re.compile(r"\[[^\]]+\]")
"""An axis label's unit: text in square brackets."""

_PREFIXES = ((1e-15, "f"), (1e-12, "p"), (1e-9, "n"), (1e-6, "µ"), (1e-3, "m"), (1.0, ""), (1e3, "k"), (1e6, "M"),
             (1e9, "G"), (1e12, "T"))


@contextmanager
def style():
    """Context in which matplotlib draws with :data:`RC`."""
    import matplotlib

    with matplotlib.rc_context(RC):
        yield


def figure(nrows: int = 1, ncols: int = 1, *, width: float = 5.6, height: float = 3.6, **kw):
    """``(fig, axes)`` of ``plt.subplots`` in the project's style, with constrained layout.

    Parameters
    ----------
    nrows, ncols : int
    width, height : float
        Figure size [inch].
    **kw
        Passed to ``plt.subplots`` (e.g. ``sharex``).
    """
    import matplotlib.pyplot as plt

    with style():
        fig, ax = plt.subplots(nrows, ncols, figsize=(width, height), layout="constrained", **kw)
    # rcParams are read when artists are made: keep the style for what is drawn on these axes later
    for a in np.atleast_1d(ax).ravel():
        _apply_axes_style(a)
    return fig, ax


def _apply_axes_style(ax) -> None:
    for axis in (ax.xaxis, ax.yaxis):
        fmt = axis.get_major_formatter()
        if hasattr(fmt, "set_useOffset"):
            fmt.set_useOffset(False)
            fmt.set_powerlimits(RC["axes.formatter.limits"])
    ax.tick_params(labelsize=RC["xtick.labelsize"])
    ax.grid(True, alpha=RC["grid.alpha"])


def colorbar(fig, mappable, ax, label: str):
    """A colourbar for ``mappable`` beside ``ax`` with ``label`` (name [unit]), in the style's font sizes."""
    cb = fig.colorbar(mappable, ax=ax)
    cb.set_label(label, size=RC["axes.labelsize"])
    cb.ax.tick_params(labelsize=RC["ytick.labelsize"])
    return cb


def si_scale(values, unit: str) -> tuple[float, str]:
    """``(factor, prefixed unit)`` that shows ``values`` (in ``unit``) with numbers between 0.1 and 1000.

    Multiply the data by ``factor`` and label the axis with the prefixed unit: energies of 4e-7 J give
    (1e9, "nJ") and read 400. A compound unit is prefixed at its front ("J/token" -> "nJ/token").

    Parameters
    ----------
    values : array_like
        The data in ``unit`` (non-finite values ignored).
    unit : str

    Returns
    -------
    (float, str)
    """
    v = np.abs(np.asarray(values, dtype=float))
    v = v[np.isfinite(v) & (v > 0)]
    if v.size == 0 or not unit:
        return 1.0, unit
    top = float(np.max(v))
    scale, prefix = _PREFIXES[0]
    for s, p in _PREFIXES:
        if top >= s * (1 - 1e-12):  # the largest prefix not above the largest value
            scale, prefix = s, p
    return 1.0 / scale, prefix + unit


def integer_ticks(ax, axis: str = "x") -> None:
    """Only whole numbers on ``axis`` ("x" or "y") of ``ax`` (bits, layers, heads, seeds)."""
    from matplotlib.ticker import MaxNLocator

    (ax.xaxis if axis == "x" else ax.yaxis).set_major_locator(MaxNLocator(integer=True))


def log_ticks(ax, axis: str = "x", max_decades: int = 6) -> None:
    """A log ``axis`` with at most ``max_decades`` labelled decades and unlabelled minor ticks (no crowding)."""
    from matplotlib.ticker import LogFormatterSciNotation, LogLocator, NullFormatter

    a = ax.xaxis if axis == "x" else ax.yaxis
    a.set_major_locator(LogLocator(base=10, numticks=max_decades + 1))
    a.set_major_formatter(LogFormatterSciNotation())
    a.set_minor_locator(LogLocator(base=10, subs=np.arange(2, 10) * 0.1, numticks=100))
    a.set_minor_formatter(NullFormatter())


def save(fig, path, formats=("png",)) -> list:
    """Save ``fig`` as ``path`` with each suffix of ``formats`` (the layout is the figure's own: nothing is
    cropped, so what :func:`layout_problems` checked is what is saved). Each file is written to a temporary name
    beside it and renamed (a full disk or a kill leaves the old file or none, never a cut one). Returns the paths
    written."""
    import os
    from pathlib import Path

    out = []
    for ext in formats:
        p = Path(path).with_suffix(f".{ext}")
        tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
        try:
            fig.savefig(tmp, format=ext)
            os.replace(tmp, p)
        finally:
            if tmp.exists():
                tmp.unlink()
        out.append(p)
    return out


# ---------------------------------------------------------------------------------------------- checking
def _visible_text(t) -> bool:
    return t is not None and t.get_visible() and bool(t.get_text().strip())


def _tick_labels(axis):
    """The drawn major tick labels of an axis (those inside its view interval)."""
    lo, hi = sorted(axis.get_view_interval())
    out = []
    for tick in axis.get_major_ticks():
        loc = tick.get_loc()
        if loc is None or not (lo - 1e-9 * max(1.0, abs(lo)) <= loc <= hi + 1e-9 * max(1.0, abs(hi))):
            continue
        for lab in (tick.label1, tick.label2):
            if lab.get_visible() and lab.get_text().strip():
                out.append(lab)
    return out


def _is_colorbar(ax) -> bool:
    return hasattr(ax, "_colorbar")


def _shows_data(ax) -> bool:
    return bool(ax.lines or ax.images or ax.collections or ax.patches)


def _series(ax) -> list:
    """``[(artist, name or None)]``: the data series of an axes a reader must tell apart (lines of more than one
    point or with markers, scatter sets, error-bar sets), each with the name a legend would show. A label
    starting with "_" set by the author (a reference line, a band) leaves the artist out; matplotlib's own
    placeholder labels (``_child3``) count as a series without a name."""
    from matplotlib.collections import PathCollection
    from matplotlib.lines import Line2D

    in_container = {}
    for cont in ax.containers:
        for art in cont.get_children():
            in_container[id(art)] = cont.get_label()
    out = []
    for art in list(ax.lines) + [c for c in ax.collections if isinstance(c, PathCollection)]:
        if isinstance(art, Line2D):
            n = len(np.atleast_1d(art.get_xdata()))
            if n < 2 and art.get_marker() in (None, "None", "", " "):
                continue
        label = in_container.get(id(art), art.get_label()) or ""
        if label.startswith("_") and not re.match(r"_child\d+$", label):
            continue  # deliberately left out by its author
        out.append((art, None if label.startswith("_") else label))
    return out


def _overlap(a, b, tol: float = 0.5) -> bool:
    """Whether two display-space boxes overlap by more than ``tol`` pixels in both directions."""
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return w > tol and h > tol


def layout_problems(fig) -> list[str]:
    """What a reader would trip over in ``fig``, as drawn: a list of sentences (empty: none found).

    Checks, from the text's tight bounding boxes on the figure's own renderer: tick labels of one axis do
    not overlap; titles, axis labels and tick labels of different roles do not overlap (within an axes and
    across axes); every text lies inside the figure and every annotation (``ax.text``/``annotate``) inside
    its axes; no axis carries an offset or multiplier text; every axis that shows data (and every colourbar)
    has a label with a unit in brackets; an axes with two or more series has a legend naming each.
    """
    if not hasattr(fig.canvas, "get_renderer"):  # a closed pyplot figure keeps a bare canvas: draw with Agg
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    fb = fig.bbox
    problems: list[str] = []
    labelled = []  # (role, name, bbox) of every title, axis label and tick label, for cross-overlaps

    def box(t):
        return t.get_window_extent(renderer)

    def inside(b, outer, tol=1.0):
        return b.x0 >= outer.x0 - tol and b.y0 >= outer.y0 - tol and b.x1 <= outer.x1 + tol and b.y1 <= outer.y1 + tol

    for k, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        name = f"axes {k} ({ax.get_title() or ax.get_ylabel() or 'untitled'!r})"
        cbar = _is_colorbar(ax)
        for which, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            ticks = _tick_labels(axis)
            if not axis.get_visible():
                continue
            boxes = [box(t) for t in ticks]
            for i in range(len(boxes) - 1):
                for j in range(i + 1, len(boxes)):
                    if _overlap(boxes[i], boxes[j]):
                        problems.append(f"{name}: {which} tick labels {ticks[i].get_text()!r} and "
                                        f"{ticks[j].get_text()!r} overlap")
            labelled += [("tick", f"{name} {which} tick {t.get_text()!r}", b) for t, b in zip(ticks, boxes)]
            off = axis.get_offset_text()
            if _visible_text(off):
                problems.append(f"{name}: {which} axis has an offset/multiplier text {off.get_text()!r} "
                                "(scale the data to an SI prefix instead)")
            label = axis.get_label()
            shows = bool(ticks) and (cbar or _shows_data(ax))  # a colourbar's long axis, a data axis
            if shows and not (_visible_text(label) and UNIT_PATTERN.search(label.get_text())):
                problems.append(f"{name}: {which} axis label {label.get_text()!r} names no unit in brackets")
            if _visible_text(label):
                labelled.append(("label", f"{name} {which} label", box(label)))
        for t in (ax.title, getattr(ax, "_left_title", None), getattr(ax, "_right_title", None)):
            if _visible_text(t):
                labelled.append(("title", f"{name} title", box(t)))
        ab = ax.get_window_extent(renderer)
        for t in ax.texts:
            if _visible_text(t) and not inside(box(t), ab):
                problems.append(f"{name}: annotation {t.get_text()!r} runs outside its axes")
        leg = ax.get_legend()
        series = _series(ax)
        shown = {t.get_text() for lg in ([leg] if leg is not None else []) + list(fig.legends) for t in lg.get_texts()}
        if len(series) >= 2 and not shown:
            problems.append(f"{name}: {len(series)} series and no legend")
        elif shown:
            missing = [nm for _, nm in series if nm is None or nm not in shown]
            if missing:
                problems.append(f"{name}: the legend names {len(series) - len(missing)} of {len(series)} series")
        if leg is not None:
            labelled.append(("legend", f"{name} legend", leg.get_window_extent(renderer)))
    sup = getattr(fig, "_suptitle", None)
    for t in fig.texts + ([sup] if sup is not None and sup not in fig.texts else []):  # a suptitle is in texts too
        if _visible_text(t):
            labelled.append(("title", f"figure text {t.get_text()!r}", box(t)))
    for lg in fig.legends:
        labelled.append(("legend", "figure legend", lg.get_window_extent(renderer)))
    for role, name, b in labelled:
        if not inside(b, fb):
            problems.append(f"{name} lies outside the figure")
    for i in range(len(labelled)):
        for j in range(i + 1, len(labelled)):
            ri, ni, bi = labelled[i]
            rj, nj, bj = labelled[j]
            if ri == rj == "tick":  # within an axis: checked above; across axes: a shared edge may touch
                if ni.split(" tick ")[0] == nj.split(" tick ")[0]:
                    continue
            if ri == "legend" or rj == "legend":  # a legend sits inside its axes, over tick labels only by bug
                if "tick" in (ri, rj) or "label" in (ri, rj):
                    if _overlap(bi, bj):
                        problems.append(f"{ni} and {nj} overlap")
                continue
            if _overlap(bi, bj):
                problems.append(f"{ni} and {nj} overlap")
    return problems

