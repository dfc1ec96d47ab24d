"""Phases on the torus (issue 21 item 1): phase-valued parameters get their own AdamW group (scaled learning rate,
no weight decay), the choice is recorded in the checkpoint, old checkpoints still load and resume; the train
CLI's fine-tuning default, progress lines and the eval help's list of bundles (issue 23 items 3 and 7)."""

import json

import pytest
import torch

from oscsim.cli import main
from oscsim.nn import build_model, model_config
from oscsim.train import TrainConfig, bundled_checkpoints, load_checkpoint, lr_at, train
from oscsim.train.loop import DEFAULT_PHASE_LR_SCALE, FINETUNE_LR, param_groups, phase_parameter_names

SMALL = {"kuramoto": dict(k=16, n_heads=2, n_layers=1, ffn_hidden=16, seq_len=32),
         "transformer": dict(d_model=16, n_heads=2, n_layers=1, ffn_hidden=24, seq_len=32),
         "ssa": dict(d_model=16, n_heads=2, n_layers=1, seq_len=32)}
CFG = TrainConfig(steps=6, batch_size=4, lr=1e-2, warmup=2, eval_every=3, eval_windows=2, final_eval_windows=2,
                  seed=3)
SMALL_ARGS = ["--set", "k=16", "--set", "n_heads=2", "--set", "n_layers=1", "--set", "ffn_hidden=16",
              "--set", "seq_len=32"]


def _groups(model, cfg):
    net = build_model(model_config(model, "tiny", **SMALL[model]))
    ids = {id(p): n for n, p in net.named_parameters()}
    return {g["name"]: (sorted(ids[id(p)] for p in g["params"]), g["weight_decay"], g["lr_scale"])
            for g in param_groups(net, cfg)}


def test_phase_group_holds_the_phases_without_weight_decay():
    groups = _groups("kuramoto", TrainConfig())
    names, wd, scale = groups["phases"]
    assert names == ["embed", "psi"] and wd == 0.0 and scale == DEFAULT_PHASE_LR_SCALE
    assert "embed" not in groups["decay"][0] and "psi" not in groups["decay"][0]
    assert groups["decay"][1] == TrainConfig().weight_decay > 0
    # every trainable parameter is in exactly one group
    net = build_model(model_config("kuramoto", "tiny", **SMALL["kuramoto"]))
    assert sorted(n for g in groups.values() for n in g[0]) == sorted(n for n, _ in net.named_parameters())
    # the models without phase parameters have no phase group
    for model in ("transformer", "ssa"):
        assert "phases" not in _groups(model, TrainConfig())
        assert phase_parameter_names(build_model(model_config(model, "tiny", **SMALL[model]))) == []


def test_no_phase_groups_is_the_old_optimizer():
    groups = _groups("kuramoto", TrainConfig(phase_lr_scale=None))
    assert "phases" not in groups
    assert {"embed", "psi"} <= set(groups["decay"][0])  # the old behaviour: phases decayed toward 0 rad


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf"), float("nan"), True, "30"])
def test_phase_lr_scale_is_validated(bad):
    with pytest.raises(ValueError, match="phase_lr_scale"):
        TrainConfig(phase_lr_scale=bad)


def test_phase_group_runs_at_its_scaled_rate_and_is_recorded(tmp_path):
    meta = train("kuramoto", "tiny", tmp_path / "k", train_cfg=CFG, log=lambda m: None, progress=False,
                 **SMALL["kuramoto"])
    assert meta["train"]["phase_lr_scale"] == DEFAULT_PHASE_LR_SCALE
    groups = {g["name"]: g for g in meta["optimizer"]["param_groups"]}
    last = lr_at(CFG.steps - 1, CFG)
    assert groups["phases"]["lr"] == pytest.approx(last * DEFAULT_PHASE_LR_SCALE)
    assert groups["phases"]["weight_decay"] == 0.0
    assert groups["decay"]["lr"] == pytest.approx(last)


