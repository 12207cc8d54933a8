"""How many of an article's tokens the agents read, one agent against three, by agent split.

For each preset and ``data.agent_split`` reading, every article of the corpus is prepared as
training prepares it, and the tokens the agents hold are counted: the mean over all articles, and
over the articles long enough to fill one agent's truncation (``max_article_tokens``), the mean,
the minimum and how many of them an m6 reading leaves short of it. Also the agents' shares:
the smallest agent's tokens, and how many documents have an agent under 10 tokens.

    python benchmarks/data/agent_tokens.py                       # CNN/DM validation, first 300 articles
    python benchmarks/data/agent_tokens.py --corpus samsum --docs 0   # all of SAMSum validation
"""

from __future__ import annotations

import argparse
import statistics

from agentsum.config import load_config
from agentsum.data.dataset import prepare_all
from agentsum.data.sources import load_examples

CORPORA = {"cnndm": "../shared/data/cnndm/validation_1000.jsonl", "samsum": "../shared/data/samsum/valid.jsonl"}


def counts(corpus: str, preset: str, split: str | None, docs: int) -> list[list[int]]:
    cfg = load_config(preset, [f"data.agent_split={split}"] if split else []).data
    examples = load_examples(CORPORA[corpus], end=docs or None)
    return [[len(agent) for agent in doc.agents] for doc in prepare_all(examples, cfg, drop_empty=False)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="cnndm", choices=sorted(CORPORA))
    parser.add_argument("--docs", type=int, default=300, help="first N articles (0: all)")
    args = parser.parse_args()
    one = counts(args.corpus, f"{args.corpus}-m1", None, args.docs)
    truncation = load_config(f"{args.corpus}-m1").data.max_article_tokens
    full = [k for k, agents in enumerate(one) if sum(agents) >= truncation]
    print(f"{args.corpus}: {len(one)} articles; {len(full)} reach {truncation} tokens (one agent's truncation)\n")
    print("| reading | mean tokens, all | mean, those reaching the truncation | min there | short of it there"
          " | smallest agent, mean | documents with an agent under 10 tokens |")
    print("|---|---|---|---|---|---|---|")
    for label, preset, split in [("m1", f"{args.corpus}-m1", None), ("m6, Table 6 split", f"{args.corpus}-m6", "table6"),
                                 ("m6, whole", f"{args.corpus}-m6", "whole")]:
        rows = one if preset.endswith("m1") else counts(args.corpus, preset, split, args.docs)
        totals = [sum(agents) for agents in rows]
        there = [totals[k] for k in full]
        short = sum(t < truncation for t in there)
        smallest = [min(agents) for agents in rows if len(agents) > 1 and sum(agents)]
        small = sum(min(agents) < 10 for agents in rows if len(agents) > 1 and sum(agents))
        print(f"| {label} | {statistics.mean(totals):.1f} | {statistics.mean(there):.1f} | {min(there)} | {short} | "
              + (f"{statistics.mean(smallest):.1f} | {small} |" if smallest else "– | – |"))


if __name__ == "__main__":
    main()
