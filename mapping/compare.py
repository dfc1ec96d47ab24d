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
        row_scaled=cfg.coupling.row_scaled, **kuramoto_chip_extras(chip))
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
    plt = _plt()
    plot_dir = Path(plot_dir)
    plot_dir.mkdir(parents=True, exist_ok=True)
    A = parts.A.double().numpy()[0, head]
    fig, ax = plt.subplots(1, 4, figsize=(17, 4.2))
    im = ax[0].imshow(A, cmap="viridis")
    ax[0].set_title(f"A (layer {layer}, head {head})")
    fig.colorbar(im, ax=ax[0])
    lim = float(np.max(np.abs(va_cf))) or 1.0
    for a_, m, t in ((ax[1], va_cf, "closed form v*a"), (ax[2], va_chip, "chip (theta(tau)-theta(0))/(kappa tau)"),
                     (ax[3], va_chip - va_cf, "chip - closed form")):
        im = a_.imshow(m, aspect="auto", cmap="RdBu_r", vmin=-lim, vmax=lim)
        a_.set_title(t, fontsize=9)
        a_.set_xlabel("coordinate j")
        a_.set_ylabel("token t")
        fig.colorbar(im, ax=a_)
    fig.suptitle(f"Kuramoto chip vs closed form: rel. error {res['increment_rel_error']:.3g}, "
                 f"kappa*tau_s = {cfg.kappa_tau:.3g} rad")
    fig.tight_layout()
    p1 = plot_dir / f"matrices_L{layer}_H{head}.png"
    fig.savefig(p1, dpi=110)
    plt.close(fig)
    # trajectories of a few tokens (coordinate 0) and the order parameter traces
    ts, traj = out.ts, out.traj[:, 0, head]  # (S, kh, T)
    th0 = traj[0]
    fig, ax = plt.subplots(1, 2, figsize=(12, 4.2))
    for t in np.unique(np.linspace(1, T - 1, 5).astype(int)):
        line, = ax[0].plot(ts, traj[:, 0, t] - th0[0, t], label=f"t={t}")
        ax[0].plot(ts, cfg.kappa * ts * va_cf[t, 0], "--", color=line.get_color())
    ax[0].set_xlabel("time [cycles]")
    ax[0].set_ylabel("theta_t(s) - theta_t(0) [rad], coordinate 0")
    ax[0].set_title("chip (solid) vs first-order closed form (dashed)")
    ax[0].legend(fontsize=8)
    R_chip = np.abs(np.exp(1j * traj).mean(-1)).mean(-1)
    pred = th0[None] + cfg.kappa * ts[:, None, None] * va_cf.T[None]
    R_cf = np.abs(np.exp(1j * pred).mean(-1)).mean(-1)
    ax[1].plot(ts, R_chip, label="chip network")
    ax[1].plot(ts, R_cf, "--", label="closed form (first order)")
    ax[1].set_xlabel("time [cycles]")
    ax[1].set_ylabel("order parameter R (mean over coordinates)")
    ax[1].legend()
    fig.tight_layout()
    p2 = plot_dir / f"trajectories_L{layer}_H{head}.png"
    fig.savefig(p2, dpi=110)
    plt.close(fig)
    res["plots"] = [str(p1), str(p2)]
    return res


def _compare_ssa(chip, tokens, layer, head, plot_dir, seed):
    import torch

    model, cfg, lm = chip.model, chip.config, chip.layers[layer]
    with torch.no_grad():
        x = model.embed(tokens) * math.sqrt(model.config.d_model)
        for i, blk in enumerate(model.blocks):
            if i == layer:
                comp = blk.attn.components(blk.norm1(x))
                break
            x = blk(x)
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
    plt = _plt()
    plot_dir = Path(plot_dir)
    plot_dir.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(1, 3, figsize=(14, 4.2))
    for a_, m, t in ((ax[0], Sc, "closed form S"), (ax[1], Sh, f"chip S ({lm.kind})"), (ax[2], Sh - Sc, "chip - closed form")):
        im = a_.imshow(m, cmap="RdBu_r" if a_ is ax[2] else "viridis")
        a_.set_title(t)
        fig.colorbar(im, ax=a_)
    fig.suptitle(f"SSA layer {layer} head {head}: S rel. error {res['S_rel_error']:.3g}")
    fig.tight_layout()
    p1 = plot_dir / f"matrices_L{layer}_H{head}.png"
    fig.savefig(p1, dpi=110)
    plt.close(fig)
    # trajectories of the collective network of this head (even for pairwise chips, as the physical picture)
    sc = cfg.ssa
    omega = comp["omega"].double().numpy()[0, head, :, 0] if comp["omega"].shape[-1] == 1 else None
    p2 = None
    if omega is not None:
        thr = comp["threshold"].double().numpy()[0, head]
        K = float(comp["K"])
        om = lm.lam * (omega - omega.mean())
        C = lm.lam * thr * (np.tril(np.ones((N, N)), -1) if comp["causal"] else 0.5 * (1 - np.eye(N)))
        t1 = sc.settle_cycles + sc.averaging_cycles
        spc = max(sc.steps_per_cycle, int(math.ceil(5 * lm.lam * (np.abs(om).max() / lm.lam + K))))
        n = int(t1 * spc)
        r = integrate_phase(om[None], C[None], np.zeros((1, N)), t1=t1, n_steps=n, save_every=max(1, n // 400),
                            sigma=chip.timebase["sigma_rad_per_sqrt_cycle"], seed=seed)
        fig, ax = plt.subplots(1, 2, figsize=(12, 4.2))
        ys = r.ys[:, 0]
        for t in np.unique(np.linspace(1, N - 1, 5).astype(int)):
            ax[0].plot(r.ts, ys[:, t] - ys[:, t - 1], label=f"theta_{t} - theta_{t - 1}")
        ax[0].set_xlabel("time [cycles]")
        ax[0].set_ylabel("phase difference [rad]")
        ax[0].legend(fontsize=8)
        ax[1].plot(r.ts, np.abs(np.exp(1j * ys).mean(-1)), label="|mean e^{i theta}| (collective network)")
        ax[1].axhline(float(np.sqrt(np.clip((Sc / np.where(comp['J'].double().numpy()[0, head] > 0,
                                                              comp['J'].double().numpy()[0, head], 1))[allowed].mean(),
                                            0, None))), ls="--", color="k", label="closed-form pairwise sqrt(mean S/J)")
        ax[1].set_xlabel("time [cycles]")
        ax[1].legend(fontsize=8)
        fig.tight_layout()
        p2 = plot_dir / f"trajectories_L{layer}_H{head}.png"
        fig.savefig(p2, dpi=110)
        plt.close(fig)
    res["plots"] = [str(p1)] + ([str(p2)] if p2 else [])
    return res


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
