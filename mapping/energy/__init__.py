"""Energy on the same terms for the chip and the GPU (DESIGN §5.5), and the chip's area.

Rooms: :mod:`~mapping.energy.constants` (every non-device figure with its unit and source),
:mod:`~mapping.energy.ops` (operation counts per token), :mod:`~mapping.energy.device_power` (coupler and
oscillator power from :mod:`hw_models`), :mod:`~mapping.energy.chip_terms` (the chip's energy per token as a sum
of named terms), :mod:`~mapping.energy.gpu` (the GPU's bounds and NVML), :mod:`~mapping.energy.report` (both,
both phases, attention and whole model) and :mod:`~mapping.energy.area` (layout area from the same resource
count).
"""

from .area import chip_area
from .chip_terms import ChipEnergySpec, chip_energy_per_token
from .constants import GPUS, GPUSpec
from .device_power import coupler_static_power
from .gpu import HBM_J_PER_BYTE, HBM_SOURCE, gpu_energy_per_token, measure_gpu_energy
from .ops import attention_cost, model_cost
from .report import energy_report

__all__ = ["GPUSpec", "GPUS", "ChipEnergySpec", "chip_energy_per_token", "gpu_energy_per_token", "attention_cost",
           "model_cost", "measure_gpu_energy", "energy_report", "coupler_static_power", "chip_area",
           "HBM_J_PER_BYTE", "HBM_SOURCE"]
