"""The analog-score mode (mapping.backends.analog_scores): the closed form in the noiseless limit, each error term
of the chain against its prediction (confidence intervals), the fast path against its sample-by-sample twin, one
seed one answer, and the mode as a chip configuration."""

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from mapping.backends.analog_scores import (ScoreSettings, _window_coherence, chip_scores, closed_form_scores,
                                            score_error_model)
from mapping.periphery.quantise import Quantiser
from mapping.periphery.readout import PhaseReadout
from mapping.seeds import LayerSeeds

IDEAL_READOUT = PhaseReadout(response="cosine", noise_rad=0.0, bits=None, averaging_cycles=4.0, samples_per_cycle=4,
                             bandwidth_fraction=None)
FILTERED = dataclasses.replace(IDEAL_READOUT, bandwidth_fraction=0.25)
ANALOG_GATES = Quantiser(bits=None, range=1e6)


def _inputs(B=2, h=2, T=24, kh=8, seed=0, unit_gates=False):
    rng = np.random.default_rng(seed)
    rot = rng.uniform(-np.pi, np.pi, (B, h, T, kh))
    if unit_gates:
        return rot, np.ones_like(rot), np.ones_like(rot)
    g = rng.gamma(2.0, 0.5, (2, B, h, T, kh))
    g = g / g.mean(-1, keepdims=True)  # positive, mean one per head, as the model's gates
    return rot, g[0], g[1]


def _settings(readout=IDEAL_READOUT, **kw):
    return ScoreSettings(readout=readout, gate_q=kw.pop("gate_q", ANALOG_GATES), full_scale=kw.pop("full_scale", 4.0),
                         **kw)


def _low(T):
    return np.tril(np.ones((T, T), dtype=bool))


def _errors(s, rot, gq, gk, tau=2.0, seed=0, **kw):
    T = rot.shape[2]
    chip = chip_scores(s, rot, gq, gk, tau, LayerSeeds(seed), **kw)
    return (chip - closed_form_scores(rot, gq, gk, tau))[..., _low(T)]


@pytest.mark.parametrize("readout", [IDEAL_READOUT, FILTERED], ids=["no filter", "low-pass"])
def test_noiseless_unquantised_chain_is_the_closed_form(readout):
    rot, gq, gk = _inputs()
    tau = 2.7
    chip = chip_scores(_settings(readout), rot, gq, gk, tau, LayerSeeds(0))
    cf = closed_form_scores(rot, gq, gk, tau)
    low = _low(rot.shape[2])
    assert np.all(np.isneginf(chip[..., ~low]))
    err = np.abs(chip - cf)[..., low].max() / np.abs(cf[..., low]).max()
    print(f"relative max error {err:.2e}")
    assert err < 1e-12  # the filter's attenuation is known and divided out


def test_closed_form_scores_are_the_models_scores():
    import torch

    from mapping.backends.analog_scores import model_score_inputs
    from _chips import seeded_kuramoto

    m = seeded_kuramoto(vocab_size=32, seq_len=12, n_heads=2, n_layers=1, k=8, ffn_hidden=8)
    theta = torch.rand(2, 12, 8, dtype=torch.float32) * 6 - 3
    attn = m.layers[0].attn
    rot, gq, gk, tau = model_score_inputs(attn, theta)
    with torch.no_grad():
        _, q, key, _, _ = attn._qk(theta)
        s = (q @ key.transpose(-1, -2)).double().numpy()
    assert np.allclose(closed_form_scores(rot, gq, gk, tau), s, rtol=1e-5, atol=1e-5)  # float32 model


def test_fast_cosine_path_matches_the_sample_by_sample_twin():
    """The factorised complex product equals evaluating the detector sample by sample (with per-pair key errors)."""
    rng = np.random.default_rng(3)
    M, h, T, kh = 16, 2, 10, 4
    phi = rng.uniform(-np.pi, np.pi, (M, h, T, kh))
    gq, gk = rng.uniform(0.2, 2, (2, h, T, kh))
    extra = 0.3 * rng.standard_normal((h, T, T, kh))
    fast = _window_coherence(FILTERED, phi, gq, gk, extra)
    w = FILTERED.window_weights()
    slow = sum(w[m] * np.einsum("htuj,htj,huj->htu", np.cos(phi[m][:, :, None] - phi[m][:, None] - extra), gq, gk)
               for m in range(M))
    assert np.allclose(fast, slow, rtol=1e-12, atol=1e-12)
    assert np.allclose(_window_coherence(FILTERED, phi, gq, gk, None),
                       _window_coherence(FILTERED, phi, gq, gk, np.zeros_like(extra)), rtol=1e-12, atol=1e-12)
    # the XOR detector's triangle, sample by sample, is what the chip then measures (not the cosine)
    tri = dataclasses.replace(FILTERED, response="triangular")
    t_out = _window_coherence(tri, phi, gq, gk, None)
    d = phi[:, :, :, None] - phi[:, :, None, :]
    expect = np.einsum("m,mhtuj,htj,huj->htu", w, 1 - 2 * np.abs(np.angle(np.exp(1j * d))) / np.pi, gq, gk)
    assert np.allclose(t_out, expect, rtol=1e-12, atol=1e-12)


