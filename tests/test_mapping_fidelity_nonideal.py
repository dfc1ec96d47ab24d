"""Fidelity of noisy and mismatched Kuramoto chips against the analytic prediction (issue 10 item 4).

Derivation (mapping/kuramoto_chip.py, mapping/readout.py). The periphery forms x̂_t = wrap(θ̂_t − θ_t(0)) / (κτ_s)
(no cos harmonics here, so no offset). Relative to the same chip without the non-ideality, to first order in
κτ_s:

- phase diffusion: dθ = … dt + σ dW adds σ W(τ_s) to θ(τ_s), W(τ_s) ~ N(0, τ_s) independently per oscillator
  (the coupling feeds it back only at O(κτ_s)), so Var(x̂ − x̂₀) = σ² τ_s / (κτ_s)²;
- readout: the cosine detector channels (cos θ + n_c, sin θ + n_s), n ~ N(0, s²) with s = noise_rad /
  sqrt(averaging_cycles), give atan2 an error −sin θ n_c + cos θ n_s ~ N(0, s²), so Var = s² / (κτ_s)²;
- residual frequency error ε [rad/cycle]: θ(τ_s) gains ε τ_s, so x̂ − x̂₀ = ε / κ;
- coupler spread C_tu → C_tu (1 + δ_tu): x̂ − x̂₀ = g_t Σ_u A_tu δ_tu sin(θ_u − θ_t).

With n independent errors e_i ~ N(0, v), Σ e_i² / v ~ χ²_n; the tests accept the prediction when it lies in the
two-sided 99.9 % interval and check that the interval is narrow enough to reject a plausible wrong model
(diffusion σ² τ_s counted twice, averaging not applied).
"""

import math

import numpy as np
import pytest
from scipy.stats import chi2

from mapping import ChipConfig, Quantiser, compile, kuramoto_chip_step
from mapping.periphery.readout import PhaseReadout

B, T, K, H = 8, 16, 8, 2
KAPPA = 2 * math.pi * 0.01  # rad/cycle (coupling.fraction = 0.01)
KT = 0.02  # κτ_s [rad]: deep in the first-order regime
TAU = KT / KAPPA
ANALOG = dict(coupling_q=Quantiser(bits=None, range=1e6), gain_q=Quantiser(bits=None, range=1e6, signed=True))


