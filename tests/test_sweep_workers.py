"""Sweep workers do not oversubscribe the cores (issue 22, item 5): a Dask worker process per core, one thread
each, the engine's threads pinned to one per point."""

import os

import numba
import pytest

from mapping.sweep import executors as run_mod


def test_dask_cluster_options_one_process_per_core_one_thread_pinned():
    opts = run_mod.dask_cluster_options(3)
    assert opts["n_workers"] == 3 and opts["threads_per_worker"] == 1 and opts["processes"] is True
    for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        assert opts["env"][var] == "1"
    assert run_mod.dask_cluster_options()["n_workers"] >= 1  # default: the CPUs this process may use
    with pytest.raises(ValueError, match="cores"):
        run_mod.dask_cluster_options(0)


def test_points_on_dask_run_the_engine_on_one_thread(monkeypatch):
    seen = []
    before = numba.get_num_threads()
    assert run_mod._compute_point_pinned({}, compute=lambda task: seen.append(numba.get_num_threads())
                                         or {"ok": 1}) == {"ok": 1}
    assert seen == [1] and numba.get_num_threads() == before


def test_run_dask_submits_the_pinned_point(monkeypatch):
    distributed = pytest.importorskip("distributed")
    submitted = []

    class Fut:
        def __init__(self, fn, task):
            self.fn, self.task = fn, task

        def result(self):
            return {"point_id": self.task["point_id"]}

        def release(self):
            pass

    class FakeClient:
        def __init__(self, *a, **k):
            pass

        def as_current(self):
            import contextlib

            return contextlib.nullcontext()

        def submit(self, fn, task, **kw):
            submitted.append(fn)
            return Fut(fn, task)

        def close(self):
            pass

    monkeypatch.setattr(distributed, "Client", FakeClient)
    monkeypatch.setattr(distributed, "as_completed", lambda futs: iter(futs))
    rows = []
    run_mod._run_dask([{"point_id": "a", "spec_hash": "h"}], "tcp://nowhere:1", rows.append)
    # the pinned wrapper around the sweep's (or a design search's) compute function
    (fn,) = submitted
    assert fn.func is run_mod._compute_point_pinned and fn.keywords == {"compute": run_mod.compute_point}
    assert rows == [{"point_id": "a"}]


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts the worker's threads in Linux's /proc")
def test_local_workers_start_with_one_blas_thread_and_leave_the_main_environment_alone(monkeypatch):
    """A spawned worker loads NumPy (OpenBLAS) before its initializer runs; pinned only there, OpenBLAS started a
    thread per core in every worker and two workers' BLAS threads spun against each other on 2 cores. The pins
    are in the environment the worker starts with; the main process's own variables are as they were."""
    for var in run_mod._SPAWN_ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # the user's value in the main process: kept there
    with run_mod.LocalWorkers(1) as pool:
        threads = pool.submit(os.listdir, "/proc/self/task").result()  # NumPy is loaded by now (the initializer)
        env = {var: pool.submit(os.getenv, var).result() for var in run_mod._SPAWN_ENV}
        numba_threads = pool.submit(os.getenv, "NUMBA_NUM_THREADS").result()
    assert len(threads) == 1, threads
    assert env == {var: "1" for var in run_mod._SPAWN_ENV} and numba_threads == "1"
    assert os.environ["OMP_NUM_THREADS"] == "3" and "OPENBLAS_NUM_THREADS" not in os.environ


def test_started_workers_import_and_load_the_model_before_the_first_point():
    """``LocalWorkers.start`` (a design study calls it before loading its own model and probing its space) spawns
    every worker at once, and a warm-up loads the checkpoint into the point cache, where the points find it."""
    probe = "('model', 'kuramoto-tiny') in __import__('mapping.sweep.point', fromlist=['_CACHE'])._CACHE"
    with run_mod.LocalWorkers(2) as pool:
        pool.start("kuramoto-tiny")
        assert len(pool.pids()) == 2  # spawned now, not when the first point is submitted
        seen = [pool.submit(eval, probe).result(timeout=120) for _ in range(4)]
    assert True in seen
    # a warm-up that cannot load its checkpoint is ignored: the points report what is wrong
    assert run_mod.warm_up("no-such-checkpoint") is None
