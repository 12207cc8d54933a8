#!/usr/bin/env bash
# The paper's claim on long inputs, at equal CPU time: cnndm-m1 (one agent, pointer-generator) against
# cnndm-m6 (three communicating agents, multi-agent pointer, contextual agent attention, MLE + SEM) on
# CNN/DailyMail train_stories.jsonl with 800-token articles, 65 minutes each, one thread each, side by
# side on a 2-core machine. Then validation ROUGE of every checkpoint against minutes (rows 0-199) and
# of the last checkpoints on rows 500-999, beside Lead-3 on the same rows. Both runs are decoded with
# one set of search settings (SEARCH: beam 5, 35-100 tokens, trigram blocking alone), every option
# given, which quality_curve.py writes beside each score.
# About 1 h 30 min on 2 cores. Run from the project root after `bash scripts/setup.sh`.
set -euo pipefail
cd "$(dirname "$0")/../.."
. .venv/bin/activate
VALID=../shared/data/cnndm/validation_1000.jsonl
OUT=benchmarks/results/cnndm
SEARCH=(--beam 5 --min-length 35 --max-length 100 --no-repeat-ngram-size 3 --repetition-penalty 1 --repeat-window 0
        --numbers-from-source off --min-length-ratio off --figure-grammar off --source-periods off --numbers-in-context off --attribution-rerank off --role-names off --lm-weight 0)
mkdir -p runs "$OUT"

agentsum train --config cnndm-m1 > runs/cnndm-m1.log 2>&1 &
agentsum train --config cnndm-m6 > runs/cnndm-m6.log 2>&1 &
wait

python benchmarks/studies/quality_curve.py runs/cnndm-m1 --data "$VALID" --docs 200 --only steps "${SEARCH[@]}" \
  --out "$OUT" --threads 1 &
python benchmarks/studies/quality_curve.py runs/cnndm-m6 --data "$VALID" --docs 200 --only steps "${SEARCH[@]}" \
  --out "$OUT" --threads 1 &
wait
python benchmarks/studies/quality_curve.py runs/cnndm-m1 runs/cnndm-m6 --data "$VALID" --docs 200 --only steps \
  "${SEARCH[@]}" --out "$OUT"
python benchmarks/studies/quality_curve.py runs/cnndm-m1 runs/cnndm-m6 --data "$VALID" --start 500 --only last \
  "${SEARCH[@]}" --out "$OUT" --threads 2
