"""A design study killed (kill -9) at each state of its driver, then resumed by the same command, equals the
uninterrupted study in every column but the wall times: killed before the first trial, with a generation's
trials RUNNING, after their evaluation before any is told, between two records of one generation's tell,
inside one trial's record, and during the resume itself. The kill points are the driver's own
(:func:`mapping.design.driver.kill_point`), not timers. A small discrete space (4 designs, 9 trials) makes
NSGA-II breed copies of earlier designs, so the copies' ``same_as`` is compared too."""

import pandas as pd
import pytest
from _kill import OSCSIM, assert_same_but, run_killed_at

from mapping.design import load_design_spec, load_trials, run_design
from mapping.design.driver import KILL_ENV
from mapping.design.results import MEASURED_COLUMNS

SPEC = """
name = "kill-points"
checkpoint = "kuramoto-tiny"
sampler = "nsga2"
seed = 3
trials = 9
population = 3
objectives = ["bpc_loss", "energy_per_token_j"]
[tokens]
windows = 1
seq_len = 16
[chip]
device = "ideal"
settle_cycles = 2.0
[space]
"coupling.bits" = { int = [3, 4] }
"settle_cycles" = { choice = [1.0, 2.0] }
"""


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert_same_but(a, b, MEASURED_COLUMNS)


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory):
    p = tmp_path_factory.mktemp("spec") / "kill.toml"
    p.write_text(SPEC)
    return p


@pytest.fixture(scope="module")
def reference(spec_path, tmp_path_factory):
    df = run_design(load_design_spec(spec_path), tmp_path_factory.mktemp("ref"), workers=0, progress=False)
    assert (df["state"] == "COMPLETE").all(), df["error"].tolist()
    assert df["same_as"].notna().sum() >= 3, "the space should make NSGA-II repeat designs"
    # a copy names the trial that was evaluated, never another copy
    copies = df[df["same_as"].notna()]
    assert df.set_index("trial").loc[copies["same_as"].astype(int), "same_as"].isna().all()
    return df


def test_copies_carry_the_evaluated_trials_measurements(reference):
    assert reference["chip_wall_s"].notna().all() and (reference["chip_wall_s"] > 0).all()
    assert reference["wall_s"].notna().all()


# (kill points of successive runs): the N-th time the driver reaches a state, counted in each process
KILLS = {
    "before the first trial": ["claimed"],
    "with trials RUNNING": ["asked:2"],
    "evaluated, none told": ["evaluated:2"],
    "between two records of a tell": ["told:4"],
    "inside one trial's record": ["recording:5"],
    "during the resume": ["asked:2", "told:2"],
}


@pytest.mark.parametrize("kills", list(KILLS.values()), ids=list(KILLS))
def test_killed_at_a_state_then_resumed_equals_the_uninterrupted_study(kills, reference, spec_path, tmp_path):
    out = tmp_path / "d"
    cmd = [*OSCSIM, "design", str(spec_path), "--out", str(out), "--workers", "0", "--no-progress"]
    for k in kills:
        run_killed_at(cmd, {KILL_ENV: k})
        assert not (out / "trials.parquet").exists()
    df = run_design(load_design_spec(spec_path), out, workers=0, progress=False)  # the same command, resumed
    assert df["trial"].tolist() == list(range(9)) and (df["state"] == "COMPLETE").all()
    _same(df, reference)
    _same(load_trials(out), reference)
    assert not list(out.rglob("*.tmp")), "a temporary file survived the completed run"
