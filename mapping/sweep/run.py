"""Run a sweep: points on local worker processes or a dask.distributed cluster, one resumable parquet table.

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

import concurrent.futures as cf
import contextlib
import functools
import json
import math
import multiprocessing
import os
import signal
import sys
import time
import traceback
from pathlib import Path

from .spec import NOISE_SEED, SweepSpec

__all__ = ["check_inputs", "compute_point", "run_sweep", "run_tasks", "sweep_status", "load_results", "export_csv",
           "SweepDirError", "atomic_write_bytes", "write_df", "DASK_WORKER_ENV", "dask_cluster_options", "LocalWorkers"]

RESULTS = "results.parquet"
META = "sweep.json"
PARTS = "parts"
COMPACT_EVERY_S = 2.0  # results.parquet rewritten at most this often while points finish (and at the end)
_MAX_POOL_RESTARTS = 3  # local pool: a worker that dies (OOM, kill) is replaced this many times per run


class SweepDirError(ValueError):
    """A sweep folder that cannot be used for this spec (made by another spec, or damaged)."""


# --------------------------------------------------------------------------------------- worker side
_CACHE: dict = {}  # per process: models and token windows, loaded once per worker


def _model(checkpoint: str):
    if ("model", checkpoint) not in _CACHE:
        from ..model_io import load_model, model_fingerprint

        model, _ = load_model(checkpoint)
        model.eval()
        _CACHE[("model", checkpoint)] = (model, model_fingerprint(model))
    return _CACHE[("model", checkpoint)]


def _tokens(model, tokens: dict):
    key = ("tokens", json.dumps(tokens, sort_keys=True), int(model.config.seq_len))
    if key not in _CACHE:
        from oscsim.data import eval_windows, load_shakespeare

        T = tokens["seq_len"] or int(model.config.seq_len)
        if T > int(model.config.seq_len):
            raise ValueError(f"tokens.seq_len = {T} is longer than the model's seq_len ({model.config.seq_len})")
        data = load_shakespeare().split(tokens["split"])
        x, y = eval_windows(data, T, max_windows=tokens["windows"])
        if x.shape[0] < tokens["windows"]:
            raise ValueError(f"tokens.windows = {tokens['windows']}: the {tokens['split']} split holds only "
                             f"{x.shape[0]} windows of {T}")
        _CACHE[key] = (x, y)
    return _CACHE[key]


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
    T = tok.seq_len or seq_len
    if T > seq_len:
        raise ValueError(f"tokens.seq_len = {T} is longer than the model's seq_len ({seq_len}); at most {seq_len}")
    cap = max_windows(T, tok.split)
    if tok.windows > cap:
        raise ValueError(f"tokens.windows = {tok.windows}: the {tok.split} split holds only {cap} windows of {T}")


def _mean(xs):
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    return float(sum(xs) / len(xs)) if xs else math.nan


def _metrics(rep, groups) -> dict:
    """The table's metric columns of one point from its :class:`mapping.simulation.SimulationReport`."""
    # the Kuramoto settle window; SSA chips have none (their windows are config.ssa's), so NaN in the table
    out = {"kappa_tau": math.nan if rep.kappa_tau is None else float(rep.kappa_tau)}
    if "bpc" in groups:
        out["bpc_chip"] = float(rep.bpc_chip)
        out["bpc_closed_form"] = float(rep.bpc_closed_form)
        out["bpc_difference"] = out["bpc_chip"] - out["bpc_closed_form"]
    if "fidelity" in groups:
        whole = []
        for i, L in enumerate(rep.fidelity):
            for k, v in L.items():  # whole-layer scalars, then per-head lists as means over heads
                if isinstance(v, list):
                    out[f"layer{i}_{k}_head_mean"] = _mean(v)
                else:
                    out[f"layer{i}_{k.removeprefix('layer_')}"] = math.nan if v is None else float(v)
            whole.append(L.get("layer_rel_error"))
        out["mean_layer_rel_error"] = _mean(whole)
    if "energy" in groups:
        en = rep.energy
        out["energy_chip_j_per_token"] = float(en["energy_per_token_chip_j"])
        out["energy_gpu_j_per_token"] = float(en["energy_per_token_gpu_j"])
        for k, v in en["breakdown"].items():
            out[f"energy_{k}"] = float(v)
    if "wall_time" in groups:
        out["chip_wall_s"] = float(rep.chip_wall_s)
    return out


