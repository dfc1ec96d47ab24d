"""Compile a trained closed-form model onto an oscillator chip (:func:`compile`).

The compiler never modifies the model: it reads its configuration and weights, picks the device
(:mod:`mapping.compiler.device`) and its coupling rule, asks the backend registry that every layer can run on
that device, draws the chip's mismatch once (seeded by ``config.mismatch_seed``), trims it, counts resources
(:mod:`mapping.compiler.resources`) and records the unit conversions (:mod:`mapping.units`).
"""

from __future__ import annotations

import os
from typing import Any

from .. import units
from ..chip import Chip
from ..config import ChipConfig
from ..model_io import load_model, model_fingerprint, model_kind
from ..backends.blocking import block_plan
from .coupling_rule import coupling_rule
from .device import chip_device
from .inert import check_fields_act
from .layers import TileDraw, model_kind_spec
from .mismatch import draw_score_oscillators
from .resources import total_resources
from .schedule import tile_resources

__all__ = ["compile", "chip_score_array"]


def _model_name(model) -> str:
    try:
        from oscsim.nn.registry import model_name

        return model_name(model.config)
    except Exception:
        return type(model).__name__


def _timebase(config: ChipConfig, dev, freq_sigma: float, coup_sigma: float) -> dict:
    """The unit conversions a chip records (:mod:`mapping.units`)."""
    D = dev.diffusion_at(config.temperature_k) if config.noise else 0.0
    return {
        "time_unit": "cycle (1/f0)",
        "f0_hz": dev.f0_hz,
        "kappa_rad_per_cycle": config.kappa,
        "kappa_rad_per_s": units.coupling_rad_per_s(config.coupling.fraction, dev.f0_hz),
        "settle_cycles": config.settle_cycles,
        "settle_time_s": units.settle_time_s(config.settle_cycles, dev.f0_hz),
        "kappa_tau": config.kappa_tau,
        "phase_diffusion_rad2_per_s": D,
        "sigma_rad_per_sqrt_cycle": units.noise_sigma_per_cycle(D, dev.f0_hz),
        "freq_spread_rel": freq_sigma,
        "coupler_spread_rel": coup_sigma,
    }


def _silicon(schedule, layers, config: ChipConfig, taps: int) -> dict:
    """What the silicon holds: the layers' own cells on the spatial chip, the tiles' on a multiplexed one."""
    if schedule.kind == "spatial":
        return total_resources([lm.resources for lm in layers])
    lm = layers[0]
    tile = tile_resources(lm.kind, T=block_plan(lm.max_tokens, config.array.block).tile_tokens, taps=taps,
                          coupler_bits=config.coupling.bits).to_dict()
    return {k: int(v) * schedule.tiles for k, v in tile.items()}


def chip_score_array(config: ChipConfig, kind: str, layers):
    """The score array of a chip of model ``kind`` with ``layers`` under ``config``: what the config's score stage
    (:func:`mapping.backends.scores.score_stage`) builds where the model kind's scores can be measured
    (:data:`mapping.compiler.layers.MODEL_KINDS`); None otherwise (digital scores, SSA)."""
    from ..backends.scores import score_stage

    if not model_kind_spec(kind).score_array:
        return None
    lm = layers[0]
    return score_stage(config).score_array(config, n_layers=len(layers), n_heads=lm.n_heads, head_dim=lm.head_dim,
                                           T=lm.max_tokens)


