"""Chip time of one chip on the default simulate's tokens, for comparing this checkout with an older commit
(issue 22's must-show: "≥ 2.5× faster than today's, same BPC to the bit").

``mapping.run`` of ``kuramoto-tiny`` on the first 16 validation windows of 128 bytes (the default ``oscsim
simulate``'s 2,048 tokens), closed form off, ``--repeats`` runs in one process; prints each run's chip wall time
and the chip BPC (repr, every bit). The older commit is run from an extracted tree with this checkout's
environment, whose ``mapping`` package it shadows through ``PYTHONPATH``, alternating with this checkout::

    git archive 1e8ca01 | tar -x -C /tmp/old
    (cd /tmp/old && PYTHONPATH=/tmp/old /work/main/.venv/bin/python /work/main/benchmarks/chip_time_vs_commit.py)
    .venv/bin/python benchmarks/chip_time_vs_commit.py --config examples/chip-spatial.toml

Without ``--config`` the chip is the code's default ``ChipConfig()`` (1e8ca01's default was the spatial chip that
``examples/chip-spatial.toml`` now describes). Uses only the API both layouts share.
"""

from __future__ import annotations

import argparse
import json
import warnings


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", help="chip TOML (default: the code's ChipConfig())")
    ap.add_argument("--repeats", type=int, default=3, help="runs in this process (the first one loads kernels)")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        raise SystemExit(f"--repeats must be >= 1, got {args.repeats}")
    warnings.simplefilter("ignore")
    import numpy as np
    import torch

    from mapping import ChipConfig, compile, load_model, run
    from oscsim.data import eval_windows, load_shakespeare

    if args.config:
        from mapping.config import load_config

        cfg = load_config(args.config)
    else:
        cfg = ChipConfig()
    model, _ = load_model("kuramoto-tiny")
    x, y = eval_windows(load_shakespeare().split("valid"), 128, max_windows=16)
    chip = compile(model, cfg)
    runs = []
    for _ in range(args.repeats):
        r = run(chip, x, seed=0, progress=False, closed_form=False)
        lp = torch.log_softmax(torch.as_tensor(r.logits).double(), -1)
        bpc = float(-lp.gather(-1, torch.as_tensor(y)[..., None]).mean() / np.log(2))
        runs.append({"chip_wall_s": round(r.wall_s, 3), "bpc_chip": repr(bpc)})
    print(json.dumps(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