def compute_point(task: dict, metrics_of=None) -> dict:
    """Compute one sweep point in this process and return its table row (never raises for a point error).

    Parameters
    ----------
    task : dict
        ``point_id``, ``point_index``, ``params`` (swept values), ``config`` (the full nested config dict),
        ``noise_seed``, ``checkpoint``, ``tokens`` (TokenSpec as a dict), ``metrics``, ``spec_hash``.
    metrics_of : callable, optional
        ``metrics_of(report) -> dict`` of the point's :class:`~mapping.simulation.SimulationReport` instead of
        the sweep's metric groups (a top-level function, so that it travels to worker processes; the design
        search passes :func:`mapping.design.evaluate.trial_metrics`).

    Returns
    -------
    dict
        One row: ids, the swept parameters, ``status`` ('ok' or 'error'), ``error``, the metrics, the model
        fingerprint, the package version and the spec hash.
    """
    from oscsim import __version__

    t0 = time.perf_counter()
    row = {"point_id": task["point_id"], "point_index": int(task["point_index"]), **task["params"],
           "status": "ok", "error": None}
    import torch

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)  # one thread per point: reductions in one fixed order, workers do not compete
        from ..compiler.build import compile as compile_chip
        from ..config import config_from_dict
        from ..simulation.report import simulate_report

        model, fp = _model(task["checkpoint"])
        row["model_fingerprint"] = fp
        cfg = config_from_dict(task["config"])
        x, y = _tokens(model, task["tokens"])
        chip = compile_chip(model, cfg, checkpoint=task["checkpoint"])
        rep = simulate_report(chip, x, y, seed=int(task["noise_seed"]), progress=False,
                              energy="energy" in task["metrics"], measure_gpu=False, warn=False)
        row.update(_metrics(rep, task["metrics"]) if metrics_of is None else metrics_of(rep))
    except Exception as exc:  # a failing point is a result: record it, the sweep goes on
        row["status"] = "error"
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        row["error"] = f"{type(exc).__name__}: {exc} | {''.join(tb[-3:]).strip()[-1500:]}"
    finally:
        torch.set_num_threads(threads)  # in-process runs (workers=0) leave the caller's setting alone
    if "wall_time" in task["metrics"]:
        row["wall_s"] = time.perf_counter() - t0
    row["config_json"] = json.dumps(task["config"], sort_keys=True)
    row["oscsim_version"] = __version__
    row["spec_hash"] = task["spec_hash"]
    return row


def _error_row(task: dict, message: str) -> dict:
    from oscsim import __version__

    return {"point_id": task["point_id"], "point_index": int(task["point_index"]), **task["params"],
            "status": "error", "error": message, "config_json": json.dumps(task["config"], sort_keys=True),
            "oscsim_version": __version__, "spec_hash": task["spec_hash"]}


# The native thread pools a worker's libraries size from the environment when they load: set in the main
# process's environment while it spawns workers (a spawned child's environment is copied at its start), because
# a child loads NumPy, and with it OpenBLAS, while it unpickles the initializer, before the initializer runs.
# Set there, as they were, OpenBLAS started one thread per core in every worker: on 2 cores two workers' BLAS
# threads spun against each other (50 products of 400 x 400 in 1.19 s instead of 0.11 s; design trials ran
# 1.5x longer two at a time). Numba is not loaded before the initializer, which pins it (its variable must not
# change in a main process whose Numba threads have started).
_SPAWN_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@contextlib.contextmanager
def _spawn_env():
    """:data:`_SPAWN_ENV` in ``os.environ`` while workers are started, the main process's own values restored
    after (its libraries read them when they loaded, so they do not change here)."""
    saved = {k: os.environ.get(k) for k in _SPAWN_ENV}
    os.environ.update(_SPAWN_ENV)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _init_worker() -> None:
    # Numba's thread pool is sized from the environment at its first import: keep each worker to one thread.
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    # Ctrl-C reaches the whole process group: the main process alone decides (it ends the workers at once,
    # `_stop_now`), so a worker neither prints a KeyboardInterrupt traceback nor finishes its point first
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # tqdm's default lock is a multiprocessing lock (a named semaphore): a worker ended by `_stop_now` would
    # leave it behind ("resource_tracker: ... leaked semaphore"); a worker draws no bar, a thread lock will do
    import threading

    from tqdm import tqdm

    tqdm.set_lock(threading.RLock())


