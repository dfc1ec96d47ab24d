"""One plot style for every figure of the project, and a check that a drawn figure reads.

Every package draws through this module (imports go ``mapping -> hw_models -> oscsim``, so all can use it).
The conventions:

- every axis label names its quantity and, in square brackets, its unit: ``"energy per token [nJ]"``;
  counts and ratios name what they count (``"[bits]"``, ``"[layer]"``, ``"[rel.]"``);
- a quantity is shown in the SI prefix that keeps its numbers between 0.1 and 1000 (:func:`si_scale`:
  energies in nJ or µJ, not J), so no axis needs an offset or a ``1e−7`` multiplier above it (both are
  switched off here, and :func:`layout_problems` reports one that appears);
- axes of integers (bits, layers, heads) get integer ticks (:func:`integer_ticks`); a log axis labels at
  most six decades (:func:`log_ticks`), and only values spanning a decade or more get one
  (:func:`log_or_linear`: inside one decade a log axis shows no tick number); a log axis of a quantity with a
  unit labels each tick in its own SI prefix (:func:`si_log_ticks`: "10 nJ", "1 µJ"), and numbers in text
  carry theirs (:func:`si_format`: "3.07 nJ", not "0.00307 µJ");
- figures use constrained layout (:func:`figure`), so titles, labels and legends stay inside; a legend names
  every series of its axes.

:func:`layout_problems` checks a figure as it is drawn, from matplotlib's own extents of the text
(tight bounding boxes) and its rendering: every value axis shows at least two tick numbers, tick labels of an
axis do not overlap each other, titles and axis labels overlap no tick label or other label and run into no
other axes (a colourbar), every text lies inside the figure (and an annotation inside its axes), every axis
that shows data has a label with a unit, SI numbers stay between 0.1 and 1000, several series come with a
legend, and every series the legend names leaves a visible mark. The tests run it on every figure kind the
project draws, ``make demo``'s included (tests/test_plots_layout.py).
"""

from __future__ import annotations

import math
import re
from contextlib import contextmanager

import numpy as np

__all__ = ["RC", "style", "figure", "colorbar", "si_scale", "si_format", "integer_ticks", "log_ticks", "log_or_linear",
           "si_log_ticks", "save", "layout_problems", "UNIT_PATTERN"]

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


def si_format(value: float, unit: str, digits: int = 3) -> str:
    """``value`` (in ``unit``) written with the SI prefix that keeps its number between 0.1 and 1000 (3.07e-9 J ->
    "3.07 nJ"), to ``digits`` significant digits."""
    f, u = si_scale([value], unit)
    return f"{value * f:.{digits}g} {u}"


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


def log_or_linear(ax, axis: str, values, max_decades: int = 6) -> bool:
    """A log ``axis`` (:func:`log_ticks`) when the positive ``values`` span at least one decade, else a linear one.

    Within less than a decade a log axis has no labelled decade in view (901-915 ns shows no tick number), so a
    linear axis is the readable choice there. Returns whether the axis is logarithmic.
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    log = v.size > 0 and float(v.max()) >= 10.0 * float(v.min())
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log" if log else "linear")
    if log:
        log_ticks(ax, axis, max_decades)
    else:
        _apply_axes_style(ax)
    return log


def si_log_ticks(ax, axis: str, unit: str, max_decades: int = 6) -> None:
    """A log ``axis`` whose tick labels carry each its own SI prefix and ``unit`` ("10 nJ", "100 nJ", "1 µJ"), so
    every number stays between 0.1 and 1000 across decades; the data must be in the base ``unit``."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    a = ax.xaxis if axis == "x" else ax.yaxis
    a.set_major_locator(LogLocator(base=10, numticks=max_decades + 1))
    a.set_major_formatter(FuncFormatter(lambda v, _pos: si_format(v, unit, 3) if v > 0 else ""))
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
    """The drawn tick labels of an axis, major and minor (those inside its view interval)."""
    lo, hi = sorted(axis.get_view_interval())
    out = []
    for tick in list(axis.get_major_ticks()) + list(axis.get_minor_ticks()):
        loc = tick.get_loc()
        if loc is None or not (lo - 1e-9 * max(1.0, abs(lo)) <= loc <= hi + 1e-9 * max(1.0, abs(hi))):
            continue
        for lab in (tick.label1, tick.label2):
            if lab.get_visible() and lab.get_text().strip():
                out.append(lab)
    return out


def _long_axis(ax, which: str) -> bool:
    """Whether ``which`` ("x"/"y") of ``ax`` carries values: both axes of a plot, the long axis of a colourbar."""
    if not _is_colorbar(ax):
        return True
    return (ax._colorbar.orientation == "vertical") == (which == "y")


