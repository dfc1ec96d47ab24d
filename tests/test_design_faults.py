"""Faults a design study meets, each refused in one line (file and cause, exit status 2; 1 when every trial
failed) without a traceback, and before any worker starts where no model is needed: one driver per folder
(two released together by one barrier, 50 times), a window count the split cannot give, a read-only or full
disk, an --out that is a file, a corrupt study.db or design.json, a directory where a file belongs."""

import multiprocessing
import os
import subprocess
from pathlib import Path

import pytest
from _kill import OSCSIM, claim_contender

from mapping.design.driver import DesignDirError, DriverLock, expand_env, redact

SPEC = """
name = "faults"
checkpoint = "kuramoto-tiny"
trials = 2
population = 2
objectives = ["bpc_loss", "energy_per_token_j"]
[tokens]
windows = 1
seq_len = 16
[chip]
device = "ideal"
settle_cycles = 2.0
[space]
"coupling.bits" = { int = [3, 4] }
"""


@pytest.fixture
def spec_path(tmp_path):
    p = tmp_path / "spec.toml"
    p.write_text(SPEC)
    return p


def _cli(capsys, *args) -> tuple[int, str]:
    """``oscsim ARGS`` in this process (the model stays loaded between tests); (exit status, stderr)."""
    from oscsim.cli import main

    rc = main([str(a) for a in args])
    return rc, capsys.readouterr().err


def _one_line(err: str, *words) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("oscsim design: faults:")]
    assert "Traceback" not in err and len(lines) == 1, err
    for w in words:
        assert w in lines[0], (w, lines[0])


def test_two_drivers_released_together_one_wins_every_time(tmp_path):
    rounds = 50
    for i in range(rounds):
        (tmp_path / str(i)).mkdir()
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(2, timeout=60), ctx.Queue()
    procs = [ctx.Process(target=claim_contender, args=(str(tmp_path), rounds, barrier, results)) for _ in range(2)]
    for p in procs:
        p.start()
    got = [results.get(timeout=120) for _ in range(2 * rounds)]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    for i in range(rounds):
        won = [(w, m) for r, w, m in got if r == i]
        assert sorted(w for w, _ in won) == [False, True], (i, won)
        msg = next(m for w, m in won if not w)
        assert "is being driven by pid" in msg and "\n" not in msg


def test_a_second_driver_gets_one_line(spec_path, tmp_path, capsys):
    out = tmp_path / "d"
    out.mkdir()
    with DriverLock(out):  # another driver holds the folder
        rc, err = _cli(capsys, "design", spec_path, "--out", out, "--workers", "0", "--no-progress")
    assert rc == 2
    _one_line(err, "is being driven by pid", str(out))
    assert not (out / "study.db").exists()


