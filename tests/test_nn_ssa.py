"""SSA module and OSN model: reference semantics against an independent computation of DESIGN §3.2, causality,
finite gradients at the locking boundary, initialisation facts, variants."""

import math

import pytest
import torch
import torch.nn.functional as F

from oscsim.nn import OSNConfig, OSNModel, SSAAttention


def _independent(att: SSAAttention, x: torch.Tensor, *, causal: bool) -> torch.Tensor:
    """DESIGN §3.2 written out with explicit pairwise differences and loops over the prefix."""
    B, N, d = x.shape
    H, dh = att.n_heads, att.dh
    Fq = att.F
    om = (x @ att.w_omega.weight.T + att.w_omega.bias).view(B, N, H, Fq)
    if att.drift is not None:
        om = om + att.drift.view(1, 1, H, 1) * torch.arange(N, dtype=x.dtype).view(1, N, 1, 1)
    th = (x @ att.w_theta.weight.T + att.w_theta.bias).view(B, N, H, dh)
    v = (x @ att.w_value.weight.T + att.w_value.bias).view(B, N, H, dh)
    alpha = torch.log1p(torch.exp(att.alpha_hat))
    K = torch.log1p(torch.exp(att.K_hat))
    out = torch.zeros(B, N, H, dh, dtype=x.dtype)
    for b in range(B):
        for h in range(H):
            for i in range(N):
                keys = range(i + 1) if causal else range(N)
                pref = list(range(i + 1)) if causal else list(range(N))
                z = torch.exp(1j * th[b, pref, h, :].to(torch.complex128)).mean(0)  # (dh,)
                r = z.abs().mean()
                num = torch.zeros(dh, dtype=x.dtype)
                den = 0.0
                for j in keys:
                    dw = torch.sqrt(((om[b, i, h] - om[b, j, h]) ** 2).sum())
                    J = torch.exp(-alpha[h] * dw ** 2)
                    thr = K * r * J + 1e-8
                    ratio = torch.clamp(dw / thr, -1 + 1e-8, 1 - 1e-8)
                    S = J * torch.sqrt(1 - ratio ** 2) * float(dw <= thr)
                    num = num + S * v[b, j, h]
                    den = den + S
                out[b, i, h] = num / (den + 1e-8)
    return att.out(out.reshape(B, N, d))


@pytest.mark.parametrize("frequency", ["vector", "scalar"])
@pytest.mark.parametrize("causal", [False, True])
def test_reference_matches_independent(frequency, causal):
    torch.manual_seed(3)
    att = SSAAttention(16, 2, frequency=frequency, causal=causal, boundary="reference", init="reference",
                       dropout=0.1).double().eval()
    with torch.no_grad():  # spread the weights so that some pairs lock and some do not
        att.w_omega.weight.normal_(0, 0.04 if frequency == "vector" else 0.1)
        att.w_theta.weight.normal_(0, 0.15)
        att.w_value.weight.normal_(0, 0.5)
    x = torch.randn(2, 9, 16, dtype=torch.float64)
    comp = att.components(x)
    frac = comp["locked_fraction"]
    assert 0.05 < frac < 0.95, frac
    torch.testing.assert_close(att(x), _independent(att, x, causal=causal), atol=1e-9, rtol=1e-7)


def test_reference_config_semantics():
    cfg = OSNConfig.reference()
    assert (cfg.causal, cfg.position, cfg.boundary, cfg.init, cfg.dropout) == (False, "none", "reference",
                                                                                "reference", 0.1)
    m = OSNModel(cfg)
    blk = m.blocks[0].attn
    assert torch.allclose(blk.alpha_hat, torch.ones(4)) and float(blk.K_hat.detach()) == 1.0
    # same parameters as a transformer block + 1 + H (K and the α's)
    d = cfg.d_model
    n_block = sum(p.numel() for p in m.blocks[0].parameters())
    assert n_block == 4 * (d * d + d) + (8 * d * d + 5 * d) + 4 * d + 1 + cfg.n_heads


def test_reference_init_is_identity_at_paper_scale():
    """Fact (a): d = 512, H = 8, LayerNorm'd inputs, reference init: no off-diagonal pair locks."""
    torch.manual_seed(0)
    att = SSAAttention(512, 8, init="reference").eval()
    x = F.layer_norm(torch.randn(1, 32, 512), (512,))
    with torch.no_grad():
        comp = att.components(x)
    assert comp["locked_fraction"] == 0.0
    off = ~torch.eye(32, dtype=torch.bool)
    assert comp["J"][..., off].max() < 1e-6
    torch.testing.assert_close(comp["weights"][0, 0], torch.eye(32), atol=1e-5, rtol=0)


def test_locked_init_gives_useful_locked_fraction():
    torch.manual_seed(0)
    for frequency in ("vector", "scalar"):
        att = SSAAttention(64, 4, frequency=frequency, causal=True, position="drift", init="locked").eval()
        x = F.layer_norm(torch.randn(2, 64, 64), (64,))
        with torch.no_grad():
            frac = att.components(x)["locked_fraction"]
        assert 0.1 < frac < 0.9, (frequency, frac)


