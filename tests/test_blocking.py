"""The blocked schedule for long contexts (mapping.backends.blocking): its counts by hand; trivial blocking is the
unblocked chip bit for bit; on an ideal noiseless chip the blocks' first-order increments superpose (blocked =
unblocked up to the second-order flow, O(κτ_s) relative); with readout noise the increment of query block i
carries i + 1 independent errors, so its noise grows as √(i + 1)."""

import dataclasses

import numpy as np
import pytest
import torch

from mapping import ChipConfig, compile, load_chip, run
from mapping.backends import backend_for
from mapping.backends.blocked import block_inputs, blocked_step
from mapping.backends.blocking import block_plan
from mapping.energy.feasibility import infeasible_reason
from mapping.config import MultiplexedArray, SpatialArray
from mapping.seeds import LayerSeeds

from _chips import seeded_kuramoto

T = 16


@pytest.fixture(scope="module")
def model():
    return seeded_kuramoto(k=8, n_heads=2, n_layers=2, seq_len=T)


@pytest.fixture(scope="module")
def tokens():
    return torch.randint(0, 256, (2, T), generator=torch.Generator().manual_seed(0))


def test_block_plan_by_hand():
    p = block_plan(10, 4)  # blocks [0,4) [4,8) [8,10): 6 causal blocks on tiles of 8 oscillators
    assert p.ranges == ((0, 4), (4, 8), (8, 10)) and p.blocked and p.tile_tokens == 8
    assert p.pairs == ((0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (2, 2)) and p.rounds_per_unit == 6
    # injected: diagonals 4 + 4 + 2, off-diagonals (4+4) + (2+4) + (2+4); couplers: every causal pair once,
    # 6 + 6 + 1 + 16 + 8 + 8 = 45 = T(T-1)/2; read: 4·1 + 4·2 + 2·3 = 18, of which 8 are extra additions
    assert p.sizes() == {"injected": 30, "couplers": 45, "read": 18, "accumulated": 8}
    for b in (None, 10, 11, 1000):
        q = block_plan(10, b)
        assert not q.blocked and q.tile_tokens == 10 and q.rounds_per_unit == 1
        assert q.sizes() == {"injected": 10, "couplers": 45, "read": 10, "accumulated": 0}
    assert block_plan(10, 1).rounds_per_unit == 55 and block_plan(10, 1).tile_tokens == 2
    with pytest.raises(ValueError, match="block must be None or an integer >= 1"):
        block_plan(10, 0)


def test_block_inputs_cover_the_causal_matrix_once():
    rng = np.random.default_rng(0)
    from mapping.backends.base import KuramotoInputs

    A = np.tril(rng.random((1, 2, 10, 10)))
    inp = KuramotoInputs(rng.random((1, 10, 4)), A, rng.random((1, 10, 4)))
    p = block_plan(10, 4)
    cover = np.zeros_like(A)
    for i, j in p.pairs:
        sub, off = block_inputs(inp, p, i, j)
        (q0, q1), (k0, k1) = p.ranges[i], p.ranges[j]
        assert np.array_equal(sub.theta[:, off:], inp.theta[:, q0:q1])
        keys = sub.A[:, :, off:, :sub.A.shape[-1] - (q1 - q0)] if i != j else sub.A
        cover[:, :, q0:q1, k0:k1] += keys
        if i != j:  # the key side is uncoupled: it free-runs
            assert not sub.A[:, :, :off].any() and not sub.A[:, :, off:, off:].any()
    assert np.array_equal(cover, A)


def test_config_fields_validated():
    assert MultiplexedArray(block="none").block is None and SpatialArray(block=32).block == 32
    with pytest.raises(ValueError, match=r"array.block must be an integer in \[1, 1048576\]"):
        MultiplexedArray(block=0)
    with pytest.raises(ValueError, match=r"array.die_limit_mm2 must be in \(0, 858\]"):
        MultiplexedArray(die_limit_mm2=900)
    with pytest.raises(ValueError, match=r"context_tokens must be an integer in \[2, 1048576\]"):
        ChipConfig(context_tokens=1)
    assert ChipConfig(context_tokens="none").context_tokens is None


@pytest.mark.parametrize("array", [MultiplexedArray(tiles=4), SpatialArray()])
def test_trivial_blocking_is_the_unblocked_chip_bit_for_bit(model, tokens, array):
    ref = run(compile(model, ChipConfig(array=array)), tokens, seed=5)
    for b in (T, 4 * T):
        cfg = ChipConfig(array=dataclasses.replace(array, block=b))
        got = run(compile(model, cfg), tokens, seed=5)
        assert torch.equal(got.logits, ref.logits) and "blocked" not in got.backend
    blocked = run(compile(model, ChipConfig(array=dataclasses.replace(array, block=4))), tokens, seed=5)
    assert "blocked (B = 4, 10 blocks)" in blocked.backend and not torch.equal(blocked.logits, ref.logits)


def _layer_steps(model, tokens, cfg, block, seeds):
    """va (B, T, k) of layer 0 for the given seeds, unblocked and blocked, through the backend's own step."""
    chip = compile(model, cfg)
    be = backend_for(chip, 0)
    prepared = be.prepare(chip, 0)
    inp, _ = be.capture(model, tokens, 0)
    out = {}
    for name, b in (("unblocked", None), ("blocked", block)):
        out[name] = np.stack([blocked_step(be.step, prepared, inp, LayerSeeds(s), block_plan(T, b)).va
                              for s in seeds])
    return out, inp


def test_ideal_chip_blocks_superpose_to_first_order(model, tokens):
    rel = {}
    for kt in (1e-2, 1e-3):
        cfg = ChipConfig().idealised(kappa_tau=kt)
        out, inp = _layer_steps(model, tokens, cfg, 4, [0])
        u, b = out["unblocked"][0], out["blocked"][0]
        cf = inp.va_closed_form
        rel[kt] = np.linalg.norm(b - u) / np.linalg.norm(u)
        # both are the closed form to first order
        assert np.linalg.norm(b - cf) / np.linalg.norm(cf) < 3 * kt
    # the difference is the second-order flow: O(κτ_s) relative, ten times smaller at a ten times shorter window
    assert rel[1e-3] < 3e-4  # measured 5.3e-5 (5.3e-4 at 1e-2)
    assert 5 < rel[1e-2] / rel[1e-3] < 20


def test_readout_noise_adds_once_per_block(model, tokens):
    # ideal devices with their phase noise and the detector's white noise: both enter each block's own run
    base = ChipConfig().idealised(kappa_tau=1e-2)
    cfg = base.replace(noise=True, readout=dataclasses.replace(base.readout, noise_rad=2e-2))
    seeds = list(range(6))
    noisy, _ = _layer_steps(model, tokens, cfg, 4, seeds)
    clean, _ = _layer_steps(model, tokens, base, 4, [0])
    p = block_plan(T, 4)
    for i, (q0, q1) in enumerate(p.ranges):
        s_u = np.std(noisy["unblocked"][:, :, q0:q1] - clean["unblocked"][:, :, q0:q1])
        s_b = np.std(noisy["blocked"][:, :, q0:q1] - clean["blocked"][:, :, q0:q1])
        # 6 seeds x 2 sequences x 4 tokens x 8 coordinates = 384 draws: the std to about 4 % (1 sigma)
        assert s_b / s_u == pytest.approx(np.sqrt(i + 1), rel=0.2), (i, s_b / s_u)


def test_blocked_chip_tiles_and_file(model, tmp_path):
    chip = compile(model, ChipConfig(array=MultiplexedArray(tiles=4, block=4)))
    lm = chip.layers[0]
    assert lm.max_tokens == T and lm.coupler_shape[-2:] == (8, 8)
    assert chip.resources["oscillators"] == 4 * 8 and chip.resources["couplers"] == 4 * 8 * 7 // 2 * int(chip.coupling_rule["taps"])
    back = load_chip(chip.save(tmp_path / "chip.json"), model=model)
    assert back.layers[0].coupler_shape == lm.coupler_shape


def test_context_tokens_and_die_limit(model):
    chip = compile(model, ChipConfig(context_tokens=64, mismatch=False))
    assert chip.max_tokens == 64 and infeasible_reason(chip) is None
    small = ChipConfig(context_tokens=64, mismatch=False, array=MultiplexedArray(die_limit_mm2=0.5))
    why = infeasible_reason(compile(model, small))
    assert why.startswith("die of ") and "exceeds array.die_limit_mm2 = 0.5 mm^2" in why
    assert "a tile holds 64 oscillators and 2016 couplers at T = 64" in why
    x = torch.randint(0, 256, (1, 64), generator=torch.Generator().manual_seed(1))
    r = run(chip, x, seed=0)  # the model runs past the length it was built with (positions are rotations)
    assert r.logits.shape == (1, 64, 256) and torch.isfinite(r.logits).all()


def test_blocked_pass_events_by_hand():
    from mapping.compiler.resources import pass_events

    kw = dict(n_heads=2, head_dim=4, T=10, banks=2, taps=1, prefill=True)
    a, b = pass_events("kuramoto", **kw), pass_events("kuramoto", **kw, block=4)
    k = 8  # 2 heads x 4 coordinates; block_plan(10, 4): 30 phases injected, 18 read, 8 extra additions
    assert (b["osc"], b["theta_in"], b["read"], b["gain"], b["accumulated"]) == (2 * k * 30, k * 30, 2 * k * 18,
                                                                                 k * 18, 2 * k * 8)
    assert (b["coup"], b["a_values"]) == (a["coup"], a["a_values"])  # every causal pair written once
    assert pass_events("kuramoto", **kw, block=10) == {**a, "accumulated": 0.0} and "accumulated" not in a
    d, du = pass_events("kuramoto", **{**kw, "prefill": False}, block=4), pass_events("kuramoto", **{**kw, "prefill": False})
    r = (1 + 1 + 1 + 1 + 1 + 2 + 2 + 2 + 2 + 3) / 10  # decode: ⌈t/4⌉ rounds (1 at t = 0), mean over t = 0..9
    assert (d["osc"], d["theta_in"], d["read"], d["gain"], d["accumulated"]) == pytest.approx(
        (2 * k * (4.5 + r), k * (4.5 + r), 2 * k * r, k * r, 2 * k * (r - 1)))  # 4.5 keys on average
    assert (d["coup"], d["a_values"], du["osc"]) == (du["coup"], du["a_values"], 2 * k * 5.5)


def test_energy_and_latency_charge_the_blocks(model):
    from mapping.energy import energy_report

    rep = {b: energy_report(compile(model, ChipConfig(mismatch=False, array=MultiplexedArray(tiles=4, block=b))), T)
           for b in (None, T, 4)}
    assert rep[T]["energy_per_token_chip_j"] == rep[None]["energy_per_token_chip_j"]  # trivial blocking
    u, b = rep[None], rep[4]
    # 10 block rounds per unit; every block's oscillators inject and run, its queries are read
    assert b["timeline_s"]["rounds_per_layer"] == 10 * u["timeline_s"]["rounds_per_layer"]
    assert b["latency_per_token_s"] > 5 * u["latency_per_token_s"]
    for term in ("oscillators_j", "injection_j", "readout_j"):
        assert b["breakdown"][term] > 2 * u["breakdown"][term], term
    # block-major: the couplers written are the unblocked ones (every causal pair once, same reuse of a tile)
    assert b["breakdown"]["coupler_programming_j"] == pytest.approx(u["breakdown"]["coupler_programming_j"],
                                                                    rel=1e-12)
    assert b["breakdown"]["dac_j"] > u["breakdown"]["dac_j"]  # each block sets its queries' receive gains
    assert b["area_mm2"] < u["area_mm2"]  # tiles of 8 oscillators instead of 16


def test_blocked_decode_energy_and_latency(model):
    from mapping.energy import energy_report

    def report(b):
        cfg = ChipConfig(mismatch=False, array=MultiplexedArray(tiles=4, block=b))
        return energy_report(compile(model, cfg.replace(energy=dataclasses.replace(cfg.energy, phase="decode"))), T)

    u, b = report(None), report(4)
    r = np.mean(np.maximum(1, -(-np.arange(T) // 4)))  # 2.125 key-block rounds per decoded token
    assert b["timeline_s"]["rounds_per_layer"] == pytest.approx(r * u["timeline_s"]["rounds_per_layer"])
    assert b["latency_per_token_s"] > u["latency_per_token_s"]
    for term in ("injection_j", "readout_j", "dac_j"):  # the receiver injected, read and its gain set per round
        assert b["breakdown"][term] > u["breakdown"][term], term
    assert b["breakdown"]["coupler_programming_j"] == pytest.approx(u["breakdown"]["coupler_programming_j"],
                                                                    rel=1e-12)
    assert report(T)["energy_per_token_chip_j"] == u["energy_per_token_chip_j"]  # trivial blocking


def test_blocked_sram_buffers_by_hand(model):
    from mapping.energy.sram import sram_buffers

    mc = dataclasses.asdict(model.config)
    kw = dict(T=10, n_layers=2, n_heads=2, head_dim=4, banks=2, taps=1, coupler_bits=6, readout_bits=8,
              precision="int16")
    u, b = sram_buffers("kuramoto", "kuramoto", mc, **kw), sram_buffers("kuramoto", "kuramoto", mc, **kw, block=4)
    # query blocks [0,4) [4,8) [8,10): their causal rows hold 1+2+3+4 = 10, 5+…+8 = 26, 9+10 = 19 softmax weights;
    # the largest, 26 per head, against T(T+1)/2 = 55 unblocked, at 6 bits
    assert (b["coupling"], u["coupling"]) == (2 * 26 * 6 / 8, 2 * 55 * 6 / 8)
    # one block round's channels (2 per phase, 2 banks x 8 coordinates x B = 4, 8 bits) + the increment sums (int16)
    assert (b["phases_out"], u["phases_out"]) == (2 * 2 * 8 * 4 + 2 * 8 * 10 * 2, 2 * 2 * 8 * 10)
    assert all(b[key] == u[key] for key in ("weights", "keys", "phases_in", "activations"))
    assert sram_buffers("kuramoto", "kuramoto", mc, **kw, block=10) == u
