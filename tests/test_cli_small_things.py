"""The small things of issue 34 (item 6): each fixed, each with its check."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from oscsim.cli import did_you_mean, main, plain_help


def _help(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--help"])
    assert exc.value.code == 0
    return capsys.readouterr().out


def test_oscsim_plot_of_a_design_folder_points_to_its_figures_and_the_command(tmp_path, capsys):
    d = tmp_path / "design"
    (d / "plots").mkdir(parents=True)
    (d / "design.json").write_text(json.dumps({"name": "design-small"}))
    assert main(["plot", str(d)]) == 2  # no figure yet
    assert "is a design folder (oscsim design)" in capsys.readouterr().out
    (d / "plots" / "bpc_loss_vs_energy.png").write_bytes(b"png")
    (d / "front.html").write_text("<html></html>")
    assert main(["plot", str(d)]) == 0
    out = capsys.readouterr().out
    assert "bpc_loss_vs_energy.png" in out and "front.html" in out and f"oscsim design SPEC --out {d}" in out
    assert "run `oscsim sweep" not in out


def test_a_sweep_folder_missing_still_says_to_run_a_sweep(tmp_path, capsys):
    assert main(["plot", str(tmp_path)]) == 2
    assert "oscsim sweep SPEC" in capsys.readouterr().err


def test_oscsim_sweep_of_a_design_spec_points_at_oscsim_design(tmp_path, capsys):
    assert main(["sweep", "examples/design-small.toml", "--out", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown key(s)" in err[0]
    assert "is a design spec" in err[0] and "`oscsim design examples/design-small.toml --out DIR`" in err[0]
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nfoo = 1\n')  # an unknown key of no design spec: no pointer
    assert main(["sweep", str(bad), "--out", str(tmp_path / "s")]) == 2
    assert "design spec" not in capsys.readouterr().err


@pytest.mark.parametrize("command, words", [
    (("device",), "The figures of one oscillator device"),
    (("compare",), "compare it with the closed form on the same input"),
    (("info",), "parameter count of a model family")])
def test_commands_have_a_description(capsys, command, words):
    assert words in " ".join(_help(capsys, *command).split())


def test_help_from_docstrings_is_plain_text(capsys):
    for argv in (("kuramoto-demo",), ("bench", "integrator"), ("bench", "chip")):
        out = _help(capsys, *argv)
        assert "``" not in out and ":func:" not in out, (argv, out[:400])
    assert "r = sqrt(1 − 2 γ_eff / K)" in _help(capsys, "kuramoto-demo")  # the formula's own line kept
    assert plain_help("``a`` and :func:`~mapping.run` and `b`\n.. note::\nend") == "a and mapping.run and b\nend"


def test_info_model_lists_its_choices(capsys):
    out = " ".join(_help(capsys, "info").split())
    assert "one of kuramoto, ssa, ssa1d, transformer" in out and "one of tiny, 1m, 5m" in out
    assert main(["info", "--model", "kuramto"]) == 2
    assert "unknown model 'kuramto'" in capsys.readouterr().err


def test_a_misspelt_bundle_name_gets_did_you_mean(capsys):
    assert main(["simulate", "kuramoto-tny"]) == 2
    assert "did you mean 'kuramoto-tiny'" in capsys.readouterr().err
    assert main(["eval", "transformer-tny"]) == 2
    assert "did you mean 'transformer-tiny'" in capsys.readouterr().err
    assert did_you_mean("zzzz", ["kuramoto-tiny"]) == ""


def test_the_sweep_ends_with_a_summary_line():
    from mapping.sweep.cli import summary_line

    st = {"name": "sweep-small", "done": 3, "failed": 1, "remaining": 0, "n_points": 4}
    table = pd.DataFrame({"point_id": ["a", "b", "c", "d"], "status": ["ok", "ok", "ok", "failed"],
                          "coupling.bits": [4, 6, 8, 8], "readout.noise_rad": [0.002, 0.002, 0.02, 0.02],
                          "bpc_difference": [0.2, 0.05, 0.4, None],
                          "energy_chip_j_per_token": [4.0e-7, 4.2e-7, 4.4e-7, None]})
    line = summary_line(st, table, ("coupling.bits", "readout.noise_rad"), 12.34, "DIR/results.parquet")
    assert line == ("sweep sweep-small: 3 done, 1 failed, 0 remaining of 4 in 12.3 s; BPC loss +0.0500 .. +0.4000, "
                    "lowest at b (coupling.bits = 6, readout.noise_rad = 0.002); chip energy 400 nJ .. 440 nJ per "
                    "token; table DIR/results.parquet")
