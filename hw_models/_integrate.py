"""Batch integration of hw_models circuit right-hand sides.

Uses :func:`oscsim.engine.simulate` with :class:`~oscsim.engine.CustomODE`. A small fixed-step Numba loop
(RK4; stochastic Heun for additive noise), kept as an independent reference for the ring right-hand side
(``integrate(..., engine=False)`` or HW_MODELS_ENGINE=local), uses the same conventions: rhs(t, y, p, dydt) for one group, params (G, P), y0 (G, D), sigma (G, D) in
units of y/√s, dY = f dt + sigma dW.
"""

from __future__ import annotations

import os

import numba
import numpy as np

from hw_models.ring import ring_rhs
from oscsim.engine import RK4, CustomODE, SaveEvery, StochasticHeun, simulate

__all__ = ["integrate"]


@numba.njit(cache=True)
def _ring_loop(p, y0, t0, dt, n_steps, save_every, sigma, seed, out):
    G, D = y0.shape
    k1 = np.empty(D)
    k2 = np.empty(D)
    k3 = np.empty(D)
    k4 = np.empty(D)
    tmp = np.empty(D)
    dw = np.empty(D)
    noisy = False
    for g in range(G):
        for d in range(D):
            if sigma[g, d] != 0.0:
                noisy = True
    sq = np.sqrt(dt)
    for g in range(G):
        np.random.seed(seed + 7919 * g)
        y = y0[g].copy()
        pg = p[g]
        s = 0
        out[0, g] = y
        for i in range(n_steps):
            t = t0 + i * dt
            if not noisy:
                ring_rhs(t, y, pg, k1)
                for d in range(D):
                    tmp[d] = y[d] + 0.5 * dt * k1[d]
                ring_rhs(t + 0.5 * dt, tmp, pg, k2)
                for d in range(D):
                    tmp[d] = y[d] + 0.5 * dt * k2[d]
                ring_rhs(t + 0.5 * dt, tmp, pg, k3)
                for d in range(D):
                    tmp[d] = y[d] + dt * k3[d]
                ring_rhs(t + dt, tmp, pg, k4)
                for d in range(D):
                    y[d] += dt / 6.0 * (k1[d] + 2 * k2[d] + 2 * k3[d] + k4[d])
            else:
                ring_rhs(t, y, pg, k1)
                for d in range(D):
                    dw[d] = sigma[g, d] * sq * np.random.standard_normal()
                    tmp[d] = y[d] + dt * k1[d] + dw[d]
                ring_rhs(t + dt, tmp, pg, k2)
                for d in range(D):
                    y[d] += 0.5 * dt * (k1[d] + k2[d]) + dw[d]
            if (i + 1) % save_every == 0:
                s += 1
                out[s, g] = y
    return out


def integrate(rhs, params, y0, t1, dt, *, sigma=0.0, save_every=1, seed=0, t0=0.0, engine=True):
    """Integrate G groups; returns (ts (S,), ys (S, G, D)). Fixed step ``dt`` [s]."""
    params = np.atleast_2d(np.asarray(params, float))
    y0 = np.atleast_2d(np.asarray(y0, float))
    G, D = y0.shape
    if params.shape[0] != G:
        params = np.broadcast_to(params, (G, params.shape[1])).copy()
    sig = np.broadcast_to(np.asarray(sigma, float), (G, D)).copy()
    n_steps = int(round((t1 - t0) / dt))
    if n_steps < 1:
        raise ValueError(f"t1 - t0 = {t1 - t0} s is shorter than one step dt = {dt} s")
    save_every = int(save_every)
    if engine and os.environ.get("HW_MODELS_ENGINE", "") != "local":
        model = CustomODE(rhs, params, D, sigma=sig if np.any(sig) else 0.0)
        solver = StochasticHeun() if np.any(sig) else RK4()
        sol = simulate(model, solver, t0, t0 + n_steps * dt, dt, y0, save=SaveEvery(save_every), seed=seed)
        return np.asarray(sol.ts), np.asarray(sol.ys)
    n_save = n_steps // save_every + 1
    out = np.empty((n_save, G, D))
    if rhs is not ring_rhs:
        raise ValueError("the reference loop (engine=False) integrates only hw_models.ring.ring_rhs")
    _ring_loop(params, y0, float(t0), float(dt), n_steps, save_every, sig, int(seed), out)
    ts = t0 + dt * save_every * np.arange(n_save)
    return ts, out
