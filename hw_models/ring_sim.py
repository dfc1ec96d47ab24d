"""Batch simulation of ring networks with the engine, and measurements (frequency, amplitude, locking)."""

from __future__ import annotations

import math

import numpy as np

from hw_models._integrate import integrate
from hw_models.params import RingOscillatorParams
from hw_models.ring import (Coupling, RingMismatch, RingNetwork, pack_ring_params, ring_initial_state,
                            ring_rhs)
from hw_models.ring_macro import _t_guess, limit_cycle
from hw_models.waveform import crossing_times, frequency_amplitude

__all__ = ["simulate_ring_networks", "ring_frequencies", "circuit_locking_range", "circuit_locking_boundary",
           "two_ring_network", "pairs_network"]


def simulate_ring_networks(networks, t1_s: float, *, dt_s: float | None = None, mismatches=None, y0=None,
                           sigma=0.0, save_every: int = 1, seed: int = 0):
    """Simulate G ring networks of the same shape in one batch.

    Parameters
    ----------
    networks : RingNetwork or sequence of G RingNetwork (same n_stages, rings and couplers count)
    t1_s : float
        End time [s].
    dt_s : float, optional
        Step [s]; default period/400 of the first ring's estimate.
    mismatches : sequence of G RingMismatch or None
    y0 : (G, D) array, optional
    sigma : scalar, (D,) or (G, D)
        Additive noise [V/√s] on each node (see :func:`hw_models.noise.node_noise_sigma`).

    Returns
    -------
    ts : (S,) [s]; ys : (S, G, D) [V]
    """
    if isinstance(networks, RingNetwork):
        networks = [networks]
    networks = list(networks)
    G = len(networks)
    if mismatches is None:
        mismatches = [None] * G
    P = np.stack([pack_ring_params(nw, mm) for nw, mm in zip(networks, mismatches)])
    if len({nw.dim for nw in networks}) != 1 or P.ndim != 2:
        raise ValueError("all networks in a batch must have the same shape (rings, stages, couplers)")
    if y0 is None:
        y0 = np.stack([ring_initial_state(nw) for nw in networks])
    if dt_s is None:
        dt_s = _t_guess(networks[0].rings[0]) / 400
    return integrate(ring_rhs, P, y0, t1_s, dt_s, sigma=sigma, save_every=save_every, seed=seed)


def ring_frequencies(ts, ys, network: RingNetwork, t_start_s: float = 0.0, node: int = 0):
    """Frequency [Hz] and peak-to-peak amplitude [V] of every ring: arrays (G, R)."""
    G = ys.shape[1]
    n, R = network.n_stages, network.n_rings
    f = np.empty((G, R))
    a = np.empty((G, R))
    for g in range(G):
        for r in range(R):
            f[g, r], a[g, r] = frequency_amplitude(ts, ys[:, g, r * n + node], 0.5 * network.rings[r].vdd_v, t_start_s)
    return f, a


def two_ring_network(ring_a: RingOscillatorParams, ring_b: RingOscillatorParams, coupler, node_a: int = 0,
                     node_b: int = 0) -> RingNetwork:
    """Two rings joined by one coupler between node ``node_a`` of ring 0 and ``node_b`` of ring 1."""
    return RingNetwork(rings=(ring_a, ring_b),
                       couplings=(Coupling(ring_a=0, node_a=node_a, ring_b=1, node_b=node_b, coupler=coupler),))


def circuit_locking_range(ring: RingOscillatorParams, coupler, *, deltas, n_cycles: int = 300,
                          steps_per_period: int = 200, tol_cycles: float = 0.5, seed: int = 0,
                          free_detuning: bool = True):
    """Lock/drift of two coupled rings, ring 1's load scaled by (1 + δ), for each δ in ``deltas``.

    Returns
    -------
    locked : (K,) bool
        Same cycle count (±tol_cycles) over the second half of the run.
    dw_free : (K,) [rad/s]
        Free-running detuning ω(C) − ω(C(1+δ)) of the uncoupled rings (from their limit cycles).
    """
    deltas = np.asarray(deltas, float)
    nets = [two_ring_network(ring, ring.replace(c_load_f=ring.c_load_f * (1 + d)), coupler) for d in deltas]
    T = limit_cycle(ring).period_s
    ts, ys = simulate_ring_networks(nets, n_cycles * T, dt_s=T / steps_per_period, save_every=4, seed=seed)
    n = ring.n_stages
    t_start = 0.5 * n_cycles * T
    locked = np.zeros(len(deltas), bool)
    m = ts >= t_start
    span = ts[m][-1] - ts[m][0]
    for g in range(len(deltas)):
        c1 = crossing_times(ts[m], ys[m, g, 0], 0.5 * ring.vdd_v)
        c2 = crossing_times(ts[m], ys[m, g, n], 0.5 * ring.vdd_v)
        locked[g] = abs((len(c1) - 1) / (c1[-1] - c1[0]) - (len(c2) - 1) / (c2[-1] - c2[0])) * span < tol_cycles
    if not free_detuning:
        return locked, None
    w0 = limit_cycle(ring).omega
    dw = np.array([w0 - limit_cycle(ring.replace(c_load_f=ring.c_load_f * (1 + d))).omega for d in deltas])
    return locked, dw


def circuit_locking_boundary(ring: RingOscillatorParams, coupler, *, delta_max: float, n_grid: int = 8,
                             n_rounds: int = 2, **kw):
    """Boundary of locking in load detuning δ and in free-running detuning Δω [rad/s] (circuit model).

    Grid search on (0, delta_max], refined ``n_rounds`` times around the last locked / first drifting δ.
    Returns (delta_star, dw_star): midpoints of the final bracket.
    """
    lo, hi = 0.0, float(delta_max)
    for _ in range(n_rounds):
        d = np.linspace(lo, hi, n_grid + 2)[1:-1]
        locked, _ = circuit_locking_range(ring, coupler, deltas=d, free_detuning=False, **kw)
        if locked.all():
            lo = d[-1]
            continue
        first = int(np.argmin(locked))
        if first == 0 and not locked[0]:
            hi = d[0]
            continue
        lo, hi = d[first - 1], d[first]
    ds = 0.5 * (lo + hi)
    w0 = limit_cycle(ring).omega
    dw = w0 - limit_cycle(ring.replace(c_load_f=ring.c_load_f * (1 + ds))).omega
    return ds, dw, (lo, hi)


def pairs_network(ring: RingOscillatorParams, coupler, deltas) -> RingNetwork:
    """Independent coupled pairs in one network (for one ngspice run): pair i = ring, ring with C (1 + δ_i)."""
    rings, cps = [], []
    for i, d in enumerate(deltas):
        rings += [ring, ring.replace(c_load_f=ring.c_load_f * (1 + float(d)))]
        cps.append(Coupling(ring_a=2 * i, node_a=0, ring_b=2 * i + 1, node_b=0, coupler=coupler))
    return RingNetwork(rings=tuple(rings), couplings=tuple(cps))
