"""Closed form vs simulated network for one layer and head, with plots (``oscsim compare``)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from . import units
from ._backend import integrate_phase
from .fidelity import cosine_similarity, phase_error, relative_error
from .inference import _ssa_chip_S, chip_readout, kuramoto_chip_extras, layer_seed
from .kuramoto_chip import kuramoto_chip_step

__all__ = ["compare_layer"]


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _capture_kuramoto(model, tokens, layer):
    import torch

    got = {}

    def override(i, theta, parts):
        if i == layer:
            got["theta"], got["parts"] = theta, parts
        return parts.delta

    with torch.no_grad():
        model(tokens, attn_override=override)
    return got["theta"], got["parts"]


def _capture_ssa(model, tokens, layer):
    """The SSA components of ``layer`` from the model's own forward pass (its ``attn_override`` hook)."""
    import torch

    got = {}

    def override(i, comp):
        if i == layer:
            got["comp"] = comp
        return comp["S"]  # the closed form: this pass only reads the layer's input

    with torch.no_grad():
        model(tokens, attn_override=override)
    return got["comp"]


def _compare_kuramoto(chip, tokens, layer, head, plot_dir, seed):
    import torch

    model, cfg, lm = chip.model, chip.config, chip.layers[layer]
    theta, parts = _capture_kuramoto(model, tokens, layer)
    n_steps = max(int(math.ceil(cfg.settle_cycles * cfg.steps_per_cycle)), 4)
    fr = units.relative_frequency_to_rad_per_cycle(lm.freq_residual_rel)
    out = kuramoto_chip_step(
        theta.double().numpy(), parts.A.double().numpy(), parts.v.double().numpy(), n_heads=lm.n_heads,
        kappa=cfg.kappa, settle_cycles=cfg.settle_cycles, n_steps=n_steps, coupling_q=lm.coupling_quantiser,
        gain_q=lm.gain_quantiser, harmonics=chip.harmonics, freq_residual=fr if np.any(fr) else None,
        coupler_gain=lm.coupler_gain() if lm.coupler_spread_rel > 0 else None,
        sigma=chip.timebase["sigma_rad_per_sqrt_cycle"], readout=chip_readout(chip),
        seed=layer_seed(seed, layer), reference_bank=lm.banks == 2, save_every=1,
        row_scaled=cfg.coupling.row_scaled,
        **kuramoto_chip_extras(chip, lm, np.zeros(1, dtype=np.int64), theta.shape[1], layer_seed(seed, layer)))
    attn = model.layers[layer].attn
    va = torch.from_numpy(out.va)
    delta_chip = attn.apply_bound(va.to(theta.dtype), torch.from_numpy(out.a).to(theta.dtype) if out.a is not None
                                  else parts.a).double().numpy()
    kh, T = lm.head_dim, theta.shape[1]
    sl = slice(head * kh, (head + 1) * kh)
    va_cf = (parts.v * parts.a).double().numpy()[0, :, sl]
    va_chip = out.va[0, :, sl]
    d_cf, d_chip = parts.delta.double().numpy()[0, :, sl], delta_chip[0, :, sl]
    res = {
        "layer": layer, "head": head, "tokens": T, "kappa_tau": cfg.kappa_tau,
        "increment_rel_error": float(relative_error(va_chip, va_cf)),
        "increment_cosine": float(cosine_similarity(va_chip, va_cf)),
        "output_rel_error": float(relative_error(d_chip, d_cf)),
        "output_cosine": float(cosine_similarity(d_chip, d_cf)),
        "phase_error_rad": float(phase_error(d_chip, d_cf)),
    }
    if plot_dir is None:
        return res
    A = parts.A.double().numpy()[0, head]
    figs = {f"matrices_L{layer}_H{head}.png": _kuramoto_matrices_figure(A, va_cf, va_chip, layer, head, res, cfg),
            f"trajectories_L{layer}_H{head}.png": _kuramoto_trajectories_figure(out, head, va_cf, cfg)}
    res["plots"] = _save(figs, plot_dir)
    return res


def _compare_ssa(chip, tokens, layer, head, plot_dir, seed):
    model, cfg, lm = chip.model, chip.config, chip.layers[layer]
    comp = _capture_ssa(model, tokens, layer)
    S, locked, extra = _ssa_chip_S(chip, lm, comp, layer_seed(seed, layer), "auto", {})
    Sc = comp["S"].double().numpy()[0, head]
    Sh = S[0, head]
    lc = comp["locked"].numpy()[0, head]
    N = Sh.shape[0]
    allowed = ~np.eye(N, dtype=bool)
    if comp["causal"]:
        allowed &= np.tril(np.ones((N, N), dtype=bool))
    res = {"layer": layer, "head": head, "tokens": N, "mode": lm.kind,
           "S_rel_error": float(relative_error(Sh[allowed], Sc[allowed])),
           "S_cosine": float(cosine_similarity(Sh[allowed], Sc[allowed])),
           "locked_agreement": float(((locked[0, head] == lc) & allowed).sum() / allowed.sum())}
    if plot_dir is None:
        return res
    figs = {f"matrices_L{layer}_H{head}.png": _ssa_matrices_figure(Sc, Sh, allowed, layer, head, lm.kind, res),
            f"trajectories_L{layer}_H{head}.png": _ssa_network_figure(chip, lm, comp, head, allowed, seed)}
    res["plots"] = _save(figs, plot_dir)
    return res


