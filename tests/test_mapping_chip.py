"""mapping: chip JSON (versioned, validated), wrong models refused, energy report, CLI."""

import json
import math

import numpy as np
import pytest
import torch

from mapping import ChipConfig, compile, energy_report, load_chip, measure_gpu_energy
from oscsim.cli import main

from _chips import saved_chip, seeded_kuramoto


@pytest.fixture(scope="module")
def model():
    return seeded_kuramoto(k=8, n_heads=2, n_layers=2, seq_len=16)


@pytest.fixture(scope="module")
def chip_file(model, tmp_path_factory):
    return saved_chip(model, tmp_path_factory)


def test_roundtrip(model, chip_file):
    chip, path = chip_file
    back = load_chip(path, model=model)
    assert back.config == chip.config and back.resources == chip.resources
    for a, b in zip(chip.layers, back.layers):
        assert np.array_equal(a.freq_trim_code, b.freq_trim_code)
        assert np.allclose(a.freq_residual_rel, b.freq_residual_rel, rtol=0, atol=1e-12)
        assert np.array_equal(a.coupler_gain(), b.coupler_gain())
    r = chip.resources  # the default array: 16 tiles of 16 oscillators serve the 2 x 2 x 8 networks
    assert back.schedule.to_json() == chip.schedule.to_json() and chip.schedule.reuse == 2
    assert r["oscillators"] == 16 * 16
    assert r["coupler_bits"] == r["couplers"] * 6
    assert r["couplers"] == 16 * 2 * 16 * 15 // 2  # two taps on the ring (phase correction 'auto')
    assert sum(lm.resources["oscillators"] for lm in chip.layers) == 2 * 2 * 8 * 16


def _edit(path, tmp_path, fn):
    d = json.loads(path.read_text())
    fn(d)
    p = tmp_path / "edited.json"
    p.write_text(json.dumps(d))
    return p


@pytest.mark.parametrize("edit, match", [
    (lambda d: d.update(format="oscsim-chip/99"), "unknown chip format"),
    (lambda d: d["layers"][0]["freq_residual_rel"].update(shape=[1, 2, 3]), "declared shape"),
    (lambda d: d["layers"][0]["freq_residual_rel"]["data"].pop(), "data has shape|rectangular"),
    (lambda d: d["layers"][0].update(n_heads=4), "oscillator_shape"),
    (lambda d: d["layers"][1].update(index=5), "index"),
    (lambda d: d["layers"][0]["coupler_spread"].update(seed=[9, 9, 9]), "sha256"),
    (lambda d: d["config"]["coupling"].update(bits=99), "coupling.bits"),
    (lambda d: d.update(extra=1), "unknown keys"),
    (lambda d: d["device"]["oscillator"]["params"].update(c_load_f=1.0), "c_load_f .* outside the physical range"),
    (lambda d: d["device"]["oscillator"]["params"].update(colour=1), "unknown field"),
    (lambda d: d["device"].update(level="spin-torque"), "needs a stno oscillator"),
    (lambda d: d["coupling_rule"]["harmonics"][1].__setitem__(0, 0.5), "coupling_rule.harmonics differ"),
    (lambda d: d["layers"][0]["diffusion_rel"]["data"][0][0][0].__setitem__(0, -1.0), "diffusion_rel"),
])
def test_inconsistent_chip_json_is_refused(chip_file, model, tmp_path, edit, match):
    _, path = chip_file
    with pytest.raises(ValueError, match=match):
        load_chip(_edit(path, tmp_path, edit), model=model)


def test_nan_in_chip_json_is_refused(chip_file, model, tmp_path):
    _, path = chip_file
    text = path.read_text()
    d = json.loads(text)
    d["layers"][0]["freq_residual_rel"]["data"][0][0][0][0] = 1.23456789  # a unique number, replaced by NaN
    bad = json.dumps(d).replace("1.23456789", "NaN", 1)
    p = tmp_path / "nan.json"
    p.write_text(bad)
    with pytest.raises(ValueError, match=r"layers\[0\]\.freq_residual_rel\.data\[0\]\[0\]\[0\]\[0\] holds the non-finite number nan"):
        load_chip(p, model=model)


