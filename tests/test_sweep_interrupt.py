"""Ctrl-C on a sweep (issue 23 item 8): the command exits at once, keeps the finished points and says how to
resume, without a traceback from the main process or its worker."""

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from mapping.sweep import sweep_status
from mapping.sweep.run import PARTS

SPEC = """
name = "test-interrupt"
checkpoint = "kuramoto-tiny"
metrics = ["bpc", "wall_time"]
[tokens]
windows = 4
seq_len = 128
[axes]
"coupling.bits" = { values = [4, 6, 8] }
[seeds]
noise = [0]
"""


@pytest.mark.slow
def test_ctrl_c_stops_a_sweep_at_once_and_keeps_the_finished_points(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "oscsim.cli", "sweep", str(spec), "--out", str(out), "--workers", "1",
           "--no-progress"]
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    parts = out / PARTS
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and proc.poll() is None:
        if parts.is_dir() and list(parts.glob("*.parquet")):
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    # Ctrl-C in a terminal: SIGINT to the foreground process group, the sweep and its worker alike
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=600)
    delay = time.monotonic() - t0
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err and "leaked" not in err, err
    assert "1 of 3 points are saved" in err and "rerun the same command to resume" in err, err
    for _ in range(300):  # no worker process left behind (multiprocessing's resource tracker ends just after)
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("a process of the sweep outlived it")
    st = sweep_status(out)
    assert (st["done"], st["remaining"]) == (1, 2)
    # at once: well before the point that was running would have finished (the first point's own duration,
    # measured in the same run under the same load; a ratio, not a time)
    point_s = float(pd.read_parquet(next(parts.glob("*.parquet")))["wall_s"].iloc[0])
    assert delay < 0.5 * point_s, (delay, point_s)
