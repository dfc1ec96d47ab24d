"""The compiled time loops: one for fixed-step methods, one for the adaptive pair.

Groups are spread over ``numba.get_num_threads()`` Python threads running GIL-free compiled loops (thread t
takes groups t, t + n, t + 2n, ...; `run_groups`); the whole time loop of a group runs inside, so a group's
coupling matrix stays in cache across steps and no state is shared between threads. Each group draws from
its own random streams (see `oscsim.engine.rng`), so the numbers do not depend on the thread count. (Plain
threads rather than ``prange``: the parallel-accelerator passes added ~6 s to every kernel's compilation.)
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .rng import fill_normals, seed_state

__all__ = ["group_fixed", "group_adaptive", "get_fixed_loop", "get_adaptive_loop", "run_groups"]

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
_INV_SQRT3 = 1.0 / np.sqrt(3.0)


def get_fixed_loop(model_key, drift, phases, solver):
    """The parallel fixed-step loop for a model kernel and a solver.

    Built-in models use the pre-generated, disk-cached kernels of `oscsim.engine._kernels`; a `CustomODE`
    gets a disk-cached loop when its right-hand side is a module-level function (`_custom_cache`), else one
    compiled in this process.
    """
    from . import _kernels

    name = _kernels.fixed_name(model_key, solver)
    if name is not None:
        return getattr(_kernels, name)
    if model_key[0] == "custom":
        from ._custom_cache import cached_custom_loop

        fn = cached_custom_loop(model_key[1], solver, adaptive=False)
        if fn is not None:
            return fn
    key = ("fixed", model_key, solver._kernel_key())
    fn = _CACHE.get(key)
    if fn is None:
        fn = _CACHE[key] = _build_fixed(solver._step(), drift, phases)
    return fn


def get_adaptive_loop(model_key, drift, solver):
    from . import _kernels

    name = _kernels.adaptive_name(model_key, solver)
    if name is not None:
        return getattr(_kernels, name)
    if model_key[0] == "custom":
        from ._custom_cache import cached_custom_loop

        fn = cached_custom_loop(model_key[1], solver, adaptive=True)
        if fn is not None:
            return fn
    key = ("adaptive", model_key, solver._kernel_key())
    fn = _CACHE.get(key)
    if fn is None:
        fn = _CACHE[key] = _build_adaptive(solver._step(), drift)
    return fn


def _build_fixed(step, drift, phases):
    @nb.njit(nogil=True)
    def run(g_first, g_step, y0, t0, dt, n_steps, h_last, tgrid, P, sig, noisy, need_area, seed, m_sub, ws_len, n_stage,
            save_steps, ys, summ_on, summ_start, summ_every, mean_re, mean_im, coh, n_summ, yfin,
            fail_step, fail_t):
        for gp in range(g_first, y0.shape[0], g_step):
            group_fixed(step, drift, phases, np.int64(gp), y0, t0, dt, n_steps, h_last, tgrid, P, sig, noisy,
                        need_area, seed, m_sub, ws_len, n_stage, save_steps, ys, summ_on, summ_start,
                        summ_every, mean_re, mean_im, coh, n_summ, yfin, fail_step, fail_t)

    return run


def _build_adaptive(step, drift):
    @nb.njit(nogil=True)
    def run(g_first, g_step, y0, t0, dt, targets, save_flag, P, ws_len, n_stage, rtol, atol, max_steps, ys, yfin, n_acc, n_rej,
            fail_code, fail_t):
        for gp in range(g_first, y0.shape[0], g_step):
            group_adaptive(step, drift, np.int64(gp), y0, t0, dt, targets, save_flag, P, ws_len, n_stage, rtol,
                           atol, max_steps, ys, yfin, n_acc, n_rej, fail_code, fail_t)

    return run


@nb.njit(cache=True, fastmath=True)
def _accumulate(g, cs, sn, mean_re, mean_im, coh, do_coh):
    n = cs.shape[0]
    for i in range(n):
        mean_re[g, i] += cs[i]
        mean_im[g, i] += sn[i]
    if do_coh:
        for i in range(n):
            ci = cs[i]
            si_ = sn[i]
            for j in range(i, n):
                coh[g, i, j] += ci * cs[j] + si_ * sn[j]


@nb.njit(fastmath=False)  # template: _codegen makes cached copies for built-in models
def group_fixed(step, drift, phases, g, y0, t0, dt, n_steps, h_last, tgrid, P, sig, noisy, need_area, seed, m_sub,
                ws_len, n_stage, save_steps, ys, summ_on, summ_start, summ_every, mean_re, mean_im, coh, n_summ,
                yfin, fail_step, fail_t):
    """Integrate group ``g`` over the whole run."""
    D = y0.shape[1]
    S = save_steps.shape[0]
    nph = mean_re.shape[1]
    do_coh = coh.shape[1] > 0
    y = y0[g].copy()
    ynew = np.empty(D)
    K = np.empty((n_stage, D))
    ws = np.empty(ws_len)
    sg = sig[g * np.int64(sig.shape[0] > 1)]
    dW = np.zeros(D)
    area = np.zeros(D)
    z = np.empty(D)
    z2 = np.empty(D)
    scr = np.empty(4 * ((D + 1) // 2) + 1)
    st0 = np.empty(4, dtype=np.uint64)
    st1 = np.empty(4, dtype=np.uint64)
    seed_state(seed[g, 0], seed[g, 1], 0, st0)
    seed_state(seed[g, 0], seed[g, 1], 1, st1)
    cs = np.empty(nph)
    sn = np.empty(nph)
    si = 0
    if S > 0 and save_steps[0] == 0:
        ys[0, g, :] = y
        si = 1
    if summ_on and summ_start == 0:
        phases(y, cs, sn)
        _accumulate(g, cs, sn, mean_re, mean_im, coh, do_coh)
        n_summ[g] += 1
    for n in range(n_steps):
        if tgrid.shape[0] > 0:
            t = tgrid[n]
            h = tgrid[n + 1] - tgrid[n]
        else:
            t = t0 + n * dt
            h = dt if n < n_steps - 1 else h_last
        if noisy:
            d = h / m_sub
            sd = np.sqrt(d)
            for i in range(D):
                dW[i] = 0.0
                area[i] = 0.0
            for k in range(m_sub):
                fill_normals(st0, z, scr)
                if need_area:
                    fill_normals(st1, z2, scr)
                    for i in range(D):
                        dw = sd * z[i]
                        area[i] += dW[i] * d + 0.5 * d * (dw + sd * z2[i] * _INV_SQRT3)
                        dW[i] += dw
                else:
                    for i in range(D):
                        dW[i] += sd * z[i]
            if need_area:
                for i in range(D):
                    area[i] /= h
        step(drift, t, h, y, sg, dW, area, g, P, ws, K, ynew)
        bad = False
        for i in range(D):
            if not np.isfinite(ynew[i]):
                bad = True
                break
        if bad:
            fail_step[g] = n + 1
            fail_t[g] = t + h
            break
        y, ynew = ynew, y
        if si < S and save_steps[si] == n + 1:
            ys[si, g, :] = y
            si += 1
        if summ_on and n + 1 >= summ_start and (n + 1 - summ_start) % summ_every == 0:
            phases(y, cs, sn)
            _accumulate(g, cs, sn, mean_re, mean_im, coh, do_coh)
            n_summ[g] += 1
    yfin[g, :] = y


@nb.njit(fastmath=False)  # template, as group_fixed
def group_adaptive(step, drift, g, y0, t0, dt, targets, save_flag, P, ws_len, n_stage, rtol, atol, max_steps, ys,
                   yfin, n_acc, n_rej, fail_code, fail_t):
    """Integrate group ``g`` with an adaptive embedded pair, landing on every target time."""
    D = y0.shape[1]
    y = y0[g].copy()
    ynew = np.empty(D)
    K = np.empty((n_stage, D))
    ws = np.empty(ws_len)
    t = t0
    h = dt
    si = 0
    if save_flag.shape[0] > 0 and save_flag[0] == 1:  # slot 0 is t0
        ys[0, g, :] = y
        si = 1
    attempts = 0
    failed = False
    for k in range(targets.shape[0]):
        target = targets[k]
        while t < target and not failed:
            rem = target - t
            last = h >= rem
            hh = rem if last else h
            err = step(drift, t, hh, y, g, P, ws, K, ynew, rtol, atol)
            attempts += 1
            if err <= 1.0:
                bad = False
                for i in range(D):
                    if not np.isfinite(ynew[i]):
                        bad = True
                        break
                if bad:
                    fail_code[g] = 1
                    fail_t[g] = t + hh
                    failed = True
                    break
                t = target if last else t + hh
                y, ynew = ynew, y
                n_acc[g] += 1
            else:
                n_rej[g] += 1
            if err == 0.0:
                fac = 5.0
            elif not np.isfinite(err):
                fac = 0.2
            else:
                fac = min(5.0, max(0.2, 0.9 * err ** -0.2))
            hn = hh * fac
            if last and err <= 1.0:
                hn = max(hn, h)  # a step clipped at an output time does not shrink the next one
            h = hn
            if attempts >= max_steps:
                fail_code[g] = 2
                fail_t[g] = t
                failed = True
                break
            if h <= 1e-14 * max(abs(t), 1.0):
                fail_code[g] = 3
                fail_t[g] = t
                failed = True
                break
        if failed:
            break
        if save_flag[k + 1] == 1:
            ys[si, g, :] = y
            si += 1
    yfin[g, :] = y

