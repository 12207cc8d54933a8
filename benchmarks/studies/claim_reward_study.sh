#!/usr/bin/env bash
# The claim reward against its control, at equal CPU minutes, from the shipped calls model.
#
# Each reading starts from the shipped calls model (`--init-from calls`) with ectsum-m7's settings
# (batch 16, lr 1e-4, one thread, semantic cohesion) and differs only in its objective:
#
#   rl-L     the mixed loss (eq 21, gamma 0.97) with sentence-level ROUGE-L rewards (eq 22) and the
#            claim reward at lambda = L (train.claim_reward; rl-0 is the paper's reward alone)
#   mle      the control: MLE + semantic cohesion (eq 19), the same learning rate
#
# Every run validates every EVERY steps on the 100 selection calls (training calls 1522-1621): NLL,
# and greedy ROUGE-L with the claim figures of its summaries (train.valid_rouge for the control), the
# curves. Each run is stopped once its process has had MINUTES of CPU (cpu_clock.py). Then each run's
# step checkpoints are decoded on the selection calls with SEARCH (the calls model's search, every
# option given, the same for every run) and scored with claim_figures.py; lambda and the checkpoint
# are chosen there, never on validation.
#
#   bash benchmarks/studies/claim_reward_study.sh train rl-0.1 mle      # two readings side by side
#   bash benchmarks/studies/claim_reward_study.sh score rl-0.1 mle      # their checkpoints on the selection calls
#   python benchmarks/studies/claim_reward_table.py runs/claim-reward/rl-0.1 runs/claim-reward/mle ...
#
# RESUME=1 continues killed runs from their last.pt with the CPU they had spent counted.
set -euo pipefail
cd "$(dirname "$0")/../.."
. .venv/bin/activate
MODE=${1:?train or score}; shift
MINUTES=${MINUTES:-45}
EVERY=${EVERY:-25}
ROOT=${ROOT:-runs/claim-reward}
SELECTION=(--data ../shared/data/ectsum/train.jsonl --start 1522 --end 1622)
SEARCH=(--beam 5 --min-length 30 --max-length 120 --no-repeat-ngram-size 3 --repeat-window 3 --numbers-from-source on --min-length-ratio 0.5 --repetition-penalty 1.0
        --figure-grammar on --source-periods on --numbers-in-context on --attribution-rerank off --role-names off --lm-weight 0)
mkdir -p "$ROOT"

reading() {  # NAME -> the --set arguments of that reading
  case "$1" in
    rl-*) echo "--set train.claim_reward=${1#rl-}" ;;
    mle) echo "--set train.objective=mle+sem --set train.valid_rouge=true" ;;
    *) echo "unknown reading $1 (rl-LAMBDA or mle)" >&2; exit 2 ;;
  esac
}

train() {  # NAME
  local run=$ROOT/$1 offset=0 resume=()
  if [[ -n "${RESUME:-}" && -f "$run/checkpoints/last.pt" ]]; then
    offset=$(python benchmarks/studies/cpu_clock.py --resume-offset "$run")
    resume=(--resume auto)
  fi
  # shellcheck disable=SC2046
  agentsum train --config ectsum-m7 --init-from calls --run-dir "$run" $(reading "$1") \
      --set train.valid_every="$EVERY" --set train.max_minutes=$((MINUTES * 4)) --set train.keep_checkpoints=40 \
      "${resume[@]}" >> "$run.log" 2>&1 &
  local pid=$!
  python benchmarks/studies/cpu_clock.py --pid "$pid" --out "$run.cpu.jsonl" --stop-after-minutes "$MINUTES" \
      --offset-seconds "$offset" &
  wait "$pid" || true
}

score() {  # NAME: every step checkpoint on the selection calls, decoded with SEARCH
  local run=$ROOT/$1 ck
  for ck in "$run"/checkpoints/step-*.pt; do
    local out=$run/sel-$(basename "$ck" .pt)
    [[ -f $out/scores.json ]] && continue
    agentsum --threads 1 evaluate --checkpoint "$ck" "${SELECTION[@]}" "${SEARCH[@]}" --out "$out" >> "$run.score.log" 2>&1
  done
}

for name in "$@"; do "$MODE" "$name" & done
wait
