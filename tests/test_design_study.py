"""Design search (mapping.design): the same trials whatever the executor, kill -9 then the same command completes
with no trial lost or counted twice, refusals before any work. Tiny model, 16 tokens, 6 trials in 2 batches."""

import subprocess
import sys

import pandas as pd
import pytest

from mapping.design import load_design_spec, load_trials, run_design
from mapping.design.results import MEASURED_COLUMNS
from _kill import assert_same_but

SPEC = """
name = "test-tiny"
checkpoint = "kuramoto-tiny"
sampler = "nsga2"
seed = 3
trials = 6
population = 3
objectives = ["bpc_loss", "energy_per_token_j"]
constraints = ["bpc_loss <= 2.0"]
[tokens]
windows = 1
seq_len = 16
[chip]
device = "ideal"
settle_cycles = 2.0
[space]
"coupling.bits" = { int = [3, 8] }
"readout.noise_rad" = { loguniform = [1e-3, 0.1] }
"settle_cycles" = { uniform = [1.0, 6.0] }
"""
OSCSIM = [sys.executable, "-m", "oscsim.cli"]


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert_same_but(a, b, MEASURED_COLUMNS)


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory):
    p = tmp_path_factory.mktemp("spec") / "tiny.toml"
    p.write_text(SPEC)
    return p


@pytest.fixture(scope="module")
def reference(spec_path, tmp_path_factory):
    """The study evaluated trial by trial in this process."""
    out = tmp_path_factory.mktemp("ref")
    df = run_design(load_design_spec(spec_path), out, workers=0, progress=False)
    assert (df["state"] == "COMPLETE").all(), df["error"].tolist()
    for f in ("front.parquet", "report.md", "report.json", "front.html", "plots/bpc_loss_vs_energy.png",
              "plots/area_vs_energy.svg", "plots/latency_vs_energy.png"):
        assert (out / f).is_file(), f
    assert "hovertemplate" in (out / "front.html").read_text()
    df.attrs["out"] = str(out)
    return df


def test_reference_study_is_complete_and_seeded(reference, spec_path):
    spec = load_design_spec(spec_path)
    assert reference["trial"].tolist() == list(range(6))
    # the sampler explored: six distinct designs, a second generation bred from the first
    assert reference[list(spec.fields)].drop_duplicates().shape[0] == 6
    assert reference["on_front"].any()
    assert (reference["bpc_loss"] == reference["bpc_chip"] - reference["bpc_closed_form"]).all()
    for col in ("area_mm2", "latency_per_token_s", "gpu_lower_j", "gpu_upper_j", "anchor_j", "config_json"):
        assert reference[col].notna().all(), col


def test_two_local_workers_give_the_same_trials(reference, spec_path, tmp_path, monkeypatch):
    import multiprocessing

    import mapping.sweep.executors as sr

    pools = []
    real = sr.cf.ProcessPoolExecutor
    monkeypatch.setattr(sr.cf, "ProcessPoolExecutor", lambda *a, **k: pools.append(1) or real(*a, **k))
    _same(run_design(load_design_spec(spec_path), tmp_path, workers=2, progress=False), reference)
    _same(load_trials(tmp_path), reference)
    # both generations on one set of workers (a pool per generation paid the workers' start-up each time), ended
    assert pools == [1]
    assert multiprocessing.active_children() == []


@pytest.mark.slow
def test_one_local_worker_gives_the_same_trials(reference, spec_path, tmp_path):
    _same(run_design(load_design_spec(spec_path), tmp_path, workers=1, progress=False), reference)


