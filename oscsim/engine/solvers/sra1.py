"""SRA1: Rößler's stochastic Runge–Kutta method for additive noise, strong order 1.5."""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb

from .base import Solver

__all__ = ["SRA1"]

# Rößler (2010), Table 5, SRA1: the stage H2 at t + c2 h, its drift and area weights, and the drift weights
# of the step (the noise enters the step as σ ΔW, weight 1). Prefixed: the generated kernels import every
# solver's constants into one module (`_codegen` refuses a clash).
_SRA1_C2 = 3 / 4
_SRA1_A21 = 3 / 4
_SRA1_B21 = 3 / 2
_SRA1_ALPHA1, _SRA1_ALPHA2 = 1 / 3, 2 / 3


@nb.njit(fastmath=True)  # not cached: it takes the drift as an argument (see _codegen)
def step(drift, t, h, y, sig, dW, area, g, P, ws, K, ynew):
    f1, f2, H2 = K[0], K[1], K[2]
    drift(t, y, g, P, ws, f1)
    for i in range(y.shape[0]):
        H2[i] = y[i] + _SRA1_A21 * h * f1[i] + _SRA1_B21 * sig[i] * area[i]
    drift(t + _SRA1_C2 * h, H2, g, P, ws, f2)
    for i in range(y.shape[0]):
        ynew[i] = y[i] + h * (_SRA1_ALPHA1 * f1[i] + _SRA1_ALPHA2 * f2[i]) + sig[i] * dW[i]


@dataclass(frozen=True)
class SRA1(Solver):
    r"""SRA1 (Rößler 2010) for additive noise, strong order 1.5, deterministic order 2.

    Notes
    -----
    With ΔW = W(t+h) − W(t) and the area Ĩ = I_{(1,0)}/h = (1/h)∫_t^{t+h} (W(s) − W(t)) ds (drawn jointly:
    Ĩ = ½(ΔW + ξ √(h/3)), ξ ~ N(0, 1) independent):

    .. math::

        H_2 = y + \tfrac34 h f(t, y) + \tfrac32 σ Ĩ, \qquad
        y_{n+1} = y + h\big(\tfrac13 f(t, y) + \tfrac23 f(t + \tfrac34 h, H_2)\big) + σ ΔW

    The noise amplitude σ must not depend on the state (additive noise); for it Itô and Stratonovich
    coincide. The tableau is SRA1 of Rößler, Table 5.

    References
    ----------
    A. Rößler, "Runge–Kutta methods for the strong approximation of solutions of stochastic differential
    equations", SIAM J. Numer. Anal. 48, 922–952 (2010).
    """

    strong_order = 1.5
    deterministic_order = 2.0
    calculus = "either"
    noise = "additive"
    n_stages = 3
    needs_area = True
