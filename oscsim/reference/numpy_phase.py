"""A pure-NumPy twin of the engine's phase-network kernel (the reference the engine is tested against).

The coupling is evaluated directly as Σ_j C_ij H(θ_j − θ_i + β_ij) with N² trigonometric calls: slow on
purpose, so it checks the engine's matrix-product identity rather than repeating it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["phase_drift", "simulate_numpy"]


def phase_drift(t: float, theta: np.ndarray, net) -> np.ndarray:
    """Drift of a `PhaseNetwork` for all groups.

    Parameters
    ----------
    t : float
        Time [time units].
    theta : ndarray, shape (G, N)
        Phases [rad].
    net : oscsim.engine.PhaseNetwork

    Returns
    -------
    ndarray, shape (G, N)
    """
    C = net.coupling  # (G', N, N)
    diff = theta[:, None, :] - theta[:, :, None]  # (G, N, N): θ_j − θ_i, row i
    if net.phase_lag is not None:
        diff = diff + net.phase_lag
    harm = net.harmonics if net.harmonics is not None else np.array([[1.0, 0.0]])
    H = np.zeros_like(diff)
    for m, (a, b) in enumerate(harm, start=1):
        H += a * np.sin(m * diff) + b * np.cos(m * diff)
    out = net.omega + np.sum(C * H, axis=2)
    if net.injection is not None:
        K, psi = net._inj
        out = out - K * np.sin(net.injection.order * theta - psi)
    if net.drive is not None:
        F, psi = net._drv
        out = out + F * np.sin(net.drive.angular_frequency * t + psi - theta)
    return out


def simulate_numpy(net, method: str, t0: float, dt: float, n_steps: int, y0, dW=None, area=None):
    """Integrate a `PhaseNetwork` with NumPy on a uniform grid.

    Parameters
    ----------
    net : oscsim.engine.PhaseNetwork
    method : {"euler_maruyama", "stochastic_heun", "sra1", "rk4", "heun"}
    t0, dt : float
        Start time and step [time units].
    n_steps : int
    y0 : array_like, shape (G, N)
    dW : ndarray, shape (n_steps, G, N), optional
        Brownian increments (variance dt), e.g. from `oscsim.engine.brownian_increments` to reproduce an
        engine run exactly. Required when the model has noise.
    area : ndarray, shape (n_steps, G, N), optional
        I_(1,0)/dt for ``"sra1"``.

    Returns
    -------
    ndarray, shape (n_steps + 1, G, N)
        The trajectory, y0 first.
    """
    methods = ("euler_maruyama", "stochastic_heun", "sra1", "rk4", "heun")
    if method not in methods:
        raise ValueError(f"method: unknown {method!r}; valid: {', '.join(methods)}")
    y = np.array(y0, dtype=np.float64)
    G, N = y.shape
    sig = np.broadcast_to(net.sigma, (G, N))
    noisy = bool(np.any(sig > 0))
    if noisy and dW is None:
        raise ValueError("dW: the model has noise; pass the Brownian increments")
    if noisy and method in ("rk4", "heun"):
        raise ValueError(f"method: {method} is deterministic but the model has noise")
    out = np.empty((n_steps + 1, G, N))
    out[0] = y
    f = lambda t, x: phase_drift(t, x, net)  # noqa: E731
    for n in range(n_steps):
        t = t0 + n * dt
        noise = sig * dW[n] if noisy else 0.0
        if method == "euler_maruyama":
            y = y + dt * f(t, y) + noise
        elif method in ("stochastic_heun", "heun"):
            f1 = f(t, y)
            yp = y + dt * f1 + noise
            y = y + 0.5 * dt * (f1 + f(t + dt, yp)) + noise
        elif method == "sra1":
            f1 = f(t, y)
            h2 = y + 0.75 * dt * f1 + (1.5 * sig * area[n] if noisy else 0.0)
            y = y + dt * (f1 / 3 + 2 * f(t + 0.75 * dt, h2) / 3) + noise
        else:
            k1 = f(t, y)
            k2 = f(t + dt / 2, y + dt / 2 * k1)
            k3 = f(t + dt / 2, y + dt / 2 * k2)
            k4 = f(t + dt, y + dt * k3)
            y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        out[n + 1] = y
    return out
