"""Lane-based dropout (agentsum.models.dropout) against torch.nn.functional.dropout.

Times forward + backward of one dropout call at the Transformer-PG benchmark's largest activation
(the feed-forward hidden layer: 32 documents x 122 positions x 1024) and at its attention-weight
size, both implementations in the same run, alternating, and prints the ratio.

    python benchmarks/speed/bench_dropout.py                    # 2 threads
    python benchmarks/speed/bench_dropout.py --threads 1 --dtype bf16
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from agentsum.models.dropout import dropout
from agentsum.runtime import tune_allocator

SHAPES = {"ffn hidden": (32, 122, 1024), "attention weights": (32, 4, 122, 122), "model states": (32, 122, 256)}


def fwd_bwd(fn, x: torch.Tensor, grad: torch.Tensor) -> float:
    start = time.perf_counter()
    y = fn(x, 0.1, True)
    y.backward(grad)
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    tune_allocator()
    dtype = torch.float32 if args.dtype == "fp32" else torch.bfloat16
    print(f"dropout p=0.1, forward + backward, {args.threads} thread(s), {args.dtype}, median of {args.repeats}")
    print(f"| shape | F.dropout ms | agentsum ms | speed-up |\n|---|---|---|---|")
    for name, shape in SHAPES.items():
        x = torch.randn(shape, dtype=dtype, requires_grad=True)
        grad = torch.randn(shape, dtype=dtype)
        times = {"torch": [], "ours": []}
        for _ in range(args.repeats + 1):  # alternate, first round is warm-up
            times["torch"].append(fwd_bwd(F.dropout, x, grad))
            times["ours"].append(fwd_bwd(dropout, x, grad))
        base, ours = (statistics.median(t[1:]) * 1e3 for t in (times["torch"], times["ours"]))
        print(f"| {name} {tuple(shape)} | {base:.2f} | {ours:.2f} | {base / ours:.2f}x |")


if __name__ == "__main__":
    main()