def compile(model: Any, config: ChipConfig | None = None, *, checkpoint: str | None = None) -> Chip:
    """Compile a trained model onto an oscillator chip.

    Parameters
    ----------
    model : KuramotoLM, OSNModel, or str
        The closed-form model, or a checkpoint name/path (loaded with :func:`oscsim.train.load_checkpoint`).
        It is not modified.
    config : ChipConfig, optional
        Chip configuration (default: ``ChipConfig()``, the 65 nm ring macromodel).
    checkpoint : str, optional
        Where the model came from, recorded in the chip (set automatically when ``model`` is a name/path).

    Returns
    -------
    Chip

    Raises
    ------
    ValueError
        A model a chip cannot run (a transformer, the projection ablation, top-k SSA), a layer kind no backend
        runs on the device, or a bad config.
    """
    from ..backends import compile_records, require_backend

    if config is None:
        config = ChipConfig()
    if not isinstance(config, ChipConfig):
        raise ValueError(f"config must be a ChipConfig, got {type(config).__name__}")
    if isinstance(model, (str, os.PathLike)):
        checkpoint = str(model)
        model, _ = load_model(model)
    kind = model_kind(model)
    spec = model_kind_spec(kind)
    require_backend(kind, config.device)  # refused before any work when no backend runs it
    from hw_models.technology import chip_node

    node = chip_node(config.node_nm, config.node_flavor)  # the chip's one logic node: periphery, SRAM, area, energy
    dev = chip_device(config.device, f0_hz=config.f0_hz, node_nm=config.sizing_node_nm, flavor=config.node_flavor)
    if config.device_node_nm is not None:  # a stated sizing: warned where it leaves the device model's range
        dev.oscillator.sizing_check(config.device_node_nm, stacklevel=2)
    check_fields_act(config, kind, model.config, dev)  # every field acts or is refused (mapping.compiler.inert)
    freq_sigma = dev.freq_spread_rel if config.mismatch else 0.0
    coup_sigma = (config.coupling.spread if config.coupling.spread is not None
                  else dev.coupler_spread_rel(spec.one_way_couplers))
    coup_sigma = coup_sigma if config.mismatch else 0.0
    rule = coupling_rule(config, dev, kind)
    draw = TileDraw(config, dev, freq_sigma, coup_sigma, model.config.n_layers)
    layers = spec.build_layers(model, config, draw, int(rule["taps"]))
    if config.decode.held and draw.schedule.uses_per_tile > 1:  # a reused tile cannot hold its keys' phases
        raise ValueError(f"decode.keys = 'held' holds every key's phase in its own running oscillators, but the "
                         f"{draw.schedule.kind} array runs up to {draw.schedule.uses_per_tile} units on one tile in "
                         f"turn (their phases would be overwritten); use [array] schedule = 'spatial' or as many "
                         f"tiles as units ({draw.schedule.n_layers * draw.schedule.units_per_layer})")
    sa = chip_score_array(config, kind, layers)
    if sa is not None:
        if config.decode.held and sa.shared:  # the held keys' rotated oscillators: re-injected by the next head
            raise ValueError(f"decode.keys = 'held' holds every key's phase in its own rotated oscillators, but "
                             f"scores.units = {sa.units} score units serve the {sa.n_layers * sa.n_heads} heads of "
                             f"the model in turn (their phases would be overwritten); set scores.units = "
                             f"{sa.n_layers * sa.n_heads} (or leave it unset on a spatial [array])")
    timebase = _timebase(config, dev, freq_sigma, coup_sigma)
    if config.calibration_temperature_k is not None:  # trimmed at T_cal, run at T: the drift adds
        from ..periphery.drift import temperature_drift

        pvt = temperature_drift(dev, config.temperature_k, config.calibration_temperature_k)
        pvt["calibration_temperature_k"] = config.calibration_temperature_k
        for lm in layers:
            lm.freq_residual_rel = lm.freq_residual_rel + pvt["drift_rel"]
        timebase["pvt"] = pvt
    if sa is not None:  # the rotated score oscillators, drawn once like the banks (mapping.compiler.mismatch)
        draws = draw_score_oscillators(config, dev, sa, layers[0].score_shape, freq_sigma,
                                       timebase.get("pvt", {}).get("drift_rel", 0.0))
        for lm, (resid, drel) in zip(layers, draws):
            lm.score_freq_residual_rel, lm.score_diffusion_rel = resid, drel
    timebase.update(compile_records(config, dev, kind))  # which backend variant runs, and why (e.g. STNO model)
    static = [{"name": n, "shape": list(t.shape)} for n, t in sorted(model.state_dict().items())]
    info = {"name": _model_name(model), "checkpoint": checkpoint, "config": model.config.to_dict(),
            "fingerprint": model_fingerprint(model)}
    chip = Chip(kind=kind, config=config, device=dev, model_info=info, timebase=timebase, layers=layers,
                static_digital=static, resources=_silicon(draw.schedule, layers, config, int(rule["taps"])),
                coupling_rule=rule, schedule=draw.schedule, score_array=sa, node=node)
    chip.model = model
    return chip
