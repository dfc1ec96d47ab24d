"""Baselines on the same terms as the chip (DESIGN §5.5): what the chip's energy per token is compared with, each
with its node, supply, precision and basis.

- ``digital_same_node``: the same chip without the oscillator array: the attention computed by its digital
  periphery on the same die, node, supply and precision, with its own SRAM traffic and the leakage of its own die
  (SRAM + periphery) over its own time (:func:`mapping.energy.chip_terms.chip_energy`'s ``digital_only_chip_j``).
  The answer to "do the oscillators help?".
- ``gpu_datapath``: the GPU's datapath bound: the same operations at the GPU's node (its process, flavour HP,
  core supply) charged the MAC energy of the Horowitz table carried there by the same node scaling the chip uses
  (:func:`mapping.energy.constants.op_energy_j`), at the chip's precision, plus the compulsory bytes at that
  precision at the GPU's on-chip SRAM energy (CACTI 7, as the chip's, carried to its node) when the working set fits its
  L2, else HBM ([OCo17]); each operation with the same operand delivery and control as the chip's periphery
  (op_energy_j). No board and no idle power: a bound no GPU reaches.
- ``gpu_board``: the GPU's board figure: FLOPs × TDP / (peak × utilisation) at the GPU precision nearest the
  chip's (int8 -> int8, int16/fp16 -> bf16, the 2-byte tensor rate; fp32 -> fp32) plus the same compulsory bytes
  at their physical energy; at the stated utilisation 1 it is the package's historical "lower bound" of the GPU
  (:func:`mapping.energy.gpu.gpu_energy_per_token` ``lower_j``). With a CUDA GPU and NVML present,
  ``measured_j`` carries the measured energy per token (:func:`mapping.energy.gpu.measure_gpu_energy`).

Each baseline is a dict with ``energy_per_token_j``, ``node_nm``, ``supply_v``, ``precision``, ``basis`` (one
line) and ``chip_ratio`` (chip / baseline: above 1 the baseline spends less).
"""

from __future__ import annotations

from hw_models.technology import TechnologyNode, stated_extrapolation

from . import constants as ec
from .constants import GPUS
from .gpu import gpu_energy_per_token

__all__ = ["BASELINES", "GPU_BOARD_UTILISATION", "board_precision", "gpu_datapath_j", "baselines",
           "baseline_columns"]

BASELINES = ("digital_same_node", "gpu_datapath", "gpu_board")
"""The baselines' keys, in the order reports list them."""
GPU_BOARD_UTILISATION = ec.Figure(1.0, "1", "stated: the board at its dense peak for the FLOPs (100 % "
                                            "utilisation; a real kernel at batch 1 reaches far less, so this is "
                                            "a floor of the board's energy, not an estimate)")
_BOARD_PRECISION = {"int8": "int8", "int16": "bf16", "fp16": "bf16", "fp32": "fp32"}


def board_precision(precision: str) -> str:
    """The GPU precision whose peak the board figure uses for a chip at ``precision`` (int16 and fp16: the
    2-byte tensor rate, bf16; a GPU has no int16 tensor rate)."""
    if precision not in _BOARD_PRECISION:
        raise ValueError(f"precision must be one of {', '.join(_BOARD_PRECISION)}, got {precision!r}")
    return _BOARD_PRECISION[precision]


def gpu_datapath_j(model_kind: str, mc: dict, n_layers: int, T: int, gpu: str, *, precision: str, phase: str,
                   batch: int = 1) -> dict:
    """The GPU's datapath bound per token [J] (see the module notes) with its parts.

    Returns
    -------
    dict with ``energy_per_token_j``, ``ops_j`` (operations × ½ MAC at the GPU's node), ``bytes_j``,
    ``j_per_op``, ``memory`` ('sram' or 'hbm'), ``node_nm``, ``supply_v``, ``precision``, ``basis``.
    """
    if gpu not in GPUS:
        raise ValueError(f"unknown GPU {gpu!r}; valid: {', '.join(GPUS)}")
    g = GPUS[gpu]
    # the bytes and the working set at the chip's precision: the GPU model counts them at a GPU precision of
    # the same width (int8: 1 byte, int16/fp16: 2, fp32: 4)
    ref = gpu_energy_per_token(model_kind, mc, n_layers, T, gpu, precision=board_precision(precision),
                               phase=phase, batch=batch)
    with stated_extrapolation() as extra:  # 4 nm: below the Stillmaker-Baas fits, stated in the basis
        e_op = ec.op_energy_j(precision, TechnologyNode(node_nm=g.node_nm, flavor="HP", vdd_v=g.core_vdd_v))
    e_sram, how = g.sram_j_per_bit(ref["working_set_bytes"])
    e_byte = 8 * e_sram if ref["memory"] == "sram" else 8 * ec.HBM_J_PER_BIT.value
    ops_j = ref["flops_per_token"] * e_op
    bytes_j = ref["bytes_per_token"] * e_byte
    basis = (f"{ref['flops_per_token']:.4g} ops x {e_op:.3g} J (half a {precision} MAC of [Hor14] 45 nm, 0.9 V carried "
             f"to {g.node_nm:g} nm HP, {g.core_vdd_v:g} V by the Stillmaker-Baas energy ratio"
             + (", extrapolated below the fits' 7 nm" if extra else "")
             + f"; x {(1 + ec.OPERAND_DELIVERY.value) * (1 + ec.CONTROL_OVERHEAD.value):.3g} for its operand delivery "
               f"and control, as the chip's periphery) + {ref['bytes_per_token']:.4g} "
             f"compulsory B x {e_byte:.3g} J/B ("
             + (f"on-chip SRAM {how}" if ref["memory"] == "sram" else ec.HBM_J_PER_BIT.source) + ")")
    return {"energy_per_token_j": ops_j + bytes_j, "ops_j": ops_j, "bytes_j": bytes_j, "j_per_op": e_op,
            "memory": ref["memory"], "node_nm": g.node_nm, "supply_v": g.core_vdd_v, "precision": precision,
            "basis": basis}


