"""Phase readout: a quadrature phase detector against the reference, filtered and averaged over real samples.

Notes
-----
A detector compares an oscillator with the reference clock (the frame rotating at the nominal 2π f₀) and
outputs a function of the phase θ(t):

- cosine (mixer I/Q): channels (cos θ, sin θ); θ̂ = atan2(y_s, y_c);
- triangular (XOR-type): channels (tri(θ), tri(θ − π/2)) with tri(θ) = 1 − 2|wrap(θ)|/π, inverted with the
  diamond angle: on the unit diamond |y_c| + |y_s| = 1 the phase is piecewise linear in y_s / (|y_c| + |y_s|).

The readout chain of one oscillator (the same for Kuramoto and SSA chips):

1. the oscillator's phase trajectory θ(t) over the averaging window [0, W] (W = ``averaging_cycles``),
   sampled ``samples_per_cycle`` times per cycle: these are samples of the simulated trajectory (Kuramoto:
   the network after the couplers open at τ_s; SSA: the Adler cell or collective network itself);
2. the detector's channels pass a first-order low-pass of bandwidth f_bw = ``bandwidth_fraction`` · f₀,
   reset at the window start (a switched integrator is discharged; the 2f₀ mixing product is assumed removed,
   which needs f_bw ≪ 2 f₀): y_k = y_{k−1} + α (x_k − y_{k−1}), α = 1 − exp(−2π f_bw Δt), the exact update for
   an input held over each sample interval Δt; no filter when the bandwidth is None;
3. each sample gets independent white sampler noise of RMS ``noise_rad`` · sqrt(samples_per_cycle) (channel
   full-scale units; so a one-cycle average has RMS ``noise_rad``: the figure is per one-cycle measurement);
4. the M = W · samples_per_cycle samples are averaged (integrate and dump), and the average is converted once
   per channel by a signed ``bits``-bit ADC over [−1, 1] (the energy model charges one conversion per channel);
5. the phase is recovered from the two averaged channels.

The noise on the phase estimate therefore falls as 1/sqrt(M) while the trajectory itself (drift during the
window, the filter's lag and its attenuation of the average) is the real one. Near the zero crossing a channel
error ε is a phase error ε (cosine) or ε·π/2 (triangular).

:func:`chip_readout` builds a chip's readout chain from its config; :func:`read_free_running` runs it for a
batch of networks whose couplers have opened, each (sequence, bank) drawing from its own keyed stream. Time and
energy (for :mod:`mapping.energy`): :func:`readout_window_s` and :func:`readout_energy_j`.
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
from dataclasses import dataclass

import numba
import numpy as np

from hw_models.waveform import wrap

from ..seeds import PURPOSE, sequence_rng
from .quantise import Quantiser

__all__ = ["PhaseReadout", "wrap", "free_running_samples", "chip_readout", "read_free_running", "readout_window_s",
           "readout_energy_j"]


def _tri(x):
    return 1.0 - 2.0 * np.abs(wrap(x)) / np.pi


def _diamond_angle(c, s):
    n = np.abs(c) + np.abs(s)
    n = np.where(n > 0, n, 1.0)
    c, s = c / n, s / n
    # quadrant by quadrant: θ ∈ [0, π/2]: s = 2θ/π (c = 1 − s), etc.
    theta = np.where(
        s >= 0,
        np.where(c >= 0, s * np.pi / 2, np.pi / 2 + (-c) * np.pi / 2),
        np.where(c >= 0, s * np.pi / 2, -np.pi / 2 - (-c) * np.pi / 2),
    )
    return wrap(theta)


@dataclass(frozen=True, kw_only=True)
class PhaseReadout:
    """Quadrature phase detector, low-pass, sampler noise, averaging and an ADC (see the module notes).

    Attributes
    ----------
    response : {'cosine', 'triangular'}
        Mixer I/Q or XOR-type detector.
    noise_rad : float
        Channel noise RMS of a one-cycle measurement (channel full-scale units); per sample
        ``noise_rad * sqrt(samples_per_cycle)``.
    bits : int or None
        ADC resolution per channel over [−1, 1] (one conversion of the averaged channel); None: unquantised.
    averaging_cycles : float
        Averaging window W [cycles].
    samples_per_cycle : int
        Samples of the trajectory per cycle in the window (M = round(W · samples_per_cycle), at least 1).
    bandwidth_fraction : float or None
        Detector low-pass bandwidth as a fraction of f₀ (0, 0.5]; None: no filter (ideal detector).
    """

    response: str = "cosine"
    noise_rad: float = 0.0
    bits: int | None = None
    averaging_cycles: float = 1.0
    samples_per_cycle: int = 1
    bandwidth_fraction: float | None = None

    def __post_init__(self):
        if self.response not in ("cosine", "triangular"):
            raise ValueError(f"response must be 'cosine' or 'triangular', got {self.response!r}")
        if not (math.isfinite(self.noise_rad) and self.noise_rad >= 0):
            raise ValueError(f"noise_rad must be finite and >= 0, got {self.noise_rad!r}")
        if not (math.isfinite(self.averaging_cycles) and self.averaging_cycles > 0):
            raise ValueError(f"averaging_cycles must be finite and > 0, got {self.averaging_cycles!r}")
        s = self.samples_per_cycle
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or not 1 <= s <= 1024:
            raise ValueError(f"samples_per_cycle must be an integer in [1, 1024], got {s!r}")
        b = self.bandwidth_fraction
        if b is not None and not (math.isfinite(b) and 0 < b <= 0.5):
            raise ValueError(f"bandwidth_fraction must be in (0, 0.5] (fraction of f0; the 2 f0 mixing product "
                             f"must be filtered) or None, got {b!r}")

    # -- the sampling grid ------------------------------------------------------------------------------
    @property
    def n_samples(self) -> int:
        """M, the number of samples averaged."""
        return max(1, int(round(self.averaging_cycles * self.samples_per_cycle)))

    def sample_times(self) -> np.ndarray:
        """(M,) sample times in the window [cycles]: the end of each sample interval, the last at W."""
        m = self.n_samples
        return self.averaging_cycles * np.arange(1, m + 1) / m

    @property
    def sample_noise(self) -> float:
        """Per-sample noise RMS (channel full-scale units)."""
        return self.noise_rad * math.sqrt(self.n_samples / self.averaging_cycles)

    @property
    def effective_noise(self) -> float:
        """Noise RMS of the averaged channel, ``sample_noise / sqrt(M)`` = noise_rad / sqrt(W)."""
        return self.sample_noise / math.sqrt(self.n_samples)

    def filter_gain(self) -> float:
        """Mean over the window of the reset low-pass's step response (the attenuation of a constant input)."""
        return float(np.mean(self._lowpass(np.ones(self.n_samples))))

    def window_weights(self) -> np.ndarray:
        """(M,) weights W_j of the averaged channel, ȳ = Σ_j W_j x_j (x_j the detector output at sample j):
        W_j = (1/M) Σ_{k≥j} h_{k−j}, h the reset low-pass's discrete impulse response (1/M each without a
        filter); their sum is :meth:`filter_gain`."""
        m = self.n_samples
        return self._lowpass(np.eye(m)).sum(axis=0) / m  # column j of the filtered identity: a unit sample at j

    def error_model(self) -> dict:
        """The chain linearised for small phase excursions over the window (for surrogates, e.g. mapping.hwa).

        The averaged channels are Σ_j W_j x_j with W_j = (1/M) Σ_{k≥j} h_{k−j} (h the low-pass's discrete
        impulse response), so the estimate is the W-weighted mean of the sampled phases. Returns ``gain``
        g = Σ W_j (the channel attenuation), ``noise_rad`` = effective_noise / g and ``step_rad`` = Δ / g (the
        ADC step Δ = 1/(2**(bits−1) − 1) referred to phase, 0 when unquantised), ``drift_cycles`` t̄ = Σ W_j t_j / g
        (a residual frequency ω shifts the estimate by ω t̄) and ``diffusion_cycles`` Σ_ij W_i W_j min(t_i, t_j)
        / g² (phase diffusion σ² during the window adds σ² times this).
        """
        t = self.sample_times()
        w = self.window_weights()
        g = float(w.sum())
        step = 0.0 if self.bits is None else 1.0 / max(2 ** (self.bits - 1) - 1, 1)
        return {"gain": g, "noise_rad": self.effective_noise / g, "step_rad": step / g,
                "drift_cycles": float(w @ t) / g, "diffusion_cycles": float(w @ np.minimum.outer(t, t) @ w) / g**2}

    # -- the chain ----------------------------------------------------------------------------------------
    def channels(self, theta):
        """Noise-free detector outputs (y_c, y_s) for phases θ [rad]."""
        theta = np.asarray(theta, dtype=np.float64)
        if self.response == "cosine":
            return np.cos(theta), np.sin(theta)
        return _tri(theta), _tri(theta - np.pi / 2)

    def invert(self, yc, ys):
        """Phase estimate [rad, (−π, π]] from detector outputs."""
        if self.response == "cosine":
            return np.arctan2(ys, yc)
        return _diamond_angle(yc, ys)

    def _lowpass(self, x):
        """First-order low-pass along axis 0 from a reset state (exact for inputs held over Δt)."""
        if self.bandwidth_fraction is None:
            return x
        dt = self.averaging_cycles / self.n_samples
        alpha = 1.0 - math.exp(-2 * math.pi * self.bandwidth_fraction * dt)
        y = np.empty_like(x)
        prev = np.zeros_like(x[0])
        for k in range(x.shape[0]):
            prev = prev + alpha * (x[k] - prev)
            y[k] = prev
        return y

    def average_channels(self, theta_samples, rng: np.random.Generator | None = None):
        """Averaged (y_c, y_s) over the window, before the ADC, from sampled phases (M, ...)."""
        th = np.asarray(theta_samples, dtype=np.float64)
        if th.shape[0] != self.n_samples:
            raise ValueError(f"theta_samples must have {self.n_samples} samples on axis 0 (averaging_cycles x "
                             f"samples_per_cycle), got {th.shape[0]}")
        yc, ys = (self._lowpass(y) for y in self.channels(th))
        sig = self.sample_noise
        if sig > 0:
            if rng is None:
                raise ValueError("PhaseReadout needs an rng when noise_rad > 0")
            yc = yc + sig * rng.standard_normal(yc.shape)
            ys = ys + sig * rng.standard_normal(ys.shape)
        return yc.mean(axis=0), ys.mean(axis=0)

    def convert(self, y):
        """The ADC: signed ``bits``-bit quantiser over [−1, 1] (identity when bits is None)."""
        if self.bits is None:
            return np.asarray(y, dtype=np.float64)
        return Quantiser(bits=self.bits, range=1.0, signed=True)(y)

    def measure_samples(self, theta_samples, rng: np.random.Generator | None = None):
        """Measured phase [rad, (−π, π]] from the trajectory sampled over the window.

        Parameters
        ----------
        theta_samples : (M, ...) array
            Phases [rad] at :meth:`sample_times` (rotating frame).
        rng : numpy.random.Generator, optional
            Source of the sampler noise; required when ``noise_rad > 0``.

        Returns
        -------
        (...) array of phase estimates.
        """
        yc, ys = self.average_channels(theta_samples, rng)
        return self.invert(self.convert(yc), self.convert(ys))

    def measure(self, theta, rng: np.random.Generator | None = None):
        """Measured phases for oscillators held at fixed phases θ over the window (same shape as θ)."""
        theta = np.asarray(theta, dtype=np.float64)
        return self.measure_samples(np.broadcast_to(theta, (self.n_samples,) + theta.shape), rng)

    def measure_mean(self, mean_value, rng: np.random.Generator | None = None, *, normals=None):
        """A detector output already averaged over the window by the simulation (SSA cells: ⟨cos φ⟩ of the
        trajectory at every integration step), plus the sampler noise of M samples and one ADC conversion.

        The sampler noise is white and independent per sample, so its mean over M samples is exactly Gaussian
        with RMS ``effective_noise``; it is drawn as such (the same distribution as M draws, without them).
        """
        m = np.asarray(mean_value, dtype=np.float64)
        if self.effective_noise > 0:
            if normals is None:  # ``normals``: pre-drawn standard normals of m's shape (keyed per object)
                if rng is None:
                    raise ValueError("PhaseReadout needs an rng (or normals) when noise_rad > 0")
                normals = rng.standard_normal(m.shape)
            m = m + self.effective_noise * np.asarray(normals, dtype=np.float64)
        return self.convert(m)

    def to_dict(self) -> dict:
        return {"response": self.response, "noise_rad": float(self.noise_rad), "bits": self.bits,
                "averaging_cycles": float(self.averaging_cycles), "samples_per_cycle": int(self.samples_per_cycle),
                "bandwidth_fraction": self.bandwidth_fraction}


