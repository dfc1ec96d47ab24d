"""Test kill points: named states at which a process kills itself (``SIGKILL``), so that a test can interrupt a
long job at a *state* (between two files of a checkpoint, after a design trial is told), not at a time, and
compare its resumed result with an uninterrupted one (tests/_kill.py runs such a command).

A point is armed by an environment variable holding ``NAME`` or ``NAME:N`` (the N-th time NAME is reached in the
process); unset, :func:`kill_point` costs one dictionary lookup. :data:`KILL_ENV` arms the points of ``oscsim``
(the checkpoint commit of :mod:`oscsim.train.checkpoint`); the design driver arms its own with
``OSCSIM_DESIGN_KILL_AT`` (:mod:`mapping.design.driver`) through the same function.
"""

from __future__ import annotations

import os
import signal

__all__ = ["KILL_ENV", "kill_point"]

KILL_ENV = "OSCSIM_KILL_AT"
_reached: dict = {}


def kill_point(name: str, env: str = KILL_ENV) -> None:
    """Kill this process (``SIGKILL``; its process group with it when it leads one, so that its workers die with
    it as in a real ``kill -9``) if the environment variable ``env`` names this state (see the module notes)."""
    want = os.environ.get(env)
    if not want:
        return
    point, _, nth = want.partition(":")
    if point != name:
        return
    _reached[(env, name)] = _reached.get((env, name), 0) + 1
    if _reached[(env, name)] >= int(nth or 1):
        if os.getpgrp() == os.getpid():
            os.killpg(os.getpgrp(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