def test_chip_refuses_a_different_model(chip_file):
    from oscsim.nn.kuramoto import KuramotoConfig, KuramotoLM

    _, path = chip_file
    other = KuramotoLM(KuramotoConfig(k=8, n_heads=2, n_layers=2, seq_len=16))
    with pytest.raises(ValueError, match="fingerprint"):
        load_chip(path, model=other)


def test_wrong_model_kind_is_refused():
    from oscsim.nn.transformer import TransformerLM
    from oscsim.nn.registry import model_config

    m = TransformerLM(model_config("transformer", "tiny", n_layers=1))
    with pytest.raises(ValueError, match="cannot compile a TransformerLM"):
        compile(m, ChipConfig())


def test_energy_report_has_breakdown_and_sources(model):
    chip = compile(model, ChipConfig())
    e = energy_report(chip)
    assert math.isclose(e["energy_per_token_chip_j"], sum(e["breakdown"].values()))
    assert set(e["breakdown"]) == set(e["sources"])
    assert all(v > 0 for v in e["breakdown"].values()) and e["energy_per_token_gpu_j"] > 0
    assert "source" not in e["gpu"] and e["gpu"]["sources"]
    if not torch.cuda.is_available():
        assert measure_gpu_energy(model, torch.zeros(1, 4, dtype=torch.long)) is None


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    from oscsim.nn.registry import build_model, model_config
    from oscsim.train import save_checkpoint

    root = tmp_path_factory.mktemp("ck")
    torch.manual_seed(0)
    k = save_checkpoint(root / "k", build_model(model_config("kuramoto", "tiny", k=8, n_heads=2, n_layers=1,
                                                             seq_len=32)), {"corpus": "shakespeare"})
    t = save_checkpoint(root / "t", build_model(model_config("transformer", "tiny", n_layers=1, seq_len=32)),
                        {"corpus": "shakespeare"})
    return k, t


def test_cli_compile_simulate_compare(checkpoints, tmp_path, capsys):
    k, t = checkpoints
    out = tmp_path / "chip.json"
    assert main(["compile", str(k), "--config", "examples/chip.toml", "--out", str(out)]) == 0
    assert load_chip(out)  # resolves its checkpoint by path
    assert main(["simulate", str(k), "--tokens", "64", "--json"]) == 0
    rep = _json_of(capsys)
    for key in ("bpc_closed_form", "bpc_chip", "energy_per_token_chip_j", "energy_per_token_gpu_j",
                "energy_breakdown_j", "tokens_per_s"):
        assert key in rep
    assert main(["simulate", str(k), "--tokens", "64", "--ideal", "--kappa-tau", "0.01", "--json"]) == 0
    rep = _json_of(capsys)
    assert abs(rep["bpc_chip"] - rep["bpc_closed_form"]) <= 0.01
    assert main(["simulate", str(out), "--tokens", "32"]) == 0
    assert "BPC closed form" in capsys.readouterr().out
    assert main(["compare", str(k), "--layer", "0", "--head", "1", "--plot", str(tmp_path / "plots"), "--seq-len",
                 "16"]) == 0
    assert len(list((tmp_path / "plots").glob("*.png"))) == 2
    assert main(["compile", str(t), "--out", str(tmp_path / "x.json")]) == 2
    assert "a transformer has no oscillator layer" in capsys.readouterr().err  # refused from its config.json




def _json_of(capsys):
    text = capsys.readouterr().out
    return json.loads(text[text.index("{"):])


def test_chip_device_from_hw_models_objects(model, chip_file):
    from mapping.compiler.device import chip_device

    chip, _ = chip_file
    dev = chip.device
    assert dev.oscillator.kind == "ring" and dev.f0_hz == dev.oscillator.frequency()
    assert chip.timebase["f0_hz"] == dev.f0_hz
    # per-instance draw is kept: D and power vary with the instance's frequency error
    lm = chip.layers[0]
    assert np.std(lm.diffusion_rel) > 0 and np.std(lm.power_w) > 0
    np.testing.assert_allclose(lm.diffusion_rel[lm.freq_trim_code == 0].mean(), 1.0, atol=0.05)
    # f0_hz rescales the device physically: D ∝ f0², H per coupler ∝ f0, power unchanged (ring load C)
    half = chip_device("ring-macromodel", f0_hz=0.5 * dev.f0_hz)
    assert math.isclose(half.diffusion_at(300.0), 0.25 * dev.diffusion_at(300.0), rel_tol=1e-3)
    assert math.isclose(half.power_w, dev.power_w, rel_tol=1e-3)
    a1 = [d.coupling_function(True).harmonics[0, 0] for d in (dev, half)]
    assert math.isclose(a1[1], 0.5 * a1[0], rel_tol=1e-3)
    with pytest.raises(ValueError, match="f0_hz"):
        chip_device("ring-macromodel", f0_hz=1e20)


