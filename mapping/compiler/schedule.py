"""The schedule: how the logical units of a compiled model take turns on the physical tiles (DESIGN §5.7).

A layer's **units** are what one tile computes at once: a Kuramoto layer has banks × heads × coordinates
networks of T oscillators, an SSA layer one unit per head (its Adler cells, or its collective network). A
**tile** is the silicon of one unit (:func:`tile_resources`). The schedule (the chip's ``[array]``,
:class:`mapping.config.ArrayConfig`) says which tile runs which unit when:

- spatial: every unit of every layer has its own tile (tile l · U + u), one round per layer;
- multiplexed (P tiles): unit u of layer l runs on tile (l · U + u) mod P in round ⌊u / P⌋ of its layer, so a
  layer takes ⌈U / P⌉ rounds and the layers (which run one after another anyway: each reads the previous one's
  output) reuse the same tiles.

Units are numbered in (head, bank, coordinate) order, so consecutive units on a tile tend to share their coupling
matrix (A is one per head: both banks and every coordinate of a head are programmed with it), and a tile whose
next unit has the same matrix keeps its coupler registers. From the assignment the schedule counts, per pass of
the array: the units whose couplers are written (``programs``), the coupling matrices read from SRAM (one per
(round, matrix), broadcast to the tiles of that round that program it) and the phase vectors read from SRAM
(one per (round, input): the two banks of a coordinate share their input phases when they run in the same
round). The spatial schedule gives exactly the counts of the energy model before schedules existed: every unit
programmed, one matrix per head and one input per coordinate per layer.

Fidelity follows the assignment: the compiler draws each tile's mismatch once and every unit on a tile carries
that draw (:mod:`mapping.compiler.layers`); noise streams are keyed on the physical run (round, tile) of each use
(:class:`mapping.seeds.LayerSeeds`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..chip import UNIT_AXES
from .resources import LayerResources, layer_resources

__all__ = ["Schedule", "build_schedule", "unit_shape", "unit_order", "tile_resources", "UNIT_LAYOUT", "UnitLayout"]


@dataclass(frozen=True)
class UnitLayout:
    """How a layer kind's per-oscillator and per-coupler arrays split into units.

    Attributes
    ----------
    unit_ndim : int
        Leading axes of the layer's arrays that index units (Kuramoto: bank, head, coordinate; SSA: head).
    per_tile : dict
        Keyword arguments of :func:`mapping.compiler.resources.layer_resources` for one unit.
    gain_dac_per_oscillator : bool
        A tile carries a receive-gain DAC per oscillator (Kuramoto: a tile may serve the gain bank and the
        unit-gain reference bank in turn).
    """

    unit_ndim: int
    per_tile: dict
    gain_dac_per_oscillator: bool = False


UNIT_LAYOUT = {
    "kuramoto": UnitLayout(UNIT_AXES["kuramoto"], {"n_heads": 1, "head_dim": 1, "banks": 1}, True),
    "ssa-pairwise": UnitLayout(UNIT_AXES["ssa-pairwise"], {"n_heads": 1, "head_dim": 1}),
    "ssa1d-collective": UnitLayout(UNIT_AXES["ssa1d-collective"], {"n_heads": 1, "head_dim": 1}),
}
"""Layer kind -> :class:`UnitLayout`."""


def unit_shape(kind: str, oscillator_shape: tuple) -> tuple:
    """The unit axes of a layer's oscillator array: Kuramoto (banks, heads, coordinates), SSA (heads,)."""
    return tuple(oscillator_shape[:UNIT_LAYOUT[kind].unit_ndim])


def unit_order(kind: str, oscillator_shape: tuple) -> np.ndarray:
    """(unit shape) int array: each unit's position in the schedule order, (head, bank, coordinate)."""
    us = unit_shape(kind, oscillator_shape)
    if len(us) == 1:
        return np.arange(us[0])
    nb, h, kh = us
    b, hd, c = np.meshgrid(np.arange(nb), np.arange(h), np.arange(kh), indexing="ij")
    return (hd * nb + b) * kh + c


def _keys(kind: str, oscillator_shape: tuple):
    """(matrix key, input key) of every unit, (unit shape) int arrays: units with the same matrix key are programmed
    with the same couplings (one A per head); units with the same input key start from the same phases (Kuramoto:
    the banks of one coordinate; SSA cells start free-running: every unit its own)."""
    us = unit_shape(kind, oscillator_shape)
    if len(us) == 1:
        return np.arange(us[0]), np.arange(us[0])
    nb, h, kh = us
    _, hd, c = np.meshgrid(np.arange(nb), np.arange(h), np.arange(kh), indexing="ij")
    return hd, hd * kh + c


def tile_resources(kind: str, *, T: int, taps: int = 1, coupler_bits: int | None = None) -> LayerResources:
    """The cells of one tile of a layer ``kind`` built for ``T`` tokens: one unit's oscillators, couplers, phase
    detectors and trim DACs, and a receive-gain DAC per oscillator on Kuramoto tiles (a tile may serve the gain
    bank and the unit-gain reference bank in turn)."""
    r = layer_resources(kind, T=T, taps=taps, coupler_bits=coupler_bits, **UNIT_LAYOUT[kind].per_tile)
    if UNIT_LAYOUT[kind].gain_dac_per_oscillator:
        return LayerResources(**{**r.__dict__, "gain_dacs": r.oscillators})
    return r


