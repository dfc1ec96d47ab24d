"""Phase extraction from waveforms (e.g. ring-oscillator node voltages)."""

from __future__ import annotations

import numpy as np

__all__ = ["phase_from_zero_crossings", "phase_from_analytic_signal"]


def phase_from_zero_crossings(t, x, level: float = 0.0):
    r"""Phase of a waveform from its linearly interpolated rising crossings of ``level``.

    Parameters
    ----------
    t : array_like, shape (S,)
        Sample times [time units], increasing.
    x : array_like, shape (S,)
        Waveform (e.g. a voltage [V]).
    level : float
        Crossing level in the units of ``x`` (e.g. V_DD/2).

    Returns
    -------
    t_cross : ndarray, shape (K,)
        Times of the rising crossings [time units].
    phase : callable
        ``phase(tq)`` -> unwrapped phase [rad] at times ``tq`` inside [t_cross[0], t_cross[-1]]: 2π k at
        the k-th crossing, linear in between.

    Notes
    -----
    Crossing k between samples n and n+1: t_k = t_n + (level − x_n)(t_{n+1} − t_n)/(x_{n+1} − x_n).
    The phase is defined to be 0 (mod 2π) at a rising crossing.
    """
    t = np.asarray(t, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64) - level
    if t.shape != x.shape or t.ndim != 1:
        raise ValueError(f"t, x: must be 1-D of equal length, got {t.shape} and {x.shape}")
    idx = np.flatnonzero((x[:-1] < 0) & (x[1:] >= 0))
    if idx.size < 2:
        raise ValueError("x: fewer than two rising crossings of the level; record longer or check the level")
    tc = t[idx] - x[idx] * (t[idx + 1] - t[idx]) / (x[idx + 1] - x[idx])
    k = 2 * np.pi * np.arange(tc.size)

    def phase(tq):
        tq = np.asarray(tq, dtype=np.float64)
        if np.any(tq < tc[0]) or np.any(tq > tc[-1]):
            raise ValueError("tq: outside the span of detected crossings")
        return np.interp(tq, tc, k)

    return tc, phase


def phase_from_analytic_signal(x, axis: int = -1) -> np.ndarray:
    r"""Instantaneous phase arg(x + i H[x]) of a zero-mean waveform (Hilbert transform).

    Parameters
    ----------
    x : array_like, shape (..., S)
        Waveform sampled uniformly along ``axis``; the mean is removed first.

    Returns
    -------
    ndarray
        Unwrapped phase [rad]. Edge samples (a few periods) suffer from the transform's periodic
        assumption; discard them. Convention: x = cos φ gives φ (so a rising zero crossing is at −π/2 mod 2π).
    """
    from scipy.signal import hilbert

    x = np.asarray(x, dtype=np.float64)
    x = x - np.mean(x, axis=axis, keepdims=True)
    return np.unwrap(np.angle(hilbert(x, axis=axis)), axis=axis)
