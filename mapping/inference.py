"""Chip inference: :func:`run` a compiled chip on tokens, with per-layer/per-head fidelity against the closed form.

Both model kinds run through the model's own forward pass, the chip filling its per-layer hook
(``attn_override``): nothing of a model's forward is re-implemented here. Each sequence goes through the
model on its own, on one torch thread; only the chip simulation of a layer is batched
(:func:`_forward_per_sequence`), so no matrix product's rounding depends on the batch or the thread count.

Kuramoto chips: scores, softmax, gates and the value gate stay digital; each layer's coupling step is one
batched engine call over (sequence, bank, head, coordinate) groups of T oscillators
(:func:`mapping.kuramoto_chip.kuramoto_chip_step`) and the hook returns the increment with the model's bound B.
SSA chips: J, Δω, r are digital; the hook returns S measured by pairwise Adler cells or, for SSA-1D, the
collective network (:mod:`mapping.ssa_chip`); the model's own top-k, normalisation, S V and projections follow.

Noise is keyed on (run seed, layer, the sequence's index in the whole run, and the object's own indices;
:mod:`mapping.seeds`), and each sequence integrates with a step set by its own rates, so the same seed
gives bit-identical outputs whatever ``batch_size`` and thread count.

Per-layer fidelity compares the chip's layer output with the closed form **for the same input** (the chip's
own hidden state), so it isolates each layer's error; end-to-end, the chip's logits are compared with the
closed-form model's.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from . import units
from .chip import Chip
from .fidelity import LayerFidelity, bits_per_character
from .kuramoto_chip import kuramoto_chip_step
from .readout import PhaseReadout
from .seeds import PURPOSE, keyed_normals, layer_seed, stream_seeds
from .ssa_chip import adler_cells, ssa1d_collective

__all__ = ["ChipRun", "run", "chip_readout", "layer_seed"]

_MAX_COUPLING_ELEMENTS = 2**24  # per engine call: 128 MiB of float64 couplings
_MAX_CELLS = 2**19
_J_MIN = 1e-6  # SSA cells with J below this are not built (S < 1e-6)


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


def kuramoto_chip_extras(chip: Chip, lm=None, sequence_ids=None, T: int | None = None, seed: int = 0,
                         amplitude: bool = True) -> dict:
    """Device-realism arguments of :func:`kuramoto_chip_step` for this chip and layer ``lm``: the spin-torque
    complex-amplitude model when the chip's ``timebase['stno']`` says so (:mod:`mapping.stno_chip`;
    ``amplitude=False`` leaves it out) and, for ``lm`` in ``[injection] mode = "injected"``, the phase errors
    left by the injection of the sequences ``sequence_ids`` (:mod:`mapping.injection`, keyed per sequence)."""
    out = {}
    reg = chip.timebase.get("stno")
    if amplitude and isinstance(reg, dict) and reg.get("model") == "amplitude":
        from .stno_chip import STNOAmplitudeModel

        out["amplitude"] = STNOAmplitudeModel.from_params(chip.device, noise=chip.config.noise,
                                                          temperature_k=chip.config.temperature_k)
    if lm is not None and chip.config.injection.mode == "injected":
        from .injection import layer_initial_errors

        out["initial_phase_error"] = layer_initial_errors(chip, lm, sequence_ids, T or lm.max_tokens, seed,
                                                          chip.timebase["sigma_rad_per_sqrt_cycle"])
    return out


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
    from tqdm import tqdm  # the plain bar: tqdm.auto warns in notebooks without ipywidgets

    return tqdm(total=total, disable=not enabled, desc=desc, leave=False)


# ---------------------------------------------------------------------------------------------- Kuramoto
def _kuramoto_override(chip: Chip, stats, seed, seq_ids, backend, info):
    cfg = chip.config
    readout = chip_readout(chip)
    extras = kuramoto_chip_extras(chip)
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
        step = kuramoto_chip_step
        if cfg.device == "ring-circuit":  # node-voltage SDEs of every ring and coupler (mapping.circuit_chip)
            from .circuit_chip import circuit_step_for

            step = circuit_step_for(chip, i)
        out = step(
            theta.detach().double().numpy(), parts.A.detach().double().numpy(), parts.v.detach().double().numpy(),
            n_heads=lm.n_heads, kappa=cfg.kappa, settle_cycles=cfg.settle_cycles, n_steps=n_steps,
            coupling_q=lm.coupling_quantiser, gain_q=lm.gain_quantiser, harmonics=harmonics,
            freq_residual=fr if np.any(fr) else None, coupler_gain=cg, readout=readout,
            sigma=sigma * np.sqrt(lm.diffusion_rel) if sigma and np.any(lm.diffusion_rel != 1) else sigma,
            seed=layer_seed(seed, i), reference_bank=bank, backend=backend,
            row_scaled=cfg.coupling.row_scaled, sequence_ids=seq_ids, **extras,
            **kuramoto_chip_extras(chip, lm, seq_ids, T, layer_seed(seed, i), amplitude=False))
        info["backend"] = out.backend
        va = torch.from_numpy(out.va).to(theta.dtype)
        a_ref = torch.from_numpy(out.a).to(theta.dtype) if bank else parts.a
        # the bound per sequence, as the model's own torch operations (see _forward_per_sequence)
        delta = torch.cat([attn.apply_bound(va[b:b + 1], None if a_ref is None else a_ref[b:b + 1])
                           for b in range(va.shape[0])])
        dd = lambda x: np.asarray(x.detach().double())  # noqa: E731
        stats[i].add_kuramoto(dd(theta), dd(delta), dd(parts.delta), dd(va), dd(parts.v * parts.a))
        return delta

    return override


def _batches(tokens, bs):
    """(start, window batch) pairs of at most ``bs`` sequences."""
    return [(start, tokens[start:start + bs]) for start in range(0, tokens.shape[0], bs)]


class _Abort(Exception):
    """Unwinds a sequence's forward pass parked in the chip hook when the batch fails elsewhere."""


