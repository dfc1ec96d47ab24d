"""The workload as fields (context length beside phase and batch): a sweep varies ``context_tokens`` like any chip
field, each point's windows hold its own context (past the model's training length too: positions are rotations),
energy and area follow, and a design past ``[array] die_limit_mm2`` carries its reason in ``infeasible_reason``
(sweep rows, design trials, ``oscsim simulate``), never a silent number."""

import math

import pandas as pd
import pytest

from mapping.sweep import load_results, load_spec, run_sweep

SPEC = """
name = "context"
checkpoint = "kuramoto-tiny"
[tokens]
windows = 1
[chip]
device = "ideal"
settle_cycles = 2.0
[axes]
"context_tokens" = { values = [32, 160] }
"array.die_limit_mm2" = { values = [1.0, 858.0] }
[seeds]
noise = [0]
"""


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    d = tmp_path_factory.mktemp("sweep")
    (d / "spec.toml").write_text(SPEC)
    run_sweep(load_spec(d / "spec.toml"), d / "out", workers=0, progress=False)
    return load_results(d / "out")


def test_context_is_a_sweep_field_and_infeasibility_has_its_reason(table):
    assert (table["status"] == "ok").all(), table["error"].tolist()
    by = {(int(r.context_tokens), float(r["array.die_limit_mm2"])): r for _, r in table.iterrows()}
    for T in (32, 160):  # the same die, two limits: only the reason changes
        tight, reticle = by[(T, 1.0)], by[(T, 858.0)]
        assert tight.energy_chip_j_per_token == reticle.energy_chip_j_per_token
        assert pd.isna(reticle.infeasible_reason)  # feasible: null in the table
        assert tight.infeasible_reason.startswith("die of ") and "exceeds array.die_limit_mm2 = 1 mm^2" in \
            tight.infeasible_reason and f"at T = {T})" in tight.infeasible_reason
        assert math.isfinite(tight.bpc_chip)
    # 160 tokens (past the model's 128) ran on a chip built for them: energy per token follows the context
    assert by[(160, 858.0)].energy_chip_j_per_token > by[(32, 858.0)].energy_chip_j_per_token


def test_simulate_report_says_infeasible(capsys):
    import torch

    from mapping import ChipConfig, compile
    from mapping.cli.simulate import print_report
    from mapping.config import MultiplexedArray
    from mapping.simulation.report import simulate_report

    from _chips import seeded_kuramoto

    model = seeded_kuramoto(k=8, n_heads=2, n_layers=2, seq_len=16)
    x = torch.randint(0, 256, (1, 17), generator=torch.Generator().manual_seed(0))
    chip = compile(model, ChipConfig(array=MultiplexedArray(tiles=4, die_limit_mm2=0.01)))
    rep = simulate_report(chip, x[:, :16], x[:, 1:], measure_gpu=False, warn=False)
    assert rep.to_dict()["infeasible_reason"].startswith("die of ")
    print_report(rep)
    line = [ln for ln in capsys.readouterr().out.splitlines() if "INFEASIBLE" in ln]
    assert line == [f"  INFEASIBLE: {rep.energy['infeasible_reason']}"]
    assert "exceeds array.die_limit_mm2 = 0.01 mm^2" in line[0]