# ----------------------------------------------------------------------------------------------- figures
# Every axis and colourbar names its quantity and unit; phases are in rad, time in oscillator cycles (1/f0);
# ratios and weights are dimensionless. Difference maps use a colour scale centred on zero.
_DIMLESS = "[dimensionless]"


def _save(figs: dict, plot_dir) -> list[str]:
    """Write each figure as ``plot_dir/name`` (PNG, 110 dpi), close it, and return the paths."""
    plt = _plt()
    plot_dir = Path(plot_dir)
    plot_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, fig in figs.items():
        if fig is None:
            continue
        fig.savefig(plot_dir / name, dpi=110)
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
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    fig.colorbar(im, ax=ax, label=cbar)
    return im


def _kuramoto_matrices_figure(A, va_cf, va_chip, layer, head, res, cfg):
    """Softmax weights A, the closed-form and chip increments, and their difference (one head)."""
    plt = _plt()
    fig, ax = plt.subplots(1, 4, figsize=(18, 4.4))
    _image(fig, ax[0], A, title=f"programmed coupling A (layer {layer}, head {head})",
           cbar=f"A_tu, softmax weight {_DIMLESS}", xlabel="key token index u", ylabel="query token index t")
    lim = float(np.max(np.abs(va_cf))) or 1.0
    inc = f"increment (v*a)_tj {_DIMLESS}"
    for a_, m, t in ((ax[1], va_cf, "closed form v*a"), (ax[2], va_chip, "chip (theta(tau)-theta(0))/(kappa tau)")):
        im = a_.imshow(m, aspect="auto", cmap="RdBu_r", vmin=-lim, vmax=lim)  # same scale, centred on 0
        a_.set_title(t, fontsize=9)
        a_.set_xlabel("coordinate index j")
        a_.set_ylabel("token index t")
        fig.colorbar(im, ax=a_, label=inc)
    _image(fig, ax[3], va_chip - va_cf, title="chip - closed form (own scale)", cbar=f"difference {_DIMLESS}",
           xlabel="coordinate index j", ylabel="token index t", centred=True, aspect="auto")
    fig.suptitle(f"Kuramoto chip vs closed form: rel. error {res['increment_rel_error']:.3g}, "
                 f"kappa*tau_s = {cfg.kappa_tau:.3g} rad")
    fig.tight_layout()
    return fig


def _kuramoto_trajectories_figure(out, head, va_cf, cfg):
    """Phase increments of a few tokens (coordinate 0) and the order parameter, chip vs first order."""
    plt = _plt()
    ts, traj = out.ts, out.traj[:, 0, head]  # (S, kh, T)
    th0 = traj[0]
    T = traj.shape[-1]
    fig, ax = plt.subplots(1, 2, figsize=(12, 4.2))
    for t in np.unique(np.linspace(1, T - 1, 5).astype(int)):
        line, = ax[0].plot(ts, traj[:, 0, t] - th0[0, t], label=f"t={t}")
        ax[0].plot(ts, cfg.kappa * ts * va_cf[t, 0], "--", color=line.get_color())
    ax[0].set_xlabel("time [cycles]")
    ax[0].set_ylabel("theta_t(s) - theta_t(0), coordinate 0 [rad]")
    ax[0].set_title("chip (solid) vs first-order closed form (dashed)")
    ax[0].legend(fontsize=8)
    R_chip = np.abs(np.exp(1j * traj).mean(-1)).mean(-1)
    pred = th0[None] + cfg.kappa * ts[:, None, None] * va_cf.T[None]
    R_cf = np.abs(np.exp(1j * pred).mean(-1)).mean(-1)
    ax[1].plot(ts, R_chip, label="chip network")
    ax[1].plot(ts, R_cf, "--", label="closed form (first order)")
    ax[1].set_xlabel("time [cycles]")
    ax[1].set_ylabel(f"order parameter R, mean over coordinates {_DIMLESS}")
    ax[1].legend()
    fig.tight_layout()
    return fig


