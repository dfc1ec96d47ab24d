"""Chip inference: :func:`run` a compiled chip on tokens, with per-layer/per-head fidelity against the closed form.

Both model kinds run through the model's own forward pass, the chip filling its per-layer hook
(``attn_override``): nothing of a model's forward is re-implemented here. Each layer runs on the backend the
registry picks for its kind and the chip's device (:func:`mapping.backends.backend_for`), prepared once per
layer and run (``prepare``), stepped once per batch of sequences (``step``):

- Kuramoto chips: scores, softmax, gates and the value gate stay digital; the backend simulates the coupling
  step of every (sequence, bank, head, coordinate) network and the hook returns the increment with the
  model's bound B;
- SSA chips: J, Δω, r are digital; the hook returns S measured by the backend (pairwise Adler cells or the
  collective SSA-1D network); the model's own top-k, normalisation, S V and projections follow.

The periphery computes at the chip's ``[energy] digital_precision`` (:mod:`mapping.periphery.precision`): the
chip runs a copy of the model whose attention projections are quantised, and a Kuramoto layer's queries, keys,
scores and softmax weights reach the array quantised; the closed form stays the model's own float32.

Noise is keyed on (run seed, layer, the sequence's index in the whole run, and the object's own indices, or on
a time-multiplexed chip the physical run that serves it; :class:`mapping.seeds.LayerSeeds`), each sequence
integrates with a step set by its own rates, and each sequence goes through the model's torch operations on its
own, on one torch thread (only the chip simulation of a layer is batched: :func:`_forward_per_sequence`), so the
same seed gives bit-identical outputs whatever ``batch_size``, thread count or load.

Per-layer fidelity compares the chip's layer output with the closed form **for the same input** (the chip's
own hidden state), so it isolates each layer's error; end-to-end, the chip's logits are compared with the
closed-form model's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from ..fidelity import LayerFidelity, bits_per_character
from ..periphery.precision import periphery_parts, quantised_model
from ..seeds import LayerSeeds

__all__ = ["ChipRun", "run"]


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
        What integrated the layers (e.g. 'engine', 'cells', 'circuit (...)').
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


def _progress(total, enabled, desc, unit="it"):
    if enabled is None:
        enabled = sys.stderr.isatty()
    from tqdm import tqdm  # the plain bar: tqdm.auto warns in notebooks without ipywidgets

    return tqdm(total=total, disable=not enabled, desc=desc, unit=unit, leave=False, file=sys.stderr,
                dynamic_ncols=True)


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
    a time (the calling thread hands over and waits, so torch calls never overlap): at layer i it parks in the
    hook with its arguments; when all B have arrived, the arguments are stacked, ``override(i, *args)``
    simulates the whole batch in one call (in the calling thread), and each sequence resumes with its own slice
    (a copy) of the result. Threads are the one way to suspend a model's own forward pass in the middle without
    re-implementing it (or re-running its first layers for every later one).
    """
    import queue
    import threading

    import torch

    B = x.shape[0]
    if B == 1:  # nothing to batch: the forward pass in the calling thread
        return model(x, attn_override=override)
    arrived = queue.Queue()  # (kind, payload) from the running sequence: "hook" (layer, args), "done", "error"
    resume = [queue.Queue() for _ in range(B)]

    def work(b):
        def hook(j, *args):
            arrived.put(("hook", (j, args)))
            out = resume[b].get()
            if out is _Abort:
                raise _Abort
            return out

        try:
            with torch.no_grad():  # grad mode is per thread
                arrived.put(("done", model(x[b:b + 1], attn_override=hook)))
        except _Abort:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread, which raises it
            arrived.put(("error", exc))

    threads = [threading.Thread(target=work, args=(b,), name=f"chip-sequence-{b}", daemon=True) for b in range(B)]

    def step(b, value=None):
        """Let sequence b run (start it, or resume it with ``value``) until it parks in the hook or ends."""
        if threads[b].ident is None:
            threads[b].start()
        else:
            resume[b].put(value)
        kind, payload = arrived.get()
        if kind == "error":
            raise payload
        return kind, payload

    try:
        reports = [step(b) for b in range(B)]
        while reports[0][0] == "hook":
            if any(kind != "hook" or payload[0] != reports[0][1][0] for kind, payload in reports):
                raise RuntimeError("the sequences of one batch reached different layers")  # one model, one path
            args = [payload[1] for _, payload in reports]
            out = override(reports[0][1][0], *[_stack([a[k] for a in args]) for k in range(len(args[0]))])
            reports = [step(b, out[b:b + 1].clone()) for b in range(B)]
        if any(kind != "done" for kind, _ in reports):
            raise RuntimeError("the sequences of one batch reached different layers")
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


