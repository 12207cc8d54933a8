"""ROUGE-1/2/L F1 as most summarization papers report it: Google's ``rouge-score`` with stemming,
ROUGE-L computed over newline-separated sentences (``rougeLsum``, the summary-level LCS that the
original Perl ROUGE-1.5.5 reports).

Mind the argument order: ``rouge_score``'s ``score(target, prediction)`` takes the reference first;
the functions here take ``(predictions, references)`` and call it the right way round.
"""

from __future__ import annotations

from collections.abc import Sequence

from rouge_score import rouge_scorer

ROUGE_TYPES = ("rouge1", "rouge2", "rougeLsum")


def rouge_per_document(predictions: Sequence[str], references: Sequence[str], stemming: bool = True) -> list[dict]:
    """Per-document scores: a list of {rouge_type: {"p", "r", "f"}} with values in [0, 1].

    Each string holds one sentence per line (rougeLsum splits on newlines).
    """
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references")
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=stemming)
    out = []
    for prediction, reference in zip(predictions, references):
        scores = scorer.score(reference, prediction)  # (target, prediction)
        out.append({k: {"p": v.precision, "r": v.recall, "f": v.fmeasure} for k, v in scores.items()})
    return out


def rouge(predictions: Sequence[str], references: Sequence[str], stemming: bool = True) -> dict:
    """Mean F1 (and P/R) over documents, in percent: {"rouge1": 41.2, ..., "rouge1_p": ..., "n": N}."""
    per_doc = rouge_per_document(predictions, references, stemming)
    n = len(per_doc)
    result: dict = {"n": n}
    for kind in ROUGE_TYPES:
        for part, suffix in (("f", ""), ("p", "_p"), ("r", "_r")):
            result[kind + suffix] = 100.0 * sum(d[kind][part] for d in per_doc) / max(n, 1)
    return result


def format_rouge(scores: dict) -> str:
    return (f"ROUGE-1 {scores['rouge1']:.2f}  ROUGE-2 {scores['rouge2']:.2f}  ROUGE-L {scores['rougeLsum']:.2f}"
            f"  (F1, {scores['n']} documents)")
