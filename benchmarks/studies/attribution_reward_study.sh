#!/usr/bin/env bash
# The attribution reward against its controls, at equal CPU minutes, from the shipped dialogue model.
#
# Each run starts from the shipped dialogue model (`--init-from dialogue`) with samsum-m1's settings and
# coverage on (as shipped) and continues it with the shipped model's RL phase (train.objective mixed,
# lr 1e-4, sampled summaries of at most 60 tokens; docs/model_card.md, "Retraining it"), one thread:
#
#   rl-S       the mixed objective, sentence ROUGE-L rewards only (eq 22), seed S
#   attr-S     the same with the attribution penalty, train.attribution_reward=LAMBDA (default 0.2), seed S
#   flu-S      the same with the fluency penalty, train.fluency_reward=FLUENCY (default 0.1), seed S
#   both-S     both penalties
#
# The MLE continuations of the same model at the same CPU minutes are speaker_study.sh's control-S.
# Validation during training uses SAMSum validation rows 100-299, never the labelled rows 0-99. Each
# run is stopped once its process has had MINUTES of CPU (cpu_clock.py); its last checkpoint is scored
# by `score` on validation rows 100-813 (ROUGE, the attribution and grammar figures) and summarizes the labelled
# rows 0-99, with the shipped model's search (SEARCH, the same as speaker_study.sh's) for every run.
#
#   bash benchmarks/studies/attribution_reward_study.sh train rl-1 attr-1
#   bash benchmarks/studies/attribution_reward_study.sh score rl-1 attr-1
#   bash benchmarks/studies/attribution_reward_study.sh score v1        # the shipped model, the same way
set -euo pipefail
cd "$(dirname "$0")/../.."
. .venv/bin/activate
MODE=${1:?train or score}; shift
MINUTES=${MINUTES:-15}
LAMBDA=${LAMBDA:-0.2}
FLUENCY=${FLUENCY:-0.1}
ROOT=${ROOT:-runs/attribution}
# the shipped dialogue model's search, every option given, the same for every run and for v1
SEARCH=(--beam 5 --min-length 15 --max-length 60 --no-repeat-ngram-size 3 --repeat-window 3 --repetition-penalty 1.5
        --numbers-from-source off --figure-grammar off --source-periods off --numbers-in-context off --attribution-rerank off --role-names off --lm-weight 0 --min-length-ratio 0.5)
mkdir -p "$ROOT"
[[ -f $ROOT/select.jsonl ]] || sed -n '101,300p' ../shared/data/samsum/valid.jsonl > "$ROOT/select.jsonl"
[[ -f $ROOT/valid100.jsonl ]] || head -n 100 ../shared/data/samsum/valid.jsonl > "$ROOT/valid100.jsonl"

reading() {  # NAME-SEED -> the --set arguments of that run
  local seed=${1##*-}
  case "${1%-*}" in
    rl) echo "--set train.seed=$seed" ;;
    attr) echo "--set train.seed=$seed --set train.attribution_reward=$LAMBDA" ;;
    flu) echo "--set train.seed=$seed --set train.fluency_reward=$FLUENCY" ;;
    both) echo "--set train.seed=$seed --set train.attribution_reward=$LAMBDA --set train.fluency_reward=$FLUENCY" ;;
    *) echo "unknown run $1 (rl-S, attr-S, flu-S or both-S)" >&2; exit 2 ;;
  esac
}

train() {  # NAME
  local run=$ROOT/$1
  # shellcheck disable=SC2046
  agentsum --threads 1 train --config samsum-m1 --init-from dialogue --run-dir "$run" $(reading "$1") \
      --set model.coverage=true --set train.objective=mixed --set train.lr=1e-4 --set train.rl_max_length=60 \
      --set data.valid="$ROOT/select.jsonl" --set train.valid_every=200 --set train.valid_rouge_docs=200 \
      --set train.max_minutes=$((MINUTES * 4)) --set train.keep_checkpoints=40 \
      >> "$run.log" 2>&1 &
  local pid=$!
  python benchmarks/studies/cpu_clock.py --pid "$pid" --out "$run.cpu.jsonl" --stop-after-minutes "$MINUTES" &
  wait "$pid" || true
}

score() {  # NAME: its last checkpoint (v1: the shipped model) on validation rows 100-813, and its summaries of rows 0-99
  local run=$ROOT/$1 model=(--checkpoint "$ROOT/$1/checkpoints/last.pt")
  [[ $1 == v1 ]] && model=(--model dialogue)
  agentsum --threads 1 evaluate "${model[@]}" --data ../shared/data/samsum/valid.jsonl \
      --start 100 --grammar "${SEARCH[@]}" --out "$run/eval-100-813" >> "$run.score.log" 2>&1
  agentsum --threads 1 summarize "${model[@]}" "$ROOT/valid100.jsonl" "${SEARCH[@]}" \
      --out "$run/labelled-text" >> "$run.score.log" 2>&1
}

for name in "$@"; do "$MODE" "$name" & done
wait
