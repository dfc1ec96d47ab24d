#!/usr/bin/env bash
# Equal-budget training runs of issue 14 (ablations, learning-rate sweep, Kuramoto diagnostics), one at a time.
# Budget per run: STEPS (default 150) x 16 sequences x 128 tokens (150: 307,200 tokens; tiny models, bundled
# Shakespeare split, seed 0); final validation BPC on the first FINAL (default 400) windows of the validation
# split. The recorded run (BENCHMARKS.md) used STEPS=60 FINAL=200 NICE=0 (the shared machine's load left a
# nice-10 process ~2 % of a core).
# Usage: bash benchmarks/train_sweep.sh OUT_DIR [NAME ...]   (JSON lines appended to OUT_DIR/sweep.jsonl)
set -u
OUT=${1:?usage: train_sweep.sh OUT_DIR [NAME ...]}; shift
mkdir -p "$OUT"
OSCSIM=${OSCSIM:-.venv/bin/oscsim}
STEPS=${STEPS:-150}; FINAL=${FINAL:-400}; NICE=${NICE:-10}
COMMON="--size tiny --steps $STEPS --batch-size 16 --eval-every $STEPS --seed 0 --final-eval-windows $FINAL --threads 1 --json"
# The runs: name, model, peak learning rate, then any --set KEY=VALUE overrides of the model config.
declare -A RUNS=()
while read -r name model lr sets; do
  args="--model $model --lr $lr"
  for kv in $sets; do args="$args --set $kv"; done
  RUNS[$name]=$args
done <<'TABLE'
k-base               kuramoto     3e-3
k-projection         kuramoto     3e-3   value=projection
k-noffn              kuramoto     3e-3   ffn=false
k-nogates            kuramoto     3e-3   gates=false
t-base               transformer  3e-3
t-lr1e-2             transformer  1e-2
k-lr1e-2             kuramoto     1e-2
k-lr1e-3             kuramoto     1e-3
t-lr1e-3             transformer  1e-3
k-tanh               kuramoto     3e-3   bound=tanh
k-ffnpi              kuramoto     3e-3   ffn_scale=3.141592653589793
k-omega100           kuramoto     3e-3   omega_base=100.0
k-lr3e-2             kuramoto     3e-2
k-lr5e-3             kuramoto     5e-3
t-lr5e-3             transformer  5e-3
k-lr1e-2-noffn       kuramoto     1e-2   ffn=false
k-lr1e-2-projection  kuramoto     1e-2   value=projection
k-lr1e-2-nogates     kuramoto     1e-2   gates=false
TABLE
ORDER=(k-base k-projection k-noffn k-nogates t-base t-lr1e-2 k-lr1e-2 k-lr1e-3 t-lr1e-3 k-tanh k-ffnpi k-omega100)
[ $# -gt 0 ] && ORDER=("$@")
for name in "${ORDER[@]}"; do
  start=$(date +%s)
  res=$(NUMBA_NUM_THREADS=1 nice -n $NICE $OSCSIM train ${RUNS[$name]} $COMMON --out "$OUT/$name") || { echo "{\"name\": \"$name\", \"error\": true}" >> "$OUT/sweep.jsonl"; continue; }
  echo "{\"name\": \"$name\", \"args\": \"${RUNS[$name]}\", \"wall_s\": $(( $(date +%s) - start )), \"result\": $res}" >> "$OUT/sweep.jsonl"
done
