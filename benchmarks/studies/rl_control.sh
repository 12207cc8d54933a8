#!/usr/bin/env bash
# The RL phase's control: from the same start as the shipped model's RL phase (the coverage model,
# START), 50 more minutes of MLE with coverage at RL's learning rate instead of the mixed RL objective,
# one thread, stopped once its process has had MINUTES of CPU. Every step checkpoint is scored on
# validation rows 0-199 with the shipped search; the best one, and the mean of it and its two
# neighbours, on all 814 dialogues, beside the start and the RL model (the shipped dialogue model)
# on all 814 with the same search. Compare with the RL rows of docs/model_card.md.
#
# Search: the shipped model's settings, every option given (SEARCH), for every model scored here, so
# that the control, its start and the RL model are decoded alike whatever their checkpoints say; each
# scores.json records them.
#
#   bash benchmarks/studies/rl_control.sh START [MINUTES]
#
# START: the coverage model (the model shipped before the RL phase is in git history:
# `git show cc7af25^:agentsum/pretrained/samsum-en.pt > old.pt`). About an hour on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
. .venv/bin/activate
START=${1:?the coverage model to start from}
MINUTES=${2:-50}
RUN=runs/i19-mle-control
VALID=../shared/data/samsum/valid.jsonl
SEARCH=(--beam 5 --min-length 15 --max-length 60 --no-repeat-ngram-size 3 --repetition-penalty 1.5 --repeat-window 3
        --numbers-from-source off --min-length-ratio off --figure-grammar off --source-periods off --numbers-in-context off --attribution-rerank off --role-names off --lm-weight 0)
mkdir -p runs
agentsum train --config samsum-m1 --init-from "$START" --run-dir "$RUN" --set model.coverage=true \
    --set train.lr=1e-4 --set train.max_minutes=$((MINUTES * 4)) --set train.valid_every=250 \
    --set train.threads=1 > "$RUN.log" 2>&1 &
PID=$!
python benchmarks/studies/cpu_clock.py --pid "$PID" --out "$RUN.cpu.jsonl" --stop-after-minutes "$MINUTES"
wait "$PID" || true

export OMP_NUM_THREADS=1
best= best_r1=-1
for ck in "$RUN"/checkpoints/step-*.pt; do
  out="$RUN/eval-0-200-$(basename "$ck" .pt)"
  agentsum evaluate --checkpoint "$ck" --data "$VALID" --start 0 --end 200 "${SEARCH[@]}" --out "$out" > /dev/null
  r1=$(python -c "import json; print(json.load(open('$out/scores.json'))['rouge1'])")
  echo "$(basename "$ck"): ROUGE-1 $r1 on rows 0-199"
  if python -c "import sys; sys.exit(not $r1 > $best_r1)"; then best=$ck best_r1=$r1; fi
done
mapfile -t all < <(ls "$RUN"/checkpoints/step-*.pt)
for i in "${!all[@]}"; do [[ ${all[$i]} == "$best" ]] && k=$i; done
agentsum average "${all[@]:$((k > 0 ? k - 1 : 0)):3}" --out "$RUN/checkpoints/avg-best3.pt"
for ck in "$best" "$RUN/checkpoints/avg-best3.pt"; do
  agentsum evaluate --checkpoint "$ck" --data "$VALID" "${SEARCH[@]}" --out "$RUN/eval-all-$(basename "$ck" .pt)"
done
agentsum evaluate --checkpoint "$START" --data "$VALID" "${SEARCH[@]}" --out "$RUN/eval-all-start"
agentsum evaluate --model dialogue --data "$VALID" "${SEARCH[@]}" --out "$RUN/eval-all-rl-shipped"
