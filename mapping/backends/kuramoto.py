"""The Kuramoto-attention family of backends: what every way of running a Kuramoto layer shares.

Per (sequence b, head h, coordinate j) the chip holds T oscillators started at the token phases θ_{·,j},
coupled by C_{t,u} = κ Q_c(A_{t,u}) (1 + δ_{t,u}) with receive gain Q_g(v_{t,j})
(:func:`mapping.periphery.programming.program_kuramoto`); after the settle window τ_s the readout measures
θ̂(τ_s) and the periphery forms

    x̂_t = [wrap(θ̂_t(τ_s) − θ_t(0)) − τ_s Q_g(v_t) κ Σ_u Q_c(A_{t,u}) H(0)] / (κ τ_s) = v_t a_t + O(κ τ_s) + noise/(κ τ_s)

(:func:`increment_estimate`). A second bank with unit gain measures â for the norm-matching bound B, which is
applied digitally. The members differ in what they integrate: phases (:mod:`~mapping.backends.phase`),
complex amplitudes (:mod:`~mapping.backends.stno`), node voltages (:mod:`~mapping.backends.circuit`), ngspice
(:mod:`~mapping.backends.spice`) or nothing (:mod:`~mapping.backends.closed_form`).
"""

from __future__ import annotations

import numpy as np

from ..periphery.programming import closed_form_increment
from .base import Description, KuramotoInputs, LayerBackend

__all__ = ["KuramotoBackend", "increment_estimate", "capture_kuramoto", "ring_only"]

_MAX_COUPLING_ELEMENTS = 2**24  # per engine call: 128 MiB of float64 couplings (the default batch of a run)


def increment_estimate(dtheta, kappa_tau: float, offset: float, gain, Aq):
    """The periphery's x̂ (B, h, k_h, T) of one bank: dθ/(κτ_s) minus the known offset ``offset`` · g_t Σ_u Aq_{t,u}
    of the programmed couplers (H(0) in units of a₁). dtheta, gain : (B, h, k_h, T); Aq : (B, h, T, T)."""
    x = dtheta / kappa_tau
    if offset:
        x = x - offset * gain * Aq.sum(-1)[:, :, None, :]
    return x


def ring_only(what: str):
    """A ``refuse(cls, chip)`` for backends that build the device's node-voltage circuit: ``what`` and the chip's
    device when it has none (:attr:`hw_models.devices.Oscillator.has_circuit`)."""
    def refuse(cls, chip) -> str | None:
        return None if chip.device.oscillator.has_circuit else f"{what}; this chip's device is {chip.device.name!r}"

    return refuse


def capture_kuramoto(model, tokens, layer: int):
    """(θ, parts) of ``layer`` from the model's own forward pass on ``tokens`` (its ``attn_override`` hook)."""
    import torch

    got = {}

    def override(i, theta, parts):
        if i == layer:
            got["theta"], got["parts"] = theta, parts
        return parts.delta

    with torch.no_grad():
        model(tokens, attn_override=override)
    return got["theta"], got["parts"]


