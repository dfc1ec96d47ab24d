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
    from ..design.recheck import recheck_front
    from ..design.spec import load_design_spec
    from ..design.study import run_design

    if args.workers < 0:
        raise ValueError(f"--workers must be >= 0 (0: in this process), got {args.workers}")
    if args.recheck_windows < 0:
        raise ValueError(f"--recheck-windows must be >= 0 (0: no rescoring), got {args.recheck_windows}")
    spec = load_design_spec(args.spec)  # every field and both ends of every range validated here
    if args.trials is not None:
        import dataclasses

        spec = dataclasses.replace(spec, trials=args.trials)
    if not args.json:
        where = (f"on the Dask cluster at {args.scheduler}" if args.scheduler else
                 f"on {args.workers} local worker process(es)" if args.workers else "in this process")
        print(f"oscsim design: {spec.name}: {spec.trials} trials ({spec.sampler}, seed {spec.seed}, population "
              f"{spec.population}; spec {spec.spec_hash}) into {args.out} {where}", file=sys.stderr)
    progress = False if (args.json or args.no_progress) else None
    df = run_design(spec, args.out, workers=args.workers, scheduler=args.scheduler, storage=args.storage,
                    progress=progress, spec_text=Path(args.spec).read_text())
    if args.recheck_windows:
        from ..design.study import rewrite_results

        recheck_front(spec, args.out, df, windows=args.recheck_windows, workers=args.workers,
                      scheduler=args.scheduler, progress=progress is not False and sys.stderr.isatty())
        rewrite_results(spec, args.out, storage=args.storage)
    report = json.loads((Path(args.out) / "report.json").read_text())
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(report["text"])
        print(f"tables {Path(args.out) / 'trials.parquet'}, {Path(args.out) / 'front.parquet'}; report "
              f"{Path(args.out) / 'report.md'}; plots {Path(args.out) / 'plots'}, page {Path(args.out) / 'front.html'}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "design", help="multi-objective design search over chip fields (Optuna; resumable; local processes or Dask)",
        description="Search the chip designs of a design spec (TOML; see examples/design-small.toml and "
                    "docs/design.md) for the front of BPC loss, energy per token, area and latency under "
                    "constraints. Trials persist in DIR/study.db (or --storage); rerunning the same command "
                    "resumes an interrupted study. The same spec and seed give the same trials whatever the "
                    "executor. Writes DIR/trials.parquet, DIR/front.parquet, DIR/report.md, DIR/plots and "
                    "DIR/front.html.")
    p.add_argument("spec", metavar="SPEC", help="design spec TOML")
    p.add_argument("--out", metavar="DIR", required=True, help="design folder (created, or resumed)")
    p.add_argument("--workers", type=int, default=1, help="local worker processes (0: in this process)")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="evaluate on a running dask.distributed scheduler, e.g. tcp://host:8786 (default: local processes)")
    p.add_argument("--storage", metavar="URL", default=None,
                   help="RDB storage URL of the study, e.g. postgresql://user:pw@host/db (default: the SQLite file "
                        "DIR/study.db)")
    p.add_argument("--trials", type=int, default=None, help="trials in all, more than before extends the study (default: the spec's)")
    p.add_argument("--recheck-windows", type=int, default=0, metavar="N",
                   help="after the study, rescore the front's designs on N windows of the test split and judge "
                        "the verdict by them (0: no rescoring)")
    p.add_argument("--json", action="store_true", help="print the report as JSON (no progress bar)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_run_design)
