"""Noise and synchronisation statistics against theory, within confidence intervals."""

import numpy as np
import pytest

from oscsim.analysis import order_parameter
from oscsim.engine import EulerMaruyama, Heun, PhaseNetwork, SaveEvery, SaveSummary, StochasticHeun, simulate


def test_free_phase_diffusion_variance():
    """dθ = σ dW: Var θ(t) = σ² t, checked at several t with a chi-square based 4-sigma band."""
    n, sigma, T = 4000, 0.7, 2.0
    net = PhaseNetwork(omega=np.zeros(n), coupling=np.zeros((n, n)), sigma=sigma)
    sol = simulate(net, EulerMaruyama(), 0.0, T, 0.01, np.zeros((1, n)), save=SaveEvery(50), seed=123)
    for k in range(1, len(sol.ts)):
        t = sol.ts[k]
        v = np.var(sol.ys[k, 0], ddof=1)
        expected = sigma**2 * t
        sd = expected * np.sqrt(2.0 / (n - 1))
        assert abs(v - expected) < 4 * sd, (t, v, expected)
    assert abs(np.mean(sol.ys[-1, 0])) < 4 * sigma * np.sqrt(T / n)


def test_adler_pair_locking_and_mean_cos():
    """Two mutually coupled oscillators: φ = θ2 − θ1 obeys dφ/dt = Δω − 2κ sin φ.

    Locked (|Δω| <= 2κ): ⟨cos φ⟩ = sqrt(1 − (Δω/2κ)²) and no drift; drifting: beat frequency
    sqrt(Δω² − 4κ²) and ⟨cos φ⟩ → 0.
    """
    kappa = 0.5
    ratios = np.array([0.0, 0.3, 0.6, 0.9, 0.98, 1.05, 1.3, 2.0, 4.0])  # Δω / 2κ
    dw = ratios * 2 * kappa
    G = ratios.size
    omega = np.stack([np.zeros(G), dw], axis=1)  # (G, 2)
    C = kappa * np.array([[0.0, 1.0], [1.0, 0.0]])
    net = PhaseNetwork(omega=omega, coupling=C)
    T, t_start = 400.0, 100.0
    sol = simulate(net, Heun(), 0.0, T, 0.01, np.zeros((G, 2)), save=SaveSummary(t_start=t_start))
    mean_cos = sol.coherence[:, 0, 1]
    phi_end = sol.y_final[:, 1] - sol.y_final[:, 0]
    for g, r in enumerate(ratios):
        if r <= 1:
            assert mean_cos[g] == pytest.approx(np.sqrt(1 - r**2), abs=2e-3), (r, mean_cos[g])
            assert abs(np.sin(phi_end[g]) - r) < 1e-3  # the locked phase sin φ* = Δω/2κ
        else:
            beat = np.sqrt(dw[g] ** 2 - 4 * kappa**2)
            # finite window: |⟨cos φ⟩| <= (bound on one period's residual) / (number of periods)
            n_periods = beat * (T - t_start) / (2 * np.pi)
            assert abs(mean_cos[g]) < 2.0 / n_periods + 1e-3, (r, mean_cos[g], n_periods)
            assert phi_end[g] > 0.8 * beat * T  # it drifts


def test_adler_pair_mean_frequency_matches_beat():
    kappa, dw = 0.5, 1.6
    net = PhaseNetwork(omega=np.array([0.0, dw]), coupling=kappa * (1 - np.eye(2)))
    T = 200.0
    sol = simulate(net, Heun(), 0.0, T, 0.01, np.zeros((1, 2)), save=SaveEvery(100))
    phi = sol.ys[:, 0, 1] - sol.ys[:, 0, 0]
    i0 = len(sol.ts) // 4
    rate = (phi[-1] - phi[i0]) / (sol.ts[-1] - sol.ts[i0])
    beat = np.sqrt(dw**2 - 4 * kappa**2)
    assert rate == pytest.approx(beat, rel=0.02)


def lorentzian_quantiles(n, gamma):
    q = (np.arange(n) + 0.5) / n
    return gamma * np.tan(np.pi * (q - 0.5))


@pytest.mark.parametrize("K_over_Kc", [1.5, 2.5, 4.0])
def test_kuramoto_lorentzian_order_parameter(K_over_Kc):
    """r = sqrt(1 − 2γ/K) above K_c = 2γ (N = 1000, deterministic Lorentzian quantiles)."""
    n, gamma = 1000, 0.5
    K = K_over_Kc * 2 * gamma
    rng = np.random.default_rng(7)
    omega = rng.permutation(lorentzian_quantiles(n, gamma))
    net = PhaseNetwork(omega=omega, coupling=np.full((n, n), K / n))
    y0 = rng.uniform(0, 2 * np.pi, (1, n))
    sol = simulate(net, Heun(), 0.0, 80.0, 0.02, y0, save=SaveEvery(50))
    r = np.abs(order_parameter(sol.ys[sol.ts >= 40.0, 0]))
    theory = np.sqrt(1 - 2 * gamma / K)
    assert np.mean(r) == pytest.approx(theory, abs=0.04), (np.mean(r), theory)


def test_incoherent_below_threshold_with_noise():
    """Below K_c the incoherent state: r = O(1/sqrt(N)) (noise adds to the effective width)."""
    n, gamma = 800, 0.5
    rng = np.random.default_rng(8)
    omega = lorentzian_quantiles(n, gamma)
    net = PhaseNetwork(omega=omega, coupling=np.full((n, n), 0.5 / n), sigma=0.3)
    sol = simulate(net, StochasticHeun(), 0.0, 40.0, 0.02, rng.uniform(0, 6.3, (1, n)), save=SaveEvery(50), seed=2)
    r = np.abs(order_parameter(sol.ys[sol.ts >= 20.0, 0]))
    assert np.mean(r) < 5 / np.sqrt(n)
