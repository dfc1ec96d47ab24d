#!/usr/bin/env bash
# Learning-rate sweeps and ablations at equal budget (issue 21 items 3 and 5), one run at a time, niced.
# Each run: oscsim train --model MODEL --size $SIZE --steps $STEPS --batch-size $BATCH --lr LR --seed SEED
#           --eval-every $STEPS --final-eval-windows $FINAL --threads $THREADS --json [--set KEY=VALUE ...]
# OMP_WAIT_POLICY=PASSIVE: on a shared, oversubscribed machine the default spinning OpenMP workers burnt 16x the
# CPU time per step (4.2 s vs 0.27 s, kuramoto-tiny batch 16, 2 threads, load 11; BENCHMARKS.md); results are
# unchanged (bit-reproducible at a fixed thread count).
# Budget per run: STEPS x BATCH x the size's context (1m: 256 tokens, tiny: 128). The phase learning-rate
# scale is the CLI default unless PHASE is set (PHASE=none: --no-phase-groups).
# Usage: SIZE=1m STEPS=150 BATCH=16 bash benchmarks/recipe_sweep.sh OUT_DIR SPEC [SPEC ...]
#   SPEC = MODEL@LR[@SEED][+KEY=VALUE...], e.g. kuramoto@3e-3  transformer@1e-2@1  kuramoto@3e-3+ffn=false
# A JSON line per run is appended to OUT_DIR/sweep.jsonl (a finished run is not repeated: its folder is kept
# and `oscsim train` answers "already trained").
set -u
OUT=${1:?usage: recipe_sweep.sh OUT_DIR SPEC [SPEC ...]}; shift
mkdir -p "$OUT"
OSCSIM=${OSCSIM:-.venv/bin/oscsim}
SIZE=${SIZE:-1m}; STEPS=${STEPS:-150}; BATCH=${BATCH:-16}; FINAL=${FINAL:-200}; THREADS=${THREADS:-2}
NICE=${NICE:-10}; PHASE=${PHASE:-}
for spec in "$@"; do
  base=${spec%%+*}; sets=""
  [ "$base" != "$spec" ] && sets=${spec#*+}
  IFS=@ read -r model lr seed <<<"$base"; seed=${seed:-0}
  args="--model $model --size $SIZE --lr $lr --seed $seed"
  for kv in ${sets//+/ }; do args="$args --set $kv"; done
  case "$PHASE" in "") ;; none) args="$args --no-phase-groups" ;; *) args="$args --phase-lr-scale $PHASE" ;; esac
  name=$(echo "$SIZE-$STEPS-$BATCH-$spec${PHASE:+-phase$PHASE}" | tr '/=+@' '__._')
  start=$(date +%s); load=$(cut -d' ' -f1-3 /proc/loadavg)
  res=$(OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=$THREADS NUMBA_NUM_THREADS=1 nice -n "$NICE" $OSCSIM train $args --steps "$STEPS" \
        --batch-size "$BATCH" --eval-every "$STEPS" --final-eval-windows "$FINAL" --threads "$THREADS" --json \
        --out "$OUT/$name") || { echo "{\"name\": \"$name\", \"spec\": \"$spec\", \"error\": true}" >> "$OUT/sweep.jsonl"; continue; }
  echo "{\"name\": \"$name\", \"spec\": \"$spec\", \"args\": \"$args\", \"steps\": $STEPS, \"batch\": $BATCH, \"threads\": $THREADS, \"wall_s\": $(( $(date +%s) - start )), \"load_start\": \"$load\", \"load_end\": \"$(cut -d' ' -f1-3 /proc/loadavg)\", \"result\": $res}" >> "$OUT/sweep.jsonl"
done
