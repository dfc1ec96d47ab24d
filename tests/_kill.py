"""The kill -9 harness of the sweep's and the design study's tests, written once.

- :func:`run_killed_at`: run a command that kills itself (and its process group: its workers) with ``SIGKILL``
  at a named state of its own (:func:`oscsim._killpoint.kill_point`, armed by the design driver's
  :data:`mapping.design.driver.KILL_ENV` or by ``oscsim``'s own, e.g. between a checkpoint's files), and check
  that it died there, not earlier and not by finishing;
- :func:`assert_same_but`: two result tables equal bit for bit in every column but the named (wall-time) ones;
- :func:`kill_group_when`: ``kill -9`` a running command's process group as soon as ``ready()`` is true (for
  states only an outside observer sees, e.g. part files on disk).
"""

import os
import signal
import subprocess
import sys
import time

OSCSIM = [sys.executable, "-m", "oscsim.cli"]


def run_killed_at(cmd: list, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``cmd`` with ``env`` added to the environment, in its own session; it must end by SIGKILL."""
    r = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True, timeout=timeout,
                       start_new_session=True)
    assert r.returncode == -signal.SIGKILL, (f"{env}: expected a kill -9, got exit status {r.returncode}:\n"
                                             f"{r.stderr[-3000:]}")
    return r


def kill_group_when(cmd: list, ready, env: dict | None = None, timeout: float = 240) -> subprocess.Popen:
    """Start ``cmd`` in its own session and ``kill -9`` its whole process group once ``ready()`` holds."""
    proc = subprocess.Popen(cmd, env={**os.environ, **(env or {})}, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + timeout
    try:
        while time.time() < deadline and proc.poll() is None and not ready():
            time.sleep(0.01)
        assert proc.poll() is None, f"the command ended before the kill: {proc.stderr.read().decode()[-2000:]}"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return proc


def claim_contender(root: str, rounds: int, barrier, results) -> None:
    """One of two drivers racing for the same design folders (``root/0``, ``root/1``, ...): each round both are
    released by ``barrier``, try :class:`mapping.design.driver.DriverLock`, report (round, won, message) and wait
    for the other before letting go."""
    from pathlib import Path

    from mapping.design.driver import DesignDirError, DriverLock

    for i in range(rounds):
        lock = DriverLock(Path(root) / str(i))
        barrier.wait()
        try:
            lock.acquire()
            results.put((i, True, ""))
        except DesignDirError as exc:
            results.put((i, False, str(exc)))
        barrier.wait()  # both have tried before the winner lets go
        lock.release()


def assert_same_but(a, b, columns) -> None:
    """``a`` and ``b`` (tables of a run and of its interrupted-and-resumed or distributed twin) equal bit for bit
    in every column but ``columns`` (the measured wall times)."""
    import pandas as pd

    cols = list(columns)
    pd.testing.assert_frame_equal(a.drop(columns=cols), b.drop(columns=cols), check_exact=True)
