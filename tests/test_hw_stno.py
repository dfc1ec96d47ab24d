"""Spin-torque oscillator (universal model) against its closed forms; ideal oscillator."""

import math

import numpy as np
import pytest

import hw_models as hm
from hw_models import vortex_stno
from oscsim.analysis import ensemble_phase_diffusion


def test_invalid_stno_rejected():
    with pytest.raises(ValueError, match="supercriticality"):
        vortex_stno(supercriticality=0.9)
    with pytest.raises(ValueError, match="gamma_g_per_s"):
        vortex_stno(gamma_g_per_s=-1.0)


def test_free_running_power_and_frequency():
    p = vortex_stno()
    p0 = hm.stno_power_p0(p)
    sol = hm.simulate_stno(p, 600e-9, save_every=10, y0=np.array([[0.5 * math.sqrt(p0) + 0j]]))
    c = sol.ys[:, 0, 0]
    m = sol.ts > 300e-9
    assert abs(np.mean(np.abs(c[m]) ** 2) / p0 - 1) < 0.02
    ph = np.unwrap(-np.angle(c))
    w = np.polyfit(sol.ts[m], ph[m], 1)[0]
    assert abs(w / (2 * math.pi * hm.stno_frequency_hz(p)) - 1) < 0.02


def test_linewidth_matches_nonlinear_formula():
    p = vortex_stno()
    G = 256
    sol = hm.simulate_stno([[p]] * G, 3e-6, noise_scale=1.0, save_every=10, seed=2)
    ph = np.unwrap(-np.angle(sol.ys[:, :, 0]), axis=0)
    lam = 2 * hm.stno_relaxation_rate(p)
    # bootstrap over oscillators for a 95 % interval
    slope, (lo, hi) = ensemble_phase_diffusion(sol.ts, ph, 5 / lam, 5 / lam, n_boot=100, seed=0)
    D = hm.stno_diffusion(p)
    assert lo <= D <= hi, (slope / D, lo / D, hi / D)  # measured: 1.08 in [0.89, 1.23]
    assert hi - lo < 0.5 * D  # narrow enough to reject a linewidth off by 50 % (without (1 + ν²), ν = 2.7: 8x)


def test_injection_locking_range_matches_theory():
    from oscsim.engine import ExternalDrive

    p = vortex_stno()
    gp = hm.stno_relaxation_rate(p)
    half = 0.3 * gp  # weak drive: the band is small against the amplitude relaxation rate
    F = half / hm.stno_locking_half_range(p, 1.0)
    x = np.arange(0.80, 1.2001, 0.05)
    wg = 2 * math.pi * hm.stno_frequency_hz(p)
    # same drive frequency, oscillators detuned by x * half (via ω₀)
    insts = [[p.replace(f0_hz=p.f0_hz + xi * half / (2 * math.pi))] for xi in x]
    drive = ExternalDrive(amplitude=F, angular_frequency=wg)
    sol = hm.simulate_stno(insts, 6e-6, drive=drive, save_every=10)
    ph = np.unwrap(-np.angle(sol.ys[:, :, 0]), axis=0) - wg * sol.ts[:, None]
    m = sol.ts > 2e-6
    drift = np.abs(ph[m][-1] - ph[m][0])
    locked = drift < math.pi
    assert locked[0] and not locked[-1]
    boundary = 0.5 * (x[np.argmin(locked)] + x[np.argmin(locked) - 1])
    assert abs(boundary - 1) < 0.10, (x, drift)


