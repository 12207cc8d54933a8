#!/usr/bin/env bash
# Trains agentsum/configs/dialogue-large.yaml, going on from its last checkpoint where one exists
# (train.resume: auto), for train.max_minutes each time it is run. Log: runs/dialogue-large.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p runs
if [ ! -s runs/samsum_dialogsum_train.jsonl ]; then
  cat ../shared/data/samsum/train.jsonl ../shared/data/dialogsum/train.jsonl > runs/samsum_dialogsum_train.jsonl
fi
agentsum train --config dialogue-large "$@" >> runs/dialogue-large.log 2>&1
