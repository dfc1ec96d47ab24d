"""Baselines on the same terms (mapping.energy.baselines): the same chip without the array, the GPU's datapath
bound and its board figure, each recomputed by hand; decode charges the weights once per batch."""

import json

import pytest

from hw_models.technology import HOROWITZ_REFERENCE, TechnologyNode, stated_extrapolation
from mapping import ChipConfig, compile
from mapping.config import EnergyConfig
from mapping.energy import energy_report, gpu_energy_per_token
from mapping.energy import constants as ec
from mapping.energy.baselines import BASELINES, baselines, board_precision, gpu_datapath_j
from mapping.energy.chip_terms import chip_energy

from _chips import seeded_kuramoto

from _energy_spec import make_spec


@pytest.fixture(scope="module")
def model():
    return seeded_kuramoto(k=8, n_heads=2, n_layers=2, seq_len=16)


@pytest.fixture(scope="module")
def chip(model):
    return compile(model, ChipConfig())


def test_report_carries_the_three_baselines_with_node_precision_and_basis(chip):
    r = energy_report(chip)
    bl = r["baselines"]
    for k in BASELINES:
        assert {"energy_per_token_j", "node_nm", "precision", "supply_v", "basis", "chip_ratio"} <= set(bl[k])
        assert bl[k]["energy_per_token_j"] > 0
        assert bl[k]["chip_ratio"] == pytest.approx(r["energy_per_token_chip_j"] / bl[k]["energy_per_token_j"])
    a, d, b = bl["digital_same_node"], bl["gpu_datapath"], bl["gpu_board"]
    assert a["energy_per_token_j"] == r["digital_only_chip_j"]
    assert (a["node_nm"], a["supply_v"], a["precision"]) == (65.0, 1.2, "int16")
    assert (d["node_nm"], d["precision"], b["precision"]) == (4.0, "int16", "bf16")
    # the board figure at the stated utilisation 1 is the GPU model's historical lower bound
    assert b["utilisation"] == 1.0
    assert b["energy_per_token_j"] == pytest.approx(r["gpu_energy_bounds_j"]["lower"], rel=1e-12)
    assert "T = 16" in r["headline"] and "without the array" in r["headline"] and "datapath" in r["headline"]
    for ph in r["phases"].values():
        assert set(ph["baselines_j"]) == set(BASELINES)


def test_gpu_datapath_recomputes_by_hand():
    mc = {"k": 8, "n_heads": 2, "n_layers": 2}
    for prec in ("int8", "int16", "fp16", "fp32"):
        got = gpu_datapath_j("kuramoto", mc, 2, 64, "H100-SXM", precision=prec, phase="prefill")
        g = gpu_energy_per_token("kuramoto", mc, 2, 64, "H100-SXM", precision=board_precision(prec))
        with stated_extrapolation():
            node = TechnologyNode(node_nm=4.0, flavor="HP", vdd_v=0.75)
            e_op = 0.5 * node.scale_energy(sum(ec.HOROWITZ_45NM[prec].values()), HOROWITZ_REFERENCE) * 3.6 * 1.1
            e_byte = 8 * ec.sram_j_per_bit(g["working_set_bytes"], node)  # CACTI 7, as the chip's SRAM
        assert g["memory"] == "sram"  # a tiny model's working set lives in L2
        assert got["energy_per_token_j"] == pytest.approx(g["flops_per_token"] * e_op
                                                          + g["bytes_per_token"] * e_byte, rel=1e-12)
        # the datapath is below the board at peak: TDP/peak is the whole board's energy per operation
        assert got["ops_j"] < g["flop_only_j"]


def test_an_int8_chip_is_compared_at_int8(model):
    r = energy_report(compile(model, ChipConfig().replace(energy=EnergyConfig(digital_precision="int8"))))
    assert {r["baselines"][k]["precision"] for k in BASELINES} == {"int8"}


def _spec(**over):
    mc = {"k": 16, "n_heads": 2, "n_layers": 2, "ffn_hidden": 16, "vocab_size": 256}
    base = dict(kind="kuramoto", layer_kind="kuramoto", n_layers=2, n_heads=2, head_dim=8, banks=2, taps=2, T=128,
                model_config=mc, f0_hz=1.8e9, p_osc_w=2.6e-4, p_coupler_w=1.2e-5, e_bit_write_j=1e-14,
                settle_cycles=4.0, read_cycles=4.0, coupler_bits=6, gain_bits=8, readout_bits=10,
                array_area_mm2=1.0, injection_s=1e-9, injection_driver_w=1e-5, sources={})
    return make_spec(**{**base, **over})


def test_decode_at_batch_64_charges_the_weights_once_per_batch():
    """By hand: in decode every token re-reads each layer's weights at batch 1; 64 sequences decoding together
    share one read, so the weight energy per token falls 64x, on the chip and on the GPU alike."""
    s1, s64 = _spec(batch=1), _spec(batch=64)
    w1 = chip_energy(s1, "decode", False)["sram_breakdown_j"]["weights_j"]
    w64 = chip_energy(s64, "decode", False)["sram_breakdown_j"]["weights_j"]
    # the weight bits of the attention layers at int16, at the SRAM energy per bit of the weight array
    from mapping.energy.ops import attention_cost

    n_w = attention_cost("kuramoto", s1.shape.model_config, 128)["weights"]
    e_bit = ec.sram_j_per_bit(n_w * 2 * 2, s1.node)
    assert w1 == pytest.approx(2 * n_w * 2 * 8 * e_bit, rel=1e-12)
    assert w1 / w64 == pytest.approx(64.0, rel=1e-12)
    g = {b: gpu_energy_per_token("kuramoto", s1.shape.model_config, 2, 128, phase="decode", batch=b) for b in (1, 64)}
    W = n_w * 2 * 2  # bytes of the two layers' weights at bf16
    assert g[1]["bytes_per_token"] - g[64]["bytes_per_token"] == pytest.approx(W * (1 - 1 / 64), rel=1e-12)
    # and the digital chip follows the batch (the GPU's per-byte energy grows with its batch's working set in L2,
    # so only its bytes are compared above)
    b1 = baselines(s1, chip_energy(s1, "decode", False), "decode")
    b64 = baselines(s64, chip_energy(s64, "decode", False), "decode")
    assert b64["digital_same_node"]["energy_per_token_j"] < b1["digital_same_node"]["energy_per_token_j"]


def test_simulate_json_carries_the_baselines(model):
    import torch

    from mapping.simulation.report import simulate_report

    chip = compile(model, ChipConfig())
    x = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(0))
    rep = simulate_report(chip, x[:, :16], torch.roll(x, -1, 1), measure_gpu=False, warn=False).to_dict()
    bl = json.loads(json.dumps(rep))["baselines"]
    for k in BASELINES:
        assert {"energy_per_token_j", "node_nm", "precision"} <= set(bl[k])


def test_the_board_figure_carries_the_nvml_measurement_when_one_was_made():
    from mapping.simulation.report import _with_measured

    bl = {"gpu_board": {"energy_per_token_j": 2e-7}, "gpu_datapath": {}, "digital_same_node": {}}
    assert _with_measured(bl, None) is bl and _with_measured(bl, {"error": "no GPU"}) is bl
    m = _with_measured(bl, {"measured_gpu_j_per_token": 3e-6, "source": "NVML", "device": "H100"})
    assert m["gpu_board"]["measured_j"] == 3e-6 and "H100" in m["gpu_board"]["measured_basis"]
    assert "measured_j" not in bl["gpu_board"]  # the energy report's own dict is not changed