def _ssa_matrices_figure(Sc, Sh, allowed, layer, head, kind, res):
    """Closed-form S, chip S and their difference (one head); the diagonal is digital on both."""
    plt = _plt()
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.4))
    lo, hi = float(min(Sc.min(), Sh.min())), float(max(Sc.max(), Sh.max()))
    for a_, m, t in ((ax[0], Sc, "closed form S"), (ax[1], Sh, f"chip S ({kind})")):
        im = a_.imshow(m, cmap="viridis", vmin=lo, vmax=hi)  # one scale for both
        a_.set_title(t, fontsize=9)
        a_.set_xlabel("key token index j")
        a_.set_ylabel("query token index i")
        fig.colorbar(im, ax=a_, label=f"S_ij = J_ij <cos phi_ij> {_DIMLESS}")
    _image(fig, ax[2], np.where(allowed, Sh - Sc, 0.0), title="chip - closed form (own scale)",
           cbar=f"difference of S {_DIMLESS}", xlabel="key token index j", ylabel="query token index i",
           centred=True)
    fig.suptitle(f"SSA layer {layer} head {head}: S rel. error {res['S_rel_error']:.3g}")
    fig.tight_layout()
    return fig


def _ssa_network_figure(chip, lm, comp, head, allowed, seed):
    """Time traces of the oscillator network this chip runs for one head, as programmed (quantised couplers,
    spread and residual frequency errors included).

    Pairwise chips: a few of the head's Adler cells (two oscillators each, `ssa_chip.adler_cell_network`),
    chosen across the range of Δω / (K r J) from deep locking to drifting; the phase difference φ and the
    running mean ⟨cos φ⟩ over the averaging window against the closed form. Collective chips: the head's
    N-oscillator network (`ssa_chip.collective_network`), neighbour phase differences and the order
    parameter. None when the model's frequencies are not scalar per token.
    """
    from .inference import _J_MIN
    from .ssa_chip import adler_cell_network, collective_network

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
    if lm.kind == "ssa-pairwise":
        ii, jj = np.nonzero(np.tril(allowed, -1) & (J >= _J_MIN))
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
        fig, ax = plt.subplots(1, 2, figsize=(12, 4.4))
        after = r.ts >= sc.settle_cycles
        for p in range(phi.shape[1]):
            rho = ratio[pick[p]]
            line, = ax[0].plot(r.ts, phi[:, p], label=f"cell ({ci[p]},{cj[p]}), dw/(KrJ) = {rho:.2f}")
            if rho < 1:
                ax[0].axhline(math.asin(rho), ls=":", color=line.get_color())
            run = np.cumsum(np.cos(phi[after, p])) / np.arange(1, after.sum() + 1)
            ax[1].plot(r.ts[after], run, color=line.get_color())
            ax[1].axhline(math.sqrt(1 - rho**2) if rho < 1 else 0.0, ls="--", color=line.get_color())
        ax[0].axvline(sc.settle_cycles, color="k", lw=0.8)
        ax[0].set_xlabel("time [cycles]")
        ax[0].set_ylabel("phase difference phi of the cell [rad]")
        ax[0].set_title("pairwise Adler cells as programmed (dotted: locked phi* = asin(dw/KrJ))", fontsize=9)
        ax[0].legend(fontsize=7)
        ax[1].set_xlabel("time [cycles]")
        ax[1].set_ylabel(f"running <cos phi> {_DIMLESS}")
        ax[1].set_title("mean over the averaging window: cells (solid) vs closed form sqrt(1 - (dw/KrJ)^2) "
                        "or 0 (dashed)", fontsize=8)
        fig.tight_layout()
        return fig
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
    fig, ax = plt.subplots(1, 2, figsize=(12, 4.4))
    for t in np.unique(np.linspace(1, N - 1, 5).astype(int)):
        ax[0].plot(r.ts, ys[:, t] - ys[:, t - 1], label=f"theta_{t} - theta_{t - 1}")
    ax[0].axvline(sc.settle_cycles, color="k", lw=0.8)
    ax[0].set_xlabel("time [cycles]")
    ax[0].set_ylabel("phase difference [rad]")
    ax[0].set_title(f"collective network of head {head} as programmed ({N} oscillators)", fontsize=9)
    ax[0].legend(fontsize=8)
    ax[1].plot(r.ts, np.abs(np.exp(1j * ys).mean(-1)), label="|mean e^{i theta}| (collective network)")
    ax[1].set_xlabel("time [cycles]")
    ax[1].set_ylabel(f"order parameter R {_DIMLESS}")
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    return fig


def compare_layer(chip, tokens, *, layer: int = 0, head: int = 0, plot_dir=None, seed: int = 0) -> dict:
    """Compare one layer and head of the chip with the closed form on ``tokens`` (1, T); optional plots.

    Returns a dict of metrics (and ``plots``, the written PNG paths).
    """
    import torch

    if not 0 <= layer < len(chip.layers):
        raise ValueError(f"--layer must be in [0, {len(chip.layers) - 1}], got {layer}")
    if not 0 <= head < chip.layers[layer].n_heads:
        raise ValueError(f"--head must be in [0, {chip.layers[layer].n_heads - 1}], got {head}")
    tokens = torch.as_tensor(tokens, dtype=torch.long)
    fn = _compare_kuramoto if chip.kind == "kuramoto" else _compare_ssa
    return fn(chip, tokens, layer, head, plot_dir, seed)
