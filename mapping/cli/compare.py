"""``oscsim compare``: one layer and head of a chip against the closed form, or the fidelity ladder, with plots.

Entry point ``compare = "mapping.cli.compare:register"`` (group ``oscsim.commands``).
"""

from __future__ import annotations

import json

from oscsim.cli import int_range

from .common import add_chip_options, check_source, chip_and_model, chip_config, validation_tokens

__all__ = ["register"]


def _run_compare(args) -> int:
    check_source(args)  # before anything heavy loads
    from ..simulation.compare import compare_layer

    cfg = chip_config(args)
    chip, _ = chip_and_model(args, cfg)
    x, _ = validation_tokens(chip.model_info["config"], chip.max_tokens)
    T = args.seq_len or x.shape[1]
    if not 2 <= T <= x.shape[1]:
        raise ValueError(f"--seq-len must be in [2, {x.shape[1]}] (the chip's max_tokens), got {T}")
    if args.layer >= len(chip.layers):
        raise ValueError(f"--layer must be in [0, {len(chip.layers) - 1}], got {args.layer}")
    if args.head >= chip.layers[args.layer].n_heads:
        raise ValueError(f"--head must be in [0, {chip.layers[args.layer].n_heads - 1}], got {args.head}")
    if args.levels:  # the fidelity ladder (mapping.simulation.ladder)
        from ..simulation.ladder import compare_levels, parse_levels

        out = compare_levels(chip, x[:1, :T], layer=args.layer, head=args.head, levels=parse_levels(args.levels),
                             plot_dir=args.plot, noise=args.noise)
    else:
        out = compare_layer(chip, x[:1, :T], layer=args.layer, head=args.head, plot_dir=args.plot, seed=args.seed)
    if args.json:
        print(json.dumps(out, indent=1, default=str))
    else:
        for k, v in out.items():
            print(f"{k}: {v}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "compare", help="closed form vs simulated network for one layer and head, with plots",
        description="Run one layer and head of the chip on the first validation window and compare it with the "
                    "closed form on the same input: the relative error and cosine of the attention increment and "
                    "of the layer output, the phase error; with --plot DIR, the matrices and trajectories (PNG). "
                    "With --levels, the fidelity ladder: the same head at each rung (closed form, macromodel, "
                    "circuit, ngspice) compared pairwise (docs/fidelity_ladder.md). The chip options are "
                    "simulate's (--config, --ideal, --kappa-tau, --set).")
    from ..preflight import chip_checkpoints

    p.add_argument("checkpoint", metavar="CKPT", help=f"bundled checkpoint ({', '.join(chip_checkpoints())}), "
                                                      "checkpoint folder or chip JSON")
    p.add_argument("--layer", type=int_range(0), default=0, help="layer index (0 .. layers-1)")
    p.add_argument("--head", type=int_range(0), default=0, help="head index (0 .. heads-1)")
    p.add_argument("--plot", default=None, metavar="DIR", help="folder for the PNG figures (default: none, figures "
                                                                "are not drawn)")
    add_chip_options(p)
    p.add_argument("--seq-len", type=int_range(2), default=None,
                   help="tokens of the validation window, in [2, the model's seq_len] (None: the model's)")
    p.add_argument("--seed", type=int_range(0), default=0, help="noise seed of the run (>= 0)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--levels", default=None, metavar="RUNGS",
                   help="fidelity ladder: comma-separated rungs of closed-form,macromodel,circuit,spice run on the same "
                        "head, input and mismatch draw (Kuramoto chips)")
    p.add_argument("--noise", action="store_true", help="with --levels: thermal noise at the circuit and macromodel "
                                                         "rungs (default: off, the rungs differ only by their models)")
    p.set_defaults(func=_run_compare)