def test_recheck_rescores_the_front_on_test_tokens_and_resumes(reference, spec_path, tmp_path):
    import shutil

    from mapping.design import load_recheck, recheck_front, rewrite_results
    from mapping.design.recheck import recheck_candidates

    spec = load_design_spec(spec_path)
    out = tmp_path / "d"
    shutil.copytree(reference.attrs["out"], out)
    front = recheck_candidates(reference)
    assert len(front) and front["on_front"].all()
    rc = recheck_front(spec, out, reference, windows=1, workers=0)
    assert sorted(rc["trial"]) == sorted(front["trial"]) and (rc["recheck_windows"] == 1).all()
    assert rc["recheck_error"].isna().all() and rc["recheck_bpc_loss"].notna().all()
    # other tokens (the test split), so another loss than the search's
    assert not (rc.set_index("trial")["recheck_bpc_loss"] == front.set_index("trial")["bpc_loss"]).all()
    again = recheck_front(spec, out, reference, windows=1, workers=0)  # nothing left to do: the same rows
    pd.testing.assert_frame_equal(again, rc)
    rewrite_results(spec, out)
    import json

    v = json.loads((out / "report.json").read_text())
    assert "rescored on 1 windows" in v["judged_on"]
    pd.testing.assert_frame_equal(load_recheck(out), rc)


# The fast kill tests (every state of the driver, in this process's evaluation) are test_design_kill_points.py;
# this one kills the driver with its local worker process (its process group) mid-generation, then resumes
# with the same command, both as subprocesses with spawned workers (24-40 s).
@pytest.mark.slow
def test_kill_9_then_the_same_command_completes_without_loss_or_duplicate(reference, spec_path, tmp_path):
    from _kill import run_killed_at

    from mapping.design.driver import KILL_ENV

    out = tmp_path / "d"
    cmd = [*OSCSIM, "design", str(spec_path), "--out", str(out), "--workers", "1", "--no-progress"]
    run_killed_at(cmd, {KILL_ENV: "asked:2"})  # the second batch RUNNING, its worker killed with the driver
    assert not (out / "trials.parquet").exists()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    df = load_trials(out)
    assert df["trial"].tolist() == list(range(6)) and (df["state"] == "COMPLETE").all()
    _same(df, reference)


def test_unknown_field_and_impossible_constraints_are_refused_before_any_work(spec_path, tmp_path):
    bad = SPEC.replace('"settle_cycles" = { uniform', '"readout.nosie_rad" = { uniform')
    p = tmp_path / "bad.toml"
    p.write_text(bad)
    r = subprocess.run([*OSCSIM, "design", str(p), "--out", str(tmp_path / "x")], capture_output=True, text=True)
    assert r.returncode == 2 and "unknown chip config field 'readout.nosie_rad'" in r.stderr, r.stderr
    assert not (tmp_path / "x").exists()
    p.write_text(SPEC.replace('constraints = ["bpc_loss <= 2.0"]', 'constraints = ["area_mm2 <= 0"]'))
    with pytest.raises(ValueError, match="impossible: area_mm2 is > 0"):
        load_design_spec(p)
    # possible in principle, but no corner of the space comes near: refused by the static probe, no folder made
    p.write_text(SPEC.replace('constraints = ["bpc_loss <= 2.0"]', 'constraints = ["area_mm2 <= 1"]'))
    with pytest.raises(ValueError, match="cannot be met together by any of .* corner designs"):
        run_design(load_design_spec(p), tmp_path / "y", workers=0, progress=False)
    assert not (tmp_path / "y").exists()


@pytest.mark.slow
def test_tpe_and_a_dask_cluster_give_the_same_trials(spec_path, tmp_path):
    distributed = pytest.importorskip("distributed")
    p = tmp_path / "tpe.toml"
    p.write_text(SPEC.replace('sampler = "nsga2"', 'sampler = "tpe"'))
    spec = load_design_spec(p)
    ref = run_design(spec, tmp_path / "ref", workers=0, progress=False)
    assert (ref["state"] == "COMPLETE").all()
    from mapping.sweep.executors import dask_cluster_options

    # the workers' thread pins in their environment (dask_cluster_options), not in this process's: a
    # NUMBA_NUM_THREADS set here outlived the test and broke the next Numba compilation of the session
    with distributed.LocalCluster(**dask_cluster_options(2), dashboard_address=":0", silence_logs=40) as c:
        _same(run_design(spec, tmp_path / "dask", scheduler=c.scheduler_address, progress=False), ref)
