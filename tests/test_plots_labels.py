"""The figures of `make demo` (Kuramoto compare) and of `oscsim compare` on an SSA checkpoint are readable.

Reads the matplotlib figure objects as they are saved: every axis that shows data has an x and a y label
naming a unit in brackets (or an index), every colourbar has a label, and difference maps use a colour
scale centred on zero. Small runs: 32 tokens, short windows.
"""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import CenteredNorm  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

_UNIT = re.compile(r"\[[^\]]+\]|\bindex\b")


def _captured_figures(monkeypatch, run):
    figs = []
    original = Figure.savefig

    def savefig(self, *args, **kwargs):
        figs.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    out = run()
    return out, figs


def _check(figs):
    assert figs, "no figure was saved"
    problems = []
    for k, fig in enumerate(figs):
        cbar_axes = {id(im.colorbar.ax) for ax in fig.axes for im in ax.images if im.colorbar is not None}
        for ax in fig.axes:
            if id(ax) in cbar_axes:
                continue
            if not (ax.lines or ax.images or ax.collections):
                continue
            for which, label in (("x", ax.get_xlabel()), ("y", ax.get_ylabel())):
                if not label or not _UNIT.search(label):
                    problems.append(f"figure {k} axis {ax.get_title()!r}: {which} label {label!r} has no unit")
            for im in ax.images:
                if im.colorbar is None or not im.colorbar.ax.get_ylabel():
                    problems.append(f"figure {k} axis {ax.get_title()!r}: colourbar without a label")
                elif not _UNIT.search(im.colorbar.ax.get_ylabel()):
                    problems.append(f"figure {k} colourbar {im.colorbar.ax.get_ylabel()!r} has no unit")
                if "-" in ax.get_title() and "closed form" in ax.get_title():  # a difference map
                    norm = im.norm
                    centred = isinstance(norm, CenteredNorm) or np.isclose(norm.vmin, -norm.vmax)
                    if not centred:
                        problems.append(f"figure {k} {ax.get_title()!r}: not centred on zero")
    assert problems == [], "\n".join(problems)


def _compare(monkeypatch, tmp_path, name, config, T=32):
    # T: tokens of the window (None: the model's full window)
    from mapping import compile, load_model
    from mapping.cli.common import validation_tokens as _validation_tokens
    from mapping.simulation.compare import compare_layer

    model, _ = load_model(name)
    chip = compile(model, config, checkpoint=name)
    x, _ = _validation_tokens(model.config.to_dict(), model.config.seq_len)
    return _captured_figures(
        monkeypatch, lambda: compare_layer(chip, x[:1, :T], layer=0, head=0, plot_dir=tmp_path, seed=0))


def test_kuramoto_compare_figures_are_labelled(monkeypatch, tmp_path):
    from mapping import ChipConfig

    out, figs = _compare(monkeypatch, tmp_path, "kuramoto-tiny", ChipConfig())  # the chip of `make demo`
    assert len(out["plots"]) == 2 and len(figs) == 2
    _check(figs)


@pytest.mark.parametrize("mode, kind, network", [("pairwise", "ssa-pairwise", "Adler cells"),
                                                 ("collective", "ssa1d-collective", "collective network")])
def test_ssa_compare_shows_the_network_the_chip_runs_and_is_labelled(monkeypatch, tmp_path, mode, kind, network):
    from mapping import ChipConfig
    from mapping.config import SSAConfig

    cfg = ChipConfig(ssa=SSAConfig(mode=mode, settle_cycles=10.0, averaging_cycles=40.0))
    out, figs = _compare(monkeypatch, tmp_path, "ssa1d-tiny", cfg)
    assert out["mode"] == kind and len(figs) == 2
    _check(figs)
    # pairwise chips: two-oscillator cells, not the collective network (and the other way round)
    assert network in figs[1].axes[0].get_title()


def test_checker_finds_an_unlabelled_axis_and_an_uncentred_difference():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    ax.set_xlabel("time [cycles]")
    with pytest.raises(AssertionError, match="y label"):
        _check([fig])
    fig2, ax2 = plt.subplots()
    im = ax2.imshow(np.array([[0.0, 1.0]]), vmin=0.0, vmax=1.0)
    ax2.set_title("chip - closed form")
    ax2.set_xlabel("key token index j")
    ax2.set_ylabel("query token index i")
    fig2.colorbar(im, ax=ax2)
    with pytest.raises(AssertionError, match="colourbar without a label") as e:
        _check([fig2])
    assert "not centred" in str(e.value)
    plt.close("all")
