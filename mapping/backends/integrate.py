"""Batched phase-network integration for the chip backends: the one door to :mod:`oscsim.engine`.

:func:`integrate_phase` is the one place where the phase backends call the ODE/SDE engine. Every chip
computation is a batch of G independent networks of N oscillators (one attention layer = one call).
``backend="auto"`` is the engine; ``backend="numpy"`` runs :func:`oscsim.reference.simulate_numpy` (the
engine's own NumPy reference, N² trigonometric calls) on the engine's Brownian increments of the same
streams, so it reproduces an engine run to rounding: the reference the engine path is tested against, never a
silent fallback (a broken engine is an error). The other doors are the complex-amplitude networks of
:mod:`mapping.backends.stno` and the circuit networks of :mod:`hw_models.coupled_rings`, each through its own
engine model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PhaseResult", "CouplingFactors", "integrate_phase", "integrate_phase_product", "engine_available"]


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


@dataclass(frozen=True)
class CouplingFactors:
    """A (G, N, N) coupling by its factors: C[g] = (base[base_index[g]] · row_gain[g][:, None]) · elem[elem_index[g]].

    A chip layer's networks share a few matrices (the programmed couplers of a (sequence, head)) scaled per row
    (receive gains) and per entry (coupler mismatch of a (bank, head, coordinate)); see
    :func:`oscsim.engine._coupling.coupling_product`, which writes C from them in one pass.

    Attributes
    ----------
    base : (K, N, N); base_index : (G,) int
    row_gain : (G, N)
    elem : (L, N, N) or None; elem_index : (G,) int or None
    """

    base: np.ndarray
    base_index: np.ndarray
    row_gain: np.ndarray
    elem: np.ndarray | None = None
    elem_index: np.ndarray | None = None

    def dense(self, out=None) -> np.ndarray:
        """C (G, N, N), the same bits the engine integrates."""
        from oscsim.engine._coupling import coupling_product

        return coupling_product(self.base, self.base_index, self.row_gain, self.elem, self.elem_index, out=out)[0]


def engine_available() -> bool:
    """Whether :mod:`oscsim.engine` imports (it is part of this package: False means a broken install)."""
    try:
        from oscsim.engine import PhaseNetwork, simulate  # noqa: F401
    except ImportError:
        return False
    return True


def _reference(omega, coupling, harmonics, sigma, t1, n_steps, y0, seed, save_every, t_start):
    """The NumPy reference (oscsim.reference) with the engine's Brownian increments of the same streams."""
    from oscsim import engine as E
    from oscsim.engine.rng import brownian_increments
    from oscsim.reference import simulate_numpy

    G, N = y0.shape
    sig = np.asarray(sigma, dtype=float)
    noisy = bool(np.any(sig > 0))
    net = E.PhaseNetwork(omega, coupling, harmonics=harmonics, sigma=sig if sig.ndim else float(sig))
    dt = t1 / n_steps
    dW = None
    if noisy:  # group g's stream: (seed, g) for an int seed, (seed[g], 0) per group (as the engine seeds it)
        if np.ndim(seed) == 0:
            dW = brownian_increments(int(seed), G, N, n_steps, dt)[0]
        else:
            dW = np.concatenate([brownian_increments(int(s), 1, N, n_steps, dt)[0] for s in seed], axis=1)
    ys = simulate_numpy(net, "stochastic_heun" if noisy else "heun", 0.0, dt, n_steps, y0, dW=dW)
    res = PhaseResult(y_final=ys[-1], backend="numpy")
    if t_start is not None:  # the step-sampled mean of cos(θ_i − θ_j) after t_start
        start = int(np.ceil(t_start / dt - 1e-9))
        c, s = np.cos(ys[start + 1:]), np.sin(ys[start + 1:])
        res.coherence = (np.einsum("sgi,sgj->gij", c, c) + np.einsum("sgi,sgj->gij", s, s)) / max(len(c), 1)
    elif save_every:
        res.ts = dt * np.arange(0, n_steps + 1, save_every)
        res.ys = ys[::save_every]
    return res


def _pure_sine(h) -> bool:
    return h.shape[0] == 1 and h[0, 1] == 0 and h[0, 0] == 1


