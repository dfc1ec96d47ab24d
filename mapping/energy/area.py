"""Layout area of a compiled chip: the oscillator array, the SRAM and the digital periphery, at the chip's node.

First-order cell sums over the silicon's resource count (``chip.resources``: every layer's own cells on the
spatial chip, the tiles' on a multiplexed one; :mod:`mapping.compiler.schedule`), every figure from
:data:`mapping.energy.constants.AREA` (assumed layout figures of a 65 nm process; the cited ring chips [Moy22:
1,968 rings, 65 nm; Lo23: 48-spin all-to-all, 65 nm] report whole-chip figures whose per-cell breakdown is not
reproduced here, so these areas are NOT checked against a measured layout). Reported beside the energy; the
clock model (:mod:`mapping.energy.chip_terms`) takes its wire lengths from the array pitch computed here and
the leakage its die area.

- oscillator, coupler and phase detector: asked of the chip's device object
  (:meth:`hw_models.devices.Oscillator.area_um2`, ``coupler_area_um2``, ``detector_area_um2``, from the cell
  figures of :mod:`hw_models.layout`): a CMOS ring is n_stages × (inverter + load capacitor C_load / MOS-cap
  density) + trim DAC + injection switch, drawn at the device's own sizing node; a spin-torque oscillator its
  pillar + mA bias source; a coupler of b bits b latches + (2^b − 1) unit gates × wiring overhead (analog: 8
  bits, assumed); a detector its mixer and hold capacitor;
- readout channel: the detector plus one ADC per ``[array] channels_per_adc`` channels;
- analog-score mode: the score array (:mod:`mapping.backends.score_array`): per unit k_h T rotated oscillators
  (the ring above, trimmed and injected), k_h T(T+1)/2 mixers (``mixer_um2``), T(T+1)/2 score channels (each its
  summing node, low-pass and hold charged as one detector cell) with one ADC per ``[array] channels_per_adc``,
  and 2 k_h T gate DACs (``scores.gate_bits`` latches + binary-weighted gates), times ``[scores] units``;
- SRAM: the on-die buffers of :func:`mapping.energy.sram.sram_buffers` in CACTI 7 macros, up to ``[energy]
  sram_max_bytes`` (the rest off chip) and, with stationary weights, the MACs' local stores
  (:func:`mapping.energy.sram.sram_plan`);
- digital periphery: ``[array] macs`` multiply-accumulate units at ``energy.digital_precision`` (the TSMC 45 nm
  synthesised adder and multiplier areas printed beside Horowitz's energies in Hennessy & Patterson's Fig. 1.13,
  :data:`mapping.energy.constants.ARITH_45NM_AREA_UM2`) × the periphery overhead.

At another node than 65 nm every logic and mixed-signal cell (inverter, unit gate, detector, ADC, MAC) scales by
the Stillmaker-Baas area table, latches and SRAM by the published bitcell areas, and the MOS capacitor density by
the node's effective capacitance over its area ratio, so that the ring ported by self-similar scaling keeps its
share of area (:mod:`hw_models.technology`). Analog cells scale worse than logic in practice: below 65 nm these
areas are optimistic (stated).
"""

from __future__ import annotations

from dataclasses import dataclass

from hw_models import layout
from hw_models.layout import ANALOG_BITS

from . import constants as ec
from .constants import AREA

__all__ = ["AreaModel", "chip_area", "area_model", "score_array_area", "sram_area_mm2", "periphery_area_mm2",
           "ANALOG_BITS"]


def _a(name: str, node=ec.REFERENCE_NODE) -> float:
    """An :data:`AREA` figure [um^2] at ``node``: latches by the bitcell table, the device cells by
    :func:`hw_models.layout.cell_um2`, the rest by the area table."""
    if name == "sram_cell_um2":
        return node.sram_cell_area().value
    if name in layout.DEVICE_AREA:
        return layout.cell_um2(name, node)
    return ec.at_node(AREA[name].value, node, "area")


@dataclass(frozen=True)
class AreaModel:
    """Per-cell areas [µm²] used for one chip."""

    oscillator_um2: float
    coupler_um2: float
    readout_um2: float
    gain_dac_um2: float
    detector_um2: float
    adc_um2: float
    sources: dict


def _node(chip):
    """The chip's technology node (built once per chip, :attr:`mapping.chip.Chip.node`)."""
    return chip.node


def _device_node(chip):
    """The node the chip's oscillators and couplers are drawn at (``device_node_nm``, else the logic node; built
    once per chip, :attr:`mapping.chip.Chip.device_node`)."""
    return chip.device_node


