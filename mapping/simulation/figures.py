"""Figures of ``oscsim compare``: one head's matrices, trajectories and networks, and the fidelity ladder's.

Every axis and colourbar names its quantity and unit; phases are in rad, time in oscillator cycles (1/f0);
ratios and weights are dimensionless. Difference maps use a colour scale centred on zero. The figures are
drawn in the project's style (:mod:`oscsim.plotting`: constrained layout, a legend naming every series) and
tests/test_plots_layout.py checks each kind with :func:`oscsim.plotting.layout_problems`.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .. import units
from ..backends.integrate import integrate_phase

__all__ = ["save_figures", "kuramoto_figures", "ssa_figures", "ladder_figures"]


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _figure(ncols: int, width: float, height: float = 4.0):
    """``(fig, axes)``: one row of ``ncols`` axes in the project's style (Agg backend)."""
    from oscsim import plotting

    _plt()
    return plotting.figure(1, ncols, width=width, height=height)


def _colorbar(fig, im, ax, label):
    from oscsim import plotting

    return plotting.colorbar(fig, im, ax, label)


_DIMLESS = "[dimensionless]"
_TOKEN = "[token]"


def save_figures(figs: dict, plot_dir) -> list[str]:
    """Write each figure as ``plot_dir/name`` (PNG, 110 dpi), close it, and return the paths."""
    plt = _plt()
    plot_dir = Path(plot_dir)
    plot_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, fig in figs.items():
        if fig is None:
            continue
        fig.savefig(plot_dir / name)
        plt.close(fig)
        paths.append(str(plot_dir / name))
    return paths


def _image(fig, ax, m, *, title, cbar, xlabel, ylabel, diverging=False, centred=False, aspect=None):
    """``imshow`` of ``m`` with labelled axes and colourbar; ``centred``: a symmetric scale around 0."""
    from matplotlib.colors import CenteredNorm

    kw = {"aspect": aspect} if aspect else {}
    if centred:
        half = float(np.max(np.abs(m))) or 1.0
        im = ax.imshow(m, cmap="RdBu_r", norm=CenteredNorm(vcenter=0.0, halfrange=half), **kw)
    else:
        im = ax.imshow(m, cmap="RdBu_r" if diverging else "viridis", **kw)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(False)
    _colorbar(fig, im, ax, cbar)
    return im


def _kuramoto_matrices_figure(A, va_cf, va_chip, layer, head, res, cfg):
    """Softmax weights A, the closed-form and chip increments, and their difference (one head)."""
    fig, ax = _figure(4, 15.0)
    _image(fig, ax[0], A, title=f"programmed coupling A\n(layer {layer}, head {head})",
           cbar=f"A_tu, softmax weight {_DIMLESS}", xlabel=f"key token index u {_TOKEN}",
           ylabel=f"query token index t {_TOKEN}")
    lim = float(np.max(np.abs(va_cf))) or 1.0
    cbars = {1: f"closed-form increment (v*a)_tj {_DIMLESS}",
             2: f"chip increment, measured {_DIMLESS}"}
    for k, (a_, m, t) in enumerate(((ax[1], va_cf, "closed form v*a"),
                                    (ax[2], va_chip, "chip (theta(tau)-theta(0))/(kappa tau)")), start=1):
        im = a_.imshow(m, aspect="auto", cmap="RdBu_r", vmin=-lim, vmax=lim)  # same scale, centred on 0
        a_.set_title(t)
        a_.set_xlabel("coordinate index j [index]")
        a_.set_ylabel(f"token index t {_TOKEN}")
        a_.grid(False)
        _colorbar(fig, im, a_, cbars[k])
    _image(fig, ax[3], va_chip - va_cf, title="chip - closed form (own scale)", cbar=f"difference {_DIMLESS}",
           xlabel="coordinate index j [index]", ylabel=f"token index t {_TOKEN}", centred=True, aspect="auto")
    fig.suptitle(f"Kuramoto chip vs closed form: rel. error {res['increment_rel_error']:.3g}, "
                 f"kappa*tau_s = {cfg.kappa_tau:.3g} rad")
    return fig


