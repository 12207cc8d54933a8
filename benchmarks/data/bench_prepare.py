"""Preparation speed of CNN/DailyMail articles: the pipeline as it was against the pipeline as it is,
interleaved in one run, on this process's CPU clock (the ratio is what to read on a noisy machine).

As it was: every sentence of the whole article cleaned (character map and control class over
every text), split (``blingfire.text_to_sentences``, a fresh buffer per call) and tokenized by the
regex over the whole sentence, then truncated by the agent split. As it is (:func:`agentsum.data.dataset.prepare`): sentences split and tokenized only until
the agents' token budget is full, tokenized by whitespace pieces through a cache, blingfire called
into a reused buffer, ASCII text cleaned by a short path. Both give the same documents (checked here on every article).

    python benchmarks/data/bench_prepare.py [--docs 2000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import blingfire

from agentsum.config import load_config
from agentsum.data import text
from agentsum.data.agents import split_among_agents
from agentsum.data.dataset import Document, agent_budget, prepare
from agentsum.data.sources import load_examples

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "data" / "cnndm" / "train_stories.jsonl"


def old_clean(raw: str) -> str:
    return text._CONTROL_RE.sub("", raw.translate(text._CHAR_MAP))


def old_split(raw: str) -> list[str]:
    sentences = []
    for line in old_clean(raw).splitlines():
        line = line.strip()
        if line:
            sentences.extend(s.strip() for s in blingfire.text_to_sentences(line).split("\n") if s.strip())
    return sentences


def old_tokenize(sentence: str, lower: bool) -> list[str]:
    tokens = text._TOKEN_RE.findall(text._DOUBLE_QUOTE_RE.sub('"', old_clean(sentence)))
    return [t for t in ((t.lower() for t in tokens) if lower else tokens) if t]


def old_article_sentences(article: str, lower: bool) -> list[list[str]]:
    return [t for t in (old_tokenize(s, lower) for s in old_split(text.strip_source_prefix(article))) if t]


def old_prepare(example, cfg) -> Document:
    summary = []
    for line in example.summary.splitlines():
        line = text._UPDATE_MARKER_RE.sub("", line)
        for sentence in old_split(line):
            tokens = old_tokenize(sentence, cfg.lowercase)
            if tokens:
                if not text._ends_sentence(tokens):
                    tokens.append(".")
                summary.append(tokens)
    flat = [t for s in summary for t in s]
    agents = split_among_agents(old_article_sentences(example.article, cfg.lowercase), cfg.agents, agent_budget(cfg),
                                cfg.max_article_tokens)
    return Document(example.id, agents, flat[: cfg.max_summary_tokens], text.join_sentences(summary))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--preset", default="m6")
    args = parser.parse_args()
    cfg = load_config(args.preset).data
    examples = load_examples(str(CORPUS), end=args.docs)
    new = [prepare(e, cfg) for e in examples]
    assert new == [old_prepare(e, cfg) for e in examples], "the two pipelines disagree"
    times = {"before": [], "after": []}
    for _ in range(args.repeats):
        for name, fn in (("before", old_prepare), ("after", prepare)):
            text._PIECE_CACHE[True].clear()  # each timing starts with an empty cache
            started = time.process_time()  # this process's CPU time: less moved by other work on the cores
            for e in examples:
                fn(e, cfg)
            times[name].append(time.process_time() - started)
    best = {k: min(v) for k, v in times.items()}
    result = {"documents": len(examples), "preset": args.preset,
              "before_docs_per_s": round(len(examples) / best["before"], 1),
              "after_docs_per_s": round(len(examples) / best["after"], 1),
              "speedup": round(best["before"] / best["after"], 2)}
    print(json.dumps(result))
    out = REPO / "benchmarks" / "results" / "bench_prepare.json"
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
