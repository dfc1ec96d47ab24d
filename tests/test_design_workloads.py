"""A design study over a grid of workloads (mapping.design.workloads, grid, crossover): kuramoto-tiny, tiny T.

- the ``[workloads]`` table is validated in one line per fault;
- the fields the docs call energy-only leave the chip run's BPC unchanged (bit for bit), so designs differing only
  in them may share one measured fidelity;
- a study of two workloads (batch 1 and 4) writes every trial with its workload columns, shares the fidelity
  between the two workloads (named in ``fidelity_shared_with``), and the crossover map's design, winner and
  bound per workload are the ones computed by hand from the rows; killed after its first told trial, the same
  command gives the same rows;
- a design past the die limit is not simulated: INFEASIBLE, its reason kept, the map's bound 'die';
- the crossover figure passes the project's figure checks.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from _kill import OSCSIM, assert_same_but, run_killed_at

_SPEC = """
name = "grid-tiny"
checkpoint = "kuramoto-tiny"
seed = 0
population = 2
objectives = ["bpc_loss", "energy_per_token_j"]

[tokens]
windows = 1

[workloads]
context_tokens = [16]
phase = ["prefill"]
batch = [1, 4]
trials = 2
whole_model_max_tokens = 16

[space]
"coupling.bits" = {{ int = [4, 6] }}
"energy.weights" = {{ choice = ["streamed", "stationary"] }}

[chip]
device = "ring-macromodel"
{chip}
"""


def _spec(tmp_path, chip: str = "", **replace):
    from mapping.design import load_design_spec

    text = _SPEC.format(chip=chip)
    for k, v in replace.items():
        text = text.replace(k, v)
    p = tmp_path / "spec.toml"
    p.write_text(text)
    return p, load_design_spec(p)


@pytest.mark.parametrize("old,new,message", [
    ("batch = [1, 4]", "batch = [1, 1]", "workloads.batch repeats a value"),
    ('phase = ["prefill"]', 'phase = ["sideways"]', "workloads.phase must be a non-empty list of prefill, decode"),
    ("context_tokens = [16]", "context_tokens = [1]",
     "workloads.context_tokens must be a non-empty list of integers >= 2"),
    ("trials = 2", "trials = 2\nwindow = 3", "[workloads] has unknown key(s) window"),
    ('"coupling.bits"', '"energy.batch" = { choice = [1, 2] }\n"coupling.bits"',
     "space.energy.batch is set by [workloads]"),
    ("whole_model_max_tokens = 16", "whole_model_max_tokens = { decode = 16 }",
     "workloads.whole_model_max_tokens must be an integer >= 2 or a table of one such integer per phase"),
    ('objectives = ["bpc_loss"', 'objectives = ["head_error"', "head_error is not an objective or constraint"),
    ("batch = [1, 4]", "batch = [1, 100000]", "workload T16-prefill-b100000 is not a valid chip config"),
])
def test_workloads_table_faults_are_one_line(tmp_path, old, new, message):
    with pytest.raises(ValueError) as e:
        _spec(tmp_path, **{old: new})
    assert message in str(e.value) and "\n" not in str(e.value)


def test_energy_only_fields_leave_the_chip_run_unchanged():
    """The fields mapping.design.workloads shares the fidelity over: the chip run's BPC, bit for bit."""
    from mapping.design.evaluate import evaluate_task
    from mapping.design.workloads import fidelity_key
    from mapping.config import ChipConfig, config_to_dict
    from mapping.sweep.spec import config_with

    base = config_with(ChipConfig(), {"context_tokens": 64, "device": "ring-macromodel"})
    other = config_with(base, {"energy.batch": 64, "energy.weights": "stationary", "energy.sram_max_bytes": 65536,
                               "energy.offchip": "ddr", "energy.gpu": "A100-SXM", "array.die_limit_mm2": 500.0,
                               "array.macs": 64, "array.block": 64})
    assert fidelity_key(base) == fidelity_key(other)
    assert fidelity_key(base) != fidelity_key(config_with(base, {"coupling.bits": 4}))
    rows = []
    for cfg in (base, other):
        task = {"point_id": "p", "point_index": 0, "params": {}, "config": config_to_dict(cfg), "noise_seed": 0,
                "checkpoint": "kuramoto-tiny", "tokens": {"windows": 2, "seq_len": None, "split": "valid"},
                "metrics": ["bpc", "fidelity", "energy", "wall_time"], "spec_hash": "x", "measure": "model",
                "head": [0, 0]}
        rows.append(evaluate_task(task)["design_metrics"])
    for k in ("bpc_chip", "bpc_closed_form", "bpc_loss", "bpc_loss_se", "head_error", "head_error_se"):
        assert math.isfinite(rows[0][k]) and rows[0][k] == rows[1][k], k
    assert rows[0]["energy_per_token_j"] != rows[1]["energy_per_token_j"]  # the energy does see them


def _by_hand(df):
    """The crossover entry of each workload, from the rows, as the docs state the rule."""
    out = {}
    for w, g in df.groupby("workload"):
        ok = g[g["feasible"] & (g["bpc_loss"] <= 0.05)]
        ref = (ok if len(ok) else g[g["feasible"]]).sort_values(["energy_per_token_j", "trial"]).iloc[0]
        base = {"digital same node": ref["baseline_digital_same_node_j"],
                "GPU datapath": ref["baseline_gpu_datapath_j"]}
        lower = min(base, key=base.get)
        chip = len(ok) > 0 and ref["energy_per_token_j"] < base[lower]
        out[w] = (int(ref["trial"]), "chip" if chip else lower)
    return out


