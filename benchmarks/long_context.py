"""Long contexts on the chip: the blocked schedule against the closed form of the same model at the same T
(docs/design.md, "Long contexts"; BENCHMARKS.md, "Chip inference").

- ``--mode model``: whole-model BPC of the chip and of the closed form on the same windows of T tokens, the
  difference with its SE (:func:`mapping.simulation.simulate_report`), for a T where the whole model runs in
  minutes on 2 cores; the chip's tokens/s and the share of its wall time spent integrating the array's networks
  (the engine in prefill, the receivers in decode).
- ``--mode head``: one head of one layer: the chip's increment estimate v ⊙ a of that head (both banks, every
  coordinate) against the closed form's on the layer's own input (captured from the closed-form forward pass:
  the array's error alone, the digital periphery not applied), as the relative error
  ‖va_chip − va_cf‖ / ‖va_cf‖ with a jackknife SE over blocks of 64 tokens; for a T where the whole model does
  not run in minutes.

The chip is the default one (16-tile multiplexed ring macromodel, 65 nm) built for ``--T`` tokens
(``context_tokens``) with ``[array] block = --block`` ('none': unblocked), simulating the ``--phase`` pass
(``[energy] phase``; decode: :mod:`mapping.backends.blocked_decode`). Prints one JSON line.

    .venv/bin/python benchmarks/long_context.py --mode model --T 1024 --block 256
    .venv/bin/python benchmarks/long_context.py --mode head --T 4096 --block 256
    .venv/bin/python benchmarks/long_context.py --mode head --T 4096 --block 256 --phase decode
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time


def head_error(model, x, cfg, *, layer: int, head: int, seed: int) -> dict:
    """The head-level error of the chip ``cfg`` (:func:`mapping.simulation.head.head_error`)."""
    from mapping import compile
    from mapping.backends.blocking import block_plan
    from mapping.simulation.head import head_error as measure

    chip = compile(model, cfg)
    r = measure(chip, model, x, layer=layer, head=head, seed=seed)
    return {"rel_error": r["head_error"], "rel_error_se": r["head_error_se"], "wall_s": r["head_wall_s"],
            "backend": r["head_backend"], "plan": block_plan(x.shape[1], cfg.array.block).to_json(),
            "kappa_tau": chip.config.kappa_tau}


def _integration_timer() -> dict:
    """Time spent integrating the array's networks ({"s": seconds}, summed as the run goes): the engine's calls
    (prefill: :func:`mapping.backends.integrate.integrate_phase_product`) and the decode pass's receivers
    (:func:`mapping.backends.decode._bank_sequence`, :func:`mapping.backends.blocked_decode.block_round`)."""
    from mapping.backends import blocked_decode, decode, phase

    acc = {"s": 0.0}

    def timed(fn):
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                acc["s"] += time.perf_counter() - t0
        return wrapper

    phase.integrate_phase_product = timed(phase.integrate_phase_product)
    decode._bank_sequence = timed(decode._bank_sequence)
    blocked_decode.block_round = timed(blocked_decode.block_round)
    return acc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("model", "head"), default="head")
    ap.add_argument("--checkpoint", default="kuramoto-1m")
    ap.add_argument("--T", type=int, default=4096, help="context length [tokens]")
    ap.add_argument("--block", default="256", help="block size B, or 'none'")
    ap.add_argument("--windows", type=int, default=1, help="validation windows of T tokens")
    ap.add_argument("--layer", type=int, default=0)
    ap.add_argument("--head", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--phase", choices=("prefill", "decode"), default="prefill", help="[energy] phase: the pass run")
    args = ap.parse_args(argv)
    import torch
    from oscsim.data import eval_windows, load_shakespeare

    from mapping import ChipConfig
    from mapping.config import MultiplexedArray
    from mapping.model_io import load_model

    torch.set_num_threads(1)
    block = None if args.block.lower() == "none" else int(args.block)
    model, _ = load_model(args.checkpoint)
    model.eval()
    x, y = eval_windows(load_shakespeare().split("valid"), args.T, max_windows=args.windows)
    cfg = ChipConfig(context_tokens=args.T, array=MultiplexedArray(tiles=16, block=block))
    cfg = cfg.replace(energy=dataclasses.replace(cfg.energy, phase=args.phase))
    row = {"mode": args.mode, "phase": args.phase, "checkpoint": args.checkpoint, "T": args.T, "block": block,
           "seed": args.seed}
    t0 = time.perf_counter()
    if args.mode == "head":
        row.update(layer=args.layer, head=args.head, **head_error(model, x, cfg, layer=args.layer, head=args.head,
                                                                   seed=args.seed))
    else:
        from mapping import compile
        from mapping.simulation.report import simulate_report

        timer = _integration_timer()
        rep = simulate_report(compile(model, cfg), x, y, seed=args.seed, progress=False, measure_gpu=False,
                              warn=False)
        row.update(tokens_per_s=rep.tokens_per_s, chip_wall_s=rep.chip_wall_s, integration_s=timer["s"],
                   integration_share=timer["s"] / rep.chip_wall_s)
        row.update(bpc_chip=rep.bpc_chip, bpc_closed_form=rep.bpc_closed_form, bpc_difference=rep.bpc_difference,
                   bpc_difference_se=rep.bpc_difference_se, n_tokens=rep.n_tokens, backend=rep.backend,
                   energy_per_token_j=rep.energy_per_token_j, area_mm2=rep.area_mm2,
                   latency_per_token_s=rep.latency_per_token_s,
                   infeasible_reason=rep.energy.get("infeasible_reason"))
    row["total_s"] = time.perf_counter() - t0
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
