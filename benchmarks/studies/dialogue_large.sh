#!/usr/bin/env bash
# Trains agentsum/configs/dialogue-large.yaml, going on from its last checkpoint where one exists
# (train.resume: auto), for train.max_minutes each time it is run. NPROC=2 trains under torchrun with
# two processes of one thread each (the global batch of 16 split between them); a run may resume on
# another number of processes. Extra arguments go to `agentsum train` (--set train.max_minutes=120).
# Log: runs/dialogue-large.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p runs
if [ ! -s runs/samsum_dialogsum_train.jsonl ]; then
  cat ../shared/data/samsum/train.jsonl ../shared/data/dialogsum/train.jsonl > runs/samsum_dialogsum_train.jsonl
fi
NPROC=${NPROC:-1}
if [ "$NPROC" -gt 1 ]; then
  torchrun --standalone --nproc_per_node "$NPROC" -m agentsum.cli train --config dialogue-large "$@" \
    >> runs/dialogue-large.log 2>&1
else
  agentsum train --config dialogue-large "$@" >> runs/dialogue-large.log 2>&1
fi
