"""The analog-score array (mapping.backends.score_array): its cells, its area on the die, its score rounds in the
latency, the leakage of its silicon, and the mismatch its shared units carry into the chip run."""

import math

import numpy as np
import pytest

from hw_models.technology import chip_node

from mapping import ChipConfig, compile, run
from mapping.backends.score_array import build_score_array, default_score_units
from mapping.config import AnalogScores, MultiplexedArray, SpatialArray, config_from_dict
from mapping.energy import chip_area, energy_report
from mapping.energy.constants import AREA

L, H, K, T = 2, 4, 32, 16  # kh = 8
KH = K // H


@pytest.fixture(scope="module")
def model():
    from _chips import seeded_kuramoto

    return seeded_kuramoto(vocab_size=32, seq_len=T, n_heads=H, n_layers=L, k=K, ffn_hidden=16)


def _cfg(units=None, array=None, **kw):
    return ChipConfig(array=array or SpatialArray(), scores=AnalogScores(units=units), **kw)


def test_unit_counts_and_the_heads_schedule():
    sa = build_score_array(_cfg(units=3, array=MultiplexedArray()), n_layers=L, n_heads=H, head_dim=KH, T=T)
    assert sa.rotated_oscillators_per_unit == KH * T
    assert sa.mixers_per_unit == KH * T * (T + 1) // 2
    assert sa.channels_per_unit == T * (T + 1) // 2
    assert sa.gate_dacs_per_unit == 2 * KH * T
    assert sa.rounds_per_layer == math.ceil(H / 3) == 2
    assert sa.adcs == math.ceil(3 * T * (T + 1) / 2 / 64)
    # head h of layer l on unit (l H + h) mod S, round floor(h / S)
    assert [list(u) for u in sa.unit_of] == [[0, 1, 2, 0], [1, 2, 0, 1]]
    assert [list(r) for r in sa.round_of] == [[0, 0, 0, 1], [0, 0, 0, 1]]
    assert sa.shared and sa.counts()["mixers"] == 3 * sa.mixers_per_unit
    # defaults: every head of every layer on a spatial chip, one layer's heads on a multiplexed one
    assert default_score_units(SpatialArray(), L, H) == L * H
    assert default_score_units(MultiplexedArray(), L, H) == H
    sp = build_score_array(_cfg(), n_layers=L, n_heads=H, head_dim=KH, T=T)
    assert sp.units == L * H and sp.rounds_per_layer == 1 and not sp.shared
    mx = build_score_array(_cfg(array=MultiplexedArray()), n_layers=L, n_heads=H, head_dim=KH, T=T)
    assert mx.units == H and mx.rounds_per_layer == 1 and mx.shared  # every layer reuses the units


@pytest.mark.parametrize("bad", [0, -1, 2**20 + 1, 2.5, True, "four"])
def test_units_are_validated(bad):
    with pytest.raises(ValueError, match=r"scores\.units must be an integer in \[1, 1048576\]"):
        AnalogScores(units=bad)


def test_units_from_toml():
    assert config_from_dict({"scores": {"mode": "analog", "units": 2}}).scores.units == 2
    assert config_from_dict({"scores": {"mode": "analog", "units": "none"}}).scores.units is None
    with pytest.raises(ValueError, match="scores.units belong"):
        config_from_dict({"scores": {"mode": "digital", "units": 2}})


def test_score_area_summed_by_hand_joins_the_die(model):
    S = 3
    ana = chip_area(compile(model, _cfg(units=S)))
    dig = chip_area(compile(model, ChipConfig(array=SpatialArray())))
    osc = ana["cells_um2"]["oscillator"]
    gate_dac = 8 * AREA["sram_cell_um2"].value + 255 * AREA["unit_switch_um2"].value  # 8-bit gate DAC
    n_ch = S * T * (T + 1) // 2
    by_hand_um2 = (S * KH * T * osc + S * KH * T * (T + 1) // 2 * 4.0 + n_ch * AREA["detector_um2"].value
                   + math.ceil(n_ch / 64) * AREA["adc_um2"].value + S * 2 * KH * T * gate_dac)
    assert AREA["mixer_um2"].value == 4.0 and "assumed" in AREA["mixer_um2"].source
    assert ana["score_array_mm2"] == pytest.approx(by_hand_um2 * 1e-6, rel=1e-12)
    assert dig["score_array_mm2"] == 0.0
    assert ana["area_mm2"] - dig["area_mm2"] == pytest.approx(by_hand_um2 * 1e-6, rel=1e-9)