def free_running_samples(theta_end, omega, sigma, times, rng: np.random.Generator | None):
    """Phases of free-running oscillators (couplers open) at ``times`` after the settle window.

    The exact solution of dθ = ω dt + σ dW with no coupling: θ(t_k) = θ(0) + ω t_k + σ B(t_k), the Brownian
    path drawn at the sample times (independent Gaussian increments), so the samples have the distribution
    of the simulated SDE's trajectory.

    Parameters
    ----------
    theta_end : (...) phases at the window start [rad].
    omega : (...) or scalar, residual angular frequency [rad/cycle].
    sigma : float or (...) noise intensity [rad/sqrt(cycle)].
    times : (M,) increasing sample times [cycles].
    rng : numpy.random.Generator or None (needed when sigma > 0).

    Returns
    -------
    (M, ...) array.
    """
    theta_end = np.asarray(theta_end, dtype=np.float64)
    t = np.asarray(times, dtype=np.float64).reshape((-1,) + (1,) * theta_end.ndim)
    out = theta_end + np.asarray(omega, dtype=np.float64) * t
    sig = np.asarray(sigma, dtype=np.float64)
    if np.any(sig > 0):
        if rng is None:
            raise ValueError("free_running_samples needs an rng when sigma > 0")
        dt = np.diff(np.concatenate([[0.0], t.ravel()])).reshape(t.shape)
        out = out + sig * np.cumsum(np.sqrt(dt) * rng.standard_normal(out.shape), axis=0)
    return out


