"""Stochastic Heun (predictor–corrector trapezoid)."""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb

from .base import Solver

__all__ = ["StochasticHeun"]


@nb.njit(fastmath=True)  # not cached: it takes the drift as an argument (see _codegen)
def step(drift, t, h, y, sig, dW, area, g, P, ws, K, ynew):
    f1, f2, yp = K[0], K[1], K[2]
    drift(t, y, g, P, ws, f1)
    for i in range(y.shape[0]):
        yp[i] = y[i] + h * f1[i] + sig[i] * dW[i]
    drift(t + h, yp, g, P, ws, f2)
    for i in range(y.shape[0]):
        ynew[i] = y[i] + 0.5 * h * (f1[i] + f2[i]) + sig[i] * dW[i]


@dataclass(frozen=True)
class StochasticHeun(Solver):
    r"""Stochastic Heun: ỹ = y + f(t, y) h + σ ΔW;  y_{n+1} = y + ½[f(t, y) + f(t + h, ỹ)] h + σ ΔW.

    Converges to the Stratonovich solution (for the engine's additive noise, the same as Itô). Strong
    order 1 for additive noise; deterministic order 2 (it is Heun's method when σ = 0).

    References
    ----------
    Rümelin, SIAM J. Numer. Anal. 19, 604 (1982); Kloeden & Platen (1992) §15.
    """

    strong_order = 1.0
    deterministic_order = 2.0
    calculus = "Stratonovich"
    noise = "additive"
    n_stages = 3
