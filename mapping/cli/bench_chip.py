"""``oscsim bench chip``: simulated tokens/s of the chips, the engine's share and its rate against the GEMM limit.

Entry point ``chip = "mapping.cli.bench_chip:register"`` (group ``oscsim.benchmarks``); the measurements are
:func:`mapping.simulation.throughput.chip_throughput` (see its module notes for what each key measures).
"""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["register"]


def _run(args) -> int:
    from ..simulation.throughput import chip_throughput

    show = (not args.json) and sys.stderr.isatty()
    res = chip_throughput(quick=args.quick, competitors=not args.no_competitors,
                          progress=(lambda s: print(f"[bench chip] {s}", file=sys.stderr)) if show else (lambda s: None))
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    for kind, r in res["chip_tokens_per_s"].items():
        print(f"{kind:>10} chip: " + ", ".join(f"{s} {v:.3g} tokens/s" for s, v in r.items()))
    print("closed form: " + ", ".join(f"{s} {v:.3g} tokens/s" for s, v in res["closed_form_tokens_per_s"].items()))
    print(f"engine integration / chip time: {res['engine_fraction_of_chip_time']:.2f} (tiny), "
          f"{res['engine_fraction_of_chip_time_1m']:.2f} (1M)")
    ceil = res["engine_fraction_ceiling"]
    for size, b in res["chip_time_breakdown_s"].items():
        print(f"  {size}: integration {b['integration']:.3f} s, readout Monte Carlo {b['readout']:.3f} s, other "
              f"{b['other']:.3f} s; with nothing but the readout beside it the share would be {ceil[size]:.2f}")
    print(f"engine: {res['engine_oscillator_steps_per_s']:.3g} oscillator-steps/s, "
          f"{res['engine_coupling_flops_per_s'] / 1e9:.2f} GF/s = {res['engine_vs_gemm']:.2f} of the float64 GEMM "
          f"rate ({res['gemm_flops_per_s'] / 1e9:.1f} GF/s)")
    sp = res["circuit_vs_ngspice"]
    print("circuit vs ngspice: " + (f"{sp:.0f}x" if sp is not None else res["circuit_vs_ngspice_detail"]["why"]))
    if res["engine_vs_brian2"] is not None:
        print(f"engine vs Brian2: {res['engine_vs_brian2']:.0f}x; integrator gemm_fraction {res['gemm_fraction']:.2f}")
    print(f"1M model: {res['models']['1m']}")
    return 0


def register(subparsers) -> None:
    from oscsim.cli import plain_help

    p = subparsers.add_parser("chip", help="simulated tokens/s of the chips, engine share and GEMM ratio",
                              description=plain_help(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--quick", action="store_true",
                   help="one window of 16 tokens per chip, quick integrator benchmark (smoke test; figures not "
                        "meaningful)")
    p.add_argument("--no-competitors", action="store_true",
                   help="skip ngspice and the integrator benchmark (Brian2): their keys are null")
    p.set_defaults(func=_run)
