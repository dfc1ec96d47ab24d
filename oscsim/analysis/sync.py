"""Synchronisation measures over phases."""

from __future__ import annotations

import numpy as np

__all__ = ["order_parameter", "coherence_matrix", "mean_frequency"]


def order_parameter(theta, axis: int = -1) -> np.ndarray:
    r"""Kuramoto order parameter Z = r e^{iψ} = (1/N) Σ_j e^{iθ_j}.

    Parameters
    ----------
    theta : array_like, shape (..., N)
        Phases [rad].
    axis : int
        The oscillator axis.

    Returns
    -------
    ndarray, complex
        Z; take ``np.abs`` for r.
    """
    theta = np.asarray(theta, dtype=np.float64)
    return np.mean(np.exp(1j * theta), axis=axis)


def coherence_matrix(theta, time_axis: int = 0) -> np.ndarray:
    r"""Time-averaged ⟨cos(θ_i − θ_j)⟩ from a trajectory.

    Parameters
    ----------
    theta : array_like, shape (S, ..., N)
        Phases [rad] over S samples along ``time_axis``.

    Returns
    -------
    ndarray, shape (..., N, N)

    Notes
    -----
    cos(θ_i − θ_j) = cos θ_i cos θ_j + sin θ_i sin θ_j: two matrix products, no N² cosines.
    """
    theta = np.moveaxis(np.asarray(theta, dtype=np.float64), time_axis, 0)
    c, s = np.cos(theta), np.sin(theta)
    S = theta.shape[0]
    return (np.einsum("t...i,t...j->...ij", c, c) + np.einsum("t...i,t...j->...ij", s, s)) / S


def mean_frequency(theta, t, time_axis: int = 0) -> np.ndarray:
    """Mean angular frequency (θ(t_end) − θ(t_start)) / (t_end − t_start) of unwrapped phases.

    Parameters
    ----------
    theta : array_like, shape (S, ...)
        Phases [rad]; wrapped phases are unwrapped along time first (sampling must resolve each cycle).
    t : array_like, shape (S,)
        Times [time units].

    Returns
    -------
    ndarray, shape (...)
        [rad per time unit].
    """
    theta = np.moveaxis(np.asarray(theta, dtype=np.float64), time_axis, 0)
    t = np.asarray(t, dtype=np.float64)
    if t.ndim != 1 or t.shape[0] != theta.shape[0] or t.shape[0] < 2:
        raise ValueError(f"t: expected shape ({theta.shape[0]},) with at least 2 samples, got {t.shape}")
    u = np.unwrap(theta, axis=0)
    return (u[-1] - u[0]) / (t[-1] - t[0])
