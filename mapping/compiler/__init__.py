"""The compiler: a trained model and a :class:`~mapping.config.ChipConfig` in, a :class:`~mapping.chip.Chip` out.

Rooms: :mod:`~mapping.compiler.build` (:func:`compile`, the orchestration and the timebase),
:mod:`~mapping.compiler.layers` (one layer builder per model kind), :mod:`~mapping.compiler.device` (the
:mod:`hw_models` device behind a ``device`` name), :mod:`~mapping.compiler.coupling_rule` (the coupler and the
coupling function it programs, the two-tap correction), :mod:`~mapping.compiler.mismatch` (the instance draw
and the frequency trim), :mod:`~mapping.compiler.resources` (the one resource count, read by the area and
energy models too), :mod:`~mapping.compiler.score_array` (the analog-score mode's score units and the heads'
schedule on them) and :mod:`~mapping.compiler.inert` (config fields that would not act are refused).

Names load on first access (``mapping.chip`` imports the device record from here while the compiler imports
``mapping.chip``).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "compile": "build", "coupling_rule": "coupling_rule", "ChipDevice": "device", "chip_device": "device",
    "chip_device_from_dict": "device", "LayerResources": "resources",
    "layer_resources": "resources", "pass_events": "resources", "MODEL_KINDS": "layers", "trim": "mismatch",
    "check_fields_act": "inert", "inert_fields": "inert", "ScoreArray": "score_array",
    "build_score_array": "score_array",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
