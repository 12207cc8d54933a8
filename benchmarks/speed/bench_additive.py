"""Blockwise additive attention (agentsum.models.additive) against the broadcast form it replaces.

Times forward + backward of DCA's eq (8) word-attention scores at training sizes, and the forward
of one beam-search step, both implementations in the same run, and prints the ratio.

    python benchmarks/speed/bench_additive.py                      # B 16, T 56, S 400, H 256; 2 threads
    python benchmarks/speed/bench_additive.py --S 800 --T 100 --threads 1
"""

from __future__ import annotations

import argparse
import time

import torch

from agentsum.models.additive import additive_scores


def broadcast(keys, query, v):
    return torch.tanh(keys.unsqueeze(1) + query.unsqueeze(2)) @ v


def timed(fn, repeats: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--B", type=int, default=16, help="documents per training batch")
    p.add_argument("--T", type=int, default=56, help="target steps")
    p.add_argument("--S", type=int, default=400, help="source tokens (all agents)")
    p.add_argument("--H", type=int, default=256, help="hidden size")
    p.add_argument("--beam-rows", type=int, default=150, help="hypotheses in one beam step (30 docs x beam 5)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    B, T, S, H = args.B, args.T, args.S, args.H
    keys = torch.randn(B, S, H, requires_grad=True)
    query = torch.randn(B, T, H, requires_grad=True)
    v = torch.randn(H, requires_grad=True)
    upstream = torch.randn(B, T, S)

    def train(f):
        return lambda: torch.autograd.grad((f(keys, query, v) * upstream).sum(), (keys, query, v))

    rows = []
    base = timed(train(broadcast), args.repeats)
    new = timed(train(additive_scores), args.repeats)
    rows.append(("train fwd+bwd", base, new))
    k1, q1 = torch.randn(args.beam_rows, S, H), torch.randn(args.beam_rows, 1, H)
    with torch.no_grad():
        base = timed(lambda: broadcast(k1, q1, v), args.repeats * 4)
        new = timed(lambda: additive_scores(k1, q1, v), args.repeats * 4)
    rows.append(("beam step fwd", base, new))
    print(f"B {B}, T {T}, S {S}, H {H}, beam rows {args.beam_rows}, {args.threads} threads")
    print(f"{'workload':16} {'broadcast ms':>13} {'blockwise ms':>13} {'speed-up':>9}")
    for name, b, n in rows:
        print(f"{name:16} {b * 1e3:13.1f} {n * 1e3:13.1f} {b / n:8.2f}x")


if __name__ == "__main__":
    main()
