"""The chip against its three same-terms baselines (mapping.energy.baselines), prefill and decode, per node and
batch: the table of docs/energy.md and BENCHMARKS.md.

    .venv/bin/python benchmarks/baselines.py [CKPT] [--config TOML] [--set FIELD=VALUE ...] [--nodes 65 28]
                                             [--batches 1 64] [--json]

The chip is CKPT (default kuramoto-tiny) compiled for the TOML (default: the default chip) with each ``--set``
(dotted fields, as in sweeps) and ``node_nm`` set to each node; energy only (no chip inference: energy does not
depend on the simulated phases). Prints a Markdown table (or JSON rows).
"""

from __future__ import annotations

import argparse
import json


def rows(ckpt: str, config: str | None, sets: dict, nodes: list[float], batches: list[int]) -> list[dict]:
    from mapping import ChipConfig, compile
    from mapping.backends.scores import score_stage
    from mapping.config import load_config
    from mapping.energy.baselines import BASELINES, baselines
    from mapping.energy.chip_terms import chip_energy
    from mapping.energy.spec import ChipEnergySpec
    from mapping.model_io import load_model
    from mapping.sweep.spec import config_with

    model, _ = load_model(ckpt)
    base = load_config(config) if config else ChipConfig()
    out = []
    for node in nodes:
        for batch in batches:  # compiled per batch: the die's SRAM plan holds a window of keys per sequence
            chip = compile(model, config_with(base, {**sets, "node_nm": float(node), "energy.batch": int(batch)}))
            s = ChipEnergySpec.from_chip(chip)
            for phase in ("prefill", "decode"):
                ce = chip_energy(s, phase, score_stage(chip.config).on_array)
                bl = baselines(s, ce, phase)
                out.append({"node_nm": node, "phase": phase, "batch": batch, "T": s.shape.T,
                            "precision": s.periphery.digital_precision, "chip_j": ce["energy_per_token_chip_j"],
                            **{f"{k}_j": bl[k]["energy_per_token_j"] for k in BASELINES},
                            **{f"chip_over_{k}": bl[k]["chip_ratio"] for k in BASELINES}})
    out.sort(key=lambda r: (r["node_nm"], r["phase"] != "prefill", r["batch"]))
    return out


def _nj(j: float) -> str:
    return f"{j * 1e9:.3g} nJ" if j < 1e-6 else f"{j * 1e6:.3g} µJ"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ckpt", nargs="?", default="kuramoto-tiny")
    ap.add_argument("--config", default=None)
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    ap.add_argument("--nodes", nargs="+", type=float, default=[65.0, 28.0])
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 64])
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    sets = {}
    for kv in a.set:
        k, _, v = kv.partition("=")
        try:
            sets[k] = json.loads(v)
        except ValueError:  # a string (a choice such as int8, or "none")
            sets[k] = v
    r = rows(a.ckpt, a.config, sets, a.nodes, a.batches)
    if a.json:
        print(json.dumps(r, indent=1))
        return 0
    print("| node | phase | batch | chip | same chip, no array | GPU datapath | GPU board (u = 1) |")
    print("|---|---|---|---|---|---|---|")
    for x in r:
        print(f"| {x['node_nm']:g} nm | {x['phase']} | {x['batch']} | {_nj(x['chip_j'])} | "
              f"{_nj(x['digital_same_node_j'])} (chip {x['chip_over_digital_same_node']:.3g}×) | "
              f"{_nj(x['gpu_datapath_j'])} ({x['chip_over_gpu_datapath']:.3g}×) | "
              f"{_nj(x['gpu_board_j'])} ({x['chip_over_gpu_board']:.3g}×) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
