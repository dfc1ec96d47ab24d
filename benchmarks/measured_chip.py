"""A measured coupled-oscillator chip against the tool: Moy et al., Nature Electronics 5, 310 (2022) [Moy22].

The chip: 1,968 coupled ring oscillators in a King's graph (8 neighbours), five levels of coupling strength,
0.042 W average measured for the whole chip, the ground state in fewer than 50 oscillation cycles ([Moy22]
abstract). The sources the search tool shows print no oscillation frequency, stage count, supply, device
sizes or coupler circuit of this chip (:data:`SOURCES` lists what each one prints and lacks). Its frequency
is implied, not printed: a later paper quotes the chip as solving "as fast as 50 ns" at 42 mW [CE24], and
< 50 cycles in 50 ns is about 1 GHz (:data:`MEASURED` ``f_implied_hz``; treat it as ±2×).

The tool's model of that design (everything sized from a source or said "assumed"):

- the ring: the 65 nm level-1 card (:func:`hw_models.presets.cmos_65nm_ring`) at 1.2 V (the group's chips
  [Lo23]) with 7 stages (the same group's ring: six inverters and a NAND enable [Ahm21], as transcribed by
  [cop25]) and a **minimum-size stage load** from the tool's own figures (:func:`stage_load_f`): the next
  stage's gates (MOS-capacitor density × gate area, :mod:`hw_models.layout`), the stage's own drains (assumed
  equal to the gates) and 5 µm of local wire (0.2 fF/µm [HoMH01]; the length assumed);
- the couplers: the chip's are not in the sources ([Ahm21]'s are back-to-back inverters, which the tool does
  not model). The tool's resistive coupler stands in, 20 kΩ per level (its preset): a positive weight J > 0 a
  resistor R/J between node 0 of both rings (in phase); J < 0 two resistors 2R/|J| from node 0 of each ring
  to node 1 of the other (node 1 lags by π + π/7, so the pair pulls to anti-phase and the two offsets cancel);
- settling: the circuit model (:func:`hw_models.ring_sim.simulate_ring_networks`) of 4 × 4 (and 8 × 8)
  King's-graph instances with weights drawn from the five levels {−2, −1, 0, 1, 2} (assumed signed: the
  abstract gives only their number), every ring enabled at the same phase and the rings' thermal noise breaking
  the symmetry; the cycles until the phases lock (no ring moves by more than 0.2 rad over any later 10 cycles),
  the cycles until the binarised phases (spin = sign cos(φ_i − φ_0)) keep their final state, how many rings
  end near 0 or π, and the final spins' Ising energy against the brute-force ground state;
- power per oscillator: the ring's supply power (circuit limit cycle) plus its share of a King's graph's
  couplers (4 per node: 8 neighbours, each coupler shared), each at the mean dissipation ⟨(V_a − V_b)²⟩/R of the
  settled simulation's couplers; [Moy22]'s figure is the whole chip over its nodes (readout and clocking in);
- coupling resolution: the tool's ``coupling.bits`` = b gives 2^b − 1 non-zero magnitudes (and zero), the sign
  from the coupler's tap: five signed levels {0, ±1, ±2} need b = 2.

    .venv/bin/python benchmarks/measured_chip.py        # the Markdown table of docs/devices.md (about 10 s)

References
----------
[Moy22] W. Moy et al., Nature Electronics 5, 310 (2022): its abstract and figure titles as the nature.com page
        shows them through x-mol.com/paperRedirect/1521212506882023424.
[CE24]  Communications Engineering (2024), link.springer.com/article/10.1038/s44172-024-00261-w,
        introduction (its reference 13, the 1,968-node chip).
[Ahm21] I. Ahmed, P.-W. Chiu, W. Moy, C. H. Kim, IEEE JSSC 56, 2870 (2021).
[cop25] github.com/darshveer/cop_oscillator, README "Design Specifications" (a course project's transcription
        of [Ahm21]: 560 rings, 28 × 20 hexagonal array, 6 neighbours, 6 inverters + 1 NAND, back-to-back
        inverter coupling, 65 nm).
[Lo23]  H. Lo et al., Nature Electronics 6, 771 (2023): 65 nm, 1.2 V, 48 spins all-to-all, weights −14…+14.
[HoMH01] R. Ho, K. Mai, M. Horowitz, Proc. IEEE 89, 490 (2001): about 0.2 fF/µm local wire.
[SB17]  A. Stillmaker, B. Baas, Integration 58, 74 (2017): the 65 nm FO4 delay fit (hw_models.technology).
"""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

