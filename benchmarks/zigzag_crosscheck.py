"""The digital periphery against ZigZag: kuramoto-tiny's and kuramoto-1m's projection and score layers at 65 and 28 nm.

ZigZag (the ``zigzag-dse`` package: L. Mei et al., IEEE Trans. Computers 70, 1160 (2021)) searches the spatial and
temporal mapping of a layer on an accelerator description and charges every MAC and every memory access at
the given unit costs. The accelerator here is the chip's periphery: ``[array] macs`` MAC units as a 32 × 32 array
(1,024, the default), each with a weight and an input register file and an output register, over one global SRAM
buffer holding the chip's SRAM bytes. Unit costs, all from this package's sources, so that the comparison tests the
*accounting* (what is charged, how often), not the unit figures:

- MAC: :func:`mapping.energy.constants.mac_energy_j` at the node and precision ([Hor14] scaled, bare);
- register files (per PE, 128 weights and 16 inputs): one access = one 16-bit MAC ([Chen16], Eyeriss at 65 nm:
  "RF 1×"); the 2-word output register: 0.22 of that (the ratio of ZigZag's own 2-byte output register to its
  128-byte register file in its ``tpu_like`` example, 0.021 / 0.095 pJ);
- SRAM: CACTI 7 (:func:`hw_models.cacti.sram_macro`, as the chip's SRAM) for a macro of the chip's SRAM bytes,
  2,048 bits per access (32 words of 64 bits in parallel, each at CACTI's 64-bit energy).

The workloads are ZigZag layer descriptions (no ONNX): the projection, ``O[b][k] += I[b][c] * W[k][c]`` with
b = T tokens, k = 3k (the three gates), c = 2k; the scores, ``O[g][b][k] += I[g][b][c] * W[g][k][c]`` with
g = heads, b = T queries, k = T keys, c = 2k/h (full T × T; compared per MAC). Prefill, one sequence.

The tool's figures for the same layer (what :mod:`mapping.energy.chip_terms` charges): MACs × ½ op energy × 2
(:func:`mapping.energy.constants.op_energy_j`: the bare MAC, the operand delivery and the control), plus the SRAM
traffic it attributes to the layer (projection: the weights once per sequence; scores: the stored keys once
per sequence). Latency: MACs / (MACs per cycle × the periphery clock) for the tool; ZigZag's cycles
(``latency_total2``) over the same clock.

    .venv/bin/python benchmarks/zigzag_crosscheck.py          # the Markdown table (about 2 minutes)

References
----------
[Chen16] Y.-H. Chen, J. Emer, V. Sze, ISCA 2016: normalised energy at 65 nm, RF 1×, inter-PE 2×, buffer 6×,
         DRAM 200× a 16-bit MAC.
"""

from __future__ import annotations

import logging
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml  # noqa: E402

from hw_models.cacti import sram_macro  # noqa: E402
from hw_models.technology import chip_node  # noqa: E402
from mapping.energy import constants as ec  # noqa: E402
from mapping.energy.ops import attention_cost  # noqa: E402
from mapping.energy.sram import sram_buffers  # noqa: E402

MODELS = {"kuramoto-tiny": {"k": 64, "n_heads": 4, "n_layers": 4, "seq_len": 128},
          "kuramoto-1m": {"k": 128, "n_heads": 4, "n_layers": 4, "seq_len": 256}}
ROWS, COLS = 32, 32          # 1,024 MACs: ChipConfig().array.macs
PRECISION, BITS = "int16", 16  # ChipConfig().energy.digital_precision
SRAM_BITS_PER_ACCESS = 2048
RF_PER_MAC = 1.0             # [Chen16]: a register-file access costs one 16-bit MAC
OUT_REG_RATIO = 0.021 / 0.095  # ZigZag tpu_like: 2-byte output register / 128-byte register file


def _port(name, kind, bw, alloc):
    return {"name": name, "type": kind, "bandwidth_min": bw, "bandwidth_max": bw, "allocation": alloc}


def accelerator(node, sram_bytes: float) -> dict:
    """ZigZag accelerator description of the chip's periphery (see the module notes); costs in pJ."""
    e_mac = ec.mac_energy_j(PRECISION, node) * 1e12
    e_rf = RF_PER_MAC * e_mac
    e_out = OUT_REG_RATIO * e_rf * 2  # a 32-bit accumulator word
    m = sram_macro(sram_bytes, node)
    words = SRAM_BITS_PER_ACCESS / 64
    rf = {"area": 0, "latency": 1, "served_dimensions": []}
    mems = {
        "rf_W": {**rf, "size": 128 * BITS, "r_cost": e_rf, "w_cost": e_rf, "operands": ["I2"],
                 "ports": [_port("r_port_1", "read", BITS, ["I2, tl"]),
                           _port("w_port_1", "write", BITS, ["I2, fh"])]},
        "rf_I": {**rf, "size": 16 * BITS, "r_cost": e_rf, "w_cost": e_rf, "operands": ["I1"],
                 "ports": [_port("r_port_1", "read", BITS, ["I1, tl"]),
                           _port("w_port_1", "write", BITS, ["I1, fh"])]},
        "rf_O": {**rf, "size": 2 * 2 * BITS, "r_cost": e_out, "w_cost": e_out, "operands": ["O"],
                 "ports": [_port("r_port_1", "read", 2 * BITS, ["O, tl"]),
                           _port("r_port_2", "read", 2 * BITS, ["O, th"]),
                           _port("w_port_1", "write", 2 * BITS, ["O, fh"]),
                           _port("w_port_2", "write", 2 * BITS, ["O, fl"])]},
        "sram": {"size": int(sram_bytes * 8) * 8, "r_cost": m.read_j.value * 1e12 * words,
                 "w_cost": m.write_j.value * 1e12 * words, "area": 0, "latency": 1, "operands": ["I1", "I2", "O"],
                 "ports": [_port("r_port_1", "read", SRAM_BITS_PER_ACCESS, ["I1, tl", "I2, tl", "O, tl", "O, th"]),
                           _port("w_port_1", "write", SRAM_BITS_PER_ACCESS, ["I1, fh", "I2, fh", "O, fh", "O, fl"])],
                 "served_dimensions": ["D1", "D2"]},
    }
    return {"name": "oscsim_periphery", "memories": mems,
            "operational_array": {"unit_energy": e_mac, "unit_area": 1, "dimensions": ["D1", "D2"],
                                  "sizes": [ROWS, COLS]}}


