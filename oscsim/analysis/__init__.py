"""Analysis of oscillator runs: order parameter, coherence, mean frequency, phase extraction, ensemble phase diffusion."""

from .phases import ensemble_phase_diffusion, phase_from_analytic_signal, phase_from_zero_crossings
from .sync import coherence_matrix, mean_frequency, order_parameter

__all__ = [
    "order_parameter",
    "coherence_matrix",
    "mean_frequency",
    "phase_from_zero_crossings",
    "phase_from_analytic_signal",
    "ensemble_phase_diffusion",
]