SOURCES = {
    "Moy22": ("x-mol.com/paperRedirect/1521212506882023424 (the nature.com abstract and figure titles)",
              "1,968 nodes, King's graph, 5 coupling levels, up to 95 % accuracy, 0.042 W measured average, "
              "< 50 cycles to the ground state",
              "frequency, stages, supply, device sizes, coupler circuit, power split"),
    "CE24": ("link.springer.com/article/10.1038/s44172-024-00261-w (introduction)",
             "[Moy22] solves 'as fast as 50 ns' at 42 mW for 1,968 nodes", "everything else"),
    "Ahm21": ("github.com/darshveer/cop_oscillator README (a transcription of IEEE JSSC 56, 2870)",
              "560 rings, hexagonal, 6 inverters + 1 NAND, back-to-back-inverter coupling, 65 nm",
              "frequency, power, supply (not in the transcription)"),
    "Lo23": ("the project's reference list (hw_models/presets.py)", "65 nm, 1.2 V, 48 spins, weights -14..+14",
             "frequency, power, settling (not in its abstract)"),
    "COBI25": ("nature.com/articles/s41928-025-01393-3 (abstract); patents.justia.com/patent/20240022251",
               "65 nm, all-to-all, logic-based coupling (tri-state inverters beside a ring stage)",
               "spins, frequency, power, settling (not in the abstract)"),
    "2603.27402": ("bopi-bot.github.io/bopi-research/papers/2603.27402 (summary)",
                   "65 nm, 64 spins all-to-all, 4-bit current DACs (31 levels + sign), mean/median time to "
                   "solution 1.56/0.72 ms, 2.28 nJ per edge-bit", "not an oscillator chip: spins are capacitor "
                   "voltages, which the tool's oscillator models do not describe"),
}
MEASURED = {
    "nodes": (1968, "[Moy22] abstract"),
    "chip_power_w": (0.042, "[Moy22] abstract: measured average power of the Ising chip"),
    "coupling_levels": (5, "[Moy22] abstract: five levels of coupling strength"),
    "settle_cycles_max": (50, "[Moy22] abstract: fewer than 50 oscillation cycles to the ground state"),
    "f_implied_hz": (50 / 50e-9, "[Moy22] < 50 cycles with [CE24]'s 50 ns: an inference, not a printed figure"),
}
N_STAGES = 7  # [Ahm21] via [cop25]: six inverters and a NAND enable
VDD_V = 1.2  # [Lo23]
WIRE_UM = 5.0  # assumed: one stage-to-stage route in a compact ring
KINGS_GRAPH_COUPLERS_PER_NODE = 4  # 8 neighbours, each coupler shared by its two rings
R_UNIT_OHM = 20e3  # the tool's resistive coupler preset, one level
LEVELS = (-2, -1, 0, 1, 2)  # assumed signed
LOCK_WINDOW, LOCK_RAD = 10, 0.2  # locked: no ring's phase moves by more than 0.2 rad over any later 10 cycles


def stage_load_f() -> dict:
    """Minimum-size stage load [F] of the card's inverter (W_n 0.3 / W_p 0.6 µm, L 65 nm) from the tool's figures."""
    from hw_models import cmos_65nm_ring
    from hw_models.layout import cell_um2
    from hw_models.technology import REFERENCE_NODE

    card, node = cmos_65nm_ring(), REFERENCE_NODE
    gate_area_um2 = (card.w_n_m + card.w_p_m) * card.l_n_m * 1e12
    c_gate = cell_um2("mos_cap_f_per_um2", node) * gate_area_um2
    c_wire = node.wire_capacitance().value * WIRE_UM * 1e-6
    return {"gate_f": c_gate, "drain_f": c_gate, "wire_f": c_wire, "total_f": 2 * c_gate + c_wire}


def sized_ring():
    """The card at the chip's design (module notes)."""
    from hw_models import cmos_65nm_ring

    return cmos_65nm_ring(n_stages=N_STAGES, vdd_v=VDD_V, c_load_f=stage_load_f()["total_f"])


def kings_edges(rows: int, cols: int) -> list:
    """Edges (i, j) of a rows × cols King's graph, nodes numbered row-major."""
    out = []
    for r, c in itertools.product(range(rows), range(cols)):
        for dr, dc in ((0, 1), (1, -1), (1, 0), (1, 1)):
            if 0 <= r + dr < rows and 0 <= c + dc < cols:
                out.append((r * cols + c, (r + dr) * cols + c + dc))
    return out


