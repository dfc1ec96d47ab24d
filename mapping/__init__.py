"""mapping: compile trained oscillator-attention models onto oscillator chips, run them, report fidelity and energy.

Public API::

    from mapping import ChipConfig, load_config, compile, run, load_chip
    chip = compile("kuramoto-tiny", load_config("examples/chip.toml"))
    result = run(chip, tokens, seed=0)          # logits, per-layer fidelity, tokens/s
    energy_report(chip)                          # chip vs GPU energy per token, with sources

Rooms (docs/architecture.md): :mod:`mapping.compiler` (model + config -> :class:`Chip`),
:mod:`mapping.backends` (how each layer runs, one class per way, behind a registry), :mod:`mapping.periphery`
(quantisers, coupling programming, readout, injection, drift), :mod:`mapping.energy` (constants, op counts,
chip terms, GPU bounds, report, area), :mod:`mapping.simulation` (run, compare, ladder, report),
:mod:`mapping.sweep`, :mod:`mapping.cli`. Names load on first access, so that ``oscsim --help`` and the
subcommands' parsers import nothing heavy.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "units": None,
    "FORMAT": "chip", "Chip": "chip", "LayerMap": "chip", "save_chip": "chip",
    "load_chip": "chip_io",
    "compile": "compiler.build", "ChipDevice": "compiler.device", "chip_device": "compiler.device",
    "attach_model": "model_io", "load_model": "model_io", "model_fingerprint": "model_io",
    "ChipConfig": "config", "CouplingConfig": "config", "EnergyConfig": "config", "ReadoutConfig": "config",
    "SSAConfig": "config", "load_config": "config", "SpatialArray": "config", "MultiplexedArray": "config",
    "GPUS": "energy", "attention_cost": "energy", "chip_energy_per_token": "energy", "energy_report": "energy",
    "gpu_energy_per_token": "energy", "measure_gpu_energy": "energy", "model_cost": "energy",
    "chip_area": "energy",
    "bits_per_character": "fidelity", "cosine_similarity": "fidelity", "locked_agreement": "fidelity",
    "order_parameter": "fidelity", "phase_error": "fidelity", "relative_error": "fidelity",
    "ChipRun": "simulation", "run": "simulation", "compare_layer": "simulation",
    "SimulationReport": "simulation", "simulate_report": "simulation",
    "closed_form_increment": "periphery.programming", "kuramoto_chip_step": "backends.phase",
    "Quantiser": "periphery.quantise", "PhaseReadout": "periphery.readout",
    "adler_cells": "backends.ssa_pairwise", "ssa1d_collective": "backends.ssa_collective",
    "adler_window_error_bound": "backends.ssa", "ssa_closed_form": "backends.ssa",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        mod = _EXPORTS[name]
        if mod is None:
            return importlib.import_module(f"{__name__}.{name}")
        return getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