def test_grid_study_rows_shared_fidelity_map_and_resume(tmp_path):
    from mapping.design import run_design
    from mapping.design.crossover import crossover_map

    p, spec = _spec(tmp_path)
    df = run_design(spec, tmp_path / "ref", workers=0)
    assert list(df["workload"]) == ["T16-prefill-b1"] * 2 + ["T16-prefill-b4"] * 2
    assert set(df["T"]) == {16} and list(df["batch"]) == [1, 1, 4, 4] and set(df["phase"]) == {"prefill"}
    assert (df["state"] == "COMPLETE").all() and df["fidelity_measure"].eq("model").all()
    b1, b4 = df[df["batch"] == 1].reset_index(), df[df["batch"] == 4].reset_index()
    # the same seed samples the same designs at both workloads: batch 4 takes batch 1's measured fidelity
    assert list(b1["coupling.bits"]) == list(b4["coupling.bits"])
    assert b1["fidelity_shared_with"].isna().all()
    assert list(b4["fidelity_shared_with"]) == [f"T16-prefill-b1#{t}" for t in b1["trial"]]
    assert np.array_equal(b1["bpc_loss"], b4["bpc_loss"]) and np.array_equal(b1["head_error"], b4["head_error"])
    assert not np.array_equal(b1["energy_per_token_j"], b4["energy_per_token_j"])  # batch 4 reuses its weights
    cm = crossover_map(df, spec.fields)
    hand = _by_hand(df)
    for r in cm.itertuples():
        assert (r.trial, r.winner) == hand[r.workload]
        assert r.chip_over_gpu_datapath == pytest.approx(r.energy_per_token_j / r.baseline_gpu_datapath_j)
        assert isinstance(r.bound, str) and r.bound
    assert (tmp_path / "ref" / "crossover.png").is_file() and (tmp_path / "ref" / "crossover.parquet").is_file()
    text = (tmp_path / "ref" / "report.md").read_text()
    assert "prefill, batch 1:" in text and "| winner | bound |" in text
    # killed after its first told trial, the same command resumes to the same rows
    out = tmp_path / "killed"
    run_killed_at(OSCSIM + ["design", str(p), "--out", str(out), "--workers", "0", "--no-progress"],
                  {"OSCSIM_DESIGN_KILL_AT": "told:1"}, timeout=120)
    again = run_design(spec, out, workers=0)
    assert_same_but(df, again, ["wall_s", "chip_wall_s"])


def test_infeasible_designs_are_not_simulated_and_bound_the_map(tmp_path):
    from mapping.design import run_design
    from mapping.design.crossover import crossover_map

    _, spec = _spec(tmp_path, chip="[chip.array]\ndie_limit_mm2 = 1.0", **{"batch = [1, 4]": "batch = [1]"})
    df = run_design(spec, tmp_path / "out", workers=0)
    assert (df["state"] == "INFEASIBLE").all() and df["error"].isna().all() and not df["feasible"].any()
    assert df["infeasible_reason"].str.contains("die_limit_mm2 = 1 mm").all()
    assert df["bpc_loss"].isna().all() and df["fidelity_measure"].eq("none (infeasible)").all()
    assert np.isfinite(df["energy_per_token_j"]).all() and np.isfinite(df["area_mm2"]).all()
    cm = crossover_map(df, spec.fields)
    assert list(cm["bound"]) == ["die"] and cm["winner"].iloc[0] in ("digital same node", "GPU datapath")


def _synthetic_map():
    import pandas as pd

    rows = []
    winners = {"prefill": ["GPU datapath", "digital same node", "chip", "chip, fidelity unproven"],
               "decode": ["GPU datapath", "GPU datapath", "GPU datapath", "digital same node"]}
    for phase in ("prefill", "decode"):
        for batch in (1, 64):
            for i, T in enumerate((128, 512, 1024, 4096)):
                e = 1e-6 * T / 128
                bound = {"chip": "periphery 61%",
                         "chip, fidelity unproven": "fidelity unproven: head error 0.25 +- 0.004",
                         "digital same node": "periphery and SRAM floor"}.get(winners[phase][i], "die")
                rows.append({"workload": f"T{T}-{phase}-b{batch}", "T": T, "phase": phase, "batch": batch,
                             "winner": winners[phase][i], "bound": bound, "energy_per_token_j": e,
                             "baseline_digital_same_node_j": e * 1.2, "baseline_gpu_datapath_j": e * (4 - i) * 0.6,
                             "baseline_gpu_board_j": e * 10, "best_loss": 0.1, "trial": 0})
    return pd.DataFrame(rows)


def test_crossover_figure_passes_the_figure_checks(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from mapping.design.crossover import plot_crossover
    from oscsim.plotting import layout_problems

    figs = []
    monkeypatch.setattr(plt, "close", lambda fig=None: figs.append(fig))
    paths = plot_crossover(_synthetic_map(), tmp_path / "crossover", title="synthetic map")
    assert [p.suffix for p in paths] == [".png", ".svg"] and all(p.stat().st_size > 0 for p in paths)
    assert layout_problems(figs[0]) == []
    ax = figs[0].axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["128", "512", "1024", "4096"]
    texts = [t.get_text().replace("\n", " ") for t in ax.texts]
    assert len(texts) == 4 and texts[0].startswith("die") and "head error only" in texts[3]
    legend = [t.get_text() for t in figs[0].legends[0].get_texts()]
    assert {"winner: chip", "winner: GPU datapath", "winner: digital same node",
            "winner: chip, fidelity unproven"} <= set(legend)
