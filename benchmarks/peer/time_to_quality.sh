#!/usr/bin/env bash
# Time to quality at equal size on SAMSum: agentsum's m1 at the peer's sizes
# (benchmarks/peer/configs/peer_samsum_m1.yaml, bench_peer.py's dca-1agent-k0) against OpenNMT-py's
# pointer-generator (peer_quality.py samsum), both for MINUTES minutes of CPU time (default 60),
# one thread each, side by side. Every checkpoint is decoded on validation rows 0-199 with the same
# search (beam 5, 15-60 tokens, trigram blocking, UNK replacement); time_to_quality.py reports the CPU
# minutes each needs to first reach the peer's best ROUGE-1, as a curve and a ratio.
# About MINUTES + 30 minutes on 2 cores. Run from the project root after `bash scripts/setup.sh`.
set -euo pipefail
cd "$(dirname "$0")/../.."
. .venv/bin/activate
MINUTES=${MINUTES:-60}
OUT=${OUT:-benchmarks/results/samsum/time_to_quality}
RUN=runs/ttq-agentsum
VALID=../shared/data/samsum/valid.jsonl
mkdir -p runs "$OUT"

# agentsum: wall minutes are not the clock here, its CPU time is: stop it (SIGTERM saves last.pt) once
# the process has had MINUTES minutes of CPU
agentsum train --config benchmarks/peer/configs/peer_samsum_m1.yaml --run-dir "$RUN" > "$RUN.log" 2>&1 &
PID=$!
python benchmarks/studies/cpu_clock.py --pid "$PID" --out "$RUN.cpu.jsonl" --stop-after-minutes "$MINUTES" &
python benchmarks/peer/peer_quality.py samsum --minutes "$MINUTES" --out "$OUT" --work runs/ttq-peer \
    --name opennmt --save-every 100 --docs 200 --no-last-on-all > runs/ttq-peer.log 2>&1 &
wait "$PID" || true
# every option of the search given, as the peer's decode_args pin its own
python benchmarks/studies/quality_curve.py "$RUN" --data "$VALID" --docs 200 --only steps --threads 1 \
    --beam 5 --min-length 15 --max-length 60 --no-repeat-ngram-size 3 --repetition-penalty 1 --repeat-window 0 \
    --numbers-from-source off --min-length-ratio off --figure-grammar off --source-periods off --numbers-in-context off --attribution-rerank off --role-names off --lm-weight 0 --cpu-log "ttq-agentsum=$RUN.cpu.jsonl" --out "$OUT" > runs/ttq-agentsum-score.log 2>&1
wait
python benchmarks/peer/time_to_quality.py "$OUT/curve.jsonl" --agentsum ttq-agentsum --peer opennmt --out "$OUT"
