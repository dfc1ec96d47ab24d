"""Tiled SSA forward of this checkout against an older revision's, and SDPA, in one process (interleaved).

The older revision's ``oscsim/nn/ssa_tiled.py``, ``ssa_tiled_numba.py`` and ``ssa_constants.py`` are read
with ``git show REV:path`` and imported as a separate package (their ``oscsim.nn`` imports rewritten), so
both versions run on the same inputs in the same process, taking turns within each round: a change of
machine load affects them alike. Inputs: B = 1, 8 heads, N (default 4,096), F = d_v = 64, ω ~ 0.1 N(0, 1),
V ~ N(0, 1), α = 1, K r = 1.6 (non-causal, reference boundary), without and with a drift of 1e-3 per
position; SDPA on (1, 8, N, 64) Gaussian q, k, v. Time: minimum over ROUNDS after a warm-up. Threads: the
torch default (set ``OMP_NUM_THREADS`` to change it). Prints one JSON object with the load average.

Usage: ``python benchmarks/ssa_tiled_ab.py REV [N] [ROUNDS]``
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

from oscsim.bench.attention import _time_interleaved
from oscsim.nn.ssa_tiled import ssa_tiled as ssa_new

_FILES = ("ssa_tiled", "ssa_tiled_numba", "ssa_constants")


def load_old(rev: str, folder: str):
    """``ssa_tiled`` of revision ``rev``, imported from ``folder`` as the package ``oldssa``."""
    pkg = os.path.join(folder, "oldssa")
    os.makedirs(pkg, exist_ok=True)
    open(os.path.join(pkg, "__init__.py"), "w").close()
    for name in _FILES:
        src = subprocess.run(["git", "show", f"{rev}:oscsim/nn/{name}.py"], capture_output=True, text=True,
                             check=True).stdout
        for mod in _FILES:
            src = src.replace(f"from oscsim.nn.{mod} import", f"from oldssa.{mod} import")
            src = src.replace(f"from oscsim.nn import {mod}", f"from oldssa import {mod}")
        with open(os.path.join(pkg, f"{name}.py"), "w") as f:
            f.write(src)
    sys.path.insert(0, folder)
    from oldssa.ssa_tiled import ssa_tiled

    return ssa_tiled


def main(argv: list[str]) -> None:
    rev = argv[0]
    n = int(argv[1]) if len(argv) > 1 else 4096
    rounds = int(argv[2]) if len(argv) > 2 else 5
    with tempfile.TemporaryDirectory() as folder:
        ssa_old = load_old(rev, folder)
        gen = torch.Generator().manual_seed(n)
        H = 8
        shape = (1, H, n, 64)
        q, k, v = (torch.randn(shape, generator=gen) for _ in range(3))
        omega = 0.1 * torch.randn(shape, generator=gen)
        alpha, c, drift = torch.ones(H), torch.full((1, H, n), 1.6), torch.full((H,), 1e-3)
        fns = {"sdpa": lambda: F.scaled_dot_product_attention(q, k, v)}
        for name, fn in (("old", ssa_old), ("new", ssa_new)):
            fns[name] = lambda fn=fn: fn(omega, v, alpha, c)
            fns[f"{name}_drift"] = lambda fn=fn: fn(omega, v, alpha, c, drift=drift)
        load_before = os.getloadavg()
        with torch.no_grad():
            best = _time_interleaved(fns, rounds)
            diff = {d: float((fns[f"old{d}"]() - fns[f"new{d}"]()).abs().max()) for d in ("", "_drift")}
    print(json.dumps({"rev_old": rev, "N": n, "rounds": rounds, "threads": torch.get_num_threads(),
                      "load_before": load_before, "load_after": os.getloadavg(), "best_s": best,
                      "vs_sdpa": {case: best[case] / best["sdpa"] for case in best},
                      "max_abs_old_vs_new": diff}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
