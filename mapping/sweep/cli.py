"""``oscsim sweep`` and ``oscsim plot`` (entry points of the ``oscsim`` CLI)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

__all__ = ["register_sweep", "register_plot", "summary_line"]

_DESIGN_KEYS = {"space", "objectives", "constraints", "sampler", "trials", "population"}
"""Top-level keys of a design spec that a sweep spec does not have."""


def _load_sweep_spec(path):
    """The sweep spec at ``path``; a design spec given by mistake is named as one, with the command it needs."""
    from .spec import load_spec

    try:
        return load_spec(path)
    except ValueError as exc:
        import tomllib

        try:
            keys = set(tomllib.loads(Path(path).read_text()))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            raise exc from None
        if "unknown key" in str(exc) and keys & _DESIGN_KEYS:
            raise ValueError(f"{exc}. {path} is a design spec ({', '.join(sorted(keys & _DESIGN_KEYS))}): run it with "
                             f"`oscsim design {path} --out DIR`") from None
        raise


def summary_line(st: dict, table, swept_fields, wall_s: float, table_path) -> str:
    """The last line of ``oscsim sweep``: the counts, the wall time, the BPC-loss and energy ranges of the
    finished points and the point with the lowest BPC loss (its swept values), and where the table is."""
    from oscsim.plotting import si_format

    line = (f"sweep {st['name']}: {st['done']} done, {st['failed']} failed, {st['remaining']} remaining of "
            f"{st['n_points']} in {wall_s:.1f} s")
    ok = table[table["status"] == "ok"] if table is not None and "status" in table else None
    if ok is not None and len(ok) and "bpc_difference" in ok:
        best = ok.loc[ok["bpc_difference"].idxmin()]
        where = ", ".join(f"{f} = {best[f]}" for f in swept_fields if f in best)
        line += (f"; BPC loss {ok['bpc_difference'].min():+.4f} .. {ok['bpc_difference'].max():+.4f}, lowest at "
                 f"{best['point_id']} ({where})")
        if "energy_chip_j_per_token" in ok:
            e = ok["energy_chip_j_per_token"]
            line += f"; chip energy {si_format(e.min(), 'J')} .. {si_format(e.max(), 'J')} per token"
    return line + f"; table {table_path}"


def _run_sweep(args) -> int:
    from .run import check_inputs, export_csv, run_sweep, sweep_status
    from .spec import load_spec

    if args.status:
        if args.spec:
            raise ValueError("--status DIR takes no SPEC")
        st = sweep_status(args.status)
        if args.csv is not None:
            st["csv"] = str(export_csv(args.status, args.csv or None))
        if args.json:
            print(json.dumps(st, indent=1))
        else:
            print(f"sweep {st['name']} ({st['spec_hash']}) in {st['folder']}: {st['done']} done, {st['failed']} failed, "
                  f"{st['remaining']} remaining of {st['n_points']}")
            if "csv" in st:
                print(f"wrote {st['csv']}")
        return 0
    if not args.spec or not args.out:
        raise ValueError("give SPEC and --out DIR (or --status DIR)")
    if args.workers < 0:
        raise ValueError(f"--workers must be >= 0 (0: in this process), got {args.workers}")
    spec = _load_sweep_spec(args.spec)  # every point validated here, before any work
    check_inputs(spec)  # the checkpoint, the window and the split too
    print(f"oscsim sweep: {spec.name}: {spec.n_points} points ({spec.spec_hash}) into {args.out}"
          + (f" on the Dask cluster at {args.scheduler}" if args.scheduler else
             f" on {args.workers} local worker process(es)" if args.workers else " in this process"),
          file=sys.stderr)
    from .executors import security_from_args

    t0 = time.perf_counter()
    table = run_sweep(spec, args.out, workers=args.workers, scheduler=args.scheduler,
                      progress=False if args.no_progress else None, retry_failed=args.retry_failed,
                      spec_text=Path(args.spec).read_text(), security=security_from_args(args))
    st = sweep_status(args.out, table)
    print(summary_line(st, table, spec.swept_fields, time.perf_counter() - t0, Path(args.out) / "results.parquet"))
    if args.csv is not None:
        print(f"wrote {export_csv(args.out, args.csv or None)}")
    return 1 if st["failed"] else 0


def register_sweep(subparsers) -> None:
    p = subparsers.add_parser(
        "sweep", help="sweep chip parameters x seeds into a resumable parquet table (local processes or Dask)",
        description="Run the points of a sweep spec (TOML; see examples/sweep-small.toml and docs/sweeps.md) into "
                    "DIR/results.parquet, one row per point. Rerunning the same command resumes an interrupted "
                    "sweep; `--status DIR` prints done/failed/remaining. Exit status 1 when a point failed.")
    p.add_argument("spec", metavar="SPEC", nargs="?", help="sweep spec TOML")
    p.add_argument("--out", metavar="DIR", help="sweep folder (created, or resumed if it holds this spec's sweep)")
    p.add_argument("--workers", type=int, default=1, help="local worker processes (0: in this process)")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="submit to a running dask.distributed scheduler (e.g. tcp://host:8786, or tls://host:8786 "
                        "with --tls-* or Dask's TLS configuration) instead")
    from .executors import add_tls_options

    add_tls_options(p)
    p.add_argument("--status", metavar="DIR", default=None, help="print done/failed/remaining of a sweep folder")
    p.add_argument("--csv", metavar="PATH", nargs="?", const="", default=None,
                   help="also write the table as CSV, to PATH or without one to DIR/results.csv (default: no CSV)")
    p.add_argument("--retry-failed", action="store_true", help="compute again the points recorded as failed")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (default: a bar over the points "
                                                              "when stderr is a terminal)")
    p.add_argument("--json", action="store_true", help="--status as JSON")
    p.set_defaults(func=_run_sweep)


def _run_plot(args) -> int:
    from .plot import parse_where, plot_sweep

    d = Path(args.dir)
    if (d / "design.json").is_file() and not (d / "sweep.json").is_file():  # a design folder, not a sweep's
        have = sorted(str(p) for p in [*(d / "plots").glob("*.png"), d / "front.html"] if p.is_file())
        print(f"{d} is a design folder (oscsim design): its figures are {', '.join(have) or 'not written yet'}; to "
              f"draw them again run `oscsim design SPEC --out {d}` with the spec it was run with ({d / 'spec.toml'} "
              "holds its text): it resumes the study, runs no finished trial again and rewrites the plots and "
              "front.html")
        return 0 if have else 2

    files = plot_sweep(args.dir, args.out, metrics=args.metric or None, where=parse_where(args.where),
                       progress=None if not args.no_progress else False)
    print(f"wrote {len(files)} files to {files[0].parent if files else args.out}")
    return 0


def register_plot(subparsers) -> None:
    p = subparsers.add_parser("plot", help="plots of a sweep: metrics vs parameters, heatmaps, Pareto front",
                              description="Each metric against each swept parameter (band: spread over seeds), "
                                          "heatmaps over pairs of parameters and the Pareto front of BPC loss vs chip "
                                          "energy per token, as PNG and SVG.")
    p.add_argument("dir", metavar="DIR", help="sweep folder")
    p.add_argument("--out", default=None, help="folder for the figures (default: DIR/plots)")
    p.add_argument("--metric", action="append", help="metric column to plot, repeatable (default: BPC loss, chip "
                                                     "BPC, mean layer error, chip energy per token)")
    p.add_argument("--where", action="append", metavar="FIELD=VALUE",
                   help="plot only points with this value of a swept field (repeatable), e.g. coupling.spread=0.02")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (default: a bar over the figures "
                                                              "when stderr is a terminal)")
    p.set_defaults(func=_run_plot)
