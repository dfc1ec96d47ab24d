"""Heun's method (explicit trapezoid), deterministic."""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb

from .base import Solver

__all__ = ["Heun"]


@dataclass(frozen=True)
class Heun(Solver):
    """Heun's method, order 2, deterministic only (use `StochasticHeun` for noise)."""

    strong_order = None
    deterministic_order = 2.0
    calculus = None
    noise = None
    n_stages = 3

    def _step(self):
        return step


@nb.njit(fastmath=True)  # not cached: it takes the drift as an argument (see _codegen)
def step(drift, t, h, y, sig, dW, area, g, P, ws, K, ynew):
    f1 = K[0]
    f2 = K[1]
    yp = K[2]
    drift(t, y, g, P, ws, f1)
    for i in range(y.shape[0]):
        yp[i] = y[i] + h * f1[i]
    drift(t + h, yp, g, P, ws, f2)
    for i in range(y.shape[0]):
        ynew[i] = y[i] + 0.5 * h * (f1[i] + f2[i])