def _stack(values):
    """One batched hook argument from its per-sequence values (see :func:`_forward_per_sequence`).

    A tensor whose first dimension is the batch (size one here) is concatenated; a dataclass or dict is stacked
    field by field; a float that differs between sequences is a per-sequence statistic (e.g. an SSA layer's
    ``locked_fraction``, a share of equally many pairs per sequence) and is averaged; anything else is a model
    constant (K, α, top-k, causal) and passed on from the first sequence.
    """
    import dataclasses

    import torch

    v0 = values[0]
    if isinstance(v0, torch.Tensor) and v0.dim() > 0 and v0.shape[0] == 1:
        return torch.cat(values)
    if dataclasses.is_dataclass(v0) and not isinstance(v0, type):
        return dataclasses.replace(v0, **{f.name: _stack([getattr(v, f.name) for v in values])
                                          for f in dataclasses.fields(v0)})
    if isinstance(v0, dict):
        return {k: _stack([v[k] for v in values]) for k in v0}
    if isinstance(v0, float) and any(v != v0 for v in values):
        return float(np.mean(values))
    return v0


def _forward_per_sequence(model, x, override):
    """Logits (B, T, V) of ``model`` on tokens ``x`` (B, T) with the chip hook ``override``, whatever the batch.

    Every torch operation of the model runs on one sequence at a time: a CPU matrix product (MKL) gives a row a
    result that depends on how many rows the matrix has, where the row sits and how the rows are split over
    threads, so a sequence's logits would otherwise change in the last bits with the other sequences of its
    batch. Only the chip simulation is batched. Each sequence's forward pass runs in its own thread, but one at
    a time (the main thread hands over, so torch calls never overlap): at layer i it parks in the hook with its
    arguments; when all B have arrived, the arguments are stacked, ``override(i, *args)`` simulates the whole
    batch in one call, and each sequence resumes with its own slice (a fresh copy) of the result.
    """
    import queue
    import threading

    import torch

    B = x.shape[0]
    arrived = queue.Queue()  # (b, kind, payload) from the workers: "hook" (args), "done" (logits), "error"
    resume = [queue.Queue() for _ in range(B)]

    def work(b):
        def hook(j, *args):
            arrived.put((b, "hook", (j, args)))
            out = resume[b].get()
            if out is _Abort:
                raise _Abort
            return out

        try:
            with torch.no_grad():  # grad mode is per thread
                arrived.put((b, "done", model(x[b:b + 1], attn_override=hook)))
        except _Abort:
            arrived.put((b, "aborted", None))
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread, which raises it
            arrived.put((b, "error", exc))

    def step(b, value=None):
        """Let sequence b run (start it, or resume it with ``value``) until it parks in the hook or ends."""
        if threads[b].ident is None:
            threads[b].start()
        else:
            resume[b].put(value)
        _, kind, payload = arrived.get()
        if kind == "error":
            raise payload
        return kind, payload

    threads = [threading.Thread(target=work, args=(b,), name=f"chip-sequence-{b}", daemon=True) for b in range(B)]
    try:
        reports = [step(b) for b in range(B)]
        while any(kind == "hook" for kind, _ in reports):
            layers = {payload[0] if kind == "hook" else None for kind, payload in reports}
            if len(layers) != 1:  # one model, one path: cannot happen
                raise RuntimeError("the sequences of one batch reached different layers")
            gathered = [payload[1] for _, payload in reports]
            out = override(layers.pop(), *[_stack([g[k] for g in gathered]) for k in range(len(gathered[0]))])
            reports = [step(b, out[b:b + 1].clone()) for b in range(B)]
        return torch.cat([payload for _, payload in reports])
    finally:  # after a failure, sequences still waiting in (or heading for) the hook unwind
        for b in range(B):
            if threads[b].is_alive():
                resume[b].put(_Abort)
        for t in threads:
            if t.ident is not None:
                t.join()


