"""mapping: the Kuramoto chip step, its first-order limit, noise and mismatch, seeds, end-to-end chip inference."""

import math

import numpy as np
import pytest
import torch

from mapping import (ChipConfig, Quantiser, closed_form_increment, compile, kuramoto_chip_step, relative_error, run)
from mapping.config import CouplingConfig

ANALOG = Quantiser(bits=None, range=1e6)
ANALOG_S = Quantiser(bits=None, range=1e6, signed=True)


def _layer(B=2, T=16, k=8, h=2, seed=0):
    rng = np.random.default_rng(seed)
    th = rng.uniform(-np.pi, np.pi, (B, T, k))
    s = 2.0 * rng.standard_normal((B, h, T, T))
    s = np.where(np.tril(np.ones((T, T))) > 0, s, -np.inf)
    A = np.exp(s - s.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
    v = rng.standard_normal((B, T, k))
    return th, A, v, closed_form_increment(th, A, h)


def _step(th, A, v, kt, **kw):
    kappa = 2 * math.pi * 0.01
    return kuramoto_chip_step(th, A, v, n_heads=2, kappa=kappa, settle_cycles=kt / kappa, n_steps=kw.pop("n_steps", 32),
                              coupling_q=ANALOG, gain_q=ANALOG_S, **kw)


def test_closed_form_increment_matches_the_definition():
    th, A, v, a = _layer(B=1, T=5, k=4)
    t, j = 3, 1
    h = j // 2
    expect = sum(A[0, h, t, u] * math.sin(th[0, u, j] - th[0, t, j]) for u in range(5))
    assert math.isclose(a[0, t, j], expect, rel_tol=1e-12, abs_tol=1e-15)


def test_first_order_limit_error_linear_in_kappa_tau():
    """Ideal chip: the increment error shrinks linearly with κτ_s (fitted slope 1 ± 0.1)."""
    th, A, v, a = _layer()
    kts = np.array([0.4, 0.2, 0.1, 0.05, 0.025])
    err_va, err_a = [], []
    for kt in kts:
        out = _step(th, A, v, kt)
        err_va.append(relative_error(out.va, v * a))
        err_a.append(relative_error(out.a, a))
    slope_va = np.polyfit(np.log(kts), np.log(err_va), 1)[0]
    slope_a = np.polyfit(np.log(kts), np.log(err_a), 1)[0]
    print(f"first-order slopes: v*a {slope_va:.3f}, a {slope_a:.3f}; errors {np.round(err_va, 5)}")
    assert abs(slope_va - 1) < 0.1 and abs(slope_a - 1) < 0.1
    assert err_va[-1] < 0.01


def test_engine_matches_numpy_twin():
    th, A, v, a = _layer(B=1, T=12)
    e = _step(th, A, v, 0.3, backend="auto")
    n = _step(th, A, v, 0.3, backend="numpy")
    assert np.allclose(e.va, n.va, rtol=1e-9, atol=1e-9)


def test_harmonics_offset_is_compensated():
    """A cos term in H shifts every oscillator by a known amount, which the periphery subtracts."""
    th, A, v, a = _layer(B=1, T=12)
    out = _step(th, A, v, 0.02, harmonics=((1.0, 0.0), (0.0, 0.3)))  # H(x) = sin x + 0.3 cos 2x
    h2 = closed_form_increment(th, A, 2)  # first order with H: Σ A [sin Δ + 0.3 (cos 2Δ − 1)]
    B, T, k = th.shape
    thh = th.reshape(B, T, 2, k // 2).transpose(0, 2, 1, 3)
    d = thh[:, :, None, :, :] - thh[:, :, :, None, :]
    extra = 0.3 * (A[..., None] * (np.cos(2 * d) - 1)).sum(-2)
    expect = (h2 + extra.transpose(0, 2, 1, 3).reshape(B, T, k)) * v
    assert relative_error(out.va, expect) < 0.02


def _noisy_error(level, seed, th, A, v, a):
    rng = np.random.default_rng([seed, 7])
    resid = 2 * math.pi * 2e-3 * level * rng.standard_normal((2, 2, 4, th.shape[1]))
    gain = np.maximum(1 + 0.05 * level * rng.standard_normal((2, 2, 4, th.shape[1], th.shape[1])), 0.1)
    out = _step(th, A, v, 0.3, sigma=0.01 * level, freq_residual=resid, coupler_gain=gain, seed=seed, n_steps=16)
    return relative_error(out.va, v * a)


def test_noise_and_mismatch_degrade_fidelity_monotonically_in_expectation():
    """Mean error over 12 seeds grows with the noise/mismatch level; each step is > 2 standard errors."""
    th, A, v, a = _layer()
    levels = [0.5, 1.0, 2.0, 4.0]
    stats = []
    for lev in levels:
        e = np.array([_noisy_error(lev, s, th, A, v, a) for s in range(12)])
        stats.append((e.mean(), e.std(ddof=1) / math.sqrt(len(e))))
    print("noise level -> mean rel. error ± s.e.:", [(lev, round(m, 4), round(se, 4)) for lev, (m, se) in zip(levels, stats)])
    for (m0, s0), (m1, s1) in zip(stats, stats[1:]):
        assert m1 - m0 > 2 * math.hypot(s0, s1)


def test_same_seed_same_numbers():
    th, A, v, a = _layer()
    e1 = _noisy_error(1.0, 3, th, A, v, a)
    e2 = _noisy_error(1.0, 3, th, A, v, a)
    e3 = _noisy_error(1.0, 4, th, A, v, a)
    assert e1 == e2 and e1 != e3


def test_quantisation_row_scaling_helps():
    th, A, v, a = _layer(T=32)
    kw = dict(gain_q=ANALOG_S)
    kappa = 2 * math.pi * 0.01
    common = dict(n_heads=2, kappa=kappa, settle_cycles=0.05 / kappa, n_steps=8)
    q = Quantiser(bits=4, range=1.0)
    plain = kuramoto_chip_step(th, A, v, coupling_q=q, **kw, **common)
    scaled = kuramoto_chip_step(th, A, v, coupling_q=q, row_scaled=True, **kw, **common)
    assert relative_error(scaled.va, v * a) < relative_error(plain.va, v * a)


# ------------------------------------------------------------------------------------------ model level
@pytest.fixture(scope="module")
def small_model():
    from oscsim.nn.kuramoto import KuramotoConfig, KuramotoLM

    torch.manual_seed(0)
    return KuramotoLM(KuramotoConfig(k=16, n_heads=2, n_layers=2, seq_len=32))


def _bpc(logits, y):
    from mapping import bits_per_character

    return bits_per_character(logits, y)


def test_ideal_chip_matches_closed_form_end_to_end(small_model):
    sd = {k: v.clone() for k, v in small_model.state_dict().items()}
    tok = torch.randint(0, 256, (3, 33), generator=torch.Generator().manual_seed(1))
    x, y = tok[:, :-1], tok[:, 1:]
    chip = compile(small_model, ChipConfig.ideal(settle_cycles=0.5))
    res = run(chip, x, progress=False)
    b = res.bpc(y)
    assert abs(b["bpc_chip"] - b["bpc_closed_form"]) < 0.01
    for L in res.layers:
        assert L["layer_rel_error"] < 0.05 and L["layer_cosine"] > 0.99
    for k, v in small_model.state_dict().items():  # the model is not modified
        assert torch.equal(v, sd[k])


def test_chip_run_reproducible_and_seeded(small_model):
    tok = torch.randint(0, 256, (2, 32), generator=torch.Generator().manual_seed(2))
    chip = compile(small_model, ChipConfig())
    r1, r2 = run(chip, tok, seed=5, progress=False), run(chip, tok, seed=5, progress=False)
    r3 = run(chip, tok, seed=6, progress=False)
    assert torch.equal(r1.logits, r2.logits)
    assert not torch.equal(r1.logits, r3.logits)
    chip2 = compile(small_model, ChipConfig(mismatch_seed=1))
    assert not np.array_equal(chip.layers[0].freq_residual_rel, chip2.layers[0].freq_residual_rel)


def test_chip_temperature_degrades_fidelity(small_model):
    """Chip level: thermal phase noise ∝ T; mean layer error over seeds grows with temperature."""
    tok = torch.randint(0, 256, (2, 32), generator=torch.Generator().manual_seed(3))
    base = ChipConfig(device="ring-macromodel", mismatch=False,
                      coupling=CouplingConfig(bits=None, gain_bits=None, gain_range=1e6))
    means = []
    for temp in (10.0, 100.0, 1000.0):
        chip = compile(small_model, base.replace(temperature_k=temp))
        errs = [run(chip, tok, seed=s, progress=False, closed_form=False).layers[0]["layer_rel_error"] for s in range(3)]
        means.append(np.mean(errs))
    assert means[0] < means[1] < means[2]


def test_bundled_checkpoint_ideal_bpc():
    """With the bundled Kuramoto checkpoint: the ideal chip's BPC is within 0.01 of the closed form."""
    from oscsim.train import bundled_checkpoints

    if "kuramoto-tiny" not in bundled_checkpoints():
        pytest.skip("bundled kuramoto-tiny checkpoint not installed")
    from mapping.cli.common import validation_tokens as _validation_tokens

    chip = compile("kuramoto-tiny", ChipConfig().idealised())
    x, y = _validation_tokens(chip.model_info["config"], 512)
    b = run(chip, x, progress=False).bpc(y)
    assert abs(b["bpc_chip"] - b["bpc_closed_form"]) <= 0.01


def test_per_oscillator_noise_from_the_instance_draw_is_used():
    """sigma as a (banks, h, k_h, T) array (the device's per-instance D): a silent head is noise-free."""
    th, A, v, _ = _layer(B=1, T=8, k=8, h=2)
    sig = np.full((2, 2, 4, 8), 0.05)
    sig[:, 0] = 0.0  # head 0 noise-free in both banks
    clean = _step(th, A, v, 0.2)
    mixed = _step(th, A, v, 0.2, sigma=sig, seed=3)
    np.testing.assert_allclose(mixed.va[..., :4], clean.va[..., :4], rtol=0, atol=1e-12)  # head 0 = coordinates 0..3
    assert np.max(np.abs(mixed.va[..., 4:] - clean.va[..., 4:])) > 1e-3


def test_per_tile_couplers_give_the_bits_of_the_gathered_per_unit_array():
    """A multiplexed chip hands the engine its per-tile coupler draw with each network's tile index
    (``PhaseSettings.coupler_tile``) instead of the per-unit array gathered from it: the same products, so the
    same bits; ``coupler_gain_per_unit`` is the gathered array the chip itself reports."""
    import dataclasses

    from _chips import seeded_kuramoto
    from mapping.backends.base import KuramotoInputs
    from mapping.backends.phase import phase_settings, phase_step
    from mapping.seeds import LayerSeeds

    model = seeded_kuramoto(k=8, n_heads=2, n_layers=1, seq_len=16)
    chip = compile(model, ChipConfig())
    lm = chip.layers[0]
    assert lm.tiles is not None and lm.coupler_spread_rel > 0
    tiled = phase_settings(chip, 0)
    assert tiled.coupler_tile is not None and tiled.coupler_gain.shape[0] == lm.tiles.count
    per_unit = dataclasses.replace(tiled, coupler_gain=lm.coupler_gain(), coupler_tile=None)
    assert np.array_equal(tiled.coupler_gain_per_unit(), lm.coupler_gain())
    th, A, v, _ = _layer(B=3, T=12, k=8, h=2, seed=4)
    outs = [phase_step(s, KuramotoInputs.of(th, A, v), LayerSeeds(7, None)) for s in (tiled, per_unit)]
    assert np.array_equal(outs[0].va, outs[1].va) and np.array_equal(outs[0].a, outs[1].a)
    # and the spread does act: without it the increments change
    plain = dataclasses.replace(tiled, coupler_gain=None, coupler_tile=None)
    assert not np.array_equal(phase_step(plain, KuramotoInputs.of(th, A, v), LayerSeeds(7, None)).va, outs[0].va)
