"""Cold and warm start of a small `simulate` call with the generated-kernel cache (issue 15 item 2).

Each measurement is a fresh Python process (so nothing is shared in memory) with ``$OSCSIM_KERNEL_CACHE``
pointing at a new, empty directory: the first process renders the kernel module, writes it and compiles the
kernel (cold); the following ones load the module and Numba's cached machine code (warm). Reported per
process: the time of ``import oscsim.engine`` and of the first ``simulate`` call (a phase network, N = 8,
G = 4, RK4, 100 steps), and the wall time of the whole process.

    .venv/bin/python benchmarks/engine_kernel_cache.py [--warm-runs 3] [--solver RK4]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

_CHILD = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
from oscsim import engine
t1 = time.perf_counter()
model = engine.PhaseNetwork(omega=np.linspace(0.9, 1.1, 8), coupling=np.full((8, 8), 0.1))
sol = engine.simulate(model, getattr(engine, sys.argv[1])(), 0.0, 1.0, 0.01, np.zeros((4, 8)))
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "first_simulate_s": t2 - t1, "y0": float(sol.y_final[0, 0])}))
"""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--warm-runs", type=int, default=3)
    p.add_argument("--solver", default="RK4", choices=["RK4", "Heun", "EulerMaruyama", "StochasticHeun", "SRA1"])
    args = p.parse_args(argv)
    runs = []
    with tempfile.TemporaryDirectory(prefix="oscsim-kernels-") as d:
        env = {**os.environ, "OSCSIM_KERNEL_CACHE": d, "NUMBA_NUM_THREADS": "1"}
        for i in range(1 + args.warm_runs):
            t = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", _CHILD, args.solver], env=env, capture_output=True,
                                 text=True, check=True)
            r = json.loads(out.stdout)
            r["process_s"] = time.perf_counter() - t
            r["cache"] = "cold" if i == 0 else "warm"
            runs.append(r)
        files = sorted(os.listdir(d))
    warm = runs[1:]
    print(json.dumps({
        "solver": args.solver,
        "runs": runs,
        "cold_first_simulate_s": runs[0]["first_simulate_s"],
        "warm_first_simulate_s_median": sorted(r["first_simulate_s"] for r in warm)[len(warm) // 2] if warm else None,
        "cold_over_warm": runs[0]["first_simulate_s"] / min(r["first_simulate_s"] for r in warm) if warm else None,
        "cache_files": files,
        "same_result": len({r["y0"] for r in runs}) == 1,
    }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
