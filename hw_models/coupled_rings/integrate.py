"""Engine runs of coupled-ring networks and their phase readout from node-0 waveforms.

:func:`integrate_networks` is the one place these networks meet :mod:`oscsim.engine` (``CustomODE`` with
:func:`hw_models.coupled_rings.rhs.network_rhs`, RK4 or stochastic Heun), in chunks of groups bounded by
memory; :func:`crossings` interpolates rising crossings with a cubic, :func:`read_phases` fits each ring's
phase line through them.
"""

from __future__ import annotations

import numpy as np

from hw_models.coupled_rings.rhs import network_rhs
from hw_models.waveform import wrap

__all__ = ["integrate_networks", "crossings", "read_phases"]

_MAX_GROUP_FLOATS = 4_000_000  # parameters per engine call (32 MB): chunking bound, not a model number
_MAX_SAVED_FLOATS = 20_000_000  # saved states per engine call (160 MB): chunking bound, not a model number


def integrate_networks(params, y0, sigma, t1, dt, seed, stochastic, save_every=None, save_from=None, keep=None):
    """Engine call over chunks of groups: returns the final states (G, D), or (ts, ys (S, G, D')) when saving.

    ``stochastic``: stochastic Heun (also when ``sigma`` is zero, for the reference calibration), else RK4.
    ``seed``: an int, or one stream seed per group (G,) (noise independent of the batch composition).
    ``save_every``: save every k-th step; ``save_from``: save every step from this step index on (the readout
    window only); ``keep``: state columns kept of what is saved (D' of them; default all).
    """
    from oscsim.engine import RK4, CustomODE, SaveAt, SaveEvery, StochasticHeun, simulate

    G, D = y0.shape
    n_steps = max(int(round(t1 / dt)), 1)
    dt = t1 / n_steps
    noisy = bool(stochastic)
    saving = bool(save_every) or save_from is not None
    chunk = max(1, _MAX_GROUP_FLOATS // params.shape[1])
    if saving:
        n_saved = (n_steps // max(int(save_every or 1), 1) + 2) if save_from is None else n_steps - int(save_from) + 1
        chunk = min(chunk, max(1, _MAX_SAVED_FLOATS // (n_saved * D)))
    finals, series, ts = [], [], None
    per_group = np.ndim(seed) > 0
    for c, g0 in enumerate(range(0, G, chunk)):
        sl = slice(g0, g0 + chunk)
        model = CustomODE(network_rhs, params[sl], D, sigma=sigma[sl] if noisy else 0.0)
        solver = StochasticHeun() if noisy else RK4()
        if save_from is not None:
            save = SaveAt(dt * np.arange(int(save_from), n_steps + 1))
        else:
            save = SaveEvery(save_every if save_every else n_steps)
        s_c = np.asarray(seed, dtype=np.uint64)[sl] if per_group else int(seed) + 104729 * c
        sol = simulate(model, solver, 0.0, n_steps * dt, dt, y0[sl], save=save, seed=s_c if noisy else None)
        ys = np.asarray(sol.ys)
        if saving:
            series.append(ys if keep is None else ys[:, :, keep])
            ts = np.asarray(sol.ts)
        else:
            finals.append(ys[-1])
    if saving:
        return ts, np.concatenate(series, axis=1)
    return np.concatenate(finals, axis=0)



def crossings(ts, v, level):
    """Rising crossings of ``level`` in v (S, N) with a cubic through the four samples around each bracket
    (linear interpolation of a ring edge leaves ~1e-4 cycle of bias at T/100): (sample index, ring, time)."""
    x = v - level
    rise = (x[:-1] < 0) & (x[1:] >= 0)
    rise[:1] = False  # the cubic needs one sample before and one after the bracket
    rise[-1:] = False
    si, ri = np.nonzero(rise)
    y = np.stack([x[si + d, ri] for d in (-1, 0, 1, 2)])  # (4, K)
    s = y[1] / (y[1] - y[2])
    for _ in range(4):  # Newton on the Lagrange cubic through nodes -1, 0, 1, 2 (bracket [0, 1])
        lg = np.stack([-s * (s - 1) * (s - 2) / 6, (s + 1) * (s - 1) * (s - 2) / 2,
                       -(s + 1) * s * (s - 2) / 2, (s + 1) * s * (s - 1) / 6])
        dl = np.stack([-(3 * s * s - 6 * s + 2) / 6, (3 * s * s - 4 * s - 1) / 2,
                       -(3 * s * s - 2 * s - 2) / 2, (3 * s * s - 1) / 6])
        f, df = (lg * y).sum(0), (dl * y).sum(0)
        s = np.clip(s - f / np.where(df > 0, df, 1.0), 0.0, 1.0)
    return si, ri, ts[si] + s * (ts[si + 1] - ts[si])


_CAL_RELAX, _CAL_MEASURE = 1.0, 3.0  # cycles: relaxation onto the ring's own cycle, then measurement




def read_phases(omega, vm, ts, v0, t_skip, t_read=None, return_slope=False):
    """Phase ψ̂ [rad] of each ring at time ``t_read`` (default ``t_skip``) from node-0 waveforms v0 (S, N).

    The rising crossings t_k of ``vm`` [V] after ``t_skip`` [s] give ψ_k = −ω t_k against the reference ω
    [rad/s]; the free-running ring's ψ is linear in time (its residual frequency error), so a least-squares
    line through the window's crossings, evaluated at ``t_read`` (τ_s), removes the drift the window itself
    would add (≥ 2 crossings per ring needed). ``return_slope``: also the fitted dψ/dt [rad/s] (N,)."""
    t_read = t_skip if t_read is None else t_read
    si, ri, tc = crossings(ts, v0, vm)
    keep = tc >= t_skip
    ri, tc = ri[keep], tc[keep]
    N = v0.shape[1]
    cnt = np.bincount(ri, minlength=N)
    if np.any(cnt < 2):
        raise ValueError(f"{int(np.sum(cnt < 2))} ring(s) made fewer than two rising crossings in the readout "
                         f"window: the ring stopped oscillating (coupling too strong or mismatch too large)")
    psi = -omega * tc
    z = np.bincount(ri, weights=np.cos(psi), minlength=N) + 1j * np.bincount(ri, weights=np.sin(psi), minlength=N)
    centre = np.angle(z)
    d = wrap(psi - centre[ri])  # unwrapped around each ring's mean
    u = tc - t_read
    su = np.bincount(ri, weights=u, minlength=N)
    suu = np.bincount(ri, weights=u * u, minlength=N)
    sd = np.bincount(ri, weights=d, minlength=N)
    sud = np.bincount(ri, weights=u * d, minlength=N)
    det = cnt * suu - su * su
    intercept = (sd * suu - su * sud) / det
    if return_slope:
        return wrap(centre + intercept), (cnt * sud - su * sd) / det
    return wrap(centre + intercept)