def baselines(spec, chip_result: dict, phase: str, *, measured: dict | None = None) -> dict:
    """The three baselines of a chip (see the module notes) for its energy result in ``phase``.

    Parameters
    ----------
    spec : ChipEnergySpec
        The chip's spec (its model, layers, T, precision, batch, GPU).
    chip_result : dict
        :func:`mapping.energy.chip_terms.chip_energy` of ``spec`` in ``phase`` (``energy_per_token_chip_j``,
        ``digital_only_chip_j``, ``digital_only``, ``node``).
    phase : {'prefill', 'decode'}
    measured : dict, optional
        :func:`mapping.energy.gpu.measure_gpu_energy`'s result (NVML), or None.

    Returns
    -------
    dict: ``digital_same_node``, ``gpu_datapath``, ``gpu_board`` (each ``energy_per_token_j``, ``node_nm``,
    ``supply_v``, ``precision``, ``basis``, ``chip_ratio``), ``chip_j``, ``phase``, ``T``, ``batch``.
    """
    chip_j = chip_result["energy_per_token_chip_j"]
    node = chip_result["node"]
    do = chip_result["digital_only"]
    p, T, B = spec.periphery.digital_precision, spec.shape.T, spec.workload.batch
    digital = {
        "energy_per_token_j": chip_result["digital_only_chip_j"], "node_nm": node["node_nm"],
        "supply_v": node["vdd_v"], "precision": p,
        "basis": (f"the same chip without the array: all attention work on its {spec.periphery.macs} MACs at {p}, "
                  f"{node['node_nm']:g} nm {node['flavor']}, {node['vdd_v']:g} V, its SRAM traffic, and the leakage "
                  f"of its own die ({do['area_mm2']:.3g} mm^2 SRAM + periphery) over its own latency "
                  f"({do['latency_per_token_s'] * 1e9:.4g} ns per token)"),
    }
    sh, gpu = spec.shape, spec.workload.gpu
    dp = gpu_datapath_j(sh.kind, sh.model_config, sh.n_layers, T, gpu, precision=p, phase=phase, batch=B)
    bp = board_precision(p)
    ge = gpu_energy_per_token(sh.kind, sh.model_config, sh.n_layers, T, gpu, precision=bp, phase=phase, batch=B)
    g = GPUS[gpu]
    u = GPU_BOARD_UTILISATION.value
    flop_j = ge["flops_per_token"] * g.j_per_op(bp) / u
    board = {
        "energy_per_token_j": flop_j + (ge["lower_j"] - ge["flop_only_j"]), "node_nm": g.node_nm,
        "supply_v": g.core_vdd_v, "precision": bp, "utilisation": u,
        "basis": (f"{g.name} board: FLOPs x TDP / (peak x utilisation {u:g}) = {g.j_per_op(bp) / u:.3g} J/op at {bp} "
                  f"+ compulsory bytes at their physical energy ({ge['memory']}); {GPU_BOARD_UTILISATION.source}; "
                  f"{g.source}"),
    }
    if measured is not None and "measured_gpu_j_per_token" in measured:
        board["measured_j"] = measured["measured_gpu_j_per_token"]
        board["measured_basis"] = f"{measured['source']}, {measured['device']}"
    out = {"digital_same_node": digital, "gpu_datapath": dp, "gpu_board": board}
    for b in out.values():
        b["chip_ratio"] = chip_j / b["energy_per_token_j"]
    out.update(chip_j=chip_j, phase=phase, T=T, batch=B)
    return out


def baseline_columns(report: dict) -> dict:
    """The table columns of an energy report's baselines (sweep rows, design trials): ``baseline_<key>_j`` [J per
    token] and ``chip_over_<key>`` for each key of :data:`BASELINES`."""
    bl = report["baselines"]
    out = {}
    for k in BASELINES:
        out[f"baseline_{k}_j"] = float(bl[k]["energy_per_token_j"])
        out[f"chip_over_{k}"] = float(bl[k]["chip_ratio"])
    return out
