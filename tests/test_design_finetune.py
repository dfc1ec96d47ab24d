"""``oscsim design ... --finetune`` (mapping.design.finetune): a tiny fine-tune of the verdict's design through its
chip's surrogate runs, is saved with its chip (both SHA-256 recorded), is rescored before and after on the same
tokens with paired standard errors, reaches the verdict; killed (kill -9) after an optimizer step and inside a
checkpoint's commit, then resumed, it ends with the uninterrupted run's weights bit for bit; bad [finetune] values
are refused in one line."""

import hashlib
import json
import math
import shutil
import sys

import pandas as pd
import pytest
from _kill import run_killed_at

from mapping.design import load_design_spec, run_design
from mapping.design.driver import KILL_ENV
from mapping.design.finetune import finetune_candidates, finetune_front
from mapping.design.results import load_finetune

BASE = """
name = "finetune-tiny"
checkpoint = "kuramoto-tiny"
sampler = "nsga2"
seed = 3
trials = 2
population = 2
objectives = ["bpc_loss", "energy_per_token_j"]
[tokens]
windows = 1
seq_len = 16
[chip]
settle_cycles = 2.0
[space]
"coupling.bits" = { int = [3, 4] }
"""
SPEC = BASE + """[finetune]
steps = 6
batch_size = 2
seq_len = 16
checkpoint_every = 2
"""


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A finished two-trial study (no fine-tune yet) and its spec."""
    root = tmp_path_factory.mktemp("ft")
    (root / "spec.toml").write_text(SPEC)
    spec = load_design_spec(root / "spec.toml")
    df = run_design(spec, root / "study", workers=0, progress=False)
    assert (df["state"] == "COMPLETE").all(), df["error"].tolist()
    return root, spec, df


@pytest.fixture(scope="module")
def reference(study, tmp_path_factory):
    """The uninterrupted fine-tune, through the command (its verdict in report.json)."""
    from oscsim.cli import main

    root, spec, df = study
    out = tmp_path_factory.mktemp("ref") / "d"
    shutil.copytree(root / "study", out)
    assert main(["design", str(root / "spec.toml"), "--out", str(out), "--workers", "0", "--no-progress", "--json",
                 "--recheck-windows", "2", "--finetune"]) == 0
    return out, load_finetune(out, spec.spec_hash)["designs"]


def test_a_tiny_finetune_is_saved_with_its_chip_and_scored_on_paired_tokens(study, reference):
    _, spec, df = study
    out, rows = reference
    assert [r["trial"] for r in rows] == finetune_candidates(df, spec)[:1] and len(rows) == 1
    r = rows[0]
    folder = out / "finetune" / str(r["trial"])
    ckpt = json.loads((folder / "checkpoint" / "config.json").read_text())
    assert r["checkpoint_model_sha256"] == _sha(folder / "checkpoint" / "model.safetensors")
    assert r["chip_sha256"] == _sha(folder / "chip.json") == ckpt["finetune"]["chip_sha256"]
    design = df.set_index("trial").loc[r["trial"], "config_json"]
    assert json.loads((folder / "chip.json").read_text()) == json.loads(design)  # the chip it was trained for
    assert ckpt["step"] == 6 and ckpt["transform"]["mode"] == "fresh" and not (folder / "checkpoint" /
                                                                               "optimizer.safetensors").exists()
    assert not list(folder.glob("step-*")) and not list(out.rglob("*.tmp"))
    assert r["n_tokens"] == 32 and r["split"] == "test"
    # "before" is the rescoring's own figure, to the bit (same chip, tokens, noise seed and thread count)
    rc = pd.read_parquet(out / "recheck.parquet").set_index("trial").loc[r["trial"]]
    assert (r["bpc_loss_before"], r["bpc_loss_before_se"]) == (rc["recheck_bpc_loss"], rc["recheck_bpc_loss_se"])
    # the figures add up: after - before is the paired chip change, each with a finite standard error
    assert math.isclose(r["bpc_loss_after"] - r["bpc_loss_before"], r["bpc_change"], abs_tol=1e-12)
    assert all(math.isfinite(r[k]) and r[k] > 0 for k in ("bpc_loss_before_se", "bpc_loss_after_se",
                                                          "bpc_change_se"))
    assert r["checkpoint_model_sha256"] != ckpt["init_sha256"]  # it trained
    ft = load_finetune(out, spec.spec_hash)
    assert f"trial {r['trial']}'s BPC loss" in ft["text"] and f"{r['bpc_loss_after']:+.3f}" in ft["text"]
    report = json.loads((out / "report.json").read_text())
    assert report["text"].endswith(ft["text"]) and report["finetune"] == rows
    assert load_finetune(out, "another-study") is None


def test_killed_mid_finetune_then_resumed_gives_the_uninterrupted_weights(study, reference):
    root, spec, df = study
    ref_out, ref_rows = reference
    out = root / "killed"
    shutil.copytree(root / "study", out)
    # the fine-tune alone (the study, its rescoring and plots are the design kill tests'), killed at its own states
    cmd = [sys.executable, "-c", "import sys; from mapping.design import load_design_spec, load_trials; "
           "from mapping.design.finetune import finetune_front; "
           "finetune_front(load_design_spec(sys.argv[1]), sys.argv[2], load_trials(sys.argv[2]), windows=2)",
           str(root / "spec.toml"), str(out)]
    t = ref_rows[0]["trial"]
    run_killed_at(cmd, {KILL_ENV: "finetune_step:3"})  # after step 3: step 2 committed
    assert [p.name for p in (out / "finetune" / str(t)).glob("step-*")] == ["step-000002"]
    run_killed_at(cmd, {KILL_ENV: "finetune_saving:1"})  # resumed at 2, killed inside the commit of step 4
    assert (out / "finetune" / str(t) / "step-000004.tmp").is_dir()
    rows = finetune_front(spec, out, df, windows=2)  # the same work, resumed in this process
    assert rows[0]["checkpoint_model_sha256"] == ref_rows[0]["checkpoint_model_sha256"]
    assert {k: v for k, v in rows[0].items() if k != "checkpoint"} == \
        {k: v for k, v in ref_rows[0].items() if k != "checkpoint"}
    assert not list(out.rglob("*.tmp")) and not list((out / "finetune" / str(t)).glob("step-*"))


def test_a_folder_of_another_finetune_is_refused(study, reference, tmp_path):
    import dataclasses

    from mapping.design.driver import DesignDirError

    _, spec, df = study
    out = tmp_path / "d"
    shutil.copytree(reference[0], out)
    other = dataclasses.replace(spec, finetune=dataclasses.replace(spec.finetune, steps=7))
    with pytest.raises(DesignDirError, match="holds a fine-tune of other settings"):
        finetune_front(other, out, df, windows=2)


@pytest.mark.parametrize("line, message", [
    ("steps = 0", "finetune.steps must be an integer in [1, 1000000], got 0"),
    ("lr = -1e-3", "finetune.lr must be a number in (0, 1], got -0.001"),
    ("lr = true", "finetune.lr must be a number in (0, 1], got True"),
    ("batch_size = 2.5", "finetune.batch_size must be an integer in [1, 4096], got 2.5"),
    ("seq_len = 1", "finetune.seq_len must be an integer in [2, 1000000] or 'none'"),
    ("designs = 13", "finetune.designs must be an integer in [1, 12], got 13"),
    ("seed = -1", "finetune.seed must be an integer in [0, 4294967295], got -1"),
    ("phase_lr_scale = 0", "finetune.phase_lr_scale must be a number in (0, 1e+06], got 0"),
    ("epochs = 3", "[finetune] has unknown key(s) epochs; valid: designs, steps"),
])
def test_bad_finetune_values_are_refused_in_one_line(tmp_path, line, message):
    p = tmp_path / "s.toml"
    p.write_text(f"{BASE}[finetune]\n{line}\n")
    with pytest.raises(ValueError) as info:
        load_design_spec(p)
    text = str(info.value)
    assert message in text and "\n" not in text


def test_a_model_without_a_chip_surrogate_is_refused_before_the_study(tmp_path, capsys):
    from oscsim.cli import main

    p = tmp_path / "s.toml"
    p.write_text(BASE.replace('"kuramoto-tiny"', '"ssa1d-tiny"').replace("settle_cycles = 2.0", ""))
    assert main(["design", str(p), "--out", str(tmp_path / "d"), "--workers", "0", "--finetune"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--finetune trains through the chip's surrogate: hardware-aware training needs a Kuramoto chip" in err
    assert "\n" not in err
    assert not (tmp_path / "d").exists()
