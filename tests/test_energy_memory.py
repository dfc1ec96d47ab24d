"""Decode on the same terms (mapping.energy.sram.sram_plan): weight-stationary local stores and off-chip memory past
the die's SRAM capacity, each recomputed by hand, on the chip and on the same chip without the array alike."""

import pytest

from mapping import ChipConfig, compile
from mapping.config import EnergyConfig
from mapping.energy import chip_area
from mapping.energy import constants as ec
from mapping.energy.baselines import baselines
from mapping.energy.chip_terms import chip_energy
from mapping.energy.ops import attention_cost
from mapping.energy.sram import sram_area_mm2, sram_buffers, sram_leakage_w, sram_read_j_per_bit

from _chips import seeded_kuramoto

from _energy_spec import make_spec

MC = {"k": 16, "n_heads": 2, "n_layers": 2, "ffn_hidden": 16, "vocab_size": 256}


def _spec(**over):
    base = dict(kind="kuramoto", layer_kind="kuramoto", n_layers=2, n_heads=2, head_dim=8, banks=2, taps=2, T=128,
                model_config=MC, f0_hz=1.8e9, p_osc_w=2.6e-4, p_coupler_w=1.2e-5, e_bit_write_j=1e-14,
                settle_cycles=4.0, read_cycles=4.0, coupler_bits=6, gain_bits=8, readout_bits=10,
                array_area_mm2=1.0, injection_s=1e-9, injection_driver_w=1e-5, macs=64, sources={})
    return make_spec(**{**base, **over})


def _buffers(s):
    sh = s.shape
    return sram_buffers(sh.kind, sh.layer_kind, sh.model_config, T=sh.T, n_layers=sh.n_layers, n_heads=sh.n_heads,
                        head_dim=sh.head_dim, banks=sh.banks, taps=sh.taps, coupler_bits=s.array.coupler_bits,
                        readout_bits=s.array.readout_bits, precision=s.periphery.digital_precision,
                        sequences=s.workload.batch)


def test_stationary_weights_read_at_the_local_store_energy_and_pay_its_area_and_leakage():
    """By hand: at batch 1 in decode the weight reads fall by the ratio of the two CACTI access energies (the
    global weight buffer's, a MAC's local store of 1/macs of the weights); the local stores' area and standby
    leakage replace the weight buffer's in the global SRAM."""
    st, ss = _spec(), _spec(weights="stationary")
    rt, rs = chip_energy(st, "decode", False), chip_energy(ss, "decode", False)
    buf = _buffers(st)
    n_w = attention_cost("kuramoto", MC, 128)["weights"]
    e_global = sram_read_j_per_bit(n_w * 2 * 2, st.node)  # the weight buffer of the two layers at int16
    e_local = sram_read_j_per_bit(buf["weights"] / 64, st.node)
    assert e_local < e_global
    wt, ws = rt["sram_breakdown_j"]["weights_j"], rs["sram_breakdown_j"]["weights_j"]
    assert wt == pytest.approx(2 * n_w * 2 * 8 * e_global, rel=1e-12)
    assert wt / ws == pytest.approx(e_global / e_local, rel=1e-12)
    # the area and leakage: the global SRAM without the weights + 64 local stores
    node = st.node
    area = sram_area_mm2(buf["total"] - buf["weights"], node) + 64 * sram_area_mm2(buf["weights"] / 64, node)
    leak = sram_leakage_w(buf["total"] - buf["weights"], node) + 64 * sram_leakage_w(buf["weights"] / 64, node)
    assert rs["memory"]["sram_mm2"] == pytest.approx(area, rel=1e-12)
    assert rt["memory"]["sram_mm2"] == pytest.approx(sram_area_mm2(buf["total"], node), rel=1e-12)
    # the leaking die: the arrays and the periphery at the logic density, the SRAM macros at CACTI's leakage
    logic = rs["leakage_w"] - leak
    assert logic == pytest.approx(rt["leakage_w"] - sram_leakage_w(buf["total"], node), rel=1e-9)
    assert rs["breakdown"]["leakage_j"] == pytest.approx(rs["leakage_w"] * rs["latency_per_token_s"], rel=1e-12)
    assert rs["memory"]["weights"] == "stationary" and rs["memory"]["local_store_bytes"] == buf["weights"] / 64


