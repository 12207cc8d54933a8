"""Rescoring the shipped dialogue model's n-best list with a language model of summaries.

The summary LM (:mod:`agentsum.models.summary_lm`, a 4-gram Kneser-Ney model of SAMSum's training
summaries, participant names as one class) reranks each dialogue's beam: a hypothesis scores its
search score (log-probability per token, as the beam ranks it) plus ``weight`` times the LM's
log-probability per token. ``weight`` 0 is the shipped search.

    python benchmarks/studies/lm_rescore.py --rows 100 300 --weights 0 0.1 0.2 0.3 0.5 --out runs/lm/select
    python benchmarks/studies/lm_rescore.py --rows 0 100 --weights 0 0.3 --out runs/lm/labelled

With ``--attribution-rerank`` the fewest misattributed sentences come first (the rerank of
``search.attribution_rerank``, :mod:`agentsum.decoding.rerank`), and with ``--grammar-rerank`` the
fewest sentences link grammar cannot parse whole (the grammar figure of ``agentsum evaluate
--grammar``), in that order, before the rescored score; as in search, only hypotheses that ended as
the beam's best did are candidates.

    python benchmarks/studies/lm_rescore.py --rows 0 100 --weights 0 0.1 --attribution-rerank --grammar-rerank \
        --out runs/lm/labelled-both

Each weight's summaries go to OUT/w-WEIGHT.txt and the scores (ROUGE, the attribution figure, the
share of hypotheses changed) to OUT/scores.json. Choose the weight on rows 100 and on (never the
labelled 0-99).
"""

from __future__ import annotations

import argparse
import dataclasses
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
from agentsum.decoding.rerank import dialogue_of, misattributed_sentences
from agentsum.decoding.search import search
from agentsum.evaluation.attribution import Dialogue
from agentsum.evaluation.evaluate import score_summaries
from agentsum.evaluation.grammar import null_counts
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


def n_best_words(summarizer: Summarizer, docs, config) -> list[list[tuple[float, list[str], bool, int]]]:
    """Per document, its beam's hypotheses as (search score, model tokens, finished, misattributed
    sentences), best first."""
    out: list[list[tuple[float, list[str], bool, int]]] = [[] for _ in docs]
    model = summarizer.model.eval()
    with torch.no_grad():
        for indices, batch in sorted_batches(docs, summarizer.vocab, 16, with_targets=False):
            hyps = search(model, batch, config, vocab=summarizer.vocab)
            for b, (i, beam) in enumerate(zip(indices, hyps.n_best)):
                one = batch.select([b])
                words = to_words([h.tokens for h in beam], [h.copy_positions for h in beam],
                                 _repeat(one, len(beam)), summarizer.vocab, unk_replace=config.unk_replace)
                dialogue = dialogue_of(batch, b)
                out[i] = [(h.score, w, h.finished, misattributed_sentences(w, dialogue) if dialogue else 0)
                          for h, w in zip(beam, words)]
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
    p.add_argument("--checkpoint", default=None, help="default: the shipped dialogue model; every checkpoint is "
                                                      "decoded with the shipped model's search")
    p.add_argument("--attribution-rerank", action="store_true", help="fewest misattributed sentences first")
    p.add_argument("--grammar-rerank", action="store_true", help="then fewest sentences link grammar cannot parse")
    p.add_argument("--grammar", action="store_true", help="report the grammar figure of the chosen summaries "
                                                          "(implied by --grammar-rerank)")
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
    # the shipped dialogue model's search for every checkpoint, as the attribution and speaker studies pin it
    shipped = summarizer if args.checkpoint is None else Summarizer("dialogue")
    config = dataclasses.replace(shipped.search_config(beam_size=args.beam))
    started = time.perf_counter()
    beams = n_best_words(summarizer, docs, config)
    print(f"decoded {len(docs)} dialogues in {time.perf_counter() - started:.1f}s", file=sys.stderr)
    readable = [[summarizer.language.readable(tokens, doc.article) for _, tokens, _, _ in beam]
                for doc, beam in zip(docs, beams)]
    unparsed = [[0] * len(beam) for beam in beams]
    if args.grammar_rerank or args.grammar:
        started = time.perf_counter()
        flat = [s for doc in readable for sentences in doc for s in sentences]
        nulls = iter(null_counts(flat))
        unparsed = [[sum(next(nulls) > 0 for _ in sentences) for sentences in doc] for doc in readable]
        print(f"parsed {len(flat)} sentences in {time.perf_counter() - started:.1f}s", file=sys.stderr)
    results = {}
    for weight in args.weights:
        chosen, changed, flagged, unparsed_chosen = [], 0, 0, 0
        for beam, row, sentences, bad in zip(beams, rows, readable, unparsed):
            names = names_of(row["article"])
            keys = [((wrong if args.attribution_rerank else 0), (bad[k] if args.grammar_rerank else 0),
                     -(score + weight * lm.logprob(with_name_class(tokens, names)) / (len(tokens) + 1)), k)
                    for k, (score, tokens, finished, wrong) in enumerate(beam) if finished == beam[0][2]]
            best = min(keys)[-1]
            changed += best != 0
            flagged += bad[best] > 0
            unparsed_chosen += bad[best]
            chosen.append(sentences[best])
        (out / f"w-{weight:g}.txt").write_text("".join(" ".join(s) + "\n" for s in chosen), encoding="utf-8")
        # one sentence per line, as agentsum evaluate scores them (rougeLsum)
        scores, _ = score_summaries(summarizer.language, ["\n".join(s) for s in chosen], [d.reference for d in docs],
                                    [r["article"] for r in rows])
        scores["changed"] = 100.0 * changed / len(docs)
        if args.grammar_rerank or args.grammar:
            n_sentences = sum(len(s) for s in chosen)
            scores["grammar_unparsed"] = 100.0 * unparsed_chosen / max(n_sentences, 1)
            scores["grammar_flagged"] = 100.0 * flagged / len(docs)
        results[f"{weight:g}"] = scores
        keys = ("rouge1", "rouge2", "rougeLsum", "attribution", "attribution_misattributed", "changed",
                "grammar_unparsed", "grammar_flagged")
        print(f"weight {weight:g}: " + "  ".join(f"{k} {scores[k]:.2f}" for k in keys if k in scores), file=sys.stderr)
    (out / "scores.json").write_text(json.dumps({"rows": args.rows, "order": args.order, "beam": config.beam_size,
                                                 "attribution_rerank": args.attribution_rerank,
                                                 "grammar_rerank": args.grammar_rerank,
                                                 "weights": results}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
