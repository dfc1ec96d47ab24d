"""The HWA surrogate's increment statistics match the compiled chip's (mapping/hwa.py vs mapping/kuramoto_chip.py).

One small layer (T = 16, k = 8, 2 heads), one input repeated R times: the chip's engine draws independent
phase and readout noise per repeat, so the chip's mean and variance of x̂ (estimate of v ⊙ a) and â over the
repeats are compared with the surrogate's, element by element.
"""

import dataclasses
import math

import numpy as np
import pytest
import torch

from mapping import compile as compile_chip
from mapping.config import ChipConfig
from mapping.compiler.mismatch import trim_residual_torch as trim_residual
from mapping.hwa import SurrogateSpec, surrogate_increment
from mapping.periphery.readout import chip_readout
from mapping.backends.phase import kuramoto_chip_step
from oscsim.nn.kuramoto import KuramotoConfig, KuramotoLM

T, K, H, R = 16, 8, 2, 400


@pytest.fixture(scope="module")
def layer_input():
    rng = np.random.default_rng(1)
    theta = rng.uniform(-np.pi, np.pi, (1, T, K))
    s = rng.normal(size=(1, H, T, T)) * 2
    s = np.where(np.tril(np.ones((T, T))) > 0, s, -np.inf)
    A = np.exp(s - s.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
    v = rng.uniform(-1, 1, (1, T, K))
    return theta, A, v


def _chip(cfg):
    torch.manual_seed(0)
    model = KuramotoLM(KuramotoConfig(k=K, n_heads=H, n_layers=1, ffn_hidden=8, seq_len=T))
    return compile_chip(model, cfg)


def _run_chip(chip, theta, A, v, reps, seed=3):
    cfg, lm = chip.config, chip.layers[0]
    fr = lm.freq_residual_rel * 2 * math.pi if cfg.mismatch else None
    out = kuramoto_chip_step(
        np.repeat(theta, reps, 0), np.repeat(A, reps, 0), np.repeat(v, reps, 0), n_heads=H, kappa=cfg.kappa,
        settle_cycles=cfg.settle_cycles, n_steps=max(int(math.ceil(cfg.settle_cycles * cfg.steps_per_cycle)), 4),
        coupling_q=lm.coupling_quantiser, gain_q=lm.gain_quantiser, harmonics=chip.harmonics,
        freq_residual=fr if fr is not None and np.any(fr) else None,
        coupler_gain=lm.coupler_gain() if lm.coupler_spread_rel > 0 else None,
        sigma=chip.timebase["sigma_rad_per_sqrt_cycle"], readout=chip_readout(chip), seed=seed,
        reference_bank=True, row_scaled=cfg.coupling.row_scaled)
    return out.va, out.a


def _run_surrogate(spec, theta, A, v, reps, seed=0, order=2):
    t = lambda x: torch.tensor(np.repeat(x, reps, 0))  # noqa: E731
    va, a = surrogate_increment(t(theta), t(A), t(v), spec, torch.Generator().manual_seed(seed), order=order)
    return va.numpy(), a.numpy()


def _z(c, s):
    """Per-element z-score of the difference of the two sample means."""
    return (c.mean(0) - s.mean(0)) / np.sqrt((c.var(0) + s.var(0)) / len(c))


def test_noise_statistics_match_the_chip(layer_input):
    """Noise on, mismatch off, readout noise ×10 (so that it, not the ADC's rounding, dominates)."""
    cfg = ChipConfig(mismatch=False)
    cfg = dataclasses.replace(cfg, readout=dataclasses.replace(cfg.readout, noise_rad=0.02))
    chip = _chip(cfg)
    spec = SurrogateSpec.from_chip(chip)
    chip_out = _run_chip(chip, *layer_input, R)
    sur_out = _run_surrogate(spec, *layer_input, R)
    first_order = _run_surrogate(spec, *layer_input, R, order=1)
    for c, s, f in zip(chip_out, sur_out, first_order):
        z = _z(c, s)
        # means: for a correct model z ~ N(0, 1) per element (the O((κτ g)²) remainder adds a little)
        assert np.sqrt(np.mean(z ** 2)) < 1.6, np.sqrt(np.mean(z ** 2))
        assert np.mean(np.abs(z) < 3) > 0.95
        # variances: per element var ratio has a relative SE of sqrt(2/R) = 7 %; the mean over 128 elements ~1 %
        ratio = c.var(0) / s.var(0)
        assert 0.95 < ratio.mean() < 1.05, ratio.mean()
        # the test can fail: without the second-order term the means are off
        zf = _z(c, f)
        assert np.sqrt(np.mean(zf ** 2)) > 2.0, np.sqrt(np.mean(zf ** 2))


def test_noise_rms_is_the_stated_formula():
    spec = SurrogateSpec.from_chip(_chip(ChipConfig()))
    expect = math.sqrt(spec.sigma_rad_per_sqrt_cycle ** 2 * spec.settle_cycles + spec.readout_sigma_rad ** 2
                       + spec.readout_step ** 2 / 12) / spec.kappa_tau
    assert spec.noise_rms == pytest.approx(expect)
    # noise_rad / sqrt(averaging_cycles = 4), divided by the detector low-pass's gain, plus the oscillator's
    # diffusion during the window (mapping.readout.PhaseReadout.error_model)
    from mapping.periphery.readout import PhaseReadout

    em = PhaseReadout(noise_rad=0.002, bits=10, averaging_cycles=4.0, samples_per_cycle=4,
                      bandwidth_fraction=0.25).error_model()
    assert 0.7 < em["gain"] < 0.9 and em["noise_rad"] == pytest.approx(0.002 / 2 / em["gain"])
    assert spec.readout_sigma_rad == pytest.approx(math.sqrt(em["noise_rad"] ** 2 + spec.sigma_rad_per_sqrt_cycle ** 2
                                                             * em["diffusion_cycles"]))


def test_mismatch_statistics_match_chips_over_mismatch_seeds(layer_input):
    """Noise off, mismatch on: the spread of x̂ over 60 compiled chips (mismatch seeds) vs fresh surrogate draws."""
    theta, A, v = layer_input
    n = 60
    chips = [_chip(ChipConfig(noise=False, mismatch_seed=s)) for s in range(n)]
    vals = np.stack([_run_chip(c, theta, A, v, 1)[0][0] for c in chips])  # (n, T, K)
    spec = SurrogateSpec.from_chip(chips[0])
    # one surrogate call is one chip (its frequency draw is shared by the batch): 200 calls of one sequence
    sur = np.concatenate([_run_surrogate(spec, theta, A, v, 1, seed=s)[0] for s in range(200)])
    # both spreads carry the ADC rounding; compare the total variance over elements from t = 1 on
    vc, vs = vals[:, 1:].var(0).mean(), sur[:, 1:].var(0).mean()
    assert 0.8 < vc / vs < 1.25, (vc, vs)
    # and a surrogate without the frequency residual misses much of it (the test can fail)
    no_freq = dataclasses.replace(spec, freq_spread_rel=0.0)
    part = np.concatenate([_run_surrogate(no_freq, theta, A, v, 1, seed=s)[0] for s in range(200)])
    assert vc / part[:, 1:].var(0).mean() > 1.5


def test_trim_residual_matches_the_compiler():
    from mapping.compiler.mismatch import trim as _trim

    eps = np.random.default_rng(0).normal(0, 0.015, 1000)
    _, resid = _trim(eps, 0.015, 8)
    np.testing.assert_allclose(trim_residual(torch.tensor(eps), 0.015, 8).numpy(), resid, atol=1e-15)


def test_fixed_mismatch_mode_reproduces_the_chip_without_noise(layer_input):
    """Calibration mode (the chip's own draw, noise off) agrees with the chip to the Taylor remainder."""
    chip = _chip(ChipConfig(noise=False, mismatch_seed=5))
    chip = dataclasses.replace(chip, config=dataclasses.replace(chip.config,
                               readout=dataclasses.replace(chip.config.readout, bits=None)))
    spec = SurrogateSpec.from_chip(chip)
    theta, A, v = layer_input
    c = _run_chip(chip, theta, A, v, 1)[0]
    lm = chip.layers[0]
    s, _ = surrogate_increment(torch.tensor(theta), torch.tensor(A), torch.tensor(v), spec, None,
                               freq_residual=lm.freq_residual_rel, coupler_gain=lm.coupler_gain(), noise=False)
    err = np.linalg.norm(c - s.numpy()) / np.linalg.norm(c)
    assert err < 0.01, err
    fresh, _ = surrogate_increment(torch.tensor(theta), torch.tensor(A), torch.tensor(v), spec,
                                   torch.Generator().manual_seed(0), noise=False)
    assert np.linalg.norm(c - fresh.numpy()) / np.linalg.norm(c) > 3 * err  # another chip's draw is farther