def chip_readout(chip, window_cycles: float | None = None) -> PhaseReadout | None:
    """The chip's readout model (None when it is ideal: no noise, no quantisation, no detector filter).

    ``window_cycles``: the averaging window [cycles] when it is not ``readout.averaging_cycles`` (SSA chips
    average over ``ssa.averaging_cycles``)."""
    r = chip.config.readout
    noise = r.noise_rad if chip.config.noise else 0.0
    if noise == 0 and r.bits is None and r.bandwidth_fraction is None:
        return None
    return PhaseReadout(response=r.response, noise_rad=noise, bits=r.bits,
                        averaging_cycles=r.averaging_cycles if window_cycles is None else window_cycles,
                        samples_per_cycle=r.samples_per_cycle, bandwidth_fraction=r.bandwidth_fraction)


def read_free_running(readout: PhaseReadout, phases, omega, sigma, *, seed: int, sequences, banks: int,
                      samples=None) -> np.ndarray:
    """Measured phases (G, T) of G = banks · B networks of T oscillators whose couplers opened at ``phases``.

    Each oscillator free-runs at ``omega`` [rad/cycle] with noise ``sigma`` (scalar, or (G, T) per
    oscillator) through the window (:func:`free_running_samples`), or follows ``samples`` (M, G, T) when a
    model integrated the window itself; the readout of (sequence b, bank) draws from its own stream, keyed on
    (seed, readout, ``sequences[b]``, bank), so a sequence gets the same numbers in any batch. Networks are
    ordered (bank, sequence, ...).
    """
    phases = np.asarray(phases, dtype=np.float64)
    G, T = phases.shape
    B = len(sequences)
    times = readout.sample_times()
    yb = phases.reshape(banks, B, -1)
    ob = np.broadcast_to(omega, (G, T)).reshape(banks, B, -1)
    sb = None if samples is None else samples.reshape(samples.shape[0], banks, B, -1)
    fused = sb is None and readout.response == "cosine" and fused_trig_is_numpys()
    if fused:  # draws and chain in one compiled call per block; the window's samples are never stored
        sqdt = np.sqrt(np.diff(np.concatenate([[0.0], times])))
        alpha = _alpha(readout)
        yc, ys = np.empty_like(yb), np.empty_like(yb)

        def read_blocks(first, step):
            with _scratch(readout.n_samples, yb.shape[-1]) as buffers:  # one set per thread for its blocks
                for block in range(first, banks * B, step):
                    bank, b = divmod(block, B)
                    rng = sequence_rng(seed, PURPOSE["readout"], int(sequences[b]), bank)
                    sg = sigma if np.ndim(sigma) == 0 else np.reshape(sigma, (banks, B, -1))[bank, b]
                    _fused_channels(readout, yb[bank, b], ob[bank, b], sg, times, sqdt, alpha, rng, yc[bank, b],
                                    ys[bank, b], buffers)

        _each_worker(read_blocks, banks * B)
        # the ADC and the inversion are elementwise: one NumPy pass over all blocks gives each block's bits
        return readout.invert(readout.convert(yc), readout.convert(ys)).reshape(G, T)

    meas = np.empty_like(yb)

    def read(block):
        bank, b = divmod(block, B)
        rng = sequence_rng(seed, PURPOSE["readout"], int(sequences[b]), bank)
        sg = sigma if np.ndim(sigma) == 0 else np.reshape(sigma, (banks, B, -1))[bank, b]
        smp = free_running_samples(yb[bank, b], ob[bank, b], sg, times, rng) if sb is None else sb[:, bank, b]
        meas[bank, b] = readout.measure_samples(smp, rng if readout.noise_rad > 0 else None)

    _each_block(read, banks * B)
    return meas.reshape(G, T)