@dataclass(frozen=True, kw_only=True)
class Schedule:
    """The assignment of a compiled model's units to tiles and rounds, and what it costs per pass.

    Attributes
    ----------
    kind : {'spatial', 'multiplexed'}
    tiles : int
        Physical tiles.
    n_layers, units_per_layer : int
    rounds_per_layer : int
        Rounds a layer takes (the tiles run every unit of a round at once).
    tile_of, round_of : tuple of (unit shape) int arrays, one per layer
    programs_per_layer : float
        Units whose coupler registers are written per pass, mean over layers (a unit whose tile last held the
        same coupling matrix keeps it).
    matrix_loads_per_layer, input_loads_per_layer : float
        Coupling matrices and input-phase vectors read from SRAM per pass, mean over layers.
    matrices_per_layer, inputs_per_layer : int
        Distinct coupling matrices (one per head) and input-phase vectors (Kuramoto: one per coordinate; SSA:
        one per unit) of a layer: the spatial chip reads each once.
    uses_per_tile : int
        The most units any tile runs per pass.
    """

    kind: str
    tiles: int
    n_layers: int
    units_per_layer: int
    rounds_per_layer: int
    tile_of: tuple
    round_of: tuple
    programs_per_layer: float
    matrix_loads_per_layer: float
    input_loads_per_layer: float
    matrices_per_layer: int
    inputs_per_layer: int
    uses_per_tile: int

    @property
    def reuse(self) -> float:
        """Logical units per tile per pass (1 on the spatial chip)."""
        return self.n_layers * self.units_per_layer / self.tiles

    @property
    def utilisation(self) -> float:
        """Fraction of tile-rounds that run a unit."""
        return self.n_layers * self.units_per_layer / (self.tiles * self.n_layers * self.rounds_per_layer)

    def runs(self, layer: int) -> np.ndarray | None:
        """(unit shape, 2) int array (round, tile) of each unit of ``layer`` on a multiplexed chip (the physical
        run its noise is keyed on); None on the spatial chip (keys of the logical units, as before schedules)."""
        if self.kind == "spatial":
            return None
        return np.stack([self.round_of[layer], self.tile_of[layer]], axis=-1)

    def to_json(self) -> dict:
        return {"kind": self.kind, "tiles": self.tiles, "n_layers": self.n_layers,
                "units_per_layer": self.units_per_layer, "rounds_per_layer": self.rounds_per_layer,
                "programs_per_layer": self.programs_per_layer, "matrix_loads_per_layer": self.matrix_loads_per_layer,
                "input_loads_per_layer": self.input_loads_per_layer, "matrices_per_layer": self.matrices_per_layer,
                "inputs_per_layer": self.inputs_per_layer, "uses_per_tile": self.uses_per_tile,
                "reuse": self.reuse, "utilisation": self.utilisation}


def _assign(array, L: int, U: int, order: np.ndarray):
    """(tiles, rounds per layer, [tile_of], [round_of]) of the schedule ``array`` (see the module notes)."""
    if array.schedule == "spatial":
        return L * U, 1, [l * U + order for l in range(L)], [np.zeros_like(order) for _ in range(L)]
    P = int(array.tiles)
    return P, -(-U // P), [(l * U + order) % P for l in range(L)], [order // P for _ in range(L)]


def _counts(L: int, tile_of, round_of, mkey, ikey) -> tuple[float, float, float, int]:
    """(programs, matrix loads, input loads) per layer and the most uses of a tile, walking every tile's uses in
    time order (layer, round) within one pass; a pass starts with every tile holding another matrix."""
    last: dict = {}
    programs, mloads, iloads = 0, set(), set()
    uses = np.zeros(max(int(t.max()) for t in tile_of) + 1, dtype=np.int64)
    for l in range(L):
        t, r = tile_of[l].ravel(), round_of[l].ravel()
        mk, ik = mkey.ravel(), ikey.ravel()
        for i in np.lexsort((t, r)):  # in round order
            tile, key = int(t[i]), (l, int(mk[i]))
            uses[tile] += 1
            iloads.add((l, int(r[i]), int(ik[i])))
            if last.get(tile) != key:
                programs += 1
                mloads.add((l, int(r[i]), int(mk[i])))
                last[tile] = key
    return programs / L, len(mloads) / L, len(iloads) / L, int(uses.max())


def build_schedule(array, kind: str, n_layers: int, oscillator_shape: tuple) -> Schedule:
    """The :class:`Schedule` of the config's ``array`` for ``n_layers`` layers of ``kind`` whose oscillator arrays
    have ``oscillator_shape`` (:attr:`mapping.chip.LayerMap.oscillator_shape`)."""
    order = unit_order(kind, oscillator_shape)
    L, U = int(n_layers), int(order.size)
    P, R, tile_of, round_of = _assign(array, L, U, order)
    mkey, ikey = _keys(kind, oscillator_shape)
    programs, mloads, iloads, uses = _counts(L, tile_of, round_of, mkey, ikey)
    return Schedule(kind=array.schedule, tiles=P, n_layers=L, units_per_layer=U, rounds_per_layer=R,
                    tile_of=tuple(tile_of), round_of=tuple(round_of), programs_per_layer=programs,
                    matrix_loads_per_layer=mloads, input_loads_per_layer=iloads,
                    matrices_per_layer=len(np.unique(mkey)), inputs_per_layer=len(np.unique(ikey)), uses_per_tile=uses)
