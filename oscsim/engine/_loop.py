"""Which compiled time loop runs a (model, solver) pair, and running it over groups on several threads.

Groups are spread over ``numba.get_num_threads()`` Python threads running GIL-free compiled loops (thread t
takes groups t, t + n, t + 2n, ...; `run_groups`, on a pool of threads kept for the process: `run_threads`); the whole time loop of a group runs inside, so a group's
coupling matrix stays in cache across steps and no state is shared between threads. Each group draws from
its own random streams (see `oscsim.engine.rng`), so the numbers do not depend on the thread count. (Plain
threads rather than ``prange``: the parallel-accelerator passes added ~6 s to every kernel's compilation.)

The loop bodies are in `_templates`. Built-in models use copies generated into the user cache
(`_kernel_cache`), which Numba caches on disk; a `CustomODE` with a module-level right-hand side gets one
too (`_custom_cache`); anything else is compiled in this process from the templates.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numba as nb
import numpy as np

from ._codegen import kernel_name
from ._custom_cache import cached_custom_loop
from ._kernel_cache import builtin_kernels
from ._templates import group_adaptive, group_fixed, no_prepare

__all__ = ["get_fixed_loop", "get_adaptive_loop", "run_groups", "run_threads"]

_CACHE: dict = {}


def run_groups(loop, n_groups: int, args: tuple) -> None:
    """Call ``loop(g_first, g_step, *args)`` on min(numba.get_num_threads(), G) threads."""
    n = max(1, min(nb.get_num_threads(), n_groups))
    run_threads(lambda t, step: loop(np.int64(t), np.int64(step), *args), n)


_POOL: dict = {"pid": None, "size": 0, "executor": None}
_POOL_LOCK = threading.Lock()


def run_threads(fn, n: int) -> None:
    """``fn(t, n)`` for t < n, on n threads of a pool kept for the process (starting threads on every call cost
    0.4-2 ms each time on a loaded 2-core machine, several times per chip layer call); returns when all have
    returned and re-raises the first error. n <= 1 runs ``fn(0, 1)`` in the caller's thread.

    The pool grows when more threads are asked for and is made anew in a forked child (a fork copies the pool
    but not its threads). Callers must not nest: ``fn`` must not itself call `run_threads`."""
    if n <= 1:
        fn(0, 1)
        return
    pid = os.getpid()
    with _POOL_LOCK:
        if _POOL["pid"] != pid or _POOL["size"] < n:  # an old pool is left to its holders, never shut down under them
            _POOL.update(pid=pid, size=n, executor=ThreadPoolExecutor(max_workers=n, thread_name_prefix="oscsim"))
        ex = _POOL["executor"]
    futures = [ex.submit(fn, t, n) for t in range(n)]
    for f in futures:
        f.result()


def _get_loop(kind: str, model_key, solver, build):
    name = kernel_name(kind, model_key, solver)
    if name is not None:
        kernels = builtin_kernels()
        if kernels is not None:
            return getattr(kernels, name)
    elif model_key[0] == "custom":
        fn = cached_custom_loop(model_key[1], solver, adaptive=kind == "adaptive")
        if fn is not None:
            return fn
    key = (kind, model_key, solver._kernel_key())
    fn = _CACHE.get(key)
    if fn is None:
        fn = _CACHE[key] = build()
    return fn


def get_fixed_loop(model_key, drift, phases, solver, prepare=None):
    """The multi-group fixed-step loop ``loop(g_first, g_step, ...)`` for a model kernel and a solver (``prepare``:
    the model's per-group prepare step, None for none)."""
    prepare = no_prepare if prepare is None else prepare
    return _get_loop("fixed", model_key, solver, lambda: _build_fixed(solver._step(), drift, phases, prepare))


def get_adaptive_loop(model_key, drift, solver, prepare=None):
    """The multi-group adaptive loop for a model kernel and an embedded-pair solver (``prepare`` as above)."""
    prepare = no_prepare if prepare is None else prepare
    return _get_loop("adaptive", model_key, solver, lambda: _build_adaptive(solver._step(), drift, prepare))


def _build_fixed(step, drift, phases, prepare):
    @nb.njit(nogil=True)
    def run(g_first, g_step, y0, t0, dt, n_steps, h_last, tgrid, P, sig, noisy, need_area, seed, m_sub, ws_len, n_stage,
            save_steps, ys, summ_on, summ_start, summ_every, mean_re, mean_im, coh, n_summ, yfin,
            fail_step, fail_t):
        for gp in range(g_first, y0.shape[0], g_step):
            group_fixed(step, drift, phases, prepare, np.int64(gp), y0, t0, dt, n_steps, h_last, tgrid, P, sig, noisy,
                        need_area, seed, m_sub, ws_len, n_stage, save_steps, ys, summ_on, summ_start,
                        summ_every, mean_re, mean_im, coh, n_summ, yfin, fail_step, fail_t)

    return run


def _build_adaptive(step, drift, prepare):
    @nb.njit(nogil=True)
    def run(g_first, g_step, y0, t0, dt, targets, save_flag, P, ws_len, n_stage, rtol, atol, max_steps, ys, yfin, n_acc, n_rej,
            fail_code, fail_t):
        for gp in range(g_first, y0.shape[0], g_step):
            group_adaptive(step, drift, prepare, np.int64(gp), y0, t0, dt, targets, save_flag, P, ws_len, n_stage, rtol,
                           atol, max_steps, ys, yfin, n_acc, n_rej, fail_code, fail_t)

    return run
