#!/usr/bin/env bash
# The SAMSum study at equal CPU time (docs/model_card.md, benchmarks/results/samsum/):
#   1. samsum-m1 (single-agent pointer-generator) and samsum-m6 (3-agent DCA), 80 minutes each,
#      one thread each, side by side on a 2-core machine;
#   2. 25 more minutes for m1 two ways: training on as before, or See et al.'s coverage phase
#      (model.coverage=true from the 80-minute m1, coverage loss weight 1);
#   3. validation ROUGE of every checkpoint against training minutes (quality_curve.py) and Lead-3;
#   4. samsum-m7 (30 minutes of mixed RL from samsum-m6) beside OpenNMT-py's pointer-generator trained
#      on the same data for 40 CPU minutes (peer_quality.py; installs the peer on first use).
# Every run is decoded with one set of search settings (SEARCH: beam 5, 15-60 tokens, trigram blocking
# alone, as OpenNMT-py decodes in peer_quality.py samsum), every option given rather than each
# checkpoint's own, and quality_curve.py writes them beside each score.
# About 3 h 30 min on 2 cores. Run from the project root after `bash scripts/setup.sh`.
set -euo pipefail
cd "$(dirname "$0")/../.."
. .venv/bin/activate
VALID=${VALID:-../shared/data/samsum/valid.jsonl}
OUT=benchmarks/results/samsum
SEARCH=(--beam 5 --min-length 15 --max-length 60 --no-repeat-ngram-size 3 --repetition-penalty 1 --repeat-window 0
        --numbers-from-source off --min-length-ratio off --figure-grammar off --source-periods off --numbers-in-context off --attribution-rerank off --role-names off --lm-weight 0)
mkdir -p runs "$OUT"

agentsum train --config samsum-m1 > runs/samsum-m1.log 2>&1 &
agentsum train --config samsum-m6 > runs/samsum-m6.log 2>&1 &
wait

cp runs/samsum-m1/checkpoints/last.pt runs/samsum-m1-80min.pt  # the resumed run overwrites last.pt
agentsum train --config samsum-m1 --resume runs/samsum-m1/checkpoints/last.pt \
  --set train.max_minutes=25 > runs/samsum-m1-more.log 2>&1 &
agentsum train --config samsum-m1 --init-from runs/samsum-m1-80min.pt --run-dir runs/samsum-m1-cov \
  --set model.coverage=true --set train.max_minutes=25 > runs/samsum-m1-cov.log 2>&1 &
wait

# every checkpoint on the first 200 validation dialogues (the curve; both processes append to one
# curve.jsonl), the plot of all three, then the last checkpoints on all 814 and Lead-3
python benchmarks/studies/quality_curve.py runs/samsum-m1 --data "$VALID" --docs 200 --only steps "${SEARCH[@]}" \
  --out "$OUT" --threads 1 &
python benchmarks/studies/quality_curve.py runs/samsum-m6 runs/samsum-m1-cov --offset samsum-m1-cov=80 --data "$VALID" \
  --docs 200 --only steps "${SEARCH[@]}" --out "$OUT" --threads 1 &
wait
python benchmarks/studies/quality_curve.py runs/samsum-m1 runs/samsum-m6 runs/samsum-m1-cov --offset samsum-m1-cov=80 \
  --data "$VALID" --docs 200 --only steps "${SEARCH[@]}" --out "$OUT"
python benchmarks/studies/quality_curve.py runs/samsum-m1 runs/samsum-m6 runs/samsum-m1-cov --offset samsum-m1-cov=80 \
  --data "$VALID" --only last "${SEARCH[@]}" --out "$OUT" --threads 2
agentsum lead3 --config samsum-m1 --data "$VALID" --out "$OUT/lead3"

# m7 and the OpenNMT-py peer side by side; the peer on the CPU clock (its process's CPU minutes)
agentsum train --config samsum-m7 > runs/samsum-m7.log 2>&1 &
python benchmarks/peer/peer_quality.py samsum --minutes 40 --save-every 250 --docs 200 --out "$OUT" > runs/peer-samsum.log 2>&1 &
wait
python benchmarks/studies/quality_curve.py runs/samsum-m7 --data "$VALID" --only best "${SEARCH[@]}" --out "$OUT" --threads 2
python benchmarks/studies/quality_curve.py runs/samsum-m1 runs/samsum-m6 runs/samsum-m1-cov --offset samsum-m1-cov=80 \
  --data "$VALID" --docs 200 --only steps "${SEARCH[@]}" --out "$OUT"  # the plot again, now with the peer's curve
