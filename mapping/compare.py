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


# ------------------------------------------------------------------------------------ the fidelity ladder
LEVELS = ("closed-form", "macromodel", "circuit", "spice")
"""Rungs of ``oscsim compare --levels`` (DESIGN.md §5.4), in ladder order."""
LADDER_STEPS_PER_PERIOD = 200
"""Circuit step of the ladder (RK4 at T/200: its phase calibration spread is 2e-5 rad, 10x below T/100)."""


def parse_levels(text: str) -> list:
    """``"closed-form,circuit"`` -> ordered list of rungs; unknown names raise naming ``--levels``."""
    names = [x.strip() for x in str(text).split(",") if x.strip()]
    bad = [x for x in names if x not in LEVELS]
    if bad or not names:
        raise ValueError(f"--levels: unknown rung(s) {bad or names}; valid: {', '.join(LEVELS)}")
    if len(set(names)) != len(names):
        raise ValueError(f"--levels: a rung is named twice in {names}")
    return [x for x in LEVELS if x in names]


def _stats(x) -> dict:
    x = np.asarray(x, float).ravel()
    return {"n": int(x.size), "mean": float(x.mean()), "std": float(x.std()), "rms": float(np.sqrt(np.mean(x**2))),
            "min": float(x.min()), "max": float(x.max())}


def _crossing_traj(t, v0, omega, vm, theta0, offset=0.0):
    """Phase trajectory points from node-0 waveforms: per ring the times t_k of rising crossings and
    wrap(−ω t_k − offset − θ₀) [rad]. v0 (S, N); returns list of N (t_k, dψ_k)."""
    from .circuit_chip import _crossings

    si, ri, tc = _crossings(np.asarray(t), np.asarray(v0), vm)
    from .readout import wrap

    out = []
    for r in range(v0.shape[1]):
        tk = tc[ri == r]
        out.append((tk, wrap(-omega * tk - offset - theta0[r])))
    return out