_SI_UNITS = "J|s|W|Hz|V|A|F"
_SI_NUMBER = re.compile(rf"(?<![\w.,^{{])(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s?([fpnµumkMGT]?)({_SI_UNITS})(?![\w²³])")
_AXIS_SI_UNIT = re.compile(rf"\[([fpnµumkMGT]?)({_SI_UNITS})(?:/[^\]]*)?\]")
_MATH_POWER = re.compile(r"(?:([-\d.]+)\s*\\times\s*)?10\^\{\s*(?:\\mathdefault\{)?([-−+]?\d+)")


def _si_text_problems(where: str, text: str) -> list[str]:
    """A number with an SI unit outside 0.1..1000 in ``text`` ("0.00307 µJ" should read "3.07 nJ")."""
    out = []
    for m in _SI_NUMBER.finditer(text):
        v = float(m.group(1))
        if v != 0 and not 0.1 <= v < 1000:
            out.append(f"{where} reads {m.group(0)!r}: use the SI prefix that keeps the number between 0.1 and 1000")
    return out


def _tick_value(text: str):
    """The number a tick label shows (plain or ``a×10^{b}`` mathtext), or None."""
    t = text.replace("−", "-").replace("$", "")
    m = _MATH_POWER.search(t)
    t = re.sub(r"\\mathdefault\{([^}]*)\}", r"\1", t)
    if m:
        return float(m.group(1) or 1.0) * 10.0 ** int(m.group(2).replace("−", "-"))
    try:
        return float(t.replace(",", ""))
    except ValueError:
        return None


def _axis_si_problems(name: str, which: str, label: str, ticks) -> list[str]:
    """Tick numbers of an axis in an SI unit (``[nJ]``, ``[µs]``) that all lie below 0.1 or at/above 1000."""
    if not _AXIS_SI_UNIT.search(label):
        return []
    vals = [abs(v) for v in (_tick_value(t.get_text()) for t in ticks) if v is not None and v != 0]
    if vals and (max(vals) < 0.1 or min(vals) >= 1000):
        return [f"{name}: {which} tick numbers {min(vals):g}..{max(vals):g} in {label!r}: use the SI prefix that "
                "keeps them between 0.1 and 1000"]
    return []


