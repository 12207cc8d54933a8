#!/usr/bin/env bash
# The main job end to end, on the SAMSum dialogues in ../shared/data:
#   1. summarize a held-out dialogue with the model shipped inside the package (seconds),
#   2. train a small single-agent pointer-generator (preset `demo`) for a few CPU minutes,
#   3. score both models and Lead-3 with ROUGE on held-out validation dialogues, and say which is
#      above which and by how much (scripts/demo_report.py).
# Override with environment variables: MINUTES (training time, default 5), DATA (folder with
# SAMSum's train.jsonl and valid.jsonl), TEST_START/TEST_END (validation rows, default 400-500),
# SHOW (the validation row summarized in step 1, default 3).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
DATA=${DATA:-../shared/data/samsum}
MINUTES=${MINUTES:-5}
TEST_START=${TEST_START:-400}
TEST_END=${TEST_END:-500}
SHOW=${SHOW:-3}
RUN=runs/demo
mkdir -p runs
for f in train.jsonl valid.jsonl; do
  if [ ! -f "$DATA/$f" ]; then
    echo "demo: $DATA/$f not found; set DATA to the folder with SAMSum's train.jsonl and valid.jsonl" >&2
    exit 2
  fi
done

echo "== 1. the shipped model (docs/model_card.md) on held-out validation dialogue $SHOW"
python - "$DATA/valid.jsonl" "$SHOW" "$RUN" <<'PY'
import json, sys
with open(sys.argv[1], encoding="utf-8") as f:
    row = json.loads(f.readlines()[int(sys.argv[2])])
open(sys.argv[3] + ".dialogue.txt", "w", encoding="utf-8").write(row["article"] + "\n")
open(sys.argv[3] + ".reference.txt", "w", encoding="utf-8").write(row["summary"] + "\n")
PY
cat "$RUN.dialogue.txt"
echo "-- summary by the shipped model:"
agentsum summarize "$RUN.dialogue.txt"
echo "-- reference (written by a person):"
cat "$RUN.reference.txt"

echo
echo "== 2. training a small model from scratch for $MINUTES minutes (log: $RUN.train.log)"
agentsum train --config demo --run-dir "$RUN" \
  --set "data.train=$DATA/train.jsonl" \
  --set "data.valid={path: $DATA/valid.jsonl, start: 0, end: 100}" \
  --set "train.max_minutes=$MINUTES" 2>&1 | tee "$RUN.train.log"
echo "-- its summary of the same dialogue:"
agentsum summarize --checkpoint "$RUN/checkpoints/best.pt" "$RUN.dialogue.txt"

echo
echo "== 3. ROUGE on held-out validation dialogues $TEST_START-$TEST_END (beam 5, trigram blocking)"
echo "-- the shipped model:"
agentsum evaluate --data "$DATA/valid.jsonl" --start "$TEST_START" --end "$TEST_END" --out "$RUN/eval-shipped"
echo "-- the $MINUTES-minute model:"
agentsum evaluate --checkpoint "$RUN/checkpoints/best.pt" --data "$DATA/valid.jsonl" \
  --start "$TEST_START" --end "$TEST_END" --out "$RUN/eval"
echo "-- Lead-3 (the first three utterances):"
agentsum lead3 --config demo --data "$DATA/valid.jsonl" --start "$TEST_START" --end "$TEST_END" --out "$RUN/lead3"
echo
# the closing text is computed from the scores and the training records just written
python scripts/demo_report.py "$RUN" --rows "$TEST_START-$TEST_END"
