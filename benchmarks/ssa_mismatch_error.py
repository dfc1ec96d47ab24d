"""Float32 error of SSA weights against float64, through the SSA module's own path, at several N (issue 21).

A causal SSA layer with positional drift at the locked initialisation (d = 64, H = 4, seed 0) on LayerNorm'd
Gaussian input; the same weights in float32 and in float64. Per case it prints one JSON line: the largest
|W32 − W64| of the normalised weights (``components()["weights"]``), the number of pairs whose locking
differs (``flips``), the number of locked off-diagonal pairs in float64, and the largest output error of the
tiled path (``impl="tiled"``, float32) against the float64 dense output.

Uses only ``SSAAttention.components`` and its forward, so the same script measures an older checkout
(``PYTHONPATH=<export of it> python benchmarks/ssa_mismatch_error.py ...``).

Usage: ``python benchmarks/ssa_mismatch_error.py 64 128 256 512 1024 2048``
"""

from __future__ import annotations

import json
import sys

import torch

from oscsim.nn.ssa import SSAAttention


def case(N: int, frequency: str, boundary: str, *, d: int = 64, H: int = 4, seed: int = 0) -> dict:
    torch.manual_seed(seed)
    m = SSAAttention(d, H, frequency=frequency, causal=True, position="drift", boundary=boundary,
                     init="locked", dropout=0.0, impl="dense").eval()
    x = torch.nn.functional.layer_norm(torch.randn(1, N, d), (d,))
    with torch.no_grad():
        c32 = m.components(x)
        m.impl = "tiled"
        y32_tiled = m(x)
        m.impl = "dense"
        m64 = m.double()
        c64 = m64.components(x.double())
        y64 = m64(x.double())
    locked = c64["locked"]
    return dict(N=N, frequency=frequency, boundary=boundary,
                w_err=float((c32["weights"].double() - c64["weights"]).abs().max()),
                flips=int((c32["locked"] != locked).sum()), locked=int(locked.sum()) - N * H,
                tiled_out_err=float((y32_tiled.double() - y64).abs().max()))


def main(argv: list[str]) -> None:
    lengths = [int(a) for a in argv] or [64, 256, 1024]
    for frequency in ("vector", "scalar"):
        for boundary in ("reference", "smooth"):
            for N in lengths:
                print(json.dumps(case(N, frequency, boundary)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
