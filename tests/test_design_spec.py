"""Design specs, constraints, the front, the verdict and the adapter (mapping.design): fast, no study run."""

import math
import re

import numpy as np
import pandas as pd
import pytest

from mapping.design import (Constraint, anchor_j_per_token, design_spec_from_dict, pareto_mask, static_metrics,
                            trial_metrics, verdict)
from mapping.design.evaluate import METRICS_KEY
from mapping.sweep.spec import config_with

BASE = {"name": "t", "checkpoint": "kuramoto-tiny", "trials": 4, "population": 2,
        "tokens": {"windows": 1, "seq_len": 16}, "chip": {"device": "ideal"},
        "space": {"coupling.bits": {"int": [3, 8]}, "readout.noise_rad": {"loguniform": [1e-3, 0.1]},
                  "device": {"choice": ["ideal", "ring-macromodel"]}, "trim_bits": {"choice": [6, "none"]}}}


def _spec(**over):
    d = {**BASE, **over}
    return design_spec_from_dict(d)


def test_spec_parses_and_its_hash_decides_the_trials():
    s = _spec()
    d = s.distributions()
    assert type(d["coupling.bits"]).__name__ == "IntDistribution"
    assert d["readout.noise_rad"].log and d["trim_bits"].choices == (6, None)
    assert s.objectives == ("bpc_loss", "energy_per_token_j", "area_mm2", "latency_per_token_s")
    assert _spec(name="other", trials=40).spec_hash == s.spec_hash  # label and length do not change the trials
    assert _spec(seed=1).spec_hash != s.spec_hash
    assert config_with(s.base, {"coupling.bits": 5, "trim_bits": None}).coupling.bits == 5


def test_the_periphery_precision_and_the_batch_are_searched_like_chip_fields():
    s = _spec(space={"energy.digital_precision": {"choice": ["int8", "int16"]}, "energy.batch": {"int": [1, 64]}})
    cfg = config_with(s.base, {"energy.digital_precision": "int8", "energy.batch": 64})
    assert (cfg.energy.digital_precision, cfg.energy.batch) == ("int8", 64)
    # where the weights and keys live (mapping.energy.sram.sram_plan) is a chip choice too
    s = _spec(space={"energy.weights": {"choice": ["streamed", "stationary"]},
                     "energy.sram_max_bytes": {"int": [65536, 4194304]}, "energy.offchip": {"choice": ["hbm", "ddr"]}})
    cfg = config_with(s.base, {"energy.weights": "stationary", "energy.sram_max_bytes": 65536, "energy.offchip": "ddr"})
    assert (cfg.energy.weights, cfg.energy.sram_max_bytes, cfg.energy.offchip) == ("stationary", 65536, "ddr")


@pytest.mark.parametrize(("over", "msg"), [
    ({"bogus": 1}, "unknown key"),
    ({"space": {"readout.nosie_rad": {"uniform": [0, 1]}}}, "unknown chip config field 'readout.nosie_rad'"),
    ({"space": {"readout": {"uniform": [0, 1]}}}, "is a section, not a field"),
    ({"space": {"settle_cycles": {"normal": [0, 1]}}}, "the distribution must be one of uniform, loguniform, int, choice"),
    ({"space": {"settle_cycles": {"uniform": [4, 2]}}}, "finite lo < hi"),
    ({"space": {"settle_cycles": {"loguniform": [0, 2]}}}, "loguniform needs lo > 0"),
    ({"space": {"coupling.bits": {"int": [3, 8.5]}}}, "int needs integer bounds"),
    ({"space": {"readout.noise_rad": {"uniform": [-0.1, 0.1]}}}, "the value -0.1 is not a valid chip config"),
    ({"space": {}}, r"\[space\] is empty"),
    ({"space": {"energy.gpu": {"choice": ["H100-SXM", "A100-SXM"]}}}, "cannot be searched: it chooses what is reported"),
    ({"objectives": ["bpc_loss", "bpc_loss"]}, "repeat"),
    ({"objectives": ["speed"]}, "objectives must be"),
    ({"constraints": ["area_mm2 < 5"]}, "operator must be one of"),
    ({"constraints": ["foo <= 1"]}, "unknown metric 'foo'"),
    ({"constraints": ["area_mm2 <= lots"]}, "must read"),
    ({"constraints": ["energy_per_token_j <= 0"]}, "impossible"),
    ({"constraints": ["bpc_loss <= -9"]}, "impossible"),
    ({"constraints": ["area_mm2 <= 10", "area_mm2 >= 20"]}, "contradict"),
    ({"sampler": "grid"}, "sampler must be one of"),
    ({"population": 1}, "population must be"),
])
def test_bad_specs_are_refused_naming_the_problem(over, msg):
    with pytest.raises(ValueError, match=msg):
        _spec(**over)


