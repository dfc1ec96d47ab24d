"""The head-level error of a chip: one head's increment estimate against the closed form's, with its SE.

Where the whole model cannot run on the chip in the time a study has (kuramoto-1m at T = 4,096: about 20 minutes
on 2 shared cores), the array's error can still be measured on one head of one layer: the layer's input is
captured from the model's closed-form forward pass (the backend's ``capture``), the chip's step runs that head
(both banks, every coordinate; the decode pass when the chip's ``[energy] phase`` is decode; under the blocked
schedule when the chip is blocked, :func:`mapping.backends.blocked.blocked_step`,
:func:`mapping.backends.blocked_decode.blocked_decode_step`), and its increment estimate v ⊙ a is compared with
the closed form's on the same input. This is the array's error alone: the digital periphery is not applied and the error
does not propagate through later layers, so it is not a BPC loss and no conversion to one is assumed here.

Used by ``benchmarks/long_context.py --mode head`` and by a design study's workloads above its whole-model length
(:mod:`mapping.design.workloads`).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

__all__ = ["head_error", "jackknife_rel_error", "SE_BLOCK_TOKENS"]

SE_BLOCK_TOKENS = 64
"""Tokens per jackknife block of the head-level error's SE (as the BPC difference's SE blocks)."""


def _head_settings(s, head: int):
    """The layer's phase settings restricted to one head (its oscillators' draws and its units' tiles); a decode
    step's settings (:class:`mapping.backends.decode.DecodeSettings`) through their phase settings."""
    if dataclasses.is_dataclass(s) and hasattr(s, "phase") and hasattr(s, "keys"):
        return dataclasses.replace(s, phase=_head_settings(s.phase, head))
    sl = slice(head, head + 1)
    ch = {"n_heads": 1}
    if getattr(s, "freq_residual", None) is not None:
        ch["freq_residual"] = s.freq_residual[:, sl]
    if np.ndim(s.sigma):
        ch["sigma"] = np.asarray(s.sigma)[:, sl]
    if s.coupler_gain is not None:
        if s.coupler_tile is not None:
            ch["coupler_tile"] = np.asarray(s.coupler_tile)[:, sl]
        else:
            ch["coupler_gain"] = s.coupler_gain[:, sl]
    if s.injection is not None:
        inj = s.injection
        ch["injection"] = lambda seq, T, seed: np.asarray(inj(seq, T, seed))[:, :, sl]
    return dataclasses.replace(s, **ch)


def jackknife_rel_error(err, ref, block: int = SE_BLOCK_TOKENS) -> tuple[float, float]:
    """‖err‖ / ‖ref‖ over arrays (windows, tokens, ...) and its jackknife SE over blocks of ``block``
    consecutive tokens of each window (a window's tail shorter than a block is left out of the SE only); NaN SE
    with fewer than two blocks."""
    err = np.asarray(err, float)
    ref = np.asarray(ref, float)
    full = float(np.sqrt(np.sum(err ** 2) / np.sum(ref ** 2)))
    nb = err.shape[1] // block
    e2 = np.array([np.sum(err[:, i * block:(i + 1) * block] ** 2, axis=tuple(range(1, err.ndim)))
                   for i in range(nb)]).ravel()
    r2 = np.array([np.sum(ref[:, i * block:(i + 1) * block] ** 2, axis=tuple(range(1, ref.ndim)))
                   for i in range(nb)]).ravel()
    n = len(e2)
    if n < 2:
        return full, float("nan")
    loo = np.sqrt((e2.sum() - e2) / (r2.sum() - r2))
    se = np.sqrt((n - 1) / n * np.sum((loo - loo.mean()) ** 2))
    return full, float(se)


def head_error(chip, model, x, *, layer: int = 0, head: int = 0, seed: int = 0) -> dict:
    """The relative error of one head's increment estimate on ``chip`` against the closed form's.

    Parameters
    ----------
    chip : mapping.chip.Chip
        A compiled Kuramoto chip (multiplexed or spatial, blocked or not).
    model : torch.nn.Module
        The chip's model (its closed-form forward pass gives the layer's input).
    x : torch.Tensor
        Token windows (windows, T).
    layer, head : int
        Which head.
    seed : int
        The chip run's noise seed (the streams of that head's physical runs, as in :func:`mapping.run`).

    Returns
    -------
    dict
        ``head_error`` (‖va_chip − va_cf‖ / ‖va_cf‖ over the head's tokens, banks and coordinates),
        ``head_error_se`` (jackknife over blocks of :data:`SE_BLOCK_TOKENS` tokens), ``head_layer``,
        ``head_index``, ``head_wall_s`` (the step's wall time [s]), ``head_backend``.
    """
    from ..backends import backend_for
    from ..backends.blocked import blocked_step
    from ..backends.blocking import block_plan
    from ..seeds import LayerSeeds

    if not 0 <= layer < len(chip.layers):
        raise ValueError(f"head layer must be in [0, {len(chip.layers) - 1}], got {layer}")
    lm = chip.layers[layer]
    n_heads = getattr(lm, "n_heads", None)
    if n_heads is not None and not 0 <= head < n_heads:
        raise ValueError(f"head must be in [0, {n_heads - 1}], got {head}")
    be = backend_for(chip, layer)
    inp, _ = be.capture(model, x, layer)
    kh = lm.head_dim
    cols = slice(head * kh, (head + 1) * kh)
    sub = type(inp)(inp.theta[:, :, cols], np.ascontiguousarray(inp.A[:, head:head + 1]), inp.v[:, :, cols])
    s = _head_settings(be.prepare(chip, layer), head)
    runs = None if chip.schedule is None else chip.schedule.runs(layer)
    seeds = LayerSeeds.for_layer(seed, layer, None, None if runs is None else runs[:, head:head + 1])
    plan = block_plan(x.shape[1], chip.config.array.block if hasattr(chip.config.array, "block") else None)
    t0 = time.perf_counter()
    if getattr(be, "decode_pass", False):  # the decode pass, blocked or not (mapping.backends.blocked_decode)
        from ..backends.blocked_decode import blocked_decode_step
        from ..backends.decode import decode_step

        out = blocked_decode_step(s, sub, seeds, plan) if plan.blocked else decode_step(s, sub, seeds)
    else:
        out = blocked_step(be.step, s, sub, seeds, plan)
    wall = time.perf_counter() - t0
    ref = inp.va_closed_form[:, :, cols]
    rel, se = jackknife_rel_error(out.va - ref, ref)
    return {"head_error": rel, "head_error_se": se, "head_layer": int(layer), "head_index": int(head),
            "head_wall_s": wall, "head_backend": out.backend}
