"""Energy model: every chip term and both GPU bounds against hand calculations from their cited constants.

The expected values are written out here from the figures the sources give (Horowitz ISSCC 2014 table,
O'Connor MICRO 2017, the datasheets, the stated "assumed" figures), not by calling the helpers under test.
"""

import math

import pytest

from hw_models.cacti import sram_macro
from hw_models.technology import HOROWITZ_REFERENCE, REFERENCE_NODE, TechnologyNode
from mapping.energy import constants as ec
from mapping.energy import attention_cost, chip_energy_per_token, gpu_energy_per_token

from _energy_spec import make_spec

MC = {"k": 8, "n_heads": 2, "n_layers": 2, "ffn_hidden": 16, "vocab_size": 256}
# Stillmaker & Baas 2017 energy fits (e2 V^2 + e1 V + e0): 65 nm bulk at 1.2 V (the ring chips' supply) over
# 45 nm HP at 0.9 V (Horowitz's table), evaluated by hand from the coefficients
E65_12 = 3.755 * 1.2**2 - 4.398 * 1.2 + 1.975      # 2.1046
EHP45_09 = 1.018 * 0.9**2 - 0.3107 * 0.9 + 0.1539   # 0.69885
SCALE_65 = E65_12 / EHP45_09                         # 3.0115: Horowitz 45 nm / 0.9 V -> 65 nm / 1.2 V
# leakage density at 65 nm LP, 1.2 V: 1/2 x I_off 9.12 pA/um (CACTI 7's 65 nm LSTP table, 300 K) x V x transistors/mm^2 (Intel 45 nm 3.33 M/mm^2 over the
# 65->45 area factor 1.5) x mean width 4 x 65 nm
LEAK_65 = 0.5 * 9.12e-12 / 1e-6 * 1.2 * (3.33e6 / 1.5) * 4 * 65e-9


def spec(**kw):
    base = dict(kind="kuramoto", layer_kind="kuramoto", n_layers=2, n_heads=2, head_dim=4, banks=2, taps=2, T=16,
                model_config=MC, f0_hz=1e9, p_osc_w=100e-6, p_coupler_w=20e-6, e_bit_write_j=10e-15,
                settle_cycles=4.0, read_cycles=4.0, coupler_bits=6, gain_bits=8, readout_bits=10,
                digital_precision="int8", array_area_mm2=1.0,
                diffusion_rad2_per_s=1e4, injection_s=20e-9, injection_driver_w=30e-6, sources={})
    base.update(kw)
    return make_spec(**base)


def test_cited_constants_are_the_published_figures():
    # Horowitz ISSCC 2014 (45 nm, 0.9 V)
    t = ec.HOROWITZ_45NM
    assert (t["int8"]["add"], t["int8"]["mul"], t["fp32"]["add"], t["fp32"]["mul"]) == (0.03e-12, 0.2e-12, 0.9e-12,
                                                                                         3.7e-12)
    assert (t["int16"]["add"], t["fp16"]["add"], t["fp16"]["mul"]) == (0.05e-12, 0.4e-12, 1.1e-12)
    h45 = HOROWITZ_REFERENCE  # 45 nm HP at 0.9 V: the node of the table itself (the SRAM cross-check's figures)
    assert h45.sram_j_per_bit(8 * 1024).value == pytest.approx(10e-12 / 64)
    assert h45.sram_j_per_bit(1024 * 1024).value == pytest.approx(100e-12 / 64)
    assert h45.sram_j_per_bit(32 * 1024).value == pytest.approx(20e-12 / 64)
    # log-log between 32 kB and 1 MB: at the geometric mean of the sizes, the geometric mean of the energies
    assert h45.sram_j_per_bit(math.sqrt(32 * 1024 * 1024 * 1024)).value == pytest.approx(
        math.sqrt(20e-12 * 100e-12) / 64)
    assert REFERENCE_NODE.sram_j_per_bit(8 * 1024).value == pytest.approx(10e-12 / 64 * SCALE_65)  # 65 nm, 1.2 V
    # the chip's SRAM: CACTI 7's read of a 64-bit word (tests/test_cacti.py)
    assert ec.sram_j_per_bit(8 * 1024) == sram_macro(8 * 1024, REFERENCE_NODE).read_j.value / 64
    assert ec.HBM_J_PER_BIT.value == 3.9e-12
    assert ec.GPUS["H100-SXM"].j_per_op("bf16") == pytest.approx(700 / 989e12)
    assert ec.GPUS["A100-SXM"].j_per_op("bf16") == pytest.approx(400 / 312e12)
    assert ec.mac_energy_j("int16") == pytest.approx((0.8e-12 + 0.05e-12) * SCALE_65)
    for name, f in vars(ec).items():  # every figure has a unit and a source or "assumed"
        if isinstance(f, ec.Figure):
            assert f.unit and f.source, name