def test_constraint_violation_is_relative_and_signed():
    c = Constraint.parse("area_mm2 <= 50")
    assert c.violation(25) == pytest.approx(-0.5) and c.met(25) and not c.met(75)
    g = Constraint.parse(" bpc_loss>=-0.5 ")
    assert str(g) == "bpc_loss >= -0.5" and g.violation(-1.0) == pytest.approx(1.0)
    assert not c.met(math.nan)


def test_pareto_mask():
    v = np.array([[1, 5], [2, 2], [5, 1], [3, 3], [2, 2], [np.nan, 0]])
    assert pareto_mask(v).tolist() == [True, True, True, False, True, False]


def _table(rows):
    base = {"state": "COMPLETE", "feasible": True, "on_front": True, "gpu_lower_j": 100e-9, "gpu_upper_j": 1e-6,
            "anchor_j": 50e-9, "area_mm2": 10.0, "latency_per_token_s": 1e-8, "coupling.bits": 4}
    return pd.DataFrame([{**base, "trial": i, **r} for i, r in enumerate(rows)])


def test_verdict_names_the_bound():
    spec = design_spec_from_dict({**BASE, "space": {"coupling.bits": {"int": [3, 8]}}})
    # periphery-bound: without the array it still spends more than the GPU's lower bound
    df = _table([{"bpc_loss": 0.01, "energy_per_token_j": 300e-9, "energy_digital_periphery_j": 200e-9,
                  "energy_oscillators_j": 100e-9, "floor_without_array_j": 200e-9},
                 {"bpc_loss": 0.2, "energy_per_token_j": 10e-9, "energy_digital_periphery_j": 5e-9,
                  "energy_oscillators_j": 5e-9, "floor_without_array_j": 5e-9}])
    v = verdict(df, spec)
    assert v["best_trial"] == 0 and v["ratio_to_gpu_lower"] == pytest.approx(3.0)
    assert v["bounded_by"].startswith("periphery") and "digital periphery, SRAM and leakage bound it" in v["text"]
    assert "search's own tokens" in v["judged_on"]
    assert list(v["decomposition_j"]) == ["digital_periphery_j", "oscillators_j"]
    # array-bound
    df.loc[0, ["energy_digital_periphery_j", "energy_oscillators_j", "floor_without_array_j"]] = [50e-9, 250e-9, 50e-9]
    v = verdict(df, spec)
    assert v["bounded_by"] == "oscillators_j" and "array terms bound it" in v["text"]
    # a winner
    df.loc[0, "energy_per_token_j"] = 20e-9
    v = verdict(df, spec)
    assert v["bounded_by"] == "oscillators_j" and "beats the GPU's board figure by 5x" in v["text"]
    # nothing at the threshold
    df["bpc_loss"] = [0.3, 0.2]
    v = verdict(df, spec)
    assert v["best_trial"] is None and "No design reaches a BPC loss <= 0.05" in v["text"]
    assert v["closest_trial"] == 1 and "It does not beat the GPU's board figure" not in v["text"]  # 10 nJ < 100 nJ
    assert "beats the GPU's board figure by 10x" in v["text"]
    # rescored: the front is judged by its losses on the test tokens, not the search's
    df["bpc_loss"] = [0.01, 0.02]
    recheck = pd.DataFrame({"trial": [0, 1], "recheck_bpc_loss": [0.2, 0.04], "recheck_bpc_loss_se": [0.01, 0.01],
                            "recheck_windows": [32, 32]})
    v = verdict(df, spec, recheck)
    assert v["best_trial"] == 1 and v["bpc_loss"] == 0.04 and "rescored on 32 windows" in v["judged_on"]
    # the candidates a rescoring looks at: front designs whose loss could be at the threshold, lowest first
    from mapping.design.recheck import recheck_candidates

    df["bpc_loss_se"] = [0.01, 0.2]
    df["bpc_loss"] = [0.5, 0.3]  # trial 1 is within 2 SE of 0.05, trial 0 is not
    assert recheck_candidates(df)["trial"].tolist() == [1]
    df["bpc_loss_se"] = 0.0
    assert recheck_candidates(df, limit=1)["trial"].tolist() == [1]  # none qualifies: the lowest loss