def area_model(chip) -> AreaModel:
    """The :class:`AreaModel` of a chip: every device cell asked of the chip's device object
    (:meth:`hw_models.devices.Oscillator.area_um2`, ``coupler_area_um2``, ``detector_area_um2``), bits from its
    config, the chip's node."""
    cfg, node, dnode = chip.config, _node(chip), _device_node(chip)
    osc_dev = chip.device.oscillator
    at = f" at {node.node_nm:g} nm (65 nm figures carried by hw_models.technology)" if node.node_nm != 65 else ""
    sized = "" if dnode.node_nm == node.node_nm else \
        f" at the devices' sizing node {dnode.node_nm:g} nm (device_node_nm; latches at {node.node_nm:g} nm)"
    osc, osrc = osc_dev.area_um2(dnode, cfg.trim_bits, latch_node=node)
    cpa_um2, csrc = osc_dev.coupler_area_um2(cfg.coupling.bits, dnode, latch_node=node)
    det_um2, dsrc = osc_dev.detector_area_um2(node)
    gb = cfg.coupling.gain_bits or ANALOG_BITS
    cpa = cfg.array.channels_per_adc
    return AreaModel(
        oscillator_um2=osc, coupler_um2=cpa_um2,
        readout_um2=det_um2 + _a("adc_um2", node) / cpa, detector_um2=det_um2,
        adc_um2=_a("adc_um2", node),
        gain_dac_um2=_dac_um2(gb, node),
        sources={
            "oscillator_um2": osrc + (sized or at),
            "coupler_um2": csrc + (sized or at),
            "readout_um2": f"detector + 1/{cpa} ADC ([array] channels_per_adc): {dsrc}; "
                           f"{AREA['adc_um2'].source}" + at,
            "gain_dac_um2": f"{gb}-bit receive-gain DAC per oscillator (latches + binary-weighted gates)" + at,
        })


def _dac_um2(bits: int, node) -> float:
    """A binary-weighted DAC of ``bits`` bits [µm²] (:func:`hw_models.layout.dac_area_um2`)."""
    return layout.dac_area_um2(bits, node)


def score_array_area(chip, sa) -> dict:
    """Area of the analog-score array ``sa`` (:class:`mapping.backends.score_array.ScoreArray`) of ``chip`` [mm²],
    by cell (see the module notes).

    Returns
    -------
    dict with ``score_array_mm2`` (the whole array, 0 without one), ``unit_mm2`` (one score unit, its ADC share
    included), ``parts_mm2`` (rotated oscillators, mixers, score channels, ADCs, gate DACs), ``counts`` and
    ``sources``.
    """
    if sa is None:
        return {"score_array_mm2": 0.0, "unit_mm2": 0.0, "parts_mm2": {}, "counts": {}, "sources": {}}
    node, am = _node(chip), area_model(chip)
    n = sa.counts()
    parts = {"rotated_oscillators": n["rotated_oscillators"] * am.oscillator_um2 * 1e-6,
             "mixers": n["mixers"] * _a("mixer_um2", node) * 1e-6,
             "score_channels": n["score_channels"] * _a("detector_um2", node) * 1e-6,
             "adcs": n["adcs"] * _a("adc_um2", node) * 1e-6,
             "gate_dacs": n["gate_dacs"] * _dac_um2(sa.gate_bits or ANALOG_BITS, node) * 1e-6}
    total = sum(parts.values())
    return {"score_array_mm2": total, "unit_mm2": total / sa.units, "parts_mm2": parts, "counts": n,
            "sources": {"score_array_mm2": f"{sa.units} score units ([scores] units) x (k_h T = "
                                           f"{sa.rotated_oscillators_per_unit} rotated oscillators as the array's ring; "
                                           f"{sa.mixers_per_unit} mixers: {AREA['mixer_um2'].source}; "
                                           f"{sa.channels_per_unit} score channels, one detector cell each (assumed): "
                                           f"{AREA['detector_um2'].source}; {sa.gate_dacs_per_unit} "
                                           f"{sa.gate_bits or ANALOG_BITS}-bit gate DACs) + {n['adcs']} ADCs (1 per "
                                           f"{sa.channels_per_adc} channels): {AREA['adc_um2'].source}"}}


def _sram(chip) -> dict:
    """The chip's SRAM buffers [bytes] (:func:`mapping.energy.sram.sram_buffers`)."""
    from .sram import sram_buffers

    cfg, lm = chip.config, chip.layers[0]
    taps = int(chip.coupling_rule.get("taps", 1)) if chip.coupling_rule else 1
    return sram_buffers(chip.kind, lm.kind, chip.model_info["config"], T=lm.max_tokens, n_layers=len(chip.layers),
                        n_heads=lm.n_heads, head_dim=lm.head_dim, banks=lm.banks, taps=taps,
                        coupler_bits=cfg.coupling.bits or ANALOG_BITS, readout_bits=cfg.readout.bits or ANALOG_BITS,
                        precision=cfg.energy.digital_precision, block=cfg.array.block, sequences=cfg.energy.batch)


