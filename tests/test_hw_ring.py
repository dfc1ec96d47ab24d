"""Ring oscillator: validation, kernels, macromodel, noise (ISF), mismatch, energy."""

import math

import numpy as np
import pytest

import hw_models as hm
from hw_models import (Coupling, RingNetwork, TransmissionGateCoupler, cmos_65nm_coupler, cmos_65nm_ring,
                       limit_cycle, pack_ring_params)
from hw_models.ring import ring_rhs, ring_rhs_np
from hw_models.waveform import crossing_times


def test_invalid_physics_rejected():
    with pytest.raises(ValueError, match="odd"):
        cmos_65nm_ring(4)
    with pytest.raises(ValueError, match="c_load_f"):
        cmos_65nm_ring(5, c_load_f=-1e-15)
    with pytest.raises(ValueError, match="vdd_v"):
        cmos_65nm_ring(5, vdd_v=0.3)
    with pytest.raises(ValueError, match="unknown"):
        cmos_65nm_ring(5).replace(vdd=1.0)


def test_numba_rhs_matches_numpy_twin():
    ring = cmos_65nm_ring(5)
    net = RingNetwork(rings=(ring, ring.replace(vdd_v=1.1), ring), couplings=(
        Coupling(ring_a=0, node_a=0, ring_b=1, node_b=2, coupler=cmos_65nm_coupler()),
        Coupling(ring_a=1, node_a=1, ring_b=2, node_b=4,
                 coupler=TransmissionGateCoupler(w_n_m=0.2e-6, w_p_m=0.4e-6, l_m=0.1e-6))))
    mm = hm.draw_ring_mismatch(ring, 3, 0, couplers=[c.coupler for c in net.couplings])
    p = pack_ring_params(net, mm)
    rng = np.random.default_rng(1)
    for _ in range(20):
        y = rng.uniform(-0.1, 1.3, net.dim)
        d = np.zeros(net.dim)
        ring_rhs(0.0, y, p, d)
        np.testing.assert_allclose(d, ring_rhs_np(y[None], p[None])[0], rtol=1e-12, atol=1e-3)


def test_ppv_solves_the_adjoint_and_predicts_phase_shifts():
    """The PPV against theory and an independent simulation (v·f = ω holds by construction of the
    normalisation, so it proves nothing): (1) it solves the adjoint equation dv/dt = −Jᵀ v along the orbit
    (spectral derivative on the uniform phase grid, Jacobian by central differences); (2) a small voltage kick
    δV at node 0 of the free-running circuit shifts its asymptotic phase by v_0(θ) δV (measured from the
    node-0 threshold crossings several periods later, DOP853 at rtol 1e-10)."""
    from scipy.integrate import solve_ivp

    from hw_models.ring_macro import _jac, _rhs1

    ring = cmos_65nm_ring(5)
    lc = limit_cycle(ring)
    p = pack_ring_params(RingNetwork.single(ring))
    M, v, w = len(lc.theta), lc.ppv, lc.omega
    k = np.fft.fftfreq(M, 1.0 / M)
    dv_dt = w * np.real(np.fft.ifft(1j * k[:, None] * np.fft.fft(v, axis=0), axis=0))
    resid = dv_dt + np.einsum("mji,mj->mi", _jac(p, lc.x), v)
    assert np.abs(resid).max() < 0.02 * np.abs(dv_dt).max()  # measured 0.34 %
    f, T, level = _rhs1(p), lc.period_s, 0.5 * ring.vdd_v

    def last_crossing(x0, n_periods=6):
        s = solve_ivp(f, (0, n_periods * T), x0, method="DOP853", rtol=1e-10, atol=1e-12, dense_output=True)
        tt = np.linspace((n_periods - 2) * T, n_periods * T, 40001)
        return crossing_times(tt, s.sol(tt)[0], level)[-1]

    dV = 2e-3  # [V]: small against V_DD, large against the integration error
    for m in (100, 400):
        kick = np.zeros(ring.n_stages)
        kick[0] = dV
        shift = -(last_crossing(lc.x[m] + kick) - last_crossing(lc.x[m])) * w  # earlier crossing: phase ahead
        assert abs(shift - v[m, 0] * dV) < 0.02 * np.abs(v[:, 0]).max() * dV, (m, shift, v[m, 0] * dV)
    g = hm.isf_rms(ring)
    assert np.allclose(g, g[0], rtol=1e-3) and 0.1 < g[0] < 1.0  # symmetric ring, all nodes alike


