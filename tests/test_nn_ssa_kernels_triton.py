"""The Triton SSA kernels on the CPU through the Triton interpreter, against the dense reference form.

``TRITON_INTERPRET=1`` only takes effect if it is set before Triton is first imported, and another test may
already have imported Triton in this process; so the comparison runs in a fresh subprocess. Sizes are tiny
(the interpreter runs the kernels in NumPy) but still cover several query and key blocks, ragged edges,
SSA-1D, causal masking and both boundary forms.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("triton")

_SCRIPT = textwrap.dedent(
    """
    import json, os
    assert os.environ.get("TRITON_INTERPRET") == "1"
    import torch
    from oscsim.nn.ssa_functional import _coupling_scale, ssa_attention
    from oscsim.nn.ssa_triton import ssa_triton

    results = []
    g = torch.Generator().manual_seed(0)
    for F in (4, 1):
        for causal in (False, True):
            for boundary in ("reference", "smooth"):
                B, H, N, d = 1, 2, 37, 4
                om = ((0.5 if F > 1 else 1.0) * torch.randn(B, H, N, F, generator=g, dtype=torch.float64))
                th = 2.0 * torch.rand(B, H, N, d, generator=g, dtype=torch.float64)
                v = torch.randn(B, H, N, d, generator=g, dtype=torch.float64)
                a = 0.5 + torch.rand(H, generator=g, dtype=torch.float64)
                K = torch.tensor(2.0, dtype=torch.float64)
                # a positional drift in the smooth-boundary cases (both signs), none in the others
                lam = torch.tensor([0.02, -0.03], dtype=torch.float64) if boundary == "smooth" else None
                inputs = [t.requires_grad_() for t in (om, th, v, a, K) + ((lam,) if lam is not None else ())]
                go = torch.randn(B, H, N, d, generator=g, dtype=torch.float64)

                def grads(out):
                    return [out] + list(torch.autograd.grad(out, inputs, go))

                ref = grads(ssa_attention(om, th, v, a, K, causal=causal, boundary=boundary, impl="dense",
                                          drift=lam))
                got = grads(ssa_triton(om, v, a, _coupling_scale(th, K, causal), causal=causal,
                                       boundary=boundary, block_m=16, block_n=16, drift=lam))
                rel = [float((x - y).abs().max() / y.abs().max()) for x, y in zip(got, ref)]
                results.append({"F": F, "causal": causal, "boundary": boundary, "rel": rel})
    # float32 forward through the public API
    om, th, v = (torch.randn(1, 2, 40, 16, generator=g) for _ in range(3))
    a, K = torch.ones(2), torch.tensor(2.0)
    ref = ssa_attention(0.1 * om.double(), th.double(), v.double(), a.double(), K.double(), impl="dense")
    got = ssa_attention(0.1 * om, th, v, a, K, impl="triton")
    results.append({"float32_forward_rel": float((got.double() - ref).abs().max() / ref.abs().max())})
    print(json.dumps(results))
    """
)


def test_triton_kernels_match_dense_under_interpreter():
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    names = ["out", "omega", "theta", "value", "alpha", "K", "drift"]
    for r in results[:-1]:
        for name, e in zip(names, r["rel"]):
            assert e < 1e-9, (r["F"], r["causal"], r["boundary"], name, e)
    assert results[-1]["float32_forward_rel"] < 1e-5