def test_old_checkpoints_load_and_resume_without_phase_groups(tmp_path):
    """A run written before phase groups (no phase_lr_scale in its JSON) loads, resumes only as the old
    optimiser (with a hint otherwise), and continues bit-identically to an uninterrupted old-optimiser run."""
    old = TrainConfig(**{**CFG.__dict__, "phase_lr_scale": None})
    kw = SMALL["kuramoto"]
    train("kuramoto", "tiny", tmp_path / "full", train_cfg=old, log=lambda m: None, progress=False, **kw)

    def stop(msg):
        if msg.startswith("step 3/"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train("kuramoto", "tiny", tmp_path / "part", train_cfg=old, log=stop, progress=False, **kw)
    cfg_file = tmp_path / "part" / "config.json"
    meta = json.loads(cfg_file.read_text())
    del meta["train"]["phase_lr_scale"]  # as a checkpoint of the previous version has it
    for g in meta["optimizer"]["param_groups"]:
        del g["name"], g["lr_scale"]
    cfg_file.write_text(json.dumps(meta))
    load_checkpoint(tmp_path / "part")
    with pytest.raises(ValueError, match="--no-phase-groups"):
        train("kuramoto", "tiny", tmp_path / "part", train_cfg=CFG, log=lambda m: None, progress=False, **kw)
    train("kuramoto", "tiny", tmp_path / "part", train_cfg=old, log=lambda m: None, progress=False, **kw)
    a, _ = load_checkpoint(tmp_path / "full")
    b, _ = load_checkpoint(tmp_path / "part")
    for (n, p), q in zip(a.state_dict().items(), b.state_dict().values()):
        torch.testing.assert_close(p, q, atol=0, rtol=0, msg=n)


def test_cli_fine_tune_defaults_to_the_fine_tuning_rate(tmp_path, capsys):
    base = tmp_path / "base"
    common = ["train", "--model", "kuramoto", "--steps", "2", "--batch-size", "2", "--final-eval-windows", "1",
              "--threads", "1", "--json", *SMALL_ARGS]
    assert main([*common, "--out", str(base)]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["lr"] == TrainConfig().lr and res["phase_lr_scale"] == DEFAULT_PHASE_LR_SCALE
    assert main([*common, "--init", str(base), "--out", str(tmp_path / "ft")]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["lr"] == FINETUNE_LR
    assert json.loads((tmp_path / "ft" / "config.json").read_text())["train"]["lr"] == FINETUNE_LR
    assert main([*common, "--init", str(base), "--lr", "1e-3", "--no-phase-groups",
                 "--out", str(tmp_path / "ft2")]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["lr"] == 1e-3 and res["phase_lr_scale"] is None
    out = _help(["train", "--help"], capsys)
    assert f"{FINETUNE_LR:g}" in out and "--init" in out


def test_cli_train_progress_lines(tmp_path, capsys):
    common = ["train", "--model", "kuramoto", "--steps", "4", "--batch-size", "2", "--eval-every", "2",
              "--final-eval-windows", "1", "--threads", "1", *SMALL_ARGS]
    # stderr is not a terminal under pytest: quiet, unless --progress
    assert main([*common, "--out", str(tmp_path / "a")]) == 0
    cap = capsys.readouterr()
    assert "step " not in cap.err and "val_bpc" in cap.out
    assert main([*common, "--progress", "--out", str(tmp_path / "b")]) == 0
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("step ")]
    assert len(lines) == 2
    assert lines[0].startswith("step 2/4 tokens 128 ") and "train_bpc" in lines[0] and "val_bpc~" in lines[0]
    assert "elapsed 0:" in lines[0] and " eta 0:" in lines[0]
    assert main([*common, "--progress", "--json", "--out", str(tmp_path / "c")]) == 0
    cap = capsys.readouterr()
    assert cap.err == "" and json.loads(cap.out)["steps"] == 4


def _help(argv, capsys):
    with pytest.raises(SystemExit):
        main(argv)
    return capsys.readouterr().out


def test_eval_help_lists_every_bundle(capsys):
    out = " ".join(_help(["eval", "--help"], capsys).split())
    for name in bundled_checkpoints():
        assert name in out, name


@pytest.mark.slow
def test_phase_groups_beat_the_old_recipe_in_200_steps(tmp_path):
    """The fixed recipe (phase groups at the default scale) against the old one: the same seeded 200-step run
    of kuramoto-tiny (batch 8 x 128, peak lr 3e-3), validation BPC on the first 100 windows."""
    res = {}
    for name, scale in (("new", DEFAULT_PHASE_LR_SCALE), ("old", None)):
        cfg = TrainConfig(steps=200, batch_size=8, lr=3e-3, warmup=20, eval_every=200, eval_windows=1,
                          final_eval_windows=100, seed=0, phase_lr_scale=scale)
        res[name] = train("kuramoto", "tiny", tmp_path / name, train_cfg=cfg, log=lambda m: None,
                          progress=False)["metrics"]["val_bpc"]
    assert res["new"] < res["old"] - 0.1, res
