"""`simulate`: the one verb of the engine."""

from __future__ import annotations

import numbers
import time
from dataclasses import dataclass

import numpy as np

from ._loop import get_adaptive_loop, get_fixed_loop, run_groups
from .custom_ode import CustomODE
from .phase_factored import FactoredPhaseNetwork
from .phase_network import PackedPhaseNetwork, PhaseNetwork
from .saving import SaveAt, SaveEvery, SaveSummary
from .solution import SimulationError, Solution
from .solvers.base import Solver
from .stuart_landau import StuartLandauNetwork

__all__ = ["simulate"]

_MODELS = (PhaseNetwork, PackedPhaseNetwork, FactoredPhaseNetwork, StuartLandauNetwork, CustomODE)
_SAVES = (SaveEvery, SaveAt, SaveSummary)
_OPTIONS = ("save", "seed", "brownian_substeps", "backend", "coupling_product")
_BACKENDS = ("cpu", "cuda")
_PRODUCTS = ("auto", "kernel", "gemm")


def _real_scalar(name, v) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise ValueError(f"{name}: must be a real number, got {v!r}")
    v = float(v)
    if not np.isfinite(v):
        raise ValueError(f"{name}: must be finite, got {v!r}")
    return v


def _readonly(x):
    if isinstance(x, np.ndarray):
        v = np.ascontiguousarray(x).view()
        v.setflags(write=False)
        return v
    return x


def _group_seeds(seed, G: int) -> np.ndarray:
    """(G, 2) uint64 (seed, stream key) of every group: (seed, g) for an int seed, (seed[g], 0) per group."""
    out = np.empty((G, 2), dtype=np.uint64)
    if seed is None or (isinstance(seed, numbers.Integral) and not isinstance(seed, bool)):
        s = 0 if seed is None else int(seed)
        if not 0 <= s < 2**64:
            raise ValueError(f"seed: must be an integer in [0, 2**64), got {seed!r}")
        out[:, 0] = np.uint64(s)
        out[:, 1] = np.arange(G, dtype=np.uint64)
        return out
    if isinstance(seed, (bool, float, str)):
        raise ValueError(f"seed: must be an integer in [0, 2**64) or one such integer per group, got {seed!r}")
    arr = np.asarray(seed)
    if arr.shape != (G,) or not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == object):
        raise ValueError(f"seed: per-group seeds must be an integer array of shape ({G},), got shape {arr.shape} "
                         f"dtype {arr.dtype}")
    if arr.dtype == object:  # Python ints: checked one by one
        vals = [int(x) for x in arr.tolist()]
        if any(not 0 <= v < 2**64 for v in vals):
            raise ValueError("seed: per-group seeds must be integers in [0, 2**64)")
        out[:, 0] = np.array(vals, dtype=np.uint64)
    else:  # an integer array (what chip inference passes): no Python loop over groups
        if np.issubdtype(arr.dtype, np.signedinteger) and G and arr.min() < 0:
            raise ValueError("seed: per-group seeds must be integers in [0, 2**64)")
        out[:, 0] = arr.astype(np.uint64)
    out[:, 1] = np.uint64(0)
    return out


