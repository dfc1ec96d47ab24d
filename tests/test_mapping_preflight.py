"""Every number is checked before the work (issue 23 item 4): token counts, checkpoints and sweep specs are
refused from their files alone, before torch, the model or the chip loads, with the limit named."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from mapping.preflight import max_windows, model_config, split_bytes, token_windows


@pytest.mark.parametrize("split", ["train", "valid", "test"])
def test_split_bytes_from_the_index_are_the_corpus_split(split):
    from oscsim.data import eval_windows, load_shakespeare

    data = load_shakespeare().split(split)
    assert split_bytes(split) == len(data)
    assert max_windows(128, split) == eval_windows(data, 128)[0].shape[0]


@pytest.mark.parametrize("name", ["kuramoto-tiny", "ssa1d-tiny"])
def test_model_config_of_a_checkpoint_and_of_its_chip_file(name, tmp_path):
    from mapping import ChipConfig, compile
    from oscsim.train.checkpoint import CONFIG_FILE, read_config, resolve_checkpoint

    from mapping import preflight

    assert preflight._CHECKPOINT_CONFIG == CONFIG_FILE
    folder = resolve_checkpoint(name)
    assert model_config(name) == read_config(folder)["config"] == model_config(str(folder))
    chip = compile(name, ChipConfig().idealised())
    path = chip.save(tmp_path / "chip.json")
    assert model_config(str(path)) == read_config(folder)["config"]


def test_token_windows_refuses_beyond_the_split_naming_the_maximum_and_says_when_it_rounds():
    cap = max_windows(128, "valid")
    with pytest.raises(ValueError, match=rf"--tokens 1000000000 is more than the valid split holds: at most "
                                         rf"{cap * 128} tokens \({cap} windows of 128\)"):
        token_windows(1_000_000_000, 128, "valid")
    assert token_windows(cap * 128, 128, "valid") == cap
    with pytest.raises(ValueError, match=r"--tokens must be >= 128"):
        token_windows(100, 128)
    note = io.StringIO()
    assert token_windows(200, 128, note=note) == 1
    assert "--tokens 200 is not a whole number of windows of 128: scoring 128 tokens (1 window of 128)" in \
        note.getvalue()
    note = io.StringIO()
    assert token_windows(2048, 128, note=note) == 16 and note.getvalue() == ""


def _oscsim(*argv):
    """Run `oscsim argv` in a fresh interpreter; returns (status, stderr, modules imported by then)."""
    code = ("import sys, json\nfrom oscsim.cli import main\nrc = main(sys.argv[1:])\n"
            "print(json.dumps([rc, sorted(m for m in ('torch', 'numba', 'mapping.compiler', 'mapping.simulation') "
            "if m in sys.modules)]))")
    p = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=600)
    rc, heavy = json.loads(p.stdout.strip().splitlines()[-1])
    return rc, p.stderr, heavy


def test_simulate_refuses_a_billion_tokens_before_anything_heavy_loads():
    """The refusal comes from the JSON files alone: torch, Numba, the compiler and the simulation are never
    imported (they take seconds; the check takes milliseconds), so it answers at once."""
    rc, err, heavy = _oscsim("simulate", "--tokens", "1000000000")
    cap = max_windows(128, "valid")
    assert rc == 2 and f"at most {cap * 128} tokens ({cap} windows of 128)" in err
    assert heavy == []


@pytest.mark.parametrize("command", ["simulate", "compile", "compare", "export-spice"])
def test_a_toml_as_ckpt_gets_a_hint_to_use_config(command, tmp_path):
    argv = [command, "examples/chip.toml"] + {"compile": ["--out", str(tmp_path / "c.json")],
                                              "export-spice": ["--out", str(tmp_path / "h.cir")]}.get(command, [])
    rc, err, heavy = _oscsim(*argv)
    assert rc == 2 and "is a TOML file, i.e. a chip configuration: pass it as --config examples/chip.toml" in err
    assert "torch" not in heavy


def test_a_misspelt_checkpoint_lists_the_bundled_names_and_a_transformer_is_refused(capsys):
    from oscsim.cli import main

    assert main(["simulate", "kuramoto-tny"]) == 2
    err = capsys.readouterr().err
    assert "checkpoint 'kuramoto-tny' not found" in err and "kuramoto-tiny, kuramoto-tiny-hwa" in err
    assert main(["simulate", "transformer-tiny"]) == 2
    assert "is a transformer model: chips run Kuramoto attention or SSA" in capsys.readouterr().err
    assert main(["simulate", "missing-chip.json"]) == 2
    assert "chip file 'missing-chip.json' not found" in capsys.readouterr().err


SPEC = """
name = "preflight"
checkpoint = "{ckpt}"
[tokens]
windows = {windows}
seq_len = {seq_len}
[axes]
"readout.noise_rad" = {{ values = [0.0, 0.1] }}
"""


@pytest.mark.parametrize("ckpt, windows, seq_len, match", [
    ("kuramoto-tny", 2, 64, r"checkpoint: checkpoint 'kuramoto-tny' not found: neither a bundled name"),
    ("kuramoto-tiny", 2, 4096, r"tokens.seq_len = 4096 is longer than the chip's context \(128: context_tokens, "
                                r"or the model's seq_len\); at most 128"),
    ("kuramoto-tiny", 90000, 64, r"tokens.windows = 90000: the valid split holds only \d+ windows of 64"),
    ("transformer-tiny", 2, 64, r"checkpoint: checkpoint 'transformer-tiny' is a transformer model"),
])
def test_a_sweep_that_would_fail_every_point_is_refused_before_any_point(ckpt, windows, seq_len, match, tmp_path,
                                                                          capsys):
    from mapping.sweep import check_inputs, run_sweep, spec_from_dict
    from oscsim.cli import main

    try:
        import tomllib
    except ImportError:  # pragma: no cover
        import tomli as tomllib
    text = SPEC.format(ckpt=ckpt, windows=windows, seq_len=seq_len)
    spec = spec_from_dict(tomllib.loads(text))
    with pytest.raises((ValueError, FileNotFoundError), match=match):
        check_inputs(spec)
    with pytest.raises((ValueError, FileNotFoundError), match=match):
        run_sweep(spec, tmp_path / "out", workers=0, progress=False)
    assert not (tmp_path / "out").exists()  # refused before the folder, let alone a point
    (tmp_path / "spec.toml").write_text(text)
    assert main(["sweep", str(tmp_path / "spec.toml"), "--out", str(tmp_path / "cli")]) == 2
    assert "2 points (" not in capsys.readouterr().err and not (tmp_path / "cli").exists()


def test_a_valid_sweep_passes_the_check():
    from mapping.sweep import check_inputs, spec_from_dict

    check_inputs(spec_from_dict({"checkpoint": "kuramoto-tiny", "tokens": {"windows": 3, "seq_len": 24},
                                 "axes": {"readout.noise_rad": {"values": [0.0, 0.1]}}}))


def test_chip_commands_list_every_bundled_chip_checkpoint(capsys):
    """Issue 23 item 7: the help of compile/simulate/compare names every bundled checkpoint a chip runs (it named
    2 of them), read from the bundles."""
    from mapping.preflight import chip_checkpoints
    from oscsim.cli import main
    from oscsim.train.checkpoint import bundled_checkpoints

    names = chip_checkpoints()
    assert names == [n for n in bundled_checkpoints() if not n.startswith("transformer")] and len(names) >= 4
    for command in ("compile", "simulate", "compare"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert ", ".join(names) in text, command