def test_two_tap_phase_correction(model):
    import dataclasses

    from mapping.compiler.coupling_rule import coupling_rule
    from mapping.compiler.device import chip_device

    base = ChipConfig()
    two = base.replace(coupling=dataclasses.replace(base.coupling, phase_correction="two-tap"))
    ring = chip_device("ring-macromodel")
    rule = coupling_rule(two, ring, "kuramoto")
    h = np.asarray(rule["harmonics"])
    assert h[0, 0] == 1.0 and h[0, 1] == 0.0 and rule["taps"] == 2
    assert rule["coupler"]["kind"] == "transconductance"  # causal matrix: the unilateral coupler
    # the synthesised first harmonic, rebuilt from the circuit H of each tap, has no cos term
    c0 = complex(*ring.coupling_function(True).harmonics[0])
    ck = complex(*ring.coupling_function(True, source_node=rule["tap_node"]).harmonics[0])
    w1, w2 = rule["weights"]
    assert abs(c0.imag) > 0.05 * abs(c0)  # there was a cos term to cancel
    assert abs((w1 * c0 + w2 * ck).imag) < 1e-9 * abs(c0)
    assert coupling_rule(two, ring, "ssa")["coupler"]["kind"] == "resistive"  # symmetric pairs
    none = base.replace(coupling=dataclasses.replace(base.coupling, phase_correction="none"))
    c_none, c_two = compile(model, none), compile(model, two)
    assert compile(model, base).coupling_rule["phase_correction"] == "two-tap"  # auto on a ring
    assert compile(model, base.replace(device="ideal")).coupling_rule["phase_correction"] == "none"
    assert c_two.resources["couplers"] == 2 * c_none.resources["couplers"]
    with pytest.raises(ValueError, match="ring device"):
        compile(model, two.replace(device="spin-torque"))


def test_summary_says_whether_the_operating_point_is_inside_the_validity_map(model):
    import dataclasses
    import warnings

    from hw_models.validity import MacromodelValidityWarning

    base = ChipConfig(mismatch=False)
    weak = base.replace(coupling=dataclasses.replace(base.coupling, fraction=0.0005))
    with warnings.catch_warnings():
        warnings.simplefilter("error", MacromodelValidityWarning)
        s = compile(model, weak).summary()
    assert "macromodel valid" in s
    strong = base.replace(coupling=dataclasses.replace(base.coupling, fraction=0.1))
    with pytest.warns(MacromodelValidityWarning, match="outside its validity map"):
        s = compile(model, strong).summary()
    assert "outside its validity map" in s and "kappa/f0 = 0.4" in s
    assert compile(model, base.replace(device="ideal")).macromodel_validity() is None
    circ = compile(model, strong.replace(device="ring-circuit")).macromodel_validity()
    assert circ["inside"] is None and "does not apply" in circ["message"]


@pytest.mark.parametrize("array", ["multiplexed", "spatial"])
def test_coupler_digest_is_made_when_saved_and_matches_the_seeded_draw(model, array, tmp_path):
    """A compiled chip hashes its coupler draw only when it is saved (``coupler_sha256`` None until then); the
    digest is the SHA-256 of the draw regenerated from the seed alone (what loading checks), and the layers of a
    multiplexed chip gather one shared per-tile draw."""
    import dataclasses
    import hashlib

    from mapping.config import config_from_dict, config_to_dict

    d = config_to_dict(ChipConfig())
    if array == "spatial":
        d["array"] = {"schedule": "spatial"}
    chip = compile(model, config_from_dict(d))
    assert chip.layers[0].coupler_spread_rel > 0
    assert all(lm.coupler_sha256 is None for lm in chip.layers)
    path = chip.save(tmp_path / "chip.json")
    saved = json.loads(path.read_text())
    for lm, js in zip(chip.layers, saved["layers"]):
        fresh = dataclasses.replace(lm, _coupler_cache=None, _coupler_physical=None)  # from the seed alone
        digest = hashlib.sha256(np.ascontiguousarray(fresh.coupler_gain(), dtype="<f8").tobytes()).hexdigest()
        assert js["coupler_spread"]["sha256"] == lm.coupler_sha256 == digest
        assert np.array_equal(lm.coupler_gain(), fresh.coupler_gain())
    phys = {id(lm._coupler_physical) for lm in chip.layers}
    assert (len(phys) == 1 and chip.layers[0]._coupler_physical is not None) if array == "multiplexed" else \
        phys == {id(None)}
    load_chip(path, model=model)  # the loader's own check of the digest


