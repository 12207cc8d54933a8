#!/usr/bin/env bash
# The phases of a dialogue v2 candidate from the larger base (agentsum/configs/dialogue-large.yaml,
# trained by dialogue_large.sh), as the shipped v1 was made from samsum-m1: coverage, then
# self-critical RL. Both phases read SAMSum's training dialogues alone (the base read SAMSum and
# DialogSum); validation is SAMSum rows 100-813 (coverage, NLL) and rows 100-299 (RL, greedy ROUGE-L),
# never the labelled rows 0-99.
#
#   bash benchmarks/studies/dialogue_v2_study.sh cov           # 2 processes, COV_MINUTES (20), from BASE at COV_LR
#   BASE=runs/avg.pt COV_LR=3e-4 ROOT=runs/dialogue-v2b bash benchmarks/studies/dialogue_v2_study.sh cov
#   bash benchmarks/studies/dialogue_v2_study.sh rl            # 1 process, RL_MINUTES (25), attribution reward LAMBDA (0.2)
#   bash benchmarks/studies/dialogue_v2_study.sh score cov     # or score rl: validation and the labelled rows' summaries
set -euo pipefail
cd "$(dirname "$0")/../.."
MODE=${1:?cov, rl or score}
ROOT=${ROOT:-runs/dialogue-v2}
COV_MINUTES=${COV_MINUTES:-20}
BASE=${BASE:-runs/dialogue-large/checkpoints/best.pt}  # or the mean of its last checkpoints (agentsum average)
COV_LR=${COV_LR:-1e-3}
RL_MINUTES=${RL_MINUTES:-25}
LAMBDA=${LAMBDA:-0.2}
SAMSUM=../shared/data/samsum
# the shipped dialogue model's search, every option given (attribution_reward_study.sh's SEARCH)
SEARCH=(--beam 5 --min-length 15 --max-length 60 --no-repeat-ngram-size 3 --repeat-window 3 --repetition-penalty 1.5
        --numbers-from-source off --figure-grammar off --source-periods off --numbers-in-context off --attribution-rerank off --role-names off --lm-weight 0 --min-length-ratio 0.5)
mkdir -p "$ROOT"
[[ -f $ROOT/select.jsonl ]] || sed -n '101,300p' $SAMSUM/valid.jsonl > "$ROOT/select.jsonl"
[[ -f $ROOT/valid100.jsonl ]] || head -n 100 $SAMSUM/valid.jsonl > "$ROOT/valid100.jsonl"

case $MODE in
  cov)
    torchrun --standalone --nproc_per_node 2 -m agentsum.cli train --config dialogue-large \
        --init-from "$BASE" --run-dir "$ROOT/cov" --set train.resume=null --set train.lr="$COV_LR" \
        --set model.coverage=true --set data.train=$SAMSUM/train.jsonl --set train.max_minutes="$COV_MINUTES" \
        --set train.valid_every=250 >> "$ROOT/cov.log" 2>&1 ;;
  rl)
    agentsum --threads 1 train --config dialogue-large --init-from "$ROOT/cov/checkpoints/best.pt" \
        --run-dir "$ROOT/rl" --set train.resume=null --set model.coverage=true --set data.train=$SAMSUM/train.jsonl \
        --set data.valid="$ROOT/select.jsonl" --set train.objective=mixed --set train.lr=1e-4 --set train.rl_max_length=60 \
        --set train.attribution_reward="$LAMBDA" --set train.valid_every=40 --set train.valid_rouge_docs=200 \
        --set train.max_minutes="$RL_MINUTES" >> "$ROOT/rl.log" 2>&1 ;;
  score)
    name=${2:?score cov or score rl}
    ckpt=$ROOT/$name/checkpoints/best.pt
    agentsum --threads 1 evaluate --checkpoint "$ckpt" --data $SAMSUM/valid.jsonl "${SEARCH[@]}" \
        --out "$ROOT/$name-eval-all" >> "$ROOT/$name.score.log" 2>&1
    agentsum --threads 1 evaluate --checkpoint "$ckpt" --data $SAMSUM/valid.jsonl --start 100 --grammar "${SEARCH[@]}" \
        --out "$ROOT/$name-eval-100-813" >> "$ROOT/$name.score.log" 2>&1
    agentsum --threads 1 summarize --checkpoint "$ckpt" "$ROOT/valid100.jsonl" "${SEARCH[@]}" \
        --out "$ROOT/$name-labelled-text" >> "$ROOT/$name.score.log" 2>&1 ;;
  *) echo "unknown phase $MODE (cov, rl or score)" >&2; exit 2 ;;
esac