def test_windows_the_split_cannot_give_are_refused_before_any_worker_starts(spec_path, tmp_path):
    spec_path.write_text(SPEC.replace("windows = 1", "windows = 100000"))
    out = tmp_path / "x"
    # a subprocess, to see that no worker process was started: the refusal comes before the model is loaded
    r = subprocess.run([*OSCSIM, "design", str(spec_path), "--out", str(out), "--workers", "2"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "tokens.windows = 100000" in r.stderr and "split holds only" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not out.exists()


def test_a_study_whose_every_trial_fails_exits_1_with_the_first_error(spec_path, tmp_path, capsys, monkeypatch):
    import mapping.compiler.build

    def broken(*a, **k):
        raise RuntimeError("planted fault")

    monkeypatch.setattr(mapping.compiler.build, "compile", broken)
    rc, err = _cli(capsys, "design", spec_path, "--out", tmp_path / "d", "--workers", "0", "--no-progress")
    assert rc == 1 and "every trial failed; the first (trial 0): RuntimeError: planted fault" in err, err


def test_an_out_that_is_a_file_and_a_spec_that_is_a_folder(spec_path, tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    rc, err = _cli(capsys, "design", spec_path, "--out", f)
    assert rc == 2
    _one_line(err, f"--out {f}", "is a file, not a folder")
    rc, err = _cli(capsys, "design", tmp_path, "--out", tmp_path / "y")
    assert rc == 2
    _one_line(err, "is a directory")
    assert not (tmp_path / "y").exists()


@pytest.fixture
def tmpfs(tmp_path):
    """A 1 MiB tmpfs (root only: mount)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_read_only_out_gives_one_line(spec_path, tmp_path, tmpfs, capsys):
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    rc, err = _cli(capsys, "design", spec_path, "--out", tmpfs / "d")
    assert rc == 2
    _one_line(err, f"--out {tmpfs / 'd'}", "read-only file system")


def test_a_full_disk_gives_one_line(spec_path, tmpfs, capsys):
    rc, err = _cli(capsys, "design", spec_path, "--out", tmpfs / "d", "--workers", "0", "--no-progress")
    assert rc == 2, err
    _one_line(err)
    assert "disk is full" in err or "No space left on device" in err, err


def test_a_corrupt_study_db_and_design_json_give_one_line(spec_path, tmp_path, capsys):
    out = tmp_path / "d"
    out.mkdir()
    (out / "study.db").write_bytes(b"SQLite format 3\x00" + os.urandom(4000))
    rc, err = _cli(capsys, "design", spec_path, "--out", out, "--workers", "0", "--no-progress")
    assert rc == 2
    _one_line(err, "storage", "study.db", "cannot be used")
    (out / "design.json").write_text('{"spec_hash": "abc')
    rc, err = _cli(capsys, "design", spec_path, "--out", out, "--workers", "0", "--no-progress")
    assert rc == 2
    _one_line(err, str(out / "design.json"), "cannot be read")


def test_a_storage_password_comes_from_the_environment_and_is_never_written(monkeypatch, tmp_path):
    monkeypatch.setenv("OSCSIM_TEST_PW", "s3cret")
    url = "postgresql://me:${OSCSIM_TEST_PW}@db.example/studies"
    assert expand_env(url) == "postgresql://me:s3cret@db.example/studies"
    assert redact(url) == redact(expand_env(url)) == "postgresql://me:***@db.example/studies"
    monkeypatch.delenv("OSCSIM_TEST_PW")
    with pytest.raises(ValueError, match="OSCSIM_TEST_PW, which is not set") as e:
        expand_env(url)
    assert "s3cret" not in str(e.value)


def test_the_storage_url_is_expanded_when_opened_and_written_as_given(spec_path, tmp_path, monkeypatch):
    """A ``${VAR}`` storage URL: the study is opened at the expanded address; design.json keeps the placeholder."""
    import json

    from mapping.design import load_design_spec, run_design

    monkeypatch.setenv("OSCSIM_TEST_DBDIR", str(tmp_path / "db"))
    (tmp_path / "db").mkdir()
    df = run_design(load_design_spec(spec_path), tmp_path / "d", workers=0, progress=False,
                    storage="sqlite:///${OSCSIM_TEST_DBDIR}/s.db")
    assert (df["state"] == "COMPLETE").all() and (tmp_path / "db" / "s.db").is_file()
    meta = json.loads((tmp_path / "d" / "design.json").read_text())
    assert meta["storage"] == "sqlite:///${OSCSIM_TEST_DBDIR}/s.db"
    assert not list((tmp_path / "d").rglob("*.tmp"))
    with pytest.raises(DesignDirError, match="is being driven"):  # the folder's lock is held by its driver only
        with DriverLock(tmp_path / "d"), DriverLock(tmp_path / "d"):
            pass


def test_ctrl_c_says_how_many_trials_are_saved_and_how_to_resume(spec_path, tmp_path, capsys, monkeypatch):
    import mapping.design.study as study

    real, calls = study._evaluate_batch, []

    def interrupted(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **k)

    spec_path.write_text(SPEC.replace("trials = 2", "trials = 4"))
    monkeypatch.setattr(study, "_evaluate_batch", interrupted)
    rc, err = _cli(capsys, "design", spec_path, "--out", tmp_path / "d", "--workers", "0", "--no-progress")
    assert rc == 130 and "Traceback" not in err
    assert f"2 of 4 trials are saved in {tmp_path / 'd'} (rerun the same command to resume)" in err, err


def test_a_missing_checkpoint_and_a_window_longer_than_the_model_are_refused_before_any_folder(spec_path, tmp_path,
                                                                                               capsys):
    for old, new, msg in (('checkpoint = "kuramoto-tiny"', 'checkpoint = "no-such-model"', "not found"),
                          ("seq_len = 16", "seq_len = 4096", "tokens.seq_len = 4096 is longer than the chip's context")):
        spec_path.write_text(SPEC.replace(old, new))
        rc, err = _cli(capsys, "design", spec_path, "--out", tmp_path / "x", "--workers", "2")
        assert rc == 2
        _one_line(err, msg)
        assert not (tmp_path / "x").exists()


def test_a_corrupt_recheck_parquet_is_named(tmp_path):
    from mapping.design.results import load_recheck

    (tmp_path / "recheck.parquet").write_bytes(b"PAR1 cut short")
    with pytest.raises(ValueError, match="recheck.parquet is damaged .*; delete it to rescore the front"):
        load_recheck(tmp_path)
