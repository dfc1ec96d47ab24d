"""``oscsim export-spice``: write (and optionally run) the ngspice netlist of one compiled head's network.

Entry point ``export-spice = "mapping.cli.spice:register"`` (group ``oscsim.commands``); the export itself is
:func:`mapping.backends.spice.export_head`.
"""

from __future__ import annotations

import json

from oscsim.cli import float_range, int_range

from .common import check_source, chip_and_model, chip_config, validation_tokens

__all__ = ["register"]


def _run(args) -> int:
    if args.seq_len < 2:
        raise ValueError(f"--seq-len must be >= 2, got {args.seq_len}")
    check_source(args)  # before anything heavy loads
    from ..backends.spice import export_head

    cfg = chip_config(args)
    chip, _ = chip_and_model(args, cfg)
    if args.seq_len > chip.max_tokens:
        raise ValueError(f"--seq-len must be <= the chip's {chip.max_tokens} tokens, got {args.seq_len}")
    x, _ = validation_tokens(chip.model_info["config"], chip.max_tokens)
    res = export_head(chip, x[:1, :args.seq_len], layer=args.layer, head=args.head, coordinate=args.coordinate,
                      out=args.out, run=args.run)
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        print(f"wrote {res['netlist']}: {res['rings']} rings, {res['transconductors']} transconductors (two taps), "
              f"couplers off at {res['settle_time_s']:.4g} s, transient to {res['stop_time_s']:.4g} s")
        if args.run:
            print("ngspice phases [rad]:", " ".join(f"{p:.5f}" for p in res["phases_rad"]))
            print("increment (periphery):", " ".join(f"{p:.5f}" for p in res["increment"]))
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("export-spice", help="write one compiled head's ring network as an ngspice netlist",
                              description="Export the circuit network of one (layer, head, coordinate) of a compiled "
                                          "Kuramoto chip on the first validation window: level-1 rings with each "
                                          "transistor's mismatch, two-tap transconductors as VCCS G elements, .ic "
                                          "placement, node-0 probes; --run executes ngspice in batch mode.")
    p.add_argument("checkpoint", metavar="CKPT_OR_CHIP", help="checkpoint name/folder or a chip JSON")
    p.add_argument("--layer", type=int_range(0), default=0, help="layer index (0 .. layers-1)")
    p.add_argument("--head", type=int_range(0), default=0, help="head index (0 .. heads-1)")
    p.add_argument("--coordinate", type=int_range(0), default=0, help="coordinate j of the head (0 .. head_dim-1)")
    p.add_argument("--seq-len", type=int_range(2), default=8,
                   help="tokens T (rings) of the network, in [2, 64] (the export's limit)")
    p.add_argument("--out", required=True, help="netlist path (.cir)")
    p.add_argument("--config", help="chip configuration TOML (default: the ring macromodel preset; the netlist is "
                                    "the same circuit for ring-macromodel and ring-circuit chips)")
    p.add_argument("--ideal", action="store_true", help="ideal devices (refused: the netlist is a ring circuit)")
    p.add_argument("--kappa-tau", type=float_range(0, lo_open=True), default=None,
                   help="override the settle window by kappa*tau_s [rad], > 0 (default: the configuration's)")
    p.add_argument("--run", action="store_true", help="run ngspice on it and print the read phases and increments")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_run)
