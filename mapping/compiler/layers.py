"""The layers of a compiled chip, one builder per model kind (Kuramoto attention, SSA).

A builder reads the model's configuration and weights and records each layer's quantisers, mismatch draw, trim
and resources (:mod:`mapping.compiler.resources`); the mismatch comes from a :class:`TileDraw`, which follows
the schedule (:mod:`mapping.compiler.schedule`): on the spatial chip every layer draws its own (seeded by
``config.mismatch_seed`` and the layer index, as before schedules); on a multiplexed chip the physical tiles
are drawn once and every unit carries the draw of the tile it runs on, so the units sharing a tile share its
frequency errors, noise intensities, powers and coupler spreads. :data:`MODEL_KINDS` is the table the
compiler, the coupling rule and the inert-field check read per model kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import units
from ..chip import PHYSICAL_STREAM, LayerMap, TileMap, coupler_spread_draw
from ..periphery.quantise import Quantiser
from ..backends.blocking import block_plan
from .mismatch import draw_oscillators, trim
from .resources import layer_resources
from .schedule import UNIT_LAYOUT, build_schedule

__all__ = ["ModelKind", "MODEL_KINDS", "model_kind_spec", "SSA_LAYER_KINDS", "TileDraw"]

SSA_LAYER_KINDS = {"pairwise": "ssa-pairwise", "collective": "ssa1d-collective"}
"""``ssa.mode`` -> the layer kind an SSA chip is compiled to."""


class TileDraw:
    """The chip's one mismatch draw, laid out by the schedule (see the module notes).

    Parameters
    ----------
    config : ChipConfig
    device : ChipDevice
    freq_sigma, coup_sigma : float
        Relative frequency and coupler spreads (0 without mismatch).
    n_layers : int

    Attributes
    ----------
    schedule : Schedule or None
        Built at the first layer (:func:`mapping.compiler.schedule.build_schedule`).
    """

    def __init__(self, config, device, freq_sigma: float, coup_sigma: float, n_layers: int):
        self.config, self.device, self.n_layers = config, device, int(n_layers)
        self.freq_sigma, self.coup_sigma = float(freq_sigma), float(coup_sigma)
        self.schedule = None
        self._tiles = None
        self._couplers = {}  # physical shape -> the tiles' coupler draw (one seed for every layer)

    def _oscillators(self, rng, shape):
        eps, drel, pw = draw_oscillators(self.device, shape, rng, self.config.mismatch)
        code, resid = trim(eps, self.freq_sigma, self.config.trim_bits)
        return code, resid, drel, pw

    def layer(self, i: int, kind: str, shape: tuple, cshape: tuple) -> dict:
        """LayerMap fields of layer ``i`` (oscillator array ``shape``, coupler array ``cshape``): trim codes,
        residuals, diffusion and power draws, coupler-spread seed and digest, and the layer's tiles."""
        cfg = self.config
        if self.schedule is None:
            self.schedule = build_schedule(cfg.array, kind, self.n_layers, shape)
        if self.schedule.kind == "spatial":  # the layer's own draw: streams [seed, i, 1] and [seed, i, 2]
            code, resid, drel, pw = self._oscillators(np.random.default_rng([cfg.mismatch_seed, i, 1]), shape)
            # the coupler draw is made from its seed when the chip first runs, its digest when it is saved
            return dict(freq_trim_code=code, freq_residual_rel=resid, diffusion_rel=drel, power_w=pw,
                        coupler_seed=[cfg.mismatch_seed, i, 2], coupler_sha256=None, tiles=None)
        nu = UNIT_LAYOUT[kind].unit_ndim
        P = self.schedule.tiles
        if self._tiles is None:  # every tile once: streams [seed, PHYSICAL_STREAM, 1] and [.., 2]
            self._tiles = self._oscillators(np.random.default_rng([cfg.mismatch_seed, PHYSICAL_STREAM, 1]),
                                            (P, *shape[nu:]))
        tmap = TileMap(count=P, tile_of=self.schedule.tile_of[i])
        code, resid, drel, pw = (tmap.gather(a) for a in self._tiles)
        cseed = [cfg.mismatch_seed, PHYSICAL_STREAM, 2]
        phys = None
        if self.coup_sigma > 0:  # drawn once for all layers (one seed), gathered by each layer when it first runs
            pshape = tmap.physical_shape(cshape)
            phys = self._couplers.get(pshape)
            if phys is None:
                phys = self._couplers[pshape] = coupler_spread_draw(cseed, pshape, self.coup_sigma)
                phys.setflags(write=False)
        return dict(freq_trim_code=code, freq_residual_rel=resid, diffusion_rel=drel, power_w=pw,
                    coupler_seed=cseed, coupler_sha256=None, tiles=tmap, _coupler_physical=phys)


def _layer_map(i, kind, *, config, draw, coup_sigma, shape, cshape, taps, res_kw, **fields):
    """One LayerMap: the layer's mismatch from ``draw`` (:class:`TileDraw`), its resources and ``fields``."""
    res = layer_resources(kind, taps=taps, coupler_bits=config.coupling.bits, **res_kw)
    return LayerMap(index=i, kind=kind, oscillator_shape=shape, coupler_shape=cshape, coupler_spread_rel=coup_sigma,
                    resources=res.to_dict(), **draw.layer(i, kind, shape, cshape), **fields)