def test_macromodel_locking_range_within_10_percent_of_circuit():
    ring, cp = cmos_65nm_ring(5), cmos_65nm_coupler()
    ds_m, dw_m = hm.macro_locking_boundary(ring, cp, delta_max=0.2, tol=2e-4)
    ds_c, dw_c, (lo, hi) = hm.circuit_locking_boundary(ring, cp, delta_max=0.12, n_grid=6)
    assert abs(dw_m / dw_c - 1) < 0.10


def test_power_matches_cv2f():
    ring = cmos_65nm_ring(5)
    f0 = limit_cycle(ring).f0_hz
    assert abs(hm.ring_power_circuit(ring) / hm.ring_power_cv2f(ring, f0) - 1) < 0.05
    assert hm.energy_per_cycle(ring) == pytest.approx(hm.power(ring) / f0)


def test_phase_diffusion_matches_isf_prediction():
    ring = cmos_65nm_ring(5)
    lc = limit_cycle(ring)
    T = lc.period_s
    scale = (0.02 ** 2 / T) / hm.isf_diffusion(ring)  # raise the noise so 100 cycles resolve it (linear regime)
    pred = hm.isf_diffusion(ring, scale)
    G = 100
    net = RingNetwork.single(ring)
    ts, ys = hm.simulate_ring_networks([net] * G, 110 * T, dt_s=T / 400, sigma=hm.node_noise_sigma(ring, scale),
                                       save_every=4, seed=11)
    cr = [crossing_times(ts, ys[:, g, 0], 0.5 * ring.vdd_v) for g in range(G)]
    D, (lo, hi), n = hm.measure_phase_diffusion(cr, lc.omega)
    assert lo < D < hi
    assert abs(D / pred - 1) < 0.15, (D / pred, lo / pred, hi / pred)
    assert hi / D - 1 < 0.1  # the 95 % CI is tight enough for the 15 % claim


def test_mismatch_frequency_spread_matches_pelgrom_propagation():
    ring = cmos_65nm_ring(5)
    sigma_f = hm.analytic_frequency_spread(ring)
    inst = hm.draw_mismatch(ring, 400, seed=5, method="circuit")
    s = inst.f0_hz.std(ddof=1)
    # std of 400 samples: 95 % CI about ±7 %
    assert abs(s / sigma_f - 1) < 0.10
    again = hm.draw_mismatch(ring, 400, seed=5, method="linear")
    np.testing.assert_array_equal(inst.detail["dvt_n_v"], again.detail["dvt_n_v"])  # same seed, same chip


def test_engine_matches_local_reference_loop():
    from oscsim.engine import RK4, CustomODE, SaveEvery, simulate

    from hw_models._integrate import integrate

    ring = cmos_65nm_ring(5)
    net = hm.two_ring_network(ring, ring.replace(vdd_v=1.15), cmos_65nm_coupler())
    p = pack_ring_params(net)[None]
    y0 = hm.ring_initial_state(net)[None]
    T = limit_cycle(ring).period_s
    sol = simulate(CustomODE(ring_rhs, p, net.dim), RK4(), 0.0, 5 * T, T / 200, y0, save=SaveEvery(50))
    y1 = sol.ys
    ts2, y2 = integrate(ring_rhs, p, y0, 5 * T, T / 200, save_every=50, engine=False)
    np.testing.assert_allclose(y1, y2, atol=1e-9)


