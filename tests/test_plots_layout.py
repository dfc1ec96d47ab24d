"""Every kind of figure the project draws reads (issue 23 item 6): drawn, then checked from matplotlib's tight
bounding boxes by :func:`oscsim.plotting.layout_problems` (no overlapping tick labels, titles or axis labels,
nothing outside the figure, annotations inside their axes, no offset text, a unit on every axis, a legend
naming every series).

A figure kind is one entry of ``FIGURES``: a function of a temporary folder that makes the project save its
figures; every figure saved while it runs is checked. Adding a kind is one entry.
"""

from __future__ import annotations

import json
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from oscsim import plotting  # noqa: E402
from oscsim.cli import main  # noqa: E402


def _sweep_folder(out):
    """A sweep folder as `oscsim sweep` writes it, with the numbers of a real one: coupler bits 4..8 and
    readout noise over two decades, two noise seeds; energies of a few hundred nJ per token."""
    import pandas as pd

    from mapping.sweep.run import META, PARTS, write_df

    (out / PARTS).mkdir(parents=True)
    rows, ids = [], []
    rng = np.random.default_rng(0)
    for bits in (4, 5, 6, 8):
        for noise in (0.002, 0.02, 0.2):
            for seed in (0, 1):
                pid = f"p{len(ids):03d}"
                ids.append(pid)
                loss = 0.02 + 0.5 * noise + 0.4 * 2.0 ** -bits + 0.003 * rng.standard_normal()
                rows.append({"point_id": pid, "point_index": len(ids) - 1, "coupling.bits": bits,
                             "readout.noise_rad": noise, "noise_seed": seed, "status": "ok", "error": None,
                             "bpc_difference": loss, "bpc_chip": 2.95 + loss, "mean_layer_rel_error": 0.1 + loss,
                             "energy_chip_j_per_token": 4.19e-7 + 1.3e-9 * bits})
    for r in rows:
        write_df(pd.DataFrame([r]), out / PARTS / f"{r['point_id']}.parquet")
    (out / META).write_text(json.dumps({"name": "sweep-small", "spec_hash": "0" * 16, "n_points": len(ids),
                                        "point_ids": ids, "swept_fields": ["readout.noise_rad", "coupling.bits"],
                                        "seed_columns": ["noise_seed"]}))
    return out


def _sweep(tmp_path):
    from mapping.sweep import plot_sweep

    plot_sweep(_sweep_folder(tmp_path / "sweep"), tmp_path / "plots", formats=("png",))


def _design(tmp_path, latency=(-7.4, -4.7)):
    """The design plots of a study with the spread of a real one: energies 15 nJ to 2 uJ per token, losses from
    below the log floor to 1.5 bits/char, areas 3-900 mm^2, latencies 40 ns to 20 us, a constraint line."""
    import pandas as pd

    from mapping.design import design_spec_from_dict, plot_design

    spec = design_spec_from_dict({"name": "design-study", "checkpoint": "kuramoto-tiny", "trials": 60,
                                  "population": 20, "constraints": ["area_mm2 <= 100"],
                                  "space": {"array.tiles": {"choice": [4, 16, 64, 512]},
                                            "node_nm": {"choice": [65, 28, 7]}}})
    rng = np.random.default_rng(1)
    n = 60
    e = 10 ** rng.uniform(np.log10(15e-9), np.log10(2e-6), n)
    df = pd.DataFrame({"trial": np.arange(n), "state": "COMPLETE", "array.tiles": rng.choice([4, 16, 64, 512], n),
                       "node_nm": rng.choice([65.0, 28.0, 7.0], n), "energy_per_token_j": e,
                       "bpc_loss": np.where(rng.random(n) < 0.1, 0.0, 10 ** rng.uniform(-3, 0.2, n)),
                       "area_mm2": 10 ** rng.uniform(0.5, 3, n), "latency_per_token_s": 10 ** rng.uniform(*latency, n),
                       "gpu_lower_j": 241e-9, "gpu_upper_j": 3.77e-6, "anchor_j": 3.07e-9,
                       "largest_term": "digital_periphery_j"})
    df["feasible"] = df["area_mm2"] <= 100
    df["on_front"] = df["feasible"] & (rng.random(n) < 0.3)
    plot_design(df, spec, tmp_path / "plots", verdict={"best_trial": 3}, formats=("png",))


