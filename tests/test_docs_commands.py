"""Docs that match the code (issue 23 item 7): every `oscsim ...` command written in README.md and docs/ parses
with today's options, the chip file format is stated once and is the code's, the hardware-aware recipe is the
one the bundled fine-tunes recorded, and every `chip.<attribute>` the docs name exists."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").glob("*.md"))]
# placeholders the docs write for a value of the reader's choice -> a value the parser takes
PLACEHOLDERS = {"SPEC": "examples/sweep-small.toml", "DIR": "results/x", "CKPT": "kuramoto-tiny", "S": "2",
                "TOML": "examples/chip.toml", "HOST": "host", "N": "4", "RUN_DIR": "runs/x", "L": "0", "H": "0",
                "T": "16", "X": "0.25"}


def _commands():
    """(page, command line) of every `oscsim SUBCOMMAND ARGS...` in a code span or a shell block."""
    out = []
    for page in PAGES:
        text = page.read_text()
        lines = [m.group(1) for m in re.finditer(r"`([^`\n]*\boscsim [a-z][^`\n]*)`", text)]
        for block in text.split("```")[1::2]:  # inside the fences; the first line names the language
            if block.split("\n", 1)[0].strip() not in ("", "bash", "sh", "console"):
                continue
            lines += [ln for ln in block.split("\n", 1)[-1].replace("\\\n", " ").splitlines()
                      if re.search(r"(^|\s|/)oscsim [a-z]", ln) and not ln.lstrip().startswith("#")]
        for ln in lines:
            cmd = re.search(r"(?:\.venv/bin/)?\boscsim (.*)", ln).group(1)
            cmd = re.sub(r"\[[^\]]*\]", " ", cmd)  # optional parts written [--run], [CKPT|chip.json]
            cmd = re.split(r"\s#\s|\s+#|\||&&|;|\s&\s*$|\s\d?>", cmd)[0]  # comments, pipes, lists, &, redirects
            out.append((page.name, cmd.strip()))
    return out


COMMANDS = [c for c in _commands() if len(c[1].split()) > 1]  # a bare name in prose ("`oscsim compare`") is prose


def test_the_pages_hold_commands():
    assert len(COMMANDS) >= 30


@pytest.mark.parametrize("page, command", COMMANDS, ids=[f"{p}:{c[:60]}" for p, c in COMMANDS])
def test_every_documented_command_parses(page, command):
    from oscsim.cli import build_parser

    argv = [PLACEHOLDERS.get(a, a) for a in shlex.split(command)]
    if argv[1].startswith("--") and not any(a in ("--out", "--model") for a in argv):
        # prose naming an option ("`oscsim compare --levels`"): the option exists on that command
        sub = next(a for a in build_parser(argv[:1])._actions if a.dest == "command").choices[argv[0]]
        options = {o for a in sub._actions for o in a.option_strings}
        missing = [a for a in argv[1:] if a.startswith("--") and a not in options]
        assert not missing, f"{page}: `oscsim {command}` names options {missing} that `oscsim {argv[0]}` lacks"
        return
    try:
        build_parser(argv).parse_args(argv)
    except SystemExit as exc:
        pytest.fail(f"{page}: `oscsim {command}` does not parse (status {exc.code})")


def test_the_chip_file_format_is_stated_once_and_is_the_codes():
    """The version lives in mapping.chip.FORMAT; the docs state it in one place (docs/mapping.md), so a new
    version is one edit there."""
    from mapping.chip import FORMAT

    stated = [(p.name, m) for p in PAGES for m in re.findall(r"oscsim-chip/\d+", p.read_text())]
    assert stated == [("mapping.md", FORMAT)], stated


def _flags(command: str) -> dict:
    argv = shlex.split(command)
    out, i = {}, argv.index("train") + 1
    while i < len(argv):
        if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            out[argv[i]] = argv[i + 1]
            i += 2
        else:
            out[argv[i]] = True
            i += 1
    out.pop("--out", None)
    return out


@pytest.mark.parametrize("bundle, chip", [("kuramoto-tiny-hwa", "examples/chip.toml"),
                                          ("kuramoto-tiny-hwa-x10", "examples/chip-noisy.toml")])
def test_the_hwa_recipe_in_the_docs_is_the_bundled_fine_tune(bundle, chip):
    import json

    from oscsim.train.checkpoint import CONFIG_FILE, resolve_checkpoint

    recorded = json.loads((resolve_checkpoint(bundle) / CONFIG_FILE).read_text())["command"]
    want = _flags(recorded)
    assert want["--chip"] == chip and want["--init"] == "kuramoto-tiny"
    documented = [c for p, c in COMMANDS if c.startswith("train") and "--init kuramoto-tiny" in c
                  and f"--chip {chip}" in c and "--calibrate" not in c]
    assert documented, f"no documented fine-tune with --chip {chip}"
    for c in documented:
        got = _flags("oscsim " + c)
        for k in ("--steps", "--batch-size", "--lr"):  # the recipe's numbers (seed, threads: defaults or free)
            assert k in got and float(got[k]) == float(want[k]), (c, k, want[k])


def test_every_chip_attribute_the_docs_name_exists():
    from mapping import ChipConfig, compile

    chip = compile("kuramoto-tiny", ChipConfig().idealised())
    named = {m for p in PAGES for m in re.findall(r"`[^`]*?\bchip\.([a-z_][a-z_0-9]*(?:\.[a-z_]+)*)", p.read_text())}
    named -= {"json", "toml", "py"}  # file names
    for dotted in sorted(named):
        obj = chip
        for part in dotted.split("."):
            assert hasattr(obj, part), f"the docs name chip.{dotted}, which does not exist"
            obj = getattr(obj, part)
    assert chip.max_tokens == chip.layers[0].max_tokens == chip.model_info["config"]["seq_len"]


@pytest.mark.slow
def test_the_readme_demo_excerpt_is_what_make_demo_prints(capsys):
    """Every line of the README's `oscsim simulate` excerpt (but its "...") is a line of the real output: the
    figures cannot drift (issue 23 item 7: they had drifted by 0.0002)."""
    from oscsim.cli import main

    text = (ROOT / "README.md").read_text()
    block = next(b for b in text.split("```")[1::2] if "BPC closed form" in b)  # inside the fences
    lines = [ln.rstrip() for ln in block.splitlines()[1:] if ln.strip() and ln.strip() != "..."]
    assert main(["simulate"]) == 0
    out = capsys.readouterr().out.splitlines()
    missing = [ln for ln in lines if ln not in out]
    assert not missing, "README lines not in the output:\n" + "\n".join(missing)
