"""Chip BPC against readout noise (×1, ×3, ×10 of the default ring chip) for closed-form and HWA checkpoints.

    python benchmarks/hwa_noise.py --models kuramoto-tiny kuramoto-tiny-hwa --scales 1 3 10 --seeds 0 1 2 \
        --out results/hwa_noise.json [--plot docs/benchmarks/hwa_noise.png]

Each (model, scale) compiles the default chip (examples/chip.toml settings, mismatch seed 0) with the readout
noise multiplied by the scale and runs ``mapping.inference.run`` on the first 2048 validation tokens (the
default of ``oscsim simulate``) once per noise seed; the band is min..max over seeds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=["kuramoto-tiny", "kuramoto-tiny-hwa"])
    p.add_argument("--scales", nargs="+", type=float, default=[1.0, 3.0, 10.0])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--tokens", type=int, default=2048)
    p.add_argument("--config", default="examples/chip.toml")
    p.add_argument("--out", required=True)
    p.add_argument("--plot", default=None)
    p.add_argument("--resume", action="store_true", help="keep the (model, scale) results already in --out")
    args = p.parse_args(argv)
    from mapping.cli.common import validation_tokens as _validation_tokens
    from mapping import compile as compile_chip
    from mapping.config import load_config
    from mapping.simulation.inference import run

    base = load_config(args.config)
    out = {"config": args.config, "tokens": args.tokens, "results": {}}
    if args.resume and Path(args.out).is_file():
        out = json.loads(Path(args.out).read_text())
    for name in args.models:
        out["results"].setdefault(name, {})
        for s in args.scales:
            prev = out["results"][name].get(f"{s:g}")
            if prev is not None and len(prev["bpc_chip"]) >= len(args.seeds):
                continue
            cfg = dataclasses.replace(base, readout=dataclasses.replace(base.readout, noise_rad=base.readout.noise_rad * s))
            chip = compile_chip(name, cfg)
            x, y = _validation_tokens(chip.model_info["config"], args.tokens)
            vals = list(prev["bpc_chip"]) if prev else []
            cf = prev["bpc_closed_form"] if prev else None
            for seed in args.seeds[len(vals):]:
                t0 = time.time()
                res = run(chip, x, seed=seed, progress=False, closed_form=cf is None)
                b = res.bpc(y)
                cf = b.get("bpc_closed_form", cf)
                vals.append(b["bpc_chip"])
                print(f"{name} x{s:g} seed {seed}: chip {b['bpc_chip']:.4f} closed form {cf:.4f} "
                      f"({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
            out["results"][name][f"{s:g}"] = {"bpc_closed_form": cf, "bpc_chip": vals, "seeds": args.seeds[:len(vals)],
                                              "mean": float(np.mean(vals)), "min": float(min(vals)),
                                              "max": float(max(vals))}
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
        for name, per in out["results"].items():
            keys = sorted(per, key=float)
            sc = [float(k) for k in keys]
            for ax, rel in zip(axes, (False, True)):
                off = [per[k]["bpc_closed_form"] if rel else 0.0 for k in keys]
                ax.plot(sc, [per[k]["mean"] - o for k, o in zip(keys, off)], "o-", label=name)
                ax.fill_between(sc, [per[k]["min"] - o for k, o in zip(keys, off)],
                                [per[k]["max"] - o for k, o in zip(keys, off)], alpha=0.25)
        for ax, lab in zip(axes, ("chip BPC", "chip BPC − closed-form BPC (own model)")):
            ax.set_xscale("log")
            ax.set_xticks(args.scales, [f"×{s:g}" for s in args.scales])
            ax.set_xlabel("readout noise (multiple of the default ring chip's)")
            ax.set_ylabel(lab)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        fig.suptitle(f"default ring chip (mismatch seed 0), first {args.tokens} validation tokens; "
                     f"band: min-max over noise seeds", fontsize=8)
        fig.tight_layout()
        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.plot, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