def test_macromodel_network_frequencies_follow_circuit():
    """8 mismatched rings on a lattice: per-ring mean frequencies, phase macromodel vs circuit."""
    from oscsim.engine import RK4, SaveEvery, simulate

    ring, cp = cmos_65nm_ring(5), cmos_65nm_coupler(50e3, sigma_rel=0.0)
    N = 8
    lc = limit_cycle(ring)
    T = lc.period_s
    mm = hm.draw_ring_mismatch(ring, N, seed=2)
    mm = hm.RingMismatch(dvt_n_v=mm.dvt_n_v, dvt_p_v=mm.dvt_p_v, c_rel=mm.c_rel, coupler_rel=np.zeros(N))
    net = RingNetwork(rings=(ring,) * N, couplings=tuple(
        Coupling(ring_a=i, node_a=0, ring_b=(i + 1) % N, node_b=0, coupler=cp) for i in range(N)))
    ts, ys = hm.simulate_ring_networks(net, 400 * T, dt_s=T / 50, mismatches=[mm], save_every=2)
    f_c = hm.ring_frequencies(ts, ys, net, 200 * T)[0][0]
    sn, sp, sc = hm.frequency_sensitivities(ring)
    omega = lc.omega + 2 * math.pi * (mm.dvt_n_v @ sn + mm.dvt_p_v @ sp + mm.c_rel @ sc)
    A = np.zeros((N, N))
    for i in range(N):
        A[i, (i + 1) % N] = A[(i + 1) % N, i] = 1
    sol = simulate(hm.ring_phase_network(omega, A, hm.ring_coupling_function(ring, cp, n_harmonics=5)), RK4(),
                   0.0, 400 * T, T / 2, np.zeros((1, N)), save=SaveEvery(1))
    m = sol.ts >= 200 * T
    f_p = (sol.ys[m][-1, 0] - sol.ys[m][0, 0]) / (sol.ts[m][-1] - sol.ts[m][0]) / (2 * math.pi)
    spread = np.std(omega) / (2 * math.pi)
    assert np.mean(np.abs(f_p - f_c)) < 0.2 * spread, (f_p - f_c, spread)


def test_mismatch_draws_are_zero_mean_and_keep_every_element_positive():
    """Against the model's definition (issue 10 item 6, mutation survivors): the coupler spread is N(0, σ_rel)
    (sample mean and std of 400 couplers within their 4-sigma sampling error), and at the largest spreads the
    config allows (σ = 0.5) the Gaussian tail is clipped at −0.9, so no load capacitor C (1 + δ) and no coupler
    strength g (1 + δ) becomes zero or negative: every drawn chip packs without the non-positive-capacitance
    error."""
    from hw_models import cmos_65nm_coupler

    ring = cmos_65nm_ring(5)
    n = 400
    mm = hm.draw_ring_mismatch(ring, 1, seed=3, couplers=[cmos_65nm_coupler(50e3, sigma_rel=0.1)] * n)
    k = mm.coupler_rel
    assert abs(k.mean()) < 4 * 0.1 / math.sqrt(n)
    assert abs(k.std(ddof=1) / 0.1 - 1) < 4 / math.sqrt(2 * (n - 1))

    wide = ring.replace(sigma_c_rel=0.5)  # P(δ < −0.9) = 3.6 %: about 36 clipped of 1,000 loads
    mm = hm.draw_ring_mismatch(wide, 200, seed=4, couplers=[cmos_65nm_coupler(50e3, sigma_rel=0.5)] * n)
    for d in (mm.c_rel, mm.coupler_rel):
        assert d.min() == pytest.approx(-0.9)  # the tail is there and it is clipped
        assert np.all(d >= -0.9)
    cp = Coupling(ring_a=0, node_a=0, ring_b=1, node_b=0, coupler=cmos_65nm_coupler(50e3, sigma_rel=0.5))
    net = RingNetwork(rings=(wide,) * 200, couplings=(cp,))
    one = hm.RingMismatch(dvt_n_v=mm.dvt_n_v, dvt_p_v=mm.dvt_p_v, c_rel=mm.c_rel, coupler_rel=mm.coupler_rel[:1])
    p = pack_ring_params(net, one)  # raises on a non-positive load capacitance
    assert np.all(np.isfinite(p))