# ------------------------------------------------------------------------------------------ the folder
def atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


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
        return json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise SweepDirError(f"{p} is damaged ({exc}); start the sweep in a new folder") from None


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


# ----------------------------------------------------------------------------------------- executors
class LocalWorkers:
    """Local worker processes (spawned, one thread each) kept across :func:`run_tasks` calls.

    A design study evaluates its trials a generation at a time; a new pool per generation made every generation
    pay the workers' start-up (spawn, importing torch and Numba, loading the model and the first calls' kernels:
    2.5-3.5 s per worker here), as much as a whole generation of 8 small trials, so a second worker bought
    nothing. Used as a context manager; the workers are ended on exit (at once: they are idle or their points
    are abandoned). A pool broken by a dead worker is replaced on the next use.

    Parameters
    ----------
    workers : int
        Worker processes (>= 1).
    """

    def __init__(self, workers: int):
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
        self.workers = workers
        self._pool = None

    def executor(self) -> cf.ProcessPoolExecutor:
        if self._pool is None:
            ctx = multiprocessing.get_context("spawn")  # no fork of a process holding torch/numba threads
            self._pool = cf.ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx, initializer=_init_worker)
        return self._pool

    def submit(self, fn, *args) -> cf.Future:
        """``executor().submit(fn, *args)``, with the worker environment (:data:`_SPAWN_ENV`) in place for the
        worker processes a submit starts."""
        ex = self.executor()
        with _spawn_env():
            return ex.submit(fn, *args)

    def discard(self) -> None:
        """Drop a broken pool (its workers are gone); the next use starts a new one."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def close(self) -> None:
        """End the workers now (:func:`_stop_now`)."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            _stop_now(pool)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _run_local(todo, workers, sink, compute=compute_point, pool: LocalWorkers | None = None):
    own = pool is None
    if own:
        pool = LocalWorkers(workers)
    restarts = 0
    pending = {t["point_id"]: t for t in todo}
    try:
        while pending:
            futs = {pool.submit(compute, t): pid for pid, t in pending.items()}
            broken = False
            for fut in cf.as_completed(futs):
                try:
                    row = fut.result()
                except cf.process.BrokenProcessPool:
                    broken = True
                    break
                pending.pop(futs[fut], None)
                sink(row)
            if broken:
                pool.discard()
                restarts += 1
                if restarts > _MAX_POOL_RESTARTS:
                    raise RuntimeError(f"worker processes died {restarts} times (killed, or out of memory); "
                                       f"{len(pending)} points remain; finished points are saved: rerun to resume")
                print(f"oscsim sweep: a worker process died; restarting the pool for the {len(pending)} remaining "
                      "points", file=sys.stderr)
    except BaseException:  # Ctrl-C (or an error in the sink): stop now, the finished points are on disk
        pool.close()
        raise
    if own:  # every point is back: end the idle workers now, not after their interpreter teardown
        pool.close()


def _stop_now(pool) -> None:
    """Cancel the points not started and end the worker processes at once, without waiting for the points
    being computed (an interrupted sweep exits in about a second instead of after the longest running point;
    a finished point is written atomically by the main process, so nothing half-written is left).

    Also how a run that got every point back ends its idle workers: a worker's normal exit spends 0.8-0.9 s in
    the interpreter's teardown with torch and Numba loaded (measured here, after its last atexit handler), which
    was 4-6 % of the 64-point sweep's wall time on one or two workers. A worker writes nothing itself (the
    main process writes every row; Numba's cache files are written by rename while a point compiles), so ending
    an idle one loses nothing."""
    procs = list((getattr(pool, "_processes", None) or {}).values())  # no public handle before Python 3.14
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=10)


# A Dask worker process per core, each running one point at a time on one thread: the engine's threads
# (Numba's pool, sized from NUMBA_NUM_THREADS at import), torch's and the BLAS's pinned to one, so W workers
# on W cores never run more than W busy threads (measured, BENCHMARKS.md "Sweeps and workers").
DASK_WORKER_ENV = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                   "OPENBLAS_NUM_THREADS": "1"}


