"""Flicker (1/f) drain-current noise at the ring's nodes in the circuit model (issue 11 item 5, circuit rung)."""

import math

import numpy as np
import pytest

from hw_models.flicker import FlickerNoise, ring_flicker_coefficient
from hw_models.coupled_rings import (build_head, draw_circuit_mismatch, network_rhs, network_rhs_np,
                                  ring_phase_noise, simulate_heads)


def test_flicker_states_in_the_rhs_match_the_numpy_twin(circuit_dev):
    """The OU currents are K_f extra states per node: they enter the node current and decay at their rates."""
    rng = np.random.default_rng(1)
    G, T = 2, 5
    fl = FlickerNoise(corner_hz=1e6, f_min_hz=1e3, f_max_hz=1e8, per_decade=2)
    head = build_head(circuit_dev, rng.uniform(0, 2 * math.pi, (G, T)), 0.05 * rng.standard_normal((G, T, T)),
                      steps_per_period=100, stochastic=True, noise=True, flicker=fl,
                      mismatch=draw_circuit_mismatch(circuit_dev, (G, T), [4, 0, 3]))
    kf = fl.n_processes
    assert kf == 11 and int(head.params[0, 10]) == kf
    D = T * circuit_dev.ring.n_stages
    y = np.concatenate([head.y0, 1e-6 * rng.standard_normal((G, D * kf))], axis=1)
    ref = network_rhs_np(y, head.params)
    for g in range(G):
        d = np.empty(y.shape[1])
        network_rhs(0.0, y[g], head.params[g], d)
        np.testing.assert_allclose(d, ref[g], rtol=1e-11, atol=1e-9 * np.abs(ref[g, :D]).max())
    # the OU currents do act on the nodes, and only through their sum per node
    y2 = y.copy()
    y2[:, D:] = 0.0
    diff = network_rhs_np(y, head.params)[:, :D] - network_rhs_np(y2, head.params)[:, :D]
    expect = y[:, D:].reshape(G, D, kf).sum(-1) / head.c_load.reshape(G, D)
    np.testing.assert_allclose(diff, expect, rtol=1e-9, atol=1e-12 * np.abs(expect).max())
    # the stationary std of each OU current is sqrt(S_w f_c ln r) (the hw_models bank definition)
    assert head.flicker_std_a == pytest.approx(np.sqrt(fl.variance(circuit_dev.s_i_a2_per_hz)))
    # noise off: no flicker states (flicker is noise)
    quiet = build_head(circuit_dev, np.zeros((1, 2)), np.zeros((1, 2, 2)), steps_per_period=100, stochastic=False, flicker=fl)
    assert quiet.flicker is None and int(quiet.params[0, 10]) == 0


def test_circuit_ring_with_flicker_has_the_1_over_f3_and_1_over_f2_slopes(circuit_dev):
    """8 free-running rings at circuit level (stochastic Heun T/50, 16,384 cycles each, ~13 s warm), white
    thermal node noise plus the OU bank of 1/f current noise at every node; phase from node-0 crossings, Welch.

    The corner is EXAGGERATED so that the test is cheap: with the assumed 1 MHz device corner the 1/f^3
    phase-noise corner of this ring is f_c (Γ_dc/Γ_rms)² = 1.8 kHz, 10^6 cycles below f0, not simulable at
    node level in seconds. Here f_c = (f0/200)/(Γ_dc/Γ_rms)² = 4.9 GHz puts the phase-noise corner f3 at
    f0/200 = 9 MHz, with a short band [f3/64, 16 f3] (7 OU processes per node). The flicker current stays
    ≈ 0.5 µA RMS against ≈ 100 µA of drive (small-signal). Fitted slope of L(f) within 0.3 of −3 over
    [f3/10, f3/3] and of −2 over [3 f3, 12 f3]; the rung check: the circuit's L against the macromodel's
    D/(4π² f²) + (Σ v̄_k²/C²) S_bank(f)/(8π² f²) in the 1/f³ band, measured 1.03 ± 0.04 (within 1.5 dB
    asserted)."""
    f0 = 1.0 / circuit_dev.period_s
    g2 = ring_flicker_coefficient(circuit_dev.ring, FlickerNoise(corner_hz=1.0, f_min_hz=1.0, f_max_hz=10.0))[
        "gamma_dc_over_rms"] ** 2
    f3 = f0 / 200
    fl = FlickerNoise(corner_hz=f3 / g2, f_min_hz=f3 / 64, f_max_hz=16 * f3, per_decade=2)
    r = ring_phase_noise(circuit_dev, fl, n_cycles=16384, n_rings=8, steps_per_period=50, nperseg=8192, seed=0)
    f, L, P = r["f_hz"], r["L_dbc_hz"], r["L_macromodel_dbc_hz"]

    def slope(lo, hi):
        m = (f >= lo) & (f <= hi)
        return np.polyfit(np.log10(f[m]), L[m] / 10, 1)[0]

    def ratio(lo, hi):
        m = (f >= lo) & (f <= hi)
        x = 10 ** ((L[m] - P[m]) / 10)
        return x.mean(), x.std() / math.sqrt(m.sum())

    s3, s2 = slope(f3 / 10, f3 / 3), slope(3 * f3, 12 * f3)
    r3, r2 = ratio(f3 / 10, f3 / 3), ratio(3 * f3, 12 * f3)
    print(f"slopes {s3:.3f} below, {s2:.3f} above the corner; circuit/macromodel L: {r3[0]:.3f} +- {r3[1]:.3f} "
          f"(1/f^3 band), {r2[0]:.3f} +- {r2[1]:.3f} (1/f^2 band); {r['n_segments']} segments, {r['wall_s']:.1f} s")
    assert abs(s3 + 3) < 0.3
    assert abs(s2 + 2) < 0.3
    assert abs(10 * math.log10(r3[0])) < 1.5