def _design_narrow(tmp_path):
    """The design plots of a study whose latencies all lie within 901-915 ns (inside one decade, as
    design-small's): the latency axis must show tick numbers."""
    _design(tmp_path, latency=(np.log10(901e-9), np.log10(915e-9)))


def _device(kind):
    return lambda tmp_path: main(["device", kind, "--temperature", "350", "--plot", str(tmp_path)])


def _kuramoto_demo(tmp_path):
    assert main(["kuramoto-demo", "--out", str(tmp_path), "--n", "60"]) == 0


def _compare(checkpoint, *extra, toml=None, seq_len=16):
    """`oscsim compare` on one head of a short window: its matrices and trajectories (or network) figures."""
    def make(tmp_path):
        argv = ["compare", checkpoint, "--seq-len", str(seq_len), "--plot", str(tmp_path), *extra]
        if toml is not None:
            (tmp_path / "chip.toml").write_text(toml)
            argv += ["--config", str(tmp_path / "chip.toml")]
        assert main(argv) == 0
    return make


FIGURES = {
    "sweep": _sweep,  # metric vs parameter, heatmaps, Pareto front
    "design": _design,  # BPC loss, area and latency vs energy of a design search
    "design-narrow-latency": _design_narrow,  # latencies inside one decade (a linear axis)
    "device-ring": _device("ring"),
    "device-stno": _device("stno"),
    "device-ideal": _device("ideal"),
    "kuramoto-demo": _kuramoto_demo,
    "compare-kuramoto": _compare("kuramoto-tiny", "--head", "1"),  # matrices, trajectories + order parameter
    "compare-demo": _compare("kuramoto-tiny", "--layer", "0", "--head", "0", seq_len=128),  # `make demo`'s
    "compare-ssa-pairwise": _compare("ssa1d-tiny"),  # S matrices, Adler cells
    "compare-ssa-collective": _compare("ssa1d-tiny", toml='[ssa]\nmode = "collective"\n'),  # S, the network
    "compare-ladder": _compare("kuramoto-tiny", "--levels", "closed-form,macromodel,circuit", seq_len=8),
}
SLOW = {"compare-ladder"}  # the transistor-level circuit rung: over a minute on a loaded 2-core machine


def _saved_figures(monkeypatch, make):
    figs = []
    original = Figure.savefig

    def savefig(self, *args, **kwargs):
        if all(f is not self for f in figs):
            figs.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    make()
    return figs


@pytest.mark.parametrize("kind", [pytest.param(k, marks=pytest.mark.slow) if k in SLOW else k for k in sorted(FIGURES)])
def test_every_figure_kind_reads(kind, tmp_path, monkeypatch):
    figs = _saved_figures(monkeypatch, lambda: FIGURES[kind](tmp_path))
    assert figs, f"{kind}: no figure saved"
    problems = [f"{kind} figure {i}: {p}" for i, f in enumerate(figs) for p in plotting.layout_problems(f)]
    assert problems == [], "\n".join(problems)


# ---- the check finds what it is meant to find (each defect of issue 23 item 6, made on purpose)
def _plain(**kw):
    fig, ax = plt.subplots(figsize=kw.pop("figsize", (4, 3)))
    return fig, ax


def test_the_check_finds_overlapping_tick_labels_and_a_missing_unit():
    fig, ax = _plain()
    x = np.arange(40)
    ax.plot(x, x)
    ax.set_xticks(x, [f"tick number {i}" for i in x])
    ax.set_xlabel("coupling")  # no unit
    ax.set_ylabel("energy [nJ]")
    found = plotting.layout_problems(fig)
    assert any("x tick labels" in p and "overlap" in p for p in found)
    assert any("x axis label 'coupling' names no unit" in p for p in found)
    plt.close(fig)


