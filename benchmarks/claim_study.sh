#!/usr/bin/env bash
# One pair of the paper's claim on long inputs (DCA against one agent), CNN/DailyMail train_stories.jsonl,
# 800-token articles: cnndm-m1 against cnndm-m6, one thread each, side by side, each stopped (SIGTERM,
# which saves last.pt) once its process has had MINUTES minutes of CPU. The CPU clock, not the wall
# clock, makes the pair fair when other work shares the machine. Then ROUGE of each last checkpoint on
# validation rows 500-999 (the reported rows; rows 0-199 are the trainer's validation).
#
#   bash benchmarks/claim_study.sh SEED READING [MINUTES]
#
# READING: best   input feeding for both, agent_split: whole for m6 (the readings of issue 20's study)
#          paper  the presets as printed: no input feeding, the Table 6 split
# Runs: runs/cnndm-m1-if-sSEED and runs/cnndm-m6-if-whole-sSEED (best), runs/cnndm-m1-sSEED and
# runs/cnndm-m6-sSEED (paper). Scores: benchmarks/results/cnndm/claim/. About 80 minutes on a quiet 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
. .venv/bin/activate
SEED=${1:?seed}
READING=${2:?reading: best or paper}
MINUTES=${3:-65}
VALID=../shared/data/cnndm/validation_1000.jsonl
OUT=benchmarks/results/cnndm/claim
mkdir -p runs "$OUT"
case "$READING" in
  best)  M1=(--set model.input_feeding=true); M6=(--set model.input_feeding=true --set data.agent_split=whole)
         RUN1=runs/cnndm-m1-if-s$SEED; RUN6=runs/cnndm-m6-if-whole-s$SEED ;;
  paper) M1=(); M6=(); RUN1=runs/cnndm-m1-s$SEED; RUN6=runs/cnndm-m6-s$SEED ;;
  *) echo "reading must be best or paper, not $READING" >&2; exit 2 ;;
esac

# One training under a CPU budget: its PID is sampled by cpu_clock.py and stopped by a watcher.
train() {  # RUN CONFIG ARGS...
  local run=$1 config=$2; shift 2
  agentsum train --config "$config" --run-dir "$run" --set train.seed="$SEED" --set train.valid_every=100 \
      --set train.max_minutes=$((MINUTES * 4)) "$@" > "$run.log" 2>&1 &
  local pid=$!
  python benchmarks/cpu_clock.py --pid "$pid" --out "$run.cpu.jsonl" --stop-after-minutes "$MINUTES" &
  wait "$pid" || true
}
train "$RUN1" cnndm-m1 "${M1[@]}" &
train "$RUN6" cnndm-m6 "${M6[@]}" &
wait

for run in "$RUN1" "$RUN6"; do
  python benchmarks/quality_curve.py "$run" --data "$VALID" --start 500 --only last --threads 1 \
      --out "$OUT/$(basename "$run")" > "$run.score.log" 2>&1 &
done
wait
