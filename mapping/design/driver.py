"""The design study's driver: its claim on the folder, its storage's faults in one line, its test kill points.

- :class:`DriverLock`: one driver per design folder, for sure. An exclusive ``fcntl.flock`` on ``DIR/driver.lock``
  taken before the study is opened and held for the driver's life: the kernel grants it to one process at a time
  and drops it when that process ends in any way (``kill -9`` included), so there is no stale claim to time out
  and no window between reading a claim and writing one (the claim the study recorded before read the driver
  record and then wrote it; two drivers started together both got it). The file holds the winner's pid and host,
  for the loser's message. ``flock`` is local to one machine and not reliable on every network file system: a
  study on a shared RDB storage driven from several machines each with its own folder relies on the driver
  record of :mod:`mapping.design.study` as before.
- :func:`storage_errors`: SQLAlchemy's and Optuna's storage exceptions (a corrupt ``study.db``, a full disk, a
  read-only file) raised again as one :class:`DesignDirError` line naming the storage and the database's own
  cause, instead of a 30-frame traceback.
- :func:`kill_point`: named states of the driver at which a test makes it kill itself (``SIGKILL``, its process
  group with it when it leads one: its workers die with it as in a real ``kill -9``), so that a resumed study can
  be compared with an uninterrupted one at every state, not at a time. Set by the environment variable
  :data:`KILL_ENV` (``NAME`` or ``NAME:N``, the N-th time NAME is reached); unset, it costs one dictionary
  lookup.
- :func:`expand_env` / :func:`redact`: a storage URL's ``${VAR}`` placeholders read from the environment when the
  storage is opened (a password never typed on a command line nor written to a file), and a URL with its
  password hidden for everything that is written or printed.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import time
from pathlib import Path

from oscsim._killpoint import kill_point as _kill_point

__all__ = ["DesignDirError", "DriverLock", "storage_errors", "kill_point", "KILL_ENV", "KILL_POINTS", "expand_env",
           "redact", "LOCK_FILE"]

LOCK_FILE = "driver.lock"
KILL_ENV = "OSCSIM_DESIGN_KILL_AT"
#: The driver's states a test can kill it at (see :func:`mapping.design.study.run_design`; the ``finetune_`` ones:
#: :func:`mapping.design.finetune.finetune_design`, after an optimizer step, inside and after a checkpoint's commit).
KILL_POINTS = ("claimed", "asked", "evaluated", "recording", "told", "finetune_step", "finetune_saving",
               "finetune_saved")


class DesignDirError(ValueError):
    """A design folder or study that cannot be used for this spec (another spec's, another driver's, damaged)."""


class DriverLock:
    """An exclusive ``flock`` on ``folder/driver.lock`` (see the module notes); a context manager.

    Parameters
    ----------
    folder : path
        The design folder (it must exist).
    """

    def __init__(self, folder: str | Path):
        self.path = Path(folder) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise :class:`DesignDirError` naming the driver that holds it."""
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = ""
            for _ in range(50):  # the holder writes its name just after taking the lock: give it 0.5 s
                holder = os.pread(fd, 200, 0).decode(errors="replace").strip()
                if holder:
                    break
                time.sleep(0.01)
            os.close(fd)
            holder = holder or "another process"
            raise DesignDirError(f"{self.path.parent} is being driven by {holder} (one driver per study keeps its "
                                 f"trials deterministic); wait for it, or stop it and rerun") from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Drop the lock (the file stays: removing it would let a waiting driver lock a file no one else sees)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)  # closing the last descriptor releases the flock

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _root_cause(exc: BaseException) -> str:
    """The innermost message of an exception chain (the database's own words)."""
    seen = []
    e: BaseException | None = exc
    while e is not None and e not in seen:
        seen.append(e)
        e = getattr(e, "orig", None) or e.__cause__ or e.__context__
    last = seen[-1]
    return str(last).splitlines()[0] if str(last) else type(last).__name__


@contextlib.contextmanager
def storage_errors(where: str):
    """Raise the storage's faults inside the block as one :class:`DesignDirError` line naming ``where``."""
    try:
        yield
    except DesignDirError:
        raise
    except Exception as exc:
        import sqlite3

        kinds: tuple = (sqlite3.DatabaseError,)
        with contextlib.suppress(ImportError):
            import sqlalchemy.exc

            kinds += (sqlalchemy.exc.SQLAlchemyError,)
        with contextlib.suppress(ImportError):
            import optuna.exceptions

            kinds += (optuna.exceptions.StorageInternalError,)
        if not isinstance(exc, kinds):
            raise
        raise DesignDirError(f"the study's storage {where} cannot be used: {_root_cause(exc)}") from None


def kill_point(name: str) -> None:
    """Kill this process (``SIGKILL``) if :data:`KILL_ENV` names this state (see the module notes;
    :func:`oscsim._killpoint.kill_point` with the driver's variable)."""
    _kill_point(name, KILL_ENV)


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(url: str) -> str:
    """``url`` with each ``${VAR}`` replaced by the environment variable VAR (unset: a one-line refusal)."""
    def sub(m):
        v = os.environ.get(m.group(1))
        if v is None:
            raise ValueError(f"--storage {redact(url)} names the environment variable {m.group(1)}, which is not set")
        return v

    return _VAR.sub(sub, url)


def redact(url: str) -> str:
    """``url`` with its password (``//user:PASSWORD@``) shown as ``***``."""
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)