def simulate(model, solver, t0, t1, dt, y0, *, save=None, seed=None, brownian_substeps=1, backend="cpu",
             coupling_product="auto", **unknown) -> Solution:
    r"""Integrate G independent oscillator networks from t0 to t1.

    Parameters
    ----------
    model : PhaseNetwork, PackedPhaseNetwork, StuartLandauNetwork or CustomODE
        A `PhaseNetwork` is packed once (`PhaseNetwork.pack`, kept on the object), so running the same
        model again, or a `PackedPhaseNetwork` with new arrays (`PackedPhaseNetwork.with_arrays`), does not
        repeat the packing.
    solver : Solver
        `EulerMaruyama`, `StochasticHeun`, `SRA1` (noise allowed), `RK4`, `Heun`, `Dopri5`
        (deterministic only).
    t0, t1 : float
        Start and end times [time units], t1 > t0.
    dt : float
        Step [time units], > 0 (the first trial step for `Dopri5`). If (t1 − t0)/dt is not an integer
        the last step is shortened to end at t1.
    y0 : array_like, shape (G, N) or (G, D)
        Initial state: float64 phases [rad] (`PhaseNetwork`), complex128 amplitudes
        (`StuartLandauNetwork`), float64 states (`CustomODE`). A 1-D array is one group.
    save : SaveEvery, SaveAt or SaveSummary, optional
        Default ``SaveEvery(1)``.
    seed : int or array_like of int, shape (G,), optional
        Seed of the noise (>= 0). Required when the model has noise. With an int, group g draws from streams
        seeded by (seed, g), so results are bit-identical whatever the number of threads. With one seed per
        group, group g draws from streams seeded by ``seed[g]`` alone: its noise no longer depends on its
        position in the batch (how chip inference makes a sequence's noise independent of the batch size).
    brownian_substeps : int
        m >= 1: the Brownian path is drawn on the grid dt/m and summed (with its area integrals), so a run
        with (dt, m) and one with (dt/m, 1) see the same path: this is how strong convergence is measured.
    backend : {"cpu", "cuda"}
        "cpu" (default): the Numba kernels on ``numba.get_num_threads()`` threads. "cuda": a phase network
        (`PhaseNetwork` / `PackedPhaseNetwork`) with `EulerMaruyama`, `StochasticHeun`, `Heun` or `RK4` on
        the GPU (Numba CUDA; ``NUMBA_ENABLE_CUDASIM=1`` runs it on the CPU simulator). Never chosen
        silently, and no fallback: without a GPU it raises. Its noise comes from other streams (Philox)
        than the CPU path's, so the same seed gives the same statistics, not the same path; deterministic
        runs agree with the CPU path to rounding (docs/engine.md, "GPU").
    coupling_product : {"auto", "kernel", "gemm"}
        How the CPU path forms the coupling sums of a phase network. "kernel": the compiled per-group loop.
        "gemm": all groups in lock step, the coupling products of all groups as one BLAS matrix product per
        drift evaluation (`oscsim.engine._gemm`): for G groups that share one (N, N) coupling, without phase
        lags, with `EulerMaruyama`, `StochasticHeun`, `Heun` or `RK4`; the same noise and sin/cos values, the
        sums in another order, so the same numbers to rounding (docs/engine.md, "Shared coupling"). "auto"
        (default): "gemm" where it applies and N >= `oscsim.engine._gemm.GEMM_MIN_N`, else "kernel"; the choice
        never depends on G, so a group's numbers do not depend on the batch. ``stats["coupling_product"]``
        says which ran.

    Returns
    -------
    Solution

    Raises
    ------
    ValueError
        Bad shapes, NaN/inf, negative noise, dt <= 0, noise with a deterministic solver, unknown options, a
        model/solver/save the chosen backend does not implement.
    RuntimeError
        ``backend="cuda"`` where no CUDA GPU (nor the simulator) is available.
    SimulationError
        The state became NaN/inf; names the time and the group.

    Examples
    --------
    >>> import numpy as np
    >>> from oscsim.engine import simulate, PhaseNetwork, EulerMaruyama, SaveSummary
    >>> net = PhaseNetwork(omega=np.zeros(3), coupling=np.ones((3, 3)), sigma=0.1)
    >>> sol = simulate(net, EulerMaruyama(), 0.0, 10.0, 0.01, np.zeros((2, 3)), save=SaveSummary(), seed=1)
    >>> sol.y_final.shape
    (2, 3)
    """
    model_name = type(model).__name__
    model, solver, save, t0, t1, dt = _checked_options(model, solver, save, t0, t1, dt, brownian_substeps, backend,
                                                       unknown)
    product = _coupling_product(model, solver, coupling_product, backend)
    ystate, seed_u = _checked_state(model, solver, y0, seed)
    G = ystate.shape[0]

    # read-only views of every parameter array and fresh writable state arrays: stable Numba signatures,
    # so the disk-cached kernels are reused whatever flags the caller's arrays had
    P = tuple(_readonly(p) for p in model._params())
    ystate = np.array(ystate, dtype=np.float64, order="C")
    drift = model._make_drift()
    model_key = model._kernel_key()
    stats = {"solver": type(solver).__name__, "model": model_name, "n_groups": G, "backend": backend,
             "coupling_product": product}

    if solver.adaptive:
        return _run_adaptive(model, solver, t0, t1, dt, ystate, save, P, drift, model_key, stats)
    n_steps, h_last, tgrid, save_steps, ts_out = _fixed_grid(t0, t1, dt, save)
    out = _Outputs.empty(model, save, t0, t1, dt, n_steps, G, save_steps.size)
    noisy = model.is_stochastic
    sig = np.array(model._noise_rows(), dtype=np.float64, order="C") if noisy else np.zeros((1, ystate.shape[1]))
    if backend == "cuda":
        from ._cuda import run_fixed

        tic = time.perf_counter()
        stats.update(run_fixed(model, solver, P, ystate, t0, dt, n_steps, h_last, tgrid, sig, noisy, seed_u,
                               brownian_substeps, save_steps, out.ys, out.summ_on, out.summ_start, out.summ_every,
                               out.mean_re, out.mean_im, out.coh, out.n_summ, out.yfin, out.fail_step, out.fail_t))
        stats["wall_time_s"] = time.perf_counter() - tic
    elif product == "gemm":
        from ._gemm import run_fixed_gemm

        tic = time.perf_counter()
        stats.update(run_fixed_gemm(model, solver, P, ystate, t0, dt, n_steps, h_last, tgrid, sig, noisy, seed_u,
                                    brownian_substeps, save_steps, out))
        stats["wall_time_s"] = time.perf_counter() - tic
    else:
        loop = get_fixed_loop(model_key, drift, model._phases(), solver, model._prepare())
        tic = time.perf_counter()
        run_groups(loop, G, (
            ystate, t0, dt, np.int64(n_steps), h_last, tgrid, P, sig, noisy, bool(solver.needs_area and noisy),
            seed_u, np.int64(brownian_substeps), np.int64(model._work_size()), np.int64(max(solver.n_stages, 1)),
            save_steps, out.ys, out.summ_on, np.int64(out.summ_start), np.int64(out.summ_every), out.mean_re,
            out.mean_im, out.coh, out.n_summ, out.yfin, out.fail_step, out.fail_t))
        stats["wall_time_s"] = time.perf_counter() - tic
    stats["n_steps"] = n_steps
    return out.solution(model, save, ts_out, stats)


