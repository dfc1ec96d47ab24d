"""The physical array and the schedule (issue 20 item 1): the assignment of units to tiles and rounds, what the
reuse costs, and fidelity that follows it — a tile's mismatch is shared by every unit it serves, so the errors
of two units on one tile are the same error, where the spatial chip's are independent; the BPC then differs."""

import numpy as np
import pytest
import torch

from mapping import ChipConfig, compile, run
from mapping.backends import backend_for
from mapping.backends.base import KuramotoInputs
from mapping.compiler.mismatch import draw_oscillators, trim
from mapping.compiler.schedule import build_schedule, unit_order
from mapping.config import MultiplexedArray, SpatialArray
from mapping.seeds import PURPOSE, LayerSeeds, stream_seeds

from _chips import seeded_kuramoto

SHAPE = (2, 2, 4, 16)  # banks, heads, coordinates per head, T: 16 units per layer


@pytest.fixture(scope="module")
def model():
    return seeded_kuramoto(k=8, n_heads=2, n_layers=2, seq_len=16)


def test_spatial_schedule_gives_every_unit_its_own_tile_and_the_old_counts():
    s = build_schedule(SpatialArray(), "kuramoto", 3, SHAPE)
    assert s.tiles == 3 * 16 and s.rounds_per_layer == 1 and s.uses_per_tile == 1 and s.reuse == 1
    tiles = np.concatenate([t.ravel() for t in s.tile_of])
    assert sorted(tiles.tolist()) == list(range(48))
    # every unit programmed, one matrix per head, one input vector per coordinate (both banks share it)
    assert (s.programs_per_layer, s.matrix_loads_per_layer, s.input_loads_per_layer) == (16, 2, 8)
    assert (s.matrices_per_layer, s.inputs_per_layer) == (2, 8)
    assert s.runs(0) is None  # noise keyed on the logical units, as before schedules


