"""Phase readout (issue 11 item 2): real samples, 1/sqrt(M) noise, detector bandwidth, SSA chips read out."""

import math

import numpy as np
import pytest
import torch
from scipy.stats import chi2

from mapping import ChipConfig, PhaseReadout, ReadoutConfig, compile, run
from mapping.config import SSAConfig
from mapping.periphery.readout import free_running_samples, wrap


def _phase_error_var(r: PhaseReadout, n: int, seed: int) -> float:
    th = np.random.default_rng(seed).uniform(-3, 3, n)
    e = wrap(r.measure(th, np.random.default_rng(seed + 1)) - th)
    return float(np.mean(e**2))


def test_readout_noise_falls_as_one_over_sqrt_samples():
    """Phase-error std vs the number of averaged samples M: every point inside its 99.9 % chi-square interval
    around sigma_sample / sqrt(M), and the fitted log-log slope within 0.03 of -1/2."""
    n, sig = 4000, 0.01
    Ms, stds = [], []
    for w in (1, 2, 4, 8, 16, 32):
        r = PhaseReadout(noise_rad=sig, averaging_cycles=float(w), samples_per_cycle=4)
        v = _phase_error_var(r, n, w)
        expect = (r.sample_noise / math.sqrt(r.n_samples)) ** 2
        lo, hi = expect * chi2.ppf(0.0005, n) / n, expect * chi2.ppf(0.9995, n) / n
        assert lo < v < hi, (w, v, expect)
        Ms.append(r.n_samples)
        stds.append(math.sqrt(v))
    slope = np.polyfit(np.log(Ms), np.log(stds), 1)[0]
    assert abs(slope + 0.5) < 0.03, slope


def test_detector_bandwidth_attenuates_the_average_and_raises_the_phase_noise():
    """With a reset first-order low-pass the averaged channels shrink by the filter's mean step response g,
    so the phase noise is sigma_eff / g (chi-square interval); an ideal detector (no filter) has g = 1."""
    n, sig = 4000, 0.01
    r = PhaseReadout(noise_rad=sig, averaging_cycles=2.0, samples_per_cycle=8, bandwidth_fraction=0.1)
    g = r.filter_gain()
    tau = 1 / (2 * math.pi * 0.1)
    t = r.sample_times()
    assert g == pytest.approx(np.mean(1 - np.exp(-(t) / tau)), rel=0.1)  # discretised step response
    v = _phase_error_var(r, n, 7)
    expect = (r.effective_noise / g) ** 2
    assert expect * chi2.ppf(0.0005, n) / n < v < expect * chi2.ppf(0.9995, n) / n
    assert PhaseReadout(averaging_cycles=2.0).filter_gain() == 1.0


def test_readout_sees_the_drift_of_the_trajectory_during_the_window():
    """A free-running oscillator detuned by omega drifts during the window: the averaged phase is the mean of
    the sampled trajectory (exactly theta + omega * mean(t) for small drifts, ideal detector)."""
    r = PhaseReadout(averaging_cycles=4.0, samples_per_cycle=16)
    th0 = np.array([0.3, -1.0])
    om = np.array([1e-3, -2e-3])
    s = free_running_samples(th0, om, 0.0, r.sample_times(), None)
    got = r.measure_samples(s)
    assert np.allclose(got, th0 + om * r.sample_times().mean(), atol=1e-8)
    with pytest.raises(ValueError, match="samples"):
        r.measure_samples(s[:-1])


def test_readout_config_is_validated():
    with pytest.raises(ValueError, match="bandwidth_fraction"):
        ReadoutConfig(bandwidth_fraction=0.8)
    with pytest.raises(ValueError, match="samples_per_cycle"):
        ReadoutConfig(samples_per_cycle=0)
    assert ReadoutConfig(bandwidth_fraction="none").bandwidth_fraction is None
    assert ChipConfig().idealised().readout.bandwidth_fraction is None


@pytest.fixture(scope="module")
def ssa_chip_run():
    from mapping.model_io import load_model

    model, _ = load_model("ssa1d-tiny")
    tok = torch.randint(0, 256, (1, 24), generator=torch.Generator().manual_seed(0))
    base = ChipConfig(device="ideal", mismatch=False, noise=True,
                      ssa=SSAConfig(settle_cycles=20.0, averaging_cycles=60.0),
                      readout=ReadoutConfig(noise_rad=0.0, bits=None, bandwidth_fraction=None))

    def S_err(**readout):
        cfg = base.replace(readout=ReadoutConfig(**{"noise_rad": 0.0, "bits": None, "bandwidth_fraction": None,
                                                    **readout}))
        res = run(compile(model, cfg), tok, seed=3, progress=False, closed_form=False)
        return np.array([L["S_rel_error"] for L in res.layers], dtype=float)

    return S_err


def test_ssa_chip_S_changes_with_readout_bits_and_noise(ssa_chip_run):
    """SSA chips read S through [readout]: coarse ADC bits and a large detector noise both move S."""
    ideal = ssa_chip_run()
    coarse = ssa_chip_run(bits=3)
    noisy = ssa_chip_run(noise_rad=1.0)
    assert np.all(np.isfinite(ideal))
    assert np.mean(coarse) > np.mean(ideal) + 1e-3
    assert np.mean(noisy) > np.mean(ideal) + 1e-3


def test_error_model_predicts_the_filtered_drift_and_window_diffusion():
    """PhaseReadout.error_model (used by the training surrogate): the estimate of a drifting phase is shifted by
    omega * drift_cycles, and window diffusion adds sigma^2 * diffusion_cycles (chi-square 99.9 %)."""
    r = PhaseReadout(averaging_cycles=4.0, samples_per_cycle=4, bandwidth_fraction=0.25)
    em = r.error_model()
    s = free_running_samples(np.zeros(3), np.array([1e-4, -3e-4, 2e-4]), 0.0, r.sample_times(), None)
    assert np.allclose(r.measure_samples(s), np.array([1e-4, -3e-4, 2e-4]) * em["drift_cycles"], rtol=1e-3)
    n, sig = 4000, 0.01
    rng = np.random.default_rng(4)
    got = r.measure_samples(free_running_samples(np.zeros(n), 0.0, sig, r.sample_times(), rng))
    v, expect = float(np.mean(got**2)), sig**2 * em["diffusion_cycles"]
    assert expect * chi2.ppf(0.0005, n) / n < v < expect * chi2.ppf(0.9995, n) / n