def test_four_score_rounds_against_one(model):
    """S = 1 unit for H = 4 heads: three more score rounds per layer than S = 4, each of gate-DAC settle,
    injection, mixer window and the serial score conversions."""
    r1 = energy_report(compile(model, _cfg(units=H)))
    r4 = energy_report(compile(model, _cfg(units=1)))
    tl = r4["timeline_s"]
    assert r1["timeline_s"]["score_rounds_per_layer"] == 1 and tl["score_rounds_per_layer"] == 4
    rnd = tl["score_dac_settle"] + tl["score_injection"] + tl["score_window"] + tl["score_adc_serial"]
    assert tl["score_round_s"] == pytest.approx(rnd)
    assert tl["score_adc_serial"] == pytest.approx(64 / 100e6)  # 64 channels per ADC at 100 MS/s (65 nm)
    assert tl["score_window"] == pytest.approx(tl["readout"])  # the mixers average over the readout window
    assert tl["score_injection"] == pytest.approx(tl["injection"])
    extra = L * 3 * rnd / T  # per token of a prefill pass of T tokens
    assert r4["latency_per_token_s"] - r1["latency_per_token_s"] == pytest.approx(extra, rel=1e-9)
    dig = energy_report(compile(model, ChipConfig(array=SpatialArray())))
    assert dig["timeline_s"]["score_rounds_per_layer"] == 0
    assert "score rounds" in r4["timeline_sources"]["order"] and "before the periphery's softmax" in \
        r4["timeline_sources"]["order"]


def test_leakage_follows_the_larger_die(model):
    for units in (None, 1):
        ana = energy_report(compile(model, _cfg(units=units)))
        dig = energy_report(compile(model, ChipConfig(array=SpatialArray())))
        assert ana["area_mm2"] > dig["area_mm2"]
        # the extra silicon is logic (the score array): it leaks at the node's logic density; the SRAM (the same
        # buffers on both) leaks by CACTI 7 alike
        dens = chip_node(65).leakage_density().value
        assert ana["leakage_w"] - dig["leakage_w"] == pytest.approx((ana["area_mm2"] - dig["area_mm2"]) * dens,
                                                                     rel=1e-9)
        for r in (ana, dig):
            assert r["leakage_j"] == pytest.approx(r["leakage_w"] * r["latency_per_token_s"], rel=1e-9)


def test_a_digital_chips_analog_what_if_is_charged_the_score_array(model):
    dig = energy_report(compile(model, ChipConfig(array=SpatialArray())))
    ana = energy_report(compile(model, _cfg()))
    assert dig["phases"]["prefill+analog_scores"]["latency_per_token_s"] == pytest.approx(ana["latency_per_token_s"])
    assert dig["phases"]["prefill+analog_scores"]["chip_j"] == pytest.approx(ana["energy_per_token_chip_j"])


def _residuals(chip):
    from mapping.backends.analog_scores import score_settings

    return np.stack([score_settings(chip, i).freq_residual for i in range(L)])  # (L, H, kh, T)


def test_heads_on_one_unit_share_their_residuals(model):
    shared = _residuals(compile(model, _cfg(units=1)))
    spatial = _residuals(compile(model, _cfg()))
    a, b = shared.reshape(L * H, -1), spatial.reshape(L * H, -1)
    assert np.all(a == a[0])  # one unit: every head of every layer carries its draw
    r = np.corrcoef(b)[np.triu_indices(L * H, 1)]
    print(f"spatial heads: |r| max {np.abs(r).max():.3f} over {b.shape[1]} oscillators")
    assert np.abs(r).max() < 0.5 and np.std(b[0]) > 0
    # two units for four heads and two layers: head h of layer l on unit (l H + h) mod 2
    two = _residuals(compile(model, _cfg(units=2))).reshape(L * H, -1)
    assert np.all(two[0::2] == two[0]) and np.all(two[1::2] == two[1])
    assert abs(np.corrcoef(two[0], two[1])[0, 1]) < 0.5


def test_spatial_default_keeps_the_per_layer_draw(model):
    """Every head its own unit: the layer's own stream [mismatch_seed, layer, 3], as before score units."""
    from mapping.compiler.mismatch import draw_oscillators, trim
    from mapping.units import relative_frequency_to_rad_per_cycle

    chip = compile(model, _cfg())
    got = _residuals(chip)
    for i in range(L):
        eps, _, _ = draw_oscillators(chip.device, (H, KH, T), np.random.default_rng([0, i, 3]), True)
        _, resid = trim(eps, chip.timebase["freq_spread_rel"], chip.config.trim_bits)
        assert np.array_equal(got[i], relative_frequency_to_rad_per_cycle(resid))
    assert np.array_equal(got, _residuals(compile(model, _cfg(units=L * H))))


def test_shared_score_units_run_seeded(model):
    import torch

    x = torch.randint(0, 32, (2, T), generator=torch.Generator().manual_seed(0))
    chip = compile(model, _cfg(units=1))
    a, b = run(chip, x, seed=3, progress=False), run(chip, x, seed=3, progress=False)
    assert torch.equal(a.logits, b.logits)
    c = run(chip, x, seed=4, progress=False)
    assert not torch.equal(a.logits, c.logits)
    other = run(compile(model, _cfg(units=2)), x, seed=3, progress=False)  # another unit sharing, another draw
    assert not torch.equal(a.logits, other.logits)


def test_held_keys_refuse_a_shared_score_unit(model):
    from mapping.config import EnergyConfig, HeldKeys

    cfg = _cfg(units=1, decode=HeldKeys(), energy=EnergyConfig(phase="decode"))
    with pytest.raises(ValueError, match=r"decode.keys = 'held'.*scores.units = 1 .*set scores.units = 8"):
        compile(model, cfg)
    compile(model, cfg.replace(scores=AnalogScores(units=L * H)))  # every head its own unit: accepted
