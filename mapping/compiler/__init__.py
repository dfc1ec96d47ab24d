"""The compiler: a trained model and a :class:`~mapping.config.ChipConfig` in, a :class:`~mapping.chip.Chip` out.

Rooms: :mod:`~mapping.compiler.build` (:func:`compile`, the orchestration and the timebase),
:mod:`~mapping.compiler.layers` (one layer builder per model kind), :mod:`~mapping.compiler.device` (the
:mod:`hw_models` device behind a ``device`` name), :mod:`~mapping.compiler.coupling_rule` (the coupler and the
coupling function it programs, the two-tap correction), :mod:`~mapping.compiler.mismatch` (the instance draw
and the frequency trim), :mod:`~mapping.compiler.resources` (the one resource count, read by the area and
energy models too) and :mod:`~mapping.compiler.inert` (config fields that would not act are refused). The score
stage's silicon is the stage's own (:mod:`mapping.backends.scores`, :mod:`mapping.backends.score_array`); the
compiler asks for it and draws its oscillators.

Names load on first access (importing the package loads no compiler module).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "compile": "build", "coupling_rule": "coupling_rule", "ChipDevice": "device", "chip_device": "device",
    "chip_device_from_dict": "device", "LayerResources": "resources",
    "layer_resources": "resources", "pass_events": "resources", "MODEL_KINDS": "layers", "trim": "mismatch",
    "check_fields_act": "inert", "inert_fields": "inert",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
