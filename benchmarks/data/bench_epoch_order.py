"""An epoch's batch order at the papers' corpus sizes: the order as it was (``random.shuffle`` of a
Python list of every index, then of the batches) against the order as it is (a stable argsort of
raw 64-bit draws, :func:`agentsum.data.dataset.epoch_order`), interleaved in one run on this
process's CPU clock; both with the same numpy window sort. Every rank computes it before its first
step, and again at each epoch.

The two orders differ (a new order, not a faster way to the old one); both put every document in
exactly one batch, which this checks.

    python benchmarks/data/bench_epoch_order.py [--sizes 287227 2400000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

import numpy as np

from agentsum.data.dataset import epoch_order

RESULTS = Path(__file__).resolve().parents[1] / "results" / "bench_epoch_order.json"


def old_epoch_order(lengths, batch_size: int, seed: int, epoch: int, window: int = 50) -> list[list[int]]:
    """epoch_order before the change, verbatim."""
    rng = random.Random(seed * 100_003 + epoch)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    if window > 1 and order:
        span = batch_size * window
        shuffled = np.asarray(order, dtype=np.int64)
        keys = np.asarray(lengths, dtype=np.int64)[shuffled]
        windows = np.arange(len(shuffled), dtype=np.int64) // span
        order = shuffled[np.argsort(windows * (int(keys.max()) + 1) + keys, kind="stable")].tolist()
    batches = [order[s: s + batch_size] for s in range(0, len(order), batch_size)]
    rng.shuffle(batches)
    return batches


def cpu_seconds(fn) -> tuple[float, list[list[int]]]:
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[287_227, 2_400_000])
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    results = []
    for n in args.sizes:
        # as the trainer passes them: the store's lengths column (an int64 array)
        lengths = np.random.default_rng(0).integers(20, 900, n).astype(np.int64)
        old, new = [], []
        for repeat in range(args.repeats):
            seconds, batches = cpu_seconds(lambda: old_epoch_order(lengths, args.batch_size, 1, repeat))
            assert sorted(i for b in batches for i in b) == list(range(n))
            old.append(seconds)
            seconds, batches = cpu_seconds(lambda: epoch_order(lengths, args.batch_size, 1, repeat))
            assert sorted(i for b in batches for i in b) == list(range(n))
            new.append(seconds)
        row = {"documents": n, "batch_size": args.batch_size, "repeats": args.repeats,
               "old_cpu_s": round(statistics.median(old), 3), "new_cpu_s": round(statistics.median(new), 3)}
        row["speedup"] = round(row["old_cpu_s"] / row["new_cpu_s"], 2)
        print(row, flush=True)
        results.append(row)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
