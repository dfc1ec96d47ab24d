"""Phase extraction from waveforms (e.g. ring-oscillator node voltages)."""

from __future__ import annotations

import numpy as np

__all__ = ["phase_from_zero_crossings", "phase_from_analytic_signal", "ensemble_phase_diffusion"]


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


def ensemble_phase_diffusion(t, phase, t_ref: float, fit_after: float, *, n_boot: int = 100, seed: int = 0):
    r"""Phase diffusion of an ensemble of independent, identical noisy oscillators, with a bootstrap CI.

    Parameters
    ----------
    t : array_like, shape (S,)
        Sample times [s], increasing.
    phase : array_like, shape (S, G)
        Unwrapped phases [rad] of G oscillators (G >= 2).
    t_ref : float
        Time [s] the phase increments are counted from (after the start-up transient).
    fit_after : float
        Lag [s] after ``t_ref`` below which the variance is not fitted (e.g. a few amplitude relaxation
        times, where amplitude–phase coupling still bends the curve).
    n_boot : int
        Bootstrap resamples of the oscillators for the interval.
    seed : int
        Seed of the bootstrap resampling.

    Returns
    -------
    D : float
        Slope of Var_G[φ(t) − φ(t_ref)] against t − t_ref [rad²/s], fitted by least squares over lags
        > ``fit_after``.
    ci95 : tuple of float
        2.5 and 97.5 percentiles of the slope over ``n_boot`` resamples of the oscillators (with replacement).

    Notes
    -----
    For a phase that diffuses as dφ = ω dt + sqrt(D) dW, Var[φ(t) − φ(t_ref)] = D (t − t_ref); the
    Lorentzian line then has a full width at half maximum of D / (2π) [Hz].
    """
    t = np.asarray(t, dtype=np.float64)
    phase = np.asarray(phase, dtype=np.float64)
    if phase.ndim != 2 or phase.shape[0] != t.shape[0] or phase.shape[1] < 2:
        raise ValueError(f"phase: must be (S, G) with S = len(t) = {t.shape[0]} and G >= 2, got {phase.shape}")
    i0 = int(np.searchsorted(t, t_ref))
    d = phase[i0:] - phase[i0]
    lag = t[i0:] - t[i0]
    k = lag > fit_after
    if np.count_nonzero(k) < 2:
        raise ValueError(f"fit_after: leaves fewer than two samples after t_ref = {t_ref} (last t = {t[-1]})")
    G = phase.shape[1]
    slope = float(np.polyfit(lag[k], d[k].var(axis=1, ddof=1), 1)[0])
    rng = np.random.default_rng(seed)
    boots = [np.polyfit(lag[k], d[k][:, rng.integers(0, G, G)].var(axis=1, ddof=1), 1)[0] for _ in range(n_boot)]
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return slope, (float(lo), float(hi))
