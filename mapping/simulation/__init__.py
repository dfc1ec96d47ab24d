"""Running a compiled chip: inference on tokens, one head against the closed form, the fidelity ladder, the report.

Rooms: :mod:`~mapping.simulation.inference` (:func:`run` -> :class:`ChipRun`), :mod:`~mapping.simulation.compare`
(:func:`compare_layer`), :mod:`~mapping.simulation.ladder` (:func:`compare_levels`),
:mod:`~mapping.simulation.figures` (their plots) and :mod:`~mapping.simulation.report`
(:class:`SimulationReport`, :func:`simulate_report`).
"""

from .compare import compare_layer
from .inference import ChipRun, run
from .ladder import LEVELS, RUNGS, compare_levels, parse_levels
from .report import SimulationReport, simulate_report

__all__ = ["ChipRun", "run", "compare_layer", "compare_levels", "parse_levels", "LEVELS", "RUNGS",
           "SimulationReport", "simulate_report"]
