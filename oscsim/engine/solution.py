"""The result of `simulate` and the error raised on a blow-up."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Solution", "SimulationError"]


class SimulationError(RuntimeError):
    """The state became NaN or infinite (or an adaptive run ran out of steps).

    Attributes
    ----------
    time : float
        Time at which the non-finite state appeared [time units].
    group : int
        Index of the first group that failed.
    groups : list of int
        All failed groups.
    """

    def __init__(self, message: str, *, time: float, group: int, groups: list[int]):
        super().__init__(message)
        self.time = time
        self.group = group
        self.groups = groups


@dataclass(frozen=True)
class Solution:
    """What a run returns.

    Attributes
    ----------
    ts : ndarray, shape (S,)
        Save times [time units] (empty for `SaveSummary`).
    ys : ndarray, shape (S, G, N) or (S, G, D), or None
        Saved states (float64 phases, complex128 amplitudes or float64 circuit states); None for
        `SaveSummary`.
    y_final : ndarray, shape (G, N) or (G, D)
        State at t1.
    mean_exp : ndarray, shape (G, N), complex128, or None
        Time average of e^{iθ} over the summary window (`SaveSummary` only).
    coherence : ndarray, shape (G, N, N), or None
        Time average of cos(θ_i − θ_j) over the summary window (`SaveSummary(coherence=True)` only).
    stats : dict
        ``n_steps`` (fixed-step) or ``n_accepted``/``n_rejected`` per group (adaptive), ``n_samples``
        (summary), ``wall_time_s`` (the compiled loop, including compilation on a cold cache), ``solver``,
        ``model``, ``n_groups``.
    """

    ts: np.ndarray
    ys: np.ndarray | None
    y_final: np.ndarray
    mean_exp: np.ndarray | None = None
    coherence: np.ndarray | None = None
    stats: dict = field(default_factory=dict)