def test_the_check_finds_an_offset_text_a_clipped_label_and_a_half_named_legend():
    fig, ax = _plain(figsize=(3, 2))
    for k in range(4):
        ax.plot([1, 2, 3], np.array([4.190e-7, 4.191e-7, 4.192e-7]) + k * 1e-11, label="chip" if k == 0 else None)
    ax.ticklabel_format(axis="y", useOffset=True)
    ax.set_xlabel("bits [bits]")
    ax.set_ylabel("energy per token, attention only, prefill, whole model [J]")  # longer than the figure
    ax.set_title("energy")
    ax.legend()
    found = plotting.layout_problems(fig)
    assert any("offset/multiplier text" in p for p in found), found
    assert any("lies outside the figure" in p for p in found), found
    assert any("the legend names 1 of 4 series" in p for p in found), found
    plt.close(fig)


def test_the_check_finds_a_title_on_tick_labels_and_an_annotation_off_the_axes():
    fig, (a, b) = plt.subplots(2, 1, figsize=(4, 3))  # no layout engine: b's title sits on a's tick labels
    for ax in (a, b):
        ax.plot([0, 1], [0, 1])
        ax.set_xlabel("x [s]")
        ax.set_ylabel("y [V]")
    b.set_title("a title with enough text to meet the labels above")
    a.annotate("a Pareto label that runs far past the right edge", (1, 1), xytext=(5, 0), textcoords="offset points")
    found = plotting.layout_problems(fig)
    assert any("title" in p and "overlap" in p for p in found), found
    assert any("runs outside its axes" in p for p in found), found
    plt.close(fig)


def test_a_figure_in_the_style_passes():
    fig, ax = plotting.figure()
    e = np.array([4.19e-7, 4.2e-7, 4.23e-7])
    f, unit = plotting.si_scale(e, "J/token")
    ax.plot([4, 6, 8], e * f, "o-", label="chip")
    ax.plot([4, 6, 8], e * f * 0.6, "s--", label="GPU lower bound")
    plotting.integer_ticks(ax, "x")
    ax.set_xlabel("coupler resolution [bits]")
    ax.set_ylabel(f"energy per token [{unit}]")
    ax.set_title("energy against coupler bits")
    ax.legend()
    assert plotting.layout_problems(fig) == []
    lo, hi = ax.get_xlim()
    assert all(float(t).is_integer() for t in ax.get_xticks() if lo <= t <= hi)
    plt.close(fig)


@pytest.mark.parametrize("values, unit, factor, label", [
    ([4.19e-7, 5e-7], "J/token", 1e9, "nJ/token"), ([2.4e-6], "J", 1e6, "µJ"), ([1.8e9], "Hz", 1e-9, "GHz"),
    ([6.0e-10, 1e-12], "s", 1e12, "ps"), ([3.0, 250.0], "V", 1.0, "V"), ([], "J", 1.0, "J"), ([0.5], "", 1.0, ""),
    ([999.9e-9], "J", 1e9, "nJ"), ([1000e-9], "J", 1e6, "µJ")])
def test_si_scale_keeps_numbers_between_0_1_and_1000(values, unit, factor, label):
    f, u = plotting.si_scale(values, unit)
    assert u == label and math.isclose(f, factor, rel_tol=1e-12)


# ---- the checks of issue 34 item 2, each shown to fail on the figure as it was
def _old_latency_plot():
    """plots/latency_vs_energy.png as it was: every latency within 901-915 ns on a log axis with decade ticks only
    (no tick number on the y axis)."""
    fig, ax = plotting.figure(width=6.4, height=4.6)
    rng = np.random.default_rng(0)
    e, lat = 10 ** rng.uniform(2.6, 2.7, 24), rng.uniform(901, 915, 24)
    ax.scatter(e, lat, s=14, label="all trials")
    ax.set_xscale("log")
    ax.set_yscale("log")
    plotting.log_ticks(ax, "x")
    plotting.log_ticks(ax, "y")
    ax.set_xlabel("chip energy per token, attention layers [nJ]")
    ax.set_ylabel("latency per token [ns]")
    return fig, ax, e, lat


