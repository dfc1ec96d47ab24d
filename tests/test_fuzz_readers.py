"""Property and fuzz tests of the file readers (issue 10 item 5): round trips of configs and chips, and random
corruption of chip JSON, chip TOML, checkpoint JSON and safetensors files. A corrupt file gives a ValueError or
FileNotFoundError naming the file and the field, never a traceback from inside a library, never NaN output."""

import dataclasses
import json
import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from hw_models.devices import BUILTIN_DEVICES
from mapping import ChipConfig, Quantiser, compile, load_chip
from mapping.config import (NORM_REFERENCES, PHASE_CORRECTIONS, RESPONSES, SSA_MODES, CouplingConfig,
                            ReadoutConfig, SSAConfig, config_from_dict, config_to_dict, load_config)

from _chips import saved_chip, seeded_kuramoto

FUZZ = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                        HealthCheck.too_slow])

# ------------------------------------------------------------------------------------------- strategies
bits = st.one_of(st.none(), st.integers(1, 24))
pos = st.floats(1e-3, 1e3, allow_nan=False)

configs = st.builds(
    ChipConfig,
    device=st.sampled_from(BUILTIN_DEVICES),
    f0_hz=st.one_of(st.none(), st.floats(1e6, 1e11)),
    temperature_k=st.floats(1.0, 1000.0),
    noise=st.booleans(), mismatch=st.booleans(), mismatch_seed=st.integers(0, 2**31),
    settle_cycles=pos, steps_per_cycle=st.integers(1, 10_000), trim_bits=bits,
    norm_reference=st.sampled_from(NORM_REFERENCES),
    coupling=st.builds(CouplingConfig, fraction=st.floats(1e-4, 0.5), bits=bits, range=pos, gain_bits=bits,
                       gain_range=pos, spread=st.one_of(st.none(), st.floats(0.0, 0.99)),
                       row_scaled=st.booleans(), phase_correction=st.sampled_from(PHASE_CORRECTIONS)),
    readout=st.builds(ReadoutConfig, response=st.sampled_from(RESPONSES), noise_rad=st.floats(0.0, 1.0),
                      bits=bits, averaging_cycles=pos),
    ssa=st.builds(SSAConfig, mode=st.sampled_from(SSA_MODES), settle_cycles=st.floats(0.0, 1e3),
                  averaging_cycles=pos, steps_per_cycle=st.integers(1, 10_000)),
)

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63), st.floats(allow_nan=True, allow_infinity=True),
              st.text(max_size=8)),
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.text(max_size=5), c, max_size=3)),
    max_leaves=6,
)


def _toml_value(v):
    if v is None:
        return '"none"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    return repr(v)


