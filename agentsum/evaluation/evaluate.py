"""Summarize documents with a :class:`~agentsum.summarizer.Summarizer`, score them, and write predictions
and scores (``agentsum evaluate``; the extractive baselines of ``agentsum lead3`` / ``agentsum extract``
are scored by :func:`score_summaries` too and write the same files).

Every system is scored alike (:func:`score_summaries`): ROUGE with the language's settings, and for
English the doubled-word rates (``evaluation/repetition.py``) and, given the source articles, the
numbers figures (``evaluation/numbers.py``)."""

from __future__ import annotations

import dataclasses
import itertools
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
from agentsum.evaluation.attribution import AttributionCounts, attribution_figures, document_attribution
from agentsum.evaluation.grammar import GrammarCounts, document_grammar, grammar_figures
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
    scores.update(seconds=seconds, documents_per_s=len(docs) / max(seconds, 1e-9), **search_fields(search_config))
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
            attribution, attribution_rows = AttributionCounts(), []
            for prediction, source in zip(predictions, sources):
                counts, row = document_attribution(prediction, source)
                attribution.add(counts)
                attribution_rows.append(row)
            if attribution.checked:  # dialogue sources only
                scores.update(attribution_figures(attribution))
            per_document = [{**row, **claims, **who} for row, claims, who in zip(per_document, claim_rows,
                                                                               attribution_rows)]
    return scores, per_document


def search_fields(search_config: SearchConfig) -> dict:
    """Every search setting, recorded beside the scores, so that two runs can be compared only when
    they were decoded alike."""
    return dict(beam_size=search_config.beam_size, block_trigrams=search_config.block_trigrams,
                no_repeat_ngram_size=search_config.ngram_block, repetition_penalty=search_config.repetition_penalty,
                repeat_window=search_config.repeat_window, numbers_from_source=search_config.numbers_from_source,
                min_length=search_config.min_length, max_length=search_config.max_length,
                min_length_ratio=search_config.min_length_ratio, length_penalty=search_config.length_penalty,
                unk_replace=search_config.unk_replace, figure_grammar=search_config.figure_grammar,
                source_periods=search_config.source_periods, numbers_in_context=search_config.numbers_in_context,
                attribution_rerank=search_config.attribution_rerank, role_names=search_config.role_names,
                lm_weight=search_config.lm_weight)


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


@dataclass
class Decoded:
    """One document of a corpus, decoded and read: its summary, reference and id, its row for
    predictions.jsonl (the numbers and claim figures, English) and the counts behind those figures
    (None for other languages). :func:`score_decoded` scores a corpus of them; a sharded job
    (:mod:`agentsum.jobs`) writes them to its parts as :meth:`to_json` and scores them once merged."""

    id: str
    prediction: str
    reference: str
    row: dict = field(default_factory=dict)
    numbers: NumberCounts | None = None
    claims: ClaimCounts | None = None
    attribution: AttributionCounts | None = None
    grammar: GrammarCounts | None = None

    def to_json(self) -> dict:
        counts = {name: None if getattr(self, name) is None else dataclasses.asdict(getattr(self, name))
                  for name in ("numbers", "claims", "attribution", "grammar")}
        return {"id": self.id, "prediction": self.prediction, "reference": self.reference, "document": self.row,
                **counts}

    @classmethod
    def from_json(cls, record: dict) -> Decoded:
        def counts(name, kind):
            value = record.get(name)
            return None if value is None else kind(**value)

        return cls(record["id"], record["prediction"], record["reference"], record.get("document") or {},
                   counts("numbers", NumberCounts), counts("claims", ClaimCounts),
                   counts("attribution", AttributionCounts), counts("grammar", GrammarCounts))


