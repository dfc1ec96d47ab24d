"""Heun's method (explicit trapezoid), deterministic."""

from __future__ import annotations

from dataclasses import dataclass

from .base import Solver
# Heun's step is the stochastic Heun step with no noise (sig * dW = 0 when the run is deterministic): one
# implementation serves both, and the deterministic order-2 tests cover it. The engine finds it here as
# ``heun.step`` (see `Solver._step`).
from .stochastic_heun import step  # noqa: F401

__all__ = ["Heun"]


@dataclass(frozen=True)
class Heun(Solver):
    """Heun's method, order 2, deterministic only (use `StochasticHeun` for noise)."""

    deterministic_order = 2.0
    n_stages = 3
