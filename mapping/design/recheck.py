"""Rescoring the front: the BPC loss of the front's designs on more, independent tokens.

A study scores each trial on a few windows, enough to rank designs but with a standard error on the loss of a few
hundredths of a bit (``bpc_loss_se``), and the front is selected on those same windows, so its losses are biased
low (the winner's curse). Before the verdict names a design at a BPC loss ≤ 0.05, :func:`recheck_front` scores
the front's candidates again on ``windows`` windows of the **test** split (tokens the search never saw), with the
same noise seed, and writes ``DIR/recheck.parquet``. The candidates are the front's designs whose search loss
could be at the threshold (``bpc_loss − 2 bpc_loss_se ≤`` :data:`~mapping.design.spec.VERDICT_BPC_LOSS`), the
``limit`` lowest-loss of them (default 12; a four-objective front can hold most of a study, and only these
can change the verdict); if none qualifies, the ``limit`` lowest-loss designs of the front. The file holds a row per trial with ``recheck_bpc_loss``,
``recheck_bpc_loss_se``, ``recheck_windows``. The verdict then judges the front by these numbers
(:func:`mapping.design.results.verdict`). Resumable: rechecked trials are kept (the file is rewritten atomically
after each one), so rerunning the command goes on where it stopped.
"""

from __future__ import annotations

import functools
from pathlib import Path

from .results import RECHECK, load_recheck
from .spec import DesignSpec

__all__ = ["recheck_front", "recheck_candidates", "load_recheck", "RECHECK", "RECHECK_SPLIT", "RECHECK_TOKENS",
           "default_recheck_windows"]

RECHECK_SPLIT = "test"  # tokens the search never scored a trial on
RECHECK_TOKENS = 2048
"""Tokens per design of the default rescoring: on the default chip a loss measured on 2,048 tokens has a standard
error of about 0.029 bits/char (``oscsim simulate``), below the verdict's 0.05 threshold."""


def default_recheck_windows(df, spec: DesignSpec) -> int:
    """Windows of the spec's window length that give :data:`RECHECK_TOKENS` tokens (the search's own window
    length, read from its trials' ``n_tokens``; at least one window)."""
    import math

    n = df["n_tokens"].dropna() if len(df) and "n_tokens" in df else []
    seq = (float(n.iloc[0]) / spec.tokens.windows) if len(n) else float(spec.tokens.seq_len or 128)
    return max(1, math.ceil(RECHECK_TOKENS / seq))


def recheck_candidates(df, limit: int = 12):
    """The front's designs the verdict could name (see the module notes), lowest search loss first."""
    from .spec import VERDICT_BPC_LOSS

    front = df[df["on_front"] & (df["state"] == "COMPLETE")] if len(df) else df
    if not len(front):
        return front
    se = front["bpc_loss_se"].fillna(0.0) if "bpc_loss_se" in front else 0.0
    cand = front[front["bpc_loss"] - 2 * se <= VERDICT_BPC_LOSS]
    return (cand if len(cand) else front).sort_values(["bpc_loss", "trial"]).head(limit)


def recheck_front(spec: DesignSpec, out: str | Path, df, *, windows: int, workers: int = 1,
                  scheduler: str | None = None, progress: bool = False, limit: int = 12, security=None):
    """Rescore the front's designs of the trials table ``df`` on ``windows`` test windows; returns the table.

    Parameters
    ----------
    spec : DesignSpec
    out : path
        The design folder (``recheck.parquet`` is written there).
    df : pandas.DataFrame
        The trials table (:func:`mapping.design.results.trials_table`).
    windows : int
        Windows of ``spec.tokens.seq_len`` bytes from the test split, >= 1.
    limit : int
        Designs rescored at most (:func:`recheck_candidates`).
    workers, scheduler, security : as :func:`mapping.design.run_design`.
    """
    import json

    import pandas as pd
    from tqdm import tqdm  # the plain bar: tqdm.auto warns in notebooks without ipywidgets

    from ..sweep.executors import run_tasks
    from ..sweep.point import compute_point
    from ..sweep.run import write_df
    from .evaluate import METRICS_KEY, trial_metrics
    from .study import ROW_METRICS

    if isinstance(windows, bool) or not isinstance(windows, int) or windows < 1:
        raise ValueError(f"recheck windows must be a positive integer, got {windows!r}")
    out = Path(out)
    old = load_recheck(out)
    rows = [] if old is None else [r for r in old.to_dict("records") if r["recheck_windows"] == windows]
    done = {int(r["trial"]) for r in rows}
    front = recheck_candidates(df, limit)
    tasks = []
    for _, r in front.iterrows():
        if int(r["trial"]) in done:
            continue
        tasks.append({"point_id": f"{spec.spec_hash}-recheck-t{int(r['trial']):06d}", "point_index": int(r["trial"]),
                      "params": {}, "config": json.loads(r["config_json"]), "noise_seed": spec.noise_seed,
                      "checkpoint": spec.checkpoint, "metrics": ROW_METRICS, "spec_hash": spec.spec_hash,
                      "tokens": {"windows": windows, "seq_len": spec.tokens.seq_len, "split": RECHECK_SPLIT}})
    bar = tqdm(total=len(front), initial=len(front) - len(tasks), disable=not progress, desc="recheck front",
               unit="design")

    def sink(row: dict) -> None:
        rec = {"trial": int(row["point_index"]), "recheck_windows": windows, "recheck_split": RECHECK_SPLIT,
               "recheck_error": None if row["status"] == "ok" else str(row["error"])[:500]}
        m = row.get(METRICS_KEY) or {}
        for k in ("bpc_loss", "bpc_loss_se", "bpc_chip", "bpc_closed_form", "n_tokens"):
            rec[f"recheck_{k}"] = float(m.get(k, float("nan")))
        rows.append(rec)
        write_df(pd.DataFrame(sorted(rows, key=lambda x: x["trial"])), out / RECHECK)
        bar.update(1)

    try:
        run_tasks(tasks, workers, scheduler, sink, compute=functools.partial(compute_point, metrics_of=trial_metrics),
                  security=security)
    finally:
        bar.close()
    return load_recheck(out)
