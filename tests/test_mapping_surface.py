"""What a newcomer sees first: the example config's comments, the simulate header, the bench's stderr, the
notebook's run instruction (issue 15 item 4)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_example_chip_toml_is_the_default_config_and_its_comments_match_the_presets():
    from mapping.config import ChipConfig, load_config
    from mapping.compiler.device import chip_device

    assert load_config(ROOT / "examples" / "chip.toml") == ChipConfig()
    text = (ROOT / "examples" / "chip.toml").read_text()
    ring, stno = chip_device("ring-macromodel"), chip_device("spin-torque")
    assert float(re.search(r"([\d.]+) GHz ring", text).group(1)) * 1e9 == pytest.approx(ring.f0_hz, rel=0.01)
    assert float(re.search(r"([\d.]+) MHz STNO", text).group(1)) * 1e6 == pytest.approx(stno.f0_hz, rel=0.01)
    spread = re.search(r"spread \(preset: ([\d.]+) % ring, ([\d.]+) % STNO", text)
    assert float(spread.group(1)) / 100 == pytest.approx(ring.freq_spread_rel, abs=0.0006)
    assert float(spread.group(2)) / 100 == pytest.approx(stno.freq_spread_rel, abs=0.0006)
    coup = float(re.search(r"the device's coupler \(([\d.]+) % ring", text).group(1)) / 100
    assert coup == pytest.approx(ring.coupler_spread_rel(True), abs=0.0006)
    assert stno.coupler_spread_rel(True) == 0.0 and "0 for the STNO's" in text
    kt = float(re.search(r"kappa\*tau_s = 2\*pi\*fraction\*cycles = ([\d.]+) rad", text).group(1))
    assert kt == pytest.approx(ChipConfig().kappa_tau, abs=0.001)


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("chip*.toml")), ids=lambda p: p.name)
def test_every_example_chip_toml_loads_and_quotes_the_preset_frequencies(path):
    from mapping.config import load_config
    from mapping.compiler.device import chip_device

    cfg = load_config(path)
    text = path.read_text()
    for pattern, device, unit in ((r"([\d.]+) GHz ring", "ring-macromodel", 1e9), (r"([\d.]+) MHz STNO", "spin-torque", 1e6)):
        for quoted in re.findall(pattern, text):
            assert float(quoted) * unit == pytest.approx(chip_device(device).f0_hz, rel=0.01), (path.name, quoted)
    for quoted in re.findall(r"kappa\*tau_s = 2\*pi\*fraction\*cycles = ([\d.]+) rad", text):
        assert float(quoted) == pytest.approx(cfg.kappa_tau, abs=0.005), (path.name, quoted)


def test_kappa_tau_is_shown_only_for_kuramoto_chips(capsys):
    from mapping import ChipConfig, compile, load_model
    from mapping.cli.common import validation_tokens as _validation_tokens
    from mapping.cli.simulate import print_report
    from mapping.simulation.report import simulate_report

    for name, shown in (("kuramoto-tiny", True), ("ssa1d-tiny", False)):
        model, _ = load_model(name)
        chip = compile(model, ChipConfig(), checkpoint=name)
        assert ("kappa*tau_s" in chip.summary()) is shown
        x, y = _validation_tokens(model.config.to_dict(), model.config.seq_len)
        rep = simulate_report(chip, x[:1, :32], y[:1, :32], progress=False)  # one short window
        assert (rep.kappa_tau is not None) is shown and rep.chip_kind == chip.kind
        print_report(rep)
        assert ("kappa*tau_s" in capsys.readouterr().out) is shown


def test_bench_attention_json_progress_on_stderr_without_profiler_lines(capfd):
    from oscsim.cli import main

    rc = main(["bench", "attention", "--json", "--lengths", "32", "--cases", "sdpa", "--d-model", "16",
               "--heads", "2", "--repeats", "1", "--threads", "1"])
    out, err = capfd.readouterr()
    assert rc == 0
    assert json.loads(out)["benchmark"] == "attention"
    assert "bench attention: [1/1] N=32 sdpa" in err
    assert "profiler_start" not in err and "profiler_stop" not in err and "Completed Stage" not in err


def test_profiler_log_filter_keeps_other_stderr_lines(capfd):
    import os

    from oscsim.bench.attention import _without_profiler_log

    with _without_profiler_log():
        os.write(2, b"USDT:2026-12-01 08:59:16 17451:17451 SyncActivityProfilerHandler.cpp:52] profiler_start\n")
        os.write(2, b"a real warning\n")
    assert capfd.readouterr().err == "a real warning\n"


def test_notebook_run_instruction_names_an_installed_runner():
    nb = json.loads((ROOT / "notebooks" / "quickstart.ipynb").read_text())
    first = "".join(nb["cells"][0]["source"])
    cmd = re.search(r"`(\.venv/bin/python -m pytest --nbmake notebooks/quickstart\.ipynb)`", first)
    assert cmd, "the notebook's run instruction changed: keep it a command that works in .venv"
    pytest.importorskip("nbmake")


def _nested_keys(d: dict) -> set[str]:
    out = set()
    for k, v in d.items():
        out.add(k)
        if isinstance(v, dict):
            out |= _nested_keys(v)
    return out


def _simulate_report_keys() -> set[str]:
    """The keys `SimulationReport.to_dict` puts into the report of `oscsim simulate --json` (read with `ast`)."""
    import ast

    tree = ast.parse((ROOT / "mapping" / "simulation" / "report.py").read_text())
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "to_dict")
    keys = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Dict):
            keys |= {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and isinstance(node.slice, ast.Constant):
            keys.add(node.slice.value)
    return keys


def test_docs_mapping_documents_every_key_of_energy_report_and_simulate_json():
    from mapping import ChipConfig, compile, energy_report, load_model

    doc = (ROOT / "docs" / "mapping.md").read_text()
    keys = _simulate_report_keys()
    assert {"bpc_chip", "energy_per_token_chip_j", "fidelity", "kappa_tau"} <= keys
    for name in ("kuramoto-tiny", "ssa1d-tiny"):
        model, _ = load_model(name)
        keys |= _nested_keys(energy_report(compile(model, ChipConfig(), checkpoint=name)))
    missing = sorted(k for k in keys if f"`{k}`" not in doc)
    assert missing == [], f"docs/mapping.md does not document: {missing}"


def test_report_wording_one_window_and_an_ideal_chip(capsys):
    """Issue 23 item 8: "1 windows" and "a ideal chip" read as "1 window" and "an ideal chip"."""
    from mapping import ChipConfig, compile
    from mapping.cli.common import validation_tokens
    from mapping.cli.simulate import print_report
    from mapping.simulation.report import simulate_report

    chip = compile("kuramoto-tiny", ChipConfig().idealised())
    x, y = validation_tokens(chip.model_info["config"], 128)
    print_report(simulate_report(chip, x[:1, :16], y[:1, :16], progress=False))
    out = capsys.readouterr().out
    assert "on an ideal chip (ideal)" in out and "(1 window of 16)" in out, out


def test_compare_json_needs_no_plot_folder(capsys):
    """Issue 23 item 8: `oscsim compare --json` runs without --plot (and draws nothing)."""
    import json

    from oscsim.cli import main

    assert main(["compare", "kuramoto-tiny", "--ideal", "--seq-len", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tokens"] == 8 and "increment_rel_error" in out and "plots" not in out