class KuramotoBackend(LayerBackend):
    """Base of the Kuramoto backends: the model's hook, the batch size, the description of the settle window."""

    layer_kinds = ("kuramoto",)
    chip_kind = "kuramoto"
    #: Whether its step runs a network shorter than the compiled T (a block of :mod:`mapping.backends.blocking`)
    blockable = True

    def batch_size(self, chip, T: int) -> int:
        """Sequences per step: as many as fit a 128 MiB coupling array (banks · h · k_h · T² per sequence)."""
        lm = chip.layers[0]
        return max(1, _MAX_COUPLING_ELEMENTS // (lm.banks * lm.n_heads * lm.head_dim * T ** 2))

    def run_hook(self, chip, layer: int, prepared, args, seeds, stats):
        """Run the layer inside the model's forward pass (``attn_override(i, theta, parts)``): the step, the
        model's bound B applied digitally, the fidelity record. Returns (Δ, backend name)."""
        import torch

        theta, parts = args
        lm = chip.layers[layer]
        T = theta.shape[1]
        if T > lm.max_tokens:
            raise ValueError(f"sequence of {T} tokens is longer than the chip's arrays ({lm.max_tokens})")
        if chip.config.decode.held and not getattr(self, "decode_pass", False):
            raise ValueError(f"decode.keys = 'held' needs the decode pass, which the {self.name} backend does not "
                             f"simulate (it runs the prefill network)")
        A = self.attention_weights(chip, layer, prepared, theta, parts, seeds)
        digital = A is parts.A
        if not digital:
            A = torch.from_numpy(A)
        out = self._step_scheduled(chip, prepared, KuramotoInputs.of(theta, A, parts.v), seeds)
        va = torch.from_numpy(out.va).to(theta.dtype)
        if out.a is not None:
            a_ref = torch.from_numpy(out.a).to(theta.dtype)
        else:  # the digital ‖a‖ from the softmax weights the chip programmed
            a_ref = parts.a if digital else torch.from_numpy(
                closed_form_increment(theta.detach().double().numpy(), A.numpy(), lm.n_heads)).to(theta.dtype)
        # the bound per sequence, as the model's own torch operations run (mapping.simulation.inference): a
        # reduction's rounding may depend on the rows beside it
        bound = chip.model.layers[layer].attn.apply_bound
        delta = torch.cat([bound(va[b:b + 1], None if a_ref is None else a_ref[b:b + 1])
                           for b in range(va.shape[0])])
        dd = lambda x: np.asarray(x.detach().double())  # noqa: E731
        stats.add_kuramoto(dd(theta), dd(delta), dd(parts.delta), dd(va), dd(parts.v * parts.a))
        return delta, out.backend

    def _step_scheduled(self, chip, prepared, inputs: KuramotoInputs, seeds):
        """The layer's step as the chip's schedule runs it: in blocks with ``[array] block`` < T
        (:func:`mapping.backends.blocked.blocked_step`; a decode backend's ``blocked_step``,
        :mod:`mapping.backends.blocked_decode`), else one network per unit."""
        from .blocking import block_plan
        from .blocked import blocked_step

        plan = block_plan(inputs.theta.shape[1], chip.config.array.block)
        if plan.blocked and not self.blockable:
            raise ValueError(f"[array] block = {plan.block} (the blocked schedule) is simulated on the phase "
                             f"macromodel (prefill and decode), amplitude and closed-form rungs; the {self.name} "
                             f"backend runs whole tiles (set block = 'none' or a block >= T = {plan.T})")
        if plan.blocked and getattr(self, "decode_pass", False):  # the decode backend's own blocked pass
            return self.blocked_step(prepared, inputs, seeds, plan)
        return blocked_step(self.step, prepared, inputs, seeds, plan)

    def attention_weights(self, chip, layer: int, prepared, theta, parts, seeds):
        """The softmax weights (B, h, T, T) the layer's couplers are programmed with, from the chip's score stage
        (:mod:`mapping.backends.scores`): the model's ``parts.A`` (digital scores) or the softmax of the chip's own
        measured scores (analog, float64)."""
        from .scores import score_stage

        return score_stage(chip.config).attention_weights(chip, layer, theta, parts, seeds)

    def capture(self, model, tokens, layer: int) -> tuple:
        """(inputs, parts) of ``layer`` from the model's forward pass (for comparisons)."""
        theta, parts = capture_kuramoto(model, tokens, layer)
        return KuramotoInputs.of(theta, parts.A, parts.v, parts), (theta, parts)

    def describe(self, chip) -> Description:
        kt = chip.timebase["kappa_tau"]
        return Description(name=self.name, window=f"kappa*tau_s = {kt:.3g} rad", settle_window_rad=kt)

    def macromodel_validity(self, chip, *, warn: bool = True, stacklevel: int = 2) -> dict | None:
        """Operating point κ/f₀ = coupling.fraction × the largest |receive gain| (a softmax row sums to 1), fan-in
        T − 1 (the last row's inputs, no self-coupler), checked against the macromodel's increment map."""
        cfg = chip.config
        return chip.device.oscillator.operating_point_check(
            cfg.coupling.fraction * cfg.coupling.gain_range, max(chip.layers[0].max_tokens - 1, 1), "increment",
            warn=warn, stacklevel=stacklevel + 1)
