"""The periphery around the oscillators: what writes the chip's inputs and reads its outputs.

Rooms: :mod:`~mapping.periphery.quantise` (uniform quantisers for couplers, gains and ADCs, with their torch
straight-through twin), :mod:`~mapping.periphery.programming` (coupling programming: the matrices the DACs
are written with), :mod:`~mapping.periphery.readout` (the phase detector chain), :mod:`~mapping.periphery.injection`
(phase writing by injection locking: error, time, energy), :mod:`~mapping.periphery.drift` (temperature
drift after trimming) and :mod:`~mapping.periphery.precision` (the digital periphery's arithmetic, simulated at
``[energy] digital_precision``).
"""

from __future__ import annotations

import importlib

_EXPORTS = {"Quantiser": "quantise", "PhaseReadout": "readout", "chip_readout": "readout",
            "free_running_samples": "readout", "read_free_running": "readout", "wrap": "readout",
            "program_kuramoto": "programming", "program_ssa": "programming", "InjectionConfig": "injection",
            "temperature_drift": "drift"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):  # names load on first access: the config reads InjectionConfig from here
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
