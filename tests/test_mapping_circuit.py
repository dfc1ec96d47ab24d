"""The ring-circuit chip: node-voltage SDE networks of a compiled Kuramoto layer (mapping.backends.circuit, hw_models.coupled_rings)."""

import math

import numpy as np
import pytest

from hw_models.coupled_rings import (build_head, draw_circuit_mismatch, network_rhs, network_rhs_np,
                                  simulate_heads)


def test_network_rhs_matches_its_numpy_twin(circuit_dev):
    rng = np.random.default_rng(3)
    G, T = 3, 6
    mm = draw_circuit_mismatch(circuit_dev, (G, T), [1, 2, 3])
    C = 0.05 * rng.standard_normal((G, T, T))
    head = build_head(circuit_dev, rng.uniform(0, 2 * math.pi, (G, T)), C, steps_per_period=100, stochastic=False,
                      mismatch=mm, freq_residual_rel=1e-4 * rng.standard_normal((G, T)))
    y = head.y0 + 0.05 * rng.standard_normal(head.y0.shape)  # off the cycle: every transistor region is used
    ref = network_rhs_np(y, head.params)
    for g in range(G):
        d = np.empty(y.shape[1])
        network_rhs(0.0, y[g], head.params[g], d)
        np.testing.assert_allclose(d, ref[g], rtol=1e-12, atol=1e-6 * np.abs(ref).max())
    # the couplers act: dropping them changes node 0 of every receiving ring and no other node
    p0 = head.params.copy()
    p0[:, 9] = 0.0
    diff = network_rhs_np(y, p0) - ref
    n = circuit_dev.ring.n_stages
    assert np.all(diff[:, [k for k in range(T * n) if k % n]] == 0)
    assert np.all(np.abs(diff[:, n::n]) > 0)


def test_transconductor_coupling_function_predicts_two_ring_drift(circuit_dev):
    """Ring 1 receives from ring 0 through the two-tap transconductor: over 4 cycles its phase moves by
    4 C H(θ₀ − θ₁) (weak coupling, C = 0.005 rad/cycle) with H from the receiver's PPV (a₁ = 1 normalised)."""
    G = 12
    ph = 2 * math.pi * (np.arange(G) + 0.5) / G
    th = np.stack([ph, np.zeros(G)], 1)
    c = 0.005
    C = np.zeros((G, 2, 2))
    C[:, 1, 0] = c
    out = simulate_heads(build_head(circuit_dev, th, C, steps_per_period=200, stochastic=False), settle_cycles=4)
    m = np.arange(1, len(circuit_dev.harmonics) + 1)
    H = np.sin(np.outer(ph, m)) @ circuit_dev.harmonics[:, 0] + np.cos(np.outer(ph, m)) @ circuit_dev.harmonics[:, 1]
    H += circuit_dev.offset_norm - circuit_dev.harmonics[:, 1].sum()  # the loading offset a₀/a₁
    pred = 4 * c * H
    d = out["dtheta"][:, 1]
    assert np.linalg.norm(d - pred) / np.linalg.norm(pred) < 0.02
    assert np.all(np.abs(out["dtheta"][:, 0]) < 2e-4)  # the source is not loaded (unilateral)
    # the differential swap: a negative gain reverses the phase increment (first order)
    out_n = simulate_heads(build_head(circuit_dev, th, -C, steps_per_period=200, stochastic=False), settle_cycles=4)
    assert np.linalg.norm(out_n["dtheta"][:, 1] + d) / np.linalg.norm(d) < 0.03


def test_mismatched_rings_are_trimmed_and_placed_on_their_own_cycles(circuit_dev):
    """Uncoupled rings with Pelgrom V_T and load mismatch, trimmed to a residual ε: the read phase moves by
    2π ε τ_s only (a placement on the nominal cycle would leave offsets of ~0.04 rad rms, measured)."""
    G, T = 2, 16
    rng = np.random.default_rng(0)
    th = rng.uniform(0, 2 * math.pi, (G, T))
    eps = 2e-4 * rng.standard_normal((G, T))
    head = build_head(circuit_dev, th, np.zeros((G, T, T)), steps_per_period=100, stochastic=False,
                      mismatch=draw_circuit_mismatch(circuit_dev, (G, T), [0, 0, 3]), freq_residual_rel=eps)
    assert np.std(head.trim) > 3e-3  # the draw does detune the rings (trim of ~1 %)
    out = simulate_heads(head, settle_cycles=4)
    np.testing.assert_allclose(out["dtheta"], 2 * math.pi * eps * 4, atol=6e-4)


