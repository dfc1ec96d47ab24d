"""The ideal rung: the model's own formula, no physics (the reference every other rung is checked against).

A Kuramoto layer returns the model's v ⊙ a (and a), an SSA layer the model's S and locked set, exactly as the
closed-form forward pass computes them (captured from it); inputs given as plain arrays fall back to
:func:`mapping.periphery.programming.closed_form_increment` and :func:`mapping.backends.ssa.ssa_closed_form`.
Registered under the pseudo-device ``closed-form`` (the first rung of ``oscsim compare --levels``).
"""

from __future__ import annotations

import numpy as np

from .base import Description, KuramotoInputs, KuramotoOutput, SSAInputs, SSAOutput
from ..periphery.programming import closed_form_increment
from .kuramoto import KuramotoBackend
from .registry import register
from .ssa import SSABackend, ssa_closed_form

__all__ = ["ClosedFormKuramoto", "ClosedFormSSA"]


@register
class ClosedFormKuramoto(KuramotoBackend):
    """v ⊙ a of the model itself."""

    name = "closed form"
    devices = ("closed-form",)

    def prepare(self, chip, layer: int, *, integrator: str = "auto", **overrides):
        return {"n_heads": chip.layers[layer].n_heads}

    def step(self, prepared, inputs: KuramotoInputs, seeds) -> KuramotoOutput:
        if inputs.va_closed_form is not None:
            return KuramotoOutput(va=inputs.va_closed_form, a=inputs.a_closed_form, backend="closed form")
        a = closed_form_increment(inputs.theta, inputs.A, prepared["n_heads"])
        return KuramotoOutput(va=inputs.v * a, a=a, backend="closed form")

    def describe(self, chip) -> Description:
        return Description(name=self.name, window="closed form", settle_window_rad=None)


@register
class ClosedFormSSA(SSABackend):
    """S of the model itself."""

    name = "closed form"
    layer_kinds = ("ssa-pairwise", "ssa1d-collective")
    devices = ("closed-form",)

    def prepare(self, chip, layer: int, *, integrator: str = "auto", **overrides):
        return None

    def step(self, prepared, inputs: SSAInputs, seeds) -> SSAOutput:
        if inputs.S_closed_form is not None:
            return SSAOutput(S=inputs.S_closed_form, locked=inputs.locked_closed_form, backend="closed form")
        s, locked = ssa_closed_form(inputs.delta_omega, inputs.threshold)
        return SSAOutput(S=np.where(locked, inputs.J * s, 0.0), locked=locked, backend="closed form")

    def describe(self, chip) -> Description:
        return Description(name=self.name, window="closed form", settle_window_rad=None)
