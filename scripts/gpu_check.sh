#!/usr/bin/env bash
# The GPU check: what has to work, and how fast, on one machine with GPUs, in at most 6 minutes.
#
#   On a GPU machine (a CUDA build of torch; TORCH_SPEC is yours to choose for the machine's CUDA):
#       TORCH_SPEC="torch --index-url https://download.pytorch.org/whl/cu124" bash scripts/setup.sh
#       bash scripts/gpu_check.sh                 # DEVICE=cuda
#   The same steps, smaller, on the CPU (tests/test_gpu_check.py runs this):
#       DEVICE=cpu bash scripts/gpu_check.sh
#
# It prints one markdown table (also written to $OUT_DIR/table.md; logs beside it):
#   * `m6` (DCA, 3 agents, 800-token articles, 50k vocabulary) and `lcsts-small` (Transformer-PG on
#     Chinese characters) trained for a fixed number of steps in fp32 and in bf16, tokens/s from the
#     run's metrics.jsonl (the last logged window, after the warm-up steps);
#   * torchrun with one process per visible GPU (NCCL; on the CPU 2 gloo processes), lcsts-small;
#   * `agentsum evaluate --device`: beam-5 decoding of 200 documents with the m6 model just trained;
#   * `agentsum serve --device` answering one HTTP request with attention.
# The corpora are synthetic and written here (English-like pseudo-words for m6, Chinese characters
# for lcsts-small): nothing outside the repository is read. Uses .venv when present; sets up nothing.
# Exit status 1 when a step failed (its row says so), 0 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
[ -f .venv/bin/activate ] && . .venv/bin/activate

DEVICE=${DEVICE:-cuda}
OUT=${OUT_DIR:-runs/gpu_check}
rm -rf "$OUT" && mkdir -p "$OUT"
ROWS="$OUT/rows.jsonl"
: > "$ROWS"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false

if [ "$DEVICE" = cpu ]; then
  # small enough for a 2-core machine: the same commands, short sequences, a few steps and documents
  STEPS=4 LOG_EVERY=2 STEP_TIMEOUT=150
  M6_SETS=(--set data.max_article_tokens=90 --set data.max_summary_tokens=20 --set data.vocab_size=2000
           --set train.batch_size=4 --set train.threads=1)
  LCSTS_SETS=(--set train.batch_size=8 --set train.threads=1)
  M6_LEXICON=1500 M6_WORDS=90 LCSTS_CHARS=60 NPROC=2 DECODE_DOCS=6 DECODE_SETS=(--max-length 20 --min-length 5)
else
  STEPS=60 LOG_EVERY=20 STEP_TIMEOUT=60
  M6_SETS=() LCSTS_SETS=()
  M6_LEXICON=50000 M6_WORDS=800 LCSTS_CHARS=150 DECODE_DOCS=200 DECODE_SETS=(--min-length 35)
  NPROC=$(python -c "import torch; print(max(torch.cuda.device_count(), 1))")
fi

BUDGET=${BUDGET:-340}  # seconds for all steps: each step's timeout is cut to what is left

limit() {  # the timeout of the next step: STEP_TIMEOUT, or what is left of BUDGET
  local left=$((BUDGET - SECONDS))
  echo $(( left < STEP_TIMEOUT ? (left > 5 ? left : 5) : STEP_TIMEOUT ))
}

last_error() {  # the line of a log that says what went wrong
  { grep -E "[Ee]rror|Traceback" "$1" | tail -n 1 || true; } | cut -c1-150 | grep . || tail -n 1 "$1" | cut -c1-150
}

row() {  # row STEP WHAT TOKENS_PER_S RESULT OK
  python - "$ROWS" "$@" <<'EOF'
import json, sys
path, step, what, rate, result, ok = sys.argv[1:]
with open(path, "a", encoding="utf-8") as f:
    f.write(json.dumps({"step": step, "what": what, "tokens_per_s": rate, "result": result, "ok": ok == "1"}) + "\n")
EOF
}

# ------------------------------------------------------------------------------ corpora
python - "$OUT" "$M6_LEXICON" "$M6_WORDS" "$LCSTS_CHARS" "$STEPS" "$DECODE_DOCS" "$NPROC" <<'EOF'
import json, random, sys
out, lexicon, words, chars, steps, decode_docs, nproc = sys.argv[1], *map(int, sys.argv[2:])
rng = random.Random(0)
letters = "bcdfghklmnprstvz", "aeiou"
vocab = sorted({"".join(rng.choice(letters[i % 2]) for i in range(rng.randint(4, 9))) for _ in range(lexicon * 2)})
vocab = vocab[:lexicon]

def english(n_words):
    sentences, n = [], 0
    while n < n_words:
        k = rng.randint(8, 20)
        sentences.append(" ".join(rng.choice(vocab) for _ in range(k)).capitalize() + ".")
        n += k
    return sentences

