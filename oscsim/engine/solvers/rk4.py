"""The classical fourth-order Runge–Kutta method (deterministic)."""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb

from .base import Solver

__all__ = ["RK4"]


@nb.njit(fastmath=True)  # not cached: it takes the drift as an argument (see _codegen)
def step(drift, t, h, y, sig, dW, area, g, P, ws, K, ynew):
    k1, k2, k3, k4, yt = K[0], K[1], K[2], K[3], K[4]
    n = y.shape[0]
    drift(t, y, g, P, ws, k1)
    for i in range(n):
        yt[i] = y[i] + 0.5 * h * k1[i]
    drift(t + 0.5 * h, yt, g, P, ws, k2)
    for i in range(n):
        yt[i] = y[i] + 0.5 * h * k2[i]
    drift(t + 0.5 * h, yt, g, P, ws, k3)
    for i in range(n):
        yt[i] = y[i] + h * k3[i]
    drift(t + h, yt, g, P, ws, k4)
    for i in range(n):
        ynew[i] = y[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])


@dataclass(frozen=True)
class RK4(Solver):
    """Classical RK4, order 4, deterministic only (a model with σ > 0 is refused)."""

    deterministic_order = 4.0
    n_stages = 5
