"""Long work shows progress (issue 23 item 3): chip inference counts windows x layers (a default run is one
batch, so a bar over batches sat at 0/1 with no ETA), and `oscsim plot` counts its figures; both bars go to
stderr, on a terminal only by default."""

from __future__ import annotations

import pytest


class _Recorder:
    """Stands in for a tqdm bar: records its total and its updates."""

    def __init__(self, total, enabled, *a, **k):
        self.total, self.enabled, self.n, self.closed = total, enabled, 0, False

    def update(self, n=1):
        self.n += n

    def close(self):
        self.closed = True


def test_chip_inference_bar_counts_windows_times_layers(monkeypatch):
    import mapping.simulation.inference as inference
    from mapping import ChipConfig, compile, run
    from mapping.cli.common import validation_tokens

    bars = []
    monkeypatch.setattr(inference, "_progress", lambda *a, **k: bars.append(_Recorder(*a, **k)) or bars[-1])
    chip = compile("kuramoto-tiny", ChipConfig().idealised())
    x, _ = validation_tokens(chip.model_info["config"], 3 * 128)
    run(chip, x[:, :12], progress=True, batch_size=2)  # two batches: 2 + 1 windows
    (bar,) = bars
    assert bar.enabled is True and bar.total == 3 * len(chip.layers) == bar.n and bar.closed


def test_plot_bar_counts_the_figures(monkeypatch, tmp_path):
    import mapping.sweep.plot as plot
    from test_plots_layout import _sweep_folder  # a sweep folder as `oscsim sweep` writes it

    bars = []
    monkeypatch.setattr(plot, "_bar", lambda *a: bars.append(_Recorder(*a)) or bars[-1])
    written = plot.plot_sweep(_sweep_folder(tmp_path / "sweep"), tmp_path / "plots", formats=("png",),
                              progress=True)
    (bar,) = bars
    assert bar.enabled is True and bar.total == len(written) == bar.n and bar.closed


@pytest.mark.parametrize("argv", [["plot", "DIR", "--no-progress"], ["sweep", "--status", "DIR", "--no-progress"]])
def test_the_long_commands_take_no_progress(argv):
    from oscsim.cli import build_parser

    args = build_parser(argv).parse_args(argv)
    assert args.no_progress is True


@pytest.mark.parametrize("extra, want", [([], None), (["--no-progress"], False)])
def test_sweep_bar_follows_the_terminal_unless_switched_off(extra, want, monkeypatch, tmp_path):
    """`oscsim sweep` leaves the bar to run_sweep's terminal check (it forced one into pipes and logs)."""
    import mapping.sweep.run as run
    from oscsim.cli import main

    seen = []

    def fake(spec, out, **kw):
        seen.append(kw["progress"])
        raise ValueError("stop here")

    monkeypatch.setattr(run, "run_sweep", fake)
    assert main(["sweep", "examples/sweep-small.toml", "--out", str(tmp_path / "s"), *extra]) == 2
    assert seen == [want]