def _checked_options(model, solver, save, t0, t1, dt, brownian_substeps, backend, unknown):
    """`simulate`'s options checked: (the engine model, solver, save, t0, t1, dt)."""
    if unknown:
        raise ValueError(
            f"simulate: unknown option(s) {sorted(unknown)}; the options are {', '.join(_OPTIONS)}"
        )
    if not isinstance(model, _MODELS):
        raise ValueError(f"model: expected one of {[m.__name__ for m in _MODELS]}, got {type(model).__name__}")
    model = model._engine_model()
    if not isinstance(solver, Solver):
        raise ValueError(f"solver: expected a solver instance (e.g. EulerMaruyama()), got {solver!r}")
    if save is None:
        save = SaveEvery(1)
    if not isinstance(save, _SAVES):
        raise ValueError(f"save: expected one of {[s.__name__ for s in _SAVES]}, got {save!r}")
    t0 = _real_scalar("t0", t0)
    t1 = _real_scalar("t1", t1)
    dt = _real_scalar("dt", dt)
    if dt <= 0:
        raise ValueError(f"dt: must be > 0, got {dt!r}")
    if not t1 > t0:
        raise ValueError(f"t1: must be > t0 = {t0!r}, got {t1!r}")
    if isinstance(brownian_substeps, bool) or not isinstance(brownian_substeps, numbers.Integral) or brownian_substeps < 1:
        raise ValueError(f"brownian_substeps: must be an integer >= 1, got {brownian_substeps!r}")
    if backend not in _BACKENDS:
        raise ValueError(f"backend: must be one of {', '.join(map(repr, _BACKENDS))}, got {backend!r}")
    if backend == "cuda":
        _check_cuda_support(model, solver)

    return model, solver, save, t0, t1, dt


