"""The bodies of the compiled time loops: one for fixed-step methods, one for the adaptive pair.

`group_fixed` and `group_adaptive` integrate one group over the whole run and take the solver's ``step``
and the model's ``drift`` (and ``phases``, and ``prepare``: what a model writes into the group's scratch before
its first step, e.g. the group's coupling matrix from its factors; `no_prepare` for most) as compiled-function
arguments. Numba embeds the addresses of
such arguments, so a loop compiled from them cannot be cached on disk: `_codegen` therefore reads these
functions' source and writes copies with the arguments replaced by globals, and `_kernel_cache` stores
those copies in the user cache. This module imports nothing of the engine but `rng`, so the loader, the
generator and the dispatcher (`_loop`) all depend on it and not on each other.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .rng import fill_normals, seed_state

__all__ = ["group_fixed", "group_adaptive", "step_time", "no_prepare"]

# The time integral of W over a substep d is d*W(t) + d*dw/2 plus an independent Gaussian part of standard
# deviation d*sqrt(d)/(2*sqrt(3)): hence the factor 1/sqrt(3) on the second normal draw below.
_INV_SQRT3 = 1.0 / np.sqrt(3.0)


@nb.njit(cache=True, inline="always")
def step_time(tgrid, n, t0, dt, n_steps, h_last):
    """Start and length of step ``n``: from ``tgrid`` when there is one (`SaveAt`), else uniform with the last
    step shortened to end at t1. (The CUDA kernel compiles the same lines.)"""
    if tgrid.shape[0] > 0:
        return tgrid[n], tgrid[n + 1] - tgrid[n]
    return t0 + n * dt, (dt if n < n_steps - 1 else h_last)


@nb.njit(cache=True, inline="always")
def no_prepare(g, P, ws):
    """The ``prepare`` of a model whose drift needs nothing written per group before the first step."""
    return None


@nb.njit(cache=True)
def _all_finite(x):
    """False as soon as one entry of ``x`` (1-D) is NaN or infinite."""
    for i in range(x.shape[0]):
        if not np.isfinite(x[i]):
            return False
    return True


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


@nb.njit(fastmath=False)  # template: _codegen writes cached copies with step/drift/phases as globals
def group_fixed(step, drift, phases, prepare, g, y0, t0, dt, n_steps, h_last, tgrid, P, sig, noisy, need_area, seed, m_sub,
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
    prepare(g, P, ws)
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
        t, h = step_time(tgrid, n, t0, dt, n_steps, h_last)
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
        if not _all_finite(ynew):
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
def group_adaptive(step, drift, prepare, g, y0, t0, dt, targets, save_flag, P, ws_len, n_stage, rtol, atol, max_steps, ys,
                   yfin, n_acc, n_rej, fail_code, fail_t):
    """Integrate group ``g`` with an adaptive embedded pair, landing on every target time."""
    D = y0.shape[1]
    y = y0[g].copy()
    ynew = np.empty(D)
    K = np.empty((n_stage, D))
    ws = np.empty(ws_len)
    prepare(g, P, ws)
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
                if not _all_finite(ynew):
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