@contextlib.contextmanager
def _one_torch_thread():
    """Run the model's torch operations on one thread (the caller's setting restored after): MKL splits a
    product's rows over its threads, so a row's rounding would depend on the thread count. The chip
    simulation keeps Numba's threads."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _run_model(chip, tokens, bs, make_override, progress, closed_form):
    """Chip logits (and closed-form logits) over batches, each sequence through the model's own forward on one
    torch thread (the chip simulation batched; see :func:`_forward_per_sequence`)."""
    import torch

    logits, logits_cf = [], []
    wall = 0.0
    batches = _batches(tokens, bs)
    bar = _progress(len(batches), progress, "chip inference")
    with torch.no_grad(), _one_torch_thread():
        for start, x in batches:
            seq_ids = np.arange(start, start + x.shape[0])
            t0 = time.perf_counter()
            logits.append(_forward_per_sequence(chip.model, x, make_override(seq_ids)))
            wall += time.perf_counter() - t0
            if closed_form:  # one sequence at a time too: the same numbers whatever the batch
                logits_cf.extend(chip.model(x[b:b + 1]) for b in range(x.shape[0]))
            bar.update(1)
    bar.close()
    return torch.cat(logits), torch.cat(logits_cf) if closed_form else None, wall


def _run_kuramoto(chip, tokens, seed, progress, batch_size, closed_form, backend):
    lm0 = chip.layers[0]
    per_seq = lm0.banks * lm0.n_heads * lm0.head_dim * tokens.shape[1] ** 2
    bs = batch_size or max(1, _MAX_COUPLING_ELEMENTS // per_seq)
    stats = [LayerFidelity(lm.n_heads) for lm in chip.layers]
    info = {}
    logits, logits_cf, wall = _run_model(
        chip, tokens, bs, lambda ids: _kuramoto_override(chip, stats, seed, ids, backend, info), progress,
        closed_form)
    return logits, logits_cf, [s.result() for s in stats], wall, info.get("backend", "")


# ---------------------------------------------------------------------------------------------------- SSA
def _ssa_chip_S(chip: Chip, lm, comp, seed, backend, info, seq_ids=None):
    """Chip S (B, H, N, N), chip locked set and, for collective networks, the order parameter.

    ``seq_ids`` (B,): each sequence's index in the run, on which the cells' and networks' noise is keyed.
    """
    cfg = chip.config
    sc = cfg.ssa
    J = comp["J"].detach().double().numpy()
    dw = comp["delta_omega"].detach().double().numpy()
    thr = comp["threshold"].detach().double().numpy()
    K = float(comp["K"])
    causal = bool(comp["causal"])
    B, H, N, _ = J.shape
    seq = np.arange(B) if seq_ids is None else np.asarray(seq_ids)
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
            # each sequence's own time step, from its own fastest cell (not the batch's: a sequence's numbers
            # must not depend on the other sequences of its batch); cells of equal step share one call
            top = np.full(B, -np.inf)
            np.maximum.at(top, b_i, dw[sel] + thr[sel])
            spc = np.maximum(sc.steps_per_cycle, np.ceil(5 * (lm.lam * top[b_i])).astype(np.int64))
            sig = sigma * np.sqrt(lm.diffusion_rel[h_i, i_i, j_i, :]) if sigma else None
            frc = fr[h_i, i_i, j_i, :] if np.any(fr) else None
            cgc = cg[h_i, i_i, j_i] if cg is not None else None
            keys = np.stack([seq[b_i], h_i, i_i, j_i], axis=-1)
            mean_cos, cell_locked = np.empty(b_i.size), np.empty(b_i.size, dtype=bool)
            for s in np.unique(spc):
                c = np.flatnonzero(spc == s)
                res = adler_cells(
                    dw[sel][c], thr[sel][c], lam=lm.lam, settle_cycles=sc.settle_cycles,
                    averaging_cycles=sc.averaging_cycles, steps_per_cycle=int(s), k_max=K,
                    coupling_q=lm.coupling_quantiser, sigma=sig[c] if sig is not None else sigma,
                    freq_residual=frc[c] if frc is not None else None,
                    coupler_gain=cgc[c] if cgc is not None else None, seed=seed, backend=backend,
                    harmonics=chip.harmonics, cell_keys=keys[c])
                mean_cos[c], cell_locked[c] = res.mean_cos, res.locked
            info["backend"] = res.backend
            if readout is not None:  # the cell's mixer output, averaged over the window, sampler noise, ADC
                mean_cos = readout.measure_mean(mean_cos, normals=keyed_normals(
                    stream_seeds(seed, PURPOSE["readout"], seq[b_i], h_i, i_i, j_i)))
            S[b_i, h_i, i_i, j_i] = J[sel] * mean_cos
            locked[b_i, h_i, i_i, j_i] = cell_locked
            if not causal:  # r is shared by all rows: the cell (i, j) serves (j, i) too
                S[b_i, h_i, j_i, i_i] = S[b_i, h_i, i_i, j_i]
                locked[b_i, h_i, j_i, i_i] = cell_locked
    else:
        omega = comp["omega"].detach().double().numpy()[..., 0]  # (B, H, N)
        om = omega - omega.mean(-1, keepdims=True)  # rotating frame at the mean
        # each sequence's own time step, from its own fastest rate (see the pairwise cells above)
        rate = lm.lam * (np.abs(om).max(axis=(1, 2)) + K)  # (B,)
        spc = np.maximum(sc.steps_per_cycle, np.ceil(5 * rate).astype(np.int64))
        sig = np.broadcast_to(sigma * np.sqrt(lm.diffusion_rel[:, :N]), (B, H, N)) if sigma else None
        # the arrays are built for max_tokens: a shorter window uses the first N oscillators of each head
        frc = np.broadcast_to(fr[:, :N], (B, H, N)) if np.any(fr) else None
        cgc = np.broadcast_to(cg[:, :N, :N], (B, H, N, N)) if cg is not None else None
        keys = np.stack(np.broadcast_arrays(seq[:, None], np.arange(H)[None, :]), -1)  # (B, H, 2)
        coh, fq = np.empty((B, H, N, N)), np.empty((B, H, N))
        for s in np.unique(spc):
            b = np.flatnonzero(spc == s)
            G = b.size * H
            res = ssa1d_collective(
                om[b].reshape(G, N), thr[b].reshape(G, N, N), causal=causal, lam=lm.lam,
                settle_cycles=sc.settle_cycles, averaging_cycles=sc.averaging_cycles, steps_per_cycle=int(s),
                k_max=K, coupling_q=lm.coupling_quantiser, sigma=sig[b].reshape(G, N) if sig is not None else sigma,
                freq_residual=frc[b].reshape(G, N) if frc is not None else None,
                coupler_gain=cgc[b].reshape(G, N, N) if cgc is not None else None,
                seed=seed, backend=backend, harmonics=chip.harmonics, group_keys=keys[b].reshape(G, 2))
            coh[b], fq[b] = res.coherence.reshape(b.size, H, N, N), res.freq.reshape(b.size, H, N)
        info["backend"] = res.backend
        if readout is not None:  # each pair's ⟨cos(θ_i − θ_j)⟩ read through the same detector chain
            ar = np.arange(N)
            coh = readout.measure_mean(coh, normals=keyed_normals(stream_seeds(
                seed, PURPOSE["readout"], seq[:, None, None, None], np.arange(H)[None, :, None, None],
                ar[None, None, :, None], ar[None, None, None, :])))
        mask = np.tril(np.ones((N, N), dtype=bool)) if causal else np.ones((N, N), dtype=bool)
        S = np.where(mask, J * coh, 0.0)
        S[:, :, idx, idx] = J[:, :, idx, idx]
        slip = 2 * math.pi / (sc.averaging_cycles + sc.settle_cycles)
        locked = (np.abs(fq[..., :, None] - fq[..., None, :]) < slip) & mask
        extra["coherence"] = coh
    return S, locked, extra


def _ssa_override(chip, stats, seed, seq_ids, backend, info):
    def override(i, comp):
        lm = chip.layers[i]
        N = comp["J"].shape[-1]
        if N > lm.max_tokens:
            raise ValueError(f"sequence of {N} tokens is longer than the chip's arrays ({lm.max_tokens})")
        S, lk, extra = _ssa_chip_S(chip, lm, comp, layer_seed(seed, i), backend, info, seq_ids)
        value = comp["value"].detach().double()
        import torch

        Wc = comp["weights"].detach().double()
        from oscsim.nn.ssa_functional import normalise_weights

        W = normalise_weights(torch.from_numpy(S), comp["top_k"])
        stats[i].add_ssa((W @ value).numpy(), (Wc @ value).numpy(), S, comp["S"].detach().double().numpy(), lk,
                         comp["locked"].detach().numpy(), causal=bool(comp["causal"]),
                         J=comp["J"].detach().double().numpy(), coherence=extra.get("coherence"))
        return torch.from_numpy(S)

    return override


def _run_ssa(chip, tokens, seed, progress, batch_size, closed_form, backend):
    N = tokens.shape[1]
    lm0 = chip.layers[0]
    per_seq = lm0.n_heads * N * N
    bs = batch_size or max(1, (_MAX_CELLS if lm0.kind == "ssa-pairwise" else _MAX_COUPLING_ELEMENTS) // per_seq)
    stats = [LayerFidelity(lm.n_heads) for lm in chip.layers]
    info = {}
    logits, logits_cf, wall = _run_model(
        chip, tokens, bs, lambda ids: _ssa_override(chip, stats, seed, ids, backend, info), progress, closed_form)
    return logits, logits_cf, [s.result() for s in stats], wall, info.get("backend", "")


def _check_run_args(chip: Chip, tokens, batch_size, seed) -> None:
    """Refuse token ids outside the byte vocabulary, empty or over-long sequences, and bad batch sizes/seeds
    (an out-of-range id would index the embedding out of bounds or wrap silently)."""
    B, T = tokens.shape
    if B < 1 or T < 1:
        raise ValueError(f"tokens must hold at least one sequence of at least one token, got shape {(B, T)}")
    vocab = int(chip.model_info["config"].get("vocab_size", 256))
    lo, hi = int(tokens.min()), int(tokens.max())
    if lo < 0 or hi >= vocab:
        raise ValueError(f"tokens must be byte ids in [0, {vocab - 1}], got values in [{lo}, {hi}]")
    limit = chip.layers[0].max_tokens
    if T > limit:
        raise ValueError(f"tokens: sequences of {T} tokens are longer than the chip's arrays; T must be in "
                         f"[1, {limit}]")
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1):
        raise ValueError(f"batch_size must be None (automatic) or an integer >= 1, got {batch_size!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")


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
    _check_run_args(chip, tokens, batch_size, seed)
    fn = _run_kuramoto if chip.kind == "kuramoto" else _run_ssa
    logits, logits_cf, layers, wall, backend_used = fn(chip, tokens, seed, progress, batch_size, closed_form, backend)
    return ChipRun(logits=logits, logits_closed_form=logits_cf, layers=layers, n_tokens=int(tokens.numel()),
                   wall_s=wall, backend=backend_used)
