"""Summarize documents with a :class:`~agentsum.summarizer.Summarizer`, score them, and write predictions
and scores (``agentsum evaluate``; the extractive baselines of ``agentsum lead3`` / ``agentsum extract``
are scored by :func:`score_summaries` too and write the same files).

Every system is scored alike (:func:`score_summaries`): ROUGE with the language's settings, and for
English the doubled-word rates (``evaluation/repetition.py``) and, given the source articles, the
numbers figures (``evaluation/numbers.py``)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentsum.data.corpus import Example
from agentsum.data.dataset import Document
from agentsum.data.records import DataError
from agentsum.decoding.search import SearchConfig
from agentsum.data.claims import SourceClaims
from agentsum.evaluation.claims import ClaimCounts, claim_figures, claim_scores, document_claims
from agentsum.evaluation.numbers import (NumberCounts, document_numbers, document_row, number_figures,
                                        number_scores)
from agentsum.evaluation.repetition import repetition_scores
from agentsum.evaluation.rouge import rouge_for
from agentsum.summarizer import Summarizer


def evaluate(summarizer: Summarizer, docs: Sequence[Document], search_config: SearchConfig, batch_size: int = 16,
             progress=None, sources: Sequence[str] | None = None) -> tuple[list[str], dict]:
    """Summaries (one sentence per line) and scores of ``docs`` against their references
    (:func:`score_summaries` with the summarizer's language settings; the numbers and claim figures
    read ``sources``, by default each document's article where every document kept its text,
    ``keep_text=True``), the decoding speed, and the search settings that matter for comparing runs."""
    started = time.perf_counter()
    tokens = summarizer.summarize_documents(docs, search_config, batch_size, progress)
    seconds = time.perf_counter() - started
    language = summarizer.language
    predictions = [language.summary_text(t) for t in tokens]
    if sources is None and all(d.article for d in docs):
        sources = [d.article for d in docs]
    scores, _ = score_summaries(language, predictions, [d.reference for d in docs], sources)
    scores.update(seconds=seconds, documents_per_s=len(docs) / max(seconds, 1e-9), **_search_fields(search_config))
    return predictions, scores


def score_summaries(language, predictions: Sequence[str], references: Sequence[str],
                    sources: Sequence[str] | None = None) -> tuple[dict, list[dict]]:
    """The scores of any system's summaries, a model's or an extractive baseline's: ROUGE
    (:func:`~agentsum.evaluation.rouge.rouge_for`), and for English (``language`` a
    :class:`~agentsum.data.language.TextProcessor`) what a reader notices and ROUGE does not: the
    share of summaries that repeat a content word within three tokens (``doubled``) or name one person
    twice (``x_and_x``), in percent, and, given the ``sources`` (the articles as written), the numbers
    figures (``numbers_supported``, ``numbers_recall``, ...: :func:`~agentsum.evaluation.numbers.number_scores`)
    and the claim figures (``period_agreement``, ``numbers_in_metric_context``, ``direction_agreement``,
    ``malformed_figures``, ...: :func:`~agentsum.evaluation.claims.claim_scores`).

    Returns (scores for scores.json, one dict per document for predictions.jsonl: the per-document
    numbers and claim figures, or empty dicts)."""
    scores = rouge_for(language, predictions, references)
    per_document: list[dict] = [{} for _ in predictions]
    if language.language == "en":
        scores.update(repetition_scores(predictions))
        if sources is not None:
            figures, per_document = number_scores(predictions, references, sources)
            scores.update(figures)
            figures, claim_rows = claim_scores(predictions, sources, references)
            scores.update(figures)
            per_document = [{**row, **claims} for row, claims in zip(per_document, claim_rows)]
    return scores, per_document


def _search_fields(search_config: SearchConfig) -> dict:
    """Every search setting, recorded beside the scores, so that two runs can be compared only when
    they were decoded alike."""
    return dict(beam_size=search_config.beam_size, block_trigrams=search_config.block_trigrams,
                no_repeat_ngram_size=search_config.ngram_block, repetition_penalty=search_config.repetition_penalty,
                repeat_window=search_config.repeat_window, numbers_from_source=search_config.numbers_from_source,
                min_length=search_config.min_length, max_length=search_config.max_length,
                min_length_ratio=search_config.min_length_ratio, length_penalty=search_config.length_penalty,
                unk_replace=search_config.unk_replace, figure_grammar=search_config.figure_grammar,
                source_periods=search_config.source_periods, numbers_in_context=search_config.numbers_in_context)


class NoDocuments(DataError):
    """A corpus that held nothing to evaluate (no rows, or none with tokens)."""


@dataclass
class Evaluation:
    """A scored corpus: the summaries, references and ids of the documents decoded, in order, the
    corpus ``scores`` and one dict per document for predictions.jsonl (:func:`score_summaries`)."""

    predictions: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    scores: dict = field(default_factory=dict)
    per_document: list[dict] = field(default_factory=list)


def evaluate_corpus(summarizer: Summarizer, examples: Iterable[Example], search_config: SearchConfig,
                    batch_size: int = 16, progress=None, chunk: int = 1000) -> Evaluation:
    """:func:`evaluate` of a corpus read as it goes: ``chunk`` examples at a time are prepared and
    decoded, so memory holds one chunk's documents, not the corpus's (the 11,490 CNN/DailyMail test
    articles as well as a hundred). Documents without tokens are left out, as in training. The numbers
    figures (English) read each whole article as written, not the truncated tokens the model saw,
    and are counted as each chunk is decoded."""
    started = time.perf_counter()
    language = summarizer.language
    english = language.language == "en"
    result = Evaluation()
    pending: list[Example] = []
    numbers = NumberCounts()
    claims = ClaimCounts()

    def decode() -> None:
        prepared = summarizer.prepare_examples(pending, keep_text=False)  # one per example, in order
        pairs = [(e, d) for e, d in zip(pending, prepared) if any(d.agents)]
        docs = [d for _, d in pairs]
        for (example, d), t in zip(pairs, summarizer.summarize_documents(docs, search_config, batch_size, progress)):
            result.predictions.append(language.summary_text(t))
            result.references.append(d.reference)
            result.ids.append(d.id)
            if english:
                counts, unsupported = document_numbers(result.predictions[-1], d.reference, example.article)
                claim_counts, claim_row = document_claims(result.predictions[-1], SourceClaims.from_text(example.article),
                                                          d.reference)
                result.per_document.append({**document_row(counts, unsupported), **claim_row})
                numbers.add(counts)
                claims.add(claim_counts)
            else:
                result.per_document.append({})
        pending.clear()

    for example in examples:
        pending.append(example)
        if len(pending) == chunk:
            decode()
    if pending:
        decode()
    seconds = time.perf_counter() - started
    if not result.predictions:
        raise NoDocuments("no document with tokens to evaluate")
    result.scores, _ = score_summaries(language, result.predictions, result.references)
    if english:
        result.scores.update(number_figures(numbers))
        result.scores.update(claim_figures(claims))
    result.scores.update(seconds=seconds, documents_per_s=len(result.predictions) / max(seconds, 1e-9),
                         **_search_fields(search_config))
    return result


def evaluate_examples(summarizer: Summarizer, examples: Iterable[Example], search_config: SearchConfig,
                      batch_size: int = 16, progress=None, chunk: int = 1000
                      ) -> tuple[list[str], list[str], list[str], dict]:
    """:func:`evaluate_corpus` as (predictions, references, ids, scores)."""
    result = evaluate_corpus(summarizer, examples, search_config, batch_size, progress, chunk)
    return result.predictions, result.references, result.ids, result.scores


def write_results(out_dir: str | Path, predictions: Sequence[str], references: Sequence[str], ids: Sequence[str],
                  scores: dict, per_document: Sequence[dict] | None = None) -> None:
    """predictions.txt (one summary per line, sentences separated by spaces), scores.json, and
    predictions.jsonl with the sentence-split summaries and references, and each document's
    ``per_document`` fields where given (the numbers figures of :func:`score_summaries`)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "predictions.txt").open("w", encoding="utf-8") as f:
        for p in predictions:
            f.write(p.replace("\n", " ") + "\n")
    extra = per_document or [{} for _ in predictions]
    with (out / "predictions.jsonl").open("w", encoding="utf-8") as f:
        for i, p, r, fields in zip(ids, predictions, references, extra):
            f.write(json.dumps({"id": i, "prediction": p, "reference": r, **fields}, ensure_ascii=False) + "\n")
    (out / "scores.json").write_text(json.dumps(scores, indent=2) + "\n", encoding="utf-8")