def test_array_comparison_of_chip_files_finds_what_the_walk_finds(monkeypatch):
    """The loader compares lists of numbers as arrays (a 1M model's chip file holds a million): on random nested
    arrays with one edit each (beyond or within the 1e-9 tolerance, a shape change, text among the numbers,
    device-sized numbers near 1e-15) it names the same field as the element-by-element walk (the same function
    with no list taken as an array), or none."""
    import mapping.chip_io as chip_io
    from mapping.chip_io import _first_difference, _non_finite

    def _walk_difference(a, b):
        with monkeypatch.context() as m:
            m.setattr(chip_io, "_numbers", lambda x: None)
            return _first_difference(a, b)

    rng = np.random.default_rng(3)
    cases = 0
    for trial in range(60):
        shape = tuple(rng.integers(1, 5, size=rng.integers(1, 4)))
        scale = 1e-15 if trial % 3 == 0 else 1.0
        base = (rng.standard_normal(shape) * scale).tolist() if trial % 4 else rng.integers(-9, 9, shape).tolist()
        a = {"x": {"data": base}, "n": 3}
        b = json.loads(json.dumps(a))
        flat = np.asarray(b["x"]["data"], dtype=float).reshape(-1)
        k = int(rng.integers(flat.size))
        kind = trial % 5
        if kind == 0:
            flat[k] = flat[k] * (1 + 1e-7) + 1e-20  # beyond the tolerance
        elif kind == 1:
            flat[k] = flat[k] * (1 + 1e-11)  # within it
        if kind in (0, 1):
            b["x"]["data"] = flat.reshape(shape).tolist()
        elif kind == 2:
            b["x"]["data"] = b["x"]["data"][:-1] if len(shape) == 1 or shape[0] > 1 else [[]]
        elif kind == 3:
            b["x"]["data"] = ["text"] + b["x"]["data"][1:]
        assert _first_difference(a, b) == _walk_difference(a, b), (trial, a, b)
        assert _first_difference(a, a) is None
        cases += _walk_difference(a, b) is not None
    assert cases >= 30  # most cases do differ, so agreement is not agreement on None alone
    bad = np.zeros((2, 3, 4))
    bad[1, 2, 0] = np.inf
    assert _non_finite({"a": {"data": bad.tolist()}}) == ("a.data[1][2][0]", np.inf)
    assert _non_finite({"a": {"data": [[1.0, 2.0], [3.0, float("nan")]]}})[0] == "a.data[1][1]"
    where, value = _non_finite({"a": [1, "x", float("nan")]})  # text among numbers: the walk
    assert where == "a[2]" and math.isnan(value)


def test_a_loaded_multiplexed_chip_checks_one_coupler_draw_and_keeps_no_per_unit_arrays(chip_file, model):
    """Every layer of the default chip has the same coupler seed and tiles: loading draws and hashes them once,
    shares the per-tile draw, and keeps no per-unit copy (the run reads the tiles); the arrays are the ones a
    fresh draw from the seed gives."""
    import dataclasses

    chip, path = chip_file
    back = load_chip(path, model=model)
    assert len({id(lm._coupler_physical) for lm in back.layers}) == 1
    assert all(lm._coupler_cache is None for lm in back.layers)
    for lm in back.layers:
        fresh = dataclasses.replace(lm, _coupler_cache=None, _coupler_physical=None)
        assert np.array_equal(lm.coupler_gain(), fresh.coupler_gain())