def _to_toml(cfg: ChipConfig) -> str:
    d = config_to_dict(cfg)
    lines = [f"{k} = {_toml_value(v)}" for k, v in d.items() if not isinstance(v, dict)]
    for sec in ("coupling", "readout", "ssa"):
        lines.append(f"[{sec}]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in d[sec].items()]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------- round trips
@FUZZ
@given(configs)
def test_config_dict_round_trip(cfg):
    assert config_from_dict(json.loads(json.dumps(config_to_dict(cfg)))) == cfg


@FUZZ
@given(configs)
def test_config_toml_round_trip(tmp_path_factory, cfg):
    p = tmp_path_factory.mktemp("toml") / "chip.toml"
    p.write_text(_to_toml(cfg))
    assert load_config(p) == cfg


@settings(max_examples=100, deadline=None)
@given(bits=bits, rng=st.floats(1e-3, 1e3), signed=st.booleans(),
       x=st.lists(st.floats(-1e4, 1e4, allow_nan=False), min_size=1, max_size=20))
def test_quantiser_properties(bits, rng, signed, x):
    q = Quantiser(bits=bits, range=rng, signed=signed)
    assert Quantiser.from_dict(json.loads(json.dumps(q.to_dict()))) == q
    y = q(np.asarray(x))
    lo = -rng if signed else 0.0
    assert y.dtype == np.float64 and np.all(np.isfinite(y))
    assert np.all(y >= lo - 1e-12 * rng) and np.all(y <= rng * (1 + 1e-12))
    clipped = np.clip(x, lo, rng)
    if bits is None:
        np.testing.assert_array_equal(y, clipped)
        assert q.step == 0.0 and q.levels is None
        return
    L = (max(2 ** (bits - 1) - 1, 1) if signed else 2 ** bits - 1)
    assert q.levels == L and math.isclose(q.step, rng / L)
    if signed and bits == 1:  # sign only
        np.testing.assert_array_equal(y, np.where(clipped >= 0, rng, -rng))
        return
    # on the grid, nearest level, idempotent
    codes = y / q.step
    np.testing.assert_allclose(codes, np.round(codes), atol=1e-6)
    assert np.all(np.abs(y - clipped) <= q.step / 2 * (1 + 1e-9))
    np.testing.assert_allclose(q(y), y, rtol=1e-12, atol=1e-12 * rng)


@pytest.mark.parametrize("kw,match", [
    (dict(bits=0, range=1.0), r"Quantiser.bits must be None or an integer in \[1, 24\], got 0"),
    (dict(bits=25, range=1.0), "got 25"), (dict(bits=True, range=1.0), "got True"),
    (dict(bits=2.0, range=1.0), "got 2.0"), (dict(bits=4, range=0.0), r"range must be finite and > 0, got 0.0"),
    (dict(bits=4, range=math.inf), "got inf"), (dict(bits=4, range=-1.0), "got -1.0"),
])
def test_quantiser_refuses(kw, match):
    with pytest.raises(ValueError, match=match):
        Quantiser(**kw)


def test_quantiser_edges():
    assert Quantiser(bits=24, range=1.0).levels == 2 ** 24 - 1 and Quantiser(bits=1, range=1.0).levels == 1
    one = Quantiser(bits=1, range=2.0, signed=True)
    np.testing.assert_array_equal(one(np.array([-0.5, 0.0, 0.1, 5.0])), [-2.0, 2.0, 2.0, 2.0])
    assert Quantiser(bits=2, range=3.0, signed=True)(np.array([0.4, -1.6, 1.6])).tolist() == [0.0, -3.0, 3.0]
    unsigned = Quantiser(bits=3, range=7.0)
    assert unsigned(np.array([-1, 2, 9])).tolist() == [0.0, 2.0, 7.0]  # integer input, float output
    for bad in ({"bits": 2, "range": 1.0}, {"bits": 2, "range": 1.0, "signed": False, "x": 1}, [1, 2]):
        with pytest.raises(ValueError, match="exactly the keys bits, range, signed"):
            Quantiser.from_dict(bad)
    assert Quantiser.from_dict({"bits": 3, "range": 2, "signed": True}) == Quantiser(bits=3, range=2.0, signed=True)


# ------------------------------------------------------------------------------------------------ chip JSON
@pytest.fixture(scope="module")
def small_model():
    return seeded_kuramoto(k=4, n_heads=2, n_layers=1, seq_len=6)


@pytest.fixture(scope="module")
def chip_json(small_model, tmp_path_factory):
    return json.loads(saved_chip(small_model, tmp_path_factory)[1].read_text())


def _paths(tree, prefix=()):
    """Every (path, value) of a JSON tree, containers included."""
    yield prefix, tree
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(tree, list):
        for i, v in enumerate(tree[:3]):  # a few items of long arrays are enough
            yield from _paths(v, prefix + (i,))


def _set(tree, path, value, delete=False):
    tree = json.loads(json.dumps(tree))
    node = tree
    for p in path[:-1]:
        node = node[p]
    if delete and isinstance(node, dict):
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return tree


def _names_a_field(msg: str, path) -> bool:
    keys = [p for p in path if isinstance(p, str)]
    return any(k in msg for k in keys) or (not keys)


@FUZZ
@given(data=st.data())
def test_corrupt_chip_json_is_refused_naming_file_and_field(small_model, chip_json, tmp_path_factory, data):
    paths = [p for p, _ in _paths(chip_json) if p]
    path = data.draw(st.sampled_from(paths), label="path")
    delete = data.draw(st.booleans(), label="delete")
    value = data.draw(json_values, label="value")
    bad = _set(chip_json, path, value, delete=delete)
    f = tmp_path_factory.mktemp("bad") / "chip.json"
    f.write_text(json.dumps(bad, allow_nan=True))
    try:
        chip = load_chip(f, model=small_model)
    except (ValueError, FileNotFoundError) as exc:
        msg = str(exc)
        assert str(f) in msg, msg
        assert _names_a_field(msg, path), (path, msg)
        assert "\n" not in msg
        return
    # accepted: then it is the same chip (an edit that changes nothing, e.g. 1 -> 1.0)
    assert json.loads(json.dumps(chip.to_json())) == json.loads(json.dumps(chip_json)) or \
        chip.to_json() == compile(small_model, chip.config).to_json()


@pytest.mark.parametrize("path,value,field", [
    (("device", "oscillator", "params", "c_load_f"), 2.1e-14, "device.oscillator.params.c_load_f"),
    (("timebase", "kappa_tau"), 5.0, "timebase.kappa_tau"),
    (("resources", "oscillators"), 1, "resources.oscillators"),
    (("layers", 0, "freq_trim_code", "data", 0, 0, 0, 0), 7, "layers[0].freq_trim_code"),
    (("coupling_rule", "harmonics", 0, 1), 0.3, "coupling_rule.harmonics"),
])
def test_edited_chip_numbers_are_refused(small_model, chip_json, tmp_path, path, value, field):
    f = tmp_path / "edited.json"
    f.write_text(json.dumps(_set(chip_json, path, value)))
    with pytest.raises(ValueError, match=rf"{f}.*{field.replace('[', '.').replace(']', '.')}"):
        load_chip(f, model=small_model)


def test_chip_json_round_trip_for_several_configs(small_model, tmp_path):
    from mapping.backends.stno import PhaseReductionWarning

    for cfg in (ChipConfig(), ChipConfig().idealised(), ChipConfig(device="spin-torque", trim_bits=None),
                ChipConfig(coupling=CouplingConfig(bits=3, spread=0.1), mismatch_seed=5)):
        if cfg.device == "spin-torque":  # the default window is far too short for the STNO phase model: warned
            with pytest.warns(PhaseReductionWarning):
                chip = compile(small_model, cfg)
                back = load_chip(chip.save(tmp_path / "c.json"), model=small_model)
        else:
            chip = compile(small_model, cfg)
            back = load_chip(chip.save(tmp_path / "c.json"), model=small_model)
        assert back.to_json() == json.loads(json.dumps(chip.to_json()))


# --------------------------------------------------------------------------------------------- chip TOML
@FUZZ
@given(cfg=configs, data=st.data())
def test_corrupt_toml_is_refused_naming_file_and_field(tmp_path_factory, cfg, data):
    lines = _to_toml(cfg).splitlines()
    i = data.draw(st.integers(0, len(lines) - 1), label="line")
    how = data.draw(st.sampled_from(["value", "truncate", "garbage", "duplicate"]), label="how")
    line = lines[i]
    if how == "value" and "=" in line:
        key = line.split("=")[0].strip()
        v = data.draw(st.sampled_from(['"x"', "-1", "0", "nan", "inf", "1e400", "[]", "{}", "1979-05-27",
                                       "true", "3.5", '"none"', "99999999999999999999"]), label="v")
        lines[i] = f"{key} = {v}"
    elif how == "truncate":
        lines[i] = line[: data.draw(st.integers(0, max(len(line) - 1, 0)), label="cut")]
    elif how == "garbage":
        lines[i] = data.draw(st.text(max_size=12), label="text")
    else:
        lines.insert(i, line)
    f = tmp_path_factory.mktemp("toml") / "chip.toml"
    f.write_text("\n".join(lines) + "\n")
    try:
        got = load_config(f)
    except (ValueError, FileNotFoundError) as exc:
        msg = str(exc)
        assert str(f) in msg, msg
        return
    # accepted: a valid config whose every number is finite
    for v in list(config_to_dict(got).values()) + [x for d in config_to_dict(got).values() if isinstance(d, dict)
                                                   for x in d.values()]:
        if isinstance(v, float):
            assert math.isfinite(v)


# ------------------------------------------------------------------------------------------ checkpoints
@pytest.fixture(scope="module")
def ckpt_dir(tmp_path_factory):
    from oscsim.nn import build_model, model_config
    from oscsim.train import save_checkpoint

    torch.manual_seed(0)
    model = build_model(model_config("kuramoto", "tiny", k=4, n_heads=2, n_layers=1, ffn_hidden=4, seq_len=8))
    out = tmp_path_factory.mktemp("ck") / "k"
    save_checkpoint(out, model, {"corpus": "shakespeare", "step": 0})
    return out


def _copy_ckpt(src, dst):
    dst.mkdir(parents=True)
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


def _check_loaded(model):
    for name, t in model.state_dict().items():
        assert torch.isfinite(t).all(), name
    with torch.no_grad():
        out = model(torch.zeros(1, 4, dtype=torch.long))
    assert torch.isfinite(out).all()


@FUZZ
@given(data=st.data())
def test_corrupt_checkpoint_json_is_refused_naming_file_and_field(ckpt_dir, tmp_path_factory, data):
    from oscsim.train import load_checkpoint

    meta = json.loads((ckpt_dir / "config.json").read_text())
    paths = [p for p, _ in _paths(meta) if p]
    path = data.draw(st.sampled_from(paths), label="path")
    bad = _set(meta, path, data.draw(json_values, label="value"), delete=data.draw(st.booleans(), label="del"))
    d = _copy_ckpt(ckpt_dir, tmp_path_factory.mktemp("ckbad") / "k")
    (d / "config.json").write_text(json.dumps(bad, allow_nan=True))
    try:
        model, _ = load_checkpoint(d)
    except (ValueError, FileNotFoundError) as exc:
        msg = str(exc)
        assert str(d) in msg, msg
        assert _names_a_field(msg, path) or "config.json" in msg, (path, msg)
        return
    _check_loaded(model)


@FUZZ
@given(data=st.data())
def test_corrupt_safetensors_is_refused_naming_the_file(ckpt_dir, tmp_path_factory, data):
    from oscsim.train import load_checkpoint

    raw = bytearray((ckpt_dir / "model.safetensors").read_bytes())
    how = data.draw(st.sampled_from(["flip", "truncate", "header"]), label="how")
    header_len = int.from_bytes(raw[:8], "little")
    if how == "flip":
        for _ in range(data.draw(st.integers(1, 8), label="n")):
            i = data.draw(st.integers(0, len(raw) - 1), label="at")
            raw[i] = data.draw(st.integers(0, 255), label="byte")
    elif how == "truncate":
        raw = raw[: data.draw(st.integers(0, len(raw) - 1), label="cut")]
    else:  # inside the JSON header: the most fragile part
        i = data.draw(st.integers(8, 8 + header_len - 1), label="at")
        raw[i] = data.draw(st.integers(0, 255), label="byte")
    d = _copy_ckpt(ckpt_dir, tmp_path_factory.mktemp("stbad") / "k")
    (d / "model.safetensors").write_bytes(bytes(raw))
    try:
        model, _ = load_checkpoint(d)
    except (ValueError, FileNotFoundError) as exc:
        assert "model.safetensors" in str(exc) or str(d) in str(exc), str(exc)
        return
    _check_loaded(model)


@pytest.mark.parametrize("shape", [None, "x", [2, None], [-1], [True]])
def test_chip_json_static_digital_shape_is_validated_by_name(tmp_path, shape):
    """The counterexample hypothesis found (static_digital[i].shape = null) and its relatives."""
    import json

    from mapping import ChipConfig, compile, load_chip
    from oscsim.nn.kuramoto import KuramotoConfig, KuramotoLM

    torch.manual_seed(0)
    model = KuramotoLM(KuramotoConfig(k=8, n_heads=2, n_layers=1, seq_len=8))
    path = compile(model, ChipConfig()).save(tmp_path / "chip.json")
    d = json.loads(path.read_text())
    d["static_digital"][0]["shape"] = shape
    path.write_text(json.dumps(d))
    with pytest.raises(ValueError, match=r"static_digital\[0\]\.shape"):
        load_chip(path, model=model)