@pytest.fixture(scope="module")
def circuit_chip():
    from mapping import ChipConfig, compile

    from mapping.config_modes import SpatialArray

    # the rung comparison below was measured on the fully spatial mapping; on 8 tokens the chip BPC moves by ~1 bit
    # with the mismatch draw (a multiplexed chip shares one draw per tile: 4.17 vs 3.67 on this window)
    return compile("kuramoto-tiny", ChipConfig(device="ring-circuit", array=SpatialArray()))


def test_ring_circuit_chip_runs_the_circuit_and_gives_its_own_bpc(circuit_chip):
    import torch

    from mapping import ChipConfig, compile
    from mapping.simulation.inference import run

    torch.manual_seed(0)
    from oscsim.data import eval_windows, load_shakespeare

    x, y = eval_windows(load_shakespeare().split("valid"), 8, max_windows=1)
    res_c = run(circuit_chip, x, seed=0, progress=False)
    res_m = run(compile("kuramoto-tiny", ChipConfig(device="ring-macromodel", array=circuit_chip.config.array)), x,
                seed=0, progress=False)
    bc, bm = res_c.bpc(y), res_m.bpc(y)
    assert bc["bpc_closed_form"] == pytest.approx(bm["bpc_closed_form"])
    assert bc["bpc_chip"] != bm["bpc_chip"]
    assert abs(bc["bpc_chip"] - bc["bpc_closed_form"]) < 0.5
    assert "circuit" in res_c.backend
    errs = [(Lc["layer_rel_error"], Lm["layer_rel_error"]) for Lc, Lm in zip(res_c.layers, res_m.layers)]
    print("layer rel. errors (circuit, macromodel):", errs)
    # both rungs see the same trim residuals, quantisation and noise level: same order of error
    for ec, em in errs:
        assert 0.5 * em < ec < 2.0 * em + 0.05


def test_ssa_on_the_circuit_rung_is_refused():
    from mapping import ChipConfig, compile

    with pytest.raises(ValueError, match="not built for SSA"):
        compile("ssa1d-tiny", ChipConfig(device="ring-circuit"))


def test_ladder_levels_are_validated(circuit_chip):
    from mapping.simulation.ladder import compare_levels, parse_levels

    assert parse_levels("spice,closed-form") == ["closed-form", "spice"]
    with pytest.raises(ValueError, match="--levels"):
        parse_levels("closed-form,transistor")
    with pytest.raises(ValueError, match="--seq-len"):
        compare_levels(circuit_chip, np.zeros((1, 65), dtype=np.int64), levels=("circuit", "spice"))


def test_a_sequence_gets_the_same_circuit_noise_in_any_batch(circuit_chip):
    import torch

    from mapping.backends.circuit import circuit_chip_step
    from mapping.backends.kuramoto import capture_kuramoto as _capture_kuramoto
    from oscsim.data import eval_windows, load_shakespeare

    x, _ = eval_windows(load_shakespeare().split("valid"), 8, max_windows=2)
    theta, parts = _capture_kuramoto(circuit_chip.model, torch.as_tensor(x), 0)
    th, A, v = theta.double().numpy(), parts.A.double().numpy(), parts.v.double().numpy()
    kw = dict(heads=[0], coordinates=[0, 1], reference_bank=False, noise=True, seed=5)
    both = circuit_chip_step(circuit_chip, 0, th, A, v, **kw).va
    one = circuit_chip_step(circuit_chip, 0, th[1:], A[1:], v[1:], sequence_ids=np.array([1]), **kw).va
    np.testing.assert_array_equal(one[0, :, :2], both[1, :, :2])
    other = circuit_chip_step(circuit_chip, 0, th, A, v, **{**kw, "seed": 6}).va
    assert np.any(other[:, :, :2] != both[:, :, :2])  # the noise does act
