"""Phase out of coupled-ring networks: one engine run through the settle window (couplers on) and the readout
window (couplers off), the phases read from the rising V_DD/2 crossings of node 0 (:func:`run_readout`).
"""

from __future__ import annotations

import math

import numpy as np

from hw_models.coupled_rings.head import CircuitHead, numerical_cycle
from hw_models.coupled_rings.integrate import integrate_networks, read_phases
from hw_models.streams import keyed_normals, stream_seeds
from hw_models.waveform import wrap

__all__ = ["READ_CYCLES", "READ_STEP_FACTOR", "READ_SKIP_CYCLES", "flicker_start", "start_state", "run_readout"]

READ_CYCLES = 2.5
"""Free-running readout window after τ_s [cycles]: the first 0.25 cycle is skipped (coupler switch-off
transient), leaving two or three rising node-0 crossings per ring, through which a line is fitted and read at
τ_s (so the ring's residual frequency error does not add the window's drift). The detector's own averaging
window (``readout.averaging_cycles``) enters through :class:`mapping.periphery.readout.PhaseReadout` as for the
macromodel."""
READ_STEP_FACTOR = 2
"""The uncoupled readout window is integrated at this multiple of the settle step (measured in BENCHMARKS.md,
*Integrator step*); 1: one run for both windows with the couplers switched off inside the right-hand side."""
READ_SKIP_CYCLES = 0.25  # crossings this soon after the couplers switch off are not used (coupler transient)


def flicker_start(head: CircuitHead, seed) -> np.ndarray:
    """Stationary start of the OU currents (G, T·n·K_f) [A], keyed on each network's stream seed (or ``seed``)."""
    G, T = head.theta0.shape
    m = T * head.device.ring.n_stages * head.flicker.n_processes
    if np.ndim(seed):
        z = keyed_normals(stream_seeds(0, np.asarray(seed, dtype=np.uint64)[:, None], np.arange(m)[None, :]))
    else:
        z = np.random.default_rng([int(seed), 0xF1]).standard_normal((G, m))
    return z * np.tile(head.flicker_std_a, m // head.flicker.n_processes)[None, :]


def start_state(head: CircuitHead, seed, y_start=None):
    """Start state (G, D) and noise amplitudes (G, D) of the head's engine runs (OU currents appended)."""
    G, T = head.theta0.shape
    n = head.device.ring.n_stages
    sig = head.sigma
    if head.flicker is not None:
        sig = np.concatenate([sig, np.tile(head.flicker_sigma, T * n)[None, :].repeat(G, 0)], axis=1)
    if y_start is not None:
        y0 = np.asarray(y_start, float)
        if y0.shape != sig.shape:
            raise ValueError(f"y_start must have shape {sig.shape}, got {y0.shape}")
        return y0, sig
    y0 = head.y0
    if head.flicker is not None:
        y0 = np.concatenate([y0, flicker_start(head, seed)], axis=1)
    return y0, sig


def run_readout(head: CircuitHead, settle_cycles: float, seed, offset: float, waves: dict | None = None,
                 y_start=None):
    """One engine run per chunk of networks: couplers on for τ_s, then off (switched inside
    :func:`network_rhs`) while every ring free-runs through the readout window, whose node-0 samples give the
    phases (:func:`_read_phases`)."""
    dev = head.device
    G, T = head.theta0.shape
    n = dev.ring.n_stages
    dt0 = dev.period_s / head.steps_per_period
    _, per_ref = numerical_cycle(dev, dt0, head.stochastic)
    settle_s = float(settle_cycles) * per_ref
    n_set = max(int(round(settle_s / dt0)), 1)
    dt = settle_s / n_set  # the switch-off lies on the step grid
    n_read = int(math.ceil(READ_CYCLES * per_ref / dt))
    p = head.params.copy()
    y0, sig = start_state(head, seed, y_start)
    plots = waves is not None and "v0" in waves
    keep = np.arange(0, T * n, n)
    per_r = per_ref  # the readout window's reference period: its integrator's own nominal period
    if READ_STEP_FACTOR == 1:
        p[:, 12] = settle_s
        p[:, 13] = 0.25 * dt  # the switching instant: grid point τ_s only (RK4's mid-points lie dt/2 away)
        ts, v0 = integrate_networks(p, y0, sig, (n_set + n_read) * dt, dt, seed, head.stochastic,
                            save_every=1 if plots else None, save_from=None if plots else n_set, keep=keep)
    else:  # the uncoupled readout window at READ_STEP_FACTOR times the settle step: a second run
        if plots:
            ts_s, v_s = integrate_networks(p, y0, sig, n_set * dt, dt, seed, head.stochastic, save_every=1,
                                   keep=np.arange(y0.shape[1]))
            y1 = v_s[-1]
            v_s = v_s[:, :, keep]
        else:
            y1 = integrate_networks(p, y0, sig, n_set * dt, dt, seed, head.stochastic)
        p[:, 9] = 0.0
        dtr = dt * READ_STEP_FACTOR
        _, per_r = numerical_cycle(dev, dt0 * READ_STEP_FACTOR, head.stochastic)
        n_r = int(math.ceil(READ_CYCLES * per_r / dtr))
        rs = stream_seeds(0, np.asarray(seed, dtype=np.uint64), 2) if np.ndim(seed) else int(seed) + 7
        ts, v0 = integrate_networks(p, y1, sig, n_r * dtr, dtr, rs, head.stochastic, save_every=1, keep=keep)
        ts = ts + settle_s
        if plots:
            ts, v0 = np.concatenate([ts_s, ts[1:]]), np.concatenate([v_s, v0[1:]])
    if plots:  # keep node 0 of every ring through the settle and readout windows
        waves["t"], waves["v0"] = ts, v0
        waves["omega"] = 2 * math.pi / per_ref
        waves["offset"] = offset
    r = ts >= settle_s * (1 - 1e-12)
    # ψ_k = −ω_ref τ_s − ω_r (t_k − τ_s): the settle window in the chip's reference frame, the readout window in
    # that of its own integrator (the same ring integrated at a coarser step runs at a slightly different
    # frequency; its nominal period per_r is what the reference calibration sees)
    psi, slope = read_phases(2 * math.pi / per_r, 0.5 * dev.ring.vdd_v, ts[r] - settle_s,
                              v0[r].reshape(int(r.sum()), G * T), READ_SKIP_CYCLES * per_r, 0.0, return_slope=True)
    psi = psi - 2 * math.pi * float(settle_cycles)
    if waves is not None:
        waves["slope_rad_per_cycle"] = (slope * per_ref).reshape(G, T)
    return wrap(psi - offset).reshape(G, T)