def decode_examples(summarizer: Summarizer, examples: Sequence[Example], search_config: SearchConfig,
                    batch_size: int = 16, progress=None, bucket: bool = True,
                    grammar: bool = False) -> list[Decoded | None]:
    """Each example decoded and read (:class:`Decoded`), in order; None for an example without
    tokens (left out of the scores, as in training). The numbers figures (English) read each whole
    article as written, not the truncated tokens the model saw. ``bucket=False`` decodes in batches
    of the order given instead of batches of similar length (for comparison). ``grammar`` (English)
    parses each summary as a person reads it with link grammar (:mod:`agentsum.evaluation.grammar`)."""
    language = summarizer.language
    english = language.language == "en"
    prepared = summarizer.prepare_examples(examples, keep_text=False)  # one per example, in order
    kept = [i for i, d in enumerate(prepared) if any(d.agents)]
    tokens = summarizer.summarize_documents([prepared[i] for i in kept], search_config, batch_size, progress,
                                            bucket=bucket)
    result: list[Decoded | None] = [None for _ in examples]
    for i, t in zip(kept, tokens):
        example, d = examples[i], prepared[i]
        decoded = Decoded(d.id, language.summary_text(t), d.reference)
        if english:
            counts, unsupported = document_numbers(decoded.prediction, d.reference, example.article)
            claim_counts, claim_row = document_claims(decoded.prediction, SourceClaims.from_text(example.article),
                                                      d.reference)
            attribution, attribution_row = document_attribution(decoded.prediction, example.article)
            decoded.row = {**document_row(counts, unsupported), **claim_row, **attribution_row}
            decoded.numbers, decoded.claims, decoded.attribution = counts, claim_counts, attribution
        result[i] = decoded
    if english and grammar:
        done = list(zip(kept, tokens))
        read = document_grammar([language.readable(t, examples[i].article) for i, t in done])
        for (i, _), (counts, row) in zip(done, read):
            result[i].grammar = counts
            result[i].row = {**result[i].row, **row}
    return result


def score_decoded(language, decoded: Sequence[Decoded], search_config: SearchConfig, seconds: float) -> Evaluation:
    """The :class:`Evaluation` of decoded documents: ROUGE over all of them, the numbers and claim
    figures from their summed counts (English), the speed and the search settings."""
    if not decoded:
        raise NoDocuments("no document with tokens to evaluate")
    result = Evaluation([d.prediction for d in decoded], [d.reference for d in decoded], [d.id for d in decoded],
                        per_document=[d.row for d in decoded])
    result.scores, _ = score_summaries(language, result.predictions, result.references)
    if language.language == "en":
        numbers, claims, attribution, grammar = NumberCounts(), ClaimCounts(), AttributionCounts(), GrammarCounts()
        for d in decoded:
            numbers.add(d.numbers or NumberCounts())
            claims.add(d.claims or ClaimCounts())
            attribution.add(d.attribution or AttributionCounts())
            grammar.add(d.grammar or GrammarCounts())
        result.scores.update(number_figures(numbers))
        result.scores.update(claim_figures(claims))
        if attribution.checked:  # dialogue sources only
            result.scores.update(attribution_figures(attribution))
        if grammar.summaries:  # parsed (--grammar)
            result.scores.update(grammar_figures(grammar))
    result.scores.update(seconds=seconds, documents_per_s=len(decoded) / max(seconds, 1e-9),
                         **search_fields(search_config))
    return result


def evaluate_corpus(summarizer: Summarizer, examples: Iterable[Example], search_config: SearchConfig,
                    batch_size: int = 16, progress=None, chunk: int = 1000, grammar: bool = False) -> Evaluation:
    """:func:`evaluate` of a corpus read as it goes: ``chunk`` examples at a time are prepared and
    decoded (:func:`decode_examples`), so memory holds one chunk's documents, not the corpus's (the
    11,490 CNN/DailyMail test articles as well as a hundred). Documents without tokens are left out,
    as in training."""
    started = time.perf_counter()
    decoded: list[Decoded] = []
    examples = iter(examples)
    for part in iter(lambda: list(itertools.islice(examples, chunk)), []):
        decoded += [d for d in decode_examples(summarizer, part, search_config, batch_size, progress, grammar=grammar)
                    if d is not None]
    return score_decoded(summarizer.language, decoded, search_config, time.perf_counter() - started)


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
