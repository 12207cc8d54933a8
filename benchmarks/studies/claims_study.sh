#!/usr/bin/env bash
# The claim figures of the calls model, each claim constraint of search alone and all three, and the
# extractive baselines, on ECTSum validation (or the selection calls, training rows 1522-1621, with
# SPLIT=selection), then the table of benchmarks/results/ectsum/claims.md (SPLIT=selection:
# claims_selection.md), references included.
#
#   bash benchmarks/studies/claims_study.sh                       # MODEL=calls, SPLIT=validation
#   MODEL=runs/calls-v2/checkpoints/best.pt bash benchmarks/studies/claims_study.sh
#
# Every run of the model decodes with SEARCH, the shipped calls model's own settings (beam 5, 30-120
# tokens, trigram blocking, numbers only from the call, repeat_window 3), and differs from the first
# only by the constraints named in its row (given after SEARCH, they win); scores.json records every
# setting. One thread each, one after the other.
set -euo pipefail
cd "$(dirname "$0")/../.."
MODEL=${MODEL:-calls}
SPLIT=${SPLIT:-validation}
OUT=${OUT:-runs/claims}
DATA=../shared/data/ectsum
if [ "$SPLIT" = selection ]; then
  ROWS=(--data "$DATA/train.jsonl" --start 1522 --end 1622); CORPUS=("$DATA/train.jsonl" 1522 1622)
  TABLE=benchmarks/results/ectsum/claims_selection.md; PREFIX=sel-
else
  ROWS=(--data "$DATA/valid.jsonl"); CORPUS=("$DATA/valid.jsonl")
  TABLE=benchmarks/results/ectsum/claims.md; PREFIX=
fi
if [ -f "$MODEL" ]; then WHICH=(--checkpoint "$MODEL"); else WHICH=(--model "$MODEL"); fi
SEARCH=(--beam 5 --min-length 30 --max-length 120 --no-repeat-ngram-size 3 --repetition-penalty 1 --repeat-window 3
        --numbers-from-source on --min-length-ratio 0.5 --figure-grammar off --source-periods off
        --numbers-in-context off --attribution-rerank off --role-names off --lm-weight 0)
NAME=$(basename "${MODEL%.pt}")
mkdir -p "$OUT"
declare -A RUNS=(
  ["$NAME"]=""
  ["$NAME + figure_grammar"]="--figure-grammar on"
  ["$NAME + source_periods"]="--source-periods on"
  ["$NAME + numbers_in_context"]="--numbers-in-context on"
  ["$NAME + all three"]="--figure-grammar on --source-periods on --numbers-in-context on"
)
ORDER=("$NAME" "$NAME + figure_grammar" "$NAME + source_periods" "$NAME + numbers_in_context" "$NAME + all three")
ARGS=()
for row in "${ORDER[@]}"; do
  dir="$OUT/$PREFIX$(echo "$row" | tr ' +' '__' | tr -s '_')"
  if [ ! -f "$dir/scores.json" ]; then
    # shellcheck disable=SC2086
    OMP_NUM_THREADS=1 agentsum evaluate "${WHICH[@]}" "${ROWS[@]}" "${SEARCH[@]}" ${RUNS[$row]} --out "$dir" > "$dir.log" 2>&1
  fi
  ARGS+=(--run "$row=$dir")
done
for method in lead lexrank textrank; do
  dir="$OUT/$PREFIX$method"
  [ -f "$dir/scores.json" ] || agentsum extract --method "$method" --sentences 3 "${ROWS[@]}" --out "$dir" > "$dir.log" 2>&1
  ARGS+=(--run "$method-3=$dir")
done
python benchmarks/studies/claim_figures.py --data "${CORPUS[0]}" ${CORPUS[1]:+--start "${CORPUS[1]}" --end "${CORPUS[2]}"} \
  "${ARGS[@]}" --out "$TABLE"
