"""Measured convergence orders (fitted slopes) on problems with exact, non-trivial answers."""

import numpy as np
import pytest
from scipy.linalg import expm

from oscsim.engine import (
    RK4, SRA1, Dopri5, EulerMaruyama, ExternalDrive, Heun, PhaseNetwork, SaveAt, StochasticHeun,
    StuartLandauNetwork, simulate,
)


def slope(dts, errs):
    return np.polyfit(np.log(dts), np.log(errs), 1)[0]


# ---- uncoupled oscillators under a periodic drive: an Adler equation with a closed form ----------------
OMEGA = np.array([1.0, 0.7, 1.2, 0.9])
F = np.array([1.5, 1.0, 0.5, 1.2])
PSI = np.array([0.0, 0.5, -1.0, 2.0])
WE = 3.0
TH0 = np.array([0.3, -1.0, 2.0, 0.1])
T = 2.0


def adler_exact(t):
    """θ(t) for dθ/dt = ω + F sin(ω_e t + ψ − θ): φ = ω_e t + ψ − θ obeys dφ/dt = ν − F sin φ (ν > F)."""
    nu = WE - OMEGA
    om = np.sqrt(nu**2 - F**2)
    phi0 = PSI - TH0
    u0 = np.tan(phi0 / 2)
    c = np.arctan((nu * u0 - F) / om)
    u = F / nu + om / nu * np.tan(om * t / 2 + c)
    phi = 2 * np.arctan(u)
    return WE * t + PSI - phi


def wrapped_err(a, b):
    return np.max(np.abs(np.angle(np.exp(1j * (a - b)))))


def drive_net():
    return PhaseNetwork(omega=OMEGA, coupling=np.zeros((4, 4)), drive=ExternalDrive(F, WE, PSI))


@pytest.mark.parametrize(
    "solver, order, dts",
    [
        (RK4(), 4.0, [0.2, 0.1, 0.05, 0.025]),
        (Heun(), 2.0, [0.1, 0.05, 0.025, 0.0125]),
        (StochasticHeun(), 2.0, [0.1, 0.05, 0.025, 0.0125]),
        (SRA1(), 2.0, [0.1, 0.05, 0.025, 0.0125]),
        (EulerMaruyama(), 1.0, [0.02, 0.01, 0.005, 0.0025]),
    ],
)
def test_deterministic_order_driven_phase(solver, order, dts):
    exact = adler_exact(T)
    errs = []
    for dt in dts:
        sol = simulate(drive_net(), solver, 0.0, T, dt, TH0[None], save=SaveAt([T]))
        errs.append(wrapped_err(sol.y_final[0], exact))
    s = slope(dts, errs)
    assert abs(s - order) < 0.3, (s, errs)
    assert s == pytest.approx(solver.deterministic_order, abs=0.3)


@pytest.mark.parametrize("rtol", [1e-4, 1e-7])
def test_dopri5_meets_tolerance_driven_phase(rtol):
    sol = simulate(drive_net(), Dopri5(rtol=rtol, atol=rtol), 0.0, T, 0.1, TH0[None], save=SaveAt([T]))
    err = wrapped_err(sol.y_final[0], adler_exact(T))
    assert err < 10 * rtol * np.max(np.abs(adler_exact(T)))
    assert err > 1e-3 * rtol  # it is not using a far smaller step than asked


def test_linear_complex_amplitude_rk4_and_dopri5():
    rng = np.random.default_rng(3)
    n = 4
    a = -0.2 + 1j * rng.uniform(0.5, 2.0, n)
    C = 0.3 * (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n)))
    c0 = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    T1 = 3.0
    exact = expm(T1 * (np.diag(a) + C)) @ c0
    net = StuartLandauNetwork(a=a, b=0.0, coupling=C)
    dts = [0.2, 0.1, 0.05, 0.025]
    errs = [np.max(np.abs(simulate(net, RK4(), 0.0, T1, dt, c0[None]).y_final[0] - exact)) for dt in dts]
    assert abs(slope(dts, errs) - 4.0) < 0.3, errs
    sol = simulate(net, Dopri5(rtol=1e-8, atol=1e-10), 0.0, T1, 0.1, c0[None], save=SaveAt([1.0, T1]))
    assert np.max(np.abs(sol.ys[-1, 0] - exact)) < 1e-6
    assert sol.ts.tolist() == [1.0, T1]


# ---- strong order on one Brownian path: dθ = (ω − F sin θ) dt + σ dW -----------------------------------
def noisy_net(n_paths):
    return PhaseNetwork(
        omega=np.full(n_paths, 1.0), coupling=np.zeros((n_paths, n_paths)), sigma=1.0,
        injection=None, drive=ExternalDrive(2.0, 0.0, 0.0),  # F sin(0 − θ) = −F sin θ
    )


@pytest.mark.parametrize(
    "solver, order",
    [(EulerMaruyama(), 1.0), (StochasticHeun(), 1.0), (SRA1(), 1.5)],
)
def test_strong_order_additive_noise(solver, order):
    n_paths, T1, seed = 200, 1.0, 11
    dt_ref = 2.0**-12
    net = noisy_net(n_paths)
    y0 = np.linspace(-2, 2, n_paths)[None]
    ref = simulate(net, SRA1(), 0.0, T1, dt_ref, y0, save=SaveAt([T1]), seed=seed).y_final
    ms = [16, 32, 64, 128]
    dts, errs = [], []
    for m in ms:
        sol = simulate(net, solver, 0.0, T1, dt_ref * m, y0, save=SaveAt([T1]), seed=seed, brownian_substeps=m)
        dts.append(dt_ref * m)
        errs.append(np.sqrt(np.mean((sol.y_final - ref) ** 2)))
    s = slope(dts, errs)
    assert abs(s - order) < 0.3, (s, errs)
    assert solver.strong_order == order


def test_same_path_across_substeps():
    """(dt, m) and (dt/m, 1) see the same Brownian path: with EM on pure noise the end points agree."""
    net = PhaseNetwork(omega=np.zeros(5), coupling=np.zeros((5, 5)), sigma=1.0)
    a = simulate(net, EulerMaruyama(), 0, 1, 0.1, np.zeros((2, 5)), seed=4, brownian_substeps=8).y_final
    b = simulate(net, EulerMaruyama(), 0, 1, 0.1 / 8, np.zeros((2, 5)), seed=4).y_final
    np.testing.assert_allclose(a, b, atol=1e-12)