def _wiener_crossings(rng, D, omega, n_osc, n_cross):
    """Rising-crossing times of ideal oscillators whose phase is a Wiener process with diffusion D: the
    crossing-time jitter per cycle is N(0, D T / ω²), independent from cycle to cycle."""
    T = 2 * math.pi / omega
    jit = rng.normal(0.0, math.sqrt(D * T) / omega, (n_osc, n_cross))
    return [T * np.arange(n_cross) + np.cumsum(j) for j in jit]


def test_phase_diffusion_estimator_recovers_a_known_diffusion():
    """measure_phase_diffusion on synthetic crossing times with a known D (no circuit simulation): it uses
    every full block after the skipped cycles (40 oscillators × (1,011 − 10 − 1) // 5 = 200 blocks each),
    returns D within 4 standard errors (√(2/n) relative) and a CI that holds it."""
    rng = np.random.default_rng(7)
    D, omega = 3.0e3, 2 * math.pi * 1e9
    cr = _wiener_crossings(rng, D, omega, 40, 1011)
    est, (lo, hi), n = hm.measure_phase_diffusion(cr, omega, block_cycles=5, skip_cycles=10)
    assert n == 40 * 200
    assert lo < D < hi
    assert abs(est / D - 1) < 4 * math.sqrt(2 / n)


def test_phase_diffusion_ci_has_its_nominal_coverage():
    """The χ² interval is a 95 % interval: over 4,000 independent small experiments (11 one-cycle increments
    each) the true D lies above the upper bound in 2.5 % of them and below the lower bound in 2.5 %
    (expected 100 each, binomial sd 9.9; a wrong number of degrees of freedom moves the upper one to ~7 %)."""
    rng = np.random.default_rng(8)
    D, omega = 1.0e3, 2 * math.pi * 1e8
    above = below = 0
    for _ in range(4000):
        _, (lo, hi), n = hm.measure_phase_diffusion(_wiener_crossings(rng, D, omega, 1, 12), omega,
                                                    block_cycles=1, skip_cycles=0)
        above += D > hi
        below += D < lo
    assert n == 11
    assert 60 < above < 140 and 60 < below < 140, (above, below)


def test_zero_load_capacitance_is_refused():
    """A node with C (1 + δ) = 0 (δ = −1) has no dV/dt = I/C: packing it must fail, not divide by zero later."""
    ring = cmos_65nm_ring(5)
    z = np.zeros((1, 5))
    c = z.copy()
    c[0, 2] = -1.0
    mm = hm.RingMismatch(dvt_n_v=z, dvt_p_v=z, c_rel=c, coupler_rel=np.zeros(0))
    with pytest.raises(ValueError, match="non-positive load capacitance"):
        pack_ring_params(RingNetwork.single(ring), mm)


def test_phase_noise_spectrum_is_the_wiener_lorentzian():
    """A carrier whose phase diffuses with D has a Lorentzian line of half-width γ = D/4π [Hz]: its
    two-sided spectrum 10^(L/10) integrates to the carrier's unit power, and far from the carrier
    L(f) → 10 log10(D / (4π² f²)) (the −20 dB/decade law)."""
    from scipy.integrate import quad

    from hw_models.noise import phase_noise_dbc_hz_from_diffusion as pn

    D = 2.0e4
    g = D / (4 * math.pi)
    lin = lambda f: 10 ** (pn(D, f) / 10)  # noqa: E731
    total = 2 * quad(lambda u: lin(g * math.tan(u)) * g / math.cos(u) ** 2, 0, math.pi / 2 * (1 - 1e-9))[0]
    assert total == pytest.approx(1.0, rel=1e-6)
    f = np.array([1e6, 1e7])
    np.testing.assert_allclose(pn(D, f), 10 * np.log10(D / (4 * math.pi ** 2 * f ** 2)), atol=1e-4)


