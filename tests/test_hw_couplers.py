"""Unilateral transconductance coupler: circuit right-hand side, and its PPV-derived H against the circuit."""

import math

import numpy as np
import pytest

import hw_models as hm
from hw_models.ring import Coupling, RingNetwork, pack_ring_params, ring_rhs, ring_rhs_np
from hw_models.ring_sim import simulate_ring_networks
from hw_models.waveform import crossing_times


def test_transconductor_rhs_is_one_way_and_matches_numpy_twin():
    ring = hm.cmos_65nm_ring()
    cp = hm.TransconductanceCoupler(gm_s=40e-6, sign=-1, g_out_s=3e-6)
    net = RingNetwork(rings=(ring, ring), couplings=(Coupling(ring_a=0, node_a=0, ring_b=1, node_b=2, coupler=cp),))
    p = pack_ring_params(net)
    free = pack_ring_params(RingNetwork(rings=(ring, ring)))
    rng = np.random.default_rng(0)
    for _ in range(10):
        y = rng.uniform(0.0, 1.2, net.dim)
        d, d0 = np.zeros(net.dim), np.zeros(net.dim)
        ring_rhs(0.0, y, p, d)
        ring_rhs(0.0, y, free, d0)
        np.testing.assert_allclose(d, ring_rhs_np(y[None], p[None])[0], rtol=1e-12, atol=1e-3)
        # the source ring (1) is only sensed; the receiver's node 0 gets exactly the OTA current / C
        np.testing.assert_array_equal(d[5:], d0[5:])
        i = -cp.gm_s * (y[5 + 2] - 0.6) - cp.g_out_s * (y[0] - 0.6)
        assert math.isclose((d[0] - d0[0]) * ring.c_load_f, i, rel_tol=1e-9)
        np.testing.assert_array_equal(d[1:5], d0[1:5])


def _slip_rate(ts, va, vb, level, t_start):
    """Mean dψ/dt [rad/s], ψ = θ_b − θ_a, over a whole number of phase slips (crossing-interpolated phases)."""
    ca, cb = crossing_times(ts, va, level), crossing_times(ts, vb, level)
    ca, cb = ca[ca > t_start], cb[cb > t_start]
    m = (ca > cb[0]) & (ca < cb[-1])
    psi = 2 * np.pi * (np.interp(ca[m], cb, np.arange(len(cb))) - np.arange(len(ca))[m])
    k = np.floor((psi - psi[0]) / (2 * np.pi))
    slips = ca[m][np.nonzero(np.diff(k) != 0)[0]]
    assert len(slips) >= 3, "too few phase slips to measure the drift"
    return 2 * np.pi * (len(slips) - 1) / (slips[-1] - slips[0]) * np.sign(psi[-1] - psi[0]), len(slips) - 1


@pytest.mark.parametrize("sign", [1, -1])
def test_transconductor_h_predicts_two_ring_drift_rate_within_5_percent(sign):
    """Ring B (nominal) drives ring A (load × 1.012) one way through an OTA. The macromodel:
    dψ/dt = Δω − H(ψ), H from A's PPV and B's waveform; its mean slip rate 2π / ∮ dψ/(Δω − H) is compared with
    the circuit's (node-voltage ODE of both rings and the OTA current source)."""
    ring = hm.cmos_65nm_ring()
    ra = ring.replace(c_load_f=ring.c_load_f * 1.012)
    A, B = hm.RingOscillator(ra), hm.RingOscillator(ring)
    cp = hm.TransconductanceCoupler(gm_s=10e-6, sign=sign)
    H = A.coupling_function(cp, source=B)
    dw = B.omega() - A.omega()
    psi = np.linspace(0, 2 * np.pi, 4096, endpoint=False)
    rate = dw - H(psi)
    assert np.all(rate > 0)  # drifting, not locked
    macro = 2 * np.pi / np.mean(2 * np.pi / rate)
    assert macro < 0.85 * dw  # the coupling changes the drift substantially (the check is not trivial)
    net = RingNetwork(rings=(ra, ring), couplings=(Coupling(ring_a=0, node_a=0, ring_b=1, node_b=0, coupler=cp),))
    T = B.limit_cycle().period_s
    ts, ys = simulate_ring_networks(net, 600 * T, dt_s=T / 200, save_every=2)
    circ, n = _slip_rate(ts, ys[:, 0, 0], ys[:, 0, ring.n_stages], 0.5 * ring.vdd_v, 30 * T)
    assert abs(circ / macro - 1) < 0.05, (circ, macro, n)