def kings_network(ring, rows: int, cols: int, seed: int):
    """The ring network of one King's-graph instance: (network, edges, weights J (E,), couplings' edge index)."""
    from hw_models.presets import cmos_65nm_coupler
    from hw_models.ring import Coupling, RingNetwork

    edges = kings_edges(rows, cols)
    J = np.random.default_rng(seed).choice(LEVELS, size=len(edges))
    cps, owner = [], []
    for k, ((a, b), j) in enumerate(zip(edges, J)):
        if j > 0:
            cps.append(Coupling(ring_a=a, node_a=0, ring_b=b, node_b=0, coupler=cmos_65nm_coupler(R_UNIT_OHM / j)))
            owner.append(k)
        elif j < 0:
            half = cmos_65nm_coupler(2 * R_UNIT_OHM / -j)
            cps += [Coupling(ring_a=a, node_a=0, ring_b=b, node_b=1, coupler=half),
                    Coupling(ring_a=a, node_a=1, ring_b=b, node_b=0, coupler=half)]
            owner += [k, k]
    return RingNetwork(rings=(ring,) * (rows * cols), couplings=tuple(cps)), edges, J, owner


def ising_energy(spins: np.ndarray, edges, J) -> np.ndarray:
    """H = −Σ J_ij s_i s_j for spins (..., N) ∈ ±1."""
    a, b = np.array(edges).T
    return -np.sum(J * spins[..., a] * spins[..., b], axis=-1)


def ground_energy(n: int, edges, J) -> float:
    """Brute-force minimum of :func:`ising_energy` over the 2^(n−1) states with s_0 = +1."""
    s = np.array(list(itertools.product((-1, 1), repeat=n - 1)), dtype=np.int8)
    return float(ising_energy(np.hstack([np.ones((len(s), 1), np.int8), s]), edges, J).min())


def _phases_per_cycle(ts, v, vth: float) -> np.ndarray:
    """Phases φ_r − φ_0 [rad] (cycles, R) from node-0 voltages v (S, R), at each rising crossing of ring 0."""
    def rising(x):
        i = np.nonzero((x[:-1] < vth) & (x[1:] >= vth))[0]
        return ts[i] + (vth - x[i]) / (x[i + 1] - x[i]) * (ts[i + 1] - ts[i])

    cr = [rising(v[:, r]) for r in range(v.shape[1])]
    m = min(len(c) for c in cr) - 2
    t0, per = cr[0][:m], np.diff(cr[0])[:m]
    ph = np.empty((m, v.shape[1]))
    for r, c in enumerate(cr):
        ph[:, r] = 2 * math.pi * (c[np.searchsorted(c, t0)] - t0) / per
    return ph


def _last_true(x: np.ndarray) -> int:
    """1 + the last index where ``x`` holds (0 if never)."""
    i = np.nonzero(x)[0]
    return int(i[-1]) + 1 if len(i) else 0


def settle_instance(ring, rows: int, cols: int, seed: int, starts: int, n_cycles: int,
                    steps_per_cycle: int = 100) -> dict:
    """One King's-graph instance on the circuit model, ``starts`` runs from the enable state (every ring at the
    same phase, :func:`hw_models.ring.ring_initial_state`) with the rings' thermal noise
    (:func:`hw_models.noise.node_noise_sigma`) breaking the symmetry, one noise seed per run.

    Per run: ``lock_cycles``, the cycles until no ring's phase moves by more than :data:`LOCK_RAD` over any
    later :data:`LOCK_WINDOW`-cycle window; ``spin_cycles``, until the binarised phases (spin = sign
    cos(φ_i − φ_0)) keep their final state; ``binarised``, the fraction of rings with |cos(φ_i − φ_0)| > 0.9 at
    the end; ``final_energy`` of the final spins. Also the ground energy (brute force, ≤ 25 rings; NaN beyond)
    and the couplers' dissipation over the last 10 cycles, summed over couplers and averaged over runs [W]."""
    from hw_models.devices.registry import device_for
    from hw_models.noise import node_noise_sigma
    from hw_models.ring import ring_initial_state
    from hw_models.ring_sim import simulate_ring_networks

    T = 1.0 / device_for(ring).frequency()
    net, edges, J, _ = kings_network(ring, rows, cols, seed)
    N, n = rows * cols, ring.n_stages
    y0 = np.stack([ring_initial_state(net)] * starts)
    ts, ys = simulate_ring_networks([net] * starts, n_cycles * T, dt_s=T / steps_per_cycle, y0=y0,
                                    sigma=node_noise_sigma(ring), seed=seed)
    out = {"lock_cycles": [], "spin_cycles": [], "binarised": [], "final_energy": []}
    for g in range(starts):
        ph = _phases_per_cycle(ts, ys[:, g, ::n], 0.5 * ring.vdd_v)
        step = np.abs(np.angle(np.exp(1j * (ph[LOCK_WINDOW:] - ph[:-LOCK_WINDOW])))).max(axis=1)
        spins = np.where(np.cos(ph) >= 0, 1, -1)
        out["lock_cycles"].append(_last_true(step > LOCK_RAD))
        out["spin_cycles"].append(_last_true(~np.all(spins == spins[-1], axis=1)))
        out["binarised"].append(float(np.mean(np.abs(np.cos(ph[-1])) > 0.9)))
        out["final_energy"].append(float(ising_energy(spins[-1], edges, J)))
    tail = ys[ts >= ts[-1] - 10 * T]
    out["coupler_power_w"] = sum(
        float(np.mean((tail[:, :, c.ring_a * n + c.node_a] - tail[:, :, c.ring_b * n + c.node_b]) ** 2))
        / c.coupler.resistance_ohm for c in net.couplings)
    out["ground_energy"] = ground_energy(N, edges, J) if N <= 25 else float("nan")
    out["n_edges"] = len(edges)
    return out