def test_flicker_is_a_ring_circuit_config_field():
    from mapping import ChipConfig
    from mapping.config import config_from_dict

    assert ChipConfig().flicker is False
    assert ChipConfig(device="ring-circuit", flicker=True).flicker is True
    with pytest.raises(ValueError, match="flicker = true is simulated at circuit level only"):
        ChipConfig(device="ring-macromodel", flicker=True)
    with pytest.raises(ValueError, match="flicker must be true or false"):
        config_from_dict({"device": "ring-circuit", "flicker": "yes"})
    assert ChipConfig(device="ring-circuit", flicker=True).idealised().flicker is False


def test_flicker_moves_a_circuit_head_and_is_keyed(circuit_dev):
    """The chip's bank (1 MHz corner, assumed; 1 kHz-100 MHz) on a small head: the read phases differ from the
    white-noise-only run with the same stream seeds, and the same seeds give the same phases."""
    from mapping.backends.circuit import circuit_flicker
    from mapping.seeds import stream_seeds

    rng = np.random.default_rng(2)
    G, T = 2, 4
    th = rng.uniform(0, 2 * math.pi, (G, T))
    C = 0.05 * np.tril(rng.standard_normal((G, T, T)), -1)
    seeds = stream_seeds(3, np.arange(G))
    kw = dict(steps_per_period=100, stochastic=True, noise=True)
    a = simulate_heads(build_head(circuit_dev, th, C, flicker=circuit_flicker(), **kw), settle_cycles=4, seed=seeds)["psi"]
    b = simulate_heads(build_head(circuit_dev, th, C, flicker=circuit_flicker(), **kw), settle_cycles=4, seed=seeds)["psi"]
    w = simulate_heads(build_head(circuit_dev, th, C, **kw), settle_cycles=4, seed=seeds)["psi"]
    np.testing.assert_array_equal(a, b)
    assert np.all(a != w)


def test_flicker_without_noise_is_refused_as_inert():
    from mapping import ChipConfig
    from mapping.compiler.inert import inert_fields

    assert "flicker" in inert_fields(ChipConfig(device="ring-circuit", flicker=True, noise=False), "kuramoto")
    assert "flicker" not in inert_fields(ChipConfig(device="ring-circuit", flicker=True), "kuramoto")


def test_chip_summary_states_the_circuit_realism_switches():
    from mapping import ChipConfig
    from mapping.backends.circuit import circuit_summary
    from mapping.periphery.injection import InjectionConfig

    assert circuit_summary(ChipConfig(device="ring-circuit")) == ""
    s = circuit_summary(ChipConfig(device="ring-circuit", flicker=True, injection=InjectionConfig(mode="injected")))
    assert "corner 1e+06 Hz (assumed)" in s and "11 OU currents per node" in s and "20 cycles" in s
