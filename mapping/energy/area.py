"""Layout area of a compiled chip: µm² per ring, per coupler (by bits), per readout channel, mm² per layer.

First-order cell sums over the one resource count (:func:`mapping.compiler.resources.layer_resources`), every
figure from :data:`mapping.energy.constants.AREA` (assumed layout figures of a
65 nm process; the cited ring chips [Moy22: 1,968 rings, 65 nm; Lo23: 48-spin all-to-all, 65 nm] report
whole-chip figures whose per-cell breakdown is not reproduced here, so these areas are NOT checked against a
measured layout). Reported beside the energy; the clock model (:mod:`mapping.energy.chip_terms`) takes its wire
lengths from the array pitch computed here.

- ring (CMOS): n_stages × (inverter + load capacitor C_load / MOS-cap density) + trim DAC (trim_bits
  binary-weighted unit gates + latches) + injection switch (one unit gate);
- spin-torque oscillator: pillar + its mA bias source;
- coupler, b bits: b latches + (2^b − 1) unit transmission gates (binary-weighted conductance), × wiring
  overhead; an analog (unquantised) coupler is charged as 8 bits (assumed);
- readout channel: phase detector with hold capacitor; ADCs shared by :data:`ADC_SHARE` channels.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..compiler.resources import layer_resources
from .constants import ADC_SHARE, AREA

__all__ = ["AreaModel", "ring_area_um2", "coupler_area_um2", "readout_channel_area_um2", "chip_area"]

ANALOG_BITS = 8  # an unquantised coupler / readout is charged as 8 bits (assumed)


def _a(name: str) -> float:
    return AREA[name].value


def ring_area_um2(n_stages: int = 5, c_load_f: float = 20e-15, trim_bits: int | None = 8) -> float:
    """Area of one CMOS ring with its trim DAC and injection switch [µm²]."""
    if n_stages < 3 or n_stages % 2 == 0:
        raise ValueError(f"n_stages must be an odd integer >= 3, got {n_stages}")
    tb = trim_bits or 0
    stage = _a("inverter_um2") + c_load_f / _a("mos_cap_f_per_um2")
    return n_stages * stage + tb * _a("sram_cell_um2") + (2**tb - 1) * _a("unit_switch_um2") * (tb > 0) \
        + _a("unit_switch_um2")


def stno_area_um2() -> float:
    """Area of one spin-torque oscillator with its bias source [µm²]."""
    return _a("stno_pillar_um2") + _a("stno_bias_um2")


def coupler_area_um2(bits: int | None) -> float:
    """Area of one programmable coupler of ``bits`` bits [µm²] (None: analog, charged as 8 bits)."""
    b = bits or ANALOG_BITS
    if b < 1:
        raise ValueError(f"bits must be >= 1, got {b}")
    return (b * _a("sram_cell_um2") + (2**b - 1) * _a("unit_switch_um2")) * _a("wiring_overhead")


def readout_channel_area_um2() -> float:
    """Area of one phase-detector channel incl. its share of an ADC [µm²]."""
    return _a("detector_um2") + _a("adc_um2") / ADC_SHARE.value


@dataclass(frozen=True)
class AreaModel:
    """Per-cell areas [µm²] used for one chip."""

    oscillator_um2: float
    coupler_um2: float
    readout_um2: float
    gain_dac_um2: float
    sources: dict


def area_model(chip) -> AreaModel:
    """The :class:`AreaModel` of a chip (device kind from its profile, bits from its config)."""
    cfg = chip.config
    if chip.device.is_stno:
        osc, osrc = stno_area_um2(), f"STNO pillar + bias: {AREA['stno_pillar_um2'].source}; " \
                                     f"{AREA['stno_bias_um2'].source}"
    else:
        # the chip's own ring where the device object carries its params (else the 65 nm preset's 5 x 20 fF)
        params = getattr(getattr(chip.device, "oscillator", None), "params", None)
        n_st, c_l = int(getattr(params, "n_stages", 5)), float(getattr(params, "c_load_f", 20e-15))
        osc = ring_area_um2(n_st, c_l, trim_bits=cfg.trim_bits)
        osrc = (f"{n_st} stages x (inverter {_a('inverter_um2')} um^2 + {c_l * 1e15:g} fF / MOS-cap density) + "
                f"{cfg.trim_bits}-bit "
                f"trim DAC + injection switch: {AREA['inverter_um2'].source}; {AREA['mos_cap_f_per_um2'].source}")
        if not chip.device.is_ring:
            osrc = "ideal device charged as the 65 nm ring (assumed): " + osrc
    gb = cfg.coupling.gain_bits or ANALOG_BITS
    return AreaModel(
        oscillator_um2=osc, coupler_um2=coupler_area_um2(cfg.coupling.bits), readout_um2=readout_channel_area_um2(),
        gain_dac_um2=gb * _a("sram_cell_um2") + (2**gb - 1) * _a("unit_switch_um2"),
        sources={
            "oscillator_um2": osrc,
            "coupler_um2": f"{cfg.coupling.bits or ANALOG_BITS} latches + {2 ** (cfg.coupling.bits or ANALOG_BITS) - 1} "
                           f"unit gates, x {_a('wiring_overhead')} wiring: {AREA['sram_cell_um2'].source}; "
                           f"{AREA['unit_switch_um2'].source}; {AREA['wiring_overhead'].source}",
            "readout_um2": f"detector + 1/{ADC_SHARE.value:g} ADC: {AREA['detector_um2'].source}; "
                           f"{AREA['adc_um2'].source}; {ADC_SHARE.source}",
            "gain_dac_um2": f"{gb}-bit receive-gain DAC per oscillator (latches + binary-weighted gates)",
        })


def layer_counts(lm, taps: int) -> dict:
    """Physical cells of one layer: oscillators, couplers, readout channels, gain DACs (the one resource count,
    :func:`mapping.compiler.resources.layer_resources`)."""
    r = layer_resources(lm.kind, n_heads=lm.n_heads, head_dim=lm.head_dim, T=lm.max_tokens, banks=lm.banks,
                        taps=taps)
    return {"oscillators": r.oscillators, "couplers": r.couplers, "readout_channels": r.readout_channels,
            "gain_dacs": r.gain_dacs}


def chip_area(chip) -> dict:
    """Area per layer and in total [mm²], with the per-cell figures and their sources.

    Returns
    -------
    dict with ``area_mm2`` (all layers), ``per_layer_mm2`` (list), ``cells_um2`` (per-cell areas),
    ``counts`` (cells per layer), ``sources``.
    """
    am = area_model(chip)
    taps = int(chip.coupling_rule.get("taps", 1)) if chip.coupling_rule else 1
    per_layer, counts = [], []
    for lm in chip.layers:
        c = layer_counts(lm, taps)
        n_adc = -(-c["readout_channels"] // int(ADC_SHARE.value))
        um2 = (c["oscillators"] * am.oscillator_um2 + c["couplers"] * am.coupler_um2
               + c["readout_channels"] * AREA["detector_um2"].value + n_adc * AREA["adc_um2"].value
               + c["gain_dacs"] * am.gain_dac_um2)
        per_layer.append(um2 * 1e-6)
        counts.append(c)
    return {"area_mm2": sum(per_layer), "per_layer_mm2": per_layer,
            "cells_um2": {"oscillator": am.oscillator_um2, "coupler": am.coupler_um2,
                          "readout_channel": am.readout_um2, "gain_dac": am.gain_dac_um2},
            "counts": counts, "sources": am.sources,
            "validity": "first-order cell sums at 65 nm (assumed layout figures); not checked against a "
                        "measured layout"}
