"""Speed of ROUGE rewards on token ids (agentsum.training.rewards) against Google's rouge-score, same run.

    python benchmarks/speed/bench_reward.py                  # 2,000 real CNN/DM pairs if present, else random
    python benchmarks/speed/bench_reward.py --n 500 --repeats 5 --random

Timed, each on the same N pairs (inputs prepared beforehand, outside the timers; best of --repeats):

  rouge-score text   RougeScorer(default tokenizer, no stemmer).score(reference, candidate) on the
                     text: its usual use, regex tokenization + scoring.
  rouge-score ids    RougeScorer(whitespace tokenizer) on the ids written as strings ("17 4 99"):
                     exactly the tokens ours sees; its F1s are checked against ours in this run.
  ours               rouge_l / rouge_n on id lists.
  eq 22 prefixes     intermediate rewards for ROUGE-L: rouge-score on every sentence prefix of the
                     candidate (the naive way) vs agentsum.training.rewards.sentence_rewards (one LCS pass).
  batch tensors      sentence_reward_matrix on (B, T) id tensors, B = --batch, to show the tensor
                     plumbing's cost.

Every ratio is ours over a rouge-score baseline measured in the same run: this machine is shared
and noisy, so only side-by-side ratios are worth comparing.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "rouge_check" / "cnndm_test_simcls.jsonl"
SENTENCE_END_WORDS = (".", "!", "?")

from rouge_score import rouge_scorer  # noqa: E402

from agentsum.training.rewards import (  # noqa: E402
    lcs_prefix_lengths,
    rouge_l,
    rouge_n,
    sentence_ends,
    sentence_reward_matrix,
    sentence_rewards,
)


class WhitespaceTokenizer:
    def tokenize(self, text):
        return text.split()


def load_pairs(args) -> tuple[list[tuple[str, str]], str]:
    if not args.random and args.data.exists():
        pairs = []
        with args.data.open() as f:
            for line in f:
                d = json.loads(line)
                pairs.append((d["candidate"], d["reference"]))
                if len(pairs) == args.n:
                    break
        return pairs, f"real pairs from {args.data}"
    rng = random.Random(args.seed)
    words = [f"w{i}" for i in range(400)] + list(SENTENCE_END_WORDS)
    weights = [1 / (i + 1) for i in range(400)] + [0.4, 0.03, 0.03]  # Zipf-ish; about one sentence end per 15 words
    pairs = []
    for _ in range(args.n):
        cand = rng.choices(words, weights, k=rng.randint(30, 110))
        ref = rng.choices(words, weights, k=rng.randint(30, 80))
        pairs.append((" ".join(cand), " ".join(ref)))
    return pairs, "random Zipf-like word pairs (no real data found or --random)"


def best_of(repeats, fn):
    best = float("inf")
    result = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=2000, help="pairs")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--random", action="store_true", help="random pairs even if the real data exists")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=3, help="best of this many timings each")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args(argv)

    import torch

    pairs, source = load_pairs(args)
    vocab: dict[str, int] = {}
    to_ids = lambda text: [vocab.setdefault(w, len(vocab) + 4) for w in text.split()]  # noqa: E731
    end_ids = frozenset(vocab.setdefault(w, len(vocab) + 4) for w in SENTENCE_END_WORDS)
    id_pairs = [(to_ids(c), to_ids(r)) for c, r in pairs]
    id_strings = [(" ".join(map(str, c)), " ".join(map(str, r))) for c, r in id_pairs]
    # every sentence-prefix string, for the naive eq 22 baseline
    prefix_strings = []
    for (c, r), (cs, rs) in zip(id_pairs, id_strings):
        toks = cs.split()
        prefix_strings.append((rs, [" ".join(toks[:e]) for e in sentence_ends(c, end_ids)]))
    n = len(pairs)
    n_prefixes = sum(len(ps) for _, ps in prefix_strings)
    mean_len = sum(len(c) for c, _ in id_pairs) / n, sum(len(r) for _, r in id_pairs) / n
    print(f"{n} pairs, {source}")
    print(f"mean length: candidate {mean_len[0]:.1f}, reference {mean_len[1]:.1f} tokens; "
          f"{n_prefixes} sentence prefixes ({n_prefixes / n:.2f} per candidate)")

    text_L = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    text_all = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)
    ids_L = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False, tokenizer=WhitespaceTokenizer())
    ids_all = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False,
                                       tokenizer=WhitespaceTokenizer())

    def rs_run(scorer, data):
        return lambda: [scorer.score(r, c) for c, r in data]

    def ours_L():
        return [rouge_l(c, r).fmeasure for c, r in id_pairs]

    def ours_all():
        return [(rouge_n(c, r, 1).fmeasure, rouge_n(c, r, 2).fmeasure, rouge_l(c, r).fmeasure) for c, r in id_pairs]

    def rs_prefixes():
        return [[ids_L.score(rs, p)["rougeL"].fmeasure for p in ps] for rs, ps in prefix_strings]

    def ours_prefixes():
        return [sentence_rewards(c, r, end_ids, "rougeL")[1] for c, r in id_pairs]

    rows = {}
    rows["rougeL: rouge-score text"], _ = best_of(args.repeats, rs_run(text_L, pairs))
    rows["rougeL: rouge-score ids"], rs_L = best_of(args.repeats, rs_run(ids_L, id_strings))
    rows["rougeL: ours"], our_L = best_of(args.repeats, ours_L)
    rows["rouge1+2+L: rouge-score text"], _ = best_of(args.repeats, rs_run(text_all, pairs))
    rows["rouge1+2+L: rouge-score ids"], rs_all = best_of(args.repeats, rs_run(ids_all, id_strings))
    rows["rouge1+2+L: ours"], our_all = best_of(args.repeats, ours_all)
    rows["eq22 rougeL prefixes: rouge-score ids"], rs_pre = best_of(args.repeats, rs_prefixes)
    rows["eq22 rougeL prefixes: ours sentence_rewards"], our_pre = best_of(args.repeats, ours_prefixes)
    rows["lcs_prefix_lengths only"], _ = best_of(args.repeats, lambda: [lcs_prefix_lengths(c, r) for c, r in id_pairs])

    # batched tensors: (B, T) candidates, (B, T') references with EOS + PAD, as the RL step has them
    T = max(len(c) for c, _ in id_pairs) + 1
    T2 = max(len(r) for _, r in id_pairs) + 1
    cand_t = torch.zeros(n, T, dtype=torch.long)
    ref_t = torch.zeros(n, T2, dtype=torch.long)
    for b, (c, r) in enumerate(id_pairs):
        cand_t[b, : len(c) + 1] = torch.tensor(c + [3])
        ref_t[b, : len(r) + 1] = torch.tensor(r + [3])
    batches = [(cand_t[i:i + args.batch], ref_t[i:i + args.batch]) for i in range(0, n, args.batch)]
    rows[f"eq22 sentence_reward_matrix, B={args.batch} tensors"], mats = best_of(
        args.repeats, lambda: [sentence_reward_matrix(c, r, end_ids) for c, r in batches])

    # equality in the same run
    eq_L = sum(a["rougeL"].fmeasure == b for a, b in zip(rs_L, our_L))
    eq_all = sum(a[k].fmeasure == v for a, b in zip(rs_all, our_all) for k, v in zip(("rouge1", "rouge2", "rougeL"), b))
    eq_pre = 0
    worst_pre = 0.0
    for fs, rewards in zip(rs_pre, our_pre):
        prev = 0.0
        for f, r in zip(fs, rewards):
            worst_pre = max(worst_pre, abs((f - prev) - r))
            eq_pre += (f - prev) == r
            prev = f
    totals = torch.cat([t for _, t in mats])
    worst_total = (totals.double() - torch.tensor([a["rougeL"].fmeasure for a in rs_L], dtype=torch.float64)).abs().max()
    print(f"equality: rougeL {eq_L}/{n} exact; rouge1/2/L {eq_all}/{3 * n} exact; "
          f"eq22 rewards {eq_pre}/{n_prefixes} exact (max |diff| {worst_pre:.1e}); "
          f"matrix totals max |diff| {worst_total:.1e} (float32)")

    base = {"rougeL": rows["rougeL: rouge-score ids"], "rouge1+2+L": rows["rouge1+2+L: rouge-score ids"]}
    text_base = {"rougeL": rows["rougeL: rouge-score text"], "rouge1+2+L": rows["rouge1+2+L: rouge-score text"]}
    print(f"\n{'':48s} {'seconds':>9s} {'pairs/s':>10s}  speed vs rouge-score ids / text")
    for name, sec in rows.items():
        group = name.split(":")[0]
        if group.startswith("eq22"):
            ratio = f"{rows['eq22 rougeL prefixes: rouge-score ids'] / sec:9.1f}x"
        elif group in base:
            ratio = f"{base[group] / sec:9.1f}x / {text_base[group] / sec:.1f}x"
        else:
            ratio = f"{rows['rougeL: rouge-score ids'] / sec:9.1f}x"
        print(f"{name:48s} {sec:9.3f} {n / sec:10.0f}  {ratio}")
    if args.json:
        args.json.write_text(json.dumps({"n": n, "source": source, "seconds": rows, "n_prefixes": n_prefixes,
                                         "equal": {"rougeL": eq_L, "rouge1+2+L": eq_all, "eq22": eq_pre}}, indent=1))
    ok = eq_L == n and eq_all == 3 * n and worst_pre <= 1e-12
    if not ok:
        print("MISMATCH against rouge-score", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