@functools.lru_cache(maxsize=1)
def fused_trig_is_numpys() -> bool:
    """Whether the compiled readout's cos/sin (libm, as Numba calls it) give NumPy's bits on this machine.

    NumPy calls libm for float64 cos/sin where it has no SIMD version of them, but uses its own vector code on
    some CPUs (e.g. AVX-512 builds with SVML): there the fused readout would change the last bits of every
    figure, so :func:`read_free_running` keeps the NumPy chain. Checked once per process on 4,096 probe phases."""
    x = np.random.default_rng(0).uniform(-40.0, 40.0, 4096)
    c, s = np.empty_like(x), np.empty_like(x)
    _cos_sin(x, c, s)
    return bool(np.array_equal(c, np.cos(x)) and np.array_equal(s, np.sin(x)))


@numba.njit(cache=True, nogil=True)
def _cos_sin(x, c, s):
    for i in range(x.shape[0]):
        c[i] = np.cos(x[i])
        s[i] = np.sin(x[i])


def _alpha(readout: PhaseReadout) -> float:
    """The low-pass's update factor α per sample (0 without a filter)."""
    if readout.bandwidth_fraction is None:
        return 0.0
    return 1.0 - math.exp(-2 * math.pi * readout.bandwidth_fraction * readout.averaging_cycles / readout.n_samples)