def _kuramoto_trajectories_figure(out, head, va_cf, cfg):
    """Phase increments of a few tokens (coordinate 0) and the order parameter, chip vs first order; None when
    the backend kept no phase trajectories (the spin-torque complex-amplitude network)."""
    if out.traj is None:
        return None
    ts, traj = out.ts, out.traj[:, 0, head]  # (S, kh, T)
    th0 = traj[0]
    T = traj.shape[-1]
    fig, ax = _figure(2, 11.0)
    from matplotlib.lines import Line2D

    for t in _tokens_to_show(va_cf[:, 0], 5):
        line, = ax[0].plot(ts, traj[:, 0, t] - th0[0, t], label=f"token t={t}, chip")
        ax[0].plot(ts, cfg.kappa * ts * va_cf[t, 0], "--", color=line.get_color(), label="_same colour as its token")
    handles, labels = ax[0].get_legend_handles_labels()
    handles.append(Line2D([], [], color="0.3", ls="--"))
    labels.append("closed form, first order (dashed, colour of its token)")
    ax[0].set_xlabel("time [cycles]")
    ax[0].set_ylabel("theta_t(s) - theta_t(0), coord. 0 [rad]")
    ax[0].set_title("chip (solid) vs first-order closed form (dashed)")
    ax[0].legend(handles, labels, fontsize=7)
    R_chip = np.abs(np.exp(1j * traj).mean(-1)).mean(-1)
    pred = th0[None] + cfg.kappa * ts[:, None, None] * va_cf.T[None]
    R_cf = np.abs(np.exp(1j * pred).mean(-1)).mean(-1)
    ax[1].plot(ts, R_chip, label="chip network")
    ax[1].plot(ts, R_cf, "--", label="closed form (first order)")
    ax[1].set_xlabel("time [cycles]")
    ax[1].set_ylabel(f"order parameter R, mean over coord. {_DIMLESS}")
    ax[1].legend()
    return fig


def _tokens_to_show(x, n: int) -> list[int]:
    """Up to ``n`` tokens (index >= 1) with the largest closed-form increments |x| (T,) whose values differ from
    each other by at least a tenth of the largest, so no two of their lines lie on each other (most tokens of a
    head barely move: plotting evenly spaced tokens drew four on one line at 0)."""
    span = float(np.max(np.abs(x[1:]))) if x.size > 1 else 0.0
    picks: list[int] = []
    for t in (np.argsort(-np.abs(x[1:]), kind="stable") + 1):
        if all(abs(x[t] - x[p]) >= 0.1 * span for p in picks):
            picks.append(int(t))
        if len(picks) == n:
            break
    return sorted(picks)


def _ssa_matrices_figure(Sc, Sh, allowed, layer, head, kind, res):
    """Closed-form S, chip S and their difference (one head); the diagonal is digital on both."""
    fig, ax = _figure(3, 13.0)
    lo, hi = float(min(Sc.min(), Sh.min())), float(max(Sc.max(), Sh.max()))
    for a_, m, t in ((ax[0], Sc, "closed form S"), (ax[1], Sh, f"chip S ({kind})")):
        im = a_.imshow(m, cmap="viridis", vmin=lo, vmax=hi)  # one scale for both
        a_.set_title(t)
        a_.set_xlabel(f"key token index j {_TOKEN}")
        a_.set_ylabel(f"query token index i {_TOKEN}")
        a_.grid(False)
        _colorbar(fig, im, a_, f"S_ij = J_ij <cos phi_ij> {_DIMLESS}")
    _image(fig, ax[2], np.where(allowed, Sh - Sc, 0.0), title="chip - closed form (own scale)",
           cbar=f"difference of S {_DIMLESS}", xlabel=f"key token index j {_TOKEN}",
           ylabel=f"query token index i {_TOKEN}", centred=True)
    fig.suptitle(f"SSA layer {layer} head {head}: S rel. error {res['S_rel_error']:.3g}")
    return fig


