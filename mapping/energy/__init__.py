"""Energy on the same terms for the chip and the GPU (DESIGN §5.5), and the chip's area.

Rooms: :mod:`~mapping.energy.constants` (every non-device figure with its unit and source, carried to the chip's
node by :mod:`hw_models.technology`), :mod:`~mapping.energy.ops` (operation counts per token),
:mod:`~mapping.energy.device_power` (coupler and oscillator power from :mod:`hw_models`),
:mod:`~mapping.energy.spec` (what the chip model reads, frozen groups by concept), :mod:`~mapping.energy.context`
(the typed pass context every term reads), :mod:`~mapping.energy.chip_terms` (the chip's energy per token as a sum
of named terms, leakage included), :mod:`~mapping.energy.latency` (the schedule's windows per
token), :mod:`~mapping.energy.sram` (the SRAM a chip needs), :mod:`~mapping.energy.gpu` (the GPU's bounds and
NVML), :mod:`~mapping.energy.baselines` (the chip's same-terms baselines: the same chip without the array, the
GPU's datapath bound, its board figure), :mod:`~mapping.energy.report` (both, both phases, attention and whole
model) and :mod:`~mapping.energy.area` (die area: array, SRAM, periphery).
"""

from .area import chip_area
from .chip_terms import ARRAY_TERMS, TERMS, ChipEnergySpec, ChipTerm, chip_energy_per_token, register_term
from .context import PassContext, PassEvents, SramTraffic, TechFigures, layer_events, pass_context
from .spec import (ArrayFigures, AttentionShape, DecodeFigures, PeripheryFigures, ScheduleFigures, ScoreStageFigures,
                   Workload)
from .latency import pass_timeline
from .sram import sram_buffers
from .constants import GPUS, GPUSpec
from .device_power import coupler_static_power
from .gpu import HBM_J_PER_BYTE, HBM_SOURCE, gpu_energy_per_token, measure_gpu_energy
from .ops import attention_cost, model_cost
from .report import energy_report

__all__ = ["GPUSpec", "GPUS", "ChipEnergySpec", "AttentionShape", "ArrayFigures", "ScheduleFigures",
           "PeripheryFigures", "ScoreStageFigures", "DecodeFigures", "Workload", "PassContext", "PassEvents",
           "TechFigures", "SramTraffic", "pass_context", "layer_events", "chip_energy_per_token", "ARRAY_TERMS",
           "TERMS", "ChipTerm", "register_term", "pass_timeline", "sram_buffers", "gpu_energy_per_token",
           "attention_cost", "model_cost", "measure_gpu_energy", "energy_report", "coupler_static_power",
           "chip_area", "HBM_J_PER_BYTE", "HBM_SOURCE"]