def test_the_digital_baseline_uses_the_chips_weight_policy():
    """The same chip without the array: the same die, the same choice. Its energy moves by the chip's weight-read
    change plus its own die's leakage change, nothing else."""
    rt, rs = (chip_energy(_spec(weights=w), "decode", False) for w in ("streamed", "stationary"))
    d_w = rs["sram_breakdown_j"]["weights_j"] - rt["sram_breakdown_j"]["weights_j"]
    d_leak = rs["digital_only"]["leakage_j"] - rt["digital_only"]["leakage_j"]
    assert d_leak > 0  # the local stores leak too
    assert rs["digital_only_chip_j"] - rt["digital_only_chip_j"] == pytest.approx(d_w + d_leak, rel=1e-9)
    b = baselines(_spec(weights="stationary"), rs, "decode")
    assert b["digital_same_node"]["energy_per_token_j"] == rs["digital_only_chip_j"]


@pytest.mark.parametrize("offchip", ["hbm", "ddr"])
def test_keys_past_the_die_capacity_are_read_off_chip(offchip):
    """By hand: a die whose SRAM holds all but X bytes of the buffers sends X bytes of the stored keys off chip;
    decode reads that share of every earlier token's keys at the off-chip energy per bit, the chip and the digital
    baseline alike; the die's SRAM is the capacity."""
    full = _spec()
    buf = _buffers(full)
    X = 0.25 * buf["keys"]
    cap = buf["total"] - X
    s = _spec(sram_max_bytes=cap, offchip=offchip)
    r, r0 = chip_energy(s, "decode", False), chip_energy(full, "decode", False)
    e_off = {"hbm": 3.9e-12, "ddr": 1.3e-9 / 64}[offchip]
    assert ec.OFFCHIP_MEMORY[offchip].value == e_off
    key_bits = 2 * (2 * 8) * 2 * 8 * (128 + 1) / 2  # [cos, sin] x heads x head_dim, int16, (T+1)/2 earlier tokens
    d = r["sram_breakdown_j"]
    assert d["offchip_j"] == pytest.approx(2 * key_bits * 0.25 * e_off, rel=1e-12)  # two layers
    assert d["keys_j"] == pytest.approx(0.75 * r0["sram_breakdown_j"]["keys_j"], rel=1e-12)
    assert r0["sram_breakdown_j"]["offchip_j"] == 0.0
    m = r["memory"]
    assert m["offchip_bytes"] == {"keys": pytest.approx(X), "weights": 0.0}
    assert m["on_die_bytes"] == pytest.approx(cap) and r["sram_bytes"] == pytest.approx(cap)
    assert m["sram_mm2"] == pytest.approx(sram_area_mm2(cap, s.node), rel=1e-12)
    # the same chip without the array reads the same bytes off chip: its SRAM part is the chip's
    dig_sram = r["digital_only_chip_j"] - r["digital_only"]["leakage_j"]
    dig_sram0 = r0["digital_only_chip_j"] - r0["digital_only"]["leakage_j"]
    assert dig_sram - dig_sram0 == pytest.approx(r["breakdown"]["sram_j"] - r0["breakdown"]["sram_j"], rel=1e-9)


def test_past_the_keys_the_weights_go_off_chip():
    full = _spec()
    buf = _buffers(full)
    cap = buf["total"] - buf["keys"] - 0.5 * buf["weights"]
    r = chip_energy(_spec(sram_max_bytes=cap), "decode", False)
    assert r["memory"]["offchip_bytes"] == {"keys": pytest.approx(buf["keys"]), "weights": pytest.approx(
        0.5 * buf["weights"])}
    assert r["sram_breakdown_j"]["keys_j"] == 0.0
    w0 = chip_energy(full, "decode", False)["sram_breakdown_j"]["weights_j"]
    assert r["sram_breakdown_j"]["weights_j"] == pytest.approx(0.5 * w0, rel=1e-12)


def test_a_long_context_spills_instead_of_growing_the_die():
    """A compiled chip whose buffers at a longer context exceed ``[energy] sram_max_bytes``: the die holds the
    capacity and the report names the keys' bytes that went off chip; at the default capacity nothing moves."""
    model = seeded_kuramoto(k=8, n_heads=2, n_layers=2, seq_len=16)
    a0 = chip_area(compile(model, ChipConfig(context_tokens=64)))
    assert a0["offchip_bytes"] == {"keys": 0.0, "weights": 0.0} and a0["sram_on_die_bytes"] == a0["sram_bytes"]
    cap = 36 * 1024
    assert a0["sram_buffers"]["keys"] > a0["sram_bytes"] - cap > 0
    chip = compile(model, ChipConfig(context_tokens=64, energy=EnergyConfig(sram_max_bytes=cap)))
    a = chip_area(chip)
    assert a["sram_on_die_bytes"] == cap and a["offchip_bytes"]["keys"] == pytest.approx(a0["sram_bytes"] - cap)
    assert a["sram_mm2"] == pytest.approx(sram_area_mm2(cap, chip.node), rel=1e-12)
    assert a["sram_mm2"] < a0["sram_mm2"]
    assert a["area_mm2"] - a0["area_mm2"] == pytest.approx(a["sram_mm2"] - a0["sram_mm2"], rel=1e-9)


