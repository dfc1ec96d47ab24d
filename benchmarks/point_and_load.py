"""Wall time of one sweep point and of loading a saved chip, for comparing this checkout with an older commit
(BENCHMARKS.md, "Sweeps and design").

- ``point_s``: :func:`mapping.sweep.point.compute_point` on the points of ``examples/sweep-noise.toml`` (compile
  the chip from the point's config, run it, report), one engine and one torch thread as a sweep worker runs
  them, after two untimed warm-up points; the mean over ``--points`` points.
- ``load_s``: :func:`mapping.load_chip` of each model's default chip, saved to a temporary folder, best of
  ``--repeats`` warm loads (a load validates the file by recompiling the chip and comparing).

The older commit runs from an extracted tree with this checkout's environment, whose packages it shadows
through ``PYTHONPATH``::

    git archive 051ccf9 | tar -x -C /tmp/old
    (cd /tmp/old && PYTHONPATH=/tmp/old /work/main/.venv/bin/python /work/main/benchmarks/point_and_load.py)
    .venv/bin/python benchmarks/point_and_load.py
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import warnings
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=16, help="timed sweep points (after 2 warm-ups)")
    ap.add_argument("--repeats", type=int, default=3, help="timed loads of each chip (after 1 warm-up)")
    ap.add_argument("--models", default="kuramoto-tiny,kuramoto-1m", help="bundled models whose chips are loaded")
    args = ap.parse_args(argv)
    if args.points < 1 or args.repeats < 1:
        raise SystemExit("--points and --repeats must be >= 1")
    warnings.simplefilter("ignore")
    import numba
    import torch

    from mapping import ChipConfig, compile, load_chip
    from mapping.model_io import load_model
    from mapping.sweep.point import compute_point
    from mapping.sweep.run import _tasks
    from mapping.sweep.spec import load_spec

    numba.set_num_threads(1)
    torch.set_num_threads(1)
    spec = Path(__file__).resolve().parent.parent / "examples" / "sweep-noise.toml"
    tasks = _tasks(load_spec(spec))
    n = min(args.points + 2, len(tasks))
    for t in tasks[:2]:
        compute_point(t)
    t0 = time.perf_counter()
    for t in tasks[2:n]:
        compute_point(t)
    out = {"point_s": (time.perf_counter() - t0) / (n - 2), "points": n - 2, "load_s": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            model, _ = load_model(name)
            path = compile(model, ChipConfig()).save(Path(tmp) / f"{name}.json")
            load_chip(path, model=model)
            best = float("inf")
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                load_chip(path, model=model)
                best = min(best, time.perf_counter() - t0)
            out["load_s"][name] = best
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