def _hidden_series(fig, named) -> list[str]:
    """Legend entries whose series leaves no visible pixel: each is hidden in turn and the rendering compared.

    ``named`` is ``[(axes name, artist, legend text)]``. A series drawn entirely under others (four tokens on one
    line at 0) reads as a legend entry for a line that is not there.
    """
    if not hasattr(fig.canvas, "buffer_rgba") or not named:
        return []
    fig.canvas.draw()
    base = np.asarray(fig.canvas.buffer_rgba())[..., :3].astype(np.int16)
    out = []
    for name, art, text in named:
        art.set_visible(False)
        fig.canvas.draw()
        img = np.asarray(fig.canvas.buffer_rgba())[..., :3].astype(np.int16)
        art.set_visible(True)
        if int(np.count_nonzero(np.abs(img - base).max(-1) > 40)) < 10:
            out.append(f"{name}: the legend entry {text!r} matches no visible line (drawn under others)")
    fig.canvas.draw()
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

    Checks, from the text's tight bounding boxes on the figure's own renderer: every axis that carries values
    shows at least two tick numbers (a log axis inside one decade shows none); tick labels of one axis do not
    overlap; titles, axis labels and tick labels of different roles do not overlap (within an axes and across
    axes), and no title or axis label runs into another axes (a colourbar hiding part of a title); every text
    lies inside the figure and every annotation (``ax.text``/``annotate``) inside its axes; no axis carries an
    offset or multiplier text; every axis that shows data (and every colourbar) has a label with a unit in
    brackets; numbers with an SI unit, in any text or on an axis in such a unit, lie between 0.1 and 1000; an
    axes with two or more series has a legend naming each, and every series the legend names leaves a visible
    mark (it is not drawn entirely under others).
    """
    if not hasattr(fig.canvas, "get_renderer"):  # a closed pyplot figure keeps a bare canvas: draw with Agg
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    problems: list[str] = []
    labelled = []  # (role, name, bbox, axes) of every title, axis label and tick label, for cross-overlaps
    named = []  # (axes name, artist, legend text) of the series a legend names
    for k, ax in enumerate(fig.axes):
        if ax.get_visible():
            problems += _axes_problems(fig, k, ax, renderer, labelled, named)
    sup = getattr(fig, "_suptitle", None)
    for t in fig.texts + ([sup] if sup is not None and sup not in fig.texts else []):  # a suptitle is in texts too
        if _visible_text(t):
            labelled.append(("title", f"figure text {t.get_text()!r}", t.get_window_extent(renderer), None))
            problems += _si_text_problems(f"figure text {t.get_text()!r}", t.get_text())
    for lg in fig.legends:
        labelled.append(("legend", "figure legend", lg.get_window_extent(renderer), None))
        for t in lg.get_texts():
            problems += _si_text_problems("the figure legend", t.get_text())
    problems += _overlap_problems(fig, labelled, renderer)
    problems += _hidden_series(fig, named)
    return problems


def _inside(b, outer, tol=1.0) -> bool:
    return b.x0 >= outer.x0 - tol and b.y0 >= outer.y0 - tol and b.x1 <= outer.x1 + tol and b.y1 <= outer.y1 + tol


def _axes_problems(fig, k, ax, renderer, labelled, named) -> list[str]:
    """The checks of one axes; appends its texts to ``labelled`` and its legend-named series to ``named``."""
    problems = []
    name = f"axes {k} ({ax.get_title() or ax.get_ylabel() or 'untitled'!r})"
    cbar = _is_colorbar(ax)
    for which, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
        if not axis.get_visible():
            continue
        ticks = _tick_labels(axis)
        boxes = [t.get_window_extent(renderer) for t in ticks]
        for i in range(len(boxes) - 1):
            for j in range(i + 1, len(boxes)):
                if _overlap(boxes[i], boxes[j]):
                    problems.append(f"{name}: {which} tick labels {ticks[i].get_text()!r} and "
                                    f"{ticks[j].get_text()!r} overlap")
        labelled += [("tick", f"{name} {which} tick {t.get_text()!r}", b, ax) for t, b in zip(ticks, boxes)]
        off = axis.get_offset_text()
        if _visible_text(off):
            problems.append(f"{name}: {which} axis has an offset/multiplier text {off.get_text()!r} "
                            "(scale the data to an SI prefix instead)")
        label = axis.get_label()
        carries = (cbar or _shows_data(ax)) and _long_axis(ax, which)
        if carries and len(ticks) < 2:
            problems.append(f"{name}: {which} axis shows {len(ticks)} tick number(s) (a log axis inside one "
                            "decade? use a linear axis there)")
        if carries and ticks and not (_visible_text(label) and UNIT_PATTERN.search(label.get_text())):
            problems.append(f"{name}: {which} axis label {label.get_text()!r} names no unit in brackets")
        if _visible_text(label):
            labelled.append(("label", f"{name} {which} label", label.get_window_extent(renderer), ax))
            problems += _axis_si_problems(name, which, label.get_text(), ticks)
        for t in ticks:
            problems += _si_text_problems(f"{name} {which} tick", t.get_text())
    for t in (ax.title, getattr(ax, "_left_title", None), getattr(ax, "_right_title", None)):
        if _visible_text(t):
            labelled.append(("title", f"{name} title", t.get_window_extent(renderer), ax))
            problems += _si_text_problems(f"{name} title", t.get_text())
    ab = ax.get_window_extent(renderer)
    for t in ax.texts:
        if _visible_text(t):
            if not _inside(t.get_window_extent(renderer), ab):
                problems.append(f"{name}: annotation {t.get_text()!r} runs outside its axes")
            problems += _si_text_problems(f"{name} annotation", t.get_text())
    problems += _legend_problems(fig, name, ax, renderer, labelled, named)
    return problems


def _legend_problems(fig, name, ax, renderer, labelled, named) -> list[str]:
    problems = []
    leg = ax.get_legend()
    series = _series(ax)
    legends = ([leg] if leg is not None else []) + list(fig.legends)
    shown = {t.get_text() for lg in legends for t in lg.get_texts()}
    if len(series) >= 2 and not shown:
        problems.append(f"{name}: {len(series)} series and no legend")
    elif shown:
        missing = [nm for _, nm in series if nm is None or nm not in shown]
        if missing:
            problems.append(f"{name}: the legend names {len(series) - len(missing)} of {len(series)} series")
        named += [(name, art, nm) for art, nm in series if nm in shown]
    if leg is not None:
        labelled.append(("legend", f"{name} legend", leg.get_window_extent(renderer), ax))
        for t in leg.get_texts():
            problems += _si_text_problems(f"{name} legend", t.get_text())
    return problems


def _overlap_problems(fig, labelled, renderer) -> list[str]:
    """Texts outside the figure, texts of different roles on each other, titles and labels in another axes."""
    problems = []
    for role, name, b, _ in labelled:
        if not _inside(b, fig.bbox):
            problems.append(f"{name} lies outside the figure")
    for i in range(len(labelled)):
        for j in range(i + 1, len(labelled)):
            ri, ni, bi, _ = labelled[i]
            rj, nj, bj, _ = labelled[j]
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
    areas = [(k, ax, ax.get_window_extent(renderer)) for k, ax in enumerate(fig.axes) if ax.get_visible()]
    for role, name, b, own in labelled:
        if role not in ("title", "label"):
            continue
        for k, ax, ab in areas:
            if ax is not own and _overlap(b, ab, tol=1.5):
                problems.append(f"{name} runs into axes {k} ({ax.get_title() or ax.get_ylabel() or 'a colourbar'!r})")
    return problems