def test_each_chip_term_against_a_hand_calculation():
    s = spec()
    e = chip_energy_per_token(s, phase="prefill")
    b = e["breakdown"]
    L, T, k = 2, 16, 8
    n_osc = 2 * k * T                  # banks x k x T
    n_coup = 2 * 2 * k * T * (T - 1) / 2  # taps x banks x k x T(T-1)/2
    t_win = 8e-9                       # (4 + 4) cycles at 1 GHz
    t_inj = 20e-9                      # the spec's injection: 20 cycles at 1 GHz
    V = 1.2
    assert b["oscillators_j"] == pytest.approx(L * n_osc * 100e-6 * t_win / T)
    assert b["injection_j"] == pytest.approx(L * n_osc * (100e-6 + 30e-6) * t_inj / T)  # oscillator + driver
    assert b["static_coupler_j"] == pytest.approx(L * n_coup * 20e-6 * 4e-9 / T)  # couplers open for the readout
    assert b["coupler_programming_j"] == pytest.approx(L * n_coup * 6 * 10e-15 / T)
    assert b["dac_j"] == pytest.approx(L * (n_coup * 0.5 * 63 * 1e-15 * V**2 + k * T * 0.5 * 255 * 1e-15 * V**2) / T)
    pitch = math.sqrt(1e-6 / n_osc)    # 1 mm² per layer over its oscillators
    c_sink = 2 * pitch * 0.2e-9 + 2e-15  # H-tree 2 x pitch of 0.2 fF/µm wire + 2 fF load
    channels = 2 * n_osc
    assert b["clock_j"] == pytest.approx(L * (n_osc + channels) * c_sink * V**2 * 1e9 * (t_inj + t_win) / T)
    assert b["phase_detector_j"] == pytest.approx(L * channels * 2e-15 * V**2 * 2e9 * 4e-9 / T)
    assert b["readout_j"] == pytest.approx(L * channels * 5e-15 * 2**10 / T)
    # digital: (lin 768 + elementwise 136 + scores 272 + softmax 85 + rescaling 32) ops, half an int8 MAC each
    ops = 3 * 2 * 16 * 8 + 17 * 8 + 8.5 * 2 * 16 + 8.5 * 5 * 2 + 4 * 8
    # ... with its operand delivery (2.6 MACs' worth of register-file accesses) and control (10 %)
    assert b["digital_periphery_j"] == pytest.approx(L * ops * 0.5 * (0.2e-12 + 0.03e-12) * SCALE_65 * 3.6 * 1.1)
    # SRAM: CACTI 7's read of a 64-bit word from a macro of each buffer's size (at least 256 B, a power of two)
    def e_bit(size_bytes):
        return sram_macro(size_bytes, REFERENCE_NODE).read_j.value / 64

    weights = 3 * (2 * k * k + k) + k + 1       # gate_q, gate_k, value (+ bias), omega, log_tau
    a_bits = 2 * T * (T + 1) / 2 * 6            # h T(T+1)/2 softmax weights at 6 bits
    th_bits, out_bits = k * T * 10, channels * 10
    bus = 0.5 * 0.2e-9 * 1e-3 * V**2            # ½ C_wire V² over the 1 mm array side, per bit
    d = e["sram_breakdown_j"]
    e_w, e_key = e_bit(weights * L), e_bit(2 * k * T)  # every layer's weights; 2k key values of T tokens
    e_a, e_ph = e_bit(2 * T * T * 6 / 8), e_bit(n_osc * 2 * 10 / 8)  # A of h heads; 2 channels per phase read
    assert e_w > e_a  # 834 B -> a 1 kB macro, 192 B -> the 256 B smallest
    assert d["weights_j"] == pytest.approx(L * weights * 8 * e_w / T, rel=1e-9)
    assert d["keys_j"] == pytest.approx(L * 2 * k * 8 * e_key, rel=1e-9)  # 2k key values per token, int8, read once
    assert d["a_into_array_j"] == pytest.approx(L * 2 * a_bits * e_a / T, rel=1e-9)
    assert d["phases_in_j"] == pytest.approx(L * th_bits * e_ph / T, rel=1e-9)
    assert d["phases_out_j"] == pytest.approx(L * 2 * out_bits * e_ph / T, rel=1e-9)
    assert d["array_bus_j"] == pytest.approx(L * (a_bits + th_bits + out_bits) * bus / T)
    assert b["sram_j"] == pytest.approx(sum(d.values()))
    # the timeline (one round: the spatial schedule) and the leakage of the die over it
    tl = e["timeline_s"]
    dac = max((b_ + 1) * math.log(2) * 2e3 * 2 ** (b_ - 1) * 1e-15 for b_ in (6, 8))  # (b + 1) ln 2 R 2^(b-1) C_u
    rnd = dac + t_inj + 4e-9 + 4e-9 + 64 / 100e6  # DAC, injection, settle, readout, 64 channels per 100 MS/s ADC
    digital = ops * T / (2 * 1024 * 500e6)      # 1024 MACs at the 500 MHz periphery clock
    layer = digital + rnd + T / 500e6           # + programming: T coupler rows, one per clock
    assert tl["layer_s"] == pytest.approx(layer) and tl["rounds_per_layer"] == 1
    assert e["latency_per_token_s"] == pytest.approx(L * layer / T)
    # the leakage: the die (the layers' arrays, 1 mm^2 each, + SRAM + 1024 int8 MACs x 2) at the logic density but
    # its SRAM, whose macros leak by CACTI 7, over the latency
    m = sram_macro(e["sram_bytes"], REFERENCE_NODE)
    periphery = 1024 * ec.mac_area_um2("int8") * 2 * 1e-6
    leak_w = (L * 1.0 + periphery) * LEAK_65 + m.leakage_w.value
    assert e["leakage_w"] == pytest.approx(leak_w, rel=1e-9)
    assert b["leakage_j"] == pytest.approx(leak_w * L * layer / T, rel=1e-9)
    # the breakdown sums, and every term has a source
    assert e["energy_per_token_chip_j"] == pytest.approx(sum(b.values()))
    assert set(e["sources"]) == set(b) and all(isinstance(v, str) and v for v in e["sources"].values())
    # Amdahl: the array takes A [cos, sin] (8.5 x 2 x 16 = 272 ops) out of 272 + ops
    assert e["offloaded_fraction"] == pytest.approx(272 / (272 + ops))
    assert e["amdahl_max_gain"] == pytest.approx((272 + ops) / ops)


