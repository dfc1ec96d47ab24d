"""benchmarks/bundle_run.py (oscsim.train.bundle): a finished run becomes a bundle with the run's weights, its
provenance and whole-split metrics; an unfinished run or an existing bundle is refused."""

from __future__ import annotations

import importlib.util
import json
import shlex
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from oscsim.cli import main as oscsim_main
from oscsim.data import load_corpus
from oscsim.train import evaluate_bpc, load_checkpoint
from oscsim.train.bundle import file_sha256

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("bundle_run", ROOT / "benchmarks" / "bundle_run.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A finished 2-step tiny transformer run on a 60 kB text corpus (validation and test: 23 windows each)."""
    tmp = tmp_path_factory.mktemp("run")
    text = tmp / "text.txt"
    text.write_bytes(bytes(load_corpus("shakespeare").train[:60_000].tolist()))
    out = tmp / "run"
    argv = ["train", "--model", "transformer", "--size", "tiny", "--corpus", "text", "--data", str(text),
            "--steps", "2", "--batch-size", "2", "--eval-every", "2", "--seed", "3", "--threads", "1",
            "--out", str(out), "--json"]
    assert oscsim_main(argv) == 0
    return out


def test_bundles_a_finished_run(run, tmp_path, capsys):
    capsys.readouterr()
    rc = _script().main([str(run), "toy-run", "--root", str(tmp_path), "--recipe", "make toy", "--no-progress"])
    assert rc == 0
    cap = capsys.readouterr()
    dst = tmp_path / "toy-run"
    assert cap.out.strip() == str(dst)
    assert sorted(p.name for p in dst.iterdir()) == ["config.json", "model.safetensors"]  # no optimizer
    # one line per split, so a minutes-long evaluation shows where it is
    lines = [ln for ln in cap.err.splitlines() if ln.startswith("toy-run: ")]
    assert [ln.split()[1] for ln in lines] == ["validation", "test"] and all("23 windows of 128" in ln for ln in lines)
    assert "the run recorded" in lines[0]

    meta = json.loads((dst / "config.json").read_text())
    src = json.loads((run / "config.json").read_text())
    assert "optimizer" not in meta and meta["step"] == meta["train"]["steps"] == 2
    assert meta["tokens"] == src["tokens"] == 2 * 2 * 128 and meta["train"]["seed"] == 3
    # provenance: the source run's files, byte for byte (the project's save path is deterministic)
    assert meta["source"] == {"run": str(run), "config_sha256": file_sha256(run / "config.json"),
                              "model_sha256": file_sha256(run / "model.safetensors"), "recipe": "make toy"}
    assert file_sha256(dst / "model.safetensors") == meta["source"]["model_sha256"]
    assert load_file(str(dst / "model.safetensors")).keys() == load_file(str(run / "model.safetensors")).keys()

    # metrics: evaluate_bpc over the whole splits, the definition of the run's own final val_bpc
    model, loaded = load_checkpoint(dst)
    corp = load_corpus("text", run.parent / "text.txt")
    assert meta["metrics"]["val_bpc"] == pytest.approx(evaluate_bpc(model, corp.valid, 128), abs=1e-9)
    assert meta["metrics"]["test_bpc"] == pytest.approx(evaluate_bpc(model, corp.test, 128), abs=1e-9)
    assert meta["metrics"]["val_bpc"] == pytest.approx(src["metrics"]["val_bpc"], abs=1e-6)
    assert meta["metrics"]["history"] == src["metrics"]["history"]

    # the recorded command reproduces the run: the same weights, bit for bit
    cmd = shlex.split(meta["command"].replace("RUN_DIR", str(tmp_path / "again")))
    assert cmd[0] == "oscsim" and oscsim_main([*cmd[1:], "--json"]) == 0
    again, _ = load_checkpoint(tmp_path / "again")
    for (k, a), (_, b) in zip(model.state_dict().items(), again.state_dict().items()):
        assert torch.equal(a, b), k


def test_refuses_an_unfinished_run(run, tmp_path, capsys):
    part = tmp_path / "part"
    part.mkdir()
    (part / "model.safetensors").write_bytes((run / "model.safetensors").read_bytes())
    meta = json.loads((run / "config.json").read_text())
    meta["step"] = 1
    (part / "config.json").write_text(json.dumps(meta))
    assert _script().main([str(part), "toy", "--root", str(tmp_path / "b"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "unfinished run (step 1 of 2)" in err and "resumes it" in err
    assert not (tmp_path / "b").exists()


def test_refuses_to_replace_a_bundle_without_force(run, tmp_path, capsys):
    from oscsim.train.bundle import bundle

    (tmp_path / "toy").mkdir()
    with pytest.raises(ValueError, match="exists; pass force=True"):
        bundle(run, "toy", root=tmp_path, log=lambda m: None)
    with pytest.raises(ValueError, match="plain folder name"):
        bundle(run, "../toy", root=tmp_path, log=lambda m: None)
    assert bundle(run, "toy", root=tmp_path, force=True, log=lambda m: None) == tmp_path / "toy"
    assert (tmp_path / "toy" / "model.safetensors").is_file()
