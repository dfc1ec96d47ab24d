"""Phase macromodel of a ring oscillator: limit cycle, phase response (PPV / ISF), coupling function H(Δθ).

Notes
-----
For a stable limit cycle x_s(t) of period T (ω = 2π/T) the perturbation projection vector
v(t) = ∂θ/∂x (rad/V) is the T-periodic solution of the adjoint equation dv/dt = −J(x_s(t))ᵀ v with
v·f(x_s) = ω (Demir, Mehrotra, Roychowdhury 2000; Malkin). It is obtained by integrating the adjoint
backward in time over several periods (stable in that direction) from the Jacobian of the circuit model.
A charge Δq injected at node k shifts the phase by v_k Δq / C_k, so Hajimiri's ISF is
Γ_k = v_k q_max / C_k with q_max = C_k V_DD.

A coupler between node a of ring i and node b of ring j injects I(V_a^i, V_b^j) into node a; cycle
averaging (weak coupling) gives dθ_i/dt = ω_i + H(θ_j − θ_i), H(Δ) = (1/2π)∫ v_a(s) I(x_a(s), x_b(s + Δ))
/ C_a ds, expanded as H(Δ) = a₀ + Σ_m a_m sin(mΔ) + b_m cos(mΔ) (harmonics kept: the ring waveform is far
from a sinusoid).

References
----------
A. Demir, A. Mehrotra, J. Roychowdhury, IEEE TCAS-I 47, 655 (2000).
A. Hajimiri, T. H. Lee, IEEE JSSC 33, 179 (1998).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from hw_models.couplers import coupler_current
from hw_models.params import RingOscillatorParams
from hw_models.ring import RingNetwork, pack_ring_params, ring_initial_state, ring_rhs, ring_rhs_np
from hw_models.waveform import crossing_times

__all__ = ["LimitCycle", "limit_cycle", "ppv", "CouplingFunction", "ring_coupling_function",
           "coupler_current", "locking_range_two_rings", "macro_locking_boundary"]


@dataclass(frozen=True)
class LimitCycle:
    """One period of the free-running ring, sampled uniformly in phase.

    ``theta`` (M,) rad in [0, 2π); ``x`` (M, n) node voltages [V], phase 0 at the rising V_DD/2 crossing of
    node 0; ``period_s``; ``ppv`` (M, n) rad/V; ``params`` the ring.
    """

    theta: np.ndarray
    x: np.ndarray
    period_s: float
    ppv: np.ndarray
    params: RingOscillatorParams

    @property
    def f0_hz(self) -> float:
        return 1.0 / self.period_s

    @property
    def omega(self) -> float:
        return 2 * math.pi / self.period_s


def _rhs1(p):
    n = int(p[0])
    buf = np.zeros(n)

    def f(t, y):
        ring_rhs(t, y, p, buf)
        return buf.copy()

    return f


def _jac(p, x, h=1e-6):
    """Jacobian (M, n, n) of the ring rhs at states x (M, n) by central differences."""
    M, n = x.shape
    J = np.empty((M, n, n))
    P = np.broadcast_to(p, (M, p.size))
    for k in range(n):
        e = np.zeros(n)
        e[k] = h
        J[:, :, k] = (ring_rhs_np(x + e, P) - ring_rhs_np(x - e, P)) / (2 * h)
    return J


def _t_guess(ring: RingOscillatorParams) -> float:
    """Period estimate 2 n t_d with t_d = C V_DD / (2 I_sat) [s] (used only to pick time steps)."""
    i = min(0.5 * ring.beta_n_a_per_v2 * (ring.vdd_v - ring.vto_n_v) ** 2,
            0.5 * ring.beta_p_a_per_v2 * (ring.vdd_v + ring.vto_p_v) ** 2)
    return 2 * ring.n_stages * ring.c_load_f * ring.vdd_v / (2 * i)


def settle_ring(ring: RingOscillatorParams, n_periods: int = 40, steps_per_period: int = 400):
    """Run one ring from the kick state; returns (t, y (S, n), crossing times of node 0).

    A one-ring precomputation: it uses the disk-cached reference RK4 loop of :mod:`hw_models._integrate`
    (no per-process compilation) rather than the engine.
    """
    from hw_models._integrate import integrate

    net = RingNetwork.single(ring)
    p = pack_ring_params(net)
    tg = _t_guess(ring)
    y0 = ring_initial_state(net)
    level = 0.5 * ring.vdd_v
    for scale in (1.0, 4.0, 16.0):
        dt = tg / steps_per_period
        ts, ys = integrate(ring_rhs, p[None], y0[None], scale * n_periods * tg, dt, save_every=1, engine=False)
        tc = crossing_times(ts, ys[:, 0, 0], level)
        if len(tc) >= 8:
            T = float(np.mean(np.diff(tc[-4:])))
            if T < tg / 4:  # guess far too slow: resolution is poor, redo with the measured period
                tg = T
                continue
            return ts, ys[:, 0, :], tc
        tg *= 4
    raise ValueError("the ring does not oscillate with these parameters (no sustained threshold crossings)")


@functools.lru_cache(maxsize=64)
def limit_cycle(ring: RingOscillatorParams, n_points: int = 1024) -> LimitCycle:
    """Limit cycle and PPV of a single free-running ring (cached per params, in this process and on disk).

    The disk cache (:mod:`hw_models.derived_cache`, keyed on the parameters, the hw_models sources and the
    NumPy/SciPy versions) returns the arrays this code computed, bit for bit; it spares every new process the
    0.4 s solve and SciPy's integrators' import.

    Raises ValueError if the ring does not oscillate.
    """
    from hw_models.derived_cache import cached_arrays

    a = cached_arrays("limit-cycles", f"{ring!r}:n_points={n_points}", lambda: _solve_limit_cycle(ring, n_points),
                      {"theta": (n_points,), "x": (n_points, None), "period_s": (), "ppv": (n_points, None)})
    return LimitCycle(theta=a["theta"], x=a["x"], period_s=float(a["period_s"]), ppv=a["ppv"], params=ring)


def _solve_limit_cycle(ring: RingOscillatorParams, n_points: int) -> dict:
    """{theta, x, period_s, ppv} of :func:`limit_cycle`, solved (settle, one accurate period, the adjoint)."""
    from scipy.integrate import solve_ivp

    net = RingNetwork.single(ring)
    p = pack_ring_params(net)
    f = _rhs1(p)
    level = 0.5 * ring.vdd_v
    ts, ys, tc = settle_ring(ring)
    T = float(np.mean(np.diff(tc[-4:])))
    # state at the last crossing, then one accurate period
    i = np.searchsorted(ts, tc[-3])
    s2 = solve_ivp(f, (ts[i - 1], tc[-3] + 1e-3 * T), ys[i - 1], rtol=1e-11, atol=1e-13, method="DOP853",
                   dense_output=True)
    xs = s2.sol(tc[-3])
    per = solve_ivp(f, (0, 1.5 * T), xs, method="DOP853", rtol=1e-11, atol=1e-13, dense_output=True)
    tcp = crossing_times(per.t, per.y[0], level)
    # refine the period with the dense solution
    tt = np.linspace(0.5 * T, 1.5 * T, 20001)
    tcd = crossing_times(tt, per.sol(tt)[0], level)
    T = float(tcd[0]) if len(tcd) else T
    th = 2 * math.pi * np.arange(n_points) / n_points
    ts = th / (2 * math.pi) * T
    x = per.sol(ts).T.copy()
    v = _adjoint(p, per.sol, T, n_points)
    return {"theta": th, "x": x, "period_s": T, "ppv": v}


def _adjoint(p, xsol, T, n_points, n_periods=8):
    """Periodic adjoint solution on the phase grid by fixed-step RK4 run backward in time."""
    n = int(p[0])
    omega = 2 * math.pi / T
    sub = 4  # RK4 step = 2 fine-grid intervals; fine grid = sub * n_points
    Mf = sub * n_points
    tf = T * np.arange(Mf + 1) / Mf
    J = _jac(p, xsol(tf).T)  # (Mf+1, n, n)
    JT = np.transpose(J, (0, 2, 1))
    h = 2 * T / Mf
    z = np.ones(n)
    zs = np.empty((n_points, n))
    for _ in range(n_periods):
        # backward from t = T to 0: dz/dt = -J^T z, step -h: z(t-h) = z(t) + h (J^T z) evaluated by RK4
        for i in range(Mf, 0, -2):
            k1 = JT[i] @ z
            k2 = JT[i - 1] @ (z + 0.5 * h * k1)
            k3 = JT[i - 1] @ (z + 0.5 * h * k2)
            k4 = JT[i - 2] @ (z + h * k3)
            z = z + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
            if (i - 2) % sub == 0:
                zs[(i - 2) // sub % n_points] = z
        z = z / np.abs(z).max()
    X = xsol(T * np.arange(n_points) / n_points).T
    F = ring_rhs_np(X, np.broadcast_to(p, (n_points, p.size)))
    norm = np.einsum("ij,ij->i", zs, F)
    return zs * (omega / norm)[:, None]


def ppv(ring: RingOscillatorParams, n_points: int = 1024) -> np.ndarray:
    """PPV ∂θ/∂V_k (M, n) [rad/V] on a uniform phase grid (see :func:`limit_cycle`)."""
    return limit_cycle(ring, n_points).ppv


@dataclass(frozen=True)
class CouplingFunction:
    """H(Δ) = offset + Σ_m a_m sin(mΔ) + b_m cos(mΔ) [rad/s], Δ = θ_j − θ_i (source minus receiver).

    ``harmonics`` (M, 2): rows (a_m, b_m), m = 1..M, the layout of the engine's ``PhaseNetwork(harmonics=)``.
    """

    offset_rad_s: float
    harmonics: np.ndarray

    def __call__(self, delta):
        delta = np.asarray(delta, float)
        m = np.arange(1, len(self.harmonics) + 1)
        ang = np.multiply.outer(delta, m)
        return self.offset_rad_s + (np.sin(ang) @ self.harmonics[:, 0] + np.cos(ang) @ self.harmonics[:, 1])

    def odd_max(self, n_grid: int = 4096) -> float:
        """max_Δ Σ a_m sin(mΔ) [rad/s]."""
        d = np.linspace(0, 2 * math.pi, n_grid, endpoint=False)
        m = np.arange(1, len(self.harmonics) + 1)
        return float(np.max(np.sin(np.multiply.outer(d, m)) @ self.harmonics[:, 0]))


def ring_coupling_function(ring_i: RingOscillatorParams, coupler, ring_j: RingOscillatorParams | None = None,
                           node_a: int = 0, node_b: int = 0, n_harmonics: int = 12,
                           n_points: int = 512) -> CouplingFunction:
    """Coupling function on ring i from ring j through ``coupler`` (node a of i, node b of j).

    Uses ring i's PPV and the waveforms of both rings on a uniform phase grid (cycle average). Cached per
    arguments in this process (a chip compile asks for the same few functions for every layer: 11 ms per
    compile of the tiny model); each call returns its own copy of the harmonics.
    """
    try:
        offset, harm = _ring_coupling_cached(ring_i, coupler, ring_j, node_a, node_b, n_harmonics, n_points)
    except TypeError:  # an argument that cannot be a cache key (unhashable): computed each time
        offset, harm = _ring_coupling(ring_i, coupler, ring_j, node_a, node_b, n_harmonics, n_points)
    return CouplingFunction(offset_rad_s=offset, harmonics=harm.copy())


def _ring_coupling(ring_i, coupler, ring_j, node_a, node_b, n_harmonics, n_points) -> tuple[float, np.ndarray]:
    """(a₀ [rad/s], harmonics (n_harmonics, 2) [rad/s]) of :func:`ring_coupling_function`."""
    ring_j = ring_i if ring_j is None else ring_j
    lci = limit_cycle(ring_i, n_points)
    lcj = lci if ring_j is ring_i or ring_j == ring_i else limit_cycle(ring_j, n_points)
    xa = lci.x[:, node_a]
    va = lci.ppv[:, node_a] / ring_i.c_load_f
    M = n_points
    idx = (np.arange(M)[:, None] + np.arange(M)[None, :]) % M  # [s, Δ] -> s + Δ
    xb = lcj.x[idx, node_b]
    cur = coupler_current(coupler, ring_i, xa[:, None], xb)
    H = (va[:, None] * cur).mean(axis=0)  # over s, for each Δ on the grid
    c = np.fft.rfft(H) / M
    a0 = float(c[0].real)
    m = np.arange(1, n_harmonics + 1)
    harm = np.stack([-2 * c[m].imag, 2 * c[m].real], axis=1)
    return a0, harm


_ring_coupling_cached = functools.lru_cache(maxsize=64)(_ring_coupling)


def locking_range_two_rings(ring: RingOscillatorParams, coupler, node_a: int = 0, node_b: int = 0, **kw) -> float:
    """Macromodel locking range of two identical rings with one coupler: half-width |Δω| ≤ 2 max H_odd [rad/s]."""
    H = ring_coupling_function(ring, coupler, node_a=node_a, node_b=node_b, **kw)
    return 2.0 * H.odd_max()


def macro_locking_boundary(ring: RingOscillatorParams, coupler, *, delta_max: float, tol: float = 1e-4,
                           n_harmonics: int = 12):
    """Macromodel boundary of locking for two rings, ring 1's load scaled by (1 + δ).

    Uses each ring's own PPV and waveform (H_01 and H_10 differ for detuned rings) and the coupling offsets:
    dφ/dt = (ω_1 + a₀,10) − (ω_0 + a₀,01) + H̃_10(−φ) − H̃_01(φ), φ = θ_1 − θ_0, locked iff it has a zero.
    A unilateral coupler (transconductor) has ring 1 as the source and ring 0 as the receiver: H_10 = 0.
    Returns (delta_star, dw_star [rad/s]), dw the free-running detuning ω_0 − ω_1 at the boundary.
    """
    lc0 = limit_cycle(ring, 512)
    d = np.linspace(0, 2 * math.pi, 2048, endpoint=False)

    def margin(delta):
        r1 = ring.replace(c_load_f=ring.c_load_f * (1 + delta))
        h01 = ring_coupling_function(ring, coupler, r1, n_harmonics=n_harmonics)
        dw = lc0.omega - limit_cycle(r1, 512).omega
        if getattr(coupler, "unilateral", False):  # ring 1 drives ring 0 only (receiver a = ring 0)
            rate = -dw - h01(d)
        else:
            h10 = ring_coupling_function(r1, coupler, ring, n_harmonics=n_harmonics)
            rate = -dw + h10(-d) - h01(d)  # dφ/dt on a grid of φ
        return float(min(-rate.min(), rate.max())), dw  # > 0 when dφ/dt changes sign (a fixed point exists)

    # Brent's method on the bracket [0, delta_max]: the margin changes sign once (locked at δ = 0, drifting at
    # delta_max). (A false-position loop kept one end at δ = 0 and returned the bracket's midpoint.)
    from scipy.optimize import brentq

    f0 = margin(0.0)[0]
    if f0 <= 0:
        raise ValueError("identical rings are not locked by this coupler (margin <= 0 at delta = 0)")
    if margin(float(delta_max))[0] > 0:
        raise ValueError(f"still locked at delta_max = {delta_max}; increase it")
    a = b = brentq(lambda x: margin(x)[0], 0.0, float(delta_max), xtol=tol, rtol=1e-10, maxiter=100)
    ds = 0.5 * (a + b)
    return ds, lc0.omega - limit_cycle(ring.replace(c_load_f=ring.c_load_f * (1 + ds)), 512).omega
