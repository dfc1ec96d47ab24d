"""Euler–Maruyama."""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb

from .base import Solver

__all__ = ["EulerMaruyama"]


@nb.njit(fastmath=True)  # not cached: it takes the drift as an argument (see _codegen)
def step(drift, t, h, y, sig, dW, area, g, P, ws, K, ynew):
    f = K[0]
    drift(t, y, g, P, ws, f)
    for i in range(y.shape[0]):
        ynew[i] = y[i] + h * f[i] + sig[i] * dW[i]


@dataclass(frozen=True)
class EulerMaruyama(Solver):
    r"""Euler–Maruyama: y_{n+1} = y_n + f(t_n, y_n) h + σ ΔW_n.

    Converges to the Itô solution (for the engine's additive noise, Itô = Stratonovich). Strong order 1
    for additive noise (0.5 for general multiplicative noise, which the engine's models do not have);
    deterministic order 1.

    References
    ----------
    Kloeden & Platen, *Numerical Solution of Stochastic Differential Equations*, Springer 1992, §10.2.
    """

    strong_order = 1.0
    deterministic_order = 1.0
    calculus = "Ito"
    noise = "additive"
    n_stages = 1
