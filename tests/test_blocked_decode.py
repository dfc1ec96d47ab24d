"""The blocked decode pass (mapping.backends.blocked_decode): trivial blocking is the unblocked decode bit for bit;
the shared matrix product equals each unit's own complex product to rounding; on an ideal noiseless chip the key
blocks' first-order increments superpose (blocked = unblocked up to O(κτ_s) relative); with noise the estimate
of token t carries ⌈t/B⌉ independent errors; a sequence's numbers do not depend on its batch."""

import dataclasses

import numpy as np
import pytest
import torch

from mapping import ChipConfig, compile, run
from mapping.backends import backend_for
from mapping.backends.blocked_decode import blocked_decode_step, decode_block_positions, decode_rounds
from mapping.backends.decode import decode_step
from mapping.backends.blocking import block_plan
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


def _decode(cfg: ChipConfig) -> ChipConfig:
    return cfg.replace(energy=dataclasses.replace(cfg.energy, phase="decode"))


def test_rounds_and_positions_by_hand():
    assert decode_rounds(10, 4).tolist() == [1, 1, 1, 1, 1, 2, 2, 2, 2, 3]  # ⌈t/4⌉, t = 0 alone
    assert decode_rounds(10, None).tolist() == [1] * 10 and decode_rounds(10, 10).tolist() == [1] * 10
    p = block_plan(10, 4)
    covered = np.zeros((10, 10), dtype=int)  # every strictly causal (t, u) in exactly one block round
    rounds = np.zeros(10, dtype=int)
    for i, j in p.pairs:
        rows, cols, rpos, cpos = decode_block_positions(p, i, j)
        rounds[rows] += 1
        for t in range(rows.start, rows.stop):
            covered[t, cols.start:min(cols.stop, t)] += 1
        assert rpos.stop - rpos.start == rows.stop - rows.start and cpos.stop - cpos.start == cols.stop - cols.start
        assert max(rpos.stop, cpos.stop) <= p.tile_tokens
    assert np.array_equal(covered, np.tril(np.ones((10, 10), dtype=int), -1))
    assert np.array_equal(rounds, decode_rounds(10, 4))


@pytest.mark.parametrize("array", [MultiplexedArray(tiles=4), SpatialArray()])
def test_trivial_blocking_is_the_unblocked_decode_bit_for_bit(model, tokens, array):
    ref = run(compile(model, _decode(ChipConfig(array=array))), tokens, seed=5)
    assert "decode" in ref.backend
    for b in (T, 4 * T):
        got = run(compile(model, _decode(ChipConfig(array=dataclasses.replace(array, block=b)))), tokens, seed=5)
        assert torch.equal(got.logits, ref.logits) and "blocked" not in got.backend
    blocked = run(compile(model, _decode(ChipConfig(array=dataclasses.replace(array, block=4)))), tokens, seed=5)
    assert "decode (receivers), blocked (B = 4, 4 key blocks)" in blocked.backend
    assert not torch.equal(blocked.logits, ref.logits)


def _steps(model, tokens, cfg, block, seeds, **kw):
    """va (seeds, B, T, k) of layer 0's decode pass, unblocked and blocked."""
    chip = compile(model, _decode(cfg))
    be = backend_for(chip, 0)
    prepared = be.prepare(chip, 0)
    inp, _ = be.capture(model, tokens, 0)
    out = {"unblocked": np.stack([decode_step(prepared, inp, LayerSeeds(s)).va for s in seeds]),
           "blocked": np.stack([blocked_decode_step(prepared, inp, LayerSeeds(s), block_plan(T, block), **kw).va
                                for s in seeds])}
    return out, inp


@pytest.mark.parametrize("array", [MultiplexedArray(tiles=4), SpatialArray()])
@pytest.mark.parametrize("mode", ["ideal", "injected"])
def test_shared_product_is_each_units_product(model, tokens, array, mode):
    # the default ring chip: mismatch (a tile's shared, or each unit's), trim residuals, phase noise; injected
    # writes give each key a per-(t, u) phase error; the ideal readout (an ADC would hide the rounding)
    cfg = _decode(ChipConfig(array=dataclasses.replace(array, block=4)))
    cfg = cfg.replace(injection=dataclasses.replace(cfg.injection, mode=mode))
    chip = compile(model, cfg)
    be = backend_for(chip, 0)
    prepared = be.prepare(chip, 0, readout=None)
    assert prepared.phase.coupler_gain is not None and (prepared.write is None) == (mode == "ideal")
    inp, _ = be.capture(model, tokens, 0)
    plan = block_plan(T, 4)
    fast = blocked_decode_step(prepared, inp, LayerSeeds(3), plan)
    dense = blocked_decode_step(prepared, inp, LayerSeeds(3), plan, dense=True)
    for x, y in ((fast.va, dense.va), (fast.a, dense.a)):
        assert np.abs(x - y).max() <= 1e-12 * np.abs(y).max()  # measured 0 and 1.8e-15 (a, mode ideal)
    assert not np.array_equal(fast.a, blocked_decode_step(prepared, inp, LayerSeeds(4), plan).a)


