"""Energy report: Amdahl property over configurations, the NVML path under a mocked counter, the report and
``oscsim simulate --json`` keys, and the area model."""

import json
import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hw_models.technology import chip_node
from mapping import ChipConfig, compile
from hw_models.devices import make_device
from hw_models.layout import ring_area_um2
from hw_models.technology import REFERENCE_NODE
from mapping.energy import chip_energy_per_token, energy_report, gpu_energy_per_token, \
    measure_gpu_energy

from _chips import seeded_kuramoto
from _energy_spec import make_spec

MC = {"k": 8, "n_heads": 2, "n_layers": 2, "ffn_hidden": 16, "vocab_size": 256}


@st.composite
def specs(draw):
    kind = draw(st.sampled_from(["kuramoto", "ssa-pairwise", "ssa1d-collective"]))
    h = draw(st.integers(1, 4))
    hd = draw(st.integers(1, 8))
    if kind == "kuramoto":
        mc = {"k": h * hd, "n_heads": h, "n_layers": 2}
    else:
        mc = {"d_model": h * hd, "n_heads": h, "n_layers": 2,
              "frequency": "scalar" if kind == "ssa1d-collective" else draw(st.sampled_from(["scalar", "vector"]))}
    pos = st.floats(1e-9, 1e-2, allow_nan=False)
    return make_spec(
        kind="kuramoto" if kind == "kuramoto" else "ssa", layer_kind=kind, n_layers=draw(st.integers(1, 4)),
        n_heads=h, head_dim=hd, banks=draw(st.integers(1, 2)) if kind == "kuramoto" else 1,
        taps=draw(st.integers(1, 2)), T=draw(st.integers(1, 512)), model_config=mc,
        f0_hz=draw(st.floats(1e7, 1e10)), p_osc_w=draw(pos), p_coupler_w=draw(st.floats(0, 1e-3)),
        e_bit_write_j=draw(st.floats(0, 1e-12)), settle_cycles=draw(st.floats(0, 500)),
        read_cycles=draw(st.floats(0.5, 500)), coupler_bits=draw(st.integers(1, 12)),
        gain_bits=draw(st.integers(1, 12)), readout_bits=draw(st.integers(1, 14)),
        digital_precision=draw(st.sampled_from(["int8", "int16", "fp16", "fp32"])),
        batch=draw(st.integers(1, 64)), array_area_mm2=draw(st.floats(1e-3, 1e3)),
        readout_samples=draw(st.floats(1, 100)) if kind == "ssa1d-collective" else 1.0,
        injection_s=draw(st.floats(0, 1e-6)), injection_driver_w=draw(st.floats(0, 1e-3)), sources={})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(s=specs(), phase=st.sampled_from(["prefill", "decode"]), analog=st.booleans())
def test_gain_never_exceeds_the_amdahl_bound(s, phase, analog):
    e = chip_energy_per_token(s, phase=phase, analog_scores=analog)
    b = e["breakdown"]
    assert all(v >= 0 and math.isfinite(v) for v in b.values())
    assert e["energy_per_token_chip_j"] == pytest.approx(sum(b.values()), rel=1e-12)
    assert 0 <= e["offloaded_fraction"] < 1
    assert e["array_gain"] <= e["amdahl_max_gain"] * (1 + 1e-12)
    assert e["amdahl_max_gain"] == pytest.approx(1 / (1 - e["offloaded_fraction"]))
    sh = s.shape
    g = gpu_energy_per_token(sh.kind, sh.model_config, sh.n_layers, sh.T, precision="int8", phase=phase,
                             batch=s.workload.batch)
    assert 0 < g["lower_j"] <= g["upper_j"]


class FakeNVML:
    """pynvml's energy API; the counter advances by 3 mJ per attention call (the work done), in mJ."""

    def __init__(self):
        self.mj, self.inited = 1000.0, False

    def nvmlInit(self):
        self.inited = True

    def nvmlDeviceGetHandleByIndex(self, i):
        assert self.inited and i == 0
        return "handle0"

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        assert handle == "handle0"
        return int(self.mj)


@pytest.fixture(scope="module")
def model():
    return seeded_kuramoto(k=8, n_heads=2, n_layers=2, seq_len=16)