def _run_model(chip, tokens, bs, make_override, progress, closed_form, model=None):
    """Chip logits (and closed-form logits) over batches, each sequence through the model's own forward on one
    torch thread (the chip simulation batched; see :func:`_forward_per_sequence`). ``model``: the model the chip
    runs (its periphery's precision, :func:`mapping.periphery.precision.quantised_model`; default
    ``chip.model``); the closed form is ``chip.model``."""
    model = chip.model if model is None else model
    import torch

    logits, logits_cf = [], []
    wall = 0.0
    batches = _batches(tokens, bs)
    # windows x layers: a default run is one batch, so a bar over batches would sit at 0/1 without an ETA
    bar = _progress(tokens.shape[0] * len(chip.layers), progress, "chip inference", unit="window-layer")

    def counted(override, n):
        def hook(i, *args):
            out = override(i, *args)
            bar.update(n)
            return out
        return hook

    with torch.no_grad(), _one_torch_thread():
        for start, x in batches:
            seq_ids = np.arange(start, start + x.shape[0])
            t0 = time.perf_counter()
            logits.append(_forward_per_sequence(model, x, counted(make_override(seq_ids), x.shape[0])))
            wall += time.perf_counter() - t0
            if closed_form:  # one sequence at a time too: the same numbers whatever the batch
                logits_cf.extend(chip.model(x[b:b + 1]) for b in range(x.shape[0]))
    bar.close()
    return torch.cat(logits), torch.cat(logits_cf) if closed_form else None, wall


def _check_run_args(chip, tokens, batch_size, seed) -> None:
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


def _periphery_args(chip, chip_model, i, args, precision):
    """The hook's arguments as the chip's periphery computes them at ``precision``
    (:mod:`mapping.periphery.precision`): a Kuramoto layer's parts from the quantised model's layer, with the
    closed form's increment for the same input kept as the per-layer fidelity's reference (one sequence at a
    time, as the model runs); SSA components come from the quantised projections already."""
    import torch

    if precision == "fp32" or len(args) != 2 or getattr(args[1], "A", None) is None:
        return args  # an SSA layer's components (its projections are quantised already)
    theta, parts = args
    ref = chip.model.layers[i].attn
    delta = torch.cat([ref.parts(theta[b:b + 1], need_weights=False).delta for b in range(theta.shape[0])])
    return theta, periphery_parts(chip_model.layers[i].attn, theta, parts, precision, delta=delta)


def run(chip, tokens, *, seed: int = 0, progress: bool | None = None, batch_size: int | None = None,
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
        Sequences per step (default: the backend's, e.g. as many as fit a 128 MiB coupling array).
    closed_form : bool
        Also compute the closed-form logits (for BPC comparison).
    backend : {'auto', 'engine', 'numpy'}
        The integrator of the phase backends ('numpy': the NumPy reference; see
        :func:`mapping.backends.integrate.integrate_phase`).

    Returns
    -------
    ChipRun
    """
    import torch

    from ..backends import backend_for

    if chip.model is None:
        raise ValueError("the chip has no model attached; use mapping.load_chip(path) or attach_model(chip, model)")
    tokens = torch.as_tensor(tokens, dtype=torch.long)
    if tokens.dim() != 2:
        raise ValueError(f"tokens must have shape (B, T), got {tuple(tokens.shape)}")
    _check_run_args(chip, tokens, batch_size, seed)
    backends = [backend_for(chip, i) for i in range(len(chip.layers))]
    prepared = [b.prepare(chip, i, integrator=backend) for i, b in enumerate(backends)]
    bs = batch_size or backends[0].batch_size(chip, int(tokens.shape[1]))
    stats = [LayerFidelity(lm.n_heads) for lm in chip.layers]
    used = {"backend": ""}
    runs = [None if chip.schedule is None else chip.schedule.runs(i) for i in range(len(chip.layers))]

    precision = chip.config.energy.digital_precision
    chip_model = quantised_model(chip.model, precision)

    def make_override(seq_ids):
        def override(i, *args):
            args = _periphery_args(chip, chip_model, i, args, precision)
            out, name = backends[i].run_hook(chip, i, prepared[i], args,
                                             LayerSeeds.for_layer(seed, i, seq_ids, runs[i]), stats[i])
            used["backend"] = name or used["backend"]
            return out

        return override

    logits, logits_cf, wall = _run_model(chip, tokens, bs, make_override, progress, closed_form, chip_model)
    return ChipRun(logits=logits, logits_closed_form=logits_cf, layers=[s.result() for s in stats],
                   n_tokens=int(tokens.numel()), wall_s=wall, backend=used["backend"])