def test_ideal_oscillator_interface_and_mismatch():
    q = hm.ideal_oscillator()
    assert hm.free_running_frequency(q) == 1e9
    a = hm.draw_mismatch(q, 2000, seed=3)
    b = hm.draw_mismatch(q, 2000, seed=3)
    np.testing.assert_array_equal(a.f0_hz, b.f0_hz)
    assert not np.array_equal(a.f0_hz, hm.draw_mismatch(q, 2000, seed=4).f0_hz)
    # STNO: the spread of f = (ω₀ + N p₀)/2π propagated to first order from the relative spreads of ω₀, N and
    # Γ_G (finite differences of stno_frequency_hz), against the sample spread with a chi-square interval
    p = vortex_stno()
    f0 = hm.stno_frequency_hz(p)
    var = 0.0
    for field, rel in (("f0_hz", p.sigma_f0_rel), ("n_shift_hz", p.sigma_n_rel),
                       ("gamma_g_per_s", p.sigma_gamma_rel)):
        x = getattr(p, field)
        h = 1e-4 * x
        d = (hm.stno_frequency_hz(p.replace(**{field: x + h})) - hm.stno_frequency_hz(p.replace(**{field: x - h})))
        var += (d / (2 * h) * rel * x) ** 2
    n = 800
    s = hm.draw_mismatch(p, n, seed=1)
    ss = np.sum((s.f0_hz - s.f0_hz.mean()) ** 2)
    from scipy.stats import chi2

    lo, hi = ss / chi2.ppf(0.9995, n - 1), ss / chi2.ppf(0.0005, n - 1)
    assert lo <= var <= hi, (math.sqrt(var) / f0, math.sqrt(lo) / f0, math.sqrt(hi) / f0)
    with pytest.raises(ValueError, match="unknown device"):
        hm.free_running_frequency(object())


def test_ideal_phase_network_diffusion():
    from oscsim.engine import EulerMaruyama, SaveEvery, simulate

    q = hm.ideal_oscillator(diffusion_rad2_per_s=1e6, sigma_f_rel=0.0)
    net = hm.ideal_phase_network(q, np.zeros((1, 1)), n_groups=2000, seed=0)
    sol = simulate(net, EulerMaruyama(), 0.0, 1e-6, 1e-8, np.zeros((2000, 1)), save=SaveEvery(100), seed=4)
    th = sol.ys[-1, :, 0] - 2 * math.pi * q.f0_hz * 1e-6
    assert abs(th.var() / (1e6 * 1e-6) - 1) < 0.1


@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_coupled_pair_locking_matches_phase_model(beta):
    """Two STNOs coupled by Ω e^{iβ}: lock iff |Δω| ≤ 2 a₁, a₁ = Ω (cos β + ν sin β) (stno_coupling_function)."""
    p = vortex_stno()
    om = 0.05 * hm.stno_relaxation_rate(p)
    _, h = hm.stno_coupling_function(p, om, beta)
    half = 2 * h[0, 0]
    x = np.array([0.9, 1.1])
    insts = [[p, p.replace(f0_hz=p.f0_hz + xi * half / (2 * math.pi))] for xi in x]
    C = om * np.exp(1j * beta) * np.array([[0, 1], [1, 0]])
    sol = hm.simulate_stno(insts, 20e-6, coupling=C, save_every=20)
    ph = np.unwrap(-np.angle(sol.ys), axis=0)
    d = ph[:, :, 1] - ph[:, :, 0]
    m = sol.ts > 3e-6
    drift = np.abs(d[m][-1] - d[m][0])
    assert drift[0] < math.pi and drift[1] > 2 * math.pi, drift


def test_stno_row_model_has_each_oscillators_stuart_landau_limit_cycle():
    """A 1-D row of N different STNOs (one instance, G = 1): every oscillator's Stuart–Landau coefficients
    dz/dt = a z + b |z|² z put its limit cycle at |z|² = −Re a / Re b = p₀ and its rotation at
    |Im a + Im b p₀| = ω₀ + N p₀, the closed forms stno_power_p0 / stno_frequency_hz (issue 10 item 6)."""
    g = vortex_stno().gamma_g_per_s
    ps = [vortex_stno(), vortex_stno(supercriticality=2.0), vortex_stno(gamma_g_per_s=2.0 * g)]
    m = hm.stno_model(ps)
    a, b = np.asarray(m.a), np.asarray(m.b)
    assert a.shape == b.shape == (1, 3)
    p0 = -a.real / b.real
    np.testing.assert_allclose(p0[0], [hm.stno_power_p0(p) for p in ps], rtol=1e-12)
    w = np.abs(a.imag + b.imag * p0)
    np.testing.assert_allclose(w[0] / (2 * math.pi), [hm.stno_frequency_hz(p) for p in ps], rtol=1e-12)