def test_decode_counts_one_new_token_against_the_stored_phases():
    s = spec(batch=1)
    e = chip_energy_per_token(s, phase="decode")["breakdown"]
    L, T, k = 2, 16, 8
    m = (T + 1) / 2                      # mean position of the new token
    assert e["oscillators_j"] == pytest.approx(L * 2 * k * m * 100e-6 * 8e-9)
    assert e["static_coupler_j"] == pytest.approx(L * 2 * 2 * k * (T - 1) / 2 * 20e-6 * 4e-9)
    assert e["readout_j"] == pytest.approx(L * 2 * 2 * k * 5e-15 * 1024)  # only the new token is read
    weights = 3 * (2 * k * k + k) + k + 1
    e_w = sram_macro(weights * L, REFERENCE_NODE).read_j.value / 64      # CACTI 7: a 1 kB macro
    e_key = sram_macro(2 * k * T, REFERENCE_NODE).read_j.value / 64  # the stored keys' 256 B macro
    d = chip_energy_per_token(s, phase="decode")["sram_breakdown_j"]
    assert d["keys_j"] == pytest.approx(L * 2 * k * 8 * m * e_key, rel=1e-9)   # every earlier token's key
    assert d["weights_j"] == pytest.approx(L * weights * 8 * e_w, rel=1e-9)  # batch 1: every token


def test_ssa_pairwise_cells_by_hand():
    mc = {"d_model": 8, "n_heads": 2, "n_layers": 1, "frequency": "scalar"}
    s = spec(kind="ssa", layer_kind="ssa-pairwise", n_layers=1, head_dim=1, banks=1, taps=1, model_config=mc,
             settle_cycles=50.0, read_cycles=400.0)
    e = chip_energy_per_token(s, phase="prefill")
    b, T = e["breakdown"], 16
    cells = 2 * T * (T - 1) / 2                     # one Adler cell per (head, i > j)
    assert b["oscillators_j"] == pytest.approx(2 * cells * 100e-6 * 450e-9 / T)
    assert b["static_coupler_j"] == pytest.approx(cells * 20e-6 * 450e-9 / T)  # coupled while averaging
    assert b["injection_j"] == 0 and "not used" in e["sources"]["injection_j"]
    assert b["readout_j"] == pytest.approx(2 * cells * 5e-15 * 1024 / T)


