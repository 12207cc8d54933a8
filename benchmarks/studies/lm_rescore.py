"""Rescoring the shipped dialogue model's n-best list with a language model of summaries.

The summary LM (:mod:`agentsum.models.summary_lm`, a 4-gram Kneser-Ney model of SAMSum's training
summaries, participant names as one class) reranks each dialogue's beam: a hypothesis scores its
search score (log-probability per token, as the beam ranks it) plus ``weight`` times the LM's
log-probability per token. ``weight`` 0 is the shipped search.

    python benchmarks/studies/lm_rescore.py --rows 100 300 --weights 0 0.1 0.2 0.3 0.5 --out runs/lm/select
    python benchmarks/studies/lm_rescore.py --rows 0 100 --weights 0 0.3 --out runs/lm/labelled

Each weight's summaries go to OUT/w-WEIGHT.txt and the scores (ROUGE, the attribution figure, the
share of hypotheses changed) to OUT/scores.json. Choose the weight on rows 100 and on (never the
labelled 0-99).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from agentsum import Summarizer
from agentsum.data.corpus import Example
from agentsum.data.dataset import sorted_batches
from agentsum.data.text import summary_sentences
from agentsum.decoding.copying import to_words
from agentsum.decoding.search import search
from agentsum.evaluation.attribution import Dialogue
from agentsum.evaluation.evaluate import score_summaries
from agentsum.models.summary_lm import NgramLM, with_name_class

SAMSUM = Path("../shared/data/samsum")


def names_of(article: str) -> set[str]:
    dialogue = Dialogue.parse(article)
    return set(dialogue.speakers) if dialogue else set()


def fit_lm(path: Path, order: int) -> NgramLM:
    rows = [json.loads(line) for line in path.open(encoding="utf-8")]
    summaries = [with_name_class([t for s in summary_sentences(r["summary"]) for t in s], names_of(r["article"]))
                 for r in rows if r.get("summary")]
    return NgramLM.fit(summaries, order=order)


def n_best_words(summarizer: Summarizer, docs, config) -> list[list[tuple[float, list[str]]]]:
    """Per document, its beam's hypotheses as (search score, model tokens), best first."""
    out: list[list[tuple[float, list[str]]]] = [[] for _ in docs]
    model = summarizer.model.eval()
    with torch.no_grad():
        for indices, batch in sorted_batches(docs, summarizer.vocab, 16, with_targets=False):
            hyps = search(model, batch, config, vocab=summarizer.vocab)
            for b, (i, beam) in enumerate(zip(indices, hyps.n_best)):
                one = batch.select([b])
                words = to_words([h.tokens for h in beam], [h.copy_positions for h in beam],
                                 _repeat(one, len(beam)), summarizer.vocab, unk_replace=config.unk_replace)
                out[i] = [(h.score, w) for h, w in zip(beam, words)]
    return out


def _repeat(batch, n):
    return batch.select([0] * n)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=str(SAMSUM / "valid.jsonl"))
    p.add_argument("--rows", type=int, nargs=2, default=[100, 300])
    p.add_argument("--weights", type=float, nargs="+", default=[0.0, 0.1, 0.2, 0.3, 0.5])
    p.add_argument("--order", type=int, default=4)
    p.add_argument("--beam", type=int, default=None, help="beam size (default: the model's)")
    p.add_argument("--checkpoint", default=None)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    lm = fit_lm(SAMSUM / "train.jsonl", args.order)
    print(f"summary LM: order {args.order}, {len(lm.vocab)} words, fitted in {time.perf_counter() - started:.1f}s",
          file=sys.stderr)
    rows = [json.loads(line) for line in Path(args.data).open(encoding="utf-8")][args.rows[0]: args.rows[1]]
    summarizer = Summarizer(args.checkpoint)
    examples = [Example(id=r["id"], article=r["article"], summary=r["summary"], origin=f"row {i}")
                for i, r in enumerate(rows, start=args.rows[0])]
    docs = summarizer.prepare_examples(examples)
    config = summarizer.search_config(beam_size=args.beam)
    started = time.perf_counter()
    beams = n_best_words(summarizer, docs, config)
    print(f"decoded {len(docs)} dialogues in {time.perf_counter() - started:.1f}s", file=sys.stderr)
    results = {}
    for weight in args.weights:
        chosen, changed = [], 0
        for doc, beam, row in zip(docs, beams, rows):
            names = names_of(row["article"])
            scored = [(score + weight * lm.logprob(with_name_class(tokens, names)) / (len(tokens) + 1), k, tokens)
                      for k, (score, tokens) in enumerate(beam)]
            best = max(scored, key=lambda s: s[0])
            changed += best[1] != 0
            chosen.append(summarizer.language.readable(best[2], doc.article))  # its sentences
        (out / f"w-{weight:g}.txt").write_text("".join(" ".join(s) + "\n" for s in chosen), encoding="utf-8")
        # one sentence per line, as agentsum evaluate scores them (rougeLsum)
        scores, _ = score_summaries(summarizer.language, ["\n".join(s) for s in chosen], [d.reference for d in docs],
                                    [r["article"] for r in rows])
        scores["changed"] = 100.0 * changed / len(docs)
        results[f"{weight:g}"] = scores
        keys = ("rouge1", "rouge2", "rougeLsum", "attribution", "attribution_misattributed", "changed")
        print(f"weight {weight:g}: " + "  ".join(f"{k} {scores[k]:.2f}" for k in keys if k in scores), file=sys.stderr)
    (out / "scores.json").write_text(json.dumps({"rows": args.rows, "order": args.order, "beam": config.beam_size,
                                                 "weights": results}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
