"""Analysis: order parameter, coherence matrix, mean frequency, phase extraction."""

import numpy as np
import pytest

from oscsim.analysis import (
    coherence_matrix, ensemble_phase_diffusion, mean_frequency, order_parameter, phase_from_analytic_signal,
    phase_from_zero_crossings,
)


def test_order_parameter():
    assert abs(order_parameter(np.full(10, 1.3))) == pytest.approx(1.0)
    assert abs(order_parameter(np.linspace(0, 2 * np.pi, 8, endpoint=False))) < 1e-12
    z = order_parameter(np.array([[0.0, np.pi / 2], [0.0, 0.0]]))
    np.testing.assert_allclose(z, [(1 + 1j) / 2, 1.0])


def test_coherence_matrix_direct():
    rng = np.random.default_rng(0)
    th = rng.uniform(0, 6, (50, 2, 4))
    direct = np.mean(np.cos(th[:, :, :, None] - th[:, :, None, :]), axis=0)
    np.testing.assert_allclose(coherence_matrix(th), direct, atol=1e-12)


def test_mean_frequency_unwraps():
    t = np.linspace(0, 10, 2001)
    th = np.angle(np.exp(1j * np.outer(t, [0.5, -3.0])))  # wrapped
    np.testing.assert_allclose(mean_frequency(th, t), [0.5, -3.0], rtol=1e-10)
    with pytest.raises(ValueError, match="t:"):
        mean_frequency(th, t[:-1])


def test_zero_crossings_chirp():
    """x = sin φ(t), φ = 2π(f0 t + a t²/2): rising crossings at φ = 2πk; interpolated phase error O(dt²)."""
    f0, a = 5.0, 0.8
    phi = lambda t: 2 * np.pi * (f0 * t + 0.5 * a * t**2)  # noqa: E731
    errs = []
    for n in (2000, 4000):
        t = np.linspace(0, 3, n)
        tc, phase = phase_from_zero_crossings(t, np.sin(phi(t)))
        k = np.round(phi(tc) / (2 * np.pi))
        errs.append(np.max(np.abs(phi(tc) - 2 * np.pi * k)))
        tq = np.linspace(tc[0], tc[-1], 50)
        # between crossings the phase is linear: error bounded by the chirp over one period
        assert np.max(np.abs(phase(tq) - (phi(tq) - phi(tc[0])))) < 0.05
    assert errs[1] < errs[0] / 3  # second order in the sampling step
    with pytest.raises(ValueError, match="crossings"):
        phase_from_zero_crossings(t, np.ones_like(t))


def test_analytic_signal_phase():
    t = np.linspace(0, 20, 8000, endpoint=False)
    phi = 2 * np.pi * 1.5 * t + 0.3 * np.sin(0.5 * t)
    est = phase_from_analytic_signal(np.cos(phi))
    mid = slice(1000, 7000)
    d = est[mid] - phi[mid]
    assert np.max(np.abs(d - np.mean(d))) < 0.02
    assert abs(np.angle(np.exp(1j * np.mean(d)))) < 0.02


def test_ensemble_phase_diffusion_recovers_a_wiener_phase():
    # dφ = ω dt + sqrt(D) dW for G oscillators: the slope of Var[φ(t) − φ(t_ref)] is D, inside its interval
    D, omega, G, dt = 3.0, 50.0, 400, 1e-3
    rng = np.random.default_rng(1)
    t = np.arange(2001) * dt
    steps = omega * dt + np.sqrt(D * dt) * rng.standard_normal((t.size - 1, G))
    phase = np.vstack([np.zeros(G), np.cumsum(steps, axis=0)])
    slope, (lo, hi) = ensemble_phase_diffusion(t, phase, 0.2, 0.1)
    assert lo <= D <= hi and lo < slope < hi
    assert abs(slope / D - 1) < 0.15 and hi - lo < 0.4 * D
    # twice the noise power doubles the estimate (the estimator is not a constant)
    slope2, _ = ensemble_phase_diffusion(t, np.sqrt(2) * (phase - omega * t[:, None]), 0.2, 0.1)
    assert abs(slope2 / slope - 2) < 1e-9
    with pytest.raises(ValueError, match="phase"):
        ensemble_phase_diffusion(t, phase[:, :1], 0.2, 0.1)
    with pytest.raises(ValueError, match="fit_after"):
        ensemble_phase_diffusion(t, phase, 0.2, 10.0)