def test_gain_cell_anchor_normalisation():
    v, how = anchor_j_per_token(4, 4, 1024)
    assert v == pytest.approx(6.15e-9 * 16)
    assert anchor_j_per_token(4, 4, 64)[0] == pytest.approx(6.15e-9 * 16 / 16)
    assert "linear in the window" in how


def test_adapter_reads_the_simulation_report_and_the_static_metrics_agree():
    from mapping.compiler import compile as compile_chip
    from mapping.config import ChipConfig
    from mapping.model_io import load_model
    from mapping.simulation.report import simulate_report
    from oscsim.data import eval_windows, load_shakespeare

    model, _ = load_model("kuramoto-tiny")
    cfg = ChipConfig(device="ideal", settle_cycles=2.0)
    static = static_metrics(cfg, model, 16)
    assert math.isnan(static["bpc_loss"])
    x, y = eval_windows(load_shakespeare().split("valid"), 16, max_windows=2)
    chip = compile_chip(model, cfg)  # mismatch on: the same cells, schedule, windows and GPU work
    rep = simulate_report(chip, x, y, seed=0, progress=False, measure_gpu=False, warn=False)
    m = trial_metrics(rep)[METRICS_KEY]
    assert m["bpc_loss"] == rep.bpc_difference and m["bpc_loss_se"] == rep.bpc_difference_se
    assert m["area_mm2"] == rep.area_mm2 == static["area_mm2"]
    assert m["latency_per_token_s"] == rep.latency_per_token_s == pytest.approx(static["latency_per_token_s"])
    assert m["sram_bytes"] == rep.sram_bytes and m["leakage_j"] == rep.leakage_j > 0
    tl = rep.energy["timeline_s"]
    assert m["latency_per_pass_s"] == tl["pass_s"] and m["tokens_per_pass"] == 16
    assert m["latency_per_token_s"] == pytest.approx(tl["pass_s"] / 16)
    assert m["gpu_lower_j"] == rep.energy["gpu_energy_bounds_j"]["lower"]
    assert m["energy_per_token_j"] == pytest.approx(sum(v for k, v in m.items() if k.startswith("energy_")
                                                        and k != "energy_per_token_j"))
    assert m["array_j"] + m["floor_without_array_j"] == pytest.approx(m["energy_per_token_j"])
    assert m["largest_term"] == max((k for k in m if k.startswith("energy_") and k != "energy_per_token_j"),
                                    key=m.get).removeprefix("energy_")
    assert m["schedule"] == "multiplexed" and m["tiles"] == 16 and m["node_nm"] == 65
    decode = static_metrics(cfg.replace(energy=cfg.energy.__class__(phase="decode")), model, 16)
    assert decode["tokens_per_pass"] == 1


def test_one_driver_per_study():
    import os
    import socket
    import time

    import optuna

    from mapping.design import DesignDirError
    from mapping.design.study import _acquire

    study = optuna.create_study(directions=["minimize"])
    host = socket.gethostname()
    study.set_user_attr("driver", {"host": host, "pid": os.getppid(), "heartbeat": time.time()})  # alive
    with pytest.raises(DesignDirError, match="is being driven by pid"):
        _acquire(study)
    dead = 2**22 + 12345  # above the default pid_max: no such process
    study.set_user_attr("driver", {"host": host, "pid": dead, "heartbeat": time.time()})
    _acquire(study)  # a driver killed with -9 left its record: taken over
    assert study.user_attrs["driver"]["pid"] == os.getpid()
    study.set_user_attr("driver", {"host": "elsewhere", "pid": 1, "heartbeat": time.time() - 10})
    with pytest.raises(DesignDirError):
        _acquire(study)
    study.set_user_attr("driver", {"host": "elsewhere", "pid": 1, "heartbeat": time.time() - 1e4})
    _acquire(study)


