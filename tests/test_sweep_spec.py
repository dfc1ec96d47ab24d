"""Sweep specs: parsing, point construction and refusal of bad specs before any work (no model is run)."""

import math
from pathlib import Path

import pytest

from mapping.config import ChipConfig, config_to_dict
from mapping.sweep import load_spec, spec_from_dict
from mapping.sweep.plot import pareto_front, unit_of

ROOT = Path(__file__).resolve().parents[1]


def _spec(**over):
    d = {"name": "t", "checkpoint": "kuramoto-tiny", "tokens": {"windows": 1, "seq_len": 8},
         "chip": {"device": "ideal"}, "axes": {"readout.noise_rad": {"values": [0.0, 0.01]}},
         "seeds": {"noise": [0, 1]}}
    d.update(over)
    return d


def test_grid_points_configs_and_ids():
    s = spec_from_dict(_spec(axes={"readout.noise_rad": {"logspace": [1e-3, 1e-1, 3]},
                                   "coupling.bits": {"values": [4, "none"]},
                                   "settle_cycles": {"linspace": [2, 6, 3]}},
                             seeds={"noise": [0, 1], "mismatch": [3, 4]}))
    assert s.n_points == 3 * 2 * 3 * 2 * 2 == len(s.points)
    assert s.swept_fields == ("readout.noise_rad", "coupling.bits", "settle_cycles", "mismatch_seed")
    p = s.points[0]
    assert p.params == {"readout.noise_rad": 1e-3, "coupling.bits": 4, "settle_cycles": 2.0, "mismatch_seed": 3,
                        "noise_seed": 0}
    assert p.config.readout.noise_rad == 1e-3 and p.config.coupling.bits == 4 and p.config.mismatch_seed == 3
    assert s.points[1].noise_seed == 1  # noise seeds innermost
    assert s.points[2].config.mismatch_seed == 4
    assert [round(v, 12) for v in s.axes[0].values] == [1e-3, 1e-2, 1e-1]  # logspace takes the values
    assert s.points[12].config.coupling.bits is None  # "none" -> None (analog); settle x mismatch x noise = 12
    # everything else stays the base config
    d, b = config_to_dict(p.config), config_to_dict(ChipConfig(device="ideal"))
    d["readout"]["noise_rad"] = b["readout"]["noise_rad"]
    d["coupling"]["bits"] = b["coupling"]["bits"]
    d["settle_cycles"], d["mismatch_seed"] = b["settle_cycles"], b["mismatch_seed"]
    assert d == b
    ids = [q.point_id for q in s.points]
    assert len(set(ids)) == len(ids)
    # ids are hashed from the parameters: the same point in another spec has the same id
    s2 = spec_from_dict(_spec(axes={"coupling.bits": {"values": [4]}, "readout.noise_rad": {"values": [1e-3]},
                                    "settle_cycles": {"values": [2.0]}},
                              seeds={"noise": [0], "mismatch": [3]}))
    assert s2.points[0].point_id == p.point_id
    assert s2.spec_hash != s.spec_hash


def test_int_and_float_spellings_are_one_point():
    a = spec_from_dict(_spec(axes={"readout.noise_rad": {"values": [0, 1]}}))
    b = spec_from_dict(_spec(axes={"readout.noise_rad": {"values": [0.0, 1.0]}}))
    assert [p.point_id for p in a.points] == [p.point_id for p in b.points]
    with pytest.raises(ValueError, match="repeats a value"):
        spec_from_dict(_spec(axes={"readout.noise_rad": {"values": [0, 0.0]}}))


def test_random_sample_is_seeded_and_in_range():
    d = _spec(axes={}, sample={"n": 6, "seed": 3, "fields": {
        "readout.noise_rad": {"loguniform": [1e-3, 1e-1]}, "coupling.bits": {"int": [3, 5]},
        "device": {"choice": ["ideal", "ring-macromodel"]}, "coupling.spread": {"uniform": [0.0, 0.1]}}})
    a, b = spec_from_dict(d), spec_from_dict(d)
    assert a.n_points == 12
    assert [p.params for p in a.points] == [p.params for p in b.points]
    for p in a.points:
        assert 1e-3 <= p.config.readout.noise_rad <= 1e-1
        assert p.config.coupling.bits in (3, 4, 5)
        assert p.config.device in ("ideal", "ring-macromodel")
    d["sample"]["seed"] = 4
    assert [p.params for p in spec_from_dict(d).points] != [p.params for p in a.points]


def test_base_chip_from_a_toml_path(tmp_path):
    (tmp_path / "chip.toml").write_text('device = "ideal"\nsettle_cycles = 3.0\n')
    (tmp_path / "s.toml").write_text('checkpoint = "kuramoto-tiny"\nchip = "chip.toml"\n'
                                     '[axes]\n"coupling.bits" = [4, 6]\n')
    s = load_spec(tmp_path / "s.toml")
    assert s.base.settle_cycles == 3.0 and s.points[1].config.coupling.bits == 6


