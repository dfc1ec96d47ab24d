"""Bundle a finished training run as a named checkpoint in oscsim/checkpoints/NAME/ (issue 21).

    python benchmarks/bundle_run.py train-runs/kuramoto-1m kuramoto-1m \
        --recipe "THREADS=1 bash benchmarks/train_1m.sh kuramoto-1m kuramoto 3e-3"

Refuses a run whose step is short of its ``train.steps``. Writes ``model.safetensors`` (re-saved through the
project's checkpoint writer; no optimizer state) and ``config.json`` with the training command, the source run's
SHA-256s and recipe, and the validation and test BPC over the whole splits (a progress bar per split, then one
line each: a 1M model takes minutes per split on one CPU core). The logic is
:func:`oscsim.train.bundle.bundle`; :func:`main` is this command.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    from oscsim.cli import set_threads
    from oscsim.train.bundle import bundle

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run_dir", help="the finished run folder (config.json, model.safetensors)")
    p.add_argument("name", help="the bundle's name, e.g. kuramoto-1m")
    p.add_argument("--recipe", default=None, help="the command that launched the run, recorded as source.recipe")
    p.add_argument("--chip", default=None, metavar="TOML", help="the --chip TOML the run was trained with")
    p.add_argument("--threads", type=int, default=1, help="the --threads of the training command (recorded), "
                   "and the torch threads of the evaluation")
    p.add_argument("--root", default=None, help="write ROOT/NAME instead of oscsim/checkpoints/NAME")
    p.add_argument("--force", action="store_true", help="replace an existing bundle of that name")
    p.add_argument("--no-progress", action="store_true", help="no progress bars (the per-split lines stay)")
    a = p.parse_args(argv)
    set_threads(a.threads)
    try:
        dst = bundle(a.run_dir, a.name, root=a.root, chip_toml=a.chip, threads=a.threads, recipe=a.recipe,
                     force=a.force, progress=not a.no_progress, log=lambda m: print(m, file=sys.stderr, flush=True))
    except (ValueError, FileNotFoundError) as exc:
        print(f"bundle_run: error: {exc}", file=sys.stderr)
        return 2
    print(dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
