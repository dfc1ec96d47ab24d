"""The 1M runs' validation curves and the Kuramoto–transformer gap along the token budget (issue 21).

Reads the ``val_bpc~`` estimates that ``oscsim train --eval-every`` wrote into the committed logs of the three
1M runs (``train-runs/{kuramoto,transformer,ssa}-1m.log``: the same recipe, seed and evaluation windows), prints
the gap at every evaluation and a least-squares line through the gap over the second half of the budget (with
its 95 % interval from the residuals), and draws both (``docs/gap_1m.png``).

The points lie on one cosine schedule each, so they are not runs of different budgets: the late fall of the gap
mixes more tokens with the learning rate's decay, and the line is a description of this run, not a forecast.

Usage: ``python benchmarks/gap_curve.py [--out docs/gap_1m.png] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
LINE = re.compile(r"^step (\d+)/(\d+) tokens ([\d,]+) .* val_bpc~ ([\d.]+)")
KINDS = ("kuramoto", "transformer", "ssa")


def read_curve(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, val_bpc~) of a training log; refuses a log with no evaluation or with tokens not increasing."""
    tok, val = [], []
    for line in path.read_text().splitlines():
        m = LINE.match(line)
        if m:
            tok.append(int(m.group(3).replace(",", "")))
            val.append(float(m.group(4)))
    if not tok:
        raise ValueError(f"{path}: no 'step ... val_bpc~' lines (was it trained with --eval-every?)")
    t = np.asarray(tok)
    if np.any(np.diff(t) <= 0):
        raise ValueError(f"{path}: the token counts do not increase (two runs in one log?)")
    return t, np.asarray(val)


def gap_fit(tokens: np.ndarray, gap: np.ndarray) -> dict:
    """Least-squares gap = a + b·tokens over the points of the second half of the budget; b per million tokens
    with a 95 % interval (Student t on the residuals)."""
    from scipy import stats

    sel = tokens >= tokens[-1] / 2
    x, y = tokens[sel] / 1e6, gap[sel]
    res = stats.linregress(x, y)
    t = stats.t.ppf(0.975, len(x) - 2)
    return {"points": int(sel.sum()), "from_tokens": int(tokens[sel][0]), "slope_per_million": res.slope,
            "slope_ci95": [res.slope - t * res.stderr, res.slope + t * res.stderr], "intercept": res.intercept,
            "r2": res.rvalue ** 2}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "gap_1m.png"))
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    curves = {k: read_curve(ROOT / "train-runs" / f"{k}-1m.log") for k in KINDS}
    tk, vk = curves["kuramoto"]
    tt, vt = curves["transformer"]
    if not np.array_equal(tk, tt):
        raise ValueError("the Kuramoto and transformer logs were evaluated at different token counts")
    gap = vk - vt
    fit = gap_fit(tk, gap)
    out = {"tokens": tk.tolist(), "gap": np.round(gap, 4).tolist(), "fit": fit,
           "peak_gap": float(gap.max()), "peak_at_tokens": int(tk[np.argmax(gap)]), "last_gap": float(gap[-1])}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for t, g in zip(tk, gap):
            print(f"{t / 1e6:6.2f}M tokens  gap {g:+.4f}")
        lo, hi = fit["slope_ci95"]
        print(f"second half ({fit['points']} points from {fit['from_tokens'] / 1e6:.1f}M): "
              f"{fit['slope_per_million']:+.4f} BPC per 1M tokens (95 % {lo:+.4f} .. {hi:+.4f}), r^2 {fit['r2']:.2f}")

    from oscsim.plotting import figure, layout_problems, save

    fig, (a, b) = figure(1, 2, width=9.0, height=3.4)
    for k in KINDS:
        t, v = curves[k]
        a.plot(t / 1e6, v, marker="o", ms=3, label=f"{k}-1m")
    a.set_xlabel("training tokens [M]")
    a.set_ylabel("validation estimate [BPC]")
    a.legend()
    b.axhline(0.05, color="0.5", ls="--", lw=1, label="target 0.05")
    b.plot(tk / 1e6, gap, marker="o", ms=3, color="C0", label="Kuramoto − transformer")
    x = np.linspace(fit["from_tokens"], tk[-1], 2) / 1e6
    b.plot(x, fit["intercept"] + fit["slope_per_million"] * x, color="C3", lw=1.5,
           label=f"second half: {fit['slope_per_million']:+.4f} per 1M")
    b.set_xlabel("training tokens [M]")
    b.set_ylabel("gap [BPC]")
    b.set_ylim(0.0, max(0.3, math.ceil(gap.max() * 20) / 20))
    b.legend()
    problems = layout_problems(fig)
    if problems:
        raise RuntimeError(f"the figure does not read: {problems}")
    save(fig, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