def test_nvml_path_under_a_mocked_counter(model, monkeypatch):
    nv = FakeNVML()
    import oscsim.nn.kuramoto as K

    orig = K.KuramotoAttention.forward

    def counted(self, theta):
        nv.mj += 3.0
        return orig(self, theta)

    monkeypatch.setattr(K.KuramotoAttention, "forward", counted)
    tok = torch.zeros(2, 5, dtype=torch.long)
    r = measure_gpu_energy(model, tok, repeats=7, device="cpu", nvml=nv)
    # warm-up not counted: 7 repeats x 2 layers x 3 mJ over 7 x 10 tokens
    assert r["measured_gpu_j_per_token"] == pytest.approx(7 * 2 * 3e-3 / (7 * 10))
    assert r["repeats"] == 7 and "NVML" in r["source"]
    broken = FakeNVML()
    broken.nvmlDeviceGetTotalEnergyConsumption = lambda h: (_ for _ in ()).throw(RuntimeError("NVML_ERROR"))
    assert "NVML_ERROR" in measure_gpu_energy(model, tok, repeats=1, device="cpu", nvml=broken)["error"]
    with pytest.raises(ValueError, match="repeats"):
        measure_gpu_energy(model, tok, repeats=0, device="cpu", nvml=nv)
    if not torch.cuda.is_available():
        assert measure_gpu_energy(model, tok) is None


@pytest.fixture(scope="module")
def chip(model):
    return compile(model, ChipConfig())


