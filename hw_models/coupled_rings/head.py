"""G networks of T coupled rings ready to integrate: mismatch, own-cycle calibration, trim, placement, packing.

A head is one engine batch: every network (one per (bank, sequence, head, coordinate) of a chip layer) holds T
rings of the chip's ring, each with its transistors' ΔV_T and load spread, trimmed by one load factor to a
target residual frequency, placed on its own limit cycle at its token phase, and coupled by signed
transconductances (:func:`build_head`; the parameter layout is :mod:`hw_models.coupled_rings.rhs`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from hw_models.coupled_rings.device import CircuitDevice
from hw_models.coupled_rings.integrate import crossings, integrate_networks
from hw_models.coupled_rings.rhs import HEADER, PER_NODE, T_NEVER, network_rhs_np, ring_rows

__all__ = ["DEFAULT_STEPS_PER_PERIOD", "CircuitHead", "RingCalibration", "build_head", "calibrate_rings",
           "draw_circuit_mismatch", "numerical_cycle", "place_on_limit_cycle", "place_on_own_cycle"]

DEFAULT_STEPS_PER_PERIOD = 100
"""Integration steps per ring period (RK4 / stochastic Heun); the measured step study is in BENCHMARKS.md."""


@dataclass
class CircuitHead:
    """G independent networks of T rings, ready to integrate (built by :func:`build_head`).

    Attributes
    ----------
    params : (G, P) packed parameters of :func:`network_rhs` (couplers on).
    y0 : (G, T·n) initial node voltages [V] (each ring on its own limit cycle at its token phase).
    sigma : (G, T·n) node noise intensities [V/√s] (zeros without noise).
    theta0 : (G, T) placement phases [rad].
    gm : (G, T, T) signed transconductances G_{t,u} [S] including the coupler spread (lower triangle).
    c_load : (G, T, n) node loads [F] after mismatch and trim; trim : (G, T) load-trim factors.
    dvt_n, dvt_p : (G, T, n) threshold shifts [V].
    steps_per_period : int; stochastic : bool
        Integrator the head was calibrated for (RK4 or stochastic Heun at T/steps).
    device : CircuitDevice
    calibration : RingCalibration or None
    calibration_index : (G·T,) or None
        Calibration row of every ring (None: row i for ring i).
    flicker : hw_models.FlickerNoise or None
        The 1/f node-current noise bank integrated with the head (None: white thermal noise only).
    flicker_std_a, flicker_sigma : (K_f,)
        Stationary std [A] of each OU current (its start draw) and its engine noise amplitude sqrt(2vγ) [A/√s].
    """

    params: np.ndarray
    y0: np.ndarray
    sigma: np.ndarray
    theta0: np.ndarray
    gm: np.ndarray
    c_load: np.ndarray
    dvt_n: np.ndarray
    dvt_p: np.ndarray
    trim: np.ndarray
    steps_per_period: int
    stochastic: bool
    device: CircuitDevice
    calibration: object = None
    flicker: object = None
    flicker_std_a: np.ndarray = None
    flicker_sigma: np.ndarray = None
    calibration_index: np.ndarray = None


def place_on_limit_cycle(dev: CircuitDevice, theta, cycle=None) -> np.ndarray:
    """Node voltages (..., n) [V] of the nominal limit cycle at phases ``theta`` (...) [rad] (periodic linear
    interpolation on the limit-cycle grid). ``cycle``: a (M, n) grid to use instead of ``dev.lc_x``."""
    lc_x = dev.lc_x if cycle is None else cycle
    th = np.mod(np.asarray(theta, float), 2 * math.pi)
    M = len(lc_x)
    pos = th / (2 * math.pi) * M
    i0 = np.floor(pos).astype(np.int64) % M
    fr = (pos - np.floor(pos))[..., None]
    return (1 - fr) * lc_x[i0] + fr * lc_x[(i0 + 1) % M]


@lru_cache(maxsize=16)
def numerical_cycle(dev: CircuitDevice, dt: float, stochastic: bool, n_points: int = 1024):
    """The nominal ring's limit cycle as the integrator at step ``dt`` sees it: (M, n) grid [V], phase 0 at the
    rising V_DD/2 crossing of node 0, and its period [s].

    Placing rings on the exact limit cycle would let each relax onto the discrete one with a phase offset that
    depends on where it was placed (measured: 1.8e-3 rad rms for stochastic Heun at T/100, about 1 % of a
    typical increment); on the discrete cycle the offset is common to all rings and calibrated away.
    """
    from scipy.interpolate import CubicSpline

    n = dev.ring.n_stages
    z = np.zeros((1, n))
    rows = ring_rows(dev, z, z, np.full((1, n), dev.ring.c_load_f))
    n_per = 24
    ts, ys = integrate_networks(rows, dev.lc_x[:1].copy(), z, n_per * dev.period_s, dt, 0, stochastic, save_every=1)
    v = ys[:, 0, :]
    x = v[:, 0] - 0.5 * dev.ring.vdd_v
    idx = np.nonzero((x[:-1] < 0) & (x[1:] >= 0))[0]
    sp = CubicSpline(ts, v, axis=0)
    tc = []
    for i in idx[-4:]:
        a, b = ts[i], ts[i + 1]
        for _ in range(60):  # bisection on the spline: the crossing time to machine precision
            m = 0.5 * (a + b)
            if sp(m)[0] - 0.5 * dev.ring.vdd_v < 0:
                a = m
            else:
                b = m
        tc.append(0.5 * (a + b))
    period = float(np.mean(np.diff(tc)))
    grid = sp(tc[-2] + period * np.arange(n_points) / n_points)
    return grid, period


def draw_circuit_mismatch(dev: CircuitDevice, shape: tuple, seed) -> tuple:
    """ΔV_T of every NMOS and PMOS and relative load spread of every node, each ``shape + (n,)``.

    ``seed``: a sequence of ints for :func:`numpy.random.default_rng` (the chip's seed, layer).
    """
    ring = dev.ring
    rng = np.random.default_rng(seed)
    n = ring.n_stages
    dvn = rng.normal(0.0, ring.sigma_vt_n_v, shape + (n,))
    dvp = rng.normal(0.0, ring.sigma_vt_p_v, shape + (n,))
    crel = np.clip(rng.normal(0.0, ring.sigma_c_rel, shape + (n,)), -0.9, None)  # no negative capacitor
    return dvn, dvp, crel



@dataclass(eq=False)
class RingCalibration:
    """Each ring's own limit cycle and period as integrated (untrimmed loads), see :func:`calibrate_rings`.

    Attributes
    ----------
    period_s : (N,) own period [s]; tau0_s : (N,) time of ``samples[:, 0]`` after a rising node-0 crossing [s];
    samples : (N, S, n) float32 states [V] every ``dt_s`` over one period; rows : (N, P1) ring parameters;
    dt_s : float.
    """

    period_s: np.ndarray
    tau0_s: np.ndarray
    samples: np.ndarray
    rows: np.ndarray
    dt_s: float


_CAL_RELAX, _CAL_MEASURE = 1.0, 3.0  # cycles: relaxation onto the ring's own cycle, then measurement


def calibrate_rings(dev: CircuitDevice, dvn, dvp, c_load, dt: float, stochastic: bool) -> RingCalibration:
    """Run every (mismatched, untrimmed) ring alone, noise-free, with the chip's integrator: its own period and
    one period of its own limit cycle (the chip's trim and phase-writing calibration).

    dvn, dvp, c_load : (N, n). Returns :class:`RingCalibration`.
    """
    n = dev.ring.n_stages
    N = c_load.shape[0]
    rows = ring_rows(dev, dvn, dvp, c_load)
    cycle, per_nom = numerical_cycle(dev, dt, stochastic)
    t1 = (_CAL_RELAX + _CAL_MEASURE + 1.5) * per_nom
    S = int(math.ceil(1.1 * per_nom / dt)) + 2  # one period (+10 % for the slowest ring) and the RK4 point
    per = np.empty(N)
    tau0 = np.empty(N)
    samples = np.empty((N, S, n), np.float32)
    chunk = 2048
    for c0 in range(0, N, chunk):
        sl = slice(c0, min(N, c0 + chunk))
        m = sl.stop - sl.start
        y0 = np.broadcast_to(cycle[0], (m, n)).copy()
        ts, ys = integrate_networks(rows[sl], y0, np.zeros((m, n)), t1, dt, 0, stochastic, save_every=1)
        si, ri, tc = crossings(ts, ys[:, :, 0], 0.5 * dev.ring.vdd_v)
        keep = tc >= 0.9 * _CAL_RELAX * per_nom
        si, ri, tc = si[keep], ri[keep], tc[keep]
        order = np.lexsort((tc, ri))
        si, ri, tc = si[order], ri[order], tc[order]
        cnt = np.bincount(ri, minlength=m)
        if np.any(cnt < 3):
            bad = int(np.argmax(cnt < 3)) + c0
            raise ValueError(f"ring {bad} of the layer does not oscillate with its drawn mismatch (fewer than 3 "
                             f"crossings in {_CAL_MEASURE + 1.5:.1f} cycles)")
        first = np.concatenate([[0], np.cumsum(cnt)[:-1]])
        k = np.arange(len(tc)) - np.repeat(first, cnt)  # crossing number within each ring
        kk = k < 3  # the first three crossings: least-squares slope over k = 0, 1, 2 is (t2 − t0)/2
        t3 = tc[kk].reshape(m, 3)
        per[sl] = 0.5 * (t3[:, 2] - t3[:, 0])
        j0 = np.searchsorted(ts, t3[:, 0])
        if np.any(j0 + S > len(ts)):
            raise ValueError("calibration window too short for a ring's period")
        tau0[sl] = ts[j0] - t3[:, 0]
        samples[sl] = ys[j0[:, None] + np.arange(S)[None, :], np.arange(m)[:, None]]
    return RingCalibration(period_s=per, tau0_s=tau0, samples=samples, rows=rows, dt_s=float(dt))


def place_on_own_cycle(cal: RingCalibration, theta, index=None) -> np.ndarray:
    """States (N, n) [V] of calibrated rings ``index`` (N,) (default: all) on their own limit cycles at phases
    ``theta`` (N,) [rad] (phase 0 at the rising node-0 crossing): the stored sample before the phase, advanced
    by one RK4 step of the ring's own (untrimmed) equations. A trimmed ring (all loads scaled by one factor)
    passes through the same states."""
    th = np.mod(np.asarray(theta, float), 2 * math.pi)
    idx = np.arange(len(th)) if index is None else np.asarray(index)
    per, tau0, rows = cal.period_s[idx], cal.tau0_s[idx], cal.rows[idx]
    q = th / (2 * math.pi) * per - tau0
    q = np.where(q < 0, q + per, q)
    j = np.minimum((q // cal.dt_s).astype(np.int64), cal.samples.shape[1] - 2)
    h = (q - j * cal.dt_s)[:, None]
    y = cal.samples[idx, j].astype(np.float64)
    k1 = network_rhs_np(y, rows)
    k2 = network_rhs_np(y + 0.5 * h * k1, rows)
    k3 = network_rhs_np(y + 0.5 * h * k2, rows)
    k4 = network_rhs_np(y + h * k3, rows)
    return y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)


def build_head(dev: CircuitDevice, theta0, coupling_rad_per_cycle, *, steps_per_period: int, stochastic: bool,
               freq_residual_rel=None, mismatch=None, noise: bool = False, calibration=None,
               calibration_index=None, flicker=None) -> CircuitHead:
    """Pack G networks of T rings, trimmed and placed on their own limit cycles.

    Parameters
    ----------
    dev : CircuitDevice
    theta0 : (G, T) token phases [rad].
    coupling_rad_per_cycle : (G, T, T)
        Signed macromodel couplings C_{t,u} [rad/cycle] (lower triangle used) including the coupler spread.
    steps_per_period : int; stochastic : bool
        The integrator the head will run with (its own limit cycle and period are calibrated with it).
    freq_residual_rel : (G, T) or None
        Post-trim relative frequency error each ring is trimmed to (the chip's recorded residual).
    mismatch : (dvt_n, dvt_p, c_rel) each (G, T, n), or None
    noise : bool
        Thermal node noise.
    calibration : RingCalibration, optional
        Reuse a calibration (same mismatch, step and solver); ``calibration_index`` (G·T,) maps every ring of
        the head to its calibration row (rings shared by several sequences are calibrated once).
    flicker : hw_models.FlickerNoise, optional
        1/f drain-current noise at every node (with ``noise`` only): its OU bank (rates, per-process variance
        S_w f_c ln r, S_w the node's white PSD) becomes K_f extra states per node (see the module notes).
    """
    ring = dev.ring
    theta0 = np.asarray(theta0, float)
    G, T = theta0.shape
    n = ring.n_stages
    C = np.asarray(coupling_rad_per_cycle, float)
    if C.shape != (G, T, T):
        raise ValueError(f"coupling_rad_per_cycle must have shape {(G, T, T)}, got {C.shape}")
    dt = dev.period_s / int(steps_per_period)
    _, per_ref = numerical_cycle(dev, dt, stochastic)
    gm = np.tril(C, -1) * (1.0 / (per_ref * dev.a1_rad_s_per_s))  # [S], signed
    if mismatch is None:
        dvn = np.zeros((G, T, n))
        dvp = np.zeros((G, T, n))
        crel = np.zeros((G, T, n))
    else:
        dvn, dvp, crel = (np.asarray(a, float).reshape(G, T, n) for a in mismatch)
    c0 = ring.c_load_f * (1.0 + crel)
    resid = np.zeros((G, T)) if freq_residual_rel is None else np.asarray(freq_residual_rel, float).reshape(G, T)
    if mismatch is None:
        cycle, _ = numerical_cycle(dev, dt, stochastic)
        y0 = place_on_limit_cycle(dev, theta0, cycle)
        per = np.full((G, T), per_ref)
    else:
        if calibration is None:
            calibration = calibrate_rings(dev, dvn.reshape(-1, n), dvp.reshape(-1, n), c0.reshape(-1, n), dt,
                                          stochastic)
            calibration_index = None
        y0 = place_on_own_cycle(calibration, theta0.reshape(-1), calibration_index).reshape(G, T, n)
        idx = np.arange(G * T) if calibration_index is None else np.asarray(calibration_index)
        per = calibration.period_s[idx].reshape(G, T)
    # load trim: all loads of a ring scaled by one factor (its time scales exactly) to f_ref (1 + residual)
    trim = per_ref / per / (1.0 + resid)
    c_load = c0 * trim[..., None]
    use_flicker = flicker is not None and bool(noise)
    kf = flicker.n_processes if use_flicker else 0
    P = HEADER + PER_NODE * T * n + T * T + kf
    p = np.zeros((G, P))
    p[:, :HEADER] = (T, n, dev.tap_node, dev.weights[0], dev.weights[1], 0.5 * ring.vdd_v, ring.vdd_v,
                   ring.lambda_n_per_v, ring.lambda_p_per_v, 1.0, kf, HEADER + PER_NODE * T * n + T * T,
                   T_NEVER, 0.0, 0.0, 0.0, 0)
    node = np.stack([ring.vto_n_v + dvn, ring.vto_p_v + dvp,
                     np.full((G, T, n), ring.beta_n_a_per_v2), np.full((G, T, n), ring.beta_p_a_per_v2),
                     1.0 / c_load], axis=-1)
    p[:, HEADER:HEADER + PER_NODE * T * n] = node.reshape(G, -1)
    p[:, HEADER + PER_NODE * T * n:HEADER + PER_NODE * T * n + T * T] = gm.reshape(G, -1)
    sig = np.zeros((G, T * n))
    if noise:
        sig = np.sqrt(dev.s_i_a2_per_hz / 2.0) / c_load.reshape(G, T * n)
    fl_std = fl_sig = np.zeros(0)
    if use_flicker:
        rates = flicker.rates()
        p[:, HEADER + PER_NODE * T * n + T * T:] = rates
        # each OU current: variance v = S_w f_c ln r (hw_models.flicker), dx = −γx dt + sqrt(2vγ) dW
        v = flicker.variance(dev.s_i_a2_per_hz)
        fl_std = np.full(kf, math.sqrt(v))
        fl_sig = np.sqrt(2.0 * v * rates)
    return CircuitHead(params=p, y0=y0.reshape(G, T * n), sigma=sig, theta0=theta0, gm=gm, c_load=c_load,
                       dvt_n=dvn, dvt_p=dvp, trim=trim, steps_per_period=int(steps_per_period),
                       stochastic=bool(stochastic), device=dev, calibration=calibration,
                       flicker=flicker if use_flicker else None, flicker_std_a=fl_std, flicker_sigma=fl_sig,
                       calibration_index=None if calibration is None or calibration_index is None
                       else np.asarray(calibration_index))
