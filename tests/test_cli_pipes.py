"""`oscsim ... | head`: a reader that stops early ends the command quietly (issue 23 item 8)."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize("argv", [["device", "ideal"], ["device", "ideal", "--json"]])
def test_a_closed_pipe_ends_the_command_without_a_traceback(argv):
    """The reader closes the pipe before the command writes (it takes a second to start), so every write
    meets EPIPE: the command exits with 141 (128 + SIGPIPE) and writes nothing to stderr."""
    p = subprocess.Popen([sys.executable, "-m", "oscsim.cli", *argv], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 141, err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_an_open_pipe_still_gets_everything():
    out = subprocess.run([sys.executable, "-m", "oscsim.cli", "device", "ideal", "--json"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip().endswith("}") and out.stderr == ""
