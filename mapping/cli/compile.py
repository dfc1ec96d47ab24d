"""``oscsim compile``: compile a checkpoint for a chip configuration and write the chip JSON.

Entry point ``compile = "mapping.cli.compile:register"`` (group ``oscsim.commands``).
"""

from __future__ import annotations

from .common import add_chip_options, chip_and_model, chip_config

__all__ = ["register"]


def _run_compile(args) -> int:
    cfg = chip_config(args)
    chip, _ = chip_and_model(args, cfg)
    out = chip.save(args.out)
    print(chip.summary())
    print(f"wrote {out}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("compile", help="compile a trained model onto an oscillator chip (chip JSON)",
                              description="Compile a Kuramoto/SSA checkpoint for a chip configuration and write the "
                                          "versioned chip JSON (arrays, programming rules, mismatch draw, resources).")
    from ..preflight import chip_checkpoints

    p.add_argument("checkpoint", metavar="CKPT", help=f"bundled name ({', '.join(chip_checkpoints())}) or checkpoint "
                                                      "folder")
    add_chip_options(p)
    p.add_argument("--out", required=True, help="output chip JSON path")
    p.set_defaults(func=_run_compile)
