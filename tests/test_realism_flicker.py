"""Flicker noise (issue 11 item 5): OU-bank 1/f, and the 1/f^3 phase-noise region of the macromodel."""

import math

import numpy as np
import pytest

from hw_models.flicker import (FlickerNoise, cmos_65nm_flicker, phase_noise_dbc_hz, ring_flicker_coefficient,
                               simulate_phase_noise)


def test_ou_bank_is_one_over_f_inside_its_band():
    fl = FlickerNoise(corner_hz=1e6, f_min_hz=1e3, f_max_hz=1e8, per_decade=2)
    f = np.geomspace(1e4, 1e7, 40)
    ratio = fl.psd(f, 1.0) / (1e6 / f)
    assert np.all(np.abs(ratio - 1) < 0.04), ratio  # 2 per decade: -3.4 % at the ripple minimum
    assert fl.psd(1e1, 1.0) < 0.2 * 1e6 / 1e1  # flat below the band (stated limit of the representation)
    with pytest.raises(ValueError, match="f_min_hz < f_max_hz"):
        FlickerNoise(corner_hz=1.0, f_min_hz=2.0, f_max_hz=1.0)


def test_simulated_phase_noise_has_the_1_over_f3_and_1_over_f2_slopes():
    """Engine run of the phase macromodel (white diffusion D = 1 plus OU-bank flicker frequency noise with its
    1/f^3 corner at f = 1, time in arbitrary units), Welch PSD: fitted slope of L(f) within 0.3 of -3 over
    [0.05, 0.25] and of -2 over [4, 15]; the simulated level within 1.5 dB of D/(4 pi^2 f^2) + A/(8 pi^2 f^3)."""
    fl = FlickerNoise(corner_hz=1.0, f_min_hz=5e-3, f_max_hz=20.0, per_decade=2)
    f, L = simulate_phase_noise(1.0, 2.0, fl, t1=500.0, dt=4e-3, n_groups=8, save_every=5, nperseg=2500, seed=0)

    def slope(lo, hi):
        m = (f >= lo) & (f <= hi)
        return np.polyfit(np.log10(f[m]), L[m] / 10, 1)[0]

    assert abs(slope(0.05, 0.25) + 3) < 0.3
    assert abs(slope(4.0, 15.0) + 2) < 0.3
    m = (f >= 0.1) & (f <= 10)
    assert abs(np.mean(L[m] - phase_noise_dbc_hz(1.0, f[m], 2.0))) < 1.5


def test_ring_flicker_corner_from_the_ppv():
    import hw_models as hw
    from hw_models import interface as itf

    ring = hw.cmos_65nm_ring()
    c = ring_flicker_coefficient(ring, cmos_65nm_flicker())
    assert 0 < c["corner_1_f3_hz"] < c["flicker_corner_hz"]  # Gamma_dc < Gamma_rms
    assert c["corner_1_f3_hz"] == pytest.approx(1e6 * c["gamma_dc_over_rms"] ** 2)
    D = itf.phase_diffusion(ring)
    fm = np.array([1e5, 1e6, 1e7])
    # without flicker: the Lorentzian of the device interface
    assert np.allclose(phase_noise_dbc_hz(D, fm, lorentzian=True), itf.phase_noise_dbc_hz(ring, fm), atol=1e-6)
    assert np.all(phase_noise_dbc_hz(D, fm, c["A_rad2_per_s2"]) >= phase_noise_dbc_hz(D, fm))
    assert math.isfinite(c["A_rad2_per_s2"])


def test_ou_step_is_exact_stationary_and_correlated():
    """The Numba OU update the circuit RHS uses: stationary variance v and lag-1 correlation e^{-gamma dt}
    (99.9 % chi-square and normal intervals over 20,000 independent chains, vectorised as K = 20,000)."""
    from hw_models.flicker import ou_step

    n, dt = 20000, 0.3
    rates = np.full(n, 2.0)
    stds = np.full(n, 1.5)
    rng = np.random.default_rng(0)
    x = stds * rng.standard_normal(n)  # stationary start
    x0 = x.copy()
    ou_step(x, rates, stds, dt, rng.standard_normal(n))
    v = float(np.mean(x**2))
    assert 2.25 * 0.95 < v < 2.25 * 1.05  # chi-square 99.9 %: +-4.6 % at n = 20,000
    rho = float(np.mean(x * x0) / 2.25)
    assert abs(rho - math.exp(-2.0 * dt)) < 3.3 * (1 - rho**2) / math.sqrt(n)
