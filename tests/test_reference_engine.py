"""The engine against its pure-NumPy twin (exactly, same noise) and against Brian2."""

import numpy as np
import pytest

from oscsim.engine import (
    RK4, SRA1, EulerMaruyama, ExternalDrive, Heun, PhaseNetwork, StochasticHeun, SubharmonicInjection,
    brownian_increments, simulate,
)
from oscsim.reference import simulate_brian2, simulate_numpy

G, N, DT, STEPS = 3, 12, 0.01, 150


def network(sigma=0.0, general=False, per_group=True):
    rng = np.random.default_rng(42)
    C = rng.standard_normal((G, N, N) if per_group else (N, N)) / N
    kw = {}
    if general:
        kw = dict(
            phase_lag=0.4 * rng.standard_normal((N, N)),
            harmonics=[[1.0, 0.2], [0.3, -0.1], [0.05, 0.0]],
            injection=SubharmonicInjection(0.3 * rng.uniform(size=N), order=2, phase=rng.uniform(0, 1, N)),
            drive=ExternalDrive(0.2, 1.3, rng.uniform(0, 1, (G, N))),
        )
    return PhaseNetwork(omega=rng.standard_normal((G, N)), coupling=C, sigma=sigma, **kw)


def y0():
    return np.random.default_rng(1).uniform(0, 2 * np.pi, (G, N))


@pytest.mark.parametrize(
    "solver, name, general",
    [(RK4(), "rk4", False), (Heun(), "heun", False), (EulerMaruyama(), "euler_maruyama", False),
     (RK4(), "rk4", True), (EulerMaruyama(), "euler_maruyama", True)],
)
def test_engine_equals_numpy_deterministic(solver, name, general):
    net = network(general=general)
    sol = simulate(net, solver, 0.0, STEPS * DT, DT, y0())
    ref = simulate_numpy(net, name, 0.0, DT, STEPS, y0())
    np.testing.assert_allclose(sol.ys, ref, rtol=0, atol=1e-10)


@pytest.mark.parametrize(
    "solver, name, general",
    [(EulerMaruyama(), "euler_maruyama", False), (StochasticHeun(), "stochastic_heun", False), (SRA1(), "sra1", False),
     (EulerMaruyama(), "euler_maruyama", True), (SRA1(), "sra1", True)],
)
def test_engine_equals_numpy_same_noise(solver, name, general):
    sigma = np.linspace(0.1, 0.5, N)
    net = network(sigma=sigma, general=general, per_group=not general)
    sol = simulate(net, solver, 0.0, STEPS * DT, DT, y0(), seed=77)
    dW, area = brownian_increments(77, G, N, STEPS, DT)
    ref = simulate_numpy(net, name, 0.0, DT, STEPS, y0(), dW=dW, area=area)
    np.testing.assert_allclose(sol.ys, ref, rtol=0, atol=1e-10)


def test_engine_equals_brian2_deterministic():
    """Same method (Euler), same dt: Brian2 (summed synaptic variable) and the engine agree to 1e-6 rad."""
    net = network()
    net = PhaseNetwork(omega=net.omega, coupling=net.coupling, phase_lag=0.3 * np.ones((N, N)))
    sol = simulate(net, EulerMaruyama(), 0.0, STEPS * DT, DT, y0())
    b = simulate_brian2(net, "euler_maruyama", DT, STEPS, y0(), record=True)
    assert np.max(np.abs(sol.ys - b["ys"])) < 1e-6


def test_engine_vs_brian2_noise_statistics():
    """With noise the paths differ; the phase-diffusion variance of both matches σ² t within 4 sd."""
    n, sigma, steps = 400, 0.8, 100
    net = PhaseNetwork(omega=np.zeros(n), coupling=np.zeros((n, n)), sigma=sigma)
    T = steps * DT
    e = simulate(net, EulerMaruyama(), 0.0, T, DT, np.zeros((1, n)), seed=3).y_final[0]
    b = simulate_brian2(net, "euler_maruyama", DT, steps, np.zeros((1, n)), seed=3)["y_final"][0]
    sd = sigma**2 * T * np.sqrt(2.0 / (n - 1))
    for x in (e, b):
        assert abs(np.var(x, ddof=1) - sigma**2 * T) < 4 * sd
    # and the two samples are not distinguishable from each other (F-ratio within a wide band)
    assert 0.7 < np.var(e) / np.var(b) < 1.4


def test_engine_equals_numpy_harmonics_without_lags():
    rng = np.random.default_rng(3)
    net = PhaseNetwork(omega=rng.standard_normal(N), coupling=rng.standard_normal((N, N)) / N,
                       harmonics=[[0.8, 0.1], [0.0, 0.4]])
    sol = simulate(net, RK4(), 0.0, STEPS * DT, DT, y0())
    np.testing.assert_allclose(sol.ys, simulate_numpy(net, "rk4", 0.0, DT, STEPS, y0()), rtol=0, atol=1e-10)