def _ci_ratio(err, predicted_rms, alpha=1e-3):
    """(lo, hi) chi-square CI of the measured variance over the predicted one, and the measured ratio."""
    n = err.size
    ratio = np.mean(err**2) / predicted_rms**2
    lo, hi = stats.chi2.ppf([alpha / 2, 1 - alpha / 2], n) / n
    return ratio, lo, hi


def test_sampler_noise_is_the_predicted_gaussian():
    rot, gq, gk = _inputs(B=3, T=32)
    rd = dataclasses.replace(FILTERED, noise_rad=2e-3)
    s = _settings(rd)
    err = _errors(s, rot, gq, gk, tau=2.0)
    pred = score_error_model(s, tau=2.0, kh=rot.shape[-1])["sampler"]
    assert pred == pytest.approx(2.0 * math.sqrt(8) * 4.0 * 2e-3 / math.sqrt(4.0))  # τ √k_h F ν/√W
    ratio, lo, hi = _ci_ratio(err, pred)
    t = np.mean(err) / (np.std(err) / math.sqrt(err.size))
    print(f"sampler: var ratio {ratio:.4f} in [{lo:.4f}, {hi:.4f}], mean t {t:.2f}, n = {err.size}")
    assert lo < ratio < hi and abs(t) < 3.3


def test_adc_quantisation_matches_the_uniform_step_model():
    rot, gq, gk = _inputs(B=3, T=32)
    s = _settings(dataclasses.replace(FILTERED, bits=8))
    err = _errors(s, rot, gq, gk, tau=2.0)
    pred = score_error_model(s, tau=2.0, kh=rot.shape[-1])["adc"]
    # uniform rounding error: its sample variance has standard error var · sqrt(0.8 / n) (kurtosis 9/5)
    ratio = np.mean(err**2) / pred**2
    half = 3.3 * math.sqrt(0.8 / err.size)
    print(f"ADC: var ratio {ratio:.4f} +- {half:.4f} (n = {err.size}), max |err| {np.abs(err).max():.4f}")
    assert abs(ratio - 1) < half
    assert np.abs(err).max() <= pred * math.sqrt(12) / 2 * (1 + 1e-9)  # never more than half a step


def test_gate_dac_rounding_is_the_closed_form_of_the_rounded_gates():
    rot, gq, gk = _inputs(B=3, T=32)
    q = Quantiser(bits=6, range=4.0)
    s = _settings(FILTERED, gate_q=q)
    chip = chip_scores(s, rot, gq, gk, 2.0, LayerSeeds(0))
    low = _low(rot.shape[2])
    assert np.allclose(chip[..., low], closed_form_scores(rot, q(gq), q(gk), 2.0)[..., low], rtol=1e-12, atol=1e-11)
    err = (chip - closed_form_scores(rot, gq, gk, 2.0))[..., low]
    pred = score_error_model(s, tau=2.0, kh=rot.shape[-1], mean_gate_square=float(np.mean(gq**2)))["gates"]
    ratio = np.mean(err**2) / pred**2
    print(f"gates: var ratio {ratio:.3f} (first order, independent roundings)")
    assert 0.7 < ratio < 1.3  # the k_h roundings of a row are shared by its scores: a loose, not a chi-square, band


def test_phase_diffusion_of_the_oscillators_matches_the_window_model():
    """Unit gates, uniform phases: the score error from two oscillators' diffusion over the window (readout's
    weighted variance time) against score_error_model's `diffusion`, chi-square CI over disjoint pairs (t = 2i + 1,
    u = 2i: no oscillator in two samples, so the samples are independent)."""
    rot, gq, gk = _inputs(B=40, T=32, unit_gates=True)
    sigma = 0.02  # rad/sqrt(cycle): the window's errors stay first order (~0.03 rad)
    s = _settings(FILTERED, sigma=sigma)
    chip = chip_scores(s, rot, gq, gk, 2.0, LayerSeeds(0))
    i = np.arange(16)
    err = (chip - closed_form_scores(rot, gq, gk, 2.0))[..., 2 * i + 1, 2 * i].ravel()
    pred = score_error_model(s, tau=2.0, kh=rot.shape[-1])["diffusion"]
    ratio, lo, hi = _ci_ratio(err, pred)
    print(f"diffusion: var ratio {ratio:.4f} in [{lo:.4f}, {hi:.4f}] (n = {err.size})")
    assert lo < ratio < hi


def test_residual_frequency_drift_is_first_order_in_the_window_mean_time():
    rot, gq, gk = _inputs(B=1, h=2, T=16)
    rng = np.random.default_rng(5)
    eps = 1e-3 * rng.standard_normal((2, 8, 16))  # (h, k_h, T) rad/cycle
    s = _settings(FILTERED, freq_residual=eps)
    chip = chip_scores(s, rot, gq, gk, 2.0, LayerSeeds(0))[0]
    tbar = FILTERED.error_model()["drift_cycles"]
    e = eps.transpose(0, 2, 1)  # (h, T, kh)
    d = rot[0][:, :, None] - rot[0][:, None]  # (h, T, T, kh)
    first = -2.0 / math.sqrt(8) * np.einsum("htuj,htj,huj->htu", np.sin(d) * (e[:, :, None] - e[:, None]) * tbar,
                                            gq[0], gk[0])
    err = chip - closed_form_scores(rot, gq, gk, 2.0)[0]
    low = _low(16)
    rel = np.abs(err - first)[:, low].max() / np.abs(first[:, low]).max()
    print(f"drift: first-order prediction within {rel:.2e} of its own size")
    assert rel < 0.02  # the rest is second order in ε t (~1e-3 rad here)


