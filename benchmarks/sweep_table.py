"""Markdown table of a `recipe_sweep.sh` log: one row per variant (model, learning rate, `--set` overrides), the
validation BPC of each seed, their mean, and the difference to a baseline variant taken seed by seed (paired:
the same seed gives the same initialisation draw and batch order where the parameter shapes agree).

Usage: python benchmarks/sweep_table.py SWEEP.jsonl [--baseline SPEC] [--steps N] [--batch B]
  SPEC is a variant without its seed, e.g. ``kuramoto@3e-3``; rows are listed in the order of first appearance.
  Only successful runs of the given steps/batch (if set) are used; a variant run twice with one seed keeps the
  last line.
"""

from __future__ import annotations

import argparse
import json
import sys


def variant_and_seed(spec: str) -> tuple[str, int]:
    """``model@lr[@seed][+k=v...]`` -> (``model@lr[+k=v...]``, seed)."""
    base, _, sets = spec.partition("+")
    parts = base.split("@")
    seed = int(parts[2]) if len(parts) > 2 else 0
    variant = "@".join(parts[:2]) + (f"+{sets}" if sets else "")
    return variant, seed


def collect(lines, *, steps=None, batch=None) -> dict[str, dict[int, dict]]:
    """{variant: {seed: result}} from the JSON lines of a sweep log (errors and other budgets skipped)."""
    table: dict[str, dict[int, dict]] = {}
    for line in lines:
        line = line.strip()
        if not line:
            continue
        rec = json.loads(line)
        if rec.get("error") or (steps is not None and rec["steps"] != steps) or \
                (batch is not None and rec["batch"] != batch):
            continue
        variant, seed = variant_and_seed(rec["spec"])
        table.setdefault(variant, {})[seed] = rec["result"]
    return table


def markdown(table: dict[str, dict[int, dict]], baseline: str | None = None) -> str:
    """The table as Markdown: variant, parameters, BPC per seed, mean, paired Δ to ``baseline`` per seed and mean."""
    seeds = sorted({s for runs in table.values() for s in runs})
    head = ["variant", "params"] + [f"seed {s}" for s in seeds] + ["mean"]
    if baseline is not None:
        if baseline not in table:
            raise SystemExit(f"baseline {baseline!r} not in the log; variants: {', '.join(table)}")
        head += [f"Δ seed {s}" for s in seeds] + ["Δ mean"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for variant, runs in table.items():
        bpc = {s: r["val_bpc"] for s, r in runs.items()}
        params = next(iter(runs.values()))["n_parameters"]
        cells = [f"`{variant}`", f"{params:,}"] + [f"{bpc[s]:.3f}" if s in bpc else "–" for s in seeds]
        cells.append(f"{sum(bpc.values()) / len(bpc):.3f}")
        if baseline is not None:
            ref = {s: r["val_bpc"] for s, r in table[baseline].items()}
            paired = {s: bpc[s] - ref[s] for s in seeds if s in bpc and s in ref}
            cells += [f"{paired[s]:+.3f}" if s in paired else "–" for s in seeds]
            cells.append(f"{sum(paired.values()) / len(paired):+.3f}" if paired else "–")
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("log")
    p.add_argument("--baseline", default=None)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--batch", type=int, default=None)
    a = p.parse_args(argv)
    with open(a.log, encoding="utf-8") as f:
        table = collect(f, steps=a.steps, batch=a.batch)
    print(markdown(table, a.baseline))
    return 0


if __name__ == "__main__":
    sys.exit(main())
