"""mapping: compile trained oscillator-attention models onto oscillator chips, run them, report fidelity and energy.

Public API::

    from mapping import ChipConfig, load_config, compile, run, load_chip
    chip = compile("kuramoto-tiny", load_config("examples/chip.toml"))
    result = run(chip, tokens, seed=0)          # logits, per-layer fidelity, tokens/s
    energy_report(chip)                          # chip vs GPU energy per token, with sources
"""

from . import units
from .chip import FORMAT, Chip, LayerMap, save_chip
from .chip_io import load_chip
from .compare import compare_layer
from .compiler import attach_model, compile, load_model, model_fingerprint
from .area import chip_area
from .config import ChipConfig, CouplingConfig, EnergyConfig, ReadoutConfig, SSAConfig, load_config
from .devices import ChipDevice, chip_device
from .energy import (GPUS, attention_cost, chip_energy_per_token, energy_report, gpu_energy_per_token,
                     measure_gpu_energy, model_cost)
from .fidelity import (bits_per_character, cosine_similarity, locked_agreement, order_parameter, phase_error,
                       relative_error)
from .inference import ChipRun, run
from .kuramoto_chip import closed_form_increment, kuramoto_chip_step
from .quantise import Quantiser
from .readout import PhaseReadout
from .ssa_chip import adler_cells, adler_window_error_bound, ssa1d_collective, ssa_closed_form

__all__ = [
    "FORMAT", "Chip", "ChipConfig", "ChipRun", "CouplingConfig", "ChipDevice", "EnergyConfig", "GPUS", "LayerMap",
    "PhaseReadout", "Quantiser", "ReadoutConfig", "SSAConfig",
    "adler_cells", "adler_window_error_bound", "attach_model", "attention_cost", "bits_per_character",
    "chip_area", "chip_energy_per_token", "closed_form_increment", "compare_layer", "compile", "cosine_similarity",
    "chip_device", "energy_report", "gpu_energy_per_token", "kuramoto_chip_step", "load_chip", "load_config",
    "load_model", "locked_agreement", "measure_gpu_energy", "model_cost", "model_fingerprint", "order_parameter", "phase_error",
    "relative_error", "run", "save_chip", "ssa1d_collective", "ssa_closed_form", "units",
]
