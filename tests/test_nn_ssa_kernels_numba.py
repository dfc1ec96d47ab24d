"""The fused Numba tiles of the tiled SSA path (``ssa_tiled(kernel="numba")``, the CPU default), forward and
backward, against the dense reference form and the plain-PyTorch tiles (``kernel="torch"``)."""

from __future__ import annotations

import pytest
import torch

from oscsim.nn.ssa_functional import _coupling_scale, ssa_attention
from oscsim.nn.ssa_tiled import ssa_tiled

from _ssa_cases import F64, drift_for, rel_err, ssa_inputs

pytest.importorskip("numba")

# (block_q, block_k, tile_elements): several head chunks, ragged query and key blocks (37 = 4·8 + 5 =
# 2·16 + 5 = 5·7 + 2), one head per tile, whole-N tiles
_TILINGS = [(8, 16, 300), (7, 5, 1), (37, 37, 1 << 17), (128, 1024, 1 << 17)]


@pytest.mark.parametrize("tiling", _TILINGS, ids=lambda t: "x".join(map(str, t)))
@pytest.mark.parametrize("F", [4, 1], ids=["vector", "ssa1d"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("boundary", ["reference", "smooth"])
@pytest.mark.parametrize("drift", [False, True], ids=["", "drift"])
def test_numba_forward_matches_dense_float64(tiling, F, causal, boundary, drift):
    om, th, v, a, K = (t.detach() for t in ssa_inputs(F))
    lam = drift_for(om).detach() if drift else None
    ref = ssa_attention(om, th, v, a, K, causal=causal, boundary=boundary, impl="dense", drift=lam)
    c = _coupling_scale(th, K, causal)
    bq, bk, te = tiling
    kw = dict(causal=causal, boundary=boundary, block_q=bq, block_k=bk, tile_elements=te, drift=lam)
    got = ssa_tiled(om, v, a, c, kernel="numba", **kw)
    assert got.dtype == F64
    assert rel_err(got, ref) < 1e-9
    assert rel_err(got, ssa_tiled(om, v, a, c, kernel="torch", **kw)) < 1e-12


@pytest.mark.parametrize("kernel", ["numba", "torch"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("F", [4, 1], ids=["vector", "ssa1d"])
@pytest.mark.parametrize("boundary", ["reference", "smooth"])
def test_both_kernels_forward_and_gradients_match_dense(kernel, causal, F, boundary):
    # forward and backward tiles of each kernel (the Numba backward: one fused pass per tile between BLAS
    # products; the torch one: tensor operations per tile)
    inputs = ssa_inputs(F)
    inputs = (*inputs, drift_for(inputs[0]))
    go = torch.randn_like(inputs[2])
    om, th, v, a, K, lam = inputs
    dense = ssa_attention(om, th, v, a, K, causal=causal, boundary=boundary, impl="dense", drift=lam)
    tiled = ssa_tiled(om, v, a, _coupling_scale(th, K, causal), causal=causal, boundary=boundary,
                      block_q=8, block_k=16, tile_elements=300, kernel=kernel, drift=lam)
    ref = (dense, *torch.autograd.grad(dense, inputs, go))
    got = (tiled, *torch.autograd.grad(tiled, inputs, go))
    for name, x, y in zip(["out", "omega", "theta", "value", "alpha", "K", "drift"], got, ref):
        assert rel_err(x, y) < 1e-9, name


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("case", ["fast", "smooth", "small_c"])
def test_numba_float32(case, causal):
    # "fast": the polynomial-exp2 reference-boundary kernel; "smooth" and "small_c" (K r < 1e-4): the exact
    # kernel in float32. Against the float64 dense form.
    om, th, v, a, K = (t.detach() for t in ssa_inputs(64, B=1, H=3, N=300, d=64, scale=0.08))
    boundary = "smooth" if case == "smooth" else "reference"
    if case == "small_c":
        om, K = om * 0.02, torch.tensor(5e-5, dtype=F64)
    ref = ssa_attention(om, th, v, a, K, causal=causal, boundary=boundary, impl="dense")
    args = (om.float(), v.float(), a.float(), _coupling_scale(th.float(), K.float(), causal))
    for tiling in _TILINGS:
        bq, bk, te = tiling
        got = ssa_tiled(*args, causal=causal, boundary=boundary, block_q=bq, block_k=bk, tile_elements=te,
                        kernel="numba")
        assert got.dtype == torch.float32
        assert rel_err(got.double(), ref) < 1e-5, tiling


@pytest.mark.parametrize("dtype", [torch.float32, F64])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_numba_result_independent_of_thread_count(dtype, causal):
    inputs = [t.detach().to(dtype).requires_grad_() for t in ssa_inputs(16, B=1, H=4, N=200, d=16, scale=0.2)]
    om, th, v, a, K = inputs
    lam = drift_for(om).detach().requires_grad_()
    go = torch.randn_like(v)
    prev = torch.get_num_threads()
    outs = []
    try:
        for n in (1, 2, 3):
            torch.set_num_threads(n)
            out = ssa_tiled(om, v, a, _coupling_scale(th, K, causal), causal=causal, block_q=16, block_k=64,
                            tile_elements=16 * 64, kernel="numba", drift=lam)
            outs.append([out, *torch.autograd.grad(out, [*inputs, lam], go)])
    finally:
        torch.set_num_threads(prev)
    assert all(torch.equal(x, y) for o in outs[1:] for x, y in zip(outs[0], o))


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("boundary", ["reference", "smooth"])
def test_float32_gradients(boundary, causal):
    # float32 backward tiles (the Numba one computes J by the float32 series) against the float64 gradients.
    # The bound is the float32 conditioning at the locking boundary, not the kernels': the torch tiles give
    # the same size of error (observed 1.4e-4 … 1.5e-3 for both, max-relative).
    om, th, v, a, K = (t.detach() for t in ssa_inputs(64, B=1, H=3, N=300, d=64, scale=0.08))
    lam = drift_for(om).detach()
    go = torch.randn_like(v)

    def grads(dtype, kernel):
        xs = [t.to(dtype).requires_grad_() for t in (om, v, a, _coupling_scale(th, K, causal), lam)]
        out = ssa_tiled(*xs[:4], causal=causal, boundary=boundary, drift=xs[4], kernel=kernel)
        return torch.autograd.grad(out, xs, go.to(dtype))

    ref = grads(F64, "numba")
    for kernel in ("numba", "torch"):
        for name, x, y in zip(["omega", "value", "alpha", "c", "drift"], grads(torch.float32, kernel), ref):
            assert rel_err(x.double(), y) < 5e-3, (kernel, name)


def test_kernel_selection_and_validation():
    om, th, v, a, K = (t.detach() for t in ssa_inputs(4))
    c = _coupling_scale(th, K, False)
    auto = ssa_tiled(om, v, a, c)  # CPU float64: the Numba kernel with its default blocks
    assert torch.equal(auto, ssa_tiled(om, v, a, c, kernel="numba"))
    with pytest.raises(ValueError, match="kernel"):
        ssa_tiled(om, v, a, c, kernel="fused")
