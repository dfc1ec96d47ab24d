"""SSA kernels: the tiled path against the dense reference form (forward and gradients), the functional API,
the order parameter against theory, and the smooth boundary's finite gradients."""

from __future__ import annotations

import importlib.util
import math
import os

import pytest
import torch

from oscsim.nn import ssa_functional as ssaf
from oscsim.nn.ssa_functional import _coupling_scale, ssa_attention, ssa_components, ssa_order_parameter
from oscsim.nn.ssa_tiled import ssa_tiled

from _ssa_cases import F64, drift_for, rel_err, ssa_inputs

def _value_and_grads(fn, inputs, grad_out):
    out = fn(*inputs)
    return (out, *torch.autograd.grad(out, inputs, grad_out))


@pytest.mark.parametrize("drift", [False, True], ids=["", "drift"])
@pytest.mark.parametrize("F", [4, 1], ids=["vector", "ssa1d"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("boundary", ["reference", "smooth"])
def test_tiled_matches_dense_forward_and_gradients(F, causal, boundary, drift):
    inputs = ssa_inputs(F)
    if drift:
        inputs = (*inputs, drift_for(inputs[0]))
    locked = ssa_components(*inputs[:2], *inputs[3:5], causal=causal, drift=inputs[5] if drift else None).locked
    assert 0.05 < locked.double().mean() < 0.6  # a mix of locked and unlocked pairs, so the mask matters
    go = torch.randn_like(inputs[2])

    def dense(om, th, v, a, K, lam=None):
        return ssa_attention(om, th, v, a, K, causal=causal, boundary=boundary, impl="dense", drift=lam)

    def tiled(om, th, v, a, K, lam=None):  # several head chunks, query and key blocks, ragged edges
        return ssa_tiled(om, v, a, _coupling_scale(th, K, causal), causal=causal, boundary=boundary,
                         block_q=8, block_k=16, tile_elements=300, drift=lam)

    ref = _value_and_grads(dense, inputs, go)
    got = _value_and_grads(tiled, inputs, go)
    for name, x, y in zip(["out", "omega", "theta", "value", "alpha", "K", "drift"], got, ref):
        assert rel_err(x, y) < 1e-9, name


def test_drift_argument_is_the_drift_added_to_omega():
    # drift=λ means frequencies ω_i + λ i on every coordinate: the same Δω (float64) as adding it to ω,
    # the same components, and the same gradient with respect to ω and λ.
    om, th, v, a, K = ssa_inputs(4)
    lam = drift_for(om)
    pos = torch.arange(om.shape[2], dtype=F64).view(1, 1, -1, 1)
    full = om + lam.view(1, -1, 1, 1) * pos
    c_full = ssa_components(full, th, a, K, causal=True)
    c_drift = ssa_components(om, th, a, K, causal=True, drift=lam)
    diff = full.unsqueeze(3) - full.unsqueeze(2)
    torch.testing.assert_close(c_drift.delta_omega, diff.norm(dim=-1), rtol=1e-7, atol=1e-7)  # as below
    assert torch.equal(c_full.locked, c_drift.locked)
    go = torch.randn_like(v)
    for impl in ("dense", "tiled"):
        full = om + lam.view(1, -1, 1, 1) * pos
        ref = ssa_attention(full, th, v, a, K, causal=True, impl=impl)
        got = ssa_attention(om, th, v, a, K, causal=True, impl=impl, drift=lam)
        assert rel_err(got, ref) < 1e-12
        g_ref = torch.autograd.grad(ref, (om, lam), go)
        g_got = torch.autograd.grad(got, (om, lam), go)
        for x, y in zip(g_got, g_ref):
            assert rel_err(x, y) < 1e-9, impl
    with pytest.raises(ValueError, match="drift"):
        ssa_attention(om, th, v, a, K, drift=lam[:2])


def _drifted_layer(frequency, N, seed=0):
    """A causal SSA layer with positional drift at the locked initialisation, its LayerNorm'd input
    (1, N, 32), and its components in float32 and in float64 (the same weights)."""
    from oscsim.nn.ssa import SSAAttention

    torch.manual_seed(seed)
    att = SSAAttention(32, 2, frequency=frequency, causal=True, position="drift", boundary="reference",
                       init="locked", dropout=0.0).eval()
    x = torch.nn.functional.layer_norm(torch.randn(1, N, 32), (32,))
    with torch.no_grad():
        c32 = att.components(x)
        att64 = att.double()
        c64 = att64.components(x.double())
    return att64, x.double(), c32, c64


def _module_args(att, x):
    om, th, v = att.project(x, with_drift=False)
    return om, th, v, att.alpha, att.K


@pytest.mark.parametrize("frequency", ["vector", "scalar"])
def test_float32_weights_match_float64_formula_with_drift(frequency):
    # Issue 21: Δω² formed as ‖ω_i‖² + ‖ω_j‖² − 2 ω_i·ω_j from drifted ω had a float32 weight error of 0.011
    # at N = 256 and 0.14 at N = 1,024. Formed without cancellation, the error stays at the float32 level
    # of the inputs' rounding (BENCHMARKS.md, "Kernels", has the figures at N = 64 to
    # 2,048: about 1e-6, not growing with N).
    N = 1024
    att64, x64, c32, c64 = _drifted_layer(frequency, N)
    # the drift has made the frequencies at the end of the sequence large beside the content's spread, and
    # pairs lock there (the rows whose weights the old formula got wrong)
    assert float(c64["omega"][:, :, -1].abs().max()) > 30 * float(c64["delta_omega"][..., 1, 0].max())
    assert (c64["locked"] & torch.ones(N, N, dtype=torch.bool).tril(-1))[..., N // 2:, :].any()
    assert float((c32["weights"].double() - c64["weights"]).abs().max()) < 1e-4
    assert int((c32["locked"] != c64["locked"]).sum()) == 0
    with torch.no_grad():  # the kernels alone: float32 inputs against the float64 formula on the same inputs
        args = _module_args(att64, x64)
        ref = ssa_attention(*args, causal=True, impl="dense", drift=att64.drift)
        om, th, v, a, K = (t.float() for t in args)
        lam = att64.drift.float()
        y32 = {"dense": ssa_attention(om, th, v, a, K, causal=True, impl="dense", drift=lam)}
        for kernel in ("numba", "torch"):
            y32[kernel] = ssa_tiled(om, v, a, _coupling_scale(th, K, True), causal=True, kernel=kernel, drift=lam)
    for impl, y in y32.items():
        assert float((y.double() - ref).abs().max()) < 1e-4, impl


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_tiled_float32_fast_path(causal):
    # float32 uses the exp2 / two-buffer form of the tile; compare with the float64 dense form.
    om, th, v, a, K = (t.detach() for t in ssa_inputs(64, B=1, H=3, N=300, d=64, scale=0.08))
    locked = ssa_components(om, th, a, K, causal=causal).locked.double().mean()
    assert 0.05 < locked < 0.95
    ref = ssa_attention(om, th, v, a, K, causal=causal, impl="dense")
    args = (om.float(), th.float(), v.float(), a.float(), K.float())
    got = ssa_attention(*args, causal=causal, impl="tiled")
    assert got.dtype == torch.float32
    assert rel_err(got.double(), ref) < 1e-5
    # one head per chunk, several query blocks dealt out to worker threads: same numbers
    c = _coupling_scale(args[1], args[4], causal)
    split = ssa_tiled(args[0], args[2], args[3], c, causal=causal, block_q=32, tile_elements=1)
    assert rel_err(split.double(), ref) < 1e-5
    # bfloat16 inputs are computed in float32 and returned in bfloat16
    args_bf = [t.bfloat16() for t in args]
    bf = ssa_attention(*args_bf, causal=causal, impl="tiled")
    assert bf.dtype == torch.bfloat16 and torch.isfinite(bf).all()
    ref_bf = ssa_attention(*(t.double() for t in args_bf), causal=causal, impl="dense")
    assert rel_err(bf.double(), ref_bf) < 1e-2  # the output's bfloat16 rounding


def test_gradients_match_finite_differences():
    # The tiled backward against central differences (smooth boundary: differentiable everywhere).
    inputs = ssa_inputs(2, B=1, H=2, N=9, d=2)

    def f(om, th, v, a, K):
        return ssa_tiled(om, v, a, _coupling_scale(th, K, True), causal=True, boundary="smooth",
                         block_q=4, block_k=4)

    assert torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-6)


def test_duplicate_frequencies_have_finite_gradients():
    # Δω = 0 off the diagonal (identical tokens): the reference's sqrt has a 0/0 there, masked by its relu.
    om, th, v, a, K = ssa_inputs(4, B=1, H=1, N=8)
    om = om.detach().clone()
    om[..., 3, :] = om[..., 5, :]
    om.requires_grad_()
    for impl in ("dense", "tiled"):
        for boundary in ssaf.BOUNDARIES:
            out = ssa_attention(om, th, v, a, K, boundary=boundary, impl=impl)
            grads = torch.autograd.grad(out.square().sum(), (om, th, v, a, K))
            assert all(torch.isfinite(g).all() for g in grads), (impl, boundary)


def _boundary_pair(K_scale: float, dtype):
    """Two SSA-1D tokens whose Δω sits at K_scale times the K that makes Δω equal the threshold."""
    x, alpha = 0.5, 1.0
    om = torch.tensor([0.0, x], dtype=dtype).view(1, 1, 2, 1)
    th = torch.zeros(1, 1, 2, 1, dtype=dtype)  # r = 1
    K_star = (x - ssaf.EPS) / math.exp(-alpha * x * x)
    return om, th, torch.tensor([alpha], dtype=dtype), torch.tensor(K_star * K_scale, dtype=dtype)


def test_smooth_boundary_gradients_finite_at_the_locking_boundary():
    v = torch.tensor([[1.0], [-1.0]]).view(1, 1, 2, 1)
    nonfinite_reference = 0
    for s in torch.linspace(1 - 1e-6, 1 + 1e-6, 41).tolist() + [1.0]:
        for boundary in ssaf.BOUNDARIES:
            for impl in ("dense", "tiled"):
                om, th, al, K = _boundary_pair(s, torch.float32)
                om.requires_grad_(); K.requires_grad_()
                out = ssa_attention(om, th, v, al, K, boundary=boundary, impl=impl)
                g_om, g_K = torch.autograd.grad(out[..., 0, 0].sum(), (om, K))
                finite = bool(torch.isfinite(g_om).all() and torch.isfinite(g_K))
                if boundary == "smooth":
                    assert finite, (s, impl)
                    assert g_om.abs().max() < 1e4 and g_K.abs() < 1e4
                else:
                    nonfinite_reference += not finite
    # DESIGN §3.2 (e): the reference form's derivative is infinite at ratio = 1 (1 − 1e-8 rounds to 1 in
    # float32). Not asserted to occur (it needs ratio == 1 exactly), only reported.
    print("reference form: non-finite gradients at", nonfinite_reference, "of 84 boundary points")


def test_smooth_close_to_reference_away_from_boundary():
    om, th, v, a, K = (t.detach() for t in ssa_inputs(4))
    comp = ssa_components(om, th, a, K, boundary="reference")
    u = 1 - (comp.delta_omega / comp.threshold).clamp(max=1).square()
    far = comp.locked & (u > 0.01)
    smooth = ssa_components(om, th, a, K, boundary="smooth").S
    assert far.any()
    rel = ((smooth - comp.S).abs() / comp.S)[far]
    assert rel.max() < ssaf.SMOOTH_FLOOR / (2 * 0.01) * 1.01


def test_components_definitions():
    om, th, v, a, K = (t.detach() for t in ssa_inputs(4))
    c = ssa_components(om, th, a, K, causal=True)
    diff = om.unsqueeze(3) - om.unsqueeze(2)
    torch.testing.assert_close(c.delta_omega, diff.norm(dim=-1), rtol=1e-7, atol=1e-7)
    torch.testing.assert_close(c.J, torch.exp(-a.view(1, -1, 1, 1) * c.delta_omega ** 2), rtol=1e-7, atol=1e-12)
    N = om.shape[2]
    assert not c.locked[..., ~torch.ones(N, N, dtype=torch.bool).tril()].any()  # causal
    assert c.locked.diagonal(dim1=-2, dim2=-1).all()  # Δω_ii = 0 always locks
    assert (c.S[~c.locked] == 0).all() and (c.S[c.locked] > 0).all() and (c.S <= c.J).all()


def test_weights_top_k_and_row_normalisation():
    om, th, v, a, K = (t.detach() for t in ssa_inputs(4, scale=0.3))
    out, W = ssa_attention(om, th, v, a, K, return_weights=True)
    torch.testing.assert_close(W.sum(-1), torch.ones_like(W[..., 0]), rtol=1e-7, atol=1e-7)
    torch.testing.assert_close(out, W @ v)
    k = 3
    out_k, W_k = ssa_attention(om, th, v, a, K, top_k=k, return_weights=True)
    S = ssa_components(om, th, a, K).S
    kth = S.topk(k, dim=-1).values[..., -1:]
    assert ((W_k > 0).sum(-1) <= k).all()
    assert ((W_k > 0) == ((S >= kth) & (S > 0))).all()
    torch.testing.assert_close(out_k, W_k @ v)


def test_order_parameter_theory_and_prefix():
    # DESIGN §3.2 (b): θ ~ N(0, 1/3) gives |E e^{iθ}| = e^{-1/6}; r averages d_h such moduli.
    g = torch.Generator().manual_seed(1)
    B, H, N, d = 2, 2, 4096, 16
    th = torch.randn(B, H, N, d, generator=g, dtype=F64) / math.sqrt(3)
    r = ssa_order_parameter(th)
    # per coordinate the modulus has std ≈ sqrt((1 - e^{-4/3}... )/2N) < 1/sqrt(2N); mean of d of them
    tol = 5 / math.sqrt(2 * N * d)
    assert (r - math.exp(-1 / 6)).abs().max() < tol
    rc = ssa_order_parameter(th, causal=True)
    assert rc.shape == (B, H, N)
    torch.testing.assert_close(rc[..., -1], r)
    torch.testing.assert_close(rc[..., 0], torch.ones(B, H, dtype=F64))  # one token is coherent with itself
    torch.testing.assert_close(rc[..., 9], ssa_order_parameter(th[:, :, :10]))


def test_order_parameter_head_chunks(monkeypatch):
    th = torch.rand(2, 5, 7, 3, dtype=F64) * 6
    ref = ssa_order_parameter(th, causal=True)
    monkeypatch.setattr(ssaf, "_ORDER_CHUNK_ELEMENTS", 50)  # one head per chunk
    torch.testing.assert_close(ssa_order_parameter(th, causal=True), ref)


def test_auto_and_validation():
    om, th, v, a, K = (t.detach() for t in ssa_inputs(4))
    dense = ssa_attention(om, th, v, a, K)
    torch.testing.assert_close(ssa_attention(om, th, v, a, K, impl="auto"), dense)
    with pytest.raises(ValueError, match="impl"):
        ssa_attention(om, th, v, a, K, impl="fast")
    with pytest.raises(ValueError, match="boundary"):
        ssa_attention(om, th, v, a, K, boundary="soft")
    with pytest.raises(ValueError, match="top_k"):
        ssa_attention(om, th, v, a, K, top_k=4, impl="tiled")
    with pytest.raises(ValueError, match="return_weights"):
        ssa_attention(om, th, v, a, K, impl="tiled", return_weights=True)
    with pytest.raises(ValueError, match="alpha"):
        ssa_attention(om, th, v, a[:2], K)
    with pytest.raises(ValueError, match="theta"):
        ssa_attention(om, th[:, :, :5], v, a, K)
    with pytest.raises(ValueError, match="top_k"):
        ssa_attention(om, th, v, a, K, top_k=0)
    if importlib.util.find_spec("triton") is not None and os.environ.get("TRITON_INTERPRET") != "1":
        with pytest.raises(ValueError, match="CUDA"):
            ssa_attention(om, th, v, a, K, impl="triton")
    with pytest.raises(ValueError, match="block_q"):
        ssa_tiled(om, v, a, _coupling_scale(th, K, False), block_q=0)


def test_tiled_memory_is_linear():
    # The tiled forward keeps no N x N tensor: its peak at N = 2048 stays far below one (H, N, N) matrix
    # (observed: about 1/17 of it).
    from oscsim.bench.attention import peak_memory_bytes

    g = torch.Generator().manual_seed(0)
    H, N, d = 2, 2048, 16
    om, th, v = (torch.randn(1, H, N, d, generator=g) for _ in range(3))
    a, K = torch.ones(H), torch.tensor(1.0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # no worker threads: the profiler sees the calling thread's allocations only
    try:
        with torch.no_grad():
            peak = peak_memory_bytes(lambda: ssa_attention(0.1 * om, th, v, a, K, impl="tiled"))
    finally:
        torch.set_num_threads(threads)
    one_matrix = H * N * N * 4
    assert peak < one_matrix / 4, (peak, one_matrix)
