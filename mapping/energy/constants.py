"""Non-device energy and area figures of the energy model, each with its unit and source (or "assumed").

Device numbers (oscillator power, coupler dissipation, coupler-register write energy) come from
:mod:`hw_models`; this module holds the figures of everything around the oscillators: the digital periphery,
SRAM, ADCs, DACs, clock wires, GPUs and memory, and the layout areas of :mod:`mapping.energy.area`.

References
----------
[Hor14] M. Horowitz, "Computing's energy problem (and what we can do about it)", ISSCC 2014, p. 10: energies at
        45 nm, 0.9 V: integer add 8/16/32 bit 0.03/0.05/0.1 pJ, integer multiply 8/32 bit 0.2/3.1 pJ, fp16 add
        0.4 pJ, fp16 multiply 1.1 pJ, fp32 add 0.9 pJ, fp32 multiply 3.7 pJ; SRAM read of 64 bits from an
        8 kB / 32 kB / 1 MB array 10 / 20 / 100 pJ.
[OCo17] M. O'Connor et al., "Fine-grained DRAM: energy-efficient DRAM for extreme bandwidth systems",
        MICRO 2017: HBM2 access about 3.9 pJ/bit.
[Chen16] Y.-H. Chen, J. Emer, V. Sze, "Eyeriss: a spatial architecture for energy-efficient dataflow for
        convolutional neural networks", ISCA 2016: at 65 nm, relative to a 16-bit MAC: register file 1x,
        inter-PE 2x, global buffer (100-300 kB) 6x, DRAM 200x (cross-check only).
[Mur] B. Murmann, "ADC Performance Survey 1997-2024" (Walden figure of merit of published ADCs).
[HoMH01] R. Ho, K. Mai, M. Horowitz, "The future of wires", Proc. IEEE 89, 490 (2001): on-chip wire
        capacitance about 0.2 fF/um, nearly independent of the node.
[NV-A100], [NV-H100], [NV-H200] NVIDIA A100 / H100 / H200 datasheets and the H100 architecture whitepaper
        (dense peaks, without sparsity; board power; HBM bandwidth; L2 size).
[Lo23] H. Lo et al., Nature Electronics 6, 771 (2023): 65 nm, 1.2 V; the coupling weight is set by the number
        of activated transmission gates in the coupling cell.
[Moy22] W. Moy et al., Nature Electronics 5, 310 (2022): 1,968 coupled rings, 65 nm, 42 mW.
[Ahm21] I. Ahmed et al., IEEE JSSC 56, 2870 (2021): 560 coupled rings, 65 nm.
[Tor17] J. Torrejon et al., Nature 547, 428 (2017): vortex spin-torque oscillators (pillars of a few hundred nm).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hw_models.energy import E_BIT_WRITE_J
from hw_models.technology import Figure

__all__ = ["Figure", "COUPLER_WRITE_J_PER_BIT", "STNO_COUPLER_W", "SRAM_SOURCE", "BYTES", "HOROWITZ_45NM", "PRECISIONS", "GPU_PRECISIONS", "GPUSpec", "GPUS", "scale_energy",
           "mac_energy_j", "op_energy_j", "sram_j_per_bit", "HBM_J_PER_BIT", "PERIPHERY_NODE_NM", "PERIPHERY_VDD_V",
           "ADC_FOM_J_PER_STEP", "C_UNIT_SWITCH_F", "R_DAC_DRIVER_OHM", "C_WIRE_F_PER_M", "CLOCK_TREE_FACTOR",
           "C_CLOCK_SINK_F", "C_DETECTOR_F",
           "ADC_SHARE", "ADC_RATE_HZ", "AREA"]


# -- digital arithmetic ---------------------------------------------------------------------------------------
#: [Hor14] 45 nm, 0.9 V, J per operation. int16 multiply is not in the table: interpolated as b^2 between the
#: 8- and 32-bit multipliers (array-multiplier energy grows as the bit count squared; 0.2 * 4 = 0.8 pJ, and
#: 3.1 / 4 = 0.78 pJ agree), labelled as such.
HOROWITZ_45NM = {
    "int8": {"add": 0.03e-12, "mul": 0.2e-12},
    "int16": {"add": 0.05e-12, "mul": 0.8e-12},
    "fp16": {"add": 0.4e-12, "mul": 1.1e-12},
    "fp32": {"add": 0.9e-12, "mul": 3.7e-12},
}
HOROWITZ_NODE_NM, HOROWITZ_VDD_V = 45.0, 0.9
PRECISIONS = tuple(HOROWITZ_45NM)
BYTES = {"int8": 1, "int16": 2, "fp16": 2, "bf16": 2, "fp32": 4}

PERIPHERY_NODE_NM = Figure(65.0, "nm", "the ring chips' node [Lo23, Moy22, Ahm21]")
PERIPHERY_VDD_V = Figure(1.2, "V", "[Lo23] 65 nm, 1.2 V supply")


def scale_energy(e_j: float, from_nm: float, from_v: float, to_nm: float, to_v: float) -> float:
    """First-order node scaling of a switching energy, E ∝ C V² with C ∝ feature size (assumed).

    Parameters
    ----------
    e_j : float
        Energy at (from_nm, from_v) [J].
    from_nm, to_nm : float
        Feature sizes [nm], > 0.
    from_v, to_v : float
        Supply voltages [V], > 0.

    Notes
    -----
    Valid to first order between ~20 nm and ~180 nm planar nodes; below ~20 nm wire capacitance stops scaling
    with the node [HoMH01], so the rule under-estimates energies there.
    """
    for n, v in (("from_nm", from_nm), ("from_v", from_v), ("to_nm", to_nm), ("to_v", to_v)):
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"{n} must be finite and > 0, got {v!r}")
    return e_j * (to_nm / from_nm) * (to_v / from_v) ** 2


def mac_energy_j(precision: str, node_nm: float = PERIPHERY_NODE_NM.value,
                 vdd_v: float = PERIPHERY_VDD_V.value) -> float:
    """Energy of one multiply-accumulate [J] at a precision, scaled from [Hor14] to (node_nm, vdd_v)."""
    if precision not in HOROWITZ_45NM:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    t = HOROWITZ_45NM[precision]
    return scale_energy(t["mul"] + t["add"], HOROWITZ_NODE_NM, HOROWITZ_VDD_V, node_nm, vdd_v)


def op_energy_j(precision: str, node_nm: float = PERIPHERY_NODE_NM.value,
                vdd_v: float = PERIPHERY_VDD_V.value) -> float:
    """Energy of one counted operation [J]: half a MAC (a MAC is two operations). Transcendentals (cos, sin,
    exp, sqrt) are counted as one operation each, i.e. assumed to be evaluated by a table lookup plus one
    multiply-add (assumed)."""
    return 0.5 * mac_energy_j(precision, node_nm, vdd_v)


#: [Hor14] SRAM read, J per bit, by array size (bytes), at 45 nm / 0.9 V.
SRAM_45NM_J_PER_BIT = ((8 * 1024, 10e-12 / 64), (32 * 1024, 20e-12 / 64), (1024 * 1024, 100e-12 / 64))


def sram_j_per_bit(size_bytes: float, node_nm: float = PERIPHERY_NODE_NM.value,
                   vdd_v: float = PERIPHERY_VDD_V.value) -> float:
    """SRAM access energy [J/bit] of an array holding ``size_bytes``: [Hor14]'s 8 kB / 32 kB / 1 MB figures,
    interpolated log-log in the size (clamped outside 8 kB..1 MB: beyond 1 MB the array is banked, assumed),
    scaled to (node_nm, vdd_v) by :func:`scale_energy`. Writes are charged as reads (assumed)."""
    if not (math.isfinite(size_bytes) and size_bytes >= 0):
        raise ValueError(f"size_bytes must be finite and >= 0, got {size_bytes!r}")
    pts = SRAM_45NM_J_PER_BIT
    s = min(max(size_bytes, pts[0][0]), pts[-1][0])
    for (s0, e0), (s1, e1) in zip(pts, pts[1:]):
        if s <= s1:
            w = math.log(s / s0) / math.log(s1 / s0)
            e = math.exp((1 - w) * math.log(e0) + w * math.log(e1))
            break
    return scale_energy(e, HOROWITZ_NODE_NM, HOROWITZ_VDD_V, node_nm, vdd_v)


SRAM_SOURCE = "[Hor14] 45 nm SRAM read 10/20/100 pJ per 64 bit (8 kB/32 kB/1 MB), log-log in size, scaled C*V^2"

# -- memory ---------------------------------------------------------------------------------------------------
HBM_J_PER_BIT = Figure(3.9e-12, "J/bit", "[OCo17] HBM2 about 3.9 pJ/bit; used for HBM2e/HBM3/HBM3e too "
                       "(assumed: no per-bit figure of the newer generations is cited here)")

# -- analog/mixed-signal periphery ------------------------------------------------------------------------------
COUPLER_WRITE_J_PER_BIT = Figure(E_BIT_WRITE_J, "J/bit", "assumed: 10 fJ per coupler-register latch write at 65 nm "
                                 "(a few fF of latch and local wiring at 1.2 V; the same figure as "
                                 "hw_models.energy.E_BIT_WRITE_J); the A values' trip from SRAM is in sram_j")
ADC_FOM_J_PER_STEP = Figure(5e-15, "J/conversion-step", "assumed: 5 fJ/step, a representative SAR ADC Walden "
                            "FoM at 65 nm [Mur]; one conversion costs FoM * 2^bits")
ADC_SHARE = Figure(64, "channels per ADC", "assumed: each phase-detector channel samples onto a hold capacitor; "
                   "one SAR ADC converts 64 channels in turn")
ADC_RATE_HZ = Figure(100e6, "conversions/s", "assumed: 100 MS/s SAR ADC at 65 nm [Mur]")
C_UNIT_SWITCH_F = Figure(1e-15, "F", "assumed: gate capacitance of one minimum 65 nm transmission gate (n + p), "
                         "the unit of a binary-weighted coupler or gain DAC (weight by activated gates [Lo23])")
R_DAC_DRIVER_OHM = Figure(2e3, "ohm", "assumed: output resistance of the minimum inverter driving a DAC's gates")
C_WIRE_F_PER_M = Figure(0.2e-15 / 1e-6, "F/m", "[HoMH01] about 0.2 fF/um on-chip wire capacitance")
CLOCK_TREE_FACTOR = Figure(2.0, "1", "assumed: H-tree wire length per sink = 2 x the sink pitch")
C_CLOCK_SINK_F = Figure(2e-15, "F", "assumed: clock input load of one injection switch or phase detector")
C_DETECTOR_F = Figure(2e-15, "F", "assumed: switched capacitance of one XOR/mixer phase detector, toggling "
                      "twice per cycle, and its RC low-pass")

# -- layout areas (mapping.energy.area) ------------------------------------------------------------------------------
AREA = {
    "inverter_um2": Figure(1.5, "um^2", "assumed: a minimum 65 nm inverter with its wiring (order of a 65 nm "
                           "standard-cell INVX1)"),
    "mos_cap_f_per_um2": Figure(10e-15, "F/um^2", "assumed: thin-oxide MOS capacitor density at 65 nm"),
    "sram_cell_um2": Figure(0.52, "um^2", "assumed: 65 nm 6T SRAM/latch cell, about 0.5 um^2"),
    "unit_switch_um2": Figure(1.0, "um^2", "assumed: one unit transmission gate of a binary-weighted DAC"),
    "wiring_overhead": Figure(1.5, "1", "assumed: routing overhead on the cell sum of the coupler array"),
    "detector_um2": Figure(15.0, "um^2", "assumed: XOR/mixer, 100 fF hold/low-pass capacitor and its switch"),
    "adc_um2": Figure(3000.0, "um^2", "assumed: 10-bit SAR ADC at 65 nm, about 0.003 mm^2 [Mur, order]"),
    "stno_pillar_um2": Figure(0.11, "um^2", "assumed: 375 nm diameter vortex MTJ pillar (order of [Tor17])"),
    "stno_bias_um2": Figure(20.0, "um^2", "assumed: current source for the mA bias of one STNO (W ~ 12 um at "
                            "65 nm) with its interconnect"),
}


# -- GPUs ------------------------------------------------------------------------------------------------------
GPU_PRECISIONS = ("bf16", "fp32", "int8")


@dataclass(frozen=True, kw_only=True)
class GPUSpec:
    """A GPU's board power, dense peaks per precision, memory and source.

    Attributes
    ----------
    name : str
    tdp_w : float
        Board power [W].
    peak_flops : float
        Dense BF16 tensor peak [FLOP/s] (kept for callers of the old interface).
    peaks : dict
        Dense peak [op/s] per precision in :data:`GPU_PRECISIONS` (fp32: non-tensor FP32).
    hbm_bytes_per_s : float
        HBM bandwidth [B/s].
    l2_bytes : float
        L2 cache size [B] (the on-chip SRAM a working set can live in).
    node_nm, core_vdd_v : float
        Process node and core voltage (the latter assumed) for the physical SRAM energy.
    source : str
    """

    name: str
    tdp_w: float
    peak_flops: float
    peaks: dict
    hbm_bytes_per_s: float
    l2_bytes: float
    node_nm: float
    core_vdd_v: float
    source: str

    def j_per_op(self, precision: str) -> float:
        """Board energy per operation at full power and peak throughput, TDP / peak [J]."""
        if precision not in self.peaks:
            raise ValueError(f"GPU precision must be one of {', '.join(self.peaks)}, got {precision!r}")
        return self.tdp_w / self.peaks[precision]


GPUS = {
    "A100-SXM": GPUSpec(name="A100-SXM", tdp_w=400.0, peak_flops=312e12,
                        peaks={"bf16": 312e12, "fp32": 19.5e12, "int8": 624e12}, hbm_bytes_per_s=2.039e12,
                        l2_bytes=40e6, node_nm=7.0, core_vdd_v=0.75,
                        source="[NV-A100] 400 W, dense 312 TFLOP/s BF16 / 19.5 TFLOP/s FP32 / 624 TOP/s INT8, "
                               "2.0 TB/s HBM2e, 40 MB L2, TSMC N7 (core 0.75 V assumed)"),
    "H100-SXM": GPUSpec(name="H100-SXM", tdp_w=700.0, peak_flops=989e12,
                        peaks={"bf16": 989e12, "fp32": 67e12, "int8": 1979e12}, hbm_bytes_per_s=3.35e12,
                        l2_bytes=50e6, node_nm=4.0, core_vdd_v=0.75,
                        source="[NV-H100] 700 W, dense 989 TFLOP/s BF16 / 67 TFLOP/s FP32 / 1979 TOP/s INT8, "
                               "3.35 TB/s HBM3, 50 MB L2, TSMC 4N (core 0.75 V assumed)"),
    "H200": GPUSpec(name="H200", tdp_w=700.0, peak_flops=989e12,
                    peaks={"bf16": 989e12, "fp32": 67e12, "int8": 1979e12}, hbm_bytes_per_s=4.8e12,
                    l2_bytes=50e6, node_nm=4.0, core_vdd_v=0.75,
                    source="[NV-H200] 700 W, dense 989 TFLOP/s BF16 / 67 TFLOP/s FP32 / 1979 TOP/s INT8, "
                           "4.8 TB/s HBM3e, 50 MB L2, TSMC 4N (core 0.75 V assumed)"),
}

STNO_COUPLER_W = Figure(10e-6, "W", "assumed: one 65 nm transconductance amplifier per electrical STNO coupling "
                        "(~8 uA from 1.2 V); hw_models has no STNO coupler dissipation")
