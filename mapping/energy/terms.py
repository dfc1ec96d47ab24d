"""The one registry of the chip's energy terms (DESIGN §5.5): a term is a :class:`ChipTerm` in :data:`TERMS`.

The core terms are registered by :mod:`mapping.energy.chip_terms`; a chip mode registers its own in its module
(:mod:`mapping.energy.analog_scores`: the score oscillators, mixers and readout; :mod:`mapping.energy.phase_memory`:
held decode keys). A term carries its energy and source as functions of the spec
(:class:`mapping.energy.spec.ChipEnergySpec`, frozen groups by concept) and the typed pass context
(:class:`mapping.energy.context.PassContext`, built by :func:`mapping.energy.context.pass_context`), when it is
charged, and optionally how its mode changes the
pass's events (``events``) and what it adds to the report (``report``); every report, table and plot picks the
terms up by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import constants as ec

__all__ = ["ChipTerm", "TERMS", "register_term", "array_terms", "dac_conversion_j", "t_sw", "at_node_note"]


@dataclass(frozen=True)
class ChipTerm:
    """One named term of the chip's energy per token.

    Attributes
    ----------
    name : str
        Key in the breakdown (``<what>_j``).
    energy : callable
        ``energy(spec, c) -> float``: J per token of one layer (``per_layer``) or of the chip; ``spec`` a
        :class:`~mapping.energy.spec.ChipEnergySpec`, ``c`` a :class:`~mapping.energy.context.PassContext`.
    source : callable
        ``source(spec, c) -> str``: the figures and models behind it.
    array : bool
        A term of the oscillator array (what a chip without the array would not spend); the rest is the
        periphery, SRAM and leakage (``floor_without_array_j`` of a design).
    per_layer : bool
        Multiplied by the number of attention layers.
    when : callable or None
        ``when(spec, c) -> bool``: charged (and reported) only then, e.g. the analog-score terms.
    events : callable or None
        ``events(spec, phase, analog, n) -> n``: the pass's cell and event counts (one layer, a
        :class:`~mapping.energy.context.PassEvents`, changed with ``dataclasses.replace``) as this term's mode
        changes them (e.g. held decode keys: only the receivers are injected), applied before any term is
        evaluated, in registration order; None: unchanged.
    report : callable or None
        ``report(spec, c) -> dict``: keys this term's mode adds to the energy report (e.g. ``phase_memory``),
        called whether or not the term is charged; None: nothing.
    """

    name: str
    energy: Callable
    source: Callable
    array: bool = True
    per_layer: bool = True
    when: Callable | None = None
    events: Callable | None = None
    report: Callable | None = None


TERMS: dict = {}
"""Name -> :class:`ChipTerm`, in the order the breakdown lists them."""


def register_term(term: ChipTerm) -> ChipTerm:
    """Add ``term`` to :data:`TERMS` (a name already taken is refused)."""
    if not isinstance(term, ChipTerm):
        raise ValueError(f"register_term takes a ChipTerm, got {type(term).__name__}")
    if term.name in TERMS:
        raise ValueError(f"chip term {term.name!r} is already registered")
    TERMS[term.name] = term
    return term


def array_terms() -> tuple:
    """Names of the array's terms (registered with ``array=True``), in breakdown order."""
    return tuple(name for name, t in TERMS.items() if t.array)


# ------------------------------------------------------------------- what several terms' modules share
def dac_conversion_j(bits: int, c_unit: float, vdd: float) -> float:
    """Switching energy of one binary-weighted DAC update, ½ (2^b − 1) C_u V² (half the gates toggle, assumed)."""
    return 0.5 * (2**bits - 1) * c_unit * vdd**2


def t_sw(s, c):
    """The score mixers' averaging time [s]."""
    return s.array.read_cycles / c.f0  # the score mixers average over the readout window (assumed)


def at_node_note(c) -> str:
    """What a source adds when the chip is not at 65 nm."""
    tn = c.tech.node
    return (f" at {tn.node_nm:g} nm {tn.flavor}, {tn.vdd:g} V (65 nm figures carried by hw_models.technology)"
            if tn.node_nm != ec.REFERENCE_NODE.node_nm else "")