def test_the_check_fails_on_the_latency_plot_as_it_was_and_passes_with_a_linear_axis():
    fig, ax, e, lat = _old_latency_plot()
    found = plotting.layout_problems(fig)
    assert any("y axis shows 0 tick number(s)" in p for p in found), found
    plt.close(fig)
    fig, ax = plotting.figure(width=6.4, height=4.6)  # what plot_design draws now
    ax.scatter(e, lat, s=14, label="all trials")
    assert plotting.log_or_linear(ax, "y", lat) is False
    plotting.log_or_linear(ax, "x", e)
    ax.set_xlabel("chip energy per token, attention layers [nJ]")
    ax.set_ylabel("latency per token [ns]")
    assert plotting.layout_problems(fig) == []
    plt.close(fig)


def test_the_check_finds_an_si_number_outside_0_1_to_1000():
    fig, ax = plotting.figure()
    ax.plot([1, 2], [1, 2], label="chip")
    ax.axvline(1.5, ls="--", label="gain-cell attention 0.00307 µJ")  # the design plot's old legend
    ax.set_xlabel("energy [µJ]")
    ax.set_ylabel("loss [bits/char]")
    ax.legend()
    found = plotting.layout_problems(fig)
    assert any("'0.00307 µJ'" in p and "SI prefix" in p for p in found), found
    assert plotting.si_format(3.07e-9, "J") == "3.07 nJ"
    plt.close(fig)
    fig, ax = plotting.figure()
    ax.plot([1, 2], [0.001, 0.003])
    ax.set_xlabel("bits [bits]")
    ax.set_ylabel("energy [µJ]")  # tick numbers 0.001..0.003 µJ: nJ wanted
    assert any("tick numbers" in p and "SI prefix" in p for p in plotting.layout_problems(fig))
    plt.close(fig)


def test_the_check_finds_a_legend_entry_drawn_under_other_lines():
    """trajectories_L0_H0.png as it was: tokens whose increments are all ~0 lie on one line, so the first one's
    legend entry matches no visible line."""
    fig, ax = plotting.figure()
    t = np.linspace(0, 4, 50)
    for k in range(3):
        ax.plot(t, 0 * t, label=f"token t={k}, chip")
    ax.plot(t, 0.25 * t, label="token t=3, chip")
    ax.set_xlabel("time [cycles]")
    ax.set_ylabel("theta [rad]")
    ax.legend()
    found = plotting.layout_problems(fig)
    assert any("'token t=0, chip' matches no visible line" in p for p in found), found
    assert not any("token t=3" in p for p in found), found
    plt.close(fig)


def test_the_check_finds_a_title_hidden_by_a_colourbar():
    """matrices_L0_H0.png as it was: the first panel's title ran under its colourbar ("hea 0)")."""
    fig, ax = plotting.figure(1, 2, width=6.0, height=2.6)
    for a in ax:
        im = a.imshow(np.eye(8))
        a.set_xlabel("key token index u [token]")
        a.set_ylabel("query token index t [token]")
        plotting.colorbar(fig, im, a, "A_tu, softmax weight [dimensionless]")
    ax[0].set_title("programmed coupling A (layer 0, head 0) of the chip")
    found = plotting.layout_problems(fig)
    assert any("title runs into axes" in p for p in found), found
    plt.close(fig)


def test_log_or_linear_and_si_log_ticks():
    fig, ax = plotting.figure()
    ax.plot([1e-8, 2e-6], [1, 2], "o", label="_")
    assert plotting.log_or_linear(ax, "x", [1e-8, 2e-6])
    plotting.si_log_ticks(ax, "x", "J")
    ax.set_xlabel("energy [J]")
    ax.set_ylabel("y [V]")
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert "10 nJ" in labels and "1 µJ" in labels, labels
    assert plotting.layout_problems(fig) == []
    plt.close(fig)
