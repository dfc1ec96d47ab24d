"""The chips' SRAM buffers: CACTI 7 (what the energy model uses) against the former Horowitz-scaled figures.

For the SRAM buffers of the default kuramoto-tiny and kuramoto-1m chips (:func:`mapping.energy.sram.sram_buffers`)
at 65 nm (1.2 V, the ring chips' supply) and 28 nm (LP, 0.9 V; CACTI's own interpolation between its 32 and
22 nm tables, whose figures are printed beside it), the energy per bit read ([Hor14]'s 45 nm reads scaled by
the Stillmaker-Baas energy ratio, and CACTI 7's read and write of a 64-bit word), and the macro area (the old
rule: bitcells over a 70 % array efficiency; CACTI's macro) and CACTI's standby leakage. Prints a Markdown
table (BENCHMARKS.md, "Energy").

    .venv/bin/python benchmarks/sram_cacti.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hw_models.cacti import sram_macro  # noqa: E402
from hw_models.technology import TechnologyNode, chip_node  # noqa: E402
from mapping import ChipConfig, compile  # noqa: E402
from mapping.energy.area import _sram  # noqa: E402

OLD_ARRAY_EFFICIENCY = 0.7  # the former mapping.energy.constants.SRAM_ARRAY_EFFICIENCY (assumed)


def rows(model: str, node: TechnologyNode) -> list[str]:
    chip = compile(model, ChipConfig(node_nm=node.node_nm))
    buf = _sram(chip)
    out = []
    for name, size in buf.items():
        if size <= 0:
            continue
        m = sram_macro(size, node)
        old = node.sram_j_per_bit(size).value
        old_area = size * 8 * node.sram_cell_area().value / OLD_ARRAY_EFFICIENCY * 1e-6
        out.append(f"| {model} | {node.node_nm:g} | {name} | {size / 1024:.4g} | {old * 1e12:.3g} | "
                   f"{m.read_j_per_bit * 1e12:.3g} | {m.write_j_per_bit * 1e12:.3g} | "
                   f"{m.read_j_per_bit / old:.2f} | {old_area:.3g} | {m.area_mm2.value:.3g} | "
                   f"{m.leakage_w.value * 1e6:.3g} |")
    return out


def main() -> None:
    print("| chip | node [nm] | buffer | KiB | Horowitz-scaled read [pJ/bit] | CACTI read [pJ/bit] | CACTI write "
          "[pJ/bit] | CACTI / old | old area [mm²] | CACTI area [mm²] | CACTI leakage [µW] |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for model in ("kuramoto-tiny", "kuramoto-1m"):
        for node in (chip_node(65), chip_node(28)):
            for r in rows(model, node):
                print(r)
    print()
    print("28 nm bracket (kuramoto-tiny's whole buffer set, CACTI at its own tables and at 0.9 V):")
    chip = compile("kuramoto-tiny", ChipConfig())
    total = _sram(chip)["total"]
    for n in (32, 28, 22):
        m = sram_macro(total, TechnologyNode(node_nm=n, vdd_v=0.9))
        print(f"  {n} nm: read {m.read_j_per_bit * 1e12:.3g} pJ/bit, area {m.area_mm2.value:.3g} mm^2, "
              f"leakage {m.leakage_w.value * 1e6:.3g} uW")


if __name__ == "__main__":
    main()