@pytest.fixture(scope="module")
def layer():
    rng = np.random.default_rng(7)
    theta = rng.uniform(-math.pi, math.pi, (B, T, K))
    s = rng.normal(size=(B, H, T, T))
    s = np.where(np.tril(np.ones((T, T), dtype=bool)), s, -np.inf)
    A = np.exp(s - s.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
    v = rng.uniform(-1, 1, (B, T, K))
    return theta, A, v


def _step(layer, **kw):
    theta, A, v = layer
    return kuramoto_chip_step(theta, A, v, n_heads=H, kappa=KAPPA, settle_cycles=TAU, n_steps=32, **ANALOG, **kw)


def _both_banks(out):
    return np.concatenate([out.va.ravel(), out.a.ravel()])


def _chi2_interval(e, level=0.999):
    """The (lo, hi) interval for the variance v given errors e ~ N(0, v) (zero mean known)."""
    n, ss = e.size, float(np.sum(e ** 2))
    return ss / chi2.ppf(0.5 + level / 2, n), ss / chi2.ppf(0.5 - level / 2, n)


@pytest.fixture(scope="module")
def ideal_out(layer):
    return _step(layer)


def test_phase_diffusion_error_variance_matches_sigma2_tau_over_kappa_tau2(layer, ideal_out):
    sigma = 0.01  # rad / sqrt(cycle)
    e = _both_banks(_step(layer, sigma=sigma, seed=3)) - _both_banks(ideal_out)
    pred = sigma ** 2 * TAU / KT ** 2
    lo, hi = _chi2_interval(e)
    assert lo <= pred <= hi, (pred, lo, hi)
    assert not lo <= 2 * pred <= hi  # power: a doubled diffusion would be rejected
    assert abs(e.mean()) < 4 * math.sqrt(pred / e.size)  # unbiased


def test_readout_noise_variance_matches_s2_over_averaging(layer, ideal_out):
    ro = PhaseReadout(response="cosine", noise_rad=0.004, bits=None, averaging_cycles=4.0)
    e = _both_banks(_step(layer, readout=ro, seed=5)) - _both_banks(ideal_out)
    pred = (0.004 / math.sqrt(4.0)) ** 2 / KT ** 2
    lo, hi = _chi2_interval(e)
    assert lo <= pred <= hi, (pred, lo, hi)
    assert not lo <= 4 * pred <= hi  # power: forgetting the averaging would be rejected


def test_noise_is_independent_between_seeds_and_reproducible(layer, ideal_out):
    a = _both_banks(_step(layer, sigma=0.01, seed=3)) - _both_banks(ideal_out)
    b = _both_banks(_step(layer, sigma=0.01, seed=4)) - _both_banks(ideal_out)
    np.testing.assert_array_equal(a, _both_banks(_step(layer, sigma=0.01, seed=3)) - _both_banks(ideal_out))
    r = np.corrcoef(a, b)[0, 1]
    assert abs(r) < 4 / math.sqrt(a.size)


def test_frequency_residual_shifts_the_increment_by_eps_over_kappa(layer, ideal_out):
    rng = np.random.default_rng(11)
    eps = 2 * math.pi * 1e-4 * rng.standard_normal((2, H, K // H, T))  # rad/cycle, δf/f₀ ~ 1e-4
    out = _step(layer, freq_residual=eps)
    pred = eps / KAPPA  # (banks, h, k_h, T) -> (banks, B, T, k)
    pred = np.broadcast_to(pred.transpose(0, 3, 1, 2).reshape(2, 1, T, K), (2, B, T, K))
    got = np.stack([out.va - ideal_out.va, out.a - ideal_out.a])
    scale = np.abs(pred).max()
    np.testing.assert_allclose(got, pred, rtol=0, atol=3 * KT * scale)  # O(κτ_s) coupling of the drift


def test_coupler_spread_matches_first_order_prediction(layer, ideal_out):
    theta, A, v = layer
    rng = np.random.default_rng(13)
    delta = 0.05 * rng.standard_normal((2, H, K // H, T, T))
    out = _step(layer, coupler_gain=1 + delta)
    # independent prediction: g_t Σ_{u<t} A_tu δ_tu sin(θ_u − θ_t) per (bank, b, head, coordinate)
    th = theta.reshape(B, T, H, K // H).transpose(0, 2, 3, 1)  # (B, h, kh, T)
    gains = [v.reshape(B, T, H, K // H).transpose(0, 2, 3, 1), np.ones((B, H, K // H, T))]
    strict = np.tril(np.ones((T, T)), -1)
    pred = []
    for bank in range(2):
        s = np.sin(th[..., None, :] - th[..., :, None])  # [t, u] = sin(θ_u − θ_t)
        d = np.einsum("bhtu,hjtu,bhjtu->bhjt", A * strict, delta[bank], s)
        pred.append((gains[bank] * d).transpose(0, 3, 1, 2).reshape(B, T, K))
    got = [out.va - ideal_out.va, out.a - ideal_out.a]
    for g, p in zip(got, pred):
        assert np.abs(p).max() > 1e-3
        np.testing.assert_allclose(g, p, rtol=0, atol=0.05 * np.abs(p).max() + 3 * KT * 0.05)


def test_chip_noise_intensity_is_the_devices_diffusion_in_cycles():
    """The chip's σ comes from the device's D [rad²/s]: σ² τ_s [cycles] must equal D · t_s [s], t_s = τ_s / f₀."""
    chip = compile("kuramoto-tiny", ChipConfig(mismatch=False))
    tb, dev = chip.timebase, chip.device
    D = dev.diffusion_at(chip.config.temperature_k)
    assert D > 0
    assert math.isclose(tb["sigma_rad_per_sqrt_cycle"] ** 2 * tb["settle_cycles"], D * tb["settle_time_s"],
                        rel_tol=1e-9)
    hot = compile("kuramoto-tiny", ChipConfig(mismatch=False, temperature_k=600.0))
    assert math.isclose(hot.timebase["sigma_rad_per_sqrt_cycle"] ** 2, 2 * tb["sigma_rad_per_sqrt_cycle"] ** 2,
                        rel_tol=1e-9)  # thermal: D ∝ T


@pytest.mark.parametrize("bits", [4, 8])
def test_trim_leaves_uniform_residual_of_one_step(bits):
    """Trim code = round(ε / step), step = 4σ / (2^(b−1) − 1): the residual is uniform on ±step/2 (variance
    step²/12) wherever |ε| is inside the ±4σ trim range."""
    chip = compile("kuramoto-tiny", ChipConfig(trim_bits=bits))
    sigma = chip.timebase["freq_spread_rel"]
    assert sigma > 0
    step = 4 * sigma / (2 ** (bits - 1) - 1)
    lm = chip.layers[0]
    eps = lm.freq_trim_code * step + lm.freq_residual_rel  # the drawn error, reconstructed
    inside = np.abs(eps) < 4 * sigma - step
    r = lm.freq_residual_rel[inside]
    assert np.all(np.abs(r) <= step / 2 + 1e-15)
    n = r.size
    lo, hi = np.sum(r ** 2) / chi2.ppf(0.9995, n), np.sum(r ** 2) / chi2.ppf(0.0005, n)
    # the uniform law's variance, with slack for the non-Gaussian fourth moment (kurtosis 1.8 < 3: tighter)
    assert lo * 0.9 <= step ** 2 / 12 <= hi * 1.1
    assert abs(np.std(eps) / sigma - 1) < 5 / math.sqrt(2 * eps.size)