def settle(rows: int = 4, cols: int = 4, instances: int = 3, starts: int = 4, n_cycles: int = 200,
           steps_per_cycle: int = 100) -> dict:
    """Settling of ``instances`` King's-graph instances (seeds 0, 1, ...) of the sized ring (module notes): the
    runs' lock and spin cycles (instances × starts), their medians and largest, the mean binarised fraction,
    the fraction of runs ending at the ground state and their mean energy over it (NaN past 25 rings), and the
    mean coupler dissipation per edge [W]."""
    ring = sized_ring()
    runs = [settle_instance(ring, rows, cols, k, starts, n_cycles, steps_per_cycle) for k in range(instances)]
    lock = [c for r in runs for c in r["lock_cycles"]]
    spin = [c for r in runs for c in r["spin_cycles"]]
    ratio = np.array([e / r["ground_energy"] for r in runs for e in r["final_energy"]])
    return {"lock_cycles": lock, "spin_cycles": spin, "median_lock": float(np.median(lock)),
            "max_lock": int(max(lock)), "median_spin": float(np.median(spin)), "max_spin": int(max(spin)),
            "binarised": float(np.mean([b for r in runs for b in r["binarised"]])),
            "ground_fraction": float(np.mean(np.abs(ratio - 1) < 1e-9)), "energy_ratio": float(np.mean(ratio)),
            "coupler_power_per_edge_w": sum(r["coupler_power_w"] for r in runs) / sum(r["n_edges"] for r in runs),
            "n_rings": rows * cols, "n_edges": runs[0]["n_edges"], "instances": instances, "starts": starts,
            "cycles_simulated": n_cycles}


def fo4_stage_delay_s() -> dict:
    """The card's inverter delay at a fan-out-of-4 load (4 gates + its drains + the wire of :func:`stage_load_f`),
    from the circuit limit cycle (t_d = 1 / (2 n f₀)), against [SB17]'s 65 nm FO4 fit at 1.2 V
    (:meth:`hw_models.technology.TechnologyNode.delay`, taken as ps of its FO4 circuit)."""
    from hw_models import cmos_65nm_ring
    from hw_models.devices.registry import device_for
    from hw_models.technology import REFERENCE_NODE

    c = stage_load_f()
    c_fo4 = 5 * c["gate_f"] + c["wire_f"]
    f = device_for(cmos_65nm_ring(n_stages=N_STAGES, vdd_v=VDD_V, c_load_f=c_fo4)).frequency()
    return {"card_s": 1.0 / (2 * N_STAGES * f), "sb17_s": REFERENCE_NODE.delay().value * 1e-12,
            "c_fo4_f": c_fo4}