def write(name, rows):
    with open(f"{out}/{name}", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")

def m6_rows(n, prefix):  # the summary restates three article sentences (something to copy)
    rows = []
    for i in range(n):
        s = english(words)
        rows.append({"id": f"{prefix}{i}", "article": " ".join(s), "summary": "\n".join(s[:2] + s[-1:])})
    return rows

hanzi = [chr(0x4E00 + i) for i in range(0, 20000, 4)]  # 5,000 characters
def chinese(n):
    return "".join(rng.choice(hanzi) if rng.random() > 0.06 else "，" for _ in range(n)) + "。"

write("en_train.jsonl", m6_rows((steps + 2) * 16, "en"))  # a document for every step of m6's batch
write("en_test.jsonl", m6_rows(decode_docs, "test"))
lcsts = []
for i in range((steps + 2) * 32 * nproc):
    article = chinese(chars)
    lcsts.append({"id": f"zh{i}", "article": article, "summary": article[: chars // 6] + "。"})
write("zh_train.jsonl", lcsts)
EOF

# ------------------------------------------------------------------------------ training
train_row() {  # train_row NAME CONFIG PRECISION CORPUS [SETS...]
  local name=$1 config=$2 precision=$3 corpus=$4
  shift 4
  local run="$OUT/$name" started=$SECONDS
  timeout "$(limit)" python -m agentsum.cli train --config "$config" --run-dir "$run" \
      --set data.train="$corpus" --set data.store_dir="$corpus.store" --set data.valid=null --set train.device="$DEVICE" \
      --set train.precision="$precision" --set train.max_steps="$STEPS" --set train.log_every="$LOG_EVERY" \
      --set train.valid_every="$STEPS" --set train.keep_checkpoints=0 --set train.tensorboard=false "$@" \
      > "$run.log" 2>&1
  local rc=$?
  local rate result
  IFS=$'\t' read -r rate result < <(python - "$run/metrics.jsonl" <<'EOF'
import json, sys
try:
    rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if '"tokens_per_s"' in l]
    print(f"{rows[-1]['tokens_per_s']:.0f}\tloss {rows[-1]['loss']:.3f} at step {rows[-1]['step']}")
except (OSError, IndexError, ValueError):
    print("-\tno metrics")
EOF
  )
  if [ $rc -eq 0 ]; then
    row "train $name" "$config, $precision, $STEPS steps on $DEVICE (last $LOG_EVERY timed)" "$rate" \
        "$result ($((SECONDS - started)) s)" 1
  else
    row "train $name" "$config, $precision, $STEPS steps on $DEVICE" "$rate" \
        "FAILED rc=$rc: $(last_error "$run.log") (see $run.log)" 0
  fi
}

train_row m6-fp32 m6 fp32 "$OUT/en_train.jsonl" "${M6_SETS[@]}"
train_row m6-bf16 m6 bf16 "$OUT/en_train.jsonl" "${M6_SETS[@]}"
train_row lcsts-small-fp32 lcsts-small fp32 "$OUT/zh_train.jsonl" "${LCSTS_SETS[@]}"
train_row lcsts-small-bf16 lcsts-small bf16 "$OUT/zh_train.jsonl" "${LCSTS_SETS[@]}"

# ------------------------------------------------------------------------------ torchrun
if [ "$DEVICE" = cpu ]; then BACKEND=gloo; else BACKEND=nccl; fi
if [ "$NPROC" -eq 1 ]; then BACKEND="one process: no process group"; fi
run="$OUT/torchrun" started=$SECONDS
if [ "$DEVICE" = cpu ]; then batch=8; else batch=32; fi
timeout "$(limit)" python -m torch.distributed.run --standalone --nproc_per_node "$NPROC" -m agentsum.cli train \
    --config lcsts-small --run-dir "$run" --set data.train="$OUT/zh_train.jsonl" \
    --set data.store_dir="$OUT/zh_train.jsonl.store" --set data.valid=null \
    --set train.device="$DEVICE" --set train.max_steps="$STEPS" --set train.log_every="$LOG_EVERY" \
    --set train.valid_every="$STEPS" --set train.keep_checkpoints=0 --set train.tensorboard=false \
    --set train.batch_size=$((batch * NPROC)) --set train.threads=1 > "$run.log" 2>&1
rc=$?
rate=$(python -c "
import json, sys
rows = [json.loads(l) for l in open('$run/metrics.jsonl') if '\"tokens_per_s\"' in l]
print(f\"{rows[-1]['tokens_per_s']:.0f}\")" 2>/dev/null || echo -)
if [ $rc -eq 0 ] && grep -q "$NPROC process(es) on $DEVICE" "$run.log"; then
  row "torchrun" "lcsts-small, $NPROC process(es) ($BACKEND), global batch $((batch * NPROC))" "$rate" \
      "$STEPS steps ($((SECONDS - started)) s)" 1
else
  row "torchrun" "lcsts-small, $NPROC process(es) ($BACKEND)" "$rate" \
      "FAILED rc=$rc: $(last_error "$run.log") (see $run.log)" 0
fi

# ------------------------------------------------------------------------------ decoding
CKPT="$OUT/m6-fp32/checkpoints/last.pt"
run="$OUT/evaluate" started=$SECONDS
timeout "$(limit)" python -m agentsum.cli evaluate --checkpoint "$CKPT" --data "$OUT/en_test.jsonl" \
    --device "$DEVICE" --beam 5 --batch-size 16 "${DECODE_SETS[@]}" --out "$run" > "$run.log" 2>&1
rc=$?
IFS=$'\t' read -r rate result < <(python - "$run" <<'EOF'
import json, sys
try:
    scores = json.load(open(f"{sys.argv[1]}/scores.json"))
    tokens = sum(len(json.loads(l)["prediction"].split()) for l in open(f"{sys.argv[1]}/predictions.jsonl"))
    print(f"{tokens / scores['seconds']:.0f}\t{scores['documents_per_s']:.1f} documents/s, ROUGE-L {scores['rougeLsum']:.1f}")
except (OSError, KeyError, ValueError):
    print("-\tno scores")
EOF
)
if [ $rc -eq 0 ]; then
  row "decode" "agentsum evaluate --device $DEVICE: beam 5, $DECODE_DOCS documents (${DECODE_SETS[*]})" "$rate" \
      "$result ($((SECONDS - started)) s)" 1
else
  row "decode" "agentsum evaluate --device $DEVICE, beam 5" "$rate" \
      "FAILED rc=$rc: $(last_error "$run.log") (see $run.log)" 0
fi

# ------------------------------------------------------------------------------ serving
PORT=$(python -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
run="$OUT/serve" started=$SECONDS
python -m agentsum.cli serve --checkpoint "$CKPT" --device "$DEVICE" --port "$PORT" --log-level warning \
    > "$run.log" 2>&1 &
SERVER=$!
IFS=$'\t' read -r rate result ok < <(timeout "$(limit)" python - "$PORT" "$OUT/en_test.jsonl" "$SERVER" <<'EOF'
import json, sys, time, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
text = json.loads(open(sys.argv[2], encoding="utf-8").readline())["article"]
def server_running():  # an exited server is a zombie until the script reaps it
    try:
        return open(f"/proc/{sys.argv[3]}/stat").read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False

while True:  # the model loads first; the step's timeout bounds the wait
    try:
        urllib.request.urlopen(base + "/health", timeout=2)
        break
    except OSError:
        if not server_running():
            print("-\tFAILED: the server exited\t0")
            sys.exit()
        time.sleep(0.1)
try:
    device = json.load(urllib.request.urlopen(base + "/v1/model", timeout=10))["device"]
    body = json.dumps({"text": text, "beam_size": 5, "attention": True}).encode()
    request = urllib.request.Request(base + "/v1/summarize", body, {"content-type": "application/json"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as r:
        status, reply = r.status, json.load(r)
    seconds = time.perf_counter() - started
    summary = reply["summaries"][0]
    assert len(summary["attention"]["per_token"]) == len(summary["tokens"])
    print(f"{len(summary['tokens']) / seconds:.0f}\tHTTP {status} on {device}, {len(summary['tokens'])} tokens "
          f"with attention in {seconds:.2f} s\t1")
except Exception as e:  # noqa: BLE001 (the row says what went wrong)
    print(f"-\tFAILED: {type(e).__name__}: {str(e)[:80]}\t0")
EOF
)
kill "$SERVER" 2>/dev/null
wait "$SERVER" 2>/dev/null
if [ "${ok:-0}" != 1 ]; then result="${result:-FAILED: no answer}: $(last_error "$run.log") (see $run.log)"; fi
row "serve" "agentsum serve --device $DEVICE: one POST /v1/summarize (beam 5, attention)" "${rate:--}" \
    "$result ($((SECONDS - started)) s)" "${ok:-0}"

# ------------------------------------------------------------------------------ the table
python - "$ROWS" "$OUT/table.md" "$DEVICE" <<'EOF'
import json, platform, sys
import torch
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
if sys.argv[3] == "cuda" and torch.cuda.is_available():
    where = f"{torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}"
else:
    where = f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads), torch {torch.__version__}"
lines = [f"GPU check on {where}", "", "| step | what ran | tokens/s | result |", "|---|---|---|---|"]
lines += [f"| {r['step']} | {r['what']} | {r['tokens_per_s']} | {r['result']} |" for r in rows]
table = "\n".join(lines) + "\n"
open(sys.argv[2], "w", encoding="utf-8").write(table)
print(table, end="")
sys.exit(0 if all(r["ok"] for r in rows) else 1)
EOF