def test_same_seed_same_scores_in_any_batch():
    rot, gq, gk = _inputs(B=3, T=16)
    s = _settings(dataclasses.replace(FILTERED, noise_rad=2e-3, bits=9), sigma=0.01,
                  freq_residual=1e-3 * np.ones((2, 8, 16)))
    whole = chip_scores(s, rot, gq, gk, 2.0, LayerSeeds(7, np.array([10, 11, 12])))
    alone = chip_scores(s, rot[1:2], gq[1:2], gk[1:2], 2.0, LayerSeeds(7, np.array([11])))
    assert np.array_equal(whole[1], alone[0])


# ------------------------------------------------------------------------------------------ as a chip mode
def test_the_mode_is_a_class_and_its_fields_are_refused_elsewhere():
    from mapping.config import AnalogScores, DigitalScores, config_from_dict

    assert isinstance(config_from_dict({}).scores, DigitalScores)
    c = config_from_dict({"scores": {"mode": "analog", "bits": "none", "gate_bits": 6}})
    assert c.scores == AnalogScores(bits=None, gate_bits=6)
    with pytest.raises(ValueError, match=r"scores.full_scale belong\(s\) to \[scores\] mode = 'analog'"):
        config_from_dict({"scores": {"full_scale": 2.0}})
    with pytest.raises(ValueError, match="scores.mode must be one of digital, analog"):
        config_from_dict({"scores": {"mode": "optical"}})
    with pytest.raises(ValueError, match=r"set \[scores\] mode = \"analog\""):
        config_from_dict({"energy": {"analog_scores": True}})
    with pytest.raises(ValueError, match="scores.gate_range must be in"):
        AnalogScores(gate_range=2e6)
    # the ideal limit keeps the mode, unquantised
    assert c.idealised().scores == AnalogScores(gate_bits=None, bits=None, gate_range=1e6)


def test_ssa_chips_refuse_analog_scores():
    from mapping import ChipConfig, compile
    from mapping.config import AnalogScores
    from oscsim.nn.osn import OSNConfig, OSNModel

    m = OSNModel(OSNConfig(d_model=16, n_heads=2, n_layers=1, seq_len=8, frequency="scalar"))
    with pytest.raises(ValueError, match="scores.mode = 'analog' .SSA cells already measure the scores"):
        compile(m, ChipConfig(scores=AnalogScores()))


@pytest.fixture(scope="module")
def tiny():
    from _chips import seeded_kuramoto

    return seeded_kuramoto(vocab_size=32, seq_len=16, n_heads=2, n_layers=2, k=8, ffn_hidden=16)


def test_ideal_analog_chip_runs_the_model_and_reports_the_mode(tiny):
    """End to end on the ideal chip, analog scores and digital scores give the same logits (the chain is exact in
    its noiseless limit; A then differs from the model's float32 softmax by rounding only)."""
    import torch

    from mapping import ChipConfig, compile, run
    from mapping.config import AnalogScores

    x = torch.randint(0, 32, (3, 16), generator=torch.Generator().manual_seed(0))
    dig = run(compile(tiny, ChipConfig.ideal()), x, seed=0)
    ana = run(compile(tiny, ChipConfig.ideal(scores=AnalogScores()).idealised()), x, seed=0)
    d = (ana.logits - dig.logits).abs().max().item()
    print(f"ideal chip: analog vs digital scores, max logit difference {d:.2e}")
    assert d < 1e-4


def test_default_analog_chip_costs_little_and_reports_its_noise(tiny):
    import torch

    from mapping import ChipConfig, compile
    from mapping.config import AnalogScores
    from mapping.simulation import simulate_report

    x = torch.randint(0, 32, (2, 16), generator=torch.Generator().manual_seed(1))
    y = torch.randint(0, 32, (2, 16), generator=torch.Generator().manual_seed(2))
    chip = compile(tiny, ChipConfig(scores=AnalogScores()))
    rep = simulate_report(chip, x, y, measure_gpu=False, warn=False).to_dict()
    assert rep["scores"] == "analog" and rep["analog_scores"] and rep["simulated_pass"] == "prefill"
    noise = rep["analog_score_noise"]
    assert len(noise["score_sigma_logit"]) == 2 and all(0 < v < 1 for v in noise["score_sigma_logit"])
    assert {"score_oscillators_j", "score_mixers_j", "score_readout_j"} <= set(rep["energy_breakdown_j"])
    assert rep["energy_per_token_chip_j"] == pytest.approx(sum(rep["energy_breakdown_j"].values()))
