"""The Kuramoto attention layer at N = 4,096 (B = 1, d = 512, 8 heads, the inputs of `oscsim bench attention`):
the memory-lean inference path (``forward`` under no_grad) against ``parts()`` (the path before it), SDPA beside.

Peak memory: :func:`oscsim.bench.attention.rss_peak_bytes` in a fresh interpreter per case with
``MALLOC_MMAP_THRESHOLD_=65536`` (the benchmark's method). Time: the three cases interleaved in one process,
the minimum over ROUNDS rounds after a warm-up. Prints one JSON object, with the load average before and after.

Usage: ``python benchmarks/kuramoto_lean_memory.py [ROUNDS]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

from oscsim.bench.attention import _inputs, _modules, _time_interleaved, rss_peak_bytes

N = 4096
CASES = ("sdpa", "lean", "parts")


def _cases() -> dict:
    args = argparse.Namespace(batch=1, d_model=512, heads=8, threads=None, seed=0)
    x = _inputs(N, args)
    layer = _modules(args)["kuramoto_sdpa"]
    return {"sdpa": lambda: F.scaled_dot_product_attention(x["q"], x["k"], x["v"]),
            "lean": lambda: layer(x["phases"]),
            "parts": lambda: layer.parts(x["phases"], need_weights=False).delta}


def main(argv: list[str]) -> None:
    if argv and argv[0] == "--child":  # one case's peak, in its own interpreter
        fn = _cases()[argv[1]]
        with torch.no_grad():
            print(rss_peak_bytes(fn))
        return
    rounds = int(argv[0]) if argv else 5
    res: dict = {"load_before": os.getloadavg(), "threads": torch.get_num_threads()}
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536")
    for case in CASES:
        out = subprocess.run([sys.executable, __file__, "--child", case], env=env, capture_output=True, text=True,
                             check=True)
        res[f"peak_MiB_{case}"] = int(out.stdout.split()[-1]) / 2**20
    fns = _cases()
    with torch.no_grad():
        best = _time_interleaved(fns, rounds)
        res["max_abs_lean_vs_parts"] = float((fns["lean"]() - fns["parts"]()).abs().max())
    res.update(best_s=best, time_vs_sdpa={c: best[c] / best["sdpa"] for c in best},
               mem_vs_sdpa={c: res[f"peak_MiB_{c}"] / res["peak_MiB_sdpa"] for c in ("lean", "parts")},
               load_after=os.getloadavg())
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