def compare_levels(chip, tokens, *, layer: int = 0, head: int = 0, levels=LEVELS, plot_dir=None,
                   noise: bool = False) -> dict:
    """Run one compiled head at several rungs of the fidelity ladder on the same input and mismatch draw.

    The same input phases θ, weights A and gates v (the model's own forward pass on ``tokens`` (1, T)), the
    same quantised couplers and gains, the same coupler spread and residual frequency errors (the chip's draw)
    and, at circuit level and in ngspice, the same transistor mismatch and start state. Noise is off at every
    rung by default (``noise``: thermal noise in the circuit and phase diffusion in the macromodel, each its
    own draw), and the detector is ideal, so the differences are those of the models. The macromodel uses
    the coupling function of the coupler the circuit has (two-tap transconductor H from the ring's PPV).

    Returns
    -------
    dict
        ``levels.<name>.increment`` (statistics of the head's (T, k_h) increment estimate x̂ = v ⊙ a),
        ``levels.<name>.wall_s``, ``pairwise.<a>_vs_<b>.rel_error`` = ‖x_a − x_b‖/‖x_b‖ (b the later rung)
        and ``.cosine`` for every pair run, and ``plots``.
    """
    import time

    import torch

    from .circuit_chip import circuit_device, layer_head, periphery, simulate_heads

    levels = parse_levels(",".join(levels)) if not isinstance(levels, str) else parse_levels(levels)
    if chip.kind != "kuramoto":
        raise ValueError("--levels: the fidelity ladder is built for Kuramoto heads; the circuit rung is not built "
                         "for SSA")
    if not 0 <= layer < len(chip.layers):
        raise ValueError(f"--layer must be in [0, {len(chip.layers) - 1}], got {layer}")
    lm = chip.layers[layer]
    if not 0 <= head < lm.n_heads:
        raise ValueError(f"--head must be in [0, {lm.n_heads - 1}], got {head}")
    if not chip.device.name.startswith("ring") and set(levels) - {"closed-form"}:
        raise ValueError(f"--levels: the macromodel, circuit and spice rungs are CMOS ring circuits; this chip's "
                         f"device is {chip.device.name!r} (compile with device = 'ring-macromodel' or 'ring-circuit')")
    tokens = torch.as_tensor(tokens, dtype=torch.long)
    T = int(tokens.shape[1])
    if "spice" in levels:
        from .spice_export import SPICE_MAX_TOKENS

        if T > SPICE_MAX_TOKENS:
            raise ValueError(f"--seq-len: the spice rung allows T <= {SPICE_MAX_TOKENS}, got {T}")
    cfg = chip.config
    theta, parts = _capture_kuramoto(chip.model, tokens, layer)
    th, A, v = theta.double().numpy(), parts.A.double().numpy(), parts.v.double().numpy()
    kh = lm.head_dim
    sl = slice(head * kh, (head + 1) * kh)
    dev = circuit_device(cfg.f0_hz, float(cfg.temperature_k))
    x, wall, traj = {}, {}, {}
    t0 = time.perf_counter()
    x["closed-form"] = (parts.v * parts.a).double().numpy()[0, :, sl]
    wall["closed-form"] = time.perf_counter() - t0
    if "macromodel" in levels:
        t0 = time.perf_counter()
        n_steps = max(int(math.ceil(cfg.settle_cycles * cfg.steps_per_cycle)), 4)
        fr = units.relative_frequency_to_rad_per_cycle(lm.freq_residual_rel) if cfg.mismatch else None
        out = kuramoto_chip_step(
            th, A, v, n_heads=lm.n_heads, kappa=cfg.kappa, settle_cycles=cfg.settle_cycles, n_steps=n_steps,
            coupling_q=lm.coupling_quantiser, gain_q=lm.gain_quantiser, harmonics=dev.harmonics,
            freq_residual=fr[:1] if fr is not None else None,
            coupler_gain=lm.coupler_gain()[:1] if lm.coupler_spread_rel > 0 and cfg.mismatch else None,
            sigma=chip.timebase["sigma_rad_per_sqrt_cycle"] if noise else 0.0, readout=None, seed=0,
            reference_bank=False, save_every=1, row_scaled=cfg.coupling.row_scaled)
        x["macromodel"] = out.va[0, :, sl]
        wall["macromodel"] = time.perf_counter() - t0
        traj["macromodel"] = (out.ts, out.traj[:, 0, head] - out.traj[:1, 0, head])  # (S,), (S, kh, T)
    hd = meta = None
    if "circuit" in levels or "spice" in levels:
        hd, meta = layer_head(chip, layer, th, A, v, reference_bank=False, noise=noise,
                              steps_per_period=LADDER_STEPS_PER_PERIOD, heads=[head])
    vm = 0.5 * dev.ring.vdd_v

    def waveform_rung(name, simulate, reference_offset):
        """A rung that runs the head's ring circuits: phases read through the chip's periphery, and (for the
        plots) node 0's trajectory from its crossings; ``reference_offset(result)`` is the reference bank's
        phase offset of the simulator's result."""
        t0 = time.perf_counter()
        res = simulate(hd, settle_cycles=cfg.settle_cycles, return_waveforms=plot_dir is not None)
        x[name] = periphery(chip, hd, meta, res["psi"])[0][0, :, sl]
        wall[name] = time.perf_counter() - t0
        if plot_dir is not None:
            traj[name] = _crossing_traj(res["t"], res["v0"][:, 0], 2 * math.pi / dev.period_s, vm, hd.theta0[0],
                                        reference_offset(res))

    if "circuit" in levels:
        waveform_rung("circuit", simulate_heads, lambda c: c["reference_offset_rad"])
    if "spice" in levels:
        from .spice_export import run_head_spice

        waveform_rung("spice", run_head_spice, lambda sp: sp["reference_offset_rad"][0])
    res = {"layer": layer, "head": head, "tokens": T, "kappa_tau": cfg.kappa_tau, "noise": bool(noise),
           "mismatch": bool(cfg.mismatch), "levels": {}, "pairwise": {},
           "models": {"closed-form": "the model's own increment v * a",
                      "macromodel": f"phase network, two-tap transconductor H from the ring PPV (a1 = 1, "
                                    f"{len(dev.harmonics)} harmonics), {cfg.steps_per_cycle} steps/cycle",
                      "circuit": f"node-voltage ODEs, {dev.ring.n_stages}-stage level-1 rings, RK4 at "
                                 f"T/{LADDER_STEPS_PER_PERIOD}" + (", stochastic Heun with thermal noise" if noise else ""),
                      "spice": "ngspice transient of the exported netlist (reltol 1e-6, max step T/800)"}}
    for name in levels:
        res["levels"][name] = {"increment": _stats(x[name]), "wall_s": wall[name]}
    for i, a in enumerate(levels):
        for b in levels[i + 1:]:
            res["pairwise"][f"{a}_vs_{b}"] = {"rel_error": float(relative_error(x[a], x[b])),
                                              "cosine": float(cosine_similarity(x[a], x[b]))}
    if plot_dir is None:
        return res
    plt = _plt()
    plot_dir = Path(plot_dir)
    plot_dir.mkdir(parents=True, exist_ok=True)
    styles = {"closed-form": ("k", "--", ""), "macromodel": ("C0", "-", ""), "circuit": ("C1", "", "o"),
              "spice": ("C3", "", "x")}
    fig, ax = plt.subplots(1, 2, figsize=(13, 4.4))
    ref = x[levels[-1]].ravel()
    for name in levels:
        col, ls, mk = styles[name]
        ax[0].plot(ref, x[name].ravel(), linestyle="none", marker=mk or ".", color=col, ms=4, label=name)
        ax[1].plot(np.arange(T), x[name][:, 0], color=col, linestyle=ls or "none", marker=mk or None, label=name)
    lim = float(np.max(np.abs(ref))) or 1.0
    ax[0].plot([-lim, lim], [-lim, lim], color="0.6", lw=0.8)
    ax[0].set_xlabel(f"increment x = v*a at the last rung ({levels[-1]})")
    ax[0].set_ylabel("increment x at each rung")
    ax[0].set_title(f"layer {layer} head {head}: all {T} tokens x {kh} coordinates")
    ax[0].legend(fontsize=8)
    ax[1].set_xlabel("token t")
    ax[1].set_ylabel("increment x_t, coordinate 0 [1]")
    ax[1].set_title("increment estimate per rung (coordinate 0)")
    ax[1].legend(fontsize=8)
    fig.suptitle("fidelity ladder: " + ", ".join(f"{k} {v['rel_error']:.3g}" for k, v in res["pairwise"].items()),
                 fontsize=9)
    fig.tight_layout()
    p1 = plot_dir / f"ladder_increments_L{layer}_H{head}.png"
    fig.savefig(p1, dpi=100)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(8, 4.6))
    for j, t in enumerate(np.unique(np.linspace(1, T - 1, 4).astype(int))):
        c = f"C{j}"
        if "macromodel" in traj:
            ts, tr = traj["macromodel"]
            ax.plot(ts, tr[:, 0, t], color=c, label=f"t={t} macromodel" if j == 0 else None)
        ax.plot([0, cfg.settle_cycles], [0, cfg.kappa_tau * x["closed-form"][t, 0]], "--", color=c, lw=0.8,
                label="closed form (first order)" if j == 0 else None)
        for name, mk in (("circuit", "o"), ("spice", "x")):
            if name in traj:
                tk, dpsi = traj[name][t]
                ax.plot(tk / dev.period_s, dpsi, linestyle="none", marker=mk, color=c, ms=5,
                        label=f"{name} (node-0 crossings)" if j == 0 else None)
    ax.axvline(cfg.settle_cycles, color="0.5", lw=0.8)
    ax.set_xlabel("time [cycles of f0]; couplers off at tau_s (grey line)")
    ax.set_ylabel("theta_t(s) - theta_t(0) [rad], coordinate 0")
    ax.set_title(f"trajectories per rung (layer {layer}, head {head})")
    ax.legend(fontsize=7)
    fig.tight_layout()
    p2 = plot_dir / f"ladder_trajectories_L{layer}_H{head}.png"
    fig.savefig(p2, dpi=100)
    plt.close(fig)
    res["plots"] = [str(p1), str(p2)]
    return res