@pytest.mark.parametrize("P", [1, 3, 4, 8, 16, 32, 48])
def test_multiplexed_assignment(P):
    s = build_schedule(MultiplexedArray(tiles=P), "kuramoto", 3, SHAPE)
    order = unit_order("kuramoto", SHAPE)
    assert sorted(order.ravel().tolist()) == list(range(16))
    # (head, bank, coordinate) order: the coordinate is fastest, the head slowest
    assert order[1, 0, 0] == 4 and order[0, 1, 0] == 8
    assert s.rounds_per_layer == -(-16 // P)
    for l in range(3):
        assert np.array_equal(s.tile_of[l], (l * 16 + order) % P)
        assert np.array_equal(s.round_of[l], order // P)
        pairs = set(zip(s.round_of[l].ravel().tolist(), s.tile_of[l].ravel().tolist()))
        assert len(pairs) == 16  # no tile runs two units in one round
    assert s.uses_per_tile == -(-48 // P) and s.reuse == pytest.approx(48 / P)


def test_reprogramming_and_reloads_by_hand():
    # 4 tiles: a round holds the 4 coordinates of one (head, bank): rounds (h0,b0), (h0,b1), (h1,b0), (h1,b1); tile
    # t serves coordinate t. Each tile keeps head 0's matrix for 2 rounds, then head 1's: 2 programs per tile and
    # layer = 8 of 16 units; A read once per (round, head) that programs (rounds 0 and 2: 2); each coordinate's
    # phases read in the round of each bank: 16 input reads (twice the spatial chip's 8)
    s = build_schedule(MultiplexedArray(tiles=4), "kuramoto", 2, SHAPE)
    assert (s.programs_per_layer, s.matrix_loads_per_layer, s.input_loads_per_layer) == (8, 2, 16)
    # 8 tiles: a round is one head, both banks: every tile takes a new matrix every round, and both banks of a
    # coordinate run in one round (their phases read once)
    s = build_schedule(MultiplexedArray(tiles=8), "kuramoto", 2, SHAPE)
    assert (s.programs_per_layer, s.matrix_loads_per_layer, s.input_loads_per_layer) == (16, 2, 8)
    s = build_schedule(MultiplexedArray(tiles=16), "kuramoto", 2, SHAPE)
    assert (s.programs_per_layer, s.input_loads_per_layer, s.rounds_per_layer) == (16, 8, 1)


def test_spatial_chip_keeps_the_per_layer_mismatch_streams(model):
    """The spatial schedule draws as the compiler did before schedules: layer i from streams [seed, i, 1]."""
    chip = compile(model, ChipConfig(array=SpatialArray()))
    for i, lm in enumerate(chip.layers):
        eps, _, _ = draw_oscillators(chip.device, SHAPE, np.random.default_rng([0, i, 1]), True)
        code, resid = trim(eps, chip.device.freq_spread_rel, 8)
        assert np.array_equal(lm.freq_trim_code, code) and np.array_equal(lm.freq_residual_rel, resid)
        assert lm.tiles is None and lm.coupler_seed == [0, i, 2]


def _units_on_tile(chip):
    """{tile: [(layer, bank, head, coordinate)]} of a compiled chip."""
    out = {}
    for l, lm in enumerate(chip.layers):
        for idx in np.ndindex(lm.tiles.tile_of.shape):
            out.setdefault(int(lm.tiles.tile_of[idx]), []).append((l, *idx))
    return out


def test_units_on_one_tile_share_its_mismatch(model):
    chip = compile(model, ChipConfig(array=MultiplexedArray(tiles=8)))  # 32 units on 8 tiles: reused 4x
    assert chip.schedule.uses_per_tile == 4
    groups = _units_on_tile(chip)
    assert sorted(groups) == list(range(8)) and all(len(g) == 4 for g in groups.values())
    for units in groups.values():
        (l0, *u0), *rest = units
        ref = chip.layers[l0]
        for l, *u in rest:
            lm = chip.layers[l]
            for name in ("freq_residual_rel", "freq_trim_code", "diffusion_rel", "power_w"):
                assert np.array_equal(getattr(lm, name)[tuple(u)], getattr(ref, name)[tuple(u0)]), name
            assert np.array_equal(lm.coupler_gain()[tuple(u)], ref.coupler_gain()[tuple(u0)])
    # and two tiles differ (the draws are per tile, not one for all)
    a, b = groups[0][0], groups[1][0]
    assert not np.array_equal(chip.layers[a[0]].freq_residual_rel[a[1:]], chip.layers[b[0]].freq_residual_rel[b[1:]])


def _mismatch_errors(model, array, inputs):
    """Per layer, the mismatch-induced error of the chip's increment (noise and readout off): x̂ with mismatch
    minus x̂ without, for the same inputs to every layer."""
    cfg = ChipConfig(noise=False, array=array).replace(readout=ChipConfig().readout.__class__(noise_rad=0.0,
                                                                                              bits=None))
    out = []
    for mm in (True, False):
        chip = compile(model, cfg.replace(mismatch=mm))
        xs = []
        for layer in range(len(chip.layers)):
            b = backend_for(chip, layer)
            xs.append(b.step(b.prepare(chip, layer), inputs, LayerSeeds.for_layer(0, layer)).va)
        out.append(xs)
    return [a - b for a, b in zip(*out)]


def test_errors_of_units_on_one_tile_are_correlated_and_independent_on_the_spatial_chip(model):
    """Why the BPC of a multiplexed chip differs: layers 0 and 1 given the same input make, on the chip whose
    8 tiles serve both layers (tile of unit u: u mod 8 in either layer), the same mismatch error in the units that
    share a tile; on the spatial chip the two layers' errors are independent draws."""
    g = torch.Generator().manual_seed(1)
    B, T, k = 4, 16, 8
    theta = torch.rand(B, T, k, generator=g, dtype=torch.float64) * 2 * np.pi - np.pi
    A = torch.softmax(torch.randn(B, 2, T, T, generator=g, dtype=torch.float64), -1).tril()
    A = A / A.sum(-1, keepdim=True)
    v = torch.rand(B, T, k, generator=g, dtype=torch.float64) + 0.5
    inputs = KuramotoInputs.of(theta, A, v)

    def corr(e):
        return float(np.corrcoef(e[0].ravel(), e[1].ravel())[0, 1])

    mux = _mismatch_errors(model, MultiplexedArray(tiles=16), inputs)  # layer l unit u on tile (16 l + u) mod 16
    spa = _mismatch_errors(model, SpatialArray(), inputs)
    assert np.abs(mux[0]).max() > 0 and np.abs(spa[0]).max() > 0  # mismatch acts
    assert np.array_equal(mux[0], mux[1]) and corr(mux) == pytest.approx(1.0)  # one tile, one error
    n = mux[0].size  # 512 values: |r| of independent errors is ~ 1/sqrt(n) = 0.044
    assert abs(corr(spa)) < 5 / np.sqrt(n)


def test_reuse_changes_the_bpc_only_through_mismatch(model):
    g = torch.Generator().manual_seed(5)
    x = torch.randint(0, 256, (3, 16), generator=g)
    y = torch.randint(0, 256, (3, 16), generator=g)

    def bpc(array, **kw):
        return run(compile(model, ChipConfig(array=array, **kw)), x, seed=0).bpc(y)["bpc_chip"]

    reused, spatial = MultiplexedArray(tiles=8), SpatialArray()  # 32 units: reused 4x
    assert bpc(reused) != bpc(spatial)  # mismatch on: the shared draws change the chip's answer
    # neither mismatch nor noise: the schedule changes nothing the chip computes
    assert bpc(reused, mismatch=False, noise=False) == bpc(spatial, mismatch=False, noise=False)


def test_noise_is_keyed_on_the_physical_run(model):
    chip = compile(model, ChipConfig(array=MultiplexedArray(tiles=4)))
    runs = chip.schedule.runs(1)
    s = LayerSeeds.for_layer(0, 1, np.arange(2), runs)
    got = s.unit_streams(PURPOSE["kuramoto"], np.arange(2), (2, 2, 4))
    want = stream_seeds(s.seed, PURPOSE["physical"], PURPOSE["kuramoto"], np.arange(2)[None, :, None, None],
                        runs[:, None, :, :, 0], runs[:, None, :, :, 1])
    assert np.array_equal(got, want)
    assert len(np.unique(got)) == got.size  # every (sequence, round, tile) its own stream
    spatial = LayerSeeds.for_layer(0, 1, np.arange(2)).unit_streams(PURPOSE["kuramoto"], np.arange(2), (2, 2, 4))
    assert np.array_equal(spatial, stream_seeds(s.seed, PURPOSE["kuramoto"], np.arange(2)[None, :, None, None],
                                                np.arange(2)[:, None, None, None], np.arange(2)[None, None, :, None],
                                                np.arange(4)[None, None, None, :]))