def _buffers(M: int, n: int):
    """Scratch for one block's normals: the free run's increments and the two channels' sampler noise, (M, n) each."""
    return np.empty((M, n)), np.empty((M, n)), np.empty((M, n))


_SCRATCH: dict = {}  # (M, n) -> scratch sets not in use (every use overwrites what it reads)
_SCRATCH_LOCK = threading.Lock()
_SCRATCH_SHAPES = 4  # shapes kept (a run has one; a benchmark a few)


@contextlib.contextmanager
def _scratch(M: int, n: int):
    """A scratch set of :func:`_buffers` for one thread, taken from a pool and given back after: fresh (M, n)
    arrays cost their page faults on every call (12 MB per thread per layer call of the 1M model). Each set is
    used by one thread at a time; the normals are written whole before they are read, so nothing carries over."""
    key = (M, n)
    with _SCRATCH_LOCK:
        free = _SCRATCH.get(key)
        bufs = free.pop() if free else None
    if bufs is None:
        bufs = _buffers(M, n)
    try:
        yield bufs
    finally:
        with _SCRATCH_LOCK:
            if key not in _SCRATCH and len(_SCRATCH) >= _SCRATCH_SHAPES:
                _SCRATCH.pop(next(iter(_SCRATCH)))  # the oldest shape
            free = _SCRATCH.setdefault(key, [])
            if len(free) < max(numba.get_num_threads(), 2):
                free.append(bufs)


