"""CLI and API validation (issue 10 item 7, issue 15): every hole gives one clear error naming the option and
its valid range, and every option of every subcommand has help text that states its default."""

import argparse
import re

import pytest
import torch

from oscsim.cli import _show_defaults, build_parser, main

# "(default: x)", "(default x)", "; default: x" -- not a value named 'default' ("ideal: default)")
_STATED_DEFAULT = re.compile(r"(?<![\w'])default(?=[: ])")


def _subparsers(parser, prefix=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield prefix + (name,), sub
                yield from _subparsers(sub, prefix + (name,))


_ALL = list(_subparsers(build_parser()))


def test_every_subcommand_is_discovered():
    names = {" ".join(p) for p, _ in _ALL}
    for cmd in ("train", "eval", "info", "kuramoto-demo", "device", "compile", "simulate", "compare",
                "bench integrator", "bench attention"):
        assert cmd in names, f"subcommand {cmd!r} missing (entry points not installed?)"


@pytest.mark.parametrize("path,sub", _ALL, ids=[" ".join(p) for p, _ in _ALL])
def test_every_option_has_help_with_its_default(path, sub):
    text = sub.format_help()
    assert "(unavailable" not in (sub.description or ""), f"{path} could not be loaded"
    for action in sub._actions:
        if not action.option_strings or isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue
        opt = action.option_strings[-1]
        assert action.help and action.help.strip(), f"oscsim {' '.join(path)} {opt} has no help text"
        if action.required:
            continue
        rendered = sub._get_formatter()._expand_help(action)
        # the default is stated exactly once: "(default: x)" appended by oscsim.cli, or written in words
        stated = _STATED_DEFAULT.findall(rendered)
        assert len(stated) == 1, f"oscsim {' '.join(path)} {opt}: default stated {len(stated)} times: {rendered!r}"
        if "%(default)" in action.help:
            # argparse substitutes %(default)s: the rendered help names the actual default value
            assert str(action.default) in " ".join(text.split()), f"{path} {opt}: default {action.default!r} not shown"
        else:
            # words may only explain an absent value; a real default is substituted, so it cannot go stale
            assert action.default in (None, False), (
                f"oscsim {' '.join(path)} {opt}: default {action.default!r} written by hand; let %(default)s show it")


def test_a_default_written_by_hand_is_not_stated_twice():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", default="tiny", help="one of tiny, 1m (default tiny)")
    parser.add_argument("--config", help="a TOML (default: the ring preset)")
    _show_defaults(parser)
    helps = {a.dest: parser._get_formatter()._expand_help(a) for a in parser._actions if a.dest != "help"}
    assert helps["config"] == "a TOML (default: the ring preset)"
    assert len(_STATED_DEFAULT.findall(helps["size"])) == 1  # the hand-written one is kept, not doubled


def _error(capsys, argv):
    """Run the CLI; return (exit status, last stderr line)."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse refuses at parse time
        code = exc.code
    err = capsys.readouterr().err.strip().splitlines()
    return code, (err[-1] if err else "")


@pytest.mark.parametrize("argv,option,rng", [
    (["compare", "kuramoto-tiny", "--plot", "x", "--seq-len", "1"], "--seq-len", ">= 2"),
    (["compare", "kuramoto-tiny", "--plot", "x", "--seq-len", "-5"], "--seq-len", ">= 2"),
    (["compare", "kuramoto-tiny", "--plot", "x", "--layer", "-1"], "--layer", ">= 0"),
    (["simulate", "--tokens", "0"], "--tokens", ">= 1"),
    (["simulate", "--tokens", "-3"], "--tokens", ">= 1"),
    (["simulate", "--kappa-tau", "0"], "--kappa-tau", "> 0"),
    (["device", "ring", "--offset-hz", "-1"], "--offset-hz", "> 0"),
    (["device", "ring", "--offset-hz", "nan"], "--offset-hz", "> 0"),
    (["device", "ring", "--stages", "1"], "--stages", ">= 3"),
    (["kuramoto-demo", "--out", "x", "--n", "0"], "--n", ">= 2"),
    (["kuramoto-demo", "--out", "x", "--gamma", "0"], "--gamma", "> 0"),
    (["train", "--model", "kuramoto", "--out", "x", "--batch-size", "0"], "--batch-size", ">= 1"),
    (["train", "--model", "kuramoto", "--out", "x", "--steps", "-3"], "--steps", ">= 1"),
    (["eval", "kuramoto-tiny", "--max-windows", "0"], "--max-windows", ">= 1"),
    (["bench", "attention", "--heads", "0"], "--heads", ">= 1"),
])
def test_parse_time_holes(capsys, argv, option, rng):
    code, line = _error(capsys, argv)
    assert code == 2
    assert f"argument {option}" in line and rng in line, line


def test_compare_seq_len_above_the_chip_is_refused(capsys, tmp_path):
    code, line = _error(capsys, ["compare", "kuramoto-tiny", "--ideal", "--plot", str(tmp_path), "--seq-len", "500"])
    assert code == 2 and re.search(r"--seq-len must be in \[2, 128\]", line), line


def test_simulate_tokens_below_one_window_is_refused(capsys):
    code, line = _error(capsys, ["simulate", "--ideal", "--tokens", "5"])
    assert code == 2 and "--tokens must be >= 128" in line, line


def test_simulate_missing_chip_file_says_not_found(capsys, tmp_path):
    code, line = _error(capsys, ["simulate", str(tmp_path / "nope.json")])
    assert code == 2 and "not found" in line and "nope.json" in line, line
    code, line = _error(capsys, ["simulate", str(tmp_path / "nope")])
    assert code == 2 and "not found" in line, line


def test_train_data_without_a_file_corpus_is_refused(capsys, tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("hello " * 1000)
    code, line = _error(capsys, ["train", "--model", "kuramoto", "--steps", "1", "--out", str(tmp_path / "o"),
                                 "--data", str(f)])
    assert code == 2 and "--data" in line and "--corpus enwik8 or --corpus text" in line, line
    assert not (tmp_path / "o").exists()


def test_eval_data_on_a_shakespeare_checkpoint_is_refused(capsys, tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("hello " * 1000)
    code, line = _error(capsys, ["eval", "kuramoto-tiny", "--data", str(f), "--max-windows", "1"])
    assert code == 2 and "--data" in line and "shakespeare" in line, line


def test_short_corpus_message_names_no_missing_option(tmp_path):
    from oscsim.data import load_corpus

    f = tmp_path / "short.txt"
    f.write_text("abc " * 100)
    with pytest.raises(ValueError) as exc:
        load_corpus("text", f).check_length(128)
    # `oscsim train` has no --seq-len: the message must not advise one
    assert "--seq-len" not in str(exc.value) and "seq_len" in str(exc.value)


@pytest.fixture(scope="module")
def ideal_chip():
    from mapping import ChipConfig, compile

    return compile("kuramoto-tiny", ChipConfig().idealised())


@pytest.mark.parametrize("tokens,kw,match", [
    ([[-1, 5, 6]], {}, r"byte ids in \[0, 255\], got values in \[-1, 6\]"),
    ([[300, 5, 6]], {}, r"byte ids in \[0, 255\], got values in \[5, 300\]"),
    ([[1, 2, 3]], {"batch_size": 0}, r"batch_size must be None \(automatic\) or an integer >= 1, got 0"),
    ([[1, 2, 3]], {"batch_size": -3}, r"batch_size .* >= 1, got -3"),
    ([[1, 2, 3]], {"seed": -1}, r"seed must be a non-negative integer"),
    ([[1] * 129], {}, r"T must be in \[1, 128\]"),
    (torch.zeros((0, 4), dtype=torch.long), {}, r"at least one sequence"),
])
def test_api_run_refuses_bad_tokens_and_batch_sizes(ideal_chip, tokens, kw, match):
    from mapping import run

    with pytest.raises(ValueError, match=match):
        run(ideal_chip, torch.as_tensor(tokens), progress=False, **kw)


def test_simulate_node_outside_the_fits_is_refused_in_one_line(capsys, tmp_path):
    cfg = tmp_path / "chip3nm.toml"
    cfg.write_text("node_nm = 3\n")
    code, line = _error(capsys, ["simulate", "--config", str(cfg)])
    err_lines = [ln for ln in line.splitlines() if ln.strip()]
    assert code == 2 and len(err_lines) == 1, line
    assert "node_nm must be in [7, 180] nm" in line and "got 3" in line, line
