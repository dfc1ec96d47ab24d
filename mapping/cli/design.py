"""``oscsim design``: the co-design search (:mod:`mapping.design`).

Entry point ``design = "mapping.cli.design:register"`` (group ``oscsim.commands``); the search's modules are
imported when the command runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

__all__ = ["register"]


def _run_design(args) -> int:
    from ..design.recheck import default_recheck_windows, recheck_front
    from ..design.spec import load_design_spec
    from ..design.study import run_design
    from ..sweep.executors import security_from_args

    if args.workers < 0:
        raise ValueError(f"--workers must be >= 0 (0: in this process), got {args.workers}")
    if args.recheck_windows is not None and args.recheck_windows < 0:
        raise ValueError(f"--recheck-windows must be >= 0 (0: no rescoring), got {args.recheck_windows}")
    security = security_from_args(args)
    spec = load_design_spec(args.spec)  # every field and both ends of every range validated here
    if args.finetune and spec.workloads is not None:
        raise ValueError("--finetune trains a study's verdict design; a [workloads] study names one per workload "
                         "(its crossover map): fine-tune a single-workload study of the cell instead")
    if args.finetune:  # a model no chip surrogate trains is refused before the study, not after it
        from ..design.finetune import check_finetune

        check_finetune(spec)
    if args.trials is not None:
        import dataclasses

        spec = (dataclasses.replace(spec, trials=args.trials) if spec.workloads is None else  # per workload there
                dataclasses.replace(spec, workloads=dataclasses.replace(spec.workloads, trials=args.trials)))
    if args.chip_set:  # the base chip's fields (a new base is a new study: its spec hash changes)
        import dataclasses

        from .common import apply_set

        spec = dataclasses.replace(spec, base=apply_set(spec.base, args.chip_set))
    if not args.json:
        where = (f"on the Dask cluster at {args.scheduler}" if args.scheduler else
                 f"on {args.workers} local worker process(es)" if args.workers else "in this process")
        n = (f"{spec.trials} trials" if spec.workloads is None else
             f"{len(spec.workloads.workloads())} workloads x {spec.workloads.trials} trials")
        print(f"oscsim design: {spec.name}: {n} ({spec.sampler}, seed {spec.seed}, population "
              f"{spec.population}; spec {spec.spec_hash}) into {args.out} {where}", file=sys.stderr)
    progress = False if (args.json or args.no_progress) else None
    df = run_design(spec, args.out, workers=args.workers, scheduler=args.scheduler, storage=args.storage,
                    progress=progress, spec_text=Path(args.spec).read_text(), security=security)
    if len(df) and not df["state"].isin(["COMPLETE", "INFEASIBLE"]).any():
        first = df[df["error"].notna()].iloc[0] if df["error"].notna().any() else None
        why = "" if first is None else f"; the first (trial {int(first['trial'])}): {str(first['error'])[:300]}"
        print(f"oscsim design: every trial failed{why}", file=sys.stderr)
        return 1
    windows = default_recheck_windows(df, spec) if args.recheck_windows is None else args.recheck_windows
    bar = progress is not False and sys.stderr.isatty()
    if spec.workloads is not None:  # the map judges each workload on its own trials' tokens (docs/design.md)
        windows = 0
    if windows:
        from ..design.study import rewrite_results

        recheck_front(spec, args.out, df, windows=windows, workers=args.workers,
                      scheduler=args.scheduler, progress=bar, security=security)
        rewrite_results(spec, args.out, storage=args.storage)
    if args.finetune:  # the verdict's design(s) trained for their chip, scored on the rescoring's windows
        from ..design.finetune import finetune_front
        from ..design.study import rewrite_results

        log = (lambda m: None) if args.json else (lambda m: print(m, file=sys.stderr))
        finetune_front(spec, args.out, df, windows=windows or default_recheck_windows(df, spec), progress=bar,
                       log=log)
        rewrite_results(spec, args.out, storage=args.storage)
    report = json.loads((Path(args.out) / "report.json").read_text())
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(report["text"])
        if spec.workloads is not None:
            print(f"map {Path(args.out) / 'crossover.png'}, {Path(args.out) / 'crossover.parquet'}; tables "
                  f"{Path(args.out) / 'trials.parquet'}; report {Path(args.out) / 'report.md'}")
            return 0
        if args.finetune:
            print(f"fine-tuned checkpoints, each with its chip: {Path(args.out) / 'finetune'}/<trial>/")
        print(f"tables {Path(args.out) / 'trials.parquet'}, {Path(args.out) / 'front.parquet'}; report "
              f"{Path(args.out) / 'report.md'}; plots {Path(args.out) / 'plots'}, page {Path(args.out) / 'front.html'}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "design", help="multi-objective design search over chip fields (Optuna; resumable; local processes or Dask)",
        description="Search the chip designs of a design spec (TOML; see examples/design-small.toml and "
                    "docs/design.md) for the front of BPC loss, energy per token, area and latency under "
                    "constraints. Trials persist in DIR/study.db (or --storage); rerunning the same command "
                    "resumes an interrupted study (one driver per folder). The same spec and seed give the same "
                    "trials whatever the executor. Exit status 1 when every trial failed, 2 for a refused input. "
                    "Writes DIR/trials.parquet, DIR/front.parquet, DIR/report.md, DIR/plots and "
                    "DIR/front.html (and DIR/finetune/ with --finetune).")
    p.add_argument("spec", metavar="SPEC", help="design spec TOML")
    p.add_argument("--out", metavar="DIR", required=True, help="design folder (created, or resumed)")
    p.add_argument("--workers", type=int, default=1, help="local worker processes (0: in this process)")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="evaluate on a running dask.distributed scheduler, e.g. tls://host:8786 with --tls-* or "
                        "Dask's TLS configuration (default: local processes)")
    p.add_argument("--storage", metavar="URL", default=None,
                   help="RDB storage URL of the study (default: the SQLite file DIR/study.db), e.g. "
                        "'postgresql://user:${PGPASSWORD}@host/db': ${VAR} is read from the environment, never written")
    p.add_argument("--trials", type=int, default=None, help="trials in all, more than before extends the study (default: the spec's)")
    p.add_argument("--recheck-windows", type=int, default=None, metavar="N",
                   help="after the study, rescore the front's candidate designs on N windows of the test split "
                        "and judge the verdict by them; 0: no rescoring (default: the windows that make 2,048 "
                        "tokens, whose loss has a standard error below the 0.05 threshold on the 16-tile ring chip)")
    from ..sweep.executors import add_tls_options
    from .common import add_set_option

    add_set_option(p, "on the spec's base chip, [chip]; a different base is a different study")
    add_tls_options(p)
    p.add_argument("--finetune", action="store_true",
                   help="then fine-tune the verdict's design (and the next [finetune] designs - 1 of the rescored "
                        "front) through its own chip's surrogate on the spec's [finetune] budget (resumable), rescore "
                        "it on the same test windows and report the loss before and after in the verdict; the "
                        "checkpoint is saved with its chip in DIR/finetune/<trial>/")
    p.add_argument("--json", action="store_true", help="print the report as JSON (no progress bar)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_run_design)