def _engine(omega, coupling, harmonics, sigma, t1, n_steps, y0, seed, save_every, t_start, model=None):
    from oscsim import engine as E

    h = np.asarray(harmonics, dtype=float)
    sig = np.asarray(sigma, dtype=float)
    noisy = bool(np.any(sig > 0))
    if model is None:
        model = E.PhaseNetwork(omega, coupling, harmonics=None if _pure_sine(h) else h,
                               sigma=sig if sig.ndim else float(sig))
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
    n_steps : int or (G,) int
        Fixed steps of stochastic Heun (Heun when σ = 0); per group (with per-group seeds, no trajectory) when
        the groups need their own steps.
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
        'auto' and 'engine': :mod:`oscsim.engine` (an engine failure raises); 'numpy': the NumPy reference
        (:func:`oscsim.reference.simulate_numpy` on the engine's Brownian increments).
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
    run = _reference if backend == "numpy" else _engine
    h = np.asarray(harmonics, dtype=float)
    if np.ndim(n_steps) == 0:
        return run(omega, coupling, h, sigma, float(t1), int(n_steps), y0, seed, save_every, t_start)
    if save_every:
        raise ValueError("save_every: a trajectory needs one step count for all groups (n_steps an int)")
    return _per_group_steps(run, omega, coupling, h, sigma, float(t1), np.asarray(n_steps), y0, seed, t_start)


def integrate_phase_product(omega, factors: CouplingFactors, y0, *, t1, n_steps: int, harmonics=((1.0, 0.0),),
                            sigma=0.0, seed=0, save_every: int | None = None, backend: str = "auto",
                            workspace: dict | None = None) -> PhaseResult:
    """:func:`integrate_phase` with the coupling given by its factors (:class:`CouplingFactors`): the same numbers
    to the bit, without building the (G, N, N) coupling in NumPy.

    The engine path hands the factors to the engine, whose group loop writes each group's C (and its column
    bounds) into that group's scratch before its first step, where it stays in cache
    (:func:`oscsim.engine.with_coupling_factors`): the (G, N, N) array is never written.
    ``workspace``: a dict kept by the caller across calls of one layer (a run's windows and batches): the model
    packed once lives there. ``backend="numpy"`` materialises C and runs the reference.
    """
    if backend not in ("auto", "engine", "numpy"):
        raise ValueError(f"backend must be 'auto', 'engine' or 'numpy', got {backend!r}")
    if backend == "numpy":
        return integrate_phase(omega, factors.dense(), y0, t1=t1, n_steps=n_steps, harmonics=harmonics, sigma=sigma,
                               seed=seed, save_every=save_every, backend=backend)
    from oscsim import engine as E

    omega = np.ascontiguousarray(omega, dtype=np.float64)
    y0 = np.ascontiguousarray(y0, dtype=np.float64)
    G, N = y0.shape
    seed = int(seed) if np.ndim(seed) == 0 else np.asarray(seed, dtype=np.uint64)
    if np.ndim(seed) and seed.shape != (G,):
        raise ValueError(f"seed: per-group seeds must have shape ({G},), got {seed.shape}")
    h = np.asarray(harmonics, dtype=float)
    sig = np.asarray(sigma, dtype=float)
    ws = {} if workspace is None else workspace
    key = (N, h.tobytes())
    if ws.get("key") != key:  # packed once per layer (harmonics and N fixed), reused by every later call
        for k in ("key", "packed", "elem_max_abs"):  # this function's entries only (the caller keeps others)
            ws.pop(k, None)
        ws["key"] = key
        ws["packed"] = E.PhaseNetwork(np.zeros((1, N)), np.zeros((1, N, N)),
                                      harmonics=None if _pure_sine(h) else h).pack()
    emax = None
    if factors.elem is not None and not factors.elem.flags.writeable:  # a layer's constant mismatch: checked once
        kept = ws.get("elem_max_abs")
        if kept is None or kept[0] is not factors.elem:
            from oscsim.engine.phase_factored import max_abs

            peak, finite = max_abs(factors.elem)
            if not finite:
                from oscsim.engine._checks import check_finite

                check_finite("elem", factors.elem)  # the message with the first bad index
            kept = ws["elem_max_abs"] = (factors.elem, peak)
        emax = kept[1]
    model = E.with_coupling_factors(ws["packed"], factors.base, factors.base_index, factors.row_gain, factors.elem,
                                    factors.elem_index, omega=omega,
                                    sigma=sig if sig.ndim else np.full((1, N), float(sig)), elem_max_abs=emax)
    return _engine(omega, None, h, sigma, float(t1), int(n_steps), y0, seed, save_every, None, model=model)


def _per_group_steps(run, omega, coupling, h, sigma, t1, n_steps, y0, seed, t_start) -> PhaseResult:
    """:func:`integrate_phase` with each group's own number of steps: the groups of equal count share one
    call (a group's numbers are those of the same group run alone, as its seed and coupling bounds are its
    own), the results are put back in place."""
    G = y0.shape[0]
    if n_steps.shape != (G,) or not np.issubdtype(n_steps.dtype, np.integer) or np.any(n_steps < 1):
        raise ValueError(f"n_steps: per-group step counts must be integers >= 1 of shape ({G},), got "
                         f"{n_steps.dtype} {n_steps.shape}")
    if np.ndim(seed) == 0:
        raise ValueError("n_steps: per-group step counts need per-group seeds (an int seed keys the streams on "
                         "the group's position in the call)")
    sig = np.asarray(sigma, dtype=float)
    res = PhaseResult(y_final=np.empty_like(y0), coherence=None if t_start is None else np.empty(coupling.shape))
    for n in np.unique(n_steps):
        g = np.flatnonzero(n_steps == n)
        r = run(omega[g], coupling[g], h, sig[g] if sig.ndim else sigma, t1, int(n), y0[g], seed[g], None, t_start)
        res.y_final[g], res.backend = r.y_final, r.backend
        if t_start is not None:
            res.coherence[g] = r.coherence
    return res
