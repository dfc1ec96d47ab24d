"""A measured coupled-oscillator chip against the tool's ring model: Moy et al., Nature Electronics 5, 310 (2022).

The chip: 1,968 coupled ring oscillators in a King's graph, five levels of coupling strength, 42 mW average
power measured for the whole chip, ground state in fewer than 50 oscillation cycles (the paper's abstract, as
the search tool shows it; it gives no oscillation frequency, no stage count and no device sizes). The tool's
prediction for "that design" is its 65 nm ring card at 1.2 V
(:func:`hw_models.presets.cmos_65nm_ring`, the node and supply of the Kim group's chips [Lo23]) with the
resistive coupler preset (:func:`hw_models.presets.cmos_65nm_coupler`), through the circuit and phase models:

- frequency: the card's limit cycle;
- power per oscillator: the card's supply power (circuit model) plus its share of the King's graph couplers
  (8 neighbours, each coupler shared by two rings: 4 per ring) at Δ = π/2 (``hw_models.energy.coupler_power``);
  the measurement is the chip's total over its nodes (couplers, clocking and readout included);
- coupling resolution: the levels a ``coupling.bits`` = b signed coupler DAC gives, 2^b − 1 (the smallest b
  reaching the measured 5 levels);
- settling: two coupled rings (the macromodel's H(Δ)), the cycles for a π/2 phase error to fall to 0.1 rad
  at the linearised relaxation rate 2 H_odd'(0): a lower bound on the settling of a frustrated 1,968-node graph.

    .venv/bin/python benchmarks/measured_chip.py        # the Markdown table of docs/devices.md
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

MEASURED = {
    "nodes": (1968, "[Moy22] abstract"),
    "chip_power_w": (0.042, "[Moy22] abstract: measured average power of the Ising chip"),
    "coupling_levels": (5, "[Moy22] abstract: five levels of coupling strength"),
    "settle_cycles_max": (50, "[Moy22] abstract: fewer than 50 oscillation cycles to the ground state"),
}
KINGS_GRAPH_COUPLERS_PER_NODE = 4  # 8 neighbours, each coupler shared by its two rings
SETTLE_FROM_RAD, SETTLE_TO_RAD = math.pi / 2, 0.1


def predictions() -> dict:
    """The tool's figures for the design (see the module notes)."""
    from hw_models import cmos_65nm_coupler, cmos_65nm_ring, limit_cycle, ring_coupling_function
    from hw_models.energy import coupler_power, ring_power_circuit

    ring, coupler = cmos_65nm_ring(), cmos_65nm_coupler()
    lc = limit_cycle(ring, 512)
    f0 = lc.omega / (2 * math.pi)
    p_ring = ring_power_circuit(ring)
    p_coup = coupler_power(ring, coupler)
    H = ring_coupling_function(ring, coupler)
    d = np.linspace(0.0, 2 * math.pi, 4096, endpoint=False)
    h_odd = 0.5 * (H(d) - H(-d))
    rate = 2.0 * float(np.gradient(h_odd, d)[0])  # dφ/dt = −2 H_odd(φ) about the in-phase lock [1/s]
    cycles = f0 * math.log(SETTLE_FROM_RAD / SETTLE_TO_RAD) / rate
    bits = math.ceil(math.log2(MEASURED["coupling_levels"][0] + 1))
    return {"f0_hz": f0, "p_ring_w": p_ring, "p_coupler_w": p_coup,
            "p_node_w": p_ring + KINGS_GRAPH_COUPLERS_PER_NODE * p_coup,
            "coupling_bits": bits, "coupling_levels": 2**bits - 1, "settle_cycles": cycles,
            "energy_per_cycle_j": (p_ring + KINGS_GRAPH_COUPLERS_PER_NODE * p_coup) / f0}


def measured() -> dict:
    n, p = MEASURED["nodes"][0], MEASURED["chip_power_w"][0]
    return {"p_node_w": p / n, "coupling_levels": MEASURED["coupling_levels"][0],
            "settle_cycles_max": MEASURED["settle_cycles_max"][0]}


def main() -> None:
    t, m = predictions(), measured()
    print("| quantity | measured [Moy22] | tool (65 nm ring card, 1.2 V, resistive coupler) | tool / measured |")
    print("|---|---|---|---|")
    print(f"| oscillation frequency | not in the sources shown | {t['f0_hz'] / 1e9:.2f} GHz | — |")
    print(f"| power per oscillator | ≤ {m['p_node_w'] * 1e6:.1f} µW (42 mW / 1,968, everything included) | "
          f"{t['p_node_w'] * 1e6:.0f} µW (ring {t['p_ring_w'] * 1e6:.0f} + 4 × coupler "
          f"{t['p_coupler_w'] * 1e6:.1f}) | "
          f"{t['p_node_w'] / m['p_node_w']:.1f} |")
    print(f"| coupling resolution | {m['coupling_levels']} levels | coupling.bits = {t['coupling_bits']}: "
          f"{t['coupling_levels']} signed levels | — |")
    print(f"| settling | < {m['settle_cycles_max']} cycles (1,968-node graph) | {t['settle_cycles']:.1f} cycles "
          f"(a coupled pair, π/2 → 0.1 rad) | ≤ {t['settle_cycles'] / m['settle_cycles_max']:.2f} |")
    print(f"\nenergy per oscillator cycle (tool): {t['energy_per_cycle_j'] * 1e15:.0f} fJ; at that energy the "
          f"measured power per node implies {m['p_node_w'] / t['energy_per_cycle_j'] / 1e6:.0f} MHz")


if __name__ == "__main__":
    main()