def test_report_headline_bounds_whole_model_and_area(chip):
    r = energy_report(chip)
    assert r["energy_per_token_gpu_j"] == r["gpu_energy_bounds_j"]["lower"]  # the default headline bound
    assert r["gpu_energy_bounds_j"]["lower"] <= r["gpu_energy_bounds_j"]["upper"]
    assert "board figure at peak" in r["headline"] and "Amdahl" in r["headline"]
    w = r["whole_model"]
    assert w["chip_j"] > r["energy_per_token_chip_j"] and w["gpu_j"] > r["energy_per_token_gpu_j"]
    assert w["offloaded_fraction"] < r["offloaded_fraction"]
    assert set(r["phases"]) == {"prefill", "prefill+analog_scores", "decode", "decode+analog_scores"}
    for v in r["phases"].values():
        assert v["array_gain"] <= v["amdahl_max_gain"] * (1 + 1e-12)
        assert v["whole_model"]["amdahl_max_gain"] <= v["amdahl_max_gain"]
    # area: the silicon's cells (the default multiplexed array: 16 tiles of one network each) + SRAM + periphery
    a = r["area"]
    c = a["counts"]
    assert chip.schedule.tiles == 16 and c["oscillators"] == 16 * 16 and c["couplers"] == 16 * 2 * 16 * 15 // 2
    assert r["area_mm2"] == pytest.approx(a["array_mm2"] + a["sram_mm2"] + a["periphery_mm2"])
    cell = a["cells_um2"]
    array = (c["oscillators"] * cell["oscillator"] + c["couplers"] * cell["coupler"] + c["readout_channels"] * 15.0
             + -(-c["readout_channels"] // 64) * 3000.0 + c["gain_dacs"] * cell["gain_dac"]) * 1e-6
    assert a["array_mm2"] == pytest.approx(array)
    # the SRAM: CACTI 7's macro of the buffers' total at 65 nm LP, its area per bit times the bits
    from hw_models.cacti import sram_macro

    assert a["sram_mm2"] == pytest.approx(sram_macro(r["sram_bytes"], chip_node(65)).area_mm2.value, rel=1e-12)
    assert "CACTI 7" in a["sources"]["sram_mm2"]
    assert r["leakage_j"] == r["breakdown"]["leakage_j"] > 0 and r["latency_per_token_s"] > 0
    # the upper bound at the config's choice, through the config section
    up = energy_report(chip.__class__(**{**chip.__dict__, "config": chip.config.replace(
        energy=type(chip.config.energy)(gpu_bound="upper", phase="decode"))}))
    assert up["energy_per_token_gpu_j"] == up["gpu_energy_bounds_j"]["upper"] and up["phase"] == "decode"


def test_area_cells_by_hand():
    # coupler: b latches of 0.52 µm² + (2^b − 1) unit gates of 1 µm², x 1.5 wiring
    ring = make_device("ring", "cmos_65nm")
    assert ring.coupler_area_um2(6, REFERENCE_NODE)[0] == pytest.approx((6 * 0.52 + 63 * 1.0) * 1.5)
    assert ring.coupler_area_um2(None, REFERENCE_NODE)[0] == pytest.approx((8 * 0.52 + 255) * 1.5)
    # ring: 5 x (1.5 µm² inverter + 20 fF / 10 fF/µm²) + 8-bit trim DAC + injection gate
    assert ring_area_um2(5, 20e-15, 8) == pytest.approx(5 * (1.5 + 2.0) + 8 * 0.52 + 255 + 1)
    with pytest.raises(ValueError, match="n_stages"):
        ring_area_um2(4)


def test_simulate_json_carries_the_energy_keys(tmp_path, capsys):
    from oscsim.cli import main
    from oscsim.nn.registry import build_model, model_config
    from oscsim.train import save_checkpoint

    torch.manual_seed(0)
    ck = save_checkpoint(tmp_path / "k", build_model(model_config("kuramoto", "tiny", k=8, n_heads=2, n_layers=1,
                                                                  seq_len=16)), {"corpus": "shakespeare"})
    assert main(["simulate", str(ck), "--tokens", "16", "--analog-scores", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    for key in ("energy_per_token_chip_j", "energy_per_token_gpu_j", "offloaded_fraction", "amdahl_max_gain",
                "area_mm2", "latency_per_token_s", "sram_bytes", "leakage_j"):
        assert isinstance(rep[key], float) and rep[key] > 0
    assert set(rep["gpu_energy_bounds_j"]) == {"lower", "upper"}
    assert {"chip_j", "gpu_j"} <= set(rep["whole_model"])
    for term in ("static_coupler_j", "injection_j", "clock_j", "sram_j", "dac_j", "score_mixers_j"):
        assert rep["energy_breakdown_j"][term] > 0 and rep["energy_sources"][term]
    assert rep["analog_scores"] and rep["analog_score_noise"]["score_sigma_logit"][0] > 0
    assert main(["simulate", str(ck), "--tokens", "16"]) == 0
    out = capsys.readouterr().out
    assert "board figure at peak" in out and "Amdahl bound" in out and "area " in out and "latency" in out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(cb=st.one_of(st.none(), st.integers(1, 10)), gb=st.one_of(st.none(), st.integers(1, 10)),
       rb=st.one_of(st.none(), st.integers(1, 14)), avg=st.floats(0.5, 64), settle=st.floats(0.5, 64),
       prec=st.sampled_from(["int8", "int16", "fp16", "fp32"]), gprec=st.sampled_from(["bf16", "fp32", "int8"]),
       phase=st.sampled_from(["prefill", "decode"]), analog=st.booleans(), batch=st.integers(1, 128))
def test_report_gains_never_exceed_amdahl_over_chip_configs(chip, cb, gb, rb, avg, settle, prec, gprec, phase,
                                                            analog, batch):
    import dataclasses

    from mapping.config import AnalogScores, DigitalScores, EnergyConfig

    c0 = chip.config
    cfg = c0.replace(settle_cycles=settle, coupling=dataclasses.replace(c0.coupling, bits=cb, gain_bits=gb),
                     readout=dataclasses.replace(c0.readout, bits=rb, averaging_cycles=avg),
                     energy=EnergyConfig(digital_precision=prec, gpu_precision=gprec, phase=phase, batch=batch),
                     scores=AnalogScores() if analog else DigitalScores())
    r = energy_report(compile(chip.model, cfg))  # compiled with it: the node, the score array and its draw
    assert r["array_gain"] <= r["amdahl_max_gain"] * (1 + 1e-12)
    assert r["energy_per_token_chip_j"] == pytest.approx(sum(r["breakdown"].values()), rel=1e-12)
    w = r["whole_model"]
    rest = w["chip_j"] - r["energy_per_token_chip_j"]
    assert (r["digital_only_chip_j"] + rest) / w["chip_j"] <= w["amdahl_max_gain"] * (1 + 1e-12)
    assert r["gpu_energy_bounds_j"]["lower"] <= r["gpu_energy_bounds_j"]["upper"]


def test_injection_is_charged_from_the_periphery_model(monkeypatch):
    """The energy model takes one phase write's time and driver power from mapping.periphery.injection; in
    mode 'ideal' (the fidelity run starts at the token phases) it is charged as an injection of the same cycles."""
    import dataclasses
    from types import SimpleNamespace as NS

    import mapping.periphery.injection as inj_mod
    from mapping.config import ChipConfig
    from mapping.energy.spec import _injection
    from mapping.periphery.injection import InjectionConfig

    seen = {}

    def injection_energy_j(config, device, n):
        seen["mode"] = config.injection.mode
        t = config.injection.cycles / device.f0_hz
        return {"oscillators_j": n * 1e-4 * t, "drivers_j": n * 3e-5 * t, "total_j": n * 1.3e-4 * t,
                "source": "fake driver model"}

    monkeypatch.setattr(inj_mod, "injection_energy_j", injection_energy_j)
    chip = NS(config=ChipConfig(injection=InjectionConfig(mode="ideal", cycles=20.0)), device=NS(f0_hz=2e9))
    t, drv, src = _injection(chip)
    assert t == pytest.approx(20 / 2e9) and drv == pytest.approx(3e-5)
    assert seen["mode"] == "injected" and "charged as injected" in src and "fake driver model" in src
    chip = NS(config=chip.config.replace(injection=dataclasses.replace(chip.config.injection, mode="injected",
                                                                        cycles=40.0)), device=NS(f0_hz=2e9))
    t, drv, src = _injection(chip)
    assert t == pytest.approx(40 / 2e9) and "configured t_inj = 40 cycles" in src

@pytest.mark.parametrize("node,flavor,analog", [(65, "LP", False), (65, "LP", True), (45, "HP", False)])
def test_digital_only_chip_leaks_over_its_own_time(chip, node, flavor, analog):
    """The array gain's comparison chip leaks too: its own die (SRAM + periphery) × leakage density × its own
    latency (the periphery doing all the work); the Amdahl bound still bounds the gain."""
    from hw_models.technology import chip_node
    from mapping.config import AnalogScores
    from mapping.energy import chip_area
    from mapping.energy import constants as ec

    cfg = chip.config.replace(node_nm=node, node_flavor=flavor, scores=AnalogScores() if analog else chip.config.scores)
    c = compile(chip.model, cfg)
    r = energy_report(c)
    tn = chip_node(node, flavor)
    area = chip_area(c)
    macs = cfg.array.macs
    ops = r["ops"]["chip_digital"] + r["ops"]["offloaded"]  # summed over layers
    latency = ops / (2 * macs * ec.at_node(ec.PERIPHERY_CLOCK_HZ.value, tn, "rate"))
    # its periphery at the logic leakage density, its SRAM macros at CACTI 7's standby leakage
    from mapping.energy.sram import sram_leakage_w

    leak = (area["periphery_mm2"] * tn.leakage_density().value + sram_leakage_w(r["sram_bytes"], tn)) * latency
    d = r["digital_only"]
    assert d["area_mm2"] == pytest.approx(area["sram_mm2"] + area["periphery_mm2"], rel=1e-12)
    assert d["latency_per_token_s"] == pytest.approx(latency, rel=1e-12)
    assert d["leakage_j"] == pytest.approx(leak, rel=1e-12) and leak > 0
    dyn = ops * ec.op_energy_j(cfg.energy.digital_precision, tn)
    sram_common = r["breakdown"]["sram_j"] - r["sram_breakdown_j"]["array_bus_j"]
    assert r["digital_only_chip_j"] == pytest.approx(dyn + sram_common + leak, rel=1e-9)
    assert r["array_gain"] == pytest.approx(r["digital_only_chip_j"] / r["energy_per_token_chip_j"])
    assert r["array_gain"] <= r["amdahl_max_gain"] * (1 + 1e-12)
