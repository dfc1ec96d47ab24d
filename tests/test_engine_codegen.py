"""The generated kernels: deterministic source, a cache key that follows the sources, a self-healing cache.

Nothing generated is in the repository (`oscsim/engine/_codegen.py` renders it, `_kernel_cache.py` writes it
into ``$OSCSIM_KERNEL_CACHE`` at first use); these tests check that scheme without compiling new kernels,
except `test_compiled_kernel_is_loaded_from_disk_in_a_new_process`, which reuses the default cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from oscsim.engine import _codegen, _kernel_cache

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "oscsim" / "engine"


def test_render_is_deterministic_across_processes():
    text = _codegen.render()
    assert text == _codegen.render()
    code = "import sys; from oscsim.engine import _codegen; sys.stdout.write(_codegen.render())"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, cwd=ROOT)
    assert out.stdout == text
    # one loop per (model kernel, solver), and each names its own step and drift as globals
    n = len(_codegen.MODEL_KERNELS) * (len(_codegen.FIXED_SOLVERS) + len(_codegen.ADAPTIVE_SOLVERS))
    assert text.count("@nb.njit(cache=True, nogil=True)") == n
    assert "step(drift," not in text and "phases(y" not in text
    compile(text, "engine_kernels.py", "exec")


def test_custom_render_is_deterministic_and_compiles():
    a = _codegen.render_custom("tests.test_engine_batch", "_harmonic", "RK4", adaptive=False)
    assert a == _codegen.render_custom("tests.test_engine_batch", "_harmonic", "RK4", adaptive=False)
    b = _codegen.render_custom("tests.test_engine_batch", "_harmonic", "Dopri5", adaptive=True)
    assert a != b and "def loop(g_first, g_step," in a and "def loop(g_first, g_step," in b
    compile(a, "custom.py", "exec")
    compile(b, "custom.py", "exec")


def test_two_solvers_defining_one_constant_name_differently_are_refused(monkeypatch):
    # every solver's tableau constants are imported into the one generated module: Dopri5's _A21 = 1/5 would
    # silently replace another solver's _A21 (a clash that made SRA1 first order while this was written)
    from oscsim.engine.solvers import sra1

    monkeypatch.setattr(sra1, "_A21", 0.75, raising=False)
    with pytest.raises(RuntimeError, match=r"_A21 is defined by solvers.sra1 \(0.75\) and solvers.dopri5 \(0.2\)"):
        _codegen.render()
    monkeypatch.setattr(sra1, "_A21", 1 / 5)  # the same value is no clash
    _codegen.render()


@pytest.mark.parametrize("edited", ["_templates.py", "_codegen.py", "phase_network.py", "rng.py", "solvers/rk4.py"])
def test_cache_key_changes_with_each_source(tmp_path, edited):
    copy = tmp_path / "engine"
    shutil.copytree(ENGINE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert _codegen.sources_hash(copy) == _codegen.sources_hash()
    with open(copy / edited, "a") as f:
        f.write("\n# edited\n")
    assert _codegen.sources_hash(copy) != _codegen.sources_hash()


def test_cache_key_changes_with_numba_version(monkeypatch):
    before = _codegen.sources_hash()
    monkeypatch.setattr(_codegen.numba, "__version__", "0.0.0-test")
    assert _codegen.sources_hash() != before


def test_corrupted_cache_file_is_regenerated(tmp_path, monkeypatch):
    monkeypatch.setenv(_kernel_cache.ENV_VAR, str(tmp_path))
    calls = []

    def render():
        calls.append(1)
        return "VALUE = 41 + 1\n"

    assert _kernel_cache.load_generated("probe_abc.py", render).VALUE == 42
    path = tmp_path / "probe_abc.py"
    assert _kernel_cache.load_generated("probe_abc.py", render).VALUE == 42
    assert len(calls) == 1  # an intact file is reused, not rewritten
    for damage in ("VALUE = ", "", "\x00garbage", path.read_text().replace("42", "43").replace("+ 1", "+ 2")):
        path.write_text(damage)
        assert _kernel_cache.load_generated("probe_abc.py", render).VALUE == 42
    assert len(calls) == 5
    # the check line is the SHA-256 of the rest
    first, rest = path.read_text().split("\n", 1)
    assert rest == render() and len(first.rsplit(" ", 1)[1]) == 64


def test_corrupted_builtin_kernel_file_is_regenerated(tmp_path, monkeypatch):
    monkeypatch.setenv(_kernel_cache.ENV_VAR, str(tmp_path))
    name = f"engine_kernels_{_codegen.sources_hash()}.py"
    mod = _kernel_cache.load_generated(name, _codegen.render)
    assert hasattr(mod, "fixed__phase_sine__RK4") and hasattr(mod, "adaptive__stuart_landau__Dopri5")
    path = tmp_path / name
    good = path.read_text()
    path.write_text(good[: len(good) // 2])  # a write cut short
    mod = _kernel_cache.load_generated(name, _codegen.render)
    assert path.read_text() == good and hasattr(mod, "fixed__stuart_landau__SRA1")


def _write_and_read(args):
    directory, n = args
    path = Path(directory) / "race.py"
    bad = 0
    for i in range(n):
        # both ways of publishing: replacing (repair) and first-writer-wins (a new file)
        _kernel_cache._write_atomic(path, _kernel_cache._with_check(f"X = {'1' * 20000}\n"), overwrite=i % 2 == 0)
        bad += not _kernel_cache._is_intact(path)
    first = Path(directory) / f"first_{n}.py"
    _kernel_cache._write_atomic(first, _kernel_cache._with_check(f"PID = {os.getpid()}\n"), overwrite=False)
    return bad


def test_concurrent_first_use_by_two_processes_never_sees_a_partial_file(tmp_path):
    with ProcessPoolExecutor(max_workers=2) as ex:
        assert list(ex.map(_write_and_read, [(str(tmp_path), 200)] * 2)) == [0, 0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first_200.py", "race.py"]  # no temporary files left
    assert _kernel_cache._is_intact(tmp_path / "first_200.py")  # one of the two writers won, whole


def test_unwritable_cache_directory_warns_and_falls_back(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv(_kernel_cache.ENV_VAR, str(blocker / "kernels"))
    with pytest.warns(UserWarning, match="OSCSIM_KERNEL_CACHE"):
        assert _kernel_cache.load_generated("x.py", lambda: "X = 1\n") is None


def test_compiled_kernel_is_loaded_from_disk_in_a_new_process():
    from oscsim.engine import RK4, PhaseNetwork, simulate

    model = PhaseNetwork(omega=np.ones(3), coupling=np.full((3, 3), 0.2))
    ref = simulate(model, RK4(), 0.0, 1.0, 0.05, np.zeros((2, 3))).y_final
    code = (
        "import numpy as np\n"
        "from oscsim.engine import RK4, PhaseNetwork, simulate\n"
        "from oscsim.engine._kernel_cache import builtin_kernels\n"
        "m = PhaseNetwork(omega=np.ones(3), coupling=np.full((3, 3), 0.2))\n"
        "y = simulate(m, RK4(), 0.0, 1.0, 0.05, np.zeros((2, 3))).y_final\n"
        "s = builtin_kernels().fixed__phase_sine__RK4.stats\n"
        "print(sum(s.cache_hits.values()), sum(s.cache_misses.values()), repr(y.tolist()))\n"
    )
    env = {**os.environ, "NUMBA_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, cwd=ROOT)
    hits, misses, y = out.stdout.split(" ", 2)
    assert (int(hits), int(misses)) == (1, 0), out.stdout
    np.testing.assert_array_equal(np.array(eval(y)), ref)


def test_repository_holds_no_generated_source():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    files = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=ROOT, check=True).stdout.split()
    assert "oscsim/engine/_kernels.py" not in files
    for f in files:
        if f.endswith(".py") and (ROOT / f).exists():
            head = (ROOT / f).read_text(errors="replace")[:200]
            assert "GENERATED" not in head, f"{f} looks generated; generate it into the cache instead"