def _plan(chip, sram: dict):
    """Where the chip's buffers live (:func:`mapping.energy.sram.sram_plan`: the die's capacity, the weights'
    policy and the off-chip memory of ``[energy]``)."""
    from .sram import sram_plan

    e = chip.config.energy
    return sram_plan(sram, _node(chip), capacity_bytes=float(e.sram_max_bytes), weights=e.weights,
                     macs=chip.config.array.macs, offchip=e.offchip)


def sram_area_mm2(sram_bytes: float, node) -> float:
    """SRAM macros holding ``sram_bytes`` [mm²] (CACTI 7: :func:`mapping.energy.sram.sram_area_mm2`)."""
    from .sram import sram_area_mm2 as cacti_area

    return cacti_area(sram_bytes, node)


def _sram_source(sram_bytes: float, node) -> str:
    from .sram import sram_figures

    return sram_figures(sram_bytes, node).area_mm2.source


def periphery_area_mm2(macs: int, precision: str, node) -> float:
    """The digital periphery [mm²]: ``macs`` MAC units at ``precision`` × the periphery overhead."""
    return macs * ec.mac_area_um2(precision, node) * ec.PERIPHERY_OVERHEAD.value * 1e-6


def chip_area(chip) -> dict:
    """Die area [mm²]: the oscillator array, the analog-score array (analog-score mode), the SRAM and the digital
    periphery, with the per-cell figures and their sources.

    Returns
    -------
    dict with ``area_mm2`` (the die), ``array_mm2``, ``score_array_mm2`` (0 with digital scores) and
    ``score_array`` (:func:`score_array_area`), ``sram_mm2`` (the on-die macros: the global SRAM and the
    stationary weights' local stores), ``periphery_mm2``, ``sram_bytes`` and ``sram_buffers`` (bytes per buffer,
    wherever they live), ``sram_on_die_bytes``, ``offchip_bytes`` (``keys``, ``weights`` past ``[energy]
    sram_max_bytes``), ``tile_mm2`` (one tile), ``layer_array_mm2`` and ``array_oscillators``
    (the array one layer runs on: its own on the spatial chip, every tile on a multiplexed one), ``counts`` (the
    silicon's cells), ``adcs``, ``cells_um2`` (per-cell areas), ``sources``, ``validity``.
    """
    cfg, node = chip.config, _node(chip)
    am = area_model(chip)
    r = chip.resources
    n_adc = -(-int(r["readout_channels"]) // cfg.array.channels_per_adc)
    um2 = (r["oscillators"] * am.oscillator_um2 + r["couplers"] * am.coupler_um2
           + r["readout_channels"] * am.detector_um2 + n_adc * am.adc_um2 + r["gain_dacs"] * am.gain_dac_um2)
    array = um2 * 1e-6
    sram = _sram(chip)
    plan = _plan(chip, sram)
    sram_mm2 = plan.area_mm2
    prec = cfg.energy.digital_precision
    mac = ec.mac_area_um2(prec, node)
    periphery = periphery_area_mm2(cfg.array.macs, prec, node)
    sc = chip.schedule
    share = (sc.n_layers if sc is not None and sc.kind == "spatial" else 1)  # the array one layer runs on
    scores = score_array_area(chip, chip.score_array)  # the compiled score stage's units (None: digital scores)
    return {"area_mm2": array + scores["score_array_mm2"] + sram_mm2 + periphery, "array_mm2": array,
            "score_array_mm2": scores["score_array_mm2"], "score_array": scores, "sram_mm2": sram_mm2,
            "periphery_mm2": periphery, "sram_bytes": sram["total"], "sram_buffers": sram,
            "sram_on_die_bytes": plan.on_die_bytes, "offchip_bytes": dict(plan.offchip_bytes),
            "tile_mm2": array / (sc.tiles if sc is not None else share),
            "layer_array_mm2": array / share, "array_oscillators": r["oscillators"] / share,
            "counts": dict(r), "adcs": n_adc,
            "cells_um2": {"oscillator": am.oscillator_um2, "coupler": am.coupler_um2,
                          "readout_channel": am.readout_um2, "gain_dac": am.gain_dac_um2, "mac": mac},
            "sources": {**am.sources, **scores["sources"],
                        "sram_mm2": f"{plan.source}; CACTI 7 macros: {_sram_source(plan.on_die_bytes, node)}",
                        "periphery_mm2": f"{cfg.array.macs} {prec} MACs ([array] macs) x {mac:.4g} um^2 "
                                         f"({ec.MAC_AREA_SOURCE}) x {ec.PERIPHERY_OVERHEAD.value:g} "
                                         f"({ec.PERIPHERY_OVERHEAD.source})"},
            "validity": f"first-order cell sums at {node.node_nm:g} nm (assumed layout figures at 65 nm"
                        + ("" if node.node_nm == 65 else ", carried by the Stillmaker-Baas area table and the bitcell "
                           "table: optimistic for analog cells") + "); not checked against a measured layout"}

