"""The chip configuration's mode classes (STYLE 5: a mode is a class): where the Kuramoto scores are computed
(``[scores]``), how decode reaches its keys (``[decode]``), and the physical array with its schedule
(``[array]``). Re-exported by :mod:`mapping.config`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from .config_checks import _check_bits, _check_choice, _check_int, _check_pos

__all__ = ["DigitalScores", "AnalogScores", "ReinjectedKeys", "HeldKeys", "ArrayConfig", "SpatialArray",
           "MultiplexedArray", "SCHEDULES", "RETICLE_LIMIT_MM2", "NODE_FLAVORS", "NODE_RANGE_NM", "array_from_dict"]


@dataclass(frozen=True, kw_only=True)
class DigitalScores:
    """``[scores] mode = "digital"`` (the default): the Kuramoto scores s = q·key and the softmax are computed by
    the digital periphery from the stored keys (DESIGN §5.2)."""

    mode: str = "digital"

    def __post_init__(self):
        _check_choice("scores.mode", self.mode, ("digital",))

    def idealised(self) -> "DigitalScores":
        """The ideal chip's section: nothing to idealise."""
        return self


@dataclass(frozen=True, kw_only=True)
class AnalogScores:
    """``[scores] mode = "analog"``: the oscillators measure the Kuramoto scores (DESIGN §5.5), the softmax stays
    digital. The chip run simulates the chain (:mod:`mapping.backends.analog_scores`): one rotated oscillator per
    (token, coordinate) at θ + ω t, a mixer per (query, key, coordinate) whose gain is the product of the two
    gates, the mixer currents of a head summed, low-passed, sampled and converted once per (query, key, head)
    with the chip's ``[readout]`` detector, filter, window and sampler noise.

    Attributes
    ----------
    gate_bits : int or None
        Resolution of the unsigned gate DACs (the key gate sets the mixer's input amplitude, the query gate its
        tail current); None: analog.
    gate_range : float
        Largest gate value; larger gates clip (the gates are positive with mean one per head; kuramoto-tiny's
        reach 10.9, measured). (0, 1e6].
    bits : int or None
        Resolution of the score ADC (one conversion per query, key and head, signed over ± ``full_scale``);
        None: unquantised.
    full_scale : float
        ADC full scale in units of the per-coordinate score (1/k_h) Σ_j g^q g^k cos(·); larger scores clip
        (kuramoto-tiny's reach 4.3, 99.9 % below 3.4, measured). (0, 1e6].
    units : int or None
        Physical *score units* (one head's rotated oscillators, mixers, score channels and gate DACs,
        :mod:`mapping.backends.score_array`), in [1, 2^20]; the heads of a layer take ⌈heads / units⌉ score rounds,
        and heads sharing a unit share its oscillators' mismatch. More units than the model's heads leave units
        idle (their area is charged). None/'none' (the default): every head of every layer its own unit on a
        spatial ``[array]``, the heads of one layer on a multiplexed one.
    """

    mode: str = "analog"
    gate_bits: int | None = 8
    gate_range: float = 16.0
    bits: int | None = 10
    full_scale: float = 4.0
    units: int | None = None

    def __post_init__(self):
        _check_choice("scores.mode", self.mode, ("analog",))
        if isinstance(self.units, str) and self.units.lower() == "none":
            object.__setattr__(self, "units", None)
        if self.units is not None:
            _check_int("scores.units", self.units, 1, 2**20)
        object.__setattr__(self, "gate_bits", _check_bits("scores.gate_bits", self.gate_bits))
        object.__setattr__(self, "bits", _check_bits("scores.bits", self.bits))
        for name in ("gate_range", "full_scale"):
            if _check_pos(f"scores.{name}", getattr(self, name)) > 1e6:
                raise ValueError(f"scores.{name} must be in (0, 1e6], got {getattr(self, name)!r}")

    def idealised(self) -> "AnalogScores":
        """The ideal chip's section: unquantised gates and scores, nothing clips."""
        return dataclasses.replace(self, gate_bits=None, gate_range=1e6, bits=None)


