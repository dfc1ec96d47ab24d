"""Run named mutmut mutants against a test subset in ONE process (used for the "after" figures in BENCHMARKS.md).

mutmut's trampolines choose the active mutant from ``set_mutant_under_test(name)``, so the interpreter, torch
and Numba start once instead of once per mutant. Run it inside ``mutants/`` after mutmut has generated it
(``benchmarks/mutation.py`` does)::

    cd mutants && nice -n 19 ../.venv/bin/python ../benchmarks/mutation_inproc.py NAMES.txt tests/test_x.py -k y

Prints ``RESULT <name> killed|survived`` per mutant (killed: the subset fails). Control: a name that matches no
function must come out ``survived``.

Hypothesis runs derandomized and without its example database: otherwise a counterexample found under one
mutant (or a chance finding unrelated to any mutant) is saved in ``.hypothesis/`` and replayed under every
later mutant, which then counts as killed.

The ``functools.lru_cache`` caches of the project's modules (e.g. ``hw_models.ring_macro.limit_cycle``) are
cleared before every mutant: a result cached under one mutant (or the unmutated code) would otherwise hide
the next mutant of a cached function (a false survivor) or carry a wrong result into later mutants.
"""

import os
import sys

import pytest
from hypothesis import settings
from mutmut.mutation.trampoline import set_mutant_under_test


def _clear_project_caches() -> None:
    for mod_name, mod in list(sys.modules.items()):
        if mod is None or mod_name.split(".")[0] not in ("mapping", "hw_models", "oscsim"):
            continue
        for obj in list(vars(mod).values()):
            clear = getattr(obj, "cache_clear", None)
            if callable(clear):
                clear()


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        print("usage: mutation_inproc.py NAMES_FILE PYTEST_ARGS...", file=sys.stderr)
        return 2
    sys.path.insert(0, os.getcwd())  # the mutated copy of the sources
    settings.register_profile("mutation", database=None, derandomize=True)
    settings.load_profile("mutation")  # before the test modules build their settings(...) objects
    names = [line.split()[0] for line in open(argv[0]) if line.strip()]
    for name in names:
        _clear_project_caches()
        set_mutant_under_test(name)
        rc = pytest.main(list(argv[1:]) + ["-q", "-x", "-p", "no:cacheprovider", "--no-header"])
        print("RESULT", name, "killed" if rc != 0 else "survived", flush=True)
    set_mutant_under_test("")
    return 0


if __name__ == "__main__":
    sys.exit(main())
