"""Phases on the torus (issue 21 item 1): which optimisation of the phase parameters trains best.

Variants, each one seeded training run of the same model, budget and schedule (JSON line per run):

- ``plain``: the behaviour before issue 21 (phases in the shared AdamW groups: shared rate, weight decay on the
  matrices among them);
- ``torus-S``: phase parameter group, no weight decay, learning rate × S;
- ``complex-M``: the reparametrisation alternative: each phase stored as a point z ∈ R² (initialised on the
  circle of radius M at the same angles), θ = atan2(z₂, z₁), z trained at the shared rate without weight decay.
  An AdamW step of size ≈ lr in z turns θ by ≈ lr / |z|, so M sets the effective angular rate (M = 1/S matches
  ``torus-S`` at the start), and |z| then drifts (it only grows: the gradient is tangential).

Usage: python benchmarks/phase_param.py OUT.jsonl VARIANT [VARIANT ...] [--steps 300 --batch-size 16 --lr 3e-3]
"""

from __future__ import annotations

import argparse
import json
import math
import time

import torch
from torch import nn


def _complex_lm(scale: float):
    from oscsim.nn.kuramoto import KuramotoLM

    class ComplexPhaseLM(KuramotoLM):
        phase_parameters = ("embed_z", "psi_z")  # their own group at lr_scale 1: no weight decay, shared rate

        def __init__(self, config):
            super().__init__(config)
            for name in ("embed", "psi"):
                ang = self._parameters.pop(name).detach()
                self.register_parameter(name + "_z", nn.Parameter(scale * torch.stack([ang.cos(), ang.sin()], -1)))

        @property
        def embed(self):
            z = self.embed_z
            return torch.atan2(z[..., 1], z[..., 0])

        @property
        def psi(self):
            z = self.psi_z
            return torch.atan2(z[..., 1], z[..., 0])

    return ComplexPhaseLM


def run(variant: str, args) -> dict:
    from oscsim.nn import registry
    from oscsim.train.loop import TrainConfig, train

    kw = dict(steps=args.steps, batch_size=args.batch_size, lr=args.lr, warmup=max(args.steps // 10, 1),
              eval_every=args.steps, final_eval_windows=args.final_windows, seed=args.seed)
    saved = dict(registry._CLASSES)
    if variant == "plain":
        cfg = TrainConfig(phase_lr_scale=None, **kw)
    elif variant.startswith("torus-"):
        cfg = TrainConfig(phase_lr_scale=float(variant.split("-", 1)[1]), **kw)
    elif variant.startswith("complex-"):
        cfg = TrainConfig(phase_lr_scale=1.0, **kw)
        registry._CLASSES["kuramoto"] = (registry._CLASSES["kuramoto"][0],
                                         _complex_lm(float(eval(variant.split("-", 1)[1], {"math": math}))))
    else:
        raise ValueError(f"unknown variant {variant!r}")
    t0 = time.perf_counter()
    try:
        meta = train("kuramoto", args.size, f"{args.out}.runs/{variant.replace('/', '_')}-s{args.seed}", train_cfg=cfg, log=lambda m: None,
                     progress=False)
    finally:
        registry._CLASSES.clear()
        registry._CLASSES.update(saved)
    return {"variant": variant, "size": args.size, "steps": args.steps, "batch_size": args.batch_size,
            "lr": args.lr, "seed": args.seed, "tokens": meta["tokens"], "val_bpc": meta["metrics"]["val_bpc"],
            "final_windows": args.final_windows, "threads": torch.get_num_threads(),
            "wall_s": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("variants", nargs="+")
    ap.add_argument("--size", default="tiny")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--final-windows", type=int, default=200)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    for v in a.variants:
        res = run(v, a)
        print(json.dumps(res), flush=True)
        with open(a.out, "a") as f:
            f.write(json.dumps(res) + "\n")


if __name__ == "__main__":
    main()
