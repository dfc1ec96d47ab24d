#!/usr/bin/env bash
# One resumable training run of a 1M-parameter bundle (issue 21 item 4), in the background-friendly form this
# project's shared CPU needs: niced, 2 torch threads with passive OpenMP workers, one line per interval in
# train-runs/NAME.log, and the in-progress checkpoint (weights, optimizer state, JSON) committed to git at every
# quarter of the run, so that a lost session loses at most a quarter. COMMIT=none turns the automatic commits
# off: a checkpoint is 12 MB and every commit of it counts about twice that against a session's submission
# limit (256 MiB of diffs), so a session running several models commits them by hand, once or twice.
# Rerunning the same command resumes the run bit-identically from its last checkpoint (every EVAL steps).
# Usage: bash benchmarks/train_1m.sh NAME MODEL LR [extra `oscsim train` arguments, e.g. --init CKPT --chip TOML]
#   STEPS (2500) x BATCH (32) x 256 tokens = 20,480,000 tokens by default; EVAL (125) steps between checkpoints.
# The issue-21 bundles (docs/models.md, "Bundled checkpoints"). The three runs were launched with THREADS=1:
# resume them with the same count, so that the finished run is the one an uninterrupted run would have given.
#   THREADS=1 bash benchmarks/train_1m.sh kuramoto-1m kuramoto 3e-3
#   THREADS=1 bash benchmarks/train_1m.sh transformer-1m transformer 3e-3
#   THREADS=1 bash benchmarks/train_1m.sh ssa-1m ssa 3e-3
# then, once a run's log ends with "exit 0", bundle it (refused before: the run must be finished), e.g.
#   .venv/bin/python benchmarks/bundle_run.py train-runs/kuramoto-1m kuramoto-1m \
#       --recipe "THREADS=1 bash benchmarks/train_1m.sh kuramoto-1m kuramoto 3e-3"
# and, after kuramoto-1m is bundled, its hardware-aware fine-tune: the recipe of the bundled kuramoto-tiny-hwa
# (150 steps x 16 windows, lr 3e-4, examples/chip.toml, eval every 50) from the *bundled* kuramoto-1m, whose
# SHA-256 the run records as init_sha256 (tests/test_train_bundled_1m.py checks it against the bundle):
#   STEPS=150 BATCH=16 EVAL=50 THREADS=1 bash benchmarks/train_1m.sh kuramoto-1m-hwa kuramoto 3e-4 \
#       --init kuramoto-1m --chip examples/chip.toml
#   .venv/bin/python benchmarks/bundle_run.py train-runs/kuramoto-1m-hwa kuramoto-1m-hwa --chip examples/chip.toml \
#       --recipe "STEPS=150 BATCH=16 EVAL=50 THREADS=1 bash benchmarks/train_1m.sh kuramoto-1m-hwa kuramoto 3e-4 --init kuramoto-1m --chip examples/chip.toml"
set -u
NAME=${1:?usage: train_1m.sh NAME MODEL LR [args]}; MODEL=${2:?model}; LR=${3:?lr}; shift 3
STEPS=${STEPS:-2500}; COMMIT=${COMMIT:-quarters}; BATCH=${BATCH:-32}; EVAL=${EVAL:-125}; THREADS=${THREADS:-2}; SEED=${SEED:-0}
OSCSIM=${OSCSIM:-.venv/bin/oscsim}
OUT=train-runs/$NAME
mkdir -p train-runs
commit() {  # commit the run folder only (other staged work stays staged); retry while git is busy
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    git add "$OUT" "$OUT.log" 2>/dev/null || { sleep 20; continue; }
    # nothing changed (e.g. the command rerun on a finished run): nothing to commit, not a busy git to wait for
    git diff --cached --quiet -- "$OUT" "$OUT.log" && return 0
    git commit -q -m "$1" -- "$OUT" "$OUT.log" && return 0
    sleep 20
  done
  echo "could not commit $OUT" >&2
}
step() { python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('step', 0))" "$OUT/config.json" 2>/dev/null || echo 0; }
echo "# $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg): $OSCSIM train --model $MODEL --size 1m --steps $STEPS --batch-size $BATCH --lr $LR --seed $SEED --eval-every $EVAL --threads $THREADS $* --out $OUT" >> "$OUT.log"
OMP_WAIT_POLICY=PASSIVE NUMBA_NUM_THREADS=1 nice -n 10 $OSCSIM train --model "$MODEL" --size 1m --steps "$STEPS" \
  --batch-size "$BATCH" --lr "$LR" --seed "$SEED" --eval-every "$EVAL" --threads "$THREADS" --progress "$@" \
  --out "$OUT" >> "$OUT.log" 2>&1 &
pid=$!
echo "$pid" > "$OUT.pid"
done_q=$(( $(step) * 4 / STEPS ))
while kill -0 "$pid" 2>/dev/null; do
  sleep 60
  q=$(( $(step) * 4 / STEPS ))
  if [ "$COMMIT" != none ] && [ "$q" -gt "$done_q" ] && [ "$q" -lt 4 ]; then
    commit "train-runs/$NAME: in-progress checkpoint at step $(step) of $STEPS ($MODEL 1m, lr $LR; resume: bash benchmarks/train_1m.sh $NAME $MODEL $LR $*)"
    done_q=$q
  fi
done
wait "$pid"; rc=$?
echo "# $(date -u +%FT%TZ) exit $rc load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT.log"
[ "$rc" -eq 0 ] && [ "$COMMIT" != none ] && commit "train-runs/$NAME: finished run ($STEPS steps, $MODEL 1m, lr $LR)"
exit "$rc"
