"""Frequency, amplitude and phase from sampled waveforms (interpolated threshold crossings)."""

from __future__ import annotations

import numpy as np

__all__ = ["crossing_times", "frequency_amplitude", "locked", "wrap"]


def wrap(x):
    """Wrap angles to (−π, π] (the one definition: chip readout, periphery and circuit networks use it)."""
    x = np.asarray(x, dtype=np.float64)
    return np.pi - np.mod(np.pi - x, 2 * np.pi)


def crossing_times(t, v, level: float, rising: bool = True) -> np.ndarray:
    """Times [s] where ``v`` crosses ``level`` (linear interpolation). t (S,), v (S,)."""
    t = np.asarray(t, float)
    v = np.asarray(v, float) - level
    if rising:
        idx = np.nonzero((v[:-1] < 0) & (v[1:] >= 0))[0]
    else:
        idx = np.nonzero((v[:-1] > 0) & (v[1:] <= 0))[0]
    frac = v[idx] / (v[idx] - v[idx + 1])
    return t[idx] + frac * (t[idx + 1] - t[idx])


def frequency_amplitude(t, v, level: float | None = None, t_start: float | None = None):
    """Mean frequency [Hz] and peak-to-peak amplitude [V] of a waveform after ``t_start``.

    The frequency is (number of full periods)/(time between the first and last rising crossing).
    Returns (nan, amplitude) when fewer than two crossings are found.
    """
    t = np.asarray(t, float)
    v = np.asarray(v, float)
    if t_start is not None:
        m = t >= t_start
        t, v = t[m], v[m]
    amp = float(v.max() - v.min())
    if level is None:
        level = 0.5 * (v.max() + v.min())
    tc = crossing_times(t, v, level)
    if len(tc) < 2:
        return float("nan"), amp
    return float((len(tc) - 1) / (tc[-1] - tc[0])), amp


def locked(t, v1, v2, level: float, t_start: float, tol_cycles: float = 0.5) -> bool:
    """True when two waveforms make the same number of cycles (±``tol_cycles``) over [t_start, t_end]."""
    m = t >= t_start
    c1 = crossing_times(t[m], v1[m], level)
    c2 = crossing_times(t[m], v2[m], level)
    if len(c1) < 2 or len(c2) < 2:
        return False
    span = t[m][-1] - t[m][0]
    f1 = (len(c1) - 1) / (c1[-1] - c1[0])
    f2 = (len(c2) - 1) / (c2[-1] - c2[0])
    return abs(f1 - f2) * span < tol_cycles