def test_negative_noise_scale_is_refused_by_name():
    with pytest.raises(ValueError, match="noise_scale"):
        hm.node_noise_sigma(cmos_65nm_ring(5), noise_scale=-1.0)


def test_ring_network_freezes_what_it_validated():
    """RingNetwork validates its rings and couplings, then keeps its own tuples: growing the caller's list
    afterwards (here by a 7-stage ring, which validation would refuse) does not change the network; the
    refusals name the class and the field."""
    r5 = cmos_65nm_ring(5)
    rings = [r5, r5]
    net = RingNetwork(rings=rings, couplings=[])
    rings.append(cmos_65nm_ring(7))
    assert isinstance(net.rings, tuple) and len(net.rings) == 2 and net.dim == 10
    with pytest.raises(ValueError, match="RingNetwork.rings must hold at least one RingOscillatorParams"):
        RingNetwork(rings=(), couplings=())
    with pytest.raises(ValueError, match="RingNetwork: all rings must have the same n_stages"):
        RingNetwork(rings=(r5, cmos_65nm_ring(7)), couplings=())


def test_resistor_between_in_phase_twins_carries_no_current():
    """Two identical rings joined by a resistor at the same node: in phase (Δ = 0) both ends sit at the same
    voltage, so no current flows and H(0) = offset + Σ b_m = 0, while H is not zero elsewhere."""
    from hw_models import ResistiveCoupler
    from hw_models.ring_macro import ring_coupling_function

    H = ring_coupling_function(cmos_65nm_ring(5), ResistiveCoupler(resistance_ohm=20e3))
    d = np.linspace(0, 2 * math.pi, 256, endpoint=False)
    big = np.abs(H(d)).max()
    assert big > 0 and abs(H(0.0)) < 1e-3 * big, (H(0.0), big)


def test_coupling_function_odd_max_against_closed_forms():
    """max_Δ Σ a_m sin(mΔ): |a| for one harmonic; for a sin Δ + (a/2) sin 2Δ the maximum sits at
    cos Δ + cos 2Δ = 0, i.e. Δ* = π/3: value a (sin Δ* + sin(2Δ*)/2) = (3√3/4) a; the cos terms and the offset
    do not enter."""
    from hw_models.ring_macro import CouplingFunction

    one = CouplingFunction(offset_rad_s=5.0, harmonics=np.array([[2.0, 7.0]]))
    assert one.odd_max() == pytest.approx(2.0, rel=1e-6)
    x = math.pi / 3
    want = 3.0 * (math.sin(x) + math.sin(2 * x) / 2)
    H = CouplingFunction(offset_rad_s=0.0, harmonics=np.array([[3.0, 1.0], [1.5, -2.0]]))
    assert H.odd_max() == pytest.approx(want, rel=1e-5)


def test_coupling_function_cache_returns_the_computed_values_in_a_fresh_array():
    """``ring_coupling_function`` is cached per arguments in the process: a second call gives the bits of an
    uncached computation, in an array of its own (writing into one result leaves the next call's alone)."""
    from hw_models import ResistiveCoupler
    from hw_models.ring_macro import _ring_coupling, ring_coupling_function

    ring, cp = cmos_65nm_ring(5), ResistiveCoupler(resistance_ohm=20e3)
    first = ring_coupling_function(ring, cp, n_harmonics=6)
    off, harm = _ring_coupling(ring, cp, None, 0, 0, 6, 512)
    first.harmonics[:] = 0.0
    second = ring_coupling_function(ring, cp, n_harmonics=6)
    assert second.offset_rad_s == off and np.array_equal(second.harmonics, harm) and np.any(harm != 0)
    assert second.harmonics is not first.harmonics
