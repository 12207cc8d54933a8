#!/usr/bin/env bash
# Speaker-aware reading against its control, at equal CPU minutes, from the shipped dialogue model.
#
# Each reading starts from the shipped dialogue model (`--init-from dialogue`) with samsum-m1's
# settings and coverage on (as shipped), lr 3e-4, one thread, and differs only in its option:
#
#   control-S      MLE + coverage, seed S
#   spkemb-S       the same with model.speaker_embedding (the speaker of every token), seed S
#   speakers-S     the same with one agent per participant (data.agent_split: speakers, at most 8 agents),
#                  their messages on (model.communication) and the multi-agent pointer; eq 10's contextual
#                  agent attention stays off, as its output layer would not fit the shipped model's, seed S
#   names-S        the control's settings on SAMSum's training dialogues plus a copy of each with its
#                  participants renamed (benchmarks/studies/name_copies.py --seed S, agentsum.data.names), seed S
#
# Validation during training (NLL, the checkpoints) uses SAMSum validation rows 100-299, never the
# labelled rows 0-99. Each run is stopped once its process has had MINUTES of CPU (cpu_clock.py);
# its last checkpoint is the reading's model, scored by `score` on validation rows 100-813 and
# summarized on the labelled rows 0-99, with the shipped model's search (SEARCH) for every run.
#
#   bash benchmarks/studies/speaker_study.sh train control-1 control-2
#   bash benchmarks/studies/speaker_study.sh score control-1 control-2
set -euo pipefail
cd "$(dirname "$0")/../.."
. .venv/bin/activate
MODE=${1:?train or score}; shift
MINUTES=${MINUTES:-15}
ROOT=${ROOT:-runs/speaker}
# the shipped dialogue model's search, every option given, the same for every run and for v1
SEARCH=(--beam 5 --min-length 15 --max-length 60 --no-repeat-ngram-size 3 --repeat-window 3 --repetition-penalty 1.5
        --numbers-from-source off --figure-grammar off --source-periods off --numbers-in-context off --attribution-rerank off --role-names off --lm-weight 0 --min-length-ratio 0.5)
mkdir -p "$ROOT"
[[ -f $ROOT/select.jsonl ]] || sed -n '101,300p' ../shared/data/samsum/valid.jsonl > "$ROOT/select.jsonl"
[[ -f $ROOT/valid100.jsonl ]] || head -n 100 ../shared/data/samsum/valid.jsonl > "$ROOT/valid100.jsonl"

reading() {  # NAME-SEED -> the --set arguments of that reading
  local seed=${1##*-}
  case "${1%-*}" in
    control) echo "--set train.seed=$seed" ;;
    spkemb) echo "--set train.seed=$seed --set model.speaker_embedding=true" ;;
    names) echo "--set train.seed=$seed --set data.train=$ROOT/names-train-$seed.jsonl" ;;
    speakers) echo "--set train.seed=$seed --set data.agents=auto --set data.agent_split=speakers --set data.max_agents=8 --set model.communication=true --set model.pointer=multi" ;;
    *) echo "unknown reading $1 (control-S, spkemb-S, speakers-S or names-S)" >&2; exit 2 ;;
  esac
}

train() {  # NAME
  local run=$ROOT/$1
  if [[ ${1%-*} == names && ! -f $ROOT/names-train-${1##*-}.jsonl ]]; then
    python benchmarks/studies/name_copies.py ../shared/data/samsum/train.jsonl "$ROOT/names-train-${1##*-}.jsonl" \
        --seed "${1##*-}" >> "$run.log"
  fi
  # shellcheck disable=SC2046
  agentsum train --config samsum-m1 --init-from dialogue --run-dir "$run" $(reading "$1") \
      --set model.coverage=true --set train.lr=3e-4 --set data.valid="$ROOT/select.jsonl" \
      --set train.valid_every=250 --set train.max_minutes=$((MINUTES * 4)) --set train.keep_checkpoints=40 \
      >> "$run.log" 2>&1 &
  local pid=$!
  python benchmarks/studies/cpu_clock.py --pid "$pid" --out "$run.cpu.jsonl" --stop-after-minutes "$MINUTES" &
  wait "$pid" || true
}

score() {  # NAME: its last checkpoint's summaries of rows 0-99 (first, for labelling), and its scores on rows 100-813
  local run=$ROOT/$1
  agentsum --threads 1 summarize --checkpoint "$run/checkpoints/last.pt" "$ROOT/valid100.jsonl" "${SEARCH[@]}" \
      --out "$run/labelled-text" >> "$run.score.log" 2>&1
  agentsum --threads 1 evaluate --checkpoint "$run/checkpoints/last.pt" --data ../shared/data/samsum/valid.jsonl \
      --start 100 --grammar "${SEARCH[@]}" --out "$run/eval-100-813" >> "$run.score.log" 2>&1
}

for name in "$@"; do "$MODE" "$name" & done
wait
