"""Which compiled time loop runs a (model, solver) pair, and running it over groups on several threads.

Groups are spread over ``numba.get_num_threads()`` Python threads running GIL-free compiled loops (thread t
takes groups t, t + n, t + 2n, ...; `run_groups`); the whole time loop of a group runs inside, so a group's
coupling matrix stays in cache across steps and no state is shared between threads. Each group draws from
its own random streams (see `oscsim.engine.rng`), so the numbers do not depend on the thread count. (Plain
threads rather than ``prange``: the parallel-accelerator passes added ~6 s to every kernel's compilation.)

The loop bodies are in `_templates`. Built-in models use copies generated into the user cache
(`_kernel_cache`), which Numba caches on disk; a `CustomODE` with a module-level right-hand side gets one
too (`_custom_cache`); anything else is compiled in this process from the templates.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ._codegen import kernel_name
from ._custom_cache import cached_custom_loop
from ._kernel_cache import builtin_kernels
from ._templates import group_adaptive, group_fixed, no_prepare

__all__ = ["get_fixed_loop", "get_adaptive_loop", "run_groups"]

_CACHE: dict = {}


def run_groups(loop, n_groups: int, args: tuple) -> None:
    """Call ``loop(g_first, g_step, *args)`` on min(numba.get_num_threads(), G) threads."""
    from concurrent.futures import ThreadPoolExecutor

    n = max(1, min(nb.get_num_threads(), n_groups))
    if n == 1:
        loop(np.int64(0), np.int64(1), *args)
        return
    with ThreadPoolExecutor(max_workers=n) as ex:
        futures = [ex.submit(loop, np.int64(t), np.int64(n), *args) for t in range(n)]
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


def get_fixed_loop(model_key, drift, phases, solver, prepare=no_prepare):
    """The multi-group fixed-step loop ``loop(g_first, g_step, ...)`` for a model kernel and a solver."""
    return _get_loop("fixed", model_key, solver, lambda: _build_fixed(solver._step(), drift, phases, prepare))


def get_adaptive_loop(model_key, drift, solver, prepare=no_prepare):
    """The multi-group adaptive loop for a model kernel and an embedded-pair solver."""
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