def layers(mc: dict) -> dict:
    """ZigZag layer descriptions of the projection and the scores (one sequence of T tokens)."""
    k, h, T = mc["k"], mc["n_heads"], mc["seq_len"]
    prec = {"I": BITS, "W": BITS, "O": 2 * BITS, "O_final": BITS}
    return {"projection": {"id": 0, "name": "projection", "operator_type": "Gemm",
                           "equation": "O[b][k]+=I[b][c]*W[k][c]",
                           "loop_dims": ["B", "K", "C"], "loop_sizes": [T, 3 * k, 2 * k], "operand_precision": prec},
            "scores": {"id": 0, "name": "scores", "operator_type": "Gemm",
                       "equation": "O[g][b][k]+=I[g][b][c]*W[g][k][c]",
                       "loop_dims": ["G", "B", "K", "C"], "loop_sizes": [h, T, T, 2 * k // h],
                       "operand_precision": prec}}


def zigzag(layer: dict, node, sram_bytes: float) -> dict:
    """ZigZag's energy-optimal mapping of one layer: {'mac', 'rf', 'sram', 'total'} [J] and 'cycles'."""
    from zigzag.api import get_hardware_performance_zigzag

    with tempfile.TemporaryDirectory(prefix="oscsim-zigzag-") as d:
        (Path(d) / "acc.yaml").write_text(yaml.safe_dump(accelerator(node, sram_bytes)))
        (Path(d) / "map.yaml").write_text(yaml.safe_dump([{
            "name": "default", "spatial_mapping": {"D1": [f"K, {ROWS}"], "D2": [f"C, {COLS}"]},
            "memory_operand_links": {"O": "O", "W": "I2", "I": "I1"}}]))
        logging.disable(logging.CRITICAL)
        _, _, cmes = get_hardware_performance_zigzag([layer], str(Path(d) / "acc.yaml"), str(Path(d) / "map.yaml"),
                                                     opt="energy", dump_folder=d, loma_show_progress_bar=False)
        logging.disable(logging.NOTSET)
    cme = cmes[0][0]
    br = cme.mem_energy_breakdown
    rf = sum(float(v[0]) for v in br.values()) * 1e-12
    sram = sum(float(v[1]) for v in br.values()) * 1e-12
    return {"mac": float(cme.mac_energy) * 1e-12, "rf": rf, "sram": sram, "total": float(cme.energy_total) * 1e-12,
            "cycles": float(cme.latency_total2)}


def tool(name: str, mc: dict, node, macs: float) -> dict:
    """What the tool charges for the layer (see the module notes) [J] and its latency in periphery cycles."""
    k, h, T, L = mc["k"], mc["n_heads"], mc["seq_len"], mc["n_layers"]
    wbytes = ec.BYTES[PRECISION]
    e_mac = ec.mac_energy_j(PRECISION, node)
    e_periph = 2 * ec.op_energy_j(PRECISION, node)  # per MAC: bare + operand delivery + control
    if name == "projection":
        cost = attention_cost("kuramoto", mc, T)
        bits = 3 * (2 * k * k + k) * wbytes * 8
        sram = bits * ec.sram_j_per_bit(cost["weights"] * wbytes * L, node)
    else:
        bits = T * 2 * k * wbytes * 8  # the stored keys of the sequence, read once in prefill
        sram = bits * ec.sram_j_per_bit(2 * k * T * wbytes, node)
    return {"mac": macs * e_mac, "operand_control": macs * (e_periph - e_mac), "sram": sram,
            "total": macs * e_periph + sram, "cycles": macs / (ROWS * COLS)}


def main() -> None:
    print("| chip | node | layer | MACs | tool: MAC / operand+control / SRAM [pJ per MAC] | ZigZag: MAC / RF / SRAM "
          "[pJ per MAC] | energy tool / ZigZag | cycles tool / ZigZag |")
    print("|---|---|---|---|---|---|---|---|")
    for model, mc in MODELS.items():
        buf = sram_buffers("kuramoto", "kuramoto", {**mc, "vocab_size": 256, "ffn_hidden": 128}, T=mc["seq_len"],
                           n_layers=mc["n_layers"], n_heads=mc["n_heads"], head_dim=mc["k"] // mc["n_heads"],
                           banks=2, taps=2, coupler_bits=6, readout_bits=10, precision=PRECISION)["total"]
        for nm in (65, 28):
            node = chip_node(nm)
            for name, layer in layers(mc).items():
                macs = 1.0
                for s in layer["loop_sizes"]:
                    macs *= s
                z, t = zigzag(layer, node, buf), tool(name, mc, node, macs)
                pj = 1e12 / macs
                print(f"| {model} | {nm} nm | {name} | {macs:.4g} | {t['mac'] * pj:.3g} / "
                      f"{t['operand_control'] * pj:.3g}"
                      f" / {t['sram'] * pj:.3g} | {z['mac'] * pj:.3g} / {z['rf'] * pj:.3g} / {z['sram'] * pj:.3g} | "
                      f"{t['total'] / z['total']:.2f} | {t['cycles'] / z['cycles']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