def _coupling_product(model, solver, choice, backend) -> str:
    """Which coupling product runs ("kernel" or "gemm"; see `simulate`'s ``coupling_product``)."""
    if choice not in _PRODUCTS:
        raise ValueError(f"coupling_product: must be one of {', '.join(map(repr, _PRODUCTS))}, got {choice!r}")
    if choice == "kernel":
        return "kernel"
    from ._gemm import GEMM_MIN_N, gemm_refusal

    why = "runs on the CPU only (backend='cpu')" if backend != "cpu" else gemm_refusal(model, solver)
    if choice == "gemm":
        if why is not None:
            raise ValueError(f"coupling_product='gemm': {why}; use 'kernel' or 'auto'")
        return "gemm"
    return "gemm" if why is None and model._state_dim() >= GEMM_MIN_N else "kernel"


def _checked_state(model, solver, y0, seed):
    """The (G, D) initial state and the (G, 2) seeds of `simulate`, checked against the model and solver."""
    y0 = np.asarray(y0)
    if y0.dtype == object or not np.issubdtype(y0.dtype, np.number):
        raise ValueError(f"y0: must be a numeric array, got dtype {y0.dtype}")
    if y0.ndim == 1:
        y0 = y0[None]
    if y0.ndim != 2:
        raise ValueError(f"y0: expected shape (G, N), got {y0.shape}")
    ystate = model._to_state(y0)
    D = model._state_dim()
    if ystate.shape[1] != D:
        raise ValueError(f"y0: has {y0.shape[1]} components per group but the model has {model._user_dim()}"
                         if hasattr(model, "_user_dim") else
                         f"y0: has {y0.shape[1]} components per group but the model has {D}")
    G = ystate.shape[0]
    if model.n_groups not in (1, G):
        raise ValueError(f"y0: has {G} groups but the model's parameters are given for {model.n_groups} groups")
    if not np.all(np.isfinite(ystate)):
        raise ValueError("y0: contains NaN or inf")

    noisy = model.is_stochastic
    if noisy and not solver.is_stochastic:
        raise ValueError(
            f"solver: {type(solver).__name__} is deterministic but the model has noise (sigma > 0); "
            "use EulerMaruyama, StochasticHeun or SRA1, or set sigma=0"
        )
    if noisy and seed is None:
        raise ValueError("seed: the model has noise, so give an explicit integer seed (>= 0)")
    seed_u = _group_seeds(seed, G)
    return ystate, seed_u


