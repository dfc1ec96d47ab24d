"""The disk cache of derived device numbers (hw_models.derived_cache): a cached limit cycle is the computed one
bit for bit, a damaged or foreign entry is computed again, a new process finds the entry."""

import subprocess
import sys

import numpy as np
import pytest

from hw_models import derived_cache
from hw_models.presets import cmos_65nm_ring
from hw_models.ring_macro import _solve_limit_cycle, limit_cycle


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(derived_cache.ENV_VAR, str(tmp_path))
    limit_cycle.cache_clear()
    yield tmp_path
    limit_cycle.cache_clear()


def _entries(root):
    return sorted((root / "limit-cycles").glob("*.npz"))


def test_cached_limit_cycle_is_the_solved_one_to_the_bit(cache):
    ring = cmos_65nm_ring()
    solved = _solve_limit_cycle(ring, 256)
    first = limit_cycle(ring, 256)  # a miss: solved and written
    assert len(_entries(cache)) == 1
    limit_cycle.cache_clear()
    again = limit_cycle(ring, 256)  # a hit: read back
    assert again is not first
    for lc in (first, again):
        assert lc.period_s == solved["period_s"]
        for k in ("theta", "x", "ppv"):
            assert np.array_equal(getattr(lc, k), solved[k]), k
    assert again.params == ring


def test_other_parameters_get_their_own_entry(cache):
    ring = cmos_65nm_ring()
    a = limit_cycle(ring, 128)
    b = limit_cycle(ring.replace(c_load_f=2 * ring.c_load_f), 128)
    assert len(_entries(cache)) == 2
    assert b.period_s > 1.5 * a.period_s  # twice the load: about twice the period


@pytest.mark.parametrize("damage", ["truncated", "foreign", "nan"])
def test_a_damaged_or_foreign_entry_is_solved_again(cache, damage):
    ring = cmos_65nm_ring()
    good = limit_cycle(ring, 128)
    (path,) = _entries(cache)
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:100])
    else:
        with np.load(path) as z:
            d = {k: z[k] for k in z.files}
        if damage == "foreign":
            d["key"] = np.array("another key")
        else:
            d["ppv"] = np.full_like(d["ppv"], np.nan)
        np.savez(path, **d)
    limit_cycle.cache_clear()
    lc = limit_cycle(ring, 128)
    assert np.array_equal(lc.ppv, good.ppv) and lc.period_s == good.period_s
    with np.load(path, allow_pickle=False) as z:  # rewritten whole
        assert np.array_equal(z["ppv"], good.ppv)


def test_a_new_process_reads_the_entry_without_importing_scipy_integrate(cache):
    ring = cmos_65nm_ring()
    lc = limit_cycle(ring, 128)
    code = ("import sys, numpy as np; from hw_models.presets import cmos_65nm_ring; "
            "from hw_models.ring_macro import limit_cycle; lc = limit_cycle(cmos_65nm_ring(), 128); "
            "print(repr(lc.period_s), 'scipy.integrate' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**__import__("os").environ, derived_cache.ENV_VAR: str(cache)}).stdout.split()
    assert out == [repr(lc.period_s), "False"]


def test_scalars_are_cached_and_a_damaged_file_is_ignored(cache):
    calls = []
    f = lambda: calls.append(1) or 0.125  # noqa: E731
    assert derived_cache.cached_scalar("k", f) == 0.125
    assert derived_cache.cached_scalar("k", f) == 0.125
    assert calls == [1]
    (cache / derived_cache._SCALARS).write_text("{not json")
    assert derived_cache.cached_scalar("k", f) == 0.125
    assert calls == [1, 1]
