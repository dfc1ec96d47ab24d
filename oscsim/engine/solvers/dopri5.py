"""Dormand–Prince 5(4): adaptive embedded Runge–Kutta pair for deterministic runs."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numba as nb
import numpy as np

from .base import Solver

__all__ = ["Dopri5"]

# Butcher tableau (Dormand & Prince 1980); E = b5 − b4 (error weights).
_A21 = 1 / 5
_A31, _A32 = 3 / 40, 9 / 40
_A41, _A42, _A43 = 44 / 45, -56 / 15, 32 / 9
_A51, _A52, _A53, _A54 = 19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729
_A61, _A62, _A63, _A64, _A65 = 9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656
_B1, _B3, _B4, _B5, _B6 = 35 / 384, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84
_E1, _E3, _E4, _E5, _E6, _E7 = 71 / 57600, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40


@dataclass(frozen=True)
class Dopri5(Solver):
    """Dormand–Prince 5(4) with a standard step-size controller; deterministic only.

    Parameters
    ----------
    rtol, atol : float
        Relative and absolute tolerances (> 0). A step is accepted when the RMS over components of
        err_i / (atol + rtol·max(|y_i|, |y_new_i|)) is <= 1; the fifth-order solution is propagated.
    max_steps : int
        Attempted steps allowed per group before the run is stopped with an error.

    Notes
    -----
    ``dt`` given to `simulate` is the first trial step and the spacing of `SaveEvery` output times; steps
    are shortened to land exactly on every output time (no interpolation). Step factor
    0.9·err^(−1/5), clipped to [0.2, 5].

    References
    ----------
    J. R. Dormand & P. J. Prince, J. Comput. Appl. Math. 6, 19–26 (1980); Hairer, Nørsett & Wanner,
    *Solving ODEs I*, §II.4.
    """

    rtol: float = 1e-6
    atol: float = 1e-9
    max_steps: int = 10_000_000

    deterministic_order = 5.0
    n_stages = 8
    adaptive = True

    def __post_init__(self):
        for name in ("rtol", "atol"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not np.isfinite(v) or v <= 0:
                raise ValueError(f"Dopri5.{name}: must be a finite number > 0, got {v!r}")
        if isinstance(self.max_steps, bool) or not isinstance(self.max_steps, numbers.Integral) or self.max_steps < 1:
            raise ValueError(f"Dopri5.max_steps: must be an integer >= 1, got {self.max_steps!r}")


@nb.njit(fastmath=True)  # not cached: it takes the drift as an argument (see _codegen)
def step(drift, t, h, y, g, P, ws, K, ynew, rtol, atol):
    k1, k2, k3, k4, k5, k6, k7, yt = K[0], K[1], K[2], K[3], K[4], K[5], K[6], K[7]
    n = y.shape[0]
    drift(t, y, g, P, ws, k1)
    for i in range(n):
        yt[i] = y[i] + h * _A21 * k1[i]
    drift(t + h / 5, yt, g, P, ws, k2)
    for i in range(n):
        yt[i] = y[i] + h * (_A31 * k1[i] + _A32 * k2[i])
    drift(t + 3 * h / 10, yt, g, P, ws, k3)
    for i in range(n):
        yt[i] = y[i] + h * (_A41 * k1[i] + _A42 * k2[i] + _A43 * k3[i])
    drift(t + 4 * h / 5, yt, g, P, ws, k4)
    for i in range(n):
        yt[i] = y[i] + h * (_A51 * k1[i] + _A52 * k2[i] + _A53 * k3[i] + _A54 * k4[i])
    drift(t + 8 * h / 9, yt, g, P, ws, k5)
    for i in range(n):
        yt[i] = y[i] + h * (_A61 * k1[i] + _A62 * k2[i] + _A63 * k3[i] + _A64 * k4[i] + _A65 * k5[i])
    drift(t + h, yt, g, P, ws, k6)
    for i in range(n):
        ynew[i] = y[i] + h * (_B1 * k1[i] + _B3 * k3[i] + _B4 * k4[i] + _B5 * k5[i] + _B6 * k6[i])
    drift(t + h, ynew, g, P, ws, k7)
    acc = 0.0
    for i in range(n):
        e = h * (_E1 * k1[i] + _E3 * k3[i] + _E4 * k4[i] + _E5 * k5[i] + _E6 * k6[i] + _E7 * k7[i])
        sc = atol + rtol * max(abs(y[i]), abs(ynew[i]))
        acc += (e / sc) ** 2
    return np.sqrt(acc / max(n, 1))