def _fixed_grid(t0, t1, dt, save):
    """The fixed-step grid of a run: (n_steps, the last step's length h_last, the explicit grid ``tgrid`` (empty
    unless `SaveAt` adds its times), the steps after which the state is saved, their times)."""
    span = t1 - t0
    r = span / dt
    n_round = int(round(r))
    if n_round >= 1 and abs(r - n_round) <= 1e-9 * max(1.0, r):
        n_steps = n_round
    else:
        n_steps = int(np.ceil(r))
    h_last = span - (n_steps - 1) * dt
    tgrid = np.zeros(0)
    if isinstance(save, SaveAt):
        ts = save.ts
        if ts[0] < t0 - 1e-12 * max(1.0, abs(t0)) or ts[-1] > t1 + 1e-12 * max(1.0, abs(t1)):
            raise ValueError(f"SaveAt.ts: times must lie in [t0, t1] = [{t0}, {t1}], got [{ts[0]}, {ts[-1]}]")
        grid = t0 + dt * np.arange(n_steps + 1, dtype=np.float64)
        grid[-1] = t1
        tol = 1e-9 * dt
        keep = np.ones(grid.size, bool)
        for t in ts:  # grid points within tol of a requested time are replaced by it
            keep &= np.abs(grid - t) > tol
        tgrid = np.unique(np.concatenate([grid[keep], ts, [t0, t1]]))
        tgrid = tgrid[(tgrid >= t0) & (tgrid <= t1)]
        n_steps = tgrid.size - 1
        save_steps = np.searchsorted(tgrid, ts).astype(np.int64)
        ts_out = ts.copy()
    elif isinstance(save, SaveEvery):
        steps = np.arange(0, n_steps + 1, save.k, dtype=np.int64)
        if steps[-1] != n_steps:
            steps = np.append(steps, n_steps)
        save_steps = steps
        ts_out = t0 + dt * steps.astype(np.float64)
        ts_out[-1] = t1 if steps[-1] == n_steps else ts_out[-1]
    else:
        save_steps = np.zeros(0, dtype=np.int64)
        ts_out = np.zeros(0)
    return n_steps, h_last, tgrid, save_steps, ts_out


@dataclass
class _Outputs:
    """The arrays a fixed-step loop fills in place (saved states, summary sums, final states, failures)."""

    summ_on: bool
    summ_start: int
    summ_every: int
    mean_re: np.ndarray
    mean_im: np.ndarray
    coh: np.ndarray
    n_summ: np.ndarray
    ys: np.ndarray
    yfin: np.ndarray
    fail_step: np.ndarray
    fail_t: np.ndarray

    @classmethod
    def empty(cls, model, save, t0, t1, dt, n_steps, G, n_saves):
        summ_on = isinstance(save, SaveSummary)
        nph = model._n_phases() if summ_on else 0
        summ_start = 0
        summ_every = 1
        if summ_on:
            ts_start = t0 if save.t_start is None else save.t_start
            if not t0 - 1e-12 * max(1.0, abs(t0)) <= ts_start <= t1:
                raise ValueError(f"SaveSummary.t_start: must lie in [t0, t1] = [{t0}, {t1}], got {ts_start}")
            summ_start = min(int(np.ceil((ts_start - t0) / dt - 1e-9)), n_steps)
            summ_every = save.every
        D = model._state_dim()
        return cls(summ_on=summ_on, summ_start=summ_start, summ_every=summ_every, mean_re=np.zeros((G, nph)),
                   mean_im=np.zeros((G, nph)),
                   coh=np.zeros((G, nph, nph)) if (summ_on and nph and save.coherence) else np.zeros((G, 0, 0)),
                   n_summ=np.zeros(G, dtype=np.int64), ys=np.zeros((n_saves, G, D)), yfin=np.empty((G, D)),
                   fail_step=np.full(G, -1, dtype=np.int64), fail_t=np.zeros(G))

    def solution(self, model, save, ts_out, stats) -> Solution:
        """The `Solution` of the filled arrays; raises `SimulationError` naming the first group that failed."""
        G = self.yfin.shape[0]
        failed = np.flatnonzero(self.fail_step >= 0)
        if failed.size:
            fail_t = self.fail_t
            g0 = int(failed[np.argmin(fail_t[failed])])
            raise SimulationError(
                f"simulate: the state of group {g0} became NaN/inf at t = {fail_t[g0]:.6g} (step "
                f"{self.fail_step[g0]}); {failed.size} of {G} groups failed. Reduce dt, or check the coupling/noise "
                "scale.",
                time=float(fail_t[g0]), group=g0, groups=[int(g) for g in failed],
            )
        mean_exp = coherence = None
        nph = self.mean_re.shape[1]
        if self.summ_on and nph:
            cnt = np.maximum(self.n_summ, 1)[:, None]
            mean_exp = (self.mean_re + 1j * self.mean_im) / cnt
            if save.coherence:
                coh = self.coh
                coh /= cnt[:, :, None]
                iu = np.triu_indices(nph, 1)
                coh[:, iu[1], iu[0]] = coh[:, iu[0], iu[1]]
                coherence = coh
            stats["n_samples"] = int(self.n_summ[0])
        return Solution(
            ts=ts_out,
            ys=None if self.summ_on else model._from_state(self.ys),
            y_final=model._from_state(self.yfin),
            mean_exp=mean_exp,
            coherence=coherence,
            stats=stats,
        )