def dask_cluster_options(cores: int | None = None) -> dict:
    """Keyword arguments of ``distributed.LocalCluster`` for a sweep: one worker process per core (``cores``,
    default the CPUs this process may run on), one thread per worker, the thread pins of
    :data:`DASK_WORKER_ENV` in each worker's environment. On a cluster started by hand the same is
    ``dask worker --nworkers N --nthreads 1`` with these variables set; :func:`compute_point` run by
    ``run_sweep(scheduler=...)`` pins the engine to one thread per point in any case."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    n = cores
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"cores must be an integer >= 1, got {cores!r}")
    return {"n_workers": n, "threads_per_worker": 1, "processes": True, "env": dict(DASK_WORKER_ENV)}


def _compute_point_pinned(task: dict, compute=compute_point) -> dict:
    """``compute(task)`` (default :func:`compute_point`) with the engine on one thread (a Dask worker's thread;
    restored after)."""
    import numba

    threads = numba.get_num_threads()
    numba.set_num_threads(1)  # per calling thread: the engine sizes its pool from numba.get_num_threads()
    try:
        return compute(task)
    finally:
        numba.set_num_threads(threads)


def _run_dask(todo, scheduler, sink, compute=compute_point):
    from distributed import Client, as_completed

    client = Client(scheduler, timeout="30s", set_as_default=False)
    try:
        with client.as_current():  # as_completed finds the client through the "current" one
            futs = {client.submit(functools.partial(_compute_point_pinned, compute=compute), t,
                                  key=f"oscsim-sweep-{t['spec_hash']}-{t['point_id']}",
                                  pure=False): t for t in todo}
            for fut in as_completed(list(futs)):
                t = futs[fut]
                try:
                    row = fut.result()
                except Exception as exc:  # e.g. KilledWorker: the point crashed several workers in turn
                    row = _error_row(t, f"lost on the cluster: {type(exc).__name__}: {exc}")
                sink(row)
                fut.release()
    finally:
        client.close()


def run_tasks(tasks: list, workers: int, scheduler: str | None, sink, compute=compute_point,
              pool: LocalWorkers | None = None) -> None:
    """Compute the points ``tasks`` (:func:`compute_point`'s dicts) with ``compute`` (a picklable ``task -> row``,
    default :func:`compute_point`) and hand each row to ``sink`` as it finishes: on the Dask scheduler at
    ``scheduler``, else on ``workers`` local processes (0: in this process). A worker that dies is replaced and
    its points recomputed; the rows do not depend on the executor. ``pool``: local workers kept across calls
    (:class:`LocalWorkers`, used instead of new processes when given; ``workers`` is then its size)."""
    if not tasks:
        return
    if scheduler:
        _run_dask(tasks, scheduler, sink, compute)
    elif pool is not None:
        _run_local(tasks, pool.workers, sink, compute, pool)
    elif workers == 0:
        for t in tasks:
            sink(compute(t))
    else:
        _run_local(tasks, min(workers, len(tasks)), sink, compute)


def run_sweep(spec: SweepSpec, out: str | Path, *, workers: int = 1, scheduler: str | None = None,
              progress: bool | None = None, retry_failed: bool = False, spec_text: str | None = None):
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
        Address of a running ``dask.distributed`` scheduler (``tcp://host:8786``); the points are submitted
        to it (its workers must have this package installed).
    progress : bool, optional
        tqdm bar over points with an ETA on stderr (default: when stderr is a terminal).
    retry_failed : bool
        Compute again the points recorded with ``status = 'error'``.
    spec_text : str, optional
        The spec file's text, copied to ``out/spec.toml`` when the folder is created.

    Returns
    -------
    pandas.DataFrame
        The table (also in ``out/results.parquet``).
    """
    import pandas as pd
    from tqdm import tqdm  # the plain bar: tqdm.auto warns in notebooks without ipywidgets

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ValueError(f"workers must be an integer >= 0 (0: in this process), got {workers!r}")
    check_inputs(spec)
    out = Path(out)
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
        write_df(pd.DataFrame([row]), path)
        parts[pid] = _read_part(path)  # the table is built from what is on disk, fresh or resumed alike
        if time.monotonic() - last_compact[0] >= COMPACT_EVERY_S:
            _compact(out, parts, order)
            last_compact[0] = time.monotonic()
        bar.update(1)
        if row["status"] != "ok":
            bar.write(f"oscsim sweep: point {row['point_index']} ({pid}) failed: {str(row['error'])[:200]}")

    try:
        try:
            run_tasks(tasks, workers, scheduler, sink)
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
    # the parts just compacted, in memory: the table load_results(out) reads back from them (64 parquet reads
    # saved at the end of a run, 0.15-0.2 s with nothing else to do)
    return _table(parts, order).to_pandas() if parts else load_results(out)