def _kuramoto_layers(model, config, draw: TileDraw, taps: int) -> list[LayerMap]:
    mc = model.config
    T, k, h = config.context_tokens or mc.seq_len, mc.k, mc.n_heads
    plan = block_plan(T, config.array.block)
    Tt = plan.tile_tokens  # a tile's oscillators: T, or 2B blocked
    if plan.blocked and config.energy.phase == "decode" and config.decode.held:
        raise ValueError(f"[array] block = {plan.block} with decode.keys = 'held': a held key stays in its own running "
                         f"oscillator (T = {T} per unit), a blocked tile holds 2B = {plan.tile_tokens}; use "
                         f"decode.keys = 'reinjected' or block = 'none' (or a block >= context T = {T})")
    kh = k // h
    banks = 2 if (mc.bound == "norm" and mc.value == "circular" and config.norm_reference == "chip") else 1
    if mc.value != "circular":
        raise ValueError("the 'projection' value ablation has no Kuramoto step to put on a chip; compile a "
                         "model with value='circular'")
    cq = Quantiser(bits=config.coupling.bits, range=config.coupling.range, signed=False)
    gq = Quantiser(bits=config.coupling.gain_bits, range=config.coupling.gain_range, signed=True)
    return [_layer_map(i, "kuramoto", config=config, draw=draw, coup_sigma=draw.coup_sigma, shape=(banks, h, kh, T),
                       cshape=(banks, h, kh, Tt, Tt), taps=taps,
                       res_kw={"n_heads": h, "head_dim": kh, "T": Tt, "banks": banks}, n_heads=h, head_dim=kh,
                       max_tokens=T, banks=banks, lam=0.0, coupling_quantiser=cq, gain_quantiser=gq)
            for i in range(mc.n_layers)]


def _ssa_layers(model, config, draw: TileDraw, taps: int) -> list[LayerMap]:
    mc = model.config
    T, h = config.context_tokens or mc.seq_len, mc.n_heads
    if config.array.block is not None:
        raise ValueError(f"[array] block = {config.array.block} blocks a Kuramoto layer's causal coupling; an SSA "
                         f"chip's cells are not blocked (set block = 'none')")
    kind = SSA_LAYER_KINDS[config.ssa.mode]
    collective = kind == SSA_LAYER_KINDS["collective"]
    if collective and mc.frequency != "scalar":
        raise ValueError("ssa.mode = 'collective' needs an SSA-1D model (frequency='scalar': one oscillator per "
                         "token and head); this model has vector frequencies, use ssa.mode = 'pairwise'")
    if mc.top_k is not None:
        raise ValueError("the sparse top-k SSA variant is not supported on the chip (top-k selection is not a "
                         "physical operation); compile a model with top_k=None")
    F = 1 if mc.frequency == "scalar" else mc.d_model // h
    cq = Quantiser(bits=config.coupling.bits, range=1.0, signed=False)
    kappa = units.coupling_rad_per_cycle(config.coupling.fraction)
    layers = []
    for i, blk in enumerate(model.blocks):
        lam = kappa / float(blk.attn.K.detach())
        layers.append(_layer_map(i, kind, config=config, draw=draw, coup_sigma=draw.coup_sigma,
                                 shape=(h, T) if collective else (h, T, T, 2), cshape=(h, T, T), taps=taps,
                                 res_kw={"n_heads": h, "head_dim": F, "T": T},
                                 n_heads=h, head_dim=F, max_tokens=T, banks=1, lam=lam, coupling_quantiser=cq,
                                 gain_quantiser=None))
    return layers


@dataclass(frozen=True)
class ModelKind:
    """What the compiler needs to know about a model kind.

    Attributes
    ----------
    name : str
        'kuramoto' or 'ssa' (:func:`mapping.model_io.model_kind`).
    matrix : str
        The coupling matrix's name in the chip file's coupling rule.
    one_way_couplers : bool
        Kuramoto attention's matrix is causal and signed (one-way couplers, a negative receive gain being the
        output-swapped coupler); SSA's pairs are symmetric (bidirectional couplers).
    build_layers : callable
        ``(model, config, draw, taps) -> list[LayerMap]`` with the chip's :class:`TileDraw`.
    article : str
        "a Kuramoto" / "an SSA", for messages.
    score_array : bool
        Whether its scores can be measured by an analog score array (``[scores] mode = "analog"``,
        :mod:`mapping.backends.score_array`): Kuramoto attention's scores are q·key of rotated phases; SSA's
        locking weights have no such array.
    """

    name: str
    matrix: str
    one_way_couplers: bool
    build_layers: Callable
    article: str
    score_array: bool


MODEL_KINDS = {
    "kuramoto": ModelKind("kuramoto", "kuramoto", True, _kuramoto_layers, "a Kuramoto", True),
    "ssa": ModelKind("ssa", "ssa", False, _ssa_layers, "an SSA", False),
}
"""Model kind -> :class:`ModelKind`."""


def model_kind_spec(kind: str) -> ModelKind:
    """The :class:`ModelKind` of ``kind`` (ValueError naming the valid kinds)."""
    if kind not in MODEL_KINDS:
        raise ValueError(f"kind must be one of {', '.join(repr(k) for k in MODEL_KINDS)}, got {kind!r}")
    return MODEL_KINDS[kind]