@dataclass(frozen=True, kw_only=True)
class ReinjectedKeys:
    """``[decode] keys = "reinjected"`` (the default): at every decoded token the earlier tokens' phases are read
    from SRAM and re-injected into their oscillators; the oscillators are off between tokens."""

    keys: str = "reinjected"
    held: ClassVar[bool] = False

    def __post_init__(self):
        _check_choice("decode.keys", self.keys, ("reinjected",))


@dataclass(frozen=True, kw_only=True)
class HeldKeys:
    """``[decode] keys = "held"``: a phase memory. Each token's oscillators are written once and keep running
    between tokens, holding their phases; they diffuse (the device's D) and drift (the trim residual and the
    temperature drift) over the inter-token time, and draw their power all along
    (:mod:`mapping.backends.phase_memory`). Acts in decode only (``[energy] phase = "decode"``).

    Attributes
    ----------
    inter_token_s : float
        Time between two decoded tokens [s] (one over the decode rate), in (0, 1]. Default 400 ns (assumed: about
        the back-to-back decode latency of kuramoto-tiny on the spatial 65 nm chip, 383 ns by the schedule's
        windows, :mod:`mapping.energy.latency`). A value below the chip's decode latency per token
        (``phase_memory.decode_latency_s`` of the energy report) is refused before a simulation runs
        (:func:`mapping.simulation.simulate_report`). Held keys need every unit its own tile (refused on a
        reused tile by :func:`mapping.compile`).
    """

    keys: str = "held"
    inter_token_s: float = 4e-7
    held: ClassVar[bool] = True

    def __post_init__(self):
        _check_choice("decode.keys", self.keys, ("held",))
        if _check_pos("decode.inter_token_s", self.inter_token_s) > 1.0:
            raise ValueError(f"decode.inter_token_s must be in (0, 1] s, got {self.inter_token_s!r}")


RETICLE_LIMIT_MM2 = 26.0 * 33.0
"""The largest die one lithography exposure prints [mm²]: the 26 mm × 33 mm field of ASML's 0.33-NA EUV (NXE)
and 193i (NXT) scanners (ASML product data); a larger die needs field stitching."""


@dataclass(frozen=True, kw_only=True)
class ArrayConfig:
    """The physical array: what the silicon holds and how the compiled model is scheduled onto it (DESIGN §5.7).

    A compiled model is logical: every layer holds *units* (a Kuramoto layer banks × heads × coordinates
    networks of T oscillators; an SSA layer one unit per head: its Adler cells, or its collective network). The
    silicon holds *tiles*, each the array of one unit (T oscillators with their couplers, phase detectors,
    receive-gain and trim DACs; :mod:`mapping.compiler.schedule`). The schedule is the class: :class:`SpatialArray`
    (every unit its own tile, today's mapping) or :class:`MultiplexedArray` (units take turns on fewer tiles).
    In TOML: ``[array] schedule = "spatial"`` or ``schedule = "multiplexed"`` with that schedule's fields.

    Attributes
    ----------
    channels_per_adc : int
        Readout channels (two per phase detector) sampled onto hold capacitors and converted in turn by one SAR
        ADC, in [1, 4096]; the ADC count and the serial conversion time follow. 64: assumed.
    macs : int
        Multiply-accumulate units of the digital periphery (scores, softmax, gates, rescaling), in [1, 2^20]:
        their area and the time the periphery takes per pass. 1024: assumed (a few mm² at 65 nm).
    block : int or None
        Block size B of the blocked schedule for long contexts (:mod:`mapping.backends.blocking`): the causal
        T × T coupling of a unit is split into B × B blocks, block (i, j ≤ i) runs on a tile of 2B oscillators
        (B key-side, B query-side) in a round of its own, and the first-order increments of query block i are
        summed over its key blocks digitally. An integer in [1, 2^20]; a B that does not divide T clips the last
        block; B ≥ T is the unblocked run. None/'none' (the default): no blocking, a tile holds the whole T.
    die_limit_mm2 : float
        Largest die the design may take [mm²], in (0, 858]; a larger die is reported infeasible
        (:func:`mapping.backends.blocking.infeasible_reason`). 858: the lithography field of one exposure,
        26 mm × 33 mm (the reticle limit of ASML's 0.33-NA scanners, e.g. the NXE:3400 and NXT:2000i fields).
    """

    channels_per_adc: int = 64
    macs: int = 1024
    block: int | None = None
    die_limit_mm2: float = RETICLE_LIMIT_MM2
    schedule = "abstract"  # class data: the schedule's name (a ClassVar, not a field)

    def __post_init__(self):
        _check_int("array.channels_per_adc", self.channels_per_adc, 1, 4096)
        _check_int("array.macs", self.macs, 1, 2**20)
        if isinstance(self.block, str) and self.block.lower() == "none":
            object.__setattr__(self, "block", None)
        if self.block is not None:
            _check_int("array.block", self.block, 1, 2**20)
        lim = _check_pos("array.die_limit_mm2", self.die_limit_mm2)
        object.__setattr__(self, "die_limit_mm2", lim)
        if lim > RETICLE_LIMIT_MM2:
            raise ValueError(f"array.die_limit_mm2 must be in (0, {RETICLE_LIMIT_MM2:g}] mm^2 (one reticle field, "
                             f"26 mm x 33 mm), got {self.die_limit_mm2!r}")

    def to_dict(self) -> dict:
        """The TOML/JSON layout: ``schedule`` and this schedule's fields."""
        return {"schedule": self.schedule, **dataclasses.asdict(self)}


