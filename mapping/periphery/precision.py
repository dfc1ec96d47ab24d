"""The digital periphery's arithmetic simulated: the attention layers' digital work at ``[energy]
digital_precision`` in the chip run (fake quantisation), so that its BPC and its energy are at one precision.

What is quantised (the tensors the periphery computes for the array, :func:`quantised_model` and
:func:`periphery_parts`):

- every ``nn.Linear`` of an attention layer (Kuramoto: ``gate_q``, ``gate_k``, ``value``; SSA: ``w_omega``,
  ``w_theta``, ``w_value``, ``out``): its weights per output channel, its input and its output per tensor;
- Kuramoto: the normalised metric gates, the rotated and gated queries and keys, the scores q · key and the
  softmax weights A the couplers are programmed with (and the value gate v, a ``value`` output).

Integer precisions (``int8``, ``int16``, b bits): symmetric, mid-tread, q(x) = s · round(x / s) clipped to
±(2^(b−1) − 1) s, rounding half to even (``torch.round``). Scales:

- weights: per output channel, s = max|w| / (2^(b−1) − 1), set from the weights when the chip is compiled
  (:func:`quantised_model`); a bias is held at the accumulator's scale s_w · s_x (exact to its rounding);
- activations: per tensor, s = max|x| / (2^(b−1) − 1) over one sequence's window, set by the periphery as it
  computes the tensor (a max-reduction, "dynamic" quantisation: no calibration set; each sequence its own
  scale, so a sequence's numbers do not depend on the others of its batch). In the decode pass the window's
  scale stands for the running one (a simplification: a decoding chip knows only the tokens so far);
- the softmax weights A ∈ [0, 1]: unsigned, fixed s = 1 / (2^b − 1); the Linear inputs cos θ, sin θ ∈ [−1, 1]:
  per tensor as above.

Accumulators: products of b-bit operands are summed in accumulators wide enough to hold the exact sum (int32 for
int8, 48 bits for int16; 2k ≤ 2^16 terms never overflow them); the simulation accumulates in the model's float32
(relative rounding 2^−24, below the requantisation step of either). ``fp16``: operands rounded to IEEE half
(round to nearest even), products accumulated in fp32 (as tensor cores do). ``fp32``: nothing changes (the
closed form).

Where this holds: the attention layers' digital work only; the embedding, feed-forward and output head run in
float32 in the fidelity run (the energy report's ``whole_model`` charges them at the periphery's precision); an
SSA layer's J, Δω, r, top-k, normalisation and S V are the model's own float operations outside the chip's hook
(only its projections are quantised).
"""

from __future__ import annotations

import copy
import dataclasses

__all__ = ["PRECISIONS", "INT_BITS", "fake_quant", "quant_step", "quantise_weight", "quantised_model",
           "periphery_parts", "describe"]

PRECISIONS = ("int8", "int16", "fp16", "fp32")
"""Precisions of the digital periphery (``[energy] digital_precision``)."""
INT_BITS = {"int8": 8, "int16": 16}
"""Integer precision -> bits."""


def _check(precision: str) -> None:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")


def quant_step(x, precision: str, dims: tuple | None = None):
    """The per-tensor step s of ``x`` at an integer precision: max|x| / (2^(b−1) − 1) over ``dims`` (all by
    default), kept as a broadcastable tensor; a zero tensor gets s = 1 (any step quantises it exactly)."""
    import torch

    levels = 2 ** (INT_BITS[precision] - 1) - 1
    m = x.detach().abs().amax() if dims is None else x.detach().abs().amax(dim=dims, keepdim=True)
    return torch.where(m > 0, m / levels, torch.ones_like(m))


def fake_quant(x, precision: str, *, step=None, dims: tuple | None = None, unsigned: bool = False):
    """``x`` as the periphery holds it at ``precision`` (same dtype and shape; see the module notes).

    Parameters
    ----------
    x : torch tensor
    precision : {'int8', 'int16', 'fp16', 'fp32'}
    step : float or tensor, optional
        Integer precisions: the step s (default: per tensor over ``dims`` from max|x|, :func:`quant_step`).
    dims : tuple of int, optional
        Dimensions the default step is taken over (None: all); the others keep their own steps.
    unsigned : bool
        Integer precisions with a given ``step``: codes in [0, 2^b − 1] instead of ±(2^(b−1) − 1).

    Returns
    -------
    torch tensor
        Integers: s · clip(round_half_even(x / s)); fp16: x rounded to half and back; fp32: x.
    """
    import torch

    _check(precision)
    if precision == "fp32":
        return x
    if precision == "fp16":
        return x.to(torch.float16).to(x.dtype)
    b = INT_BITS[precision]
    if step is None:
        step = quant_step(x, precision, dims)
    lo, hi = (0, 2**b - 1) if unsigned else (-(2 ** (b - 1) - 1), 2 ** (b - 1) - 1)
    return torch.clamp(torch.round(x / step), lo, hi) * step