def _fused_channels(readout: PhaseReadout, theta_end, omega, sigma, times, sqdt, alpha: float, rng, yc, ys,
                    buffers=None) -> None:
    """The averaged channels (yc, ys), written in place, of ``readout.average_channels(free_running_samples(theta_end,
    omega, sigma, times, rng), rng)`` of a cosine detector, to the bit, in one compiled call.

    The normals are drawn inside the compiled code from ``rng`` itself (Numba runs NumPy's ``Generator`` algorithms
    on the generator's own bit generator, whose state it advances: the same numbers, in the same order, as the
    NumPy calls: the free run's Brownian increments (M, n), then each channel's sampler noise (M, n)) into
    ``buffers`` (three (M, n) arrays, reused across blocks), and the chain runs per oscillator with the same
    operations in the same order (libm's cos, sin as NumPy calls them; the sums of the window in sample order,
    as NumPy reduces over a leading axis)."""
    n, M = theta_end.shape[0], times.shape[0]
    sig = np.ascontiguousarray(np.broadcast_to(np.asarray(sigma, dtype=np.float64), (n,)))
    noise = readout.sample_noise
    if noise > 0 and not readout.noise_rad > 0:
        raise ValueError("PhaseReadout needs an rng when noise_rad > 0")
    zp, zc, zs = _buffers(M, n) if buffers is None else buffers
    _draw_and_average(rng, np.ascontiguousarray(theta_end), np.ascontiguousarray(omega), sig, times, sqdt,
                      bool(np.any(sig > 0)), readout.bandwidth_fraction is not None, alpha, noise, noise > 0,
                      zp, zc, zs, yc, ys)