@pytest.mark.parametrize("over, match", [
    ({"axes": {"readout.nosie_rad": {"values": [0.1]}}}, "unknown chip config field 'readout.nosie_rad'"),
    ({"axes": {"temprature_k": {"values": [300.0]}}}, "unknown chip config field 'temprature_k'"),
    ({"axes": {"readout": {"values": [1]}}}, "'readout' is a section"),
    ({"axes": {"coupling.bits": {"values": []}}}, 'axes."coupling.bits" is empty'),
    ({"axes": {"settle_cycles": {"linspace": [1, 2, 0]}}}, 'axes."settle_cycles" is empty'),
    ({"axes": {"readout.noise_rad": {"values": [0.01, -0.01]}}}, "readout.noise_rad must be finite and >= 0"),
    ({"axes": {"coupling.bits": {"values": [6, 30]}}}, r"coupling.bits must be an integer in \[1, 24\]"),
    ({"axes": {"device": {"values": ["ideal", "memristor"]}}}, "device must be one of"),
    ({"axes": {"readout.noise_rad": {"logspace": [0, 1e-1, 3]}}}, "logspace start and stop are the values"),
    ({"axes": {"readout.noise_rad": {"steps": [1, 2]}}}, "exactly one of values, linspace, logspace"),
    ({"axes": {}, "sample": {"n": 2, "fields": {"readout.noise_rad": {"uniform": [-0.1, 0.1]}}}},
     "readout.noise_rad must be finite and >= 0"),
    ({"axes": {}, "sample": {"n": 2, "fields": {"coupling.bitz": {"choice": [4]}}}}, "unknown chip config field 'coupling.bitz'"),
    ({"seeds": {"noise": []}}, "seeds.noise is empty"),
    ({"seeds": {"noise": [0], "mismatch": [0, 1]}, "axes": {"mismatch_seed": {"values": [1, 2]}}}, "swept twice"),
    ({"metrics": ["bpc", "latency"]}, "metrics must be a non-empty list"),
    ({"tokens": {"windows": 0}}, r"tokens.windows must be an integer in \[1"),
    ({"tokens": {"split": "train"}}, "tokens.split must be one of valid, test"),
    ({"chip": {"readout": {"noise_rad": -1.0}}}, r"\[chip\]: readout.noise_rad must be finite"),
    ({"axess": {}}, "unknown key.* axess"),
])
def test_bad_specs_are_refused_naming_the_field(over, match):
    with pytest.raises(ValueError, match=match):
        spec_from_dict(_spec(**over))


def test_refused_before_any_work(tmp_path, monkeypatch):
    """The whole spec is validated up front: a bad value in the last point stops the sweep before the first."""
    import mapping.sweep.run as run_mod
    from oscsim.cli import main

    calls = []
    monkeypatch.setattr(run_mod, "compute_point", lambda task: calls.append(task))
    spec = tmp_path / "bad.toml"
    spec.write_text('checkpoint = "kuramoto-tiny"\n[chip]\ndevice = "ideal"\n'
                    '[axes]\n"coupling.bits" = [4, 6, 8]\n"readout.noise_rad" = { values = [0.0, 0.1, -0.5] }\n')
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--workers", "0"]) == 2
    assert calls == [] and not (tmp_path / "out").exists()


def test_pareto_front_and_units():
    cost = [1.0, 2.0, 3.0, 1.5, 2.0, math.nan]
    loss = [3.0, 1.0, 0.5, 3.5, 1.0, 0.0]
    # (1.5, 3.5) is dominated by (1, 3); the two (2, 1) points do not dominate each other; NaN is never on it
    assert pareto_front(cost, loss).tolist() == [True, True, True, False, True, False]
    assert unit_of("readout.noise_rad") == "rad" and unit_of("temperature_k") == "K"
    assert unit_of("coupling.bits") == "bits" and unit_of("settle_cycles") == "cycles"
    assert unit_of("energy_chip_j_per_token") == "J/token" and unit_of("bpc_difference") == "bits/char"


def test_examples_are_valid():
    small = load_spec(ROOT / "examples" / "sweep-small.toml")
    assert 8 <= small.n_points <= 16
    assert load_spec(ROOT / "examples" / "sweep-noise.toml").n_points == 64


def _leaves(d, prefix=""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _leaves(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


def test_every_config_field_is_addressable_by_its_dotted_name():
    """Generic over ChipConfig: a field added later (a new section included) can be swept unchanged."""
    base = ChipConfig(device="ideal")
    leaves = list(_leaves(config_to_dict(base)))
    assert len(leaves) > 20
    for name, value in leaves:
        s = spec_from_dict(_spec(axes={name: {"values": ["none" if value is None else value]}}))
        assert s.points[0].config == base, name
        assert s.points[0].params[name] == value