def predictions(settling: dict | None = None) -> dict:
    """The tool's figures for the design (module notes); ``settling`` a :func:`settle` result (default: run it)."""
    from hw_models.devices.registry import device_for

    dev = device_for(sized_ring())
    st = settle() if settling is None else settling
    f0, p_ring = dev.frequency(), dev.power()
    p_node = p_ring + KINGS_GRAPH_COUPLERS_PER_NODE * st["coupler_power_per_edge_w"]
    levels = MEASURED["coupling_levels"][0]
    bits = math.ceil(math.log2((levels - 1) // 2 + 1))
    return {"f0_hz": f0, "p_ring_w": p_ring, "p_node_w": p_node, "energy_per_cycle_j": p_node / f0,
            "ring_energy_per_cycle_j": p_ring / f0, "c_load_f": dev.params.c_load_f,
            "coupling_bits": bits, "coupling_magnitudes": 2**bits - 1, "settling": st, "fo4": fo4_stage_delay_s()}


def measured() -> dict:
    n, p = MEASURED["nodes"][0], MEASURED["chip_power_w"][0]
    f = MEASURED["f_implied_hz"][0]
    return {"p_node_w": p / n, "f_hz": f, "energy_per_cycle_j": p / n / f,
            "coupling_levels": MEASURED["coupling_levels"][0], "settle_cycles_max": MEASURED["settle_cycles_max"][0]}


def _settling_row(st: dict, m: dict) -> str:
    e = (f"; {st['ground_fraction']:.0%} end at the ground state, mean energy {st['energy_ratio']:.0%} of it"
         if np.isfinite(st["energy_ratio"]) else "")
    return (f"| settling, {st['n_rings']} rings | < {m['settle_cycles_max']} cycles (1,968 rings) | phases locked: "
            f"median {st['median_lock']:.0f}, largest {st['max_lock']} cycles; spins final: median "
            f"{st['median_spin']:.0f} ({st['instances']} instances × {st['starts']} runs; {st['binarised']:.0%} of "
            f"rings binarised{e}) | {st['median_lock'] / m['settle_cycles_max']:.2f} (median lock) |")


def table(t: dict, m: dict, large: dict | None = None) -> str:
    """The Markdown table of docs/devices.md; ``large`` a :func:`settle` result of a larger graph (a row more)."""
    st = t["settling"]
    rows = [
        "| quantity | measured [Moy22] | tool (7-stage 65 nm ring, 1.2 V, minimum-size load, resistive couplers) "
        "| tool / measured |", "|---|---|---|---|",
        f"| oscillation frequency | ≈ {m['f_hz'] / 1e9:.1f} GHz (implied: < 50 cycles [Moy22] in 50 ns [CE24]) | "
        f"{t['f0_hz'] / 1e9:.1f} GHz ({t['c_load_f'] * 1e15:.2f} fF per stage) | {t['f0_hz'] / m['f_hz']:.1f} |",
        f"| power per oscillator | {m['p_node_w'] * 1e6:.1f} µW (42 mW / 1,968, all included) | "
        f"{t['p_node_w'] * 1e6:.0f} µW (ring {t['p_ring_w'] * 1e6:.0f} + 4 couplers "
        f"{4 * st['coupler_power_per_edge_w'] * 1e6:.1f}) | {t['p_node_w'] / m['p_node_w']:.1f} |",
        f"| energy per oscillator cycle | ≈ {m['energy_per_cycle_j'] * 1e15:.0f} fJ (at the implied frequency) | "
        f"{t['energy_per_cycle_j'] * 1e15:.0f} fJ | {t['energy_per_cycle_j'] / m['energy_per_cycle_j']:.2f} |",
        f"| coupling resolution | {m['coupling_levels']} levels | coupling.bits = {t['coupling_bits']}: "
        f"{t['coupling_magnitudes']} magnitudes + 0, signed | — |",
        _settling_row(st, m),
    ]
    if large is not None:
        rows.append(_settling_row(large, m))
    return "\n".join(rows)


def main() -> None:
    t, m = predictions(), measured()
    large = settle(8, 8, instances=2, starts=4, n_cycles=300)
    print(table(t, m, large))
    c, d = stage_load_f(), t["fo4"]
    print(f"\nstage load: next gates {c['gate_f'] * 1e15:.2f} fF + own drains {c['drain_f'] * 1e15:.2f} fF + "
          f"{WIRE_UM:g} um wire {c['wire_f'] * 1e15:.2f} fF; lock cycles per run {t['settling']['lock_cycles']} "
          f"(4 x 4), {large['lock_cycles']} (8 x 8)")
    print(f"power = energy per cycle x frequency: {t['energy_per_cycle_j'] / m['energy_per_cycle_j']:.2f} x "
          f"{t['f0_hz'] / m['f_hz']:.1f} = {t['p_node_w'] / m['p_node_w']:.1f}; the card's FO4 stage delay "
          f"{d['card_s'] * 1e12:.1f} ps ({d['c_fo4_f'] * 1e15:.2f} fF) vs [SB17] 65 nm {d['sb17_s'] * 1e12:.1f} ps: "
          f"{d['sb17_s'] / d['card_s']:.2f}x of the frequency ratio is the level-1 card's drive")


if __name__ == "__main__":
    main()
