"""Mutation score of the core mapping/ and hw_models/ modules (issue 10 item 6), with mutmut 3.

Run from the repository root (``make mutation``)::

    .venv/bin/python benchmarks/mutation.py --sample 20 --seed 0 --json

mutmut is configured in ``[tool.mutmut]`` of pyproject.toml (modules to mutate, the fast test subset). A full
run of every mutant (about 3,300 over the ten modules) does not fit a shared two-core machine, so this script
draws a fixed, seeded sample of ``--sample`` mutants per module (``--sample 0``: all of them), runs mutmut on
those names only (one module at a time, one worker), and reports per module: killed, survived, timeout, no
tests, and the score killed / (sampled − skipped). A timeout counts as detected (the mutant made the tests
hang), as mutmut does. The sample's binomial 95 % interval (Wilson) is printed with each score, since a
sample of 20 only pins the score to about ±20 %.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

MODULES = ("mapping.compiler.build", "mapping.compiler.layers", "mapping.compiler.mismatch",
           "mapping.compiler.resources", "mapping.backends.phase", "mapping.backends.ssa_pairwise",
           "mapping.backends.ssa_collective", "mapping.periphery.quantise", "mapping.periphery.programming",
           "mapping.periphery.readout", "hw_models.ring", "hw_models.ring_macro", "hw_models.stno",
           "hw_models.noise", "hw_models.mismatch")

_MUTMUT = "import sys; from mutmut.__main__ import cli; sys.exit(cli())"


def _generate() -> None:
    """Write mutants/ (the mutated copy of the sources and the .meta list of mutant names), as `mutmut run`'s
    first step does, without running any test."""
    import mutmut.__main__ as mm

    mm.set_mutant_under_test("mutant_generation")
    os.makedirs("mutants", exist_ok=True)
    mm.copy_src_dir()
    mm.copy_also_copy_files()
    mm.setup_source_paths()
    mm.store_lines_covered_by_tests()
    mm.create_mutants(1)


def _meta(module: str) -> dict:
    path = Path("mutants") / (module.replace(".", "/") + ".py.meta")
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: generate the mutants first (this script does it unless "
                                f"--no-generate is given)")
    return json.loads(path.read_text())


def _wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def score(module: str, names: list[str]) -> dict:
    from mutmut.stats import status_by_exit_code

    codes = _meta(module)["exit_code_by_key"]
    counts: dict[str, int] = {}
    survivors = []
    for n in names:
        st = status_by_exit_code[codes.get(n)]
        counts[st] = counts.get(st, 0) + 1
        if st == "survived":
            survivors.append(n)
    detected = counts.get("killed", 0) + counts.get("timeout", 0)
    considered = len(names) - counts.get("skipped", 0) - counts.get("not checked", 0)
    lo, hi = _wilson(detected, considered)
    return {"module": module, "mutants_total": len(codes), "sampled": len(names), "counts": counts,
            "score": detected / considered if considered else math.nan, "ci95": [lo, hi], "survivors": survivors}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modules", default=",".join(MODULES), help="comma-separated modules (default: all of MODULES)")
    ap.add_argument("--sample", type=int, default=20, help="mutants drawn per module; 0: all (default 20)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    ap.add_argument("--no-generate", action="store_true", help="reuse mutants/ as it is")
    ap.add_argument("--score-only", action="store_true", help="report the results already in mutants/")
    ap.add_argument("--json", action="store_true", help="print JSON")
    args = ap.parse_args(argv)
    if args.sample < 0:
        ap.error(f"--sample must be >= 0, got {args.sample}")
    if not (args.no_generate or args.score_only):
        _generate()
    out = []
    for module in args.modules.split(","):
        names = sorted(_meta(module)["exit_code_by_key"])
        if args.sample and args.sample < len(names):
            names = sorted(random.Random(f"{args.seed}:{module}").sample(names, args.sample))
        if not args.score_only:
            env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")
            subprocess.run([sys.executable, "-c", _MUTMUT, "run", "--max-children", "1", *names], env=env,
                           stdout=subprocess.DEVNULL, check=False)
        res = score(module, names)
        out.append(res)
        if not args.json:
            lo, hi = res["ci95"]
            print(f"{module:24s} {res['score']:6.1%} killed of {res['sampled']} sampled "
                  f"(of {res['mutants_total']}; 95% CI {lo:.0%}-{hi:.0%}) {res['counts']}", flush=True)
    if args.json:
        print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
