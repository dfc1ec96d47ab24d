"""Run a sweep into one resumable parquet table (the points run where :mod:`mapping.sweep.executors` puts them:
local worker processes, a dask.distributed cluster, or this process).

Layout of a sweep folder ``DIR``:

- ``sweep.json``: the spec hash, the ordered point ids, the swept fields, the package version (written once;
  a later run with a different spec is refused);
- ``spec.toml``: a copy of the spec file;
- ``parts/<point_id>.parquet``: one row per finished point, written to a temporary name and renamed
  (``os.replace`` is atomic), so a killed run leaves either a whole part or a temporary file that readers
  skip;
- ``results.parquet``: the tidy table (a row per finished point in sweep order), rewritten atomically
  from the parts at most every :data:`COMPACT_EVERY_S` seconds while points finish, and once at the end.
  The parts are the record: :func:`load_results` builds the table from them, so a run stopped between two
  rewrites loses nothing (rewriting the whole table after every point cost the main process 18 ms per point
  of the 64-point sweep's 0.3 s points, CPU taken from the workers on a machine with one core per worker).

A point is computed from its own parameters and seeds only (:func:`compute_point`: compile the chip from the
point's config, :func:`mapping.run` with the point's noise seed, torch on one thread), so the table is the
same whichever executor and worker count produced it (the wall-time columns excepted). A point that raises
is recorded with ``status = 'error'`` and its message, and the sweep goes on.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path

# the executors' and the point's public names stay importable from here, where they were
from .executors import DASK_WORKER_ENV, LocalWorkers, dask_cluster_options, run_tasks  # noqa: F401
from .point import compute_point  # noqa: F401
from .spec import NOISE_SEED, SweepSpec

__all__ = ["check_inputs", "check_out", "atomic_path", "pid_alive", "remove_stale_temporaries", "compute_point", "run_sweep", "run_tasks", "sweep_status", "load_results", "export_csv",
           "SweepDirError", "atomic_write_bytes", "write_df", "DASK_WORKER_ENV", "dask_cluster_options", "LocalWorkers"]

RESULTS = "results.parquet"
META = "sweep.json"
PARTS = "parts"
COMPACT_EVERY_S = 2.0  # results.parquet rewritten at most this often while points finish (and at the end)


class SweepDirError(ValueError):
    """A sweep folder that cannot be used for this spec (made by another spec, or damaged)."""


def check_inputs(spec: SweepSpec) -> None:
    """Refuse, before any point runs, what would fail every point: a checkpoint that is not there or that a chip
    cannot run, a token window longer than the model's, more windows than the split holds. Reads only the
    checkpoint's JSON and the corpus index (:mod:`mapping.preflight`); the messages name the spec's keys."""
    from ..preflight import max_windows, model_config

    try:
        seq_len = int(model_config(spec.checkpoint)["seq_len"])
    except (FileNotFoundError, ValueError) as exc:
        raise type(exc)(f"checkpoint: {exc}") from None
    tok = spec.tokens
    T = tok.window(spec.base.context_tokens or seq_len)  # a swept context_tokens: each point's windows its own
    cap = max_windows(T, tok.split)
    if tok.windows > cap:
        raise ValueError(f"tokens.windows = {tok.windows}: the {tok.split} split holds only {cap} windows of {T}")


def check_out(out: str | Path, what: str = "--out") -> None:
    """Refuse, before any work, an output folder this process cannot write into: a file in its place, a folder
    (or the nearest existing parent of one to be made) on a read-only file system or without write permission.
    Tried by making and removing a temporary file there, so it is also right for root and read-only mounts."""
    import errno
    import tempfile

    out = Path(out)
    probe = out
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise ValueError(f"{what} {out}: {probe} is a file, not a folder")
    try:
        fd, name = tempfile.mkstemp(prefix=".oscsim-probe-", suffix=".tmp", dir=probe)
    except OSError as exc:
        cause = ("read-only file system" if exc.errno == errno.EROFS else
                 "permission denied" if exc.errno in (errno.EACCES, errno.EPERM) else exc.strerror)
        raise ValueError(f"{what} {out}: cannot write in {probe} ({cause})") from None
    os.close(fd)
    os.unlink(name)


# ------------------------------------------------------------------------------------------ the folder
TMP_SUFFIX = ".tmp"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder renamed over it (``os.replace`` is
    atomic): a reader, or a run stopped in the middle, sees the old file or the new one, never a part. The
    temporary file is removed if the write fails (a full disk)."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())


@contextlib.contextmanager
def atomic_path(path: str | Path):
    """A temporary name beside ``path`` for a writer that takes a file name (``savefig``, ``write_html``),
    renamed to ``path`` when the block ends without an error and removed otherwise::

        with atomic_path(out / "front.html") as tmp:
            fig.write_html(tmp)
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}{TMP_SUFFIX}")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def remove_stale_temporaries(folder: str | Path) -> int:
    """Remove the temporary files of :func:`atomic_path` under ``folder`` left by processes that are gone (a run
    killed while writing); returns how many. A file of a live process (a writer at work) is left alone."""
    n = 0
    for p in Path(folder).rglob(f".*{TMP_SUFFIX}"):
        pid = p.name.removesuffix(TMP_SUFFIX).rpartition(".")[2]
        if pid.isdigit() and int(pid) != os.getpid() and pid_alive(int(pid)):
            continue
        with contextlib.suppress(OSError):
            p.unlink()
            n += 1
    return n


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine (signal 0; a process of another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def write_df(df, path: Path) -> None:
    import io

    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    atomic_write_bytes(path, buf.getvalue())


def _read_meta(out: Path) -> dict:
    p = out / META
    if not p.is_file():
        raise SweepDirError(f"{out} is not a sweep folder (no {META}); run `oscsim sweep SPEC --out {out}` first")
    try:
        meta = json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SweepDirError(f"{p} is damaged ({exc}); start the sweep in a new folder") from None
    missing = [k for k in ("spec_hash", "point_ids", "n_points") if not isinstance(meta, dict) or k not in meta]
    if missing:
        raise SweepDirError(f"{p} is damaged (no {', '.join(missing)}); start the sweep in a new folder")
    return meta


def _read_parts(out: Path, valid_ids) -> dict:
    """{point_id: one-row DataFrame} of the finished points. Temporary files (a write cut short) are skipped;
    a part that cannot be read is ignored (its point is computed again)."""
    parts = {}
    d = out / PARTS
    if not d.is_dir():
        return parts
    for p in sorted(d.glob("*.parquet")):
        pid = p.stem
        if pid not in valid_ids:
            continue
        try:
            t = _read_part(p)
        except Exception as exc:
            print(f"oscsim sweep: ignoring unreadable part {p.name} ({type(exc).__name__}); it is recomputed",
                  file=sys.stderr)
            continue
        if t.num_rows == 1 and t.column("point_id")[0].as_py() == pid:
            parts[pid] = t
    return parts


def _read_part(path: Path):
    import pyarrow.parquet as pq

    return pq.read_table(path).replace_schema_metadata(None)


def _part_table(row: dict):
    """One point's row as the one-row arrow table its part file holds, the table :func:`_read_part` reads back.

    Built by arrow from the row itself, with the types a pandas round trip gave (text as ``large_string``, a
    None alone in its column as ``null``); through pandas (``DataFrame([row]).to_parquet``, then reading the
    file back) a part cost the main process 10 ms of CPU, which on a machine with one core per worker was taken
    from the workers (1.4 ms this way)."""
    import pyarrow as pa

    t = pa.Table.from_pylist([row])
    for i, f in enumerate(t.schema):
        if pa.types.is_string(f.type):
            t = t.set_column(i, f.name, t.column(i).cast(pa.large_string()))
    return t


def write_part(row: dict, path: Path):
    """Write ``row`` to the part file ``path`` (atomic, :func:`atomic_write_bytes`); returns its table."""
    import io

    import pyarrow.parquet as pq

    t = _part_table(row)
    buf = io.BytesIO()
    pq.write_table(t, buf)
    atomic_write_bytes(path, buf.getvalue())
    return t


def _table(parts: dict, order: dict):
    """The parts in sweep order as one arrow table. Column types are unified by arrow's permissive promotion
    (a parameter that is None in one row and 4 in another is an int64 column with a null), so the table
    depends only on the rows, not on the order in which they finished."""
    import pyarrow as pa

    return pa.concat_tables([parts[pid] for pid in sorted(parts, key=order.__getitem__)],
                            promote_options="permissive")


def _compact(out: Path, parts: dict, order: dict) -> None:
    import io

    import pyarrow.parquet as pq

    if not parts:
        return
    buf = io.BytesIO()
    pq.write_table(_table(parts, order), buf)
    atomic_write_bytes(out / RESULTS, buf.getvalue())


def load_results(out: str | Path):
    """The sweep table (pandas DataFrame), one row per finished point in sweep order.

    Built from the part files, so it is complete even if the last rewrite of ``results.parquet`` was cut
    short."""
    import pandas as pd

    out = Path(out)
    meta = _read_meta(out)
    order = {pid: i for i, pid in enumerate(meta["point_ids"])}
    parts = _read_parts(out, order)
    if not parts:
        return pd.DataFrame(columns=["point_id", "point_index", "status"])
    return _table(parts, order).to_pandas()


def sweep_status(out: str | Path, table=None) -> dict:
    """Counts of a sweep folder: ``n_points``, ``done`` (ok), ``failed``, ``remaining``, with the spec hash.

    ``table``: the folder's table when the caller holds it (what :func:`run_sweep` returned), else it is read."""
    out = Path(out)
    meta = _read_meta(out)
    df = load_results(out) if table is None else table
    ok = int((df["status"] == "ok").sum()) if len(df) else 0
    failed = int((df["status"] == "error").sum()) if len(df) else 0
    n = int(meta["n_points"])
    return {"name": meta.get("name"), "spec_hash": meta["spec_hash"], "n_points": n, "done": ok, "failed": failed,
            "remaining": n - ok - failed, "folder": str(out)}


def export_csv(out: str | Path, path: str | Path | None = None) -> Path:
    """Write the sweep table as CSV (default ``DIR/results.csv``); returns the path."""
    out = Path(out)
    path = Path(path) if path else out / "results.csv"
    df = load_results(out)
    atomic_write_bytes(path, df.to_csv(index=False).encode())
    return path


def _prepare(spec: SweepSpec, out: Path, spec_text: str | None) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    (out / PARTS).mkdir(exist_ok=True)
    from oscsim import __version__

    if (out / META).is_file():
        meta = _read_meta(out)
        if meta.get("spec_hash") != spec.spec_hash:
            raise SweepDirError(f"{out} holds a sweep made by a different spec (hash {meta.get('spec_hash')}; this "
                                f"spec has {spec.spec_hash}); resume with the original spec or use a new --out")
        return meta
    meta = {"name": spec.name, "spec_hash": spec.spec_hash, "n_points": spec.n_points,
            "point_ids": [p.point_id for p in spec.points], "swept_fields": list(spec.swept_fields),
            "noise_seed_column": NOISE_SEED, "seed_columns": [NOISE_SEED] + (["mismatch_seed"] if
                                                                            spec.mismatch_seeds else []),
            "metrics": list(spec.metrics), "checkpoint": spec.checkpoint, "oscsim_version": __version__,
            "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if spec_text is not None:
        atomic_write_bytes(out / "spec.toml", spec_text.encode())
    atomic_write_bytes(out / META, json.dumps(meta, indent=1).encode())
    return meta


def _tasks(spec: SweepSpec) -> list:
    import dataclasses

    from ..config import config_to_dict

    tok = dataclasses.asdict(spec.tokens)
    return [{"point_id": p.point_id, "point_index": p.index, "params": p.params, "config": config_to_dict(p.config),
             "noise_seed": p.noise_seed, "checkpoint": spec.checkpoint, "tokens": tok, "metrics": list(spec.metrics),
             "spec_hash": spec.spec_hash} for p in spec.points]


def run_sweep(spec: SweepSpec, out: str | Path, *, workers: int = 1, scheduler: str | None = None,
              progress: bool | None = None, retry_failed: bool = False, spec_text: str | None = None,
              security=None):
    """Run (or resume) a sweep into the folder ``out`` and return its table.

    Parameters
    ----------
    spec : SweepSpec
        From :func:`mapping.sweep.load_spec`; every point is already validated.
    out : path
        Sweep folder. Created if needed; if it holds this spec's sweep, finished points are kept and only the
        others are computed; a folder of another spec is refused (:class:`SweepDirError`).
    workers : int
        Local worker processes (spawned); 0 computes the points in this process. Ignored with ``scheduler``.
    scheduler : str, optional
        Address of a running ``dask.distributed`` scheduler (``tcp://host:8786``, or ``tls://host:8786`` for a
        secured one); the points are submitted to it (its workers must have this package installed).
    progress : bool, optional
        tqdm bar over points with an ETA on stderr (default: when stderr is a terminal).
    retry_failed : bool
        Compute again the points recorded with ``status = 'error'``.
    spec_text : str, optional
        The spec file's text, copied to ``out/spec.toml`` when the folder is created.
    security : distributed.Security, optional
        The TLS settings of a ``tls://`` scheduler (:func:`mapping.sweep.executors.dask_security`, or
        ``Security.temporary()`` for a cluster made in this process); default: Dask's configuration.

    Returns
    -------
    pandas.DataFrame
        The table (also in ``out/results.parquet``).
    """
    from tqdm import tqdm  # the plain bar: tqdm.auto warns in notebooks without ipywidgets

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ValueError(f"workers must be an integer >= 0 (0: in this process), got {workers!r}")
    check_inputs(spec)
    out = Path(out)
    check_out(out)
    meta = _prepare(spec, out, spec_text)
    order = {pid: i for i, pid in enumerate(meta["point_ids"])}
    parts = _read_parts(out, order)
    if retry_failed:
        parts = {k: v for k, v in parts.items() if v.column("status")[0].as_py() == "ok"}
    tasks = [t for t in _tasks(spec) if t["point_id"] not in parts]
    if progress is None:
        progress = sys.stderr.isatty()
    bar = tqdm(total=spec.n_points, initial=len(parts), disable=not progress, desc=f"sweep {spec.name}",
               unit="point", file=sys.stderr, dynamic_ncols=True)

    last_compact = [time.monotonic()]

    def sink(row: dict) -> None:
        pid = row["point_id"]
        path = out / PARTS / f"{pid}.parquet"
        parts[pid] = write_part(row, path)  # the table a resumed run reads back from the file
        if time.monotonic() - last_compact[0] >= COMPACT_EVERY_S:
            _compact(out, parts, order)
            last_compact[0] = time.monotonic()
        bar.update(1)
        if row["status"] != "ok":
            bar.write(f"oscsim sweep: point {row['point_index']} ({pid}) failed: {str(row['error'])[:200]}")

    try:
        try:
            run_tasks(tasks, workers, scheduler, sink, security=security)
        except BaseException:  # stopped: the table still gets every point the parts hold
            with contextlib.suppress(Exception):
                _compact(out, parts, order)
            raise
    except KeyboardInterrupt:
        bar.close()
        saved = len(_read_parts(out, order))  # from the disk: a point written just before the interrupt counts
        print(f"oscsim sweep: {saved} of {spec.n_points} points are saved in {out} (rerun the same command to "
              "resume)", file=sys.stderr)
        raise
    finally:
        bar.close()
    _compact(out, parts, order)
    remove_stale_temporaries(out)  # a write cut short by an earlier kill: its temporary file goes now
    # the parts just compacted, in memory: the table load_results(out) reads back from them (64 parquet reads
    # saved at the end of a run, 0.15-0.2 s with nothing else to do)
    return _table(parts, order).to_pandas() if parts else load_results(out)