@pytest.mark.parametrize("field,value,msg", [("weights", "cached", "energy.weights"),
                                             ("sram_max_bytes", 100, "energy.sram_max_bytes"),
                                             ("offchip", "gddr", "energy.offchip")])
def test_the_new_energy_fields_are_validated(field, value, msg):
    with pytest.raises(ValueError, match=msg):
        EnergyConfig(**{field: value})


def test_simulate_names_the_bytes_that_went_off_chip(capsys):
    import json

    import torch

    from mapping.cli.simulate import print_report
    from mapping.simulation.report import simulate_report

    model = seeded_kuramoto(k=8, n_heads=2, n_layers=2, seq_len=16)
    chip = compile(model, ChipConfig(energy=EnergyConfig(sram_max_bytes=25_000, offchip="ddr")))
    x = torch.randint(0, 256, (1, 16), generator=torch.Generator().manual_seed(0))
    rep = simulate_report(chip, x, torch.roll(x, -1, 1), measure_gpu=False, warn=False)
    m = json.loads(json.dumps(rep.to_dict()))["memory"]
    keys_off = chip_area(chip)["sram_bytes"] - 25_000
    assert m["offchip"] == "ddr" and m["offchip_bytes"] == {"keys": pytest.approx(keys_off), "weights": 0.0}
    print_report(rep)
    assert f"off chip (ddr, 20.3 pJ/bit): keys {keys_off / 1e3:.4g} kB, weights 0 kB" in capsys.readouterr().out


def test_a_batch_keeps_a_window_of_keys_per_sequence_as_the_gpu_does():
    """By hand: b sequences in flight keep b windows of keys (the GPU baselines' working set counts b windows of
    K/V too): at batch 4 the key buffer is 4x batch 1's; on a die that holds batch 1's buffers exactly, the 3
    extra windows go off chip, so a decoded token reads 3/4 of its earlier tokens' keys off chip; the weights'
    share of the energy falls by 4 as before."""
    one = _spec()
    buf1 = _buffers(one)
    four = _spec(batch=4, sram_max_bytes=buf1["total"])
    buf4 = _buffers(four)
    assert buf4["keys"] == pytest.approx(4 * buf1["keys"], rel=1e-15)
    assert buf4["total"] - buf1["total"] == pytest.approx(3 * buf1["keys"], rel=1e-12)
    r = chip_energy(four, "decode", False)
    m = r["memory"]
    assert m["offchip_bytes"] == {"keys": pytest.approx(3 * buf1["keys"]), "weights": 0.0}
    key_bits = 2 * (2 * 8) * 2 * 8 * (128 + 1) / 2  # [cos, sin] x heads x head_dim, int16, (T+1)/2 earlier tokens
    assert r["sram_breakdown_j"]["offchip_j"] == pytest.approx(2 * key_bits * 0.75 * 3.9e-12, rel=1e-12)
    with pytest.raises(ValueError, match="sequences must be a positive integer"):
        sram_buffers("kuramoto", "kuramoto", MC, T=8, n_layers=1, n_heads=2, head_dim=8, banks=2, taps=2,
                     coupler_bits=6, readout_bits=10, precision="int16", sequences=0)


def test_a_compiled_chips_area_plan_counts_the_batchs_keys():
    """The die's SRAM plan of the area report and of the energy pass agree at batch 64: both hold 64 windows."""
    from mapping.energy import energy_report

    model = seeded_kuramoto(k=8, n_heads=2, n_layers=2, seq_len=16)
    one = chip_area(compile(model, ChipConfig(context_tokens=64, mismatch=False)))
    chip = compile(model, ChipConfig(context_tokens=64, mismatch=False,
                                     energy=EnergyConfig(phase="decode", batch=64, sram_max_bytes=int(one["sram_bytes"]))))
    a = chip_area(chip)
    assert a["sram_buffers"]["keys"] == pytest.approx(64 * one["sram_buffers"]["keys"], rel=1e-15)
    assert a["offchip_bytes"]["keys"] == pytest.approx(63 * one["sram_buffers"]["keys"], rel=1e-12)
    assert energy_report(chip, 64)["memory"]["offchip_bytes"] == a["offchip_bytes"]
