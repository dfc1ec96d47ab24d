"""The energy report of a chip: chip and GPU per token on the same terms, both phases, attention and whole model.

The headline (``energy_per_token_chip_j`` vs ``energy_per_token_gpu_j``) is attention only, in the phase
``chip.config.energy.phase``, against the GPU bound ``chip.config.energy.gpu_bound``; the whole model adds the
embedding, feed-forward and output head, digital on either machine. The gain over the GPU factorises as
(GPU / digital-only chip) × (array gain ≤ Amdahl bound).
"""

from __future__ import annotations

from dataclasses import replace

from ..backends.scores import score_stage
from . import constants as ec
from .area import chip_area
from .feasibility import infeasible_reason
from .chip_terms import PHASES, chip_energy
from .spec import LAYER_ENERGY, ChipEnergySpec
from .baselines import baselines as _baselines
from .gpu import BOUND_NAMES, gpu_energy_per_token
from .ops import model_cost

__all__ = ["energy_report"]


def energy_report(chip, T: int | None = None, *, gpu: str | None = None) -> dict:
    """Chip and GPU energy per token on the same terms (DESIGN §5.5), the headline and everything behind it.

    The headline (``energy_per_token_chip_j`` vs ``energy_per_token_gpu_j``) is attention only, in the phase
    ``chip.config.energy.phase``, against the GPU bound ``chip.config.energy.gpu_bound``; ``headline`` says so.

    Returns
    -------
    dict with the keys of :func:`chip_energy_per_token` plus ``energy_per_token_gpu_j``,
    ``gpu_energy_bounds_j`` {lower, upper}, ``gpu`` (the GPU model dict), ``whole_model`` {chip_j, gpu_j,
    gpu_bounds_j, offloaded_fraction, amdahl_max_gain}, ``phases`` (prefill and decode, with and without
    analog scores where applicable), ``gain_vs_gpu``, ``area_mm2``, ``area`` (:func:`mapping.energy.chip_area`),
    ``leakage_j`` (the leakage term of the headline), ``schedule``, ``headline``, ``baselines``
    (:func:`mapping.energy.baselines.baselines`: ``digital_same_node``, ``gpu_datapath``, ``gpu_board`` in the
    headline's phase; each phase of ``phases`` has their ``baselines_j``); ``latency_per_token_s`` and
    ``sram_bytes`` come with the chip terms.
    """
    ecfg = chip.config.energy
    gpu = gpu or ecfg.gpu
    T = T or chip.layers[0].max_tokens
    spec = ChipEnergySpec.from_chip(chip, T)
    spec = replace(spec, workload=replace(spec.workload, gpu=gpu))
    mc, L = chip.model_info["config"], len(chip.layers)
    rest = model_cost(chip.kind, mc)
    node = spec.node
    e_op = ec.op_energy_j(spec.periphery.digital_precision, node)
    e_w_rest = ec.sram_j_per_bit(rest["weights"] * ec.BYTES[spec.periphery.digital_precision], node)

    def rest_chip_j(phase, mem):
        """The rest of the model on the chip: its operations and its weights, read as the attention's are
        (stationary: from the local stores; past the die's capacity: the same share off chip)."""
        reuse = spec.workload.batch * (T if phase == "prefill" else 1)
        w_bytes = mem["weights_bytes"]
        off = mem["offchip_bytes"]["weights"] / w_bytes if w_bytes > 0 else 0.0
        e_w = mem["local_j_per_bit"] if mem["local_store_bytes"] > 0 else e_w_rest
        return (rest["flops"] * e_op + rest["weights"] * ec.BYTES[spec.periphery.digital_precision] * 8
                * ((1 - off) * e_w + off * mem["offchip_j_per_bit"]) / reuse)

    scores = LAYER_ENERGY[chip.layers[0].kind].digital_scores  # the analog-score mode applies
    phases = {}
    for ph in PHASES:
        for an in ((False, True) if scores else (False,)):
            ce = chip_energy(spec, ph, an)
            ga = gpu_energy_per_token(chip.kind, mc, L, T, gpu, precision=spec.workload.gpu_precision, phase=ph,
                                      batch=spec.workload.batch)
            gw = gpu_energy_per_token(chip.kind, mc, L, T, gpu, precision=spec.workload.gpu_precision, phase=ph,
                                      scope="whole", batch=spec.workload.batch)
            whole_chip = ce["energy_per_token_chip_j"] + rest_chip_j(ph, ce["memory"])
            whole_off = ce["ops"]["offloaded"] / (ce["ops"]["offloaded"] + ce["ops"]["chip_digital"] + rest["flops"])
            bl = _baselines(spec, ce, ph)
            phases[ph + ("+analog_scores" if an else "")] = {
                "baselines_j": {k: bl[k]["energy_per_token_j"] for k in ("digital_same_node", "gpu_datapath",
                                                                          "gpu_board")},
                "chip_j": ce["energy_per_token_chip_j"], "gpu_lower_j": ga["lower_j"], "gpu_upper_j": ga["upper_j"],
                "offloaded_fraction": ce["offloaded_fraction"], "amdahl_max_gain": ce["amdahl_max_gain"],
                "array_gain": ce["array_gain"], "digital_only_chip_j": ce["digital_only_chip_j"],
                "whole_model": {"chip_j": whole_chip, "gpu_lower_j": gw["lower_j"], "gpu_upper_j": gw["upper_j"],
                                "offloaded_fraction": whole_off, "amdahl_max_gain": 1 / (1 - whole_off)},
                "largest_term": max(ce["breakdown"], key=ce["breakdown"].get),
                "latency_per_token_s": ce["latency_per_token_s"],
            }
    ph = ecfg.phase
    ce = chip_energy(spec, ph, score_stage(chip.config).on_array)
    ge = gpu_energy_per_token(chip.kind, mc, L, T, gpu, precision=spec.workload.gpu_precision, phase=ph,
                              batch=spec.workload.batch)
    gw = gpu_energy_per_token(chip.kind, mc, L, T, gpu, precision=spec.workload.gpu_precision, phase=ph, scope="whole",
                              batch=spec.workload.batch)
    bound = ecfg.gpu_bound
    g_head = ge[f"{bound}_j"]
    whole_chip = ce["energy_per_token_chip_j"] + rest_chip_j(ph, ce["memory"])
    whole_off = ce["ops"]["offloaded"] / (ce["ops"]["offloaded"] + ce["ops"]["chip_digital"] + rest["flops"])
    area = chip_area(chip)
    chip_j = ce["energy_per_token_chip_j"]
    largest = max(ce["breakdown"], key=ce["breakdown"].get)
    bl = _baselines(spec, ce, ph)
    a, b = bl["digital_same_node"], bl["gpu_datapath"]
    headline = (f"attention only, {ph}{', analog scores' if ce['analog_scores'] else ''}, T = {T}: chip "
                f"{chip_j:.3g} J per token = {a['chip_ratio']:.3g}x the same chip without the array (digital, "
                f"{a['node_nm']:g} nm, {a['precision']}) and {b['chip_ratio']:.3g}x the {gpu} datapath bound "
                f"({b['node_nm']:g} nm, {b['precision']}); against the "
                f"{gpu} {BOUND_NAMES[bound]} {g_head:.3g} J ({spec.workload.gpu_precision}) per token: "
                f"{'chip' if chip_j < g_head else 'GPU'} lower by {max(chip_j, g_head) / min(chip_j, g_head):.3g}x; "
                f"array offloads {ce['offloaded_fraction']:.1%} of the chip's operations (Amdahl bound "
                f"{ce['amdahl_max_gain']:.3g}x, array gain {ce['array_gain']:.3g}x); largest chip term {largest} "
                f"({ce['breakdown'][largest] / chip_j:.0%})")
    return {
        **ce,
        "energy_per_token_gpu_j": g_head,
        "gpu_energy_bounds_j": {"lower": ge["lower_j"], "upper": ge["upper_j"]},
        "gpu_bound": bound, "gpu": ge,
        "whole_model": {"chip_j": whole_chip, "gpu_j": gw[f"{bound}_j"],
                        "gpu_bounds_j": {"lower": gw["lower_j"], "upper": gw["upper_j"]},
                        "offloaded_fraction": whole_off, "amdahl_max_gain": 1 / (1 - whole_off),
                        "sources": {"chip_j": f"attention chip + embedding, feed-forward and head on the digital "
                                              f"periphery ({spec.periphery.digital_precision}, {node.node_nm:g} nm) "
                                              f"with weight "
                                              f"SRAM reads",
                                    "gpu_j": gw["sources"][f"{bound}_j"]}},
        "gain_vs_gpu": g_head / chip_j,
        "periphery_gain": g_head / ce["digital_only_chip_j"],
        "phases": phases,
        "area_mm2": area["area_mm2"], "area": area,
        "infeasible_reason": infeasible_reason(chip, area),
        "leakage_j": ce["breakdown"]["leakage_j"],
        "schedule": None if chip.schedule is None else chip.schedule.to_json(),
        "attention_shape": {"n_layers": L, "n_heads": spec.shape.n_heads, "head_dim": spec.shape.head_dim, "T": T},
        "headline": headline,
        "baselines": bl,
    }
