#!/usr/bin/env bash
# The main job end to end on the CNN/DailyMail data in ../shared/data:
#   1. train a small 3-agent DCA (preset `demo`) for a few CPU minutes,
#   2. summarize one held-out article,
#   3. evaluate on held-out documents with beam search and compare with Lead-3.
# Override with environment variables: MINUTES (training time, default 5), DATA (corpus root),
# TEST_START/TEST_END (held-out rows of validation_1000.jsonl, default 500-600).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
DATA=${DATA:-../shared/data/cnndm}
MINUTES=${MINUTES:-5}
TEST_START=${TEST_START:-500}
TEST_END=${TEST_END:-600}
RUN=runs/demo
mkdir -p runs
if [ ! -f "$DATA/train_stories.jsonl" ]; then
  echo "demo: $DATA/train_stories.jsonl not found; set DATA to the folder with the CNN/DailyMail JSONL files" >&2
  exit 2
fi

echo "== 1. training a 3-agent DCA for $MINUTES minutes (log: $RUN.train.log)"
agentsum train --config demo --run-dir "$RUN" \
  --set "data.train=$DATA/train_stories.jsonl" \
  --set "data.valid={path: $DATA/validation_1000.jsonl, start: 0, end: 100}" \
  --set "train.max_minutes=$MINUTES" 2>&1 | tee "$RUN.train.log"

echo "== 2. summarizing held-out article $TEST_START"
python - "$DATA/validation_1000.jsonl" "$TEST_START" > "$RUN.article.txt" <<'PY'
import json, sys
with open(sys.argv[1], encoding="utf-8") as f:
    for i, line in enumerate(f):
        if i == int(sys.argv[2]):
            print(json.loads(line)["article"])
            break
PY
head -c 600 "$RUN.article.txt"; echo " [...]"
echo "-- summary:"
agentsum summarize --checkpoint "$RUN/checkpoints/best.pt" "$RUN.article.txt"

echo "== 3. ROUGE on held-out documents $TEST_START-$TEST_END (beam 5, trigram blocking)"
agentsum evaluate --checkpoint "$RUN/checkpoints/best.pt" --data "$DATA/validation_1000.jsonl" \
  --start "$TEST_START" --end "$TEST_END" --out "$RUN/eval"
agentsum lead3 --data "$DATA/validation_1000.jsonl" --start "$TEST_START" --end "$TEST_END" --out "$RUN/lead3"
