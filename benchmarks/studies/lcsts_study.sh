#!/usr/bin/env bash
# LCSTS at equal CPU time: agentsum's Transformer pointer-generator with input feeding (paper 003;
# the lcsts-small preset: characters, 2 + 2 layers of d_model 128, Noam warm-up) against OpenNMT-py
# 3.5.1's Transformer + copy attention (2 + 2 layers of d 256, characters; benchmarks/peer/peer_quality.py),
# MINUTES each (default 20), one thread each, side by side on a 2-core machine. Every checkpoint is
# scored with character ROUGE on ../shared/data/lcsts/test.jsonl, beside the first-20 and
# first-30-character baselines. agentsum's checkpoints are decoded as OpenNMT-py decodes
# (peer_quality.py lcsts): beam 4, at most 25 characters, no n-gram blocking (SEARCH, every option
# given, written beside each score). Run from the project root after `bash scripts/setup.sh`.
set -euo pipefail
cd "$(dirname "$0")/../.."
. .venv/bin/activate
MINUTES=${MINUTES:-20}
TEST=../shared/data/lcsts/test.jsonl
OUT=benchmarks/results/lcsts
SEARCH=(--beam 4 --min-length 0 --max-length 25 --no-repeat-ngram-size 0 --repetition-penalty 1 --repeat-window 0
        --numbers-from-source off --min-length-ratio off --figure-grammar off --source-periods off --numbers-in-context off --attribution-rerank off --role-names off --lm-weight 0)
mkdir -p runs "$OUT"

agentsum train --config lcsts-small --run-dir runs/lcsts-small --set train.threads=1 \
  --set train.max_minutes="$MINUTES" --set train.keep_checkpoints=40 > runs/lcsts-small.log 2>&1 &
python benchmarks/peer/peer_quality.py lcsts --minutes "$MINUTES" --docs 0 --out "$OUT" > runs/peer-lcsts.log 2>&1 &
wait

python benchmarks/studies/quality_curve.py runs/lcsts-small --data "$TEST" --only steps --lead-chars 20 "${SEARCH[@]}" \
  --out "$OUT" --threads 2
agentsum lead3 --config lcsts-small --data "$TEST" --chars 20 --out "$OUT/first20"
agentsum lead3 --config lcsts-small --data "$TEST" --chars 30 --out "$OUT/first30"
