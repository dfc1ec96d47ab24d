"""Wall time of `oscsim --help` and `oscsim simulate --help` (the parser only), this checkout against another
`oscsim` executable (e.g. a checkout of main), the two run interleaved so that machine load hits both alike.

    .venv/bin/python benchmarks/cli_startup.py --repeats 7 --other /path/to/other/.venv/bin/oscsim --json

Prints the median and min of each, their ratio, and the 1-minute load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CASES = (["--help"], ["simulate", "--help"])


def _time(exe: str, args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([exe, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--other", default=None, help="another oscsim executable to interleave with (default: none)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    ours = str(Path(sys.executable).with_name("oscsim"))
    exes = {"this checkout": ours, **({"other": args.other} if args.other else {})}
    load0 = os.getloadavg()[0]
    times = {(name, " ".join(c)): [] for name in exes for c in CASES}
    for exe in exes.values():  # warm the file cache and Python's bytecode caches once
        for c in CASES:
            _time(exe, c)
    for _ in range(args.repeats):
        for c in CASES:
            for name, exe in exes.items():
                times[(name, " ".join(c))].append(_time(exe, c))
    out = {"repeats": args.repeats, "load_1min": [load0, os.getloadavg()[0]], "cpu": os.cpu_count(),
           "results": [{"exe": n, "args": a, "median_s": statistics.median(v), "min_s": min(v)}
                       for (n, a), v in times.items()]}
    if args.other:
        out["ratio_other_over_this"] = {a: statistics.median(times[("other", a)]) / statistics.median(
            times[("this checkout", a)]) for a in (" ".join(c) for c in CASES)}
    print(json.dumps(out, indent=1) if args.json else out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