@pytest.mark.parametrize("frequency", ["vector", "scalar"])
@pytest.mark.parametrize("top_k", [None, 3])
def test_causality(frequency, top_k):
    torch.manual_seed(0)
    cfg = OSNConfig(vocab_size=13, seq_len=10, d_model=16, n_heads=2, n_layers=2, frequency=frequency, top_k=top_k)
    m = OSNModel(cfg).double().eval()
    tok = torch.randint(0, 13, (2, 10))
    base = m(tok)
    for t in (0, 4, 8):
        tok2 = tok.clone()
        tok2[:, t + 1] = (tok2[:, t + 1] + 1) % 13
        torch.testing.assert_close(m(tok2)[:, : t + 1], base[:, : t + 1], atol=1e-12, rtol=0)
    assert not torch.allclose(m(tok2)[:, 9:], base[:, 9:])


def test_noncausal_reference_is_not_causal():
    torch.manual_seed(0)
    m = OSNModel(OSNConfig.reference(vocab_size=13, d_model=16, n_heads=2, n_layers=1, init="locked")).double().eval()
    tok = torch.randint(0, 13, (1, 10))
    tok2 = tok.clone()
    tok2[0, 9] = (tok2[0, 9] + 1) % 13
    assert not torch.allclose(m(tok)[:, :9], m(tok2)[:, :9])


def _boundary_layer(dw: float, dtype=torch.float64):
    """SSA-1D layer whose tokens 0 and 1 have frequency mismatch dw exactly at the locking threshold."""
    att = SSAAttention(4, 1, frequency="scalar", causal=True, boundary="smooth", init="reference",
                       dropout=0.0).to(dtype)
    with torch.no_grad():
        att.w_omega.weight.zero_()
        att.w_omega.weight[0, 0] = 1.0   # ω_i = x_i0
        att.w_theta.weight.zero_()       # θ = 0 → r = 1 exactly
        att.w_theta.bias.zero_()
        alpha = float(F.softplus(att.alpha_hat)[0])
        J = math.exp(-alpha * dw * dw)
        K = (dw - 1e-8) / J                        # K r J + 1e-8 = dw
        att.K_hat.fill_(math.log(math.expm1(K)))   # softplus⁻¹
    x = torch.zeros(1, 3, 4, dtype=dtype)
    x[0, 1, 0] = dw
    x[0, :, 1:] = torch.randn(3, 3, dtype=dtype)
    return att, x.requires_grad_(True)


@pytest.mark.parametrize("dw", [0.3, 0.05])
def test_finite_gradients_at_locking_boundary(dw):
    att, x = _boundary_layer(dw)
    comp = att.components(x)
    thr, d = comp["threshold"][0, 0, 1, 0], comp["delta_omega"][0, 0, 1, 0]
    assert abs(float((thr - d).detach())) < 1e-12  # the pair sits on the boundary (to rounding)
    att(x).square().sum().backward()
    assert torch.isfinite(x.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in att.parameters() if p.grad is not None)


def test_finite_gradients_float32_identical_tokens():
    """Δω = 0 (identical tokens) and float32: the smooth form stays finite."""
    torch.manual_seed(0)
    m = OSNModel(OSNConfig(vocab_size=5, d_model=16, n_heads=2, n_layers=2, frequency="scalar"))
    tok = torch.zeros(2, 8, dtype=torch.long)
    m(tok).logsumexp(-1).sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in m.parameters() if p.grad is not None)


def test_diagnostics_and_components():
    torch.manual_seed(0)
    m = OSNModel(OSNConfig(vocab_size=13, d_model=16, n_heads=2, n_layers=2)).eval()
    tok = torch.randint(0, 13, (2, 10))
    logits, diag = m(tok, return_diagnostics=True)
    assert len(diag["locked_fraction"]) == 2 and diag["r"][0].shape == (2, 2, 10)
    comps = m.layer_components(tok)
    c = comps[0]
    for key in ("omega", "r", "J", "K", "alpha", "locked", "weights"):
        assert key in c
    assert c["omega"].shape == (2, 2, 10, 8) and c["locked"].dtype == torch.bool
    assert not c["locked"].triu(1).any()  # causal


def test_bad_config():
    with pytest.raises(ValueError, match="frequency"):
        OSNConfig(frequency="complex")
    with pytest.raises(ValueError, match="top_k"):
        OSNConfig(top_k=0)
    with pytest.raises(ValueError, match="divisible"):
        SSAAttention(10, 3)


def test_fact_b_order_parameter_of_initial_phases():
    """Fact (b): for θ ~ N(0, 1/3), |E e^{iθ}| = e^{−1/6} ≈ 0.846, whatever the data: r at initialisation says
    nothing about learned synchrony. 4096 tokens × 64 coordinates: standard error of r below 0.002."""
    from oscsim.nn.ssa_functional import ssa_order_parameter

    g = torch.Generator().manual_seed(0)
    theta = torch.randn(1, 1, 4096, 64, generator=g, dtype=torch.float64) * math.sqrt(1 / 3)
    r = float(ssa_order_parameter(theta)[0, 0])
    assert abs(r - math.exp(-1 / 6)) < 0.01