def _network_inputs(chip, lm, comp, head):
    """What the SSA network figures read: pyplot, [ssa], σ, K, the head's J, Δω, thr, residuals, spread, window."""
    plt = _plt()
    sc = chip.config.ssa
    sigma = chip.timebase["sigma_rad_per_sqrt_cycle"]
    K = float(comp["K"])
    J = comp["J"].double().numpy()[0, head]
    dw = comp["delta_omega"].double().numpy()[0, head]
    thr = comp["threshold"].double().numpy()[0, head]
    fr = units.relative_frequency_to_rad_per_cycle(lm.freq_residual_rel)
    cg = lm.coupler_gain() if lm.coupler_spread_rel > 0 else None
    t1 = sc.settle_cycles + sc.averaging_cycles
    return plt, sc, sigma, K, J, dw, thr, fr, cg, t1


def adler_cells_figure(chip, lm, comp, head, allowed, seed):
    """A few of the head's Adler cells as programmed (two oscillators each,
    :func:`mapping.backends.ssa_pairwise.adler_cell_network`), chosen across the range of Δω / (K r J) from deep
    locking to drifting: the phase difference φ and the running mean ⟨cos φ⟩ over the averaging window against
    the closed form (quantised couplers, spread and residual frequency errors included). None without cells."""
    from ..backends.ssa import J_MIN
    from ..backends.ssa_pairwise import adler_cell_network

    plt, sc, sigma, K, J, dw, thr, fr, cg, t1 = _network_inputs(chip, lm, comp, head)
    ii, jj = np.nonzero(np.tril(allowed, -1) & (J >= J_MIN))
    if ii.size == 0:
        return None
    ratio = dw[ii, jj] / np.maximum(thr[ii, jj], 1e-300)
    # up to three locked cells across their range and the three drifting ones nearest the boundary,
    # where the chip's finite window and noise matter most
    lk, dr = np.flatnonzero(ratio < 1), np.flatnonzero(ratio >= 1)
    lk = lk[np.argsort(ratio[lk])]
    lk = lk[np.unique(np.linspace(0, lk.size - 1, min(3, lk.size)).astype(int))] if lk.size else lk
    pick = np.concatenate([lk, dr[np.argsort(ratio[dr])][:3]])
    ci, cj = ii[pick], jj[pick]
    omega, C = adler_cell_network(
        dw[ci, cj], thr[ci, cj], lam=lm.lam, k_max=K, coupling_q=lm.coupling_quantiser,
        freq_residual=fr[head, ci, cj, :] if np.any(fr) else None,
        coupler_gain=cg[head, ci, cj] if cg is not None else None)
    spc = max(sc.steps_per_cycle, int(math.ceil(5 * float(np.max(np.abs(omega[:, 1]) + 2 * C[:, 0, 1])))))
    n = max(int(math.ceil(t1 * spc)), 1)
    r = integrate_phase(omega, C, np.zeros_like(omega), t1=t1, n_steps=n, save_every=max(1, n // 800),
                        sigma=sigma, seed=seed, harmonics=chip.harmonics)
    phi = r.ys[:, :, 1] - r.ys[:, :, 0]  # (S, P)
    fig, ax = _figure(2, 11.0, 4.4)
    after = r.ts >= sc.settle_cycles
    for p in range(phi.shape[1]):
        rho = ratio[pick[p]]
        line, = ax[0].plot(r.ts, phi[:, p], label=f"cell ({ci[p]},{cj[p]}), dw/(KrJ) = {rho:.2f}")
        if rho < 1:  # the reference lines take their cell's colour; the legend names the cells
            ax[0].axhline(math.asin(rho), ls=":", color=line.get_color(), label="_locked phi*")
        run = np.cumsum(np.cos(phi[after, p])) / np.arange(1, after.sum() + 1)
        ax[1].plot(r.ts[after], run, color=line.get_color(), label="_cell (colours as left)")
        ax[1].axhline(math.sqrt(1 - rho**2) if rho < 1 else 0.0, ls="--", color=line.get_color(),
                      label="_closed form")
    ax[0].axvline(sc.settle_cycles, color="k", lw=0.8, label="_end of settling")
    ax[0].set_xlabel("time [cycles]; settling ends at the black line")
    ax[0].set_ylabel("phase difference phi of the cell [rad]")
    ax[0].set_title("Adler cells as programmed (dotted: locked phi* = asin(dw/KrJ))")
    ax[0].legend(fontsize=7)
    ax[1].set_xlabel("time [cycles]")
    ax[1].set_ylabel(f"running <cos phi> {_DIMLESS}")
    ax[1].set_title("cells (solid, colours as left) vs closed form (dashed):\n"
                    "sqrt(1 - (dw/KrJ)^2) locked, 0 drifting")
    return fig


def collective_figure(chip, lm, comp, head, allowed, seed):
    """The head's N-oscillator collective network as programmed
    (:func:`mapping.backends.ssa_collective.collective_network`): neighbour phase differences and the order
    parameter. None when the model's frequencies are not scalar per token."""
    from ..backends.ssa_collective import collective_network

    plt, sc, sigma, K, J, dw, thr, fr, cg, t1 = _network_inputs(chip, lm, comp, head)
    if comp["omega"].shape[-1] != 1:
        return None
    omega = comp["omega"].double().numpy()[0, head, :, 0]
    N = omega.shape[0]
    om, C = collective_network(
        (omega - omega.mean())[None], thr[None], causal=bool(comp["causal"]), lam=lm.lam, k_max=K,
        coupling_q=lm.coupling_quantiser, freq_residual=fr[head, :N][None] if np.any(fr) else None,
        coupler_gain=cg[head, :N, :N][None] if cg is not None else None)
    spc = max(sc.steps_per_cycle, int(math.ceil(5 * (float(np.abs(om).max()) + lm.lam * K))))
    n = max(int(math.ceil(t1 * spc)), 1)
    r = integrate_phase(om, C, np.zeros((1, N)), t1=t1, n_steps=n, save_every=max(1, n // 400), sigma=sigma,
                        seed=seed, harmonics=chip.harmonics)
    ys = r.ys[:, 0]
    fig, ax = _figure(2, 11.0)
    for t in np.unique(np.linspace(1, N - 1, 5).astype(int)):
        ax[0].plot(r.ts, ys[:, t] - ys[:, t - 1], label=f"theta_{t} - theta_{t - 1}")
    ax[0].axvline(sc.settle_cycles, color="k", lw=0.8, label="_end of settling")
    ax[0].set_xlabel("time [cycles]; settling ends at the black line")
    ax[0].set_ylabel("phase difference [rad]")
    ax[0].set_title(f"collective network of head {head} as programmed ({N} oscillators)")
    ax[0].legend(fontsize=7)
    ax[1].plot(r.ts, np.abs(np.exp(1j * ys).mean(-1)), label="|mean e^{i theta}| (collective network)")
    ax[1].set_xlabel("time [cycles]")
    ax[1].set_ylabel(f"order parameter R {_DIMLESS}")
    ax[1].legend(fontsize=7)
    return fig


def ladder_figures(res, x, traj, levels, *, layer, head, T, kh, cfg, dev, plot_dir) -> list:
    """The ladder's two figures: every rung's increment against the last rung's (and per token), and the
    trajectories per rung (macromodel phases, circuit and ngspice node-0 crossings). Returns the PNG paths."""
    plt = _plt()
    plot_dir = Path(plot_dir)
    plot_dir.mkdir(parents=True, exist_ok=True)
    styles = {"closed-form": ("k", "--", ""), "macromodel": ("C0", "-", ""), "circuit": ("C1", "", "o"),
              "spice": ("C3", "", "x")}
    fig, ax = _figure(2, 11.0, 4.4)
    ref = x[levels[-1]].ravel()
    for name in levels:
        col, ls, mk = styles[name]
        ax[0].plot(ref, x[name].ravel(), linestyle="none", marker=mk or ".", color=col, ms=4, label=name)
        ax[1].plot(np.arange(T), x[name][:, 0], color=col, linestyle=ls or "none", marker=mk or None, label=name)
    lim = float(np.max(np.abs(ref))) or 1.0
    ax[0].plot([-lim, lim], [-lim, lim], color="0.6", lw=0.8, label="_identity")
    ax[0].set_xlabel(f"increment x = v*a at the last rung ({levels[-1]}) {_DIMLESS}")
    ax[0].set_ylabel(f"increment x at each rung {_DIMLESS}")
    ax[0].set_title(f"layer {layer} head {head}: all {T} tokens x {kh} coordinates")
    ax[0].legend(fontsize=7)
    ax[1].set_xlabel(f"token t {_TOKEN}")
    ax[1].set_ylabel(f"increment x_t, coordinate 0 {_DIMLESS}")
    ax[1].set_title("increment estimate per rung (coordinate 0)")
    ax[1].legend(fontsize=7)
    fig.suptitle("fidelity ladder: " + ", ".join(f"{k} {v['rel_error']:.3g}" for k, v in res["pairwise"].items()))
    p1 = plot_dir / f"ladder_increments_L{layer}_H{head}.png"
    fig.savefig(p1)
    plt.close(fig)
    fig, ax = _figure(1, 7.5, 4.4)
    from matplotlib.lines import Line2D

    for j, t in enumerate(_tokens_to_show(x["closed-form"][:, 0], 4)):
        c = f"C{j}"
        if "macromodel" in traj:
            ts, tr = traj["macromodel"]
            ax.plot(ts, tr[:, 0, t], color=c, label=f"token t={t}, macromodel")
        ax.plot([0, cfg.settle_cycles], [0, cfg.kappa_tau * x["closed-form"][t, 0]], "--", color=c, lw=0.8,
                label="_same colour as its token")
        for name, mk in (("circuit", "o"), ("spice", "x")):
            if name in traj:
                tk, dpsi = traj[name][t]
                ax.plot(tk / dev.period_s, dpsi, linestyle="none", marker=mk, color=c, ms=5,
                        label=f"{name} (node-0 crossings)" if j == 0 else "_same colour as its token")
    ax.axvline(cfg.settle_cycles, color="0.5", lw=0.8, label="_couplers off")
    ax.set_xlabel("time [cycles of f0]; couplers off at tau_s (grey line)")
    ax.set_ylabel("theta_t(s) - theta_t(0), coord. 0 [rad]")
    ax.set_title(f"trajectories per rung (layer {layer}, head {head})")
    handles, labels = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], color="0.3", ls="--", lw=0.8))
    labels.append("closed form, first order (dashed, colour of its token)")
    ax.legend(handles, labels, fontsize=7)
    p2 = plot_dir / f"ladder_trajectories_L{layer}_H{head}.png"
    fig.savefig(p2)
    plt.close(fig)
    return [str(p1), str(p2)]


NETWORK_FIGURES = {"ssa-pairwise": adler_cells_figure, "ssa1d-collective": collective_figure}
"""Layer kind -> the figure of the SSA network the chip runs for one head."""


def kuramoto_figures(out, A, va_cf, va_chip, layer, head, res, cfg) -> dict:
    """File name -> figure of a Kuramoto head: the matrices and the trajectories."""
    return {f"matrices_L{layer}_H{head}.png": _kuramoto_matrices_figure(A, va_cf, va_chip, layer, head, res, cfg),
            f"trajectories_L{layer}_H{head}.png": _kuramoto_trajectories_figure(out, head, va_cf, cfg)}


def ssa_figures(chip, lm, comp, Sc, Sh, allowed, layer, head, res, seed) -> dict:
    """File name -> figure of an SSA head: S closed form vs chip, and the network it runs."""
    return {f"matrices_L{layer}_H{head}.png": _ssa_matrices_figure(Sc, Sh, allowed, layer, head, lm.kind, res),
            f"trajectories_L{layer}_H{head}.png": NETWORK_FIGURES[lm.kind](chip, lm, comp, head, allowed, seed)}