def test_ideal_chip_key_blocks_superpose_to_first_order(model, tokens):
    rel = {}
    for kt in (1e-2, 1e-3):
        out, inp = _steps(model, tokens, ChipConfig().idealised(kappa_tau=kt), 4, [0])
        u, b = out["unblocked"][0], out["blocked"][0]
        cf = inp.va_closed_form
        rel[kt] = np.linalg.norm(b - u) / np.linalg.norm(u)
        assert np.linalg.norm(b - cf) / np.linalg.norm(cf) < 3 * kt  # both are the closed form to first order
    # the receiver moves under one block's keys at a time: a second-order difference, O(κτ_s) relative
    assert rel[1e-3] < 3e-4  # measured 5.6e-5 (5.6e-4 at 1e-2)
    assert 5 < rel[1e-2] / rel[1e-3] < 20


def test_noise_adds_once_per_round(model, tokens):
    base = ChipConfig().idealised(kappa_tau=1e-2)
    cfg = base.replace(noise=True, readout=dataclasses.replace(base.readout, noise_rad=2e-2))
    seeds = list(range(6))
    noisy, _ = _steps(model, tokens, cfg, 4, seeds)
    clean, _ = _steps(model, tokens, base, 4, [0])
    rounds = decode_rounds(T, 4)
    for q0, q1 in block_plan(T, 4).ranges[1:]:
        s_u = np.std(noisy["unblocked"][:, :, q0:q1] - clean["unblocked"][:, :, q0:q1])
        s_b = np.std(noisy["blocked"][:, :, q0:q1] - clean["blocked"][:, :, q0:q1])
        # 384 draws per query block: the std to about 4 % (1 sigma); the variance adds over a token's rounds
        # (measured 1.40, 1.56, 1.99 against sqrt(mean rounds) 1.32, 1.66, 1.94)
        assert s_b / s_u == pytest.approx(np.sqrt(rounds[q0:q1].mean()), rel=0.2), (q0, s_b / s_u)


def test_same_seed_same_numbers_whatever_the_batch(model, tokens):
    cfg = _decode(ChipConfig(array=MultiplexedArray(tiles=4, block=4)))
    chip = compile(model, cfg)
    be = backend_for(chip, 0)
    prepared = be.prepare(chip, 0)
    inp, _ = be.capture(model, tokens, 0)
    whole = blocked_decode_step(prepared, inp, LayerSeeds(5, np.array([4, 5])), block_plan(T, 4))
    one = type(inp)(inp.theta[1:], inp.A[1:], inp.v[1:])
    alone = blocked_decode_step(prepared, one, LayerSeeds(5, np.array([5])), block_plan(T, 4))
    assert np.array_equal(whole.va[1:], alone.va) and np.array_equal(whole.a[1:], alone.a)


def test_held_keys_refused(model):
    from mapping.config_modes import HeldKeys

    compile(model, _decode(ChipConfig(array=MultiplexedArray(tiles=4, block=4))))  # re-injected keys compile
    with pytest.raises(ValueError, match="a held key stays in its own running oscillator"):
        compile(model, _decode(ChipConfig(array=SpatialArray(block=4), decode=HeldKeys())))
    compile(model, _decode(ChipConfig(array=SpatialArray(block=T), decode=HeldKeys())))  # trivial: not blocked


@pytest.mark.parametrize("array", [MultiplexedArray(tiles=4), SpatialArray()])
def test_unblocked_decode_shared_product_is_each_units_product(model, tokens, array):
    chip = compile(model, _decode(ChipConfig(array=array)))  # ring macromodel: mismatch, trim residuals, noise
    be = backend_for(chip, 0)
    prepared = be.prepare(chip, 0, readout=None)
    inp, _ = be.capture(model, tokens, 0)
    fast, dense = (decode_step(prepared, inp, LayerSeeds(3), dense=d) for d in (False, True))
    for x, y in ((fast.va, dense.va), (fast.a, dense.a)):
        assert np.abs(x - y).max() <= 1e-12 * np.abs(y).max()
