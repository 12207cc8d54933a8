#!/usr/bin/env bash
# One pair of the paper's claim (DCA against one agent): CNN/DailyMail train_stories.jsonl, 800-token
# articles (CORPUS=cnndm, the default), SAMSum dialogues (CORPUS=samsum) or ECTSum earnings calls
# (CORPUS=ectsum): two readings trained side by side, one thread each, each stopped (SIGTERM, which
# saves last.pt) once its process has had MINUTES minutes of CPU. The CPU clock, not the wall clock,
# makes the pair fair when other work shares the machine. Then each last checkpoint is scored by
# `agentsum evaluate` on the reported rows (CNN/DM: validation rows 500-999, as rows 0-199 are the
# trainer's validation; SAMSum: all 814 validation dialogues, also the trainer's validation, as
# SAMSum's test split is held out; ECTSum: all 247 validation calls), both runs with the one set of
# search settings pinned below for the corpus. Its scores.json (which records those settings) with
# the checkpoint's step, and the run's metrics.jsonl and CPU samples, are copied beside each other, so
# that benchmarks/studies/claim_table.py can rebuild the table from committed files and check that the
# rows it compares were decoded alike.
#
#   bash benchmarks/studies/claim_study.sh SEED best|paper [MINUTES]
#   bash benchmarks/studies/claim_study.sh SEED READING_A READING_B [MINUTES]
#   CORPUS=samsum bash benchmarks/studies/claim_study.sh SEED m6 m6-if 40
#   CORPUS=ectsum bash benchmarks/studies/claim_study.sh SEED m1-long m6 90   # earnings calls, the whole call
#   RESUME=1 CORPUS=ectsum bash benchmarks/studies/claim_study.sh SEED m1-long m6 90   # continue a stopped pair
#   STEPS=961 bash benchmarks/studies/claim_study.sh 1 m6 m6-ends   # each run also stops at step 961
#   SCORE_ONLY=1 CORPUS=ectsum bash benchmarks/studies/claim_study.sh SEED m1-long m6   # score trained runs again
#   SCORE_ONLY=1 MORE_CHECKPOINTS="step-00000400 step-00000500" CORPUS=ectsum \
#       bash benchmarks/studies/claim_study.sh SEED m1-long m6   # and these checkpoints too (runs/RUN/eval-CKPT)
#
# Decoding: one set of search settings per corpus (SEARCH below), every option of it given, for both
# runs of a pair, never each checkpoint's own: the presets decode differently (ectsum-m1-long 20-120
# tokens with no repeat window, ectsum-m6 30-120 with a window of 3), and a checkpoint carries the
# settings of the preset it was trained from. Each corpus's set is the one its committed rows were
# scored with; another set means scoring every run of the table again (SCORE_ONLY=1), which
# claim_table.py asks for when rows differ.
#
# Equal CPU time is equal work only on one machine (m6 made 14.8 steps per CPU minute on one
# machine here, m6 with agent_state: ends 32.9 on another): each run's machine (boot id, CPU model) is saved beside its
# scores, and benchmarks/studies/claim_table.py compares runs of different machines at equal steps only,
# which STEPS gives. Each run's batch order (order.json; runs without one shuffled with
# random.shuffle) is saved too: runs of one seed under different orders did not see the same batches.
#
# A reading names a preset and the changes on top of it:
#   m1            CORPUS-m1 as printed         m6            CORPUS-m6 as printed (Table 6 split; ectsum:
#   m1-long       CORPUS-m1-long (ectsum: one agent over the tokens the agents read)   agents: auto)
#   m1-if         + input feeding              m6-if         + input feeding
#   m6-whole      + agent_split: whole         m6-if-whole   + both
#   m6-ends       + agent_state: ends          m6-if-whole-ends  + all three
# best = m1-if m6-if-whole; paper = m1 m6. Runs: runs/CORPUS-READING-sSEED; scores, metrics and CPU
# samples: benchmarks/results/CORPUS/claim/CORPUS-READING-sSEED/ (python benchmarks/studies/claim_table.py
# --corpus CORPUS). CNN/DM: about 80 minutes on a quiet 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
. .venv/bin/activate
SEED=${1:?seed}
case "${2:?reading}" in
  best)  A=m1-if; B=m6-if-whole; MINUTES=${3:-65} ;;
  paper) A=m1; B=m6; MINUTES=${3:-65} ;;
  *)     A=$2; B=${3:?second reading}; MINUTES=${4:-65} ;;
esac
CORPUS=${CORPUS:-cnndm}
STEP_LIMIT=()
if [[ -n "${STEPS:-}" ]]; then STEP_LIMIT=(--set train.max_steps="$STEPS"); fi
case "$CORPUS" in
  cnndm)  VALID=../shared/data/cnndm/validation_1000.jsonl; ROWS=(--start 500); EVERY=100
          SEARCH=(--beam 5 --min-length 35 --max-length 100 --no-repeat-ngram-size 3 --repetition-penalty 1
                  --repeat-window 0 --numbers-from-source off --min-length-ratio off --figure-grammar off --source-periods off --numbers-in-context off --attribution-rerank off --role-names off --lm-weight 0) ;;
  # trigram blocking alone, as samsum/final.md and OpenNMT-py's SAMSum decoding (peer_quality.py)
  samsum) VALID=../shared/data/samsum/valid.jsonl; ROWS=(); EVERY=250
          SEARCH=(--beam 5 --min-length 15 --max-length 60 --no-repeat-ngram-size 3 --repetition-penalty 1
                  --repeat-window 0 --numbers-from-source off --min-length-ratio off --figure-grammar off --source-periods off --numbers-in-context off --attribution-rerank off --role-names off --lm-weight 0) ;;
  # ECTSum: the presets select on the last 100 training calls, so all 247 validation calls are unseen.
  # Numbers generated as well as copied: seed 1's checkpoints predate numbers_from_source.
  ectsum) VALID=../shared/data/ectsum/valid.jsonl; ROWS=(); EVERY=100
          SEARCH=(--beam 5 --min-length 20 --max-length 120 --no-repeat-ngram-size 3 --repetition-penalty 1
                  --repeat-window 0 --numbers-from-source off --min-length-ratio off --figure-grammar off --source-periods off --numbers-in-context off --attribution-rerank off --role-names off --lm-weight 0) ;;
  *) echo "CORPUS must be cnndm, samsum or ectsum, not $CORPUS" >&2; exit 2 ;;
