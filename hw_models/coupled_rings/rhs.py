"""The right-hand side of T coupled rings: node-voltage ODEs of inverter rings and unilateral two-tap
transconductors (one group of :class:`oscsim.engine.CustomODE` per network), and its NumPy twin.

Parameter layout of one network (``params`` row, float64):

- header (``HEADER`` = 17): T, n, k_tap, w₁, w₂, V_mid, V_DD, λ_n, λ_p, coupled (0/1), K_f, offset of the
  flicker rates, t_off [s], ε [s], injection amplitude I [A] (0: none), ω_ref [rad/s], offset of the T
  injection phases;
- per node (``PER_NODE`` = 5, T·n nodes ring-major): V_T,n, V_T,p, β_n, β_p, 1/C;
- the T×T signed transconductances G_{t,u} [S] (lower triangle used);
- K_f flicker OU rates [1/s]; (injection) T reference phases [rad].

State: the T·n node voltages [V], then (flicker on) K_f OU currents [A] per node, node-major.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from hw_models.mosfet import inverter_current

__all__ = ["HEADER", "PER_NODE", "T_NEVER", "network_rhs", "network_rhs_np", "ring_rows"]

HEADER = 17  # T, n, k_tap, w1, w2, vmid, vdd, lam_n, lam_p, coupled, K_f, flicker-rate offset, t_off [s], ε [s],
# injection amplitude I [A] (0: none), ω_ref [rad/s], offset of the T injection phases
PER_NODE = 5  # vtn, vtp, beta_n, beta_p, 1/C
T_NEVER = 1e300  # t_off of a head that is not switched: couplers on for the whole run [s]


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _coupler_currents(p, g0, T, n, fac, src, dydt):
    """dydt[r n] = fac Σ_{u<r} G_{r,u} src_u [A] (the lower-triangular coupler product of one network).

    Reassociation lets the compiler vectorise each row's sum (order of a sum of ≤ 127 terms: rounding only,
    ~1e-16 relative); nothing else is relaxed, and the MOSFET currents stay strict."""
    for r in range(T):
        row = g0 + r * T
        acc = 0.0
        for u in range(r):
            acc += p[row + u] * src[u]
        dydt[r * n] = fac * acc


@numba.njit(cache=True)
def network_rhs(t, y, p, dydt):
    """dV/dt [V/s] of T coupled rings (one group of :class:`oscsim.engine.CustomODE`); layout in module docs.

    State: the T·n node voltages [V], then (flicker on) K_f OU currents [A] per node, node-major. The couplers
    act for t < t_off − ε, at half strength for |t − t_off| ≤ ε (the switching instant: the value of a step
    function that keeps the trapezoid and RK4 weights of the coupled window exactly τ_s) and not after."""
    T = int(p[0])
    n = int(p[1])
    kt = int(p[2])
    w1 = p[3]
    w2 = p[4]
    vmid = p[5]
    vdd = p[6]
    lam_n = p[7]
    lam_p = p[8]
    kf = int(p[10])
    D0 = T * n
    fac = 0.0
    if p[9] != 0.0 and T > 1:
        if t < p[12] - p[13]:
            fac = 1.0
        elif t <= p[12] + p[13]:
            fac = 0.5
    if fac != 0.0:
        src = np.empty(T)
        for u in range(T):
            src[u] = w1 * (y[u * n] - vmid) + w2 * (y[u * n + kt] - vmid)
        _coupler_currents(p, HEADER + PER_NODE * D0, T, n, fac, src, dydt)
    else:
        for r in range(T):
            dydt[r * n] = 0.0
    if p[14] != 0.0:  # injection locking: I cos(ω_ref t + φ_r) into node 0 of every ring
        po = int(p[16])
        for r in range(T):
            dydt[r * n] += p[14] * math.cos(p[15] * t + p[po + r])
    for r in range(T):
        for k in range(n):  # stage k is driven by stage k − 1 of its ring
            i = r * n + k
            o = HEADER + PER_NODE * i
            cur = inverter_current(y[r * n + (k - 1 + n) % n], y[i], vdd, p[o], p[o + 1], p[o + 2], p[o + 3], lam_n, lam_p)
            if k == 0:
                cur += dydt[i]
            for q in range(kf):  # flicker: the node's OU currents
                cur += y[D0 + i * kf + q]
            dydt[i] = cur * p[o + 4]
    if kf > 0:
        fo = int(p[11])
        for i in range(D0):
            for q in range(kf):
                m = D0 + i * kf + q
                dydt[m] = -p[fo + q] * y[m]


def network_rhs_np(y, p, t=0.0):
    """NumPy twin of :func:`network_rhs` for a batch: y (G, D), p (G, P) -> dy/dt (G, D) at time t [s]."""
    from hw_models.mosfet import ids_nmos_np

    y = np.atleast_2d(y)
    p = np.atleast_2d(p)
    T, n, kt = (int(x) for x in p[0, :3])
    kf = int(p[0, 10])
    w1, w2, vmid, vdd, lam_n, lam_p = (p[:, i:i + 1] for i in range(3, 9))
    D = T * n
    node = p[:, HEADER:HEADER + PER_NODE * D].reshape(len(p), D, PER_NODE)
    idx = np.arange(D)
    prev = (idx // n) * n + (idx % n - 1) % n
    v = y[:, :D]
    vin, vout = v[:, prev], v
    ip = ids_nmos_np(-vin, -vout, -vdd, -node[..., 1], node[..., 3], lam_p)
    i_n = ids_nmos_np(vin, vout, 0.0, node[..., 0], node[..., 2], lam_n)
    cur = ip - i_n
    out = np.zeros_like(y)
    if kf:
        ou = y[:, D:].reshape(len(p), D, kf)
        cur = cur + ou.sum(-1)
        fo = int(p[0, 11])
        out[:, D:] = (-p[:, None, fo:fo + kf] * ou).reshape(len(p), D * kf)
    if p[0, 9] != 0.0 and T > 1:
        t_off, eps = p[:, 12:13], p[:, 13:14]
        fac = np.where(t < t_off - eps, 1.0, np.where(t <= t_off + eps, 0.5, 0.0))
        G = p[:, HEADER + PER_NODE * D:HEADER + PER_NODE * D + T * T].reshape(len(p), T, T)
        G = np.tril(G, -1)
        src = w1 * (v[:, 0::n] - vmid) + w2 * (v[:, kt::n] - vmid)
        cur[:, 0::n] += fac * np.einsum("gtu,gu->gt", G, src)
    if p[0, 14] != 0.0:
        po = int(p[0, 16])
        cur[:, 0::n] += p[:, 14:15] * np.cos(p[:, 15:16] * t + p[:, po:po + T])
    out[:, :D] = cur * node[..., 4]
    return out


def ring_rows(dev, dvn, dvp, c_load) -> np.ndarray:
    """Single-ring parameter rows (N, P1) of :func:`network_rhs` (couplers off) for (N, n) arrays."""
    ring = dev.ring
    N, n = c_load.shape
    hdr = np.zeros((N, HEADER))
    hdr[:] = (1, n, dev.tap_node, dev.weights[0], dev.weights[1], 0.5 * ring.vdd_v, ring.vdd_v,
              ring.lambda_n_per_v, ring.lambda_p_per_v, 0.0, 0, 0, T_NEVER, 0.0, 0.0, 0.0, 0)
    node = np.stack([ring.vto_n_v + dvn, ring.vto_p_v + dvp, np.full((N, n), ring.beta_n_a_per_v2),
                     np.full((N, n), ring.beta_p_a_per_v2), 1.0 / c_load], axis=-1)
    return np.concatenate([hdr, node.reshape(N, -1)], axis=1)
