"""`make env` in two terminals at once (issue 23 item 2): two clones set up concurrently over an empty dependency
cache both succeed, the base is built once, and each clone's environment runs its own code.

Slow (the base is built from scratch: ~3 min on an idle 2-core machine) and needs what `make env` needs (the
package index or the wheel cache)."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_two_setups_at_once_over_an_empty_cache_both_succeed(tmp_path):
    env = {**os.environ, "OSCSIM_VENV_CACHE": str(tmp_path / "cache")}
    clones = []
    for name in ("A", "B"):
        d = tmp_path / name
        subprocess.run(["git", "clone", "-q", str(ROOT), str(d)], check=True)
        (d / "tools" / "setup_env.sh").write_bytes((ROOT / "tools" / "setup_env.sh").read_bytes())  # this script
        clones.append(d)
    procs = [subprocess.Popen(["bash", "tools/setup_env.sh"], cwd=d, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for d in clones]
    logs = [p.communicate(timeout=3600)[0] for p in procs]
    for p, log in zip(procs, logs):
        assert p.returncode == 0, log
    assert sum("building the shared dependency environment" in log for log in logs) == 1, logs
    assert sum("waiting for another set-up building" in log for log in logs) == 1, logs
    bases = [b for b in (tmp_path / "cache").iterdir() if b.name.startswith("base-") and b.is_symlink()]
    assert len(bases) == 1 and (bases[0] / ".complete").is_file()
    for d in clones:
        out = subprocess.run([str(d / ".venv" / "bin" / "python"), "-c", "import torch, numba, oscsim; print(oscsim.__file__)"],
                             cwd=tmp_path, capture_output=True, text=True, check=True).stdout  # not from the cwd
        assert out.strip().startswith(str(d)), out  # each clone runs its own code over the shared base
    # a third run finds everything in place
    again = subprocess.run(["bash", "tools/setup_env.sh"], cwd=clones[0], env=env, capture_output=True, text=True)
    assert again.returncode == 0 and "building" not in again.stdout + again.stderr
