"""Sweep execution: the same table whatever the executor, resumption after kill -9, a lost Dask worker, failing
points. Tiny model, ideal-ish chip (the noise stays on so the seeds matter), 8 short points."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from mapping.sweep import SweepDirError, load_results, load_spec, run_sweep, sweep_status
from mapping.sweep.run import PARTS
from _kill import assert_same_but

SPEC = """
name = "test-tiny"
checkpoint = "kuramoto-tiny"
[tokens]
windows = 3
seq_len = 24
[chip]
device = "ideal"
settle_cycles = 2.0
[axes]
"readout.noise_rad" = { values = [0.0, 0.05] }
"coupling.bits" = { values = [4, "none"] }
[seeds]
noise = [0, 1]
"""
WALL = ["wall_s", "chip_wall_s"]  # wall time is a measurement, not a function of the point


def _same_table(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert_same_but(a, b, WALL)


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory):
    p = tmp_path_factory.mktemp("spec") / "tiny.toml"
    p.write_text(SPEC)
    return p


@pytest.fixture(scope="module")
def reference_dir(spec_path, tmp_path_factory):
    """The sweep computed point by point in this process."""
    out = tmp_path_factory.mktemp("ref")
    run_sweep(load_spec(spec_path), out, workers=0, progress=False)
    return out


@pytest.fixture(scope="module")
def reference(reference_dir):
    df = load_results(reference_dir)
    assert (df["status"] == "ok").all(), df["error"].tolist()
    return df


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    from mapping.sweep.run import dask_cluster_options

    # the sweep's own worker layout: a process per core, one thread, the engine's threads pinned in the workers'
    # environment (not in this process's: a changed NUMBA_NUM_THREADS makes Numba's next compilation here fail
    # once its threads have started)
    with distributed.LocalCluster(**dask_cluster_options(2), dashboard_address=":0", silence_logs=40) as c:
        yield c


def test_reference_table_is_tidy_and_seeds_matter(reference, spec_path):
    spec = load_spec(spec_path)
    assert reference["point_id"].tolist() == [p.point_id for p in spec.points]
    assert reference["point_index"].tolist() == list(range(8))
    for col in ("readout.noise_rad", "coupling.bits", "noise_seed", "bpc_chip", "bpc_closed_form",
                "bpc_difference", "layer0_rel_error", "mean_layer_rel_error", "energy_chip_j_per_token",
                "energy_readout_j", "wall_s", "spec_hash", "oscsim_version", "model_fingerprint"):
        assert col in reference.columns, col
    assert (reference["spec_hash"] == spec.spec_hash).all()
    noisy = reference[reference["readout.noise_rad"] == 0.05]
    # the noise seed changes the chip's result, so identical tables below are not identical by accident
    assert noisy.groupby("coupling.bits", dropna=False)["bpc_chip"].nunique().min() == 2
    # the closed form does not depend on the chip
    assert reference["bpc_closed_form"].nunique() == 1
    assert (reference["bpc_difference"] == reference["bpc_chip"] - reference["bpc_closed_form"]).all()


# One local worker is covered in the default suite by the kill -9 test (a 1-worker run, killed, resumed by a
# 1-worker run, compared with the reference); the separate 1-worker run is in the slow suite.
@pytest.mark.parametrize("workers", [pytest.param(1, marks=pytest.mark.slow), 2])
def test_local_workers_give_the_same_table(workers, reference, spec_path, tmp_path):
    df = run_sweep(load_spec(spec_path), tmp_path, workers=workers, progress=False)
    _same_table(df, reference)
    _same_table(pd.read_parquet(tmp_path / "results.parquet"), reference)


def test_dask_cluster_gives_the_same_table_and_survives_a_killed_worker(cluster, reference, spec_path, tmp_path):
    from distributed import Client

    spec = load_spec(spec_path)
    df = run_sweep(spec, tmp_path / "a", scheduler=cluster.scheduler_address, progress=False)
    _same_table(df, reference)

    # a second sweep; once the first points are in, kill -9 a worker that is computing one
    client = Client(cluster.scheduler_address, set_as_default=False)
    try:
        before = client.run(os.getpid)
        out = tmp_path / "b"
        box = {}
        th = threading.Thread(target=lambda: box.update(df=run_sweep(spec, out, scheduler=cluster.scheduler_address,
                                                                      progress=False)))
        th.start()
        deadline = time.time() + 240
        killed = None
        while time.time() < deadline and killed is None and th.is_alive():
            busy = [w for w, tasks in client.processing().items() if tasks]
            if (out / PARTS).is_dir() and len(list((out / PARTS).glob("*.parquet"))) >= 1 and busy:
                killed = before[busy[0]]
                os.kill(killed, signal.SIGKILL)
            time.sleep(0.01)
        th.join(timeout=300)
        assert killed is not None, "the sweep finished before a worker could be killed"
        assert "df" in box, "the sweep did not finish after the worker was killed"
        _same_table(box["df"], reference)
        assert box["df"]["point_id"].is_unique
        assert killed not in client.run(os.getpid).values()  # the nanny replaced the killed process
    finally:
        client.close()


def test_kill_9_mid_sweep_then_resume(spec_path, reference, tmp_path):
    from _kill import OSCSIM, kill_group_when

    out = tmp_path / "killed"
    cmd = [*OSCSIM, "sweep", str(spec_path), "--out", str(out), "--workers", "1", "--no-progress"]
    parts = out / PARTS
    # the sweep and its worker process killed together, as a lost machine would, once two points are saved
    kill_group_when(cmd, lambda: parts.is_dir() and len(list(parts.glob("*.parquet"))) >= 2,
                    env={"NUMBA_NUM_THREADS": "1"})
    done = len(list(parts.glob("*.parquet")))
    assert 2 <= done < 8, f"{done} of 8 points were done at the kill: not mid-run"
    gone = subprocess.Popen(["true"])
    gone.wait()  # a process id no one holds now: the temporary file of a writer that died
    (parts / f".deadbeef.parquet.{gone.pid}.tmp").write_bytes(b"PAR1 half-written")  # a write cut short: skipped
    assert sweep_status(out)["remaining"] == 8 - done
    mtimes = {p.name: p.stat().st_mtime_ns for p in parts.glob("*.parquet")}

    from oscsim.cli import main

    assert main(cmd[3:]) == 0  # the same command resumes
    df = load_results(out)
    assert df["point_id"].is_unique and sorted(df["point_id"]) == sorted(reference["point_id"])
    _same_table(df, reference)
    # finished points were not computed again
    assert all(parts.joinpath(n).stat().st_mtime_ns == t for n, t in mtimes.items())
    st = sweep_status(out)
    assert (st["done"], st["failed"], st["remaining"]) == (8, 0, 0)
    assert not list(out.rglob("*.tmp")), "a temporary file survived the completed run"


def test_failing_point_is_recorded_and_the_rest_finish(spec_path, reference, tmp_path, monkeypatch):
    import mapping.compiler.build

    real = mapping.compiler.build.compile
    calls = []

    def compile_or_fail(model, config, **kw):
        calls.append(config)
        if config.coupling.bits is None and config.readout.noise_rad > 0:
            raise RuntimeError("coupler array not programmable (test)")
        return real(model, config, **kw)

    monkeypatch.setattr(mapping.compiler.build, "compile", compile_or_fail)
    spec = load_spec(spec_path)
    df = run_sweep(spec, tmp_path, workers=0, progress=False)
    bad = (df["coupling.bits"].isna()) & (df["readout.noise_rad"] > 0)
    assert bad.sum() == 2 and len(df) == 8
    assert (df.loc[bad, "status"] == "error").all() and (df.loc[~bad, "status"] == "ok").all()
    assert df.loc[bad, "error"].str.contains("RuntimeError: coupler array not programmable").all()
    assert df.loc[bad, "bpc_chip"].isna().all()
    ok = lambda d: d[~bad].drop(columns=["error"]).reset_index(drop=True)  # noqa: E731  (error: str vs all-null)
    _same_table(ok(df), ok(reference))
    st = sweep_status(tmp_path)
    assert (st["done"], st["failed"], st["remaining"]) == (6, 2, 0)
    calls.clear()
    run_sweep(spec, tmp_path, workers=0, progress=False)  # resume: nothing to do, failures stay recorded
    assert calls == []
    monkeypatch.setattr(mapping.compiler.build, "compile", real)
    df2 = run_sweep(spec, tmp_path, workers=0, progress=False, retry_failed=True)
    _same_table(df2, reference)
    # CSV export of the table
    from mapping.sweep import export_csv

    csv = pd.read_csv(export_csv(tmp_path))
    assert csv["point_id"].tolist() == reference["point_id"].tolist()


def test_a_folder_of_another_spec_is_refused(spec_path, reference, tmp_path):
    run_sweep(load_spec(spec_path), tmp_path, workers=0, progress=False)
    other = Path(tmp_path.parent / "other.toml")
    other.write_text(SPEC.replace("noise = [0, 1]", "noise = [0, 2]"))
    with pytest.raises(SweepDirError, match="different spec"):
        run_sweep(load_spec(other), tmp_path, workers=0, progress=False)


@pytest.mark.slow
def test_local_worker_killed_is_replaced(spec_path, reference, tmp_path):
    """A local worker process killed mid-sweep (OOM killer, kill -9): the pool is rebuilt, no point is lost."""
    import multiprocessing

    spec = load_spec(spec_path)
    box = {}
    th = threading.Thread(target=lambda: box.update(df=run_sweep(spec, tmp_path, workers=1, progress=False)))
    th.start()
    killed = None
    deadline = time.time() + 240
    while time.time() < deadline and killed is None and th.is_alive():
        kids = [p for p in multiprocessing.active_children() if p.pid]
        if kids and (tmp_path / PARTS).is_dir() and len(list((tmp_path / PARTS).glob("*.parquet"))) >= 1:
            killed = kids[0].pid
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.01)
    th.join(timeout=300)
    assert killed is not None, "the sweep finished before its worker could be killed"
    assert "df" in box
    _same_table(box["df"], reference)


def test_plots_pareto_front_and_where(reference_dir, reference, tmp_path):
    import numpy as np

    from mapping.sweep import pareto_front, plot_sweep

    files = plot_sweep(reference_dir, tmp_path / "all", metrics=["bpc_difference", "energy_chip_j_per_token"])
    names = {f.name for f in files}
    for stem in ("bpc_difference_vs_readout_noise_rad", "bpc_difference_vs_coupling_bits",
                 "energy_chip_j_per_token_vs_coupling_bits", "heatmap_bpc_difference_readout_noise_rad_coupling_bits",
                 "pareto_bpc_loss_vs_energy"):
        assert {stem + ".png", stem + ".svg"} <= names, stem
    assert all(f.stat().st_size > 1000 for f in files)
    # the front of the design means: recomputed here from the table
    d = reference.groupby(["readout.noise_rad", "coupling.bits"], dropna=False)[
        ["bpc_difference", "energy_chip_j_per_token"]].mean()
    front = pareto_front(d["energy_chip_j_per_token"].to_numpy(), d["bpc_difference"].to_numpy())
    assert 1 <= front.sum() < len(d)
    # noise costs no energy, so at the cheapest couplers (4 bits) the noise-free design is the front's end
    assert front[list(d.index).index((0.0, 4))]
    sub = plot_sweep(reference_dir, tmp_path / "b4", where={"coupling.bits": 4}, metrics=["bpc_difference"],
                     formats=("png",))
    assert not any("coupling_bits" in f.name for f in sub)  # held fixed: no longer a plotted parameter
    with pytest.raises(ValueError, match="no finished point"):
        plot_sweep(reference_dir, tmp_path / "x", where={"coupling.bits": 5})
    assert np.isfinite(reference["energy_chip_j_per_token"]).all()


def test_table_rewritten_at_most_every_compact_interval_and_on_interrupt(spec_path, reference, tmp_path,
                                                                          monkeypatch):
    """results.parquet is not rewritten after every point (it cost the main process CPU the workers need), but
    a completed run and a run stopped part-way both leave it holding every finished point."""
    import mapping.sweep.run as sr

    calls = []
    real = sr._compact
    monkeypatch.setattr(sr, "_compact", lambda *a: (calls.append(len(a[1])), real(*a)))
    monkeypatch.setattr(sr, "COMPACT_EVERY_S", 1e9)
    spec = load_spec(spec_path)
    run_sweep(spec, tmp_path / "whole", workers=0, progress=False)
    assert calls == [8]  # once, at the end
    _same_table(pd.read_parquet(tmp_path / "whole" / "results.parquet"), reference)

    calls.clear()
    monkeypatch.setattr(sr, "COMPACT_EVERY_S", 0.0)
    run_sweep(spec, tmp_path / "each", workers=0, progress=False)
    assert calls == list(range(1, 9)) + [8]  # the interval elapsed before every point, then the end

    # stopped after 3 points (Ctrl-C in the sink's caller): the table holds those 3
    done = []
    real_compute = sr.compute_point

    def compute_then_stop(task, metrics_of=None):
        if len(done) == 3:
            raise KeyboardInterrupt
        done.append(task["point_id"])
        return real_compute(task)

    monkeypatch.setattr(sr, "COMPACT_EVERY_S", 1e9)
    real_run_tasks = sr.run_tasks
    monkeypatch.setattr(sr, "run_tasks", lambda tasks, w, sch, sink, **kw: real_run_tasks(tasks, w, sch, sink,
                                                                                           compute=compute_then_stop))
    with pytest.raises(KeyboardInterrupt):
        sr.run_sweep(spec, tmp_path / "stopped", workers=0, progress=False)
    table = pd.read_parquet(tmp_path / "stopped" / "results.parquet")
    assert table["point_id"].tolist() == done
    _same_table(table, reference.iloc[:3].reset_index(drop=True))


def test_part_files_hold_the_table_a_pandas_round_trip_gave(spec_path, reference_dir, tmp_path):
    """A part is written by arrow from the row (``write_part``): its file reads back as the table that
    ``DataFrame([row]).to_parquet`` gave (the earlier writer), so a folder started by an earlier version resumes
    into the same table, and the table the run keeps in memory is the one on disk. Real rows: every point of the
    reference sweep (ints, floats, text, an all-None ``error``), one row with a None in an int axis, one error row."""
    import pyarrow.parquet as pq

    from mapping.sweep.point import _error_row
    from mapping.sweep.run import _read_part, _tasks, write_df, write_part

    rows = [pq.read_table(p).to_pylist()[0] for p in sorted((reference_dir / PARTS).glob("*.parquet"))]
    assert len(rows) == 8 and any(r["coupling.bits"] is None for r in rows)
    rows.append(_error_row(_tasks(load_spec(spec_path))[3], "RuntimeError: test"))
    for i, row in enumerate(rows):
        new, old = tmp_path / f"new{i}.parquet", tmp_path / f"old{i}.parquet"
        kept = write_part(row, new)
        write_df(pd.DataFrame([row]), old)
        assert _read_part(new).equals(_read_part(old)), i
        assert kept.equals(_read_part(new)), i
    assert str(_read_part(tmp_path / "new0.parquet").schema.field("point_id").type) == "large_string"
