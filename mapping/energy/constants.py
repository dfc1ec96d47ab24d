"""Non-device energy and area figures of the energy model, each with its unit and source (or "assumed").

Device numbers (oscillator power, coupler dissipation, coupler-register write energy) come from
:mod:`hw_models`; this module holds the figures of everything around the oscillators: the digital periphery,
SRAM, ADCs, DACs, clock wires, GPUs and memory, and the layout areas of :mod:`mapping.energy.area`.

Every figure assumed "at 65 nm" holds at :data:`REFERENCE_NODE` (65 nm, 1.2 V: the ring chips' node and
supply [Lo23]); a chip at another node carries it there through :mod:`hw_models.technology` and nothing else
(:func:`at_node`): energies by the Stillmaker-Baas energy ratio, capacitances by its effective capacitance
E/V², times by its delay ratio, areas by its area table, SRAM and converters by their own node rules.

References
----------
[Hor14] M. Horowitz, "Computing's energy problem (and what we can do about it)", ISSCC 2014, p. 10: energies at
        45 nm, 0.9 V: integer add 8/16/32 bit 0.03/0.05/0.1 pJ, integer multiply 8/32 bit 0.2/3.1 pJ, fp16 add
        0.4 pJ, fp16 multiply 1.1 pJ, fp32 add 0.9 pJ, fp32 multiply 3.7 pJ; SRAM read of 64 bits from an
        8 kB / 32 kB / 1 MB array 10 / 20 / 100 pJ; DRAM read of 64 bits 1.3-2.6 nJ. The memory rows checked in
        a transcription of the table (github.com/CMU-SAFARI/sasiml, hw/energy_model.py: 10 / 20 / 100 pJ and
        DRAM 1.3-2.6 nJ); the 64-bit access width is the table's memory heading, not printed there. The nine
        arithmetic energies checked in the two reprints [HP19] and [Kim23] below.
[HP19] J. L. Hennessy, D. A. Patterson, "Computer Architecture: A Quantitative Approach", 6th ed. (2019),
        Fig. 1.13 (credited there to Azizi and Dally): [Hor14]'s arithmetic energies beside an area column in
        um^2, 8b add 36, 16b add 67, 32b add 137, 16b FP add 1360, 32b FP add 4184, 8b mult 282, 32b mult 3495,
        16b FP mult 1640, 32b FP mult 7700; its note: the areas are Design Compiler synthesis results at TSMC
        45 nm, the FP units from the DesignWare library (not Horowitz's figures: his paper prints energies).
        Read in a public transcription of the book found by the search tool; the same nine energies and areas
        are Fig. 15 of [Kim23].
[Kim23] S. Kim et al., "Full Stack Optimization of Transformer Inference: a Survey" (2023), Fig. 15 (right):
        the same 45 nm energy and area table, citing Horowitz.
[OCo17] M. O'Connor et al., "Fine-grained DRAM: energy-efficient DRAM for extreme bandwidth systems",
        MICRO 2017: HBM2 3.9 pJ/bit (the label of Fig. 1a; the text of section 1 gives "approximately 3.97
        pJ/bit", mostly on-die data movement and row activation, the I/O a small remainder, Fig. 1b), GDDR5
        14.0 pJ/bit (Fig. 1a). Checked in the paper's text archived at github.com/899ms/ai-infra-book,
        references/text/fgdram-micro17.txt.
[Chen16] Y.-H. Chen, J. Emer, V. Sze, "Eyeriss: a spatial architecture for energy-efficient dataflow for
        convolutional neural networks", ISCA 2016, Table IV: at 65 nm, relative to a 16-bit MAC: register file
        (0.5-1.0 kB) 1x, inter-PE 2x, global buffer (100-500 kB) 6x, DRAM 200x (the register-file cost of the
        operand delivery). Checked in a public course-note transcription of the table found by the search tool.
[Mur] B. Murmann, "ADC Performance Survey 1997-2025" (Walden figure of merit of published ADCs;
        github.com/bmurmann/ADC-survey, xls/ADCsurvey_latest.xlsx, read at commit ddf3c1bbba04).
[HoMH01] R. Ho, K. Mai, M. Horowitz, "The future of wires", Proc. IEEE 89, 490 (2001): on-chip wire
        capacitance about 0.2 fF/um, nearly independent of the node.
[NV-A100], [NV-H100], [NV-H200] NVIDIA A100 / H100 / H200 datasheets and the H100 architecture whitepaper
        (dense peaks, without sparsity; board power; HBM bandwidth; L2 size). Checked in public transcriptions
        the search tool shows: A100 SXM (glennklockwood.com/garden/processors/A100, from the datasheet: 312 / 624
        sparse BF16, 19.5 FP32, 624 INT8 dense, 400 W, 2.039 TB/s for 80 GB HBM2e; L2 40 MB in a spec table,
        thundercompute.com); H100 SXM (archive-lib.hpctech.co.jp, the datasheet's table: 1,979 BF16 and 3,958
        INT8 with sparsity, half without, 67 FP32, 3,350 GB/s, 50 MB L2, 700 W); H200 (the same GH100 die and
        compute, 4.8 TB/s HBM3e, 700 W: lzwjava.github.io and aiminingco.com spec pages). Process and core
        voltage are not datasheet figures (the core voltage is assumed).
[Lo23] H. Lo et al., Nature Electronics 6, 771 (2023): 65 nm, 1.2 V; the coupling weight is set by the number
        of activated transmission gates in the coupling cell.
[Moy22] W. Moy et al., Nature Electronics 5, 310 (2022): 1,968 coupled rings, 65 nm, 42 mW.
[Ahm21] I. Ahmed et al., IEEE JSSC 56, 2870 (2021): 560 coupled rings, 65 nm.
[Tor17] J. Torrejon et al., Nature 547, 428 (2017): vortex spin-torque oscillators (pillars of a few hundred nm).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hw_models.cacti import sram_macro
from hw_models.energy import E_BIT_WRITE_J
from hw_models.layout import DEVICE_AREA
from hw_models.technology import HOROWITZ_REFERENCE, REFERENCE_NODE, Figure, TechnologyNode

__all__ = ["Figure", "COUPLER_WRITE_J_PER_BIT", "SRAM_SOURCE", "BYTES", "HOROWITZ_45NM",
           "ARITH_45NM_AREA_UM2", "MAC_AREA_SOURCE", "PRECISIONS", "GPU_PRECISIONS", "GPUSpec", "GPUS",
           "REFERENCE_NODE", "at_node",
           "mac_energy_j", "op_energy_j", "OPERAND_DELIVERY", "CONTROL_OVERHEAD", "PERIPHERY_OP_SOURCE",
           "mac_area_um2", "sram_j_per_bit", "HBM_J_PER_BIT", "DDR_J_PER_BIT", "OFFCHIP_MEMORY", "SRAM_MAX_BYTES",
           "PERIPHERY_NODE_NM", "PERIPHERY_VDD_V",
           "ADC_FOM_J_PER_STEP", "C_UNIT_SWITCH_F", "R_DAC_DRIVER_OHM", "C_WIRE_F_PER_M", "CLOCK_TREE_FACTOR",
           "C_CLOCK_SINK_F", "C_DETECTOR_F", "ADC_RATE_HZ", "PERIPHERY_CLOCK_HZ", "ARRAY_ROWS_PER_CLOCK",
           "PERIPHERY_OVERHEAD", "AREA"]


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
PRECISIONS = tuple(HOROWITZ_45NM)
BYTES = {"int8": 1, "int16": 2, "fp16": 2, "bf16": 2, "fp32": 4}
#: [HP19] Fig. 1.13's 45 nm areas [um^2] (add, multiply): Design Compiler synthesis at TSMC 45 nm, FP units from
#: DesignWare, printed beside [Hor14]'s energies (the seven used here checked in [HP19] and [Kim23]). The
#: table has no 16-bit integer multiplier: int16 multiply interpolated as b^2 between the 8- and 32-bit ones
#: (282 * 4 = 1128, 3495 / 4 = 874: their mean, 1001), labelled as such; the 16-bit adder (67) is printed.
ARITH_45NM_AREA_UM2 = {
    "int8": {"add": 36.0, "mul": 282.0},
    "int16": {"add": 67.0, "mul": 1001.0},
    "fp16": {"add": 1360.0, "mul": 1640.0},
    "fp32": {"add": 4184.0, "mul": 7700.0},
}
MAC_AREA_SOURCE = ("[HP19] Fig. 1.13 45 nm adder + multiplier areas (TSMC 45 nm synthesis; int16 multiplier "
                   "interpolated as b^2 between the 8- and 32-bit ones), carried to the node by the Stillmaker-Baas "
                   "area table")

PERIPHERY_NODE_NM = Figure(REFERENCE_NODE.node_nm, "nm", "the ring chips' node [Lo23, Moy22, Ahm21]: every figure "
                                                          "assumed at 65 nm holds here")
PERIPHERY_VDD_V = Figure(REFERENCE_NODE.vdd, "V", "[Lo23] 65 nm, 1.2 V supply")


def at_node(value: float, node: TechnologyNode, how: str) -> float:
    """A figure known at :data:`REFERENCE_NODE` carried to ``node`` by the rule ``how`` of
    :mod:`hw_models.technology`: 'energy', 'capacitance', 'delay' (a time), 'rate' (a frequency: 1/delay) or
    'area'. The one way a figure of this module changes with the node."""
    ref = REFERENCE_NODE
    if how == "energy":
        return node.scale_energy(value, ref)
    if how == "capacitance":
        return node.scale_capacitance(value, ref)
    if how == "delay":
        return node.scale_delay(value, ref)
    if how == "rate":
        return value / node.scale_delay(1.0, ref)
    if how == "area":
        return node.scale_area(value, ref)
    raise ValueError(f"how must be one of energy, capacitance, delay, rate, area; got {how!r}")


def mac_energy_j(precision: str, node: TechnologyNode = REFERENCE_NODE) -> float:
    """Energy of one multiply-accumulate [J] at a precision: [Hor14] at 45 nm, 0.9 V carried to ``node`` by the
    Stillmaker-Baas energy ratio (:meth:`hw_models.technology.TechnologyNode.scale_energy`)."""
    if precision not in HOROWITZ_45NM:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    t = HOROWITZ_45NM[precision]
    return node.scale_energy(t["mul"] + t["add"], HOROWITZ_REFERENCE)


#: Operand delivery per MAC, in bare-MAC energies: the register-file accesses of ZigZag's energy-optimal mapping
#: of kuramoto-tiny's projection layer on the chip's 32 x 32 periphery (benchmarks/zigzag_crosscheck.py: per MAC
#: one weight read, half an input read, an accumulator read and write, and the fills), each access at [Chen16]'s
#: 65 nm "RF 1x" a 16-bit MAC (the accumulator register at 0.22 of it, ZigZag's own output-register ratio).
OPERAND_DELIVERY = Figure(2.6, "MAC energies per MAC",
                          "register-file accesses per MAC of ZigZag's optimal mapping (2.6-3.0 over the projection and "
                          "score layers of kuramoto-tiny and kuramoto-1m) x [Chen16] RF access = 1 MAC")
#: Control of the periphery (sequencer, address generation, the array's clock) over its datapath and operand
#: delivery.
CONTROL_OVERHEAD = Figure(0.1, "1", "assumed: 10 % of the datapath and operand-delivery energy for the sequencer, "
                          "address generators and clock of a fixed-function MAC array (no source at hand)")


def op_energy_j(precision: str, node: TechnologyNode = REFERENCE_NODE) -> float:
    """Energy of one counted operation of the digital periphery [J]: half a MAC (a MAC is two operations) with its
    operand delivery (:data:`OPERAND_DELIVERY`) and control (:data:`CONTROL_OVERHEAD`):
    ½ E_MAC (1 + operand) (1 + control); the bare MAC is 1 / 3.96 of it. Transcendentals (cos, sin, exp, sqrt) are
    counted as one operation each, i.e. assumed to be evaluated by a table lookup plus one multiply-add
    (assumed)."""
    return 0.5 * mac_energy_j(precision, node) * (1 + OPERAND_DELIVERY.value) * (1 + CONTROL_OVERHEAD.value)


PERIPHERY_OP_SOURCE = ("half a MAC of [Hor14] 45 nm, 0.9 V carried to the node by the Stillmaker-Baas energy ratio, "
                       "x (1 + operand delivery 2.6: ZigZag's register-file accesses per MAC at [Chen16]'s cost) x "
                       "(1 + control 0.1, assumed): the bare MAC is 25 % of it")


def mac_area_um2(precision: str, node: TechnologyNode = REFERENCE_NODE) -> float:
    """Area of one multiply-accumulate unit [um^2]: the 45 nm adder + multiplier of :data:`ARITH_45NM_AREA_UM2`
    ([HP19]) carried to ``node`` by the Stillmaker-Baas area table."""
    if precision not in ARITH_45NM_AREA_UM2:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    t = ARITH_45NM_AREA_UM2[precision]
    return node.scale_area(t["mul"] + t["add"], HOROWITZ_REFERENCE)


def sram_j_per_bit(size_bytes: float, node: TechnologyNode = REFERENCE_NODE) -> float:
    """SRAM access energy [J/bit] of an array holding ``size_bytes`` at ``node``: CACTI 7's read of one 64-bit
    word (:func:`mapping.energy.sram.sram_read_j_per_bit`); writes are charged as reads. The former [Hor14]-scaled
    figure is :meth:`hw_models.technology.TechnologyNode.sram_j_per_bit` (the cross-check)."""
    return sram_macro(max(float(size_bytes), 1.0), node, word_bits=64).read_j_per_bit


SRAM_SOURCE = ("CACTI 7 (hw_models.cacti.sram_macro, the zigzag-dse wheel's binary): the read of one 64-bit word from "
               "a macro of the buffer's size at the chip's node, flavour and supply (outside CACTI's 22-90 nm, its "
               "nearest node's figure carried by the Stillmaker-Baas energy ratio); writes charged as reads")

# -- memory ---------------------------------------------------------------------------------------------------
HBM_J_PER_BIT = Figure(3.9e-12, "J/bit", "[OCo17] HBM2 3.9 pJ/bit (Fig. 1a; section 1: about 3.97), checked in "
                       "the paper's archived text; used for HBM2e/HBM3/HBM3e too (assumed: no per-bit figure of the "
                       "newer generations is cited here)")

DDR_J_PER_BIT = Figure(1.3e-9 / 64, "J/bit", "[Hor14] off-chip DRAM 1.3-2.6 nJ per access of the table's 64-bit "
                       "width, the lower end: 20.3 pJ/bit (the range checked in a transcription of the same table, "
                       "github.com/CMU-SAFARI/sasiml hw/energy_model.py, beside its 8 kB / 32 kB / 1 MB SRAM rows "
                       "10 / 20 / 100 pJ; the per-bit split over 64 bits is this module's; same order as [OCo17] "
                       "Fig. 1a's GDDR5 14.0 pJ/bit)")
OFFCHIP_MEMORY = {"hbm": HBM_J_PER_BIT, "ddr": DDR_J_PER_BIT}
"""``[energy] offchip`` -> energy per bit of the chip's off-chip memory (reads and writes alike; no background or
refresh power, no interface latency)."""
SRAM_MAX_BYTES = Figure(4 * 2**20, "B", "assumed: 4 MiB of on-die SRAM (27 mm^2 of CACTI 7 macros at 65 nm LP, about "
                        "half the 50 mm^2 die a research team tapes out); the bundled models' default chips fit "
                        "(kuramoto-tiny 0.87 MB, kuramoto-1m 3.7 MB)")

# -- analog/mixed-signal periphery ------------------------------------------------------------------------------
COUPLER_WRITE_J_PER_BIT = Figure(E_BIT_WRITE_J, "J/bit", "assumed: 10 fJ per coupler-register latch write at 65 nm "
                                 "(a few fF of latch and local wiring at 1.2 V; the same figure as "
                                 "hw_models.energy.E_BIT_WRITE_J); the A values' trip from SRAM is in sram_j")
ADC_FOM_J_PER_STEP = Figure(REFERENCE_NODE.adc_fom().value, "J/conversion-step",
                            "hw_models.technology adc_fom at 65 nm (assumed, optimistic: 5 fJ/step; the [Mur] "
                            "survey's 65 nm SARs at 20-500 MS/s, 50-65 dB span 6.3-88 fJ/step, median 30); one "
                            "conversion costs FoM * 2^bits")
ADC_RATE_HZ = Figure(100e6, "conversions/s", "assumed: 100 MS/s SAR ADC at 65 nm (the [Mur] survey's 65 nm SARs at "
                     "50-65 dB SNDR run 22-330 MS/s); the channels sharing one ADC ([array] channels_per_adc) are "
                     "converted in turn")
PERIPHERY_CLOCK_HZ = Figure(500e6, "Hz", "assumed: clock of the 65 nm digital periphery and of the coupler-register "
                            "writes (a modest synthesised 65 nm clock)")
ARRAY_ROWS_PER_CLOCK = Figure(1, "rows/cycle", "assumed: a tile's coupler registers are written like an SRAM, one "
                              "row of T couplers per periphery clock cycle, every tile of a round in parallel")
PERIPHERY_OVERHEAD = Figure(2.0, "1", "assumed: the digital periphery's area over its MAC units' (softmax lookup "
                            "tables, registers, control)")
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
    **DEVICE_AREA,  # the device cells (inverter, MOS cap, unit gate, wiring, detector, STNO): hw_models.layout
    "sram_cell_um2": Figure(0.52, "um^2", "assumed: 65 nm 6T SRAM/latch cell, about 0.5 um^2"),
    "adc_um2": Figure(3000.0, "um^2", "assumed: 10-bit SAR ADC at 65 nm, about 0.003 mm^2 [Mur, order]"),
    "mixer_um2": Figure(4.0, "um^2", "assumed: one score mixer at 65 nm, a Gilbert-type cell of four minimum "
                        "switching transistors over a tail transistor with its wiring (about three inverters' "
                        "area); its output shares the score channel's summing node, filter and hold capacitor, "
                        "which are charged once per channel as one detector cell"),
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

    def sram_j_per_bit(self, size_bytes: float) -> tuple[float, str]:
        """(J/bit, how) of the GPU's on-chip SRAM for a working set of ``size_bytes``: CACTI 7, as the chip's
        SRAM (:func:`sram_j_per_bit`), at the GPU's node and core supply (HP). Below CACTI's 22 nm and the 7 nm of
        the Stillmaker-Baas fits (4 nm) the figure is carried from CACTI's 22 nm by the fits' log-log
        extrapolation, stated in ``how`` here rather than warned on every report."""
        from hw_models.technology import stated_extrapolation

        # stated, not warned: catch_warnings would reset the once-per-location registry, so every report would
        # re-issue the chip's own extrapolation warnings
        with stated_extrapolation() as extra:
            e = sram_j_per_bit(size_bytes, TechnologyNode(node_nm=self.node_nm, flavor="HP", vdd_v=self.core_vdd_v))
        how = (f"CACTI 7 at {self.node_nm:g} nm HP, {self.core_vdd_v:g} V"
               + (": carried from CACTI's 22 nm by the Stillmaker-Baas energy ratio, extrapolated below the fits' "
                  "7 nm (log-log), optimistic, so the bound stays low" if extra else ""))
        return e, how

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

