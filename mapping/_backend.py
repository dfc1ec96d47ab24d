"""Batched phase-network integration for the chip: the oscsim engine, with a pure-NumPy twin.

:func:`integrate_phase` is the one place where mapping calls the ODE/SDE engine. Every chip computation is
a batch of G independent networks of N oscillators (one attention layer = one call). ``backend="auto"``
is the engine; the NumPy stochastic Heun integrator below runs only when asked for (``backend="numpy"``):
it is the reference the engine path is tested against, never a silent fallback (a broken engine is an error).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PhaseResult", "integrate_phase", "engine_available", "coupling_rhs"]


@dataclass
class PhaseResult:
    """Result of :func:`integrate_phase`.

    Attributes
    ----------
    y_final : (G, N) unwrapped phases at t1 [rad].
    ts : (S,) saved times or None.
    ys : (S, G, N) saved phases or None.
    coherence : (G, N, N) time average of cos(θ_i − θ_j) over [t_start, t1], or None.
    backend : 'engine' or 'numpy'.
    """

    y_final: np.ndarray
    ts: np.ndarray | None = None
    ys: np.ndarray | None = None
    coherence: np.ndarray | None = None
    backend: str = "numpy"


def engine_available() -> bool:
    """Whether :mod:`oscsim.engine` imports (it is part of this package: False means a broken install)."""
    try:
        from oscsim.engine import PhaseNetwork, simulate  # noqa: F401
    except ImportError:
        return False
    return True


def coupling_rhs(theta, coupling, harmonics):
    """Σ_j C_ij H(θ_j − θ_i) for (G, N) phases and (G, N, N) couplings via matrix products (no N² trig).

    H(x) = Σ_m a_m sin(m x) + b_m cos(m x); for each m:
    Σ_j C_ij sin(m(θ_j − θ_i)) = cos mθ_i (C sin mθ)_i − sin mθ_i (C cos mθ)_i and
    Σ_j C_ij cos(m(θ_j − θ_i)) = cos mθ_i (C cos mθ)_i + sin mθ_i (C sin mθ)_i.
    """
    out = np.zeros_like(theta)
    for m, (a, b) in enumerate(harmonics, start=1):
        c, s = np.cos(m * theta), np.sin(m * theta)
        Cs = np.einsum("gij,gj->gi", coupling, s)
        Cc = np.einsum("gij,gj->gi", coupling, c)
        if a:
            out += a * (c * Cs - s * Cc)
        if b:
            out += b * (c * Cc + s * Cs)
    return out


def _numpy_normals(seed, shape):
    """Per-step normals (G, N): one generator for an int seed, one per group for per-group seeds."""
    if np.ndim(seed) == 0:
        rng = np.random.default_rng(int(seed))
        return lambda: rng.standard_normal(shape)
    rngs = [np.random.default_rng(int(s)) for s in np.asarray(seed).tolist()]
    return lambda: np.stack([r.standard_normal(shape[1]) for r in rngs])


def _numpy_heun(omega, coupling, harmonics, sigma, t1, n_steps, y0, seed, save_every, t_start):
    draw = _numpy_normals(seed, np.shape(y0))
    dt = t1 / n_steps
    y = np.array(y0, dtype=np.float64, copy=True)
    G, N = y.shape
    sig = np.broadcast_to(np.asarray(sigma, dtype=float), y.shape) if np.any(np.asarray(sigma) > 0) else None

    def f(th):
        return omega + coupling_rhs(th, coupling, harmonics)

    ts, ys = ([0.0], [y.copy()]) if save_every else (None, None)
    coh = np.zeros((G, N, N)) if t_start is not None else None
    n_avg = 0
    start_step = None if t_start is None else int(np.ceil(t_start / dt - 1e-9))
    for k in range(n_steps):
        dW = sig * draw() * np.sqrt(dt) if sig is not None else 0.0
        f0 = f(y)
        yp = y + f0 * dt + dW
        y = y + 0.5 * (f0 + f(yp)) * dt + dW
        if save_every and (k + 1) % save_every == 0:
            ts.append((k + 1) * dt)
            ys.append(y.copy())
        if coh is not None and k + 1 > start_step:
            c, s = np.cos(y), np.sin(y)
            coh += c[:, :, None] * c[:, None, :] + s[:, :, None] * s[:, None, :]
            n_avg += 1
    if coh is not None:
        coh /= max(n_avg, 1)
    return PhaseResult(y_final=y, ts=None if ts is None else np.asarray(ts), ys=None if ys is None else np.stack(ys),
                       coherence=coh, backend="numpy")


def _engine(omega, coupling, harmonics, sigma, t1, n_steps, y0, seed, save_every, t_start):
    from oscsim import engine as E

    h = np.asarray(harmonics, dtype=float)
    pure_sine = h.shape[0] == 1 and h[0, 1] == 0 and h[0, 0] == 1
    sig = np.asarray(sigma, dtype=float)
    noisy = bool(np.any(sig > 0))
    model = E.PhaseNetwork(omega, coupling, harmonics=None if pure_sine else h, sigma=sig if sig.ndim else float(sig))
    solver = E.StochasticHeun() if noisy else E.Heun()
    dt = t1 / n_steps
    if t_start is not None:
        save = E.SaveSummary(t_start=t_start)
    elif save_every:
        save = E.SaveEvery(save_every)
    else:
        save = E.SaveAt(np.array([t1]))
    sol = E.simulate(model, solver, 0.0, t1, dt, y0, save=save, seed=seed)
    res = PhaseResult(y_final=np.asarray(sol.y_final), backend="engine")
    if t_start is not None:
        res.coherence = np.asarray(sol.coherence)
    elif save_every:
        res.ts, res.ys = np.asarray(sol.ts), np.asarray(sol.ys)
    return res


def integrate_phase(omega, coupling, y0, *, t1, n_steps, harmonics=((1.0, 0.0),), sigma=0.0, seed=0,
                    save_every: int | None = None, t_start: float | None = None, backend: str = "auto") -> PhaseResult:
    """Integrate G phase networks dθ_i = [ω_i + Σ_j C_ij H(θ_j − θ_i)] dt + σ_i dW_i from 0 to t1.

    Parameters
    ----------
    omega : (G, N) float [rad per time unit].
    coupling : (G, N, N) float [rad per time unit]; row i receives.
    y0 : (G, N) initial phases [rad].
    t1 : float
        End time (time unit: cycles in mapping).
    n_steps : int
        Fixed steps of stochastic Heun (Heun when σ = 0).
    harmonics : (M, 2)
        (a_m, b_m) of H.
    sigma : float or (G, N)
        Additive noise intensity [rad / sqrt(time unit)].
    seed : int or (G,) uint64
        An int: one run seed (group g's stream from (seed, g)). An array: one stream seed per group (the
        group's noise is then independent of its position in the batch; see :mod:`mapping.seeds`).
    save_every : int, optional
        Save the trajectory every k steps.
    t_start : float, optional
        Accumulate the coherence ⟨cos(θ_i − θ_j)⟩ over [t_start, t1] (no trajectory).
    backend : {'auto', 'engine', 'numpy'}
        'auto' and 'engine': :mod:`oscsim.engine` (an engine failure raises); 'numpy': the NumPy reference.
    """
    omega = np.ascontiguousarray(omega, dtype=np.float64)
    coupling = np.ascontiguousarray(coupling, dtype=np.float64)
    y0 = np.ascontiguousarray(y0, dtype=np.float64)
    if backend not in ("auto", "engine", "numpy"):
        raise ValueError(f"backend must be 'auto', 'engine' or 'numpy', got {backend!r}")
    if np.ndim(seed) == 0:
        seed = int(seed)
    else:
        seed = np.asarray(seed, dtype=np.uint64)
        if seed.shape != (y0.shape[0],):
            raise ValueError(f"seed: per-group seeds must have shape ({y0.shape[0]},), got {seed.shape}")
    args = (omega, coupling, np.asarray(harmonics, dtype=float), sigma, float(t1), int(n_steps), y0, seed,
            save_every, t_start)
    if backend == "numpy":
        return _numpy_heun(*args)
    return _engine(*args)
