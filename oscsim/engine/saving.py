"""Saving policies: every k steps, at given times, or summaries only."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from ._checks import as_real_array

__all__ = ["SaveEvery", "SaveAt", "SaveSummary"]


def _int_at_least(name: str, v, lo: int) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < lo:
        raise ValueError(f"{name}: must be an integer >= {lo}, got {v!r}")
    return int(v)


@dataclass(frozen=True)
class SaveEvery:
    """Save the state at t0 and after every ``k`` steps of size dt (and always at t1).

    With the adaptive `Dopri5`, the output times are t0 + n·k·dt (and t1); the solver lands on each.

    Parameters
    ----------
    k : int
        Steps between saved states, >= 1.
    """

    k: int = 1

    def __post_init__(self):
        object.__setattr__(self, "k", _int_at_least("SaveEvery.k", self.k, 1))


@dataclass(frozen=True)
class SaveAt:
    """Save the state exactly at the given times.

    Fixed-step solvers shorten the step before each time so that it lies on the grid (no interpolation);
    `Dopri5` lands on each.

    Parameters
    ----------
    ts : array_like, shape (S,)
        Strictly increasing times within [t0, t1] (checked by `simulate`).
    """

    ts: object

    def __post_init__(self):
        ts = as_real_array("SaveAt.ts", self.ts)
        if ts.ndim != 1 or ts.size == 0:
            raise ValueError(f"SaveAt.ts: expected a non-empty 1-D array of times, got shape {ts.shape}")
        if ts.size > 1 and np.any(np.diff(ts) <= 0):
            raise ValueError("SaveAt.ts: times must be strictly increasing")
        ts.setflags(write=False)
        object.__setattr__(self, "ts", ts)


@dataclass(frozen=True)
class SaveSummary:
    """Keep no trajectory: the final state and running averages over [t_start, t1].

    Averages are taken over the states at the step times t_n >= t_start (t_n = t0 + n dt, t1 included),
    every ``every``-th one:

    - ``mean_exp`` (G, N) complex: mean of e^{iθ_i} (θ = arg c for complex amplitudes);
    - ``coherence`` (G, N, N): mean of cos(θ_i − θ_j), if ``coherence`` is True (O(N²) per sample).

    Fixed-step solvers only. `CustomODE` has no phases: only the final state is kept.

    Parameters
    ----------
    t_start : float, optional
        Start of the averaging window [time units]; default t0.
    every : int
        Sample every ``every``-th step (>= 1).
    coherence : bool
        Accumulate the coherence matrix.
    """

    t_start: float | None = None
    every: int = 1
    coherence: bool = True

    def __post_init__(self):
        if self.t_start is not None:
            v = as_real_array("SaveSummary.t_start", self.t_start)
            if v.ndim != 0:
                raise ValueError("SaveSummary.t_start: must be a scalar time")
            object.__setattr__(self, "t_start", float(v))
        object.__setattr__(self, "every", _int_at_least("SaveSummary.every", self.every, 1))
        if not isinstance(self.coherence, bool):
            raise ValueError(f"SaveSummary.coherence: must be True or False, got {self.coherence!r}")
