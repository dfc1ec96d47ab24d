"""Chip backends: each way a layer of a compiled chip can run, one class per module, behind one registry.

================================  =============================  ==========================================
backend (module)                  layer kinds                    devices
================================  =============================  ==========================================
PhaseMacromodel (``phase``)       kuramoto                       ideal, ring-macromodel, spin-torque
PhaseDecode (``decode``)          kuramoto (decode pass)         ideal, ring-macromodel, spin-torque (phase)
STNOAmplitude (``stno``)          kuramoto                       spin-torque (outside the phase reduction)
RingCircuit (``circuit``)         kuramoto                       ring-circuit
SpiceRung (``spice``)             kuramoto                       spice (ladder rung, ``oscsim export-spice``)
SSAPairwise (``ssa_pairwise``)    ssa-pairwise                   ideal, ring-macromodel, spin-torque
SSACollective (``ssa_collective``)  ssa1d-collective             ideal, ring-macromodel, spin-torque
ClosedForm* (``closed_form``)     all                            closed-form (ladder rung: the ideal)
================================  =============================  ==========================================

The protocol (:class:`LayerBackend`): ``prepare(chip, layer, **overrides)`` once per layer, ``step(settings,
inputs, seeds)`` per batch, ``describe(chip)`` for summaries and reports. :func:`backend_for` picks the one
that runs a chip's layer; adding a backend is adding a module here (and its import below).

The score stage of a Kuramoto chip (digital or analog scores) is a strategy of its own behind the same kind of
registry (:mod:`mapping.backends.scores`: :func:`score_stage`), with its silicon
(:mod:`mapping.backends.score_array`).
"""

from . import circuit, closed_form, decode, phase, spice, ssa_collective, ssa_pairwise, stno  # noqa: F401  (register)
from .scores import SCORE_STAGES, ScoreStage, register_score_stage, score_stage
from .base import Description, KuramotoInputs, KuramotoOutput, LayerBackend, SSAInputs, SSAOutput
from .registry import (backend_classes, backend_for, compile_records, describe_chip, register, registered,
                       require_backend)

__all__ = ["LayerBackend", "Description", "KuramotoInputs", "KuramotoOutput", "SSAInputs", "SSAOutput",
           "backend_for", "backend_classes", "register", "registered", "require_backend", "compile_records",
           "describe_chip", "ScoreStage", "SCORE_STAGES", "register_score_stage", "score_stage"]

