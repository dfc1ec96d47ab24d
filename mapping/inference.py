"""Chip inference: :func:`run` a compiled chip on tokens, with per-layer/per-head fidelity against the closed form.

Kuramoto chips: scores, softmax, gates and the value gate stay digital; each layer's coupling step is one
batched engine call over (sequence, bank, head, coordinate) groups of T oscillators
(:func:`mapping.kuramoto_chip.kuramoto_chip_step`); the periphery applies the model's bound B.
SSA chips: J, Δω, r are digital; S is measured by pairwise Adler cells or, for SSA-1D, the collective
network (:mod:`mapping.ssa_chip`); normalisation, S V and the output projection are digital.

Per-layer fidelity compares the chip's layer output with the closed form **for the same input** (the chip's
own hidden state), so it isolates each layer's error; end-to-end, the chip's logits are compared with the
closed-form model's.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from . import units
from .chip import Chip
from .fidelity import bits_per_character
from .kuramoto_chip import kuramoto_chip_step
from .readout import PhaseReadout, wrap
from .ssa_chip import adler_cells, ssa1d_collective

__all__ = ["ChipRun", "run", "chip_readout", "layer_seed"]

_MAX_COUPLING_ELEMENTS = 2**24  # per engine call: 128 MiB of float64 couplings
_MAX_CELLS = 2**19
_J_MIN = 1e-6  # SSA cells with J below this are not built (S < 1e-6)


def layer_seed(seed: int, batch: int, layer: int) -> int:
    """The engine noise seed of one batch and layer of a run (independent streams via SeedSequence)."""
    return int(np.random.SeedSequence([int(seed), int(batch), int(layer)]).generate_state(1)[0])


def chip_readout(chip: Chip, window_cycles: float | None = None) -> PhaseReadout | None:
    """The chip's readout model (None when it is ideal: no noise, no quantisation, no detector filter).

    ``window_cycles``: the averaging window [cycles] when it is not ``readout.averaging_cycles`` (SSA chips
    average over ``ssa.averaging_cycles``)."""
    r = chip.config.readout
    noise = r.noise_rad if chip.config.noise else 0.0
    if noise == 0 and r.bits is None and r.bandwidth_fraction is None:
        return None
    return PhaseReadout(response=r.response, noise_rad=noise, bits=r.bits,
                        averaging_cycles=r.averaging_cycles if window_cycles is None else window_cycles,
                        samples_per_cycle=r.samples_per_cycle, bandwidth_fraction=r.bandwidth_fraction)


def kuramoto_chip_extras(chip: Chip, lm=None, B: int = 1, T: int | None = None, seed: int = 0) -> dict:
    """Device-realism arguments of :func:`kuramoto_chip_step` for this chip and layer ``lm``: the spin-torque
    complex-amplitude model when the chip's ``timebase['stno']`` says so (:mod:`mapping.stno_chip`) and the
    phase errors left by the injection in ``injected`` mode (:mod:`mapping.injection`)."""
    out = {}
    reg = chip.timebase.get("stno")
    if isinstance(reg, dict) and reg.get("model") == "amplitude":
        from .stno_chip import STNOAmplitudeModel

        out["amplitude"] = STNOAmplitudeModel.from_preset(chip.device.f0_hz, noise=chip.config.noise,
                                                          temperature_k=chip.config.temperature_k)
    if lm is not None and chip.config.injection.mode == "injected":
        from .injection import layer_initial_errors

        out["initial_phase_error"] = layer_initial_errors(chip, lm, B, T or lm.max_tokens, seed,
                                                          chip.timebase["sigma_rad_per_sqrt_cycle"])
    return out


class _HeadStats:
    """Running sums for per-head metrics."""

    def __init__(self, h):
        z = lambda: np.zeros(h)  # noqa: E731
        self.d2, self.r2, self.c2, self.dot = z(), z(), z(), z()
        self.va_d2, self.va_r2 = z(), z()
        self.ph, self.n = z(), z()
        self.R_chip, self.R_cf, self.nseq = z(), z(), z()
        self.S_d2, self.S_r2 = z(), z()
        self.agree, self.union, self.inter, self.npairs = z(), z(), z(), z()

    def add_out(self, chip, ref):  # (h, ...) arrays
        ax = tuple(range(1, chip.ndim))
        self.d2 += ((chip - ref) ** 2).sum(ax)
        self.r2 += (ref**2).sum(ax)
        self.c2 += (chip**2).sum(ax)
        self.dot += (chip * ref).sum(ax)

    def result(self):
        with np.errstate(invalid="ignore", divide="ignore"):
            out = {
                "rel_error": (np.sqrt(self.d2) / np.sqrt(self.r2)).tolist(),
                "cosine": (self.dot / np.sqrt(self.c2 * self.r2)).tolist(),
            }
            if self.va_r2.any():
                out["increment_rel_error"] = (np.sqrt(self.va_d2) / np.sqrt(self.va_r2)).tolist()
            if self.n.any():
                out["phase_error_rad"] = (self.ph / self.n).tolist()
            if self.nseq.any():
                out["order_parameter_chip"] = (self.R_chip / self.nseq).tolist()
                out["order_parameter_closed_form"] = (self.R_cf / self.nseq).tolist()
            if self.npairs.any():
                out["S_rel_error"] = (np.sqrt(self.S_d2) / np.sqrt(self.S_r2)).tolist()
                out["locked_agreement"] = (self.agree / self.npairs).tolist()
                out["locked_jaccard"] = (self.inter / self.union).tolist()
        out = {k: [None if not math.isfinite(x) else float(x) for x in v] for k, v in out.items()}
        # whole-layer summaries
        with np.errstate(invalid="ignore", divide="ignore"):
            out["layer_rel_error"] = _f(np.sqrt(self.d2.sum()) / np.sqrt(self.r2.sum()))
            out["layer_cosine"] = _f(self.dot.sum() / np.sqrt(self.c2.sum() * self.r2.sum()))
        return out


def _f(x):
    x = float(x)
    return x if math.isfinite(x) else None


@dataclass
class ChipRun:
    """Result of :func:`run`.

    Attributes
    ----------
    logits : (B, T, V) torch tensor, chip inference.
    logits_closed_form : (B, T, V) torch tensor or None, the closed-form model.
    layers : list of dict
        Per-layer fidelity, each metric a list over heads (see docs/mapping.md).
    n_tokens : int
    wall_s : float
        Wall time of the chip simulation (closed form excluded).
    backend : str
        'engine' or 'numpy'.
    """

    logits: object
    logits_closed_form: object
    layers: list
    n_tokens: int
    wall_s: float
    backend: str = ""
    extras: dict = field(default_factory=dict)

    @property
    def tokens_per_s(self) -> float:
        return self.n_tokens / self.wall_s if self.wall_s > 0 else math.inf

    def bpc(self, targets) -> dict:
        """BPC of the chip and of the closed form on ``targets`` (B, T)."""
        out = {"bpc_chip": bits_per_character(self.logits, targets)}
        if self.logits_closed_form is not None:
            out["bpc_closed_form"] = bits_per_character(self.logits_closed_form, targets)
        return out


def _progress(total, enabled, desc):
    if enabled is None:
        enabled = sys.stderr.isatty()
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not enabled, desc=desc, leave=False)


# ---------------------------------------------------------------------------------------------- Kuramoto
def _kuramoto_override(chip: Chip, stats, seed, batch_idx, backend, info):
    cfg = chip.config
    readout = chip_readout(chip)
    sigma = chip.timebase["sigma_rad_per_sqrt_cycle"]
    harmonics = chip.harmonics
    n_steps = max(int(math.ceil(cfg.settle_cycles * cfg.steps_per_cycle)), 4)
    model = chip.model
    def override(i, theta, parts):
        import torch

        lm = chip.layers[i]
        attn = model.layers[i].attn
        T = theta.shape[1]
        if T > lm.max_tokens:
            raise ValueError(f"sequence of {T} tokens is longer than the chip's arrays ({lm.max_tokens})")
        bank = lm.banks == 2
        fr = units.relative_frequency_to_rad_per_cycle(lm.freq_residual_rel)
        cg = lm.coupler_gain() if lm.coupler_spread_rel > 0 else None
        out = kuramoto_chip_step(
            theta.detach().double().numpy(), parts.A.detach().double().numpy(), parts.v.detach().double().numpy(),
            n_heads=lm.n_heads, kappa=cfg.kappa, settle_cycles=cfg.settle_cycles, n_steps=n_steps,
            coupling_q=lm.coupling_quantiser, gain_q=lm.gain_quantiser, harmonics=harmonics,
            freq_residual=fr if np.any(fr) else None, coupler_gain=cg, sigma=sigma, readout=readout,
            seed=layer_seed(seed, batch_idx, i), reference_bank=bank, backend=backend,
            row_scaled=cfg.coupling.row_scaled,
            **kuramoto_chip_extras(chip, lm, theta.shape[0], T, layer_seed(seed, batch_idx, i)))
        info["backend"] = out.backend
        va = torch.from_numpy(out.va).to(theta.dtype)
        a_ref = torch.from_numpy(out.a).to(theta.dtype) if bank else parts.a
        delta = attn.apply_bound(va, a_ref)
        # fidelity, same input θ
        h = lm.n_heads
        B, _, k = theta.shape
        ph = lambda x: np.asarray(x.detach().double()).reshape(B, T, h, k // h).transpose(2, 0, 1, 3)  # noqa: E731
        dc, dr = ph(delta), ph(parts.delta)
        st = stats[i]
        st.add_out(dc, dr)
        va_ref = ph(parts.v * parts.a)
        st.va_d2 += ((ph(va) - va_ref) ** 2).sum((1, 2, 3))
        st.va_r2 += (va_ref**2).sum((1, 2, 3))
        st.ph += np.abs(wrap(dc - dr)).sum((1, 2, 3))
        st.n += dc[0].size
        th = ph(theta)
        R = lambda x: np.abs(np.exp(1j * x).mean(axis=2)).mean(-1).sum(-1)  # noqa: E731  (h,) summed over B
        st.R_chip += R(th + dc)
        st.R_cf += R(th + dr)
        st.nseq += B
        return delta

    return override


def _run_kuramoto(chip, tokens, seed, progress, batch_size, closed_form, backend):
    import torch

    model = chip.model
    lm0 = chip.layers[0]
    per_seq = lm0.banks * lm0.n_heads * lm0.head_dim * tokens.shape[1] ** 2
    bs = batch_size or max(1, _MAX_COUPLING_ELEMENTS // per_seq)
    stats = [_HeadStats(lm.n_heads) for lm in chip.layers]
    info = {}
    logits, logits_cf = [], []
    wall = 0.0
    bar = _progress(math.ceil(tokens.shape[0] / bs), progress, "chip inference")
    with torch.no_grad():
        for b, start in enumerate(range(0, tokens.shape[0], bs)):
            x = tokens[start:start + bs]
            t0 = time.perf_counter()
            logits.append(model(x, attn_override=_kuramoto_override(chip, stats, seed, b, backend, info)))
            wall += time.perf_counter() - t0
            if closed_form:
                logits_cf.append(model(x))
            bar.update(1)
    bar.close()
    return (torch.cat(logits), torch.cat(logits_cf) if closed_form else None, [s.result() for s in stats], wall,
            info.get("backend", ""))


# ---------------------------------------------------------------------------------------------------- SSA
def _ssa_chip_S(chip: Chip, lm, comp, seed, backend, info):
    """Chip S (B, H, N, N), chip locked set and, for collective networks, the order parameter."""
    cfg = chip.config
    sc = cfg.ssa
    J = comp["J"].detach().double().numpy()
    dw = comp["delta_omega"].detach().double().numpy()
    thr = comp["threshold"].detach().double().numpy()
    K = float(comp["K"])
    causal = bool(comp["causal"])
    B, H, N, _ = J.shape
    sigma = chip.timebase["sigma_rad_per_sqrt_cycle"]
    readout = chip_readout(chip, window_cycles=sc.averaging_cycles)
    fr = units.relative_frequency_to_rad_per_cycle(lm.freq_residual_rel)
    cg = lm.coupler_gain() if lm.coupler_spread_rel > 0 else None
    tri = np.tril(np.ones((N, N), dtype=bool), -1)
    S = np.zeros_like(J)
    locked = np.zeros(J.shape, dtype=bool)
    idx = np.arange(N)
    S[:, :, idx, idx] = J[:, :, idx, idx]  # Δω_ii = 0: a token is locked to itself (digital)
    locked[:, :, idx, idx] = True
    extra = {}
    if lm.kind == "ssa-pairwise":
        sel = np.broadcast_to(tri, J.shape) & (J >= _J_MIN)
        b_i, h_i, i_i, j_i = np.nonzero(sel)
        if b_i.size:
            rate = lm.lam * float(np.max(dw[sel] + thr[sel]))
            spc = max(sc.steps_per_cycle, int(math.ceil(5 * rate)))
            res = adler_cells(
                dw[sel], thr[sel], lam=lm.lam, settle_cycles=sc.settle_cycles, averaging_cycles=sc.averaging_cycles,
                steps_per_cycle=spc, k_max=K, coupling_q=lm.coupling_quantiser, sigma=sigma,
                freq_residual=fr[h_i, i_i, j_i, :] if np.any(fr) else None,
                coupler_gain=cg[h_i, i_i, j_i] if cg is not None else None, seed=seed, backend=backend,
                harmonics=chip.harmonics)
            info["backend"] = res.backend
            mean_cos = res.mean_cos
            if readout is not None:  # the cell's mixer output, averaged over the window, sampler noise, ADC
                mean_cos = readout.measure_mean(mean_cos, np.random.default_rng([int(seed), 0x5EAD]))
            S[b_i, h_i, i_i, j_i] = J[sel] * mean_cos
            locked[b_i, h_i, i_i, j_i] = res.locked
            if not causal:  # r is shared by all rows: the cell (i, j) serves (j, i) too
                S[b_i, h_i, j_i, i_i] = S[b_i, h_i, i_i, j_i]
                locked[b_i, h_i, j_i, i_i] = res.locked
    else:
        omega = comp["omega"].detach().double().numpy()[..., 0]  # (B, H, N)
        om = omega - omega.mean(-1, keepdims=True)  # rotating frame at the mean
        rate = lm.lam * (float(np.max(np.abs(om))) + K)
        spc = max(sc.steps_per_cycle, int(math.ceil(5 * rate)))
        res = ssa1d_collective(
            om.reshape(B * H, N), thr.reshape(B * H, N, N), causal=causal, lam=lm.lam,
            settle_cycles=sc.settle_cycles, averaging_cycles=sc.averaging_cycles, steps_per_cycle=spc, k_max=K,
            coupling_q=lm.coupling_quantiser, sigma=sigma,
            freq_residual=np.broadcast_to(fr, (B, H, N)).reshape(B * H, N) if np.any(fr) else None,
            coupler_gain=np.broadcast_to(cg, (B, H, N, N)).reshape(B * H, N, N) if cg is not None else None,
            seed=seed, backend=backend, harmonics=chip.harmonics)
        info["backend"] = res.backend
        coh = res.coherence.reshape(B, H, N, N)
        if readout is not None:  # each pair's ⟨cos(θ_i − θ_j)⟩ read through the same detector chain
            coh = readout.measure_mean(coh, np.random.default_rng([int(seed), 0x5EAD]))
        mask = np.tril(np.ones((N, N), dtype=bool)) if causal else np.ones((N, N), dtype=bool)
        S = np.where(mask, J * coh, 0.0)
        S[:, :, idx, idx] = J[:, :, idx, idx]
        fq = res.freq.reshape(B, H, N)
        slip = 2 * math.pi / (sc.averaging_cycles + sc.settle_cycles)
        locked = (np.abs(fq[..., :, None] - fq[..., None, :]) < slip) & mask
        extra["coherence"] = coh
    return S, locked, extra


def _run_ssa(chip, tokens, seed, progress, batch_size, closed_form, backend):
    import torch

    model = chip.model
    N = tokens.shape[1]
    lm0 = chip.layers[0]
    per_seq = lm0.n_heads * N * N
    bs = batch_size or max(1, (_MAX_CELLS if lm0.kind == "ssa-pairwise" else _MAX_COUPLING_ELEMENTS) // per_seq)
    stats = [_HeadStats(lm.n_heads) for lm in chip.layers]
    info = {}
    logits, logits_cf = [], []
    wall = 0.0
    d = model.config.d_model
    bar = _progress(math.ceil(tokens.shape[0] / bs) * len(chip.layers), progress, "chip inference")
    with torch.no_grad():
        for b, start in enumerate(range(0, tokens.shape[0], bs)):
            tok = tokens[start:start + bs]
            if N > lm0.max_tokens:
                raise ValueError(f"sequence of {N} tokens is longer than the chip's arrays ({lm0.max_tokens})")
            t0 = time.perf_counter()
            x = model.embed(tok) * math.sqrt(d)
            for i, blk in enumerate(model.blocks):
                lm = chip.layers[i]
                comp = blk.attn.components(blk.norm1(x))
                S, lk, extra = _ssa_chip_S(chip, lm, comp, layer_seed(seed, b, i), backend, info)
                value = comp["value"].double()
                W = torch.from_numpy(S)
                W = W / (W.sum(-1, keepdim=True) + 1e-8)
                y = (W @ value)  # (B, H, N, dh)
                Wc = comp["weights"].double()
                yc = Wc @ value
                st = stats[i]
                st.add_out(y.numpy().transpose(1, 0, 2, 3), yc.numpy().transpose(1, 0, 2, 3))
                allowed = ~np.eye(N, dtype=bool)
                if comp["causal"]:
                    allowed &= np.tril(np.ones((N, N), dtype=bool))
                Sc = comp["S"].detach().double().numpy()
                lc = comp["locked"].detach().numpy()
                for hh in range(lm.n_heads):
                    m = np.broadcast_to(allowed, S[:, hh].shape)
                    st.S_d2[hh] += ((S[:, hh] - Sc[:, hh]) ** 2)[m].sum()
                    st.S_r2[hh] += (Sc[:, hh] ** 2)[m].sum()
                    a, c = lk[:, hh] & m, lc[:, hh] & m
                    st.agree[hh] += ((lk[:, hh] == lc[:, hh]) & m).sum()
                    st.inter[hh] += (a & c).sum()
                    st.union[hh] += (a | c).sum()
                    st.npairs[hh] += m.sum()
                    if "coherence" in extra:
                        Jh = comp["J"].detach().double().numpy()[:, hh]
                        with np.errstate(invalid="ignore", divide="ignore"):
                            sj = np.where(Jh > 0, Sc[:, hh] / np.where(Jh > 0, Jh, 1), 0)
                        st.R_chip[hh] += np.sqrt(np.clip(extra["coherence"][:, hh][m].reshape(S.shape[0], -1).mean(-1), 0, None)).sum()
                        st.R_cf[hh] += np.sqrt(np.clip(sj[m].reshape(S.shape[0], -1).mean(-1), 0, None)).sum()
                        st.nseq[hh] += S.shape[0]
                out = blk.attn.out(y.to(x.dtype).transpose(1, 2).reshape(x.shape[0], N, d))
                x = x + out
                x = x + blk.ffn(blk.norm2(x))
                bar.update(1)
            logits.append(model.norm(x) @ model.embed.weight.T)
            wall += time.perf_counter() - t0
            if closed_form:
                logits_cf.append(model(tok))
    bar.close()
    return (torch.cat(logits), torch.cat(logits_cf) if closed_form else None, [s.result() for s in stats], wall,
            info.get("backend", ""))


def run(chip: Chip, tokens, *, seed: int = 0, progress: bool | None = None, batch_size: int | None = None,
        closed_form: bool = True, backend: str = "auto") -> ChipRun:
    """Run chip inference on byte tokens.

    Parameters
    ----------
    chip : Chip
        From :func:`mapping.compile` or :func:`mapping.load_chip` (its ``model`` attached).
    tokens : (B, T) int64 tensor or array
        Sequences of at most the chip's ``max_tokens``.
    seed : int
        Noise seed of this run (the mismatch is the chip's); same seed, same numbers.
    progress : bool, optional
        tqdm progress bar (default: when stderr is a terminal).
    batch_size : int, optional
        Sequences per engine call (default: as many as fit a 128 MiB coupling array).
    closed_form : bool
        Also compute the closed-form logits (for BPC comparison).
    backend : {'auto', 'engine', 'numpy'}

    Returns
    -------
    ChipRun
    """
    import torch

    if chip.model is None:
        raise ValueError("the chip has no model attached; use mapping.load_chip(path) or attach_model(chip, model)")
    tokens = torch.as_tensor(tokens, dtype=torch.long)
    if tokens.dim() != 2:
        raise ValueError(f"tokens must have shape (B, T), got {tuple(tokens.shape)}")
    fn = _run_kuramoto if chip.kind == "kuramoto" else _run_ssa
    logits, logits_cf, layers, wall, backend_used = fn(chip, tokens, seed, progress, batch_size, closed_form, backend)
    return ChipRun(logits=logits, logits_closed_form=logits_cf, layers=layers, n_tokens=int(tokens.numel()),
                   wall_s=wall, backend=backend_used)
