"""Where a sweep's points run: local worker processes (kept across calls: :class:`LocalWorkers`), a
``dask.distributed`` cluster, or the calling process (:func:`run_tasks`).

Every worker runs one point at a time on one thread (Numba, torch, the BLAS), so W workers on W cores never run
more than W busy threads; a point's numbers do not depend on the executor.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import functools
import multiprocessing
import os
import signal
import sys

from .point import _error_row, compute_point

__all__ = ["LocalWorkers", "run_tasks", "DASK_WORKER_ENV", "dask_cluster_options", "dask_security",
           "add_tls_options", "security_from_args"]

_MAX_POOL_RESTARTS = 3  # local pool: a worker that dies (OOM, kill) is replaced this many times per run


# A Dask worker process per core, each running one point at a time on one thread: the engine's threads
# (Numba's pool, sized from NUMBA_NUM_THREADS at import), torch's and the BLAS's pinned to one, so W workers
# on W cores never run more than W busy threads (measured, BENCHMARKS.md "Sweeps and design").
DASK_WORKER_ENV = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                   "OPENBLAS_NUM_THREADS": "1"}
# The native thread pools a worker's libraries size from the environment when they load: set in the main
# process's environment while it spawns workers (a spawned child's environment is copied at its start), because
# a child loads NumPy, and with it OpenBLAS, while it unpickles the initializer, before the initializer runs.
# Set there, as they were, OpenBLAS started one thread per core in every worker: on 2 cores two workers' BLAS
# threads spun against each other (50 products of 400 x 400 in 1.19 s instead of 0.11 s; design trials ran
# 1.5x longer two at a time). Numba is not loaded before the initializer, which pins it (its variable must not
# change in a main process whose Numba threads have started).
_SPAWN_ENV = {k: v for k, v in DASK_WORKER_ENV.items() if k != "NUMBA_NUM_THREADS"}


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

    def start(self, checkpoint: str | None = None) -> None:
        """Start the workers now, each importing what a point needs and loading ``checkpoint`` into its cache
        (:func:`warm_up`), so that their start-up overlaps the caller's own preparation (a design study loads
        its model, probes its space and opens its storage first: 2-3 s that the workers' 2 s of imports
        otherwise followed). The points submitted next queue behind the warm-ups; a warm-up that fails is
        ignored (the point that needs the same thing reports it)."""
        for _ in range(self.workers):
            self.submit(warm_up, checkpoint)

    def submit(self, fn, *args) -> cf.Future:
        """``executor().submit(fn, *args)``, with the worker environment (:data:`_SPAWN_ENV`) in place for the
        worker processes a submit starts."""
        ex = self.executor()
        with _spawn_env():
            return ex.submit(fn, *args)

    def pids(self) -> list[int]:
        """The process ids of the workers started so far (none before the first submit)."""
        return sorted(_processes(self._pool)) if self._pool is not None else []

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


def warm_up(checkpoint: str | None = None) -> None:
    """In a worker: import what :func:`compute_point` runs (torch, Numba, the compiler, the simulation) and load
    ``checkpoint`` into the point cache. Returns None whatever happens: a failure is the points' to report."""
    try:
        from ..compiler import build  # noqa: F401
        from ..simulation import report  # noqa: F401
        from . import point

        if checkpoint is not None:
            point.cached_model(checkpoint)
    except Exception:  # noqa: BLE001 - see the docstring
        pass


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
    procs = list(_processes(pool).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=10)




def _processes(pool) -> dict:
    """{pid: process} of a ProcessPoolExecutor (its own table: no public handle before Python 3.14)."""
    return dict(getattr(pool, "_processes", None) or {})