def quantise_weight(w, precision: str):
    """A weight matrix (out, in) quantised per output channel (s_i = max_j |w_ij| / (2^(b−1) − 1)), and its steps
    (out, 1) (None for fp16/fp32)."""
    _check(precision)
    if precision not in INT_BITS:
        return fake_quant(w, precision), None
    step = quant_step(w, precision, dims=(1,))
    return fake_quant(w, precision, step=step), step


def _linear_hook(precision: str, w_step):
    """A forward hook that recomputes an ``nn.Linear`` on its quantised input (its bias at the accumulator's
    scale s_w s_x) and quantises its output, each per tensor over the call (the chip run calls the model one
    sequence at a time, :mod:`mapping.simulation.inference`)."""
    import torch
    import torch.nn.functional as F

    def hook(module, args, out):
        x = args[0]
        bias = module.bias
        if precision in INT_BITS:
            xs = quant_step(x, precision)
            xq = fake_quant(x, precision, step=xs)
            if bias is not None:
                acc = w_step.view(-1) * xs  # the accumulator's step per output channel
                bias = torch.round(bias / acc) * acc
        else:
            xq = fake_quant(x, precision)
            bias = None if bias is None else fake_quant(bias, precision)
        return fake_quant(F.linear(xq, module.weight, bias), precision)

    return hook


def quantised_model(model, precision: str):
    """A copy of ``model`` whose attention layers' ``nn.Linear`` maps compute at ``precision`` (weights per
    channel, inputs and outputs per tensor; see the module notes); ``model`` itself is untouched (the closed
    form). ``fp32``: ``model`` itself."""
    import torch
    from torch import nn

    _check(precision)
    if precision == "fp32":
        return model
    q = copy.deepcopy(model)
    blocks = getattr(q, "layers", None) or getattr(q, "blocks", None) or []
    with torch.no_grad():
        for block in blocks:
            for lin in block.attn.modules():
                if isinstance(lin, nn.Linear):
                    wq, step = quantise_weight(lin.weight.data, precision)
                    lin.weight.data.copy_(wq)
                    lin.register_forward_hook(_linear_hook(precision, step))
    return q


def periphery_parts(attn, theta, parts, precision: str, delta=None):
    """The Kuramoto :class:`~oscsim.nn.kuramoto.KuramotoParts` the chip's periphery hands the array at
    ``precision``: queries and keys (with their gates) from the quantised layer ``attn``
    (:func:`quantised_model`), quantised per tensor; the scores q · key quantised per tensor; the causal softmax
    A quantised to unsigned codes of step 1 / (2^b − 1) (fp16: rounded to half); the value gate v (``parts.v``,
    already ``value``'s quantised output); a from that A (:func:`mapping.periphery.programming.closed_form_increment`).
    Each sequence of the batch gets its own scales. G_re, G_im, R_loc stay ``parts``' (the chip reads none).

    Parameters
    ----------
    attn : KuramotoAttention
        The quantised copy's layer.
    theta : (B, T, k) torch tensor
    parts : KuramotoParts
        The quantised layer's parts for ``theta``.
    precision : str
    delta : (B, T, k) torch tensor, optional
        The closed form's increment for the same input, kept as ``delta`` (the per-layer fidelity's reference);
        None: ``parts.delta``.

    Returns
    -------
    KuramotoParts
    """
    import torch

    from .programming import closed_form_increment

    _check(precision)
    delta = parts.delta if delta is None else delta
    if precision == "fp32" or parts.A is None:
        return dataclasses.replace(parts, delta=delta)
    A_rows = []
    for b in range(theta.shape[0]):  # one sequence at a time: its own scales
        th = theta[b:b + 1]
        _, q, key, _, _ = attn._qk(th)
        q, key = fake_quant(q, precision), fake_quant(key, precision)
        s = fake_quant(q @ key.transpose(-1, -2), precision)
        T = th.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool, device=th.device).tril()
        A = s.masked_fill(~mask, float("-inf")).softmax(-1)
        if precision in INT_BITS:
            A = fake_quant(A, precision, step=1.0 / (2 ** INT_BITS[precision] - 1), unsigned=True)
        else:
            A = fake_quant(A, precision)
        A_rows.append(A)
    A = torch.cat(A_rows)
    a = torch.from_numpy(closed_form_increment(theta.detach().double().numpy(), A.double().numpy(),
                                               attn.n_heads)).to(theta.dtype)
    return dataclasses.replace(parts, A=A, a=a, delta=delta)


def describe(precision: str) -> str:
    """One line: how the fidelity run computes the periphery at ``precision``."""
    _check(precision)
    if precision == "fp32":
        return "periphery simulated in fp32 (the closed form's arithmetic)"
    if precision == "fp16":
        return ("periphery simulated in fp16 (operands rounded to IEEE half, round to nearest even; fp32 "
                "accumulation): attention projections, gates, queries, keys, scores, softmax")
    b = INT_BITS[precision]
    return (f"periphery simulated in {precision}: symmetric mid-tread, round half to even; weights per output "
            f"channel (set at compile time), activations per tensor per sequence (max|x|), softmax unsigned step "
            f"1/{2**b - 1}; exact accumulators ({'int32' if b == 8 else '48-bit'}): attention projections, gates, "
            f"queries, keys, scores, softmax")