def _check_cuda_support(model, solver) -> None:
    """What ``backend="cuda"`` implements: phase networks with the fixed-step methods below."""
    from ._cuda import SOLVER_CODES, cuda_available

    if not isinstance(model, PackedPhaseNetwork):
        raise ValueError(f"backend='cuda': runs PhaseNetwork / PackedPhaseNetwork models, not {type(model).__name__}; "
                         "use backend='cpu'")
    if type(solver).__name__ not in SOLVER_CODES:
        raise ValueError(f"backend='cuda': implements {', '.join(SOLVER_CODES)}, not {type(solver).__name__}; "
                         "use backend='cpu'")
    ok, why = cuda_available()
    if not ok:
        raise RuntimeError(f"backend='cuda': {why}")


def _run_adaptive(model, solver, t0, t1, dt, ystate, save, P, drift, model_key, stats):
    if isinstance(save, SaveSummary):
        raise ValueError("save: SaveSummary needs a fixed-step solver; with Dopri5 use SaveEvery or SaveAt")
    G, D = ystate.shape
    if isinstance(save, SaveAt):
        ts = save.ts
        if ts[0] < t0 or ts[-1] > t1:
            raise ValueError(f"SaveAt.ts: times must lie in [t0, t1] = [{t0}, {t1}], got [{ts[0]}, {ts[-1]}]")
        out_times = ts
    else:
        n = int(np.floor((t1 - t0) / (save.k * dt) + 1e-9))
        out_times = t0 + save.k * dt * np.arange(n + 1)
        if t1 - out_times[-1] > 1e-9 * save.k * dt:
            out_times = np.append(out_times, t1)
        else:
            out_times[-1] = t1
    targets = np.unique(np.concatenate([out_times[out_times > t0], [t1]]))
    save_flag = np.zeros(targets.size + 1, dtype=np.int64)
    save_flag[0] = 1 if out_times[0] == t0 else 0
    save_flag[1:] = np.isin(targets, out_times).astype(np.int64)
    ys = np.zeros((out_times.size, G, D))
    yfin = np.empty((G, D))
    n_acc = np.zeros(G, dtype=np.int64)
    n_rej = np.zeros(G, dtype=np.int64)
    fail_code = np.zeros(G, dtype=np.int64)
    fail_t = np.zeros(G)
    loop = get_adaptive_loop(model_key, drift, solver, model._prepare())
    tic = time.perf_counter()
    run_groups(loop, G, (
        ystate, t0, dt, targets, save_flag, P, np.int64(model._work_size()), np.int64(solver.n_stages),
        float(solver.rtol), float(solver.atol), np.int64(solver.max_steps), ys, yfin, n_acc, n_rej,
        fail_code, fail_t))
    stats["wall_time_s"] = time.perf_counter() - tic
    stats["n_accepted"] = n_acc
    stats["n_rejected"] = n_rej
    failed = np.flatnonzero(fail_code > 0)
    if failed.size:
        g0 = int(failed[np.argmin(fail_t[failed])])
        why = {1: "the state became NaN/inf", 2: f"max_steps = {solver.max_steps} was reached",
               3: "the step size underflowed (stiff or singular problem)"}[int(fail_code[g0])]
        raise SimulationError(
            f"simulate: group {g0}: {why} at t = {fail_t[g0]:.6g}; {failed.size} of {G} groups failed.",
            time=float(fail_t[g0]), group=g0, groups=[int(g) for g in failed],
        )
    return Solution(ts=np.asarray(out_times, dtype=np.float64), ys=model._from_state(ys),
                    y_final=model._from_state(yfin), stats=stats)