def test_analog_scores_move_the_scores_onto_the_array():
    s = spec()
    d = chip_energy_per_token(s, phase="prefill", analog_scores=False)
    a = chip_energy_per_token(s, phase="prefill", analog_scores=True)
    scores = 8.5 * 2 * 16
    assert a["ops"]["offloaded"] - d["ops"]["offloaded"] == pytest.approx(2 * scores)  # two layers
    assert a["offloaded_fraction"] > d["offloaded_fraction"]
    L, T, k = 2, 16, 8
    assert a["breakdown"]["score_mixers_j"] == pytest.approx(L * k * T * (T + 1) / 2 * 2e-15 * 1.44 * 2e9 * 4e-9 / T)
    assert a["breakdown"]["score_readout_j"] == pytest.approx(
        L * (2 * T * (T + 1) / 2 * 5e-15 * 1024 + 2 * k * T * 0.5 * 255e-15 * 1.44) / T)
    # the score noise is the simulated chain's error model (a chip's readout, gates and oscillators:
    # tests/test_analog_scores.py); a spec written by hand carries none
    assert a["analog_score_noise"] is None
    assert a["energy_per_token_chip_j"] == pytest.approx(sum(a["breakdown"].values()))


def test_gpu_bounds_against_a_hand_calculation():
    T, L = 16, 2
    g = gpu_energy_per_token("kuramoto", MC, L, T, "H100-SXM", precision="bf16", phase="prefill")
    F = L * (3 * 2 * 16 * 8 + 17 * 8 + 8.5 * 2 * 16 + 8.5 * 5 * 2 + 8.5 * 2 * 16)
    assert g["flops_per_token"] == pytest.approx(F)
    W = 3 * (2 * 8 * 8 + 8) + 8 + 1
    comp = (L * 16 + L * W / T) * 2                  # θ in + Δ out per layer, weights once per sequence; bf16
    assert g["bytes_per_token"] == pytest.approx(comp)
    working = (L * W + L * 32 * T + L * 120) * 2      # weights + K/V of the sequence + activations, bf16
    assert g["working_set_bytes"] == pytest.approx(working) and g["memory"] == "sram"
    # at 4 nm / 0.75 V: CACTI 7's 22 nm HP macro of the working set (8 kB, at CACTI's own 0.8 V), carried by the
    # Stillmaker-Baas HP 7 and 10 nm energy fits at 0.75 V extrapolated log-log in the node to 4 nm, over the
    # 22 nm HP fit at 0.8 V; per byte
    e7 = 0.1776 * 0.75**2 - 0.09097 * 0.75 + 0.02447
    e10 = 0.2068 * 0.75**2 - 0.09311 * 0.75 + 0.02375
    w = math.log(4 / 7) / math.log(10 / 7)
    n22 = TechnologyNode(node_nm=22, flavor="HP")
    assert n22.vdd == 0.8
    e_sram = sram_macro(8192, n22).read_j.value / 64 * (e7 ** (1 - w) * e10 ** w) / n22.energy().value * 8
    assert g["lower_j"] == pytest.approx(F * 700 / 989e12 + comp * e_sram, rel=1e-9)
    eager = (2 * L * 120 + L * W / T) * 2
    assert g["upper_j"] == pytest.approx(700 * (F / 989e12 + eager / 3.35e12))
    assert g["lower_j"] <= g["upper_j"]
    dec = gpu_energy_per_token("kuramoto", MC, L, T, "H100-SXM", precision="bf16", phase="decode")
    comp_d = (L * 16 + L * W + L * 32 * ((T - 1) / 2 + 1)) * 2  # weights every token, the K/V cache read
    assert dec["bytes_per_token"] == pytest.approx(comp_d)


def test_gpu_lower_bound_uses_hbm_when_the_working_set_does_not_fit():
    big = {"k": 1024, "n_heads": 8, "n_layers": 48, "vocab_size": 256}
    g = gpu_energy_per_token("kuramoto", big, 48, 4096, "A100-SXM", precision="bf16", phase="decode", batch=64)
    assert g["working_set_bytes"] > 40e6 and g["memory"] == "hbm"
    assert g["lower_j"] == pytest.approx(g["flops_per_token"] * 400 / 312e12 + g["bytes_per_token"] * 3.9e-12 * 8)


@pytest.mark.parametrize("bad, match", [
    (dict(gpu="V100"), "unknown GPU"), (dict(precision="fp8"), "precision"), (dict(phase="train"), "phase"),
    (dict(scope="head"), "scope"), (dict(batch=0), "batch"),
])
def test_gpu_bad_arguments_are_refused(bad, match):
    kw = dict(gpu="H100-SXM", precision="bf16", phase="prefill", scope="attention", batch=1)
    kw.update(bad)
    g = kw.pop("gpu")
    with pytest.raises(ValueError, match=match):
        gpu_energy_per_token("kuramoto", MC, 2, 16, g, **kw)


def test_bad_spec_and_phase_are_refused():
    with pytest.raises(ValueError, match="coupler_bits"):
        spec(coupler_bits=0)
    with pytest.raises(ValueError, match="digital_precision"):
        spec(digital_precision="int4")
    with pytest.raises(ValueError, match="phase"):
        chip_energy_per_token(spec(), phase="train")
    with pytest.raises(ValueError, match="model_kind"):
        attention_cost("transformer", MC, 16)