esac
OUT=benchmarks/results/$CORPUS/claim
mkdir -p runs "$OUT"

reading() {  # READING -> the preset, then its --set overrides, one per line
  case "$1" in
    m1) echo $CORPUS-m1 ;;
    m1-if) printf '%s\n' $CORPUS-m1 model.input_feeding=true ;;
    m1-long) echo $CORPUS-m1-long ;;
    m6) echo $CORPUS-m6 ;;
    m6-if) printf '%s\n' $CORPUS-m6 model.input_feeding=true ;;
    m6-whole) printf '%s\n' $CORPUS-m6 data.agent_split=whole ;;
    m6-if-whole) printf '%s\n' $CORPUS-m6 model.input_feeding=true data.agent_split=whole ;;
    m6-ends) printf '%s\n' $CORPUS-m6 model.agent_state=ends ;;
    m6-if-whole-ends) printf '%s\n' $CORPUS-m6 model.input_feeding=true data.agent_split=whole model.agent_state=ends ;;
    *) echo "unknown reading: $1 (see the header of $0)" >&2; return 2 ;;
  esac
}
reading "$A" > /dev/null
reading "$B" > /dev/null

# One training under a CPU budget: its PID is sampled by cpu_clock.py and stopped by a watcher.
# RESUME=1 continues runs an earlier sitting left (killed, or the machine taken back): each goes on
# from its last.pt (--resume auto), and its budget counts the CPU it had spent up to that checkpoint.
train() {  # READING
  local run=runs/$CORPUS-$1-s$SEED lines args=() config offset=0
  mapfile -t lines < <(reading "$1")
  config=${lines[0]}
  for setting in "${lines[@]:1}"; do args+=(--set "$setting"); done
  if [[ -n "${RESUME:-}" && -f "$run/checkpoints/last.pt" ]]; then
    offset=$(python benchmarks/studies/cpu_clock.py --resume-offset "$run")
    args+=(--resume auto)
    echo "$run: resuming; $offset CPU seconds before its checkpoint count in its budget" >&2
  fi
  agentsum train --config "$config" --run-dir "$run" --set train.seed="$SEED" --set train.valid_every=$EVERY \
      --set train.max_minutes=$((MINUTES * 4)) "${STEP_LIMIT[@]}" "${args[@]}" >> "$run.log" 2>&1 &
  local pid=$!
  python benchmarks/studies/cpu_clock.py --pid "$pid" --out "$run.cpu.jsonl" --stop-after-minutes "$MINUTES" \
      --offset-seconds "$offset" &
  wait "$pid" || true
}
# The last checkpoint (and MORE_CHECKPOINTS) of one run, decoded with SEARCH on the reported rows; the
# last one's scores.json, with the checkpoint's step, beside the run's files.
score() {  # READING
  local name=$CORPUS-$1-s$SEED
  local run=runs/$name checkpoint
  for checkpoint in ${MORE_CHECKPOINTS:-} last; do
    agentsum --threads 1 evaluate --checkpoint "$run/checkpoints/$checkpoint.pt" --data "$VALID" "${ROWS[@]}" \
        "${SEARCH[@]}" --out "$run/eval-$checkpoint" >> "$run.score.log" 2>&1
  done
  python - "$run" "$OUT/$name" <<'PY'
import json, sys
from agentsum.checkpoint import read_checkpoint
run, out = sys.argv[1:]
scores = json.load(open(f"{run}/eval-last/scores.json"))
scores.update(checkpoint="last.pt", step=int(read_checkpoint(f"{run}/checkpoints/last.pt", mmap=True)["step"]))
open(f"{out}/scores.json", "w").write(json.dumps(scores, indent=2) + "\n")
PY
}

if [[ -z "${SCORE_ONLY:-}" ]]; then
  train "$A" &
  train "$B" &
  wait
  for name in "$A" "$B"; do
    run=runs/$CORPUS-$name-s$SEED
    mkdir -p "$OUT/$(basename "$run")"
    cp "$run/metrics.jsonl" "$OUT/$(basename "$run")/metrics.jsonl"
    cp "$run.cpu.jsonl" "$OUT/$(basename "$run")/cpu.jsonl"
    python -c 'import json, sys; sys.path.insert(0, "benchmarks/studies"); import cpu_clock; print(json.dumps(cpu_clock.machine()))' \
        > "$OUT/$(basename "$run")/machine.json"
    python -c 'import json; from agentsum.data.dataset import EPOCH_ORDER; print(json.dumps({"epoch_order": EPOCH_ORDER}))' \
        > "$OUT/$(basename "$run")/order.json"
  done
fi
scoring=()
for name in "$A" "$B"; do
  mkdir -p "$OUT/$CORPUS-$name-s$SEED"
  score "$name" &
  scoring+=($!)
done
for pid in "${scoring[@]}"; do wait "$pid"; done  # a failed scoring fails the study