def test_the_analog_design_example_searches_the_score_mode_with_its_costs():
    """examples/design-analog.toml searches [scores] mode; an analog trial is charged its score array's area (and its
    leakage) and its score rounds' latency, so the search does not get them free."""
    from pathlib import Path

    from mapping.config import AnalogScores, DigitalScores
    from mapping.design.spec import load_design_spec
    from mapping.model_io import load_model

    spec = load_design_spec(Path(__file__).parents[1] / "examples" / "design-analog.toml")
    dim = next(d for d in spec.space if d.field == "scores.mode")
    assert set(dim.values) == {"digital", "analog"}
    model, _ = load_model(spec.checkpoint)
    cfg = {m: config_with(spec.base, {"scores.mode": m, "array.tiles": 8}) for m in dim.values}
    assert isinstance(cfg["analog"].scores, AnalogScores) and isinstance(cfg["digital"].scores, DigitalScores)
    st = {m: static_metrics(c, model, 16) for m, c in cfg.items()}
    assert st["analog"]["area_mm2"] > st["digital"]["area_mm2"]
    assert st["analog"]["leakage_j"] / st["analog"]["latency_per_token_s"] > \
        st["digital"]["leakage_j"] / st["digital"]["latency_per_token_s"]  # leakage power follows the larger die


def test_verdict_text_follows_its_numbers_states_tokens_and_t_and_names_each_comparison():
    spec = design_spec_from_dict({**BASE, "space": {"coupling.bits": {"int": [3, 8]}}})
    extra = {"n_tokens": 32, "T": 32, "node_nm": 65.0, "baseline_digital_same_node_j": 330e-9,
             "baseline_gpu_datapath_j": 6e-9, "array_gain": 1.1, "amdahl_max_gain": 1.24}
    # the closest design loses to the GPU's board figure: no "gain over the GPU" anywhere
    df = _table([{"bpc_loss": 0.38, "bpc_loss_se": 0.52, "energy_per_token_j": 248e-9, **extra,
                  "energy_digital_periphery_j": 200e-9, "energy_oscillators_j": 48e-9,
                  "floor_without_array_j": 200e-9},
                 {"bpc_loss": 0.30, "bpc_loss_se": 0.40, "energy_per_token_j": 300e-9, **extra,
                  "energy_digital_periphery_j": 250e-9, "energy_oscillators_j": 50e-9,
                  "floor_without_array_j": 250e-9}])
    v = verdict(df, spec)
    t = v["text"]
    assert v["best_trial"] is None and not re.search(r"\bgains?\b", t) and "beats" not in t
    assert t.count("judged on") == 1 and t.count("no rescoring") == 1
    assert "32 per design" in v["judged_on"] and v["n_tokens_judged"] == 32
    # the search's SE against the threshold, and how many tokens would bring it below
    assert v["search_se_median"] == pytest.approx(0.46)
    assert "not below the 0.05 threshold" in t and v["search_tokens_for_threshold"] == pytest.approx(32 * (0.46 / 0.05) ** 2)
    # the headline comparisons, each named, and every GPU figure with its T
    assert v["ratio_to_digital_same_node"] == pytest.approx(300 / 330)
    assert v["ratio_to_gpu_datapath"] == pytest.approx(50.0)
    assert "the same chip without the array" in t and "datapath bound" in t
    assert t.count("T = 32") >= 2 and "board figure" in t
    # a design that beats the board figure with an array gain below 1.5: the gain is the node's, said once
    df.loc[1, ["bpc_loss", "energy_per_token_j"]] = [0.01, 50e-9]
    v = verdict(df, spec)
    assert v["best_trial"] == 1 and "beats the GPU's board figure by 2x" in v["text"]
    assert "not the oscillators'" in v["text"]