@dataclass(frozen=True, kw_only=True)
class SpatialArray(ArrayConfig):
    """Fully spatial: every unit of every layer has its own tile (the mapping before issue 20). Layers still run
    one after another (each needs the previous one's output); a tile is used once per pass."""

    schedule = "spatial"


@dataclass(frozen=True, kw_only=True)
class MultiplexedArray(ArrayConfig):
    """Time-multiplexed: ``tiles`` physical tiles serve every unit of every layer in turn.

    Unit u of layer l (units in (head, bank, coordinate) order) runs on tile (l · U + u) mod ``tiles`` in round
    ⌊u / tiles⌋ of its layer (U units per layer): a layer takes ⌈U / tiles⌉ rounds; between uses a tile's
    couplers are reprogrammed (skipped when the next unit on it has the same coupling matrix, e.g. another
    coordinate of the same head) and its phases re-injected. A physical tile's mismatch is the same in every use;
    its noise is keyed on the physical run (:mod:`mapping.compiler.schedule`, :mod:`mapping.seeds`).

    Attributes
    ----------
    tiles : int
        Physical tiles, in [1, 2^20]. More tiles than units in the whole model leave tiles idle (their area is
        charged).
    """

    tiles: int = 16
    schedule = "multiplexed"

    def __post_init__(self):
        super().__post_init__()
        _check_int("array.tiles", self.tiles, 1, 2**20)


SCHEDULES = {"spatial": SpatialArray, "multiplexed": MultiplexedArray}
"""``[array] schedule`` -> the array class."""
NODE_FLAVORS = ("LP", "HP")
NODE_RANGE_NM = (7.0, 180.0)  # the Stillmaker-Baas fits (hw_models.technology): a node outside them is refused
"""Accepted ``node_nm`` [nm]; the technology model's fits cover 7–180 nm and warn outside
(:mod:`hw_models.technology`)."""


def array_from_dict(d: dict) -> ArrayConfig:
    """An :class:`ArrayConfig` from its table: ``schedule`` picks the class, the other keys are its fields."""
    if not isinstance(d, dict):
        raise ValueError(f"[array] must be a table, got {d!r}")
    d = dict(d)
    name = d.pop("schedule", MultiplexedArray.schedule)
    if name not in SCHEDULES:
        raise ValueError(f"array.schedule must be one of {', '.join(SCHEDULES)}; got {name!r}")
    cls = SCHEDULES[name]
    valid = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(d) - valid)
    if unknown:
        others = {k: sorted({f.name for f in dataclasses.fields(c)} - valid) for k, c in SCHEDULES.items()
                  if c is not cls}
        hint = "; ".join(f"{', '.join(v)} belong(s) to schedule {k!r}" for k, v in others.items()
                         if set(v) & set(unknown))
        raise ValueError(f"unknown option(s) {', '.join(unknown)} in [array] for schedule {name!r}; valid: schedule, "
                         f"{', '.join(sorted(valid))}" + (f" ({hint})" if hint else ""))
    return cls(**d)
