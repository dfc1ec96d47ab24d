"""A training run killed (kill -9) at every state of a checkpoint's commit resumes to the weights of an
uninterrupted run, bit for bit; a reader meanwhile sees the last committed checkpoint whole; nothing is left
behind. The run kills itself at a named state (``OSCSIM_KILL_AT``, :mod:`oscsim._killpoint`)."""

import json
import sys

import pytest
from _kill import run_killed_at

from oscsim._killpoint import KILL_ENV
from oscsim.train import load_checkpoint
from oscsim.train.checkpoint import CONFIG_FILE, MODEL_FILE, OPTIM_FILE, commit_checkpoint, recover_checkpoint

# a tiny transformer, 12 steps, a checkpoint every 4: saves at steps 4, 8 (in the loop) and 12 (the final one)
TRAIN = [sys.executable, "-m", "oscsim.cli", "train", "--model", "transformer", "--steps", "12", "--batch-size", "4",
         "--eval-every", "4", "--final-eval-windows", "2", "--threads", "1", "--json",
         "--set", "d_model=16", "--set", "n_heads=2", "--set", "n_layers=1", "--set", "ffn_hidden=24",
         "--set", "seq_len=32"]


def _train(out, env=None):
    import os
    import subprocess

    r = subprocess.run(TRAIN + ["--out", str(out)], env={**os.environ, **(env or {})}, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "run"
    _train(out)
    return {f: (out / f).read_bytes() for f in (MODEL_FILE, OPTIM_FILE)}


# (kill point, its occurrence, the step a reader then sees, whether the folder itself is missing)
STATES = [("checkpoint_optimizer", 2, 4, False),  # optimizer of step 8 written, its weights not
          ("checkpoint_weights", 2, 4, False),  # weights of step 8 written, its config not
          ("checkpoint_staged", 2, 4, False),  # step 8 whole in run.tmp, not swapped in
          ("checkpoint_aside", 1, 4, True),  # run -> run.prev done, run.tmp -> run not
          ("checkpoint_swapped", 2, 8, False)]  # step 8 swapped in, run.prev (step 4) not yet removed


@pytest.mark.parametrize("point,nth,step,missing", STATES, ids=[s[0] for s in STATES])
def test_killed_between_checkpoint_files_resumes_to_the_same_weights(tmp_path, reference, point, nth, step, missing):
    out = tmp_path / "run"
    run_killed_at(TRAIN + ["--out", str(out)], {KILL_ENV: f"{point}:{nth}"}, timeout=120)
    assert out.exists() != missing
    before = sorted(p.name for p in tmp_path.iterdir())
    _, meta = load_checkpoint(out)  # a reader: the last committed checkpoint, and it renames nothing
    assert meta["step"] == step and sorted(p.name for p in tmp_path.iterdir()) == before
    _train(out)
    assert {f: (out / f).read_bytes() for f in reference} == reference
    assert json.loads((out / CONFIG_FILE).read_text())["step"] == 12
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no staging, no set-aside folder


def test_recovery_of_every_leftover_and_foreign_files_refused(tmp_path):
    out, staging, aside = tmp_path / "c", tmp_path / "c.tmp", tmp_path / "c.prev"

    def write(text):
        return lambda folder: (folder / CONFIG_FILE).write_text(text)

    commit_checkpoint(out, write("1"))
    staging.mkdir()
    (staging / MODEL_FILE).write_text("half")  # a kill while staging: discarded
    aside.mkdir()  # a kill after the swap: the old set removed
    recover_checkpoint(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"] and (out / CONFIG_FILE).read_text() == "1"
    out.rename(aside)  # a kill between the two renames: the previous set restored
    recover_checkpoint(out)
    assert (out / CONFIG_FILE).read_text() == "1" and not aside.exists()
    commit_checkpoint(out, write("2"))
    assert (out / CONFIG_FILE).read_text() == "2" and sorted(p.name for p in tmp_path.iterdir()) == ["c"]
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"not a checkpoint's \(notes.txt\).*choose a new or empty folder"):
        commit_checkpoint(out, write("3"))
    assert (out / "notes.txt").read_text() == "mine" and (out / CONFIG_FILE).read_text() == "2"