def dask_security(ca_file: str | None = None, cert: str | None = None, key: str | None = None):
    """The ``distributed.Security`` of a client of a ``tls://`` scheduler.

    Parameters
    ----------
    ca_file, cert, key : str, optional
        PEM files: the certificate authority that signed the cluster's certificates, this client's certificate
        and its private key (``key`` may be omitted when ``cert`` holds both). None for all three: Dask's own
        configuration (``distributed.comm.tls.ca-file``, ``distributed.comm.tls.client.cert`` and ``.key``, set
        in ``~/.config/dask/*.yaml`` or as ``DASK_DISTRIBUTED__COMM__TLS__CA_FILE=...``).

    Returns
    -------
    distributed.Security
        With ``require_encryption`` on: the client refuses a plain ``tcp://`` address.
    """
    from distributed import Security

    given = {"ca_file": ca_file, "cert": cert, "key": key}
    for name, path in given.items():
        if path is not None and not os.path.isfile(path):
            raise FileNotFoundError(f"--tls-{name.replace('_', '-')}: {path} is not a file")
    if ca_file is None and cert is None and key is None:
        return Security(require_encryption=True)
    if ca_file is None or cert is None:
        raise ValueError("TLS needs --tls-ca-file and --tls-cert (and --tls-key unless the certificate holds the key)")
    return Security(tls_ca_file=ca_file, tls_client_cert=cert, tls_client_key=key, require_encryption=True)


def add_tls_options(p) -> None:
    """``--tls-ca-file``, ``--tls-cert``, ``--tls-key`` on a command's parser: the files of a secured Dask
    cluster (docs/sweeps.md, "A secured cluster")."""
    p.add_argument("--tls-ca-file", metavar="PEM", default=None,
                   help="with --scheduler tls://...: the certificate authority of the cluster (default: Dask's "
                        "configuration, distributed.comm.tls.ca-file)")
    p.add_argument("--tls-cert", metavar="PEM", default=None, help="this client's certificate (default: Dask's "
                                                                    "distributed.comm.tls.client.cert)")
    p.add_argument("--tls-key", metavar="PEM", default=None, help="this client's private key, unless --tls-cert "
                                                                   "holds it (default: Dask's configuration)")


def security_from_args(args):
    """The ``distributed.Security`` of ``--tls-ca-file/--tls-cert/--tls-key`` (None when none is given: a
    ``tls://`` scheduler then uses Dask's configuration)."""
    if args.tls_ca_file is None and args.tls_cert is None and args.tls_key is None:
        return None
    if not args.scheduler:
        raise ValueError("--tls-ca-file, --tls-cert and --tls-key go with --scheduler tls://HOST:PORT")
    if not str(args.scheduler).startswith("tls://"):
        raise ValueError(f"--tls-* options need a tls:// scheduler address, got {args.scheduler}")
    return dask_security(args.tls_ca_file, args.tls_cert, args.tls_key)


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


def _run_dask(todo, scheduler, sink, compute=compute_point, security=None):
    from distributed import Client, as_completed

    if security is None and str(scheduler).startswith("tls://"):
        security = dask_security()  # Dask's configuration
    client = Client(scheduler, timeout="30s", set_as_default=False, security=security)
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
              pool: LocalWorkers | None = None, security=None) -> None:
    """Compute the points ``tasks`` (:func:`compute_point`'s dicts) with ``compute`` (a picklable ``task -> row``,
    default :func:`compute_point`) and hand each row to ``sink`` as it finishes: on the Dask scheduler at
    ``scheduler``, else on ``workers`` local processes (0: in this process). A worker that dies is replaced and
    its points recomputed; the rows do not depend on the executor. ``pool``: local workers kept across calls
    (:class:`LocalWorkers`, used instead of new processes when given; ``workers`` is then its size).
    ``security``: the ``distributed.Security`` of a ``tls://`` scheduler (default for one: Dask's configuration,
    :func:`dask_security`)."""
    if not tasks:
        return
    if scheduler:
        _run_dask(tasks, scheduler, sink, compute, security)
    elif pool is not None:
        _run_local(tasks, pool.workers, sink, compute, pool)
    elif workers == 0:
        for t in tasks:
            sink(compute(t))
    else:
        _run_local(tasks, min(workers, len(tasks)), sink, compute)
