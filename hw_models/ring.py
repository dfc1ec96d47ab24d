"""CMOS ring oscillators at circuit level: node-voltage ODEs for networks of coupled inverter rings.

A network is R rings of the same odd stage count n, node k of ring r having the global index r·n + k.
Stage k of a ring drives node k from node k−1 (mod n). Couplers (resistors or transmission gates) join a
node of one ring to a node of another. The state of one network is the (R·n,) vector of node voltages [V];
a batch of G networks (different mismatch draws, supplies, couplings) is integrated by the engine's
:class:`~oscsim.engine.CustomODE` with the Numba right-hand side :func:`ring_rhs`.

Notes
-----
C_k dV_k/dt = I_P(V_{k−1} → V_k) − I_N(V_{k−1}, V_k) + Σ_couplers I_c + i_n,k(t), with the square-law
MOSFET of :mod:`hw_models.mosfet` and, for a transmission gate, an NMOS (gate at V_DD) in parallel with a
PMOS (gate at 0) using the ring's KP, VTO and LAMBDA.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numba
import numpy as np

from hw_models.mosfet import ids_nmos, inverter_current
from hw_models.params import (ResistiveCoupler, RingOscillatorParams, TransconductanceCoupler,
                              TransmissionGateCoupler)

__all__ = [
    "Coupling",
    "RingNetwork",
    "RingMismatch",
    "pack_ring_params",
    "ring_rhs",
    "ring_rhs_np",
    "ring_initial_state",
    "supply_current",
]

_HDR = 6  # header: D, n_stages, n_rings, n_couplers, reserved, reserved
_PER_NODE = 8  # vtn, vtp, beta_n, beta_p, c, vdd, lam_n, lam_p
_PER_COUPLER = 10  # a, b, kind, g, beta_n, beta_p, vtn, vtp, lambda (both), gate voltage V_DD
_KIND_R, _KIND_TG, _KIND_GM = 0.0, 1.0, 2.0


@dataclass(frozen=True, kw_only=True)
class Coupling:
    """One coupler between node ``node_a`` of ring ``ring_a`` and node ``node_b`` of ring ``ring_b``.

    For a unilateral :class:`TransconductanceCoupler`, (ring_a, node_a) is the **receiver** and
    (ring_b, node_b) the **source**: the current sign·g_m (V_b − V_DD/2) − g_out (V_a − V_DD/2) enters node a
    and node b is only sensed. Resistors and transmission gates are symmetric.
    """

    ring_a: int
    node_a: int
    ring_b: int
    node_b: int
    coupler: ResistiveCoupler | TransmissionGateCoupler

    def __post_init__(self):
        for n in ("ring_a", "node_a", "ring_b", "node_b"):
            v = getattr(self, n)
            if not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"Coupling.{n} must be an int >= 0, got {v!r}")
        if not isinstance(self.coupler, (ResistiveCoupler, TransmissionGateCoupler, TransconductanceCoupler)):
            raise ValueError(
                f"Coupling.coupler must be ResistiveCoupler, TransmissionGateCoupler or TransconductanceCoupler, "
                f"got {type(self.coupler).__name__}"
            )
        if (self.ring_a, self.node_a) == (self.ring_b, self.node_b):
            raise ValueError("Coupling joins a node to itself")


@dataclass(frozen=True, kw_only=True)
class RingNetwork:
    """R rings (per-ring parameters, same n_stages) and the couplers between them."""

    rings: tuple
    """Per-ring :class:`RingOscillatorParams` (R,); detuning = different vdd_v or c_load_f."""
    couplings: tuple = ()
    """:class:`Coupling` entries."""

    def __post_init__(self):
        rings = tuple(self.rings)
        if not rings:
            raise ValueError("RingNetwork.rings must hold at least one RingOscillatorParams")
        for r in rings:
            if not isinstance(r, RingOscillatorParams):
                raise ValueError(f"RingNetwork.rings must be RingOscillatorParams, got {type(r).__name__}")
        n = rings[0].n_stages
        if any(r.n_stages != n for r in rings):
            raise ValueError("RingNetwork: all rings must have the same n_stages")
        cs = tuple(self.couplings)
        for c in cs:
            if not isinstance(c, Coupling):
                raise ValueError(f"RingNetwork.couplings must be Coupling, got {type(c).__name__}")
            for ring, node in ((c.ring_a, c.node_a), (c.ring_b, c.node_b)):
                if ring >= len(rings) or node >= n:
                    raise ValueError(f"Coupling refers to ring {ring} node {node}; valid rings 0..{len(rings)-1}, nodes 0..{n-1}")
        object.__setattr__(self, "rings", rings)
        object.__setattr__(self, "couplings", cs)

    @classmethod
    def single(cls, ring: RingOscillatorParams) -> "RingNetwork":
        return cls(rings=(ring,))

    @property
    def n_stages(self) -> int:
        return self.rings[0].n_stages

    @property
    def n_rings(self) -> int:
        return len(self.rings)

    @property
    def dim(self) -> int:
        return self.n_stages * self.n_rings


@dataclass(frozen=True, kw_only=True)
class RingMismatch:
    """Per-device deviations of one chip instance (drawn once, see :func:`hw_models.mismatch.draw_ring_mismatch`).

    Shapes: (R, n) for the per-stage arrays, (K,) for couplers.
    """

    dvt_n_v: np.ndarray
    dvt_p_v: np.ndarray
    c_rel: np.ndarray
    coupler_rel: np.ndarray


def pack_ring_params(network: RingNetwork, mismatch: RingMismatch | None = None) -> np.ndarray:
    """Flatten a network (and optional mismatch) into the parameter vector (P,) used by :func:`ring_rhs`.

    Threshold shifts add to VTO (PMOS: VTO_p + ΔV_T, ΔV_T of either sign); loads scale as C (1 + c_rel);
    a resistive coupler's conductance, a transmission gate's β and a transconductor's g_m scale as
    (1 + coupler_rel).
    """
    n, R, K = network.n_stages, network.n_rings, len(network.couplings)
    D = n * R
    p = np.zeros(_HDR + _PER_NODE * D + _PER_COUPLER * K)
    p[:4] = (D, n, R, K)
    for r, ring in enumerate(network.rings):
        for k in range(n):
            i = r * n + k
            dvn = dvp = crel = 0.0
            if mismatch is not None:
                dvn, dvp, crel = mismatch.dvt_n_v[r, k], mismatch.dvt_p_v[r, k], mismatch.c_rel[r, k]
            c = ring.c_load_f * (1.0 + crel)
            if c <= 0:
                raise ValueError(f"mismatch gives a non-positive load capacitance at ring {r} node {k}")
            p[_HDR + _PER_NODE * i:_HDR + _PER_NODE * (i + 1)] = (
                ring.vto_n_v + dvn, ring.vto_p_v + dvp, ring.beta_n_a_per_v2, ring.beta_p_a_per_v2, c,
                ring.vdd_v, ring.lambda_n_per_v, ring.lambda_p_per_v)
    base = _HDR + _PER_NODE * D
    for j, cp in enumerate(network.couplings):
        rel = 0.0 if mismatch is None else mismatch.coupler_rel[j]
        ra = network.rings[cp.ring_a]
        a, b = cp.ring_a * n + cp.node_a, cp.ring_b * n + cp.node_b
        if isinstance(cp.coupler, ResistiveCoupler):
            vals = (a, b, _KIND_R, cp.coupler.conductance_s * (1 + rel), 0, 0, 0, 0, 0, 0)
        elif isinstance(cp.coupler, TransconductanceCoupler):
            # signed g_m, output conductance, midpoint V_DD/2 of the receiving ring
            vals = (a, b, _KIND_GM, cp.coupler.sign * cp.coupler.gm_s * (1 + rel), cp.coupler.g_out_s, 0, 0, 0,
                    0, 0.5 * ra.vdd_v)
        else:
            tg = cp.coupler
            vals = (a, b, _KIND_TG, 0.0, ra.kp_n_a_per_v2 * tg.w_n_m / tg.l_m * (1 + rel),
                    ra.kp_p_a_per_v2 * tg.w_p_m / tg.l_m * (1 + rel), ra.vto_n_v, ra.vto_p_v,
                    ra.lambda_n_per_v, ra.vdd_v)
        p[base + _PER_COUPLER * j:base + _PER_COUPLER * (j + 1)] = vals
    return p


@numba.njit(cache=True)
def ring_rhs(t, y, p, dydt):
    """dV/dt [V/s] of one ring network; signature of :class:`oscsim.engine.CustomODE`."""
    D = int(p[0])
    n = int(p[1])
    R = int(p[2])
    K = int(p[3])
    for r in range(R):
        for k in range(n):  # stage k is driven by stage k − 1 of its ring
            i = r * n + k
            o = _HDR + _PER_NODE * i
            dydt[i] = inverter_current(y[r * n + (k - 1 + n) % n], y[i], p[o + 5], p[o], p[o + 1], p[o + 2], p[o + 3],
                                       p[o + 6], p[o + 7]) / p[o + 4]
    base = _HDR + _PER_NODE * D
    for c in range(K):
        o = base + _PER_COUPLER * c
        a = int(p[o])
        b = int(p[o + 1])
        if p[o + 2] == 0.0:
            cur = p[o + 3] * (y[b] - y[a])  # current into a
        elif p[o + 2] == 2.0:
            # unilateral: current into the receiver a only; the source b is sensed by a gate
            mid = p[o + 9]
            dydt[a] += (p[o + 3] * (y[b] - mid) - p[o + 4] * (y[a] - mid)) / p[_HDR + _PER_NODE * a + 4]
            continue
        else:
            vg = p[o + 9]
            # NMOS with drain b, source a, gate VDD; PMOS with gate 0: current b -> a
            cur = ids_nmos(vg, y[b], y[a], p[o + 6], p[o + 4], p[o + 8])
            cur -= ids_nmos(0.0, -y[b], -y[a], -p[o + 7], p[o + 5], p[o + 8])
        dydt[a] += cur / p[_HDR + _PER_NODE * a + 4]
        dydt[b] -= cur / p[_HDR + _PER_NODE * b + 4]


def ring_rhs_np(y, p):
    """NumPy twin of :func:`ring_rhs` for a batch: y (G, D), p (G, P) -> dV/dt (G, D)."""
    from hw_models.mosfet import ids_nmos_np

    y = np.atleast_2d(y)
    p = np.atleast_2d(p)
    D, n, R, K = (int(v) for v in p[0, :4])
    node = p[:, _HDR:_HDR + _PER_NODE * D].reshape(len(p), D, _PER_NODE)
    idx = np.arange(D)
    prev = (idx // n) * n + (idx % n - 1) % n
    vin, vout = y[:, prev], y
    vdd = node[..., 5]
    ip = ids_nmos_np(-vin, -vout, -vdd, -node[..., 1], node[..., 3], node[..., 7])
    i_n = ids_nmos_np(vin, vout, 0.0, node[..., 0], node[..., 2], node[..., 6])
    d = (ip - i_n) / node[..., 4]
    base = _HDR + _PER_NODE * D
    for c in range(K):
        q = p[:, base + _PER_COUPLER * c: base + _PER_COUPLER * (c + 1)]
        a, b = int(q[0, 0]), int(q[0, 1])
        if q[0, 2] == 0.0:
            cur = q[:, 3] * (y[:, b] - y[:, a])
        elif q[0, 2] == 2.0:
            d[:, a] += (q[:, 3] * (y[:, b] - q[:, 9]) - q[:, 4] * (y[:, a] - q[:, 9])) / node[:, a, 4]
            continue
        else:
            cur = ids_nmos_np(q[:, 9], y[:, b], y[:, a], q[:, 6], q[:, 4], q[:, 8])
            cur = cur - ids_nmos_np(0.0, -y[:, b], -y[:, a], -q[:, 7], q[:, 5], q[:, 8])
        d[:, a] += cur / node[:, a, 4]
        d[:, b] -= cur / node[:, b, 4]
    return d


def supply_current(y, p):
    """Current drawn from the supplies [A] for states y (..., D) of one packed network p (P,)."""
    from hw_models.mosfet import ids_nmos_np

    D, n = int(p[0]), int(p[1])
    node = p[_HDR:_HDR + _PER_NODE * D].reshape(D, _PER_NODE)
    idx = np.arange(D)
    prev = (idx // n) * n + (idx % n - 1) % n
    y = np.asarray(y)
    ip = ids_nmos_np(-y[..., prev], -y, -node[:, 5], -node[:, 1], node[:, 3], node[:, 7])
    return ip.sum(axis=-1)


def ring_initial_state(network: RingNetwork, phase_shift_stages=None) -> np.ndarray:
    """A start state (D,) [V] that kicks every ring: node k at V_DD if k is even, else 0 (node n−1 conflicts).

    ``phase_shift_stages`` (R,) ints rotate each ring's pattern, giving different initial phases.
    """
    n = network.n_stages
    y = np.zeros(network.dim)
    for r, ring in enumerate(network.rings):
        s = 0 if phase_shift_stages is None else int(phase_shift_stages[r])
        for k in range(n):
            y[r * n + k] = ring.vdd_v if ((k - s) % n) % 2 == 0 else 0.0
    return y
