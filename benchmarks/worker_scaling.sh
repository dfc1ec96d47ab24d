#!/bin/bash
# Issue 22 item 5: the 64-point sweep and the small design study on 1 and 2 local workers, alternating, fresh
# folders, then one `oscsim bench chip --json` (BENCHMARKS.md, "Chip simulation speed, phase 4").
# Usage: bash benchmarks/worker_scaling.sh [PAIRS] [OUT_DIR]   (run on a quiet machine; ~4 min for 3 pairs)
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${1:-3}
OUT=${2:-$(mktemp -d)}
OSCSIM=.venv/bin/oscsim
PY=.venv/bin/python
echo "start $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
timed() {  # label, command...: prints the label and the wall seconds
  local label=$1; shift
  local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N)
  echo "$label $(echo "$e - $s" | bc)"
}
for kind in sweep design; do
  for i in $(seq 1 "$PAIRS"); do
    for w in 1 2; do
      rm -rf "$OUT/$kind$w"
      if [ $kind = sweep ]; then
        start=$(date +%s.%N)
        timed "sweep w$w" $OSCSIM sweep examples/sweep-noise.toml --out "$OUT/sweep$w" --workers $w --no-progress
        # where the time went, from the part files' times: to the first row (the workers' start-up), the
        # rows, and after the last row
        $PY - "$OUT/sweep$w" "$start" "$(date +%s.%N)" <<'PYEOF'
import glob, os, sys
m = sorted(os.path.getmtime(p) for p in glob.glob(sys.argv[1] + "/parts/*.parquet"))
s, e = float(sys.argv[2]), float(sys.argv[3])
print(f"  first row {m[0] - s:.2f} s, rows {m[-1] - m[0]:.2f} s, after the last {e - m[-1]:.2f} s")
PYEOF
      else
        timed "design w$w" $OSCSIM design examples/design-small.toml --out "$OUT/design$w" --workers $w --no-progress
      fi
    done
  done
done
# the tables must not depend on the worker count (wall-time columns aside)
$PY - "$OUT" <<'PYEOF'
import sys
import pandas as pd
out = sys.argv[1]
wall = ["wall_s", "chip_wall_s"]
for name, f in (("sweep", "results.parquet"), ("design", "trials.parquet")):
    a, b = (pd.read_parquet(f"{out}/{name}{w}/{f}") for w in (1, 2))
    pd.testing.assert_frame_equal(a.drop(columns=wall), b.drop(columns=wall), check_exact=True)
    print(f"{name} tables identical on 1 and 2 workers")
PYEOF
echo "bench $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
$OSCSIM bench chip --json > "$OUT/bench_chip.json"
echo "end $(date -u +%H:%M:%S); bench chip JSON in $OUT/bench_chip.json"