def _fused_read(readout: PhaseReadout, theta_end, omega, sigma, times, sqdt, alpha: float, rng) -> np.ndarray:
    """``readout.measure_samples(free_running_samples(theta_end, omega, sigma, times, rng), rng)`` of a cosine
    detector, to the bit (:func:`_fused_channels`, then the ADC and the inversion)."""
    n = theta_end.shape[0]
    yc, ys = np.empty(n), np.empty(n)
    _fused_channels(readout, theta_end, omega, sigma, times, sqdt, alpha, rng, yc, ys)
    return readout.invert(readout.convert(yc), readout.convert(ys))


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _fill_normals(rng, z):
    """z[k, i] = rng.standard_normal() in C order: the numbers ``rng.standard_normal(z.shape)`` returns."""
    for k in range(z.shape[0]):
        for i in range(z.shape[1]):
            z[k, i] = rng.standard_normal()


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _draw_and_average(rng, theta_end, omega, sig, t, sqdt, walk, filt, alpha, noise, sampler, zp, zc, zs, yc, ys):
    if walk:
        _fill_normals(rng, zp)
    if sampler:
        _fill_normals(rng, zc)
        _fill_normals(rng, zs)
    _averaged_channels(theta_end, omega, sig, t, sqdt, zp if walk else zp[:0], filt, alpha, noise,
                       zc if sampler else zc[:0], zs if sampler else zs[:0], yc, ys)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _averaged_channels(theta_end, omega, sig, t, sqdt, zp, filt, alpha, noise, zc, zs, yc, ys):
    n, M = theta_end.shape[0], t.shape[0]
    walk = zp.shape[0] > 0
    sampler = zc.shape[0] > 0
    for i in range(n):
        cum = 0.0
        pc = 0.0
        ps = 0.0
        ac = 0.0
        asum = 0.0
        for k in range(M):
            x = theta_end[i] + omega[i] * t[k]
            if walk:
                inc = sqdt[k] * zp[k, i]
                cum = inc if k == 0 else cum + inc
                x = x + sig[i] * cum
            c = np.cos(x)
            s = np.sin(x)
            if filt:
                pc = pc + alpha * (c - pc)
                ps = ps + alpha * (s - ps)
                c = pc
                s = ps
            if sampler:
                c = c + noise * zc[k, i]
                s = s + noise * zs[k, i]
            ac = c if k == 0 else ac + c
            asum = s if k == 0 else asum + s
        yc[i] = ac / M
        ys[i] = asum / M


def _each_block(fn, n_blocks: int) -> None:
    """``fn(i)`` for i < n_blocks on the engine's thread count (``numba.get_num_threads()``; NumPy's ufuncs and
    generators release the GIL on such arrays). Every block draws from its own stream and writes its own slice,
    so the numbers are those of a plain loop whatever the thread count."""
    def blocks(first, step):
        for i in range(first, n_blocks, step):
            fn(i)

    _each_worker(blocks, n_blocks)


def _each_worker(fn, n_blocks: int) -> None:
    """``fn(first, step)`` on min(numba.get_num_threads(), n_blocks) threads, thread t taking blocks t, t + n, ...
    (as the engine's group loop, on the engine's kept thread pool: :func:`oscsim.engine._loop.run_threads`): each
    thread keeps its own scratch across its blocks. Every block draws from its own stream and writes its own
    slice, so the numbers do not depend on the thread count."""
    from oscsim.engine._loop import run_threads

    run_threads(fn, max(1, min(numba.get_num_threads(), n_blocks)))


def readout_window_s(config, f0_hz: float) -> float:
    """Duration of the readout window [s]: ``readout.averaging_cycles`` / f₀ (Kuramoto chips; SSA chips
    average over ``ssa.averaging_cycles``, inside their on-time)."""
    return float(config.readout.averaging_cycles) / float(f0_hz)


def readout_energy_j(config, adc_fom_j_per_step: float, n_phases: float, analog_bits: int = 8) -> float:
    """ADC energy [J] of reading ``n_phases`` phases: 2 channels × FoM × 2**bits per phase (one conversion of
    each averaged channel); ``analog_bits`` is charged for an unquantised readout (assumed). The sampler and
    filter are assumed to draw negligible static power next to the oscillators, which run through the window
    and are charged there (Walden FoM: B. Murmann, ADC Performance Survey 1997-2024)."""
    bits = config.readout.bits or analog_bits
    return 2.0 * float(n_phases) * float(adc_fom_j_per_step) * 2.0**bits
