"""Summarize documents with a :class:`~agentsum.summarizer.Summarizer`, score them with ROUGE, and write
predictions and scores (``agentsum evaluate``; the lead baseline of ``agentsum lead3`` writes the
same files)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from agentsum.data.corpus import Example
from agentsum.data.dataset import Document
from agentsum.data.records import DataError
from agentsum.decoding.search import SearchConfig
from agentsum.evaluation.repetition import repetition_scores
from agentsum.evaluation.rouge import rouge_for
from agentsum.summarizer import Summarizer


def evaluate(summarizer: Summarizer, docs: Sequence[Document], search_config: SearchConfig, batch_size: int = 16,
             progress=None) -> tuple[list[str], dict]:
    """Summaries (one sentence per line) and ROUGE scores of ``docs`` against their references,
    scored with the summarizer's language settings; ``scores`` also holds, for English, the share of
    summaries that repeat a content word within three tokens (``doubled``) or name one person twice
    (``x_and_x``), in percent, the decoding speed, and the search settings that matter for comparing runs."""
    started = time.perf_counter()
    tokens = summarizer.summarize_documents(docs, search_config, batch_size, progress)
    seconds = time.perf_counter() - started
    language = summarizer.language
    predictions = [language.summary_text(t) for t in tokens]
    scores = rouge_for(language, predictions, [d.reference for d in docs])
    scores.update(_readers_view(summarizer, predictions))
    scores.update(seconds=seconds, documents_per_s=len(docs) / max(seconds, 1e-9), **_search_fields(search_config))
    return predictions, scores


def _readers_view(summarizer: Summarizer, predictions: Sequence[str]) -> dict:
    """The doubled-word and ``X and X`` rates (evaluation/repetition.py), for English: what a reader
    notices and ROUGE does not."""
    return repetition_scores(predictions) if summarizer.config.data.language == "en" else {}


def _search_fields(search_config: SearchConfig) -> dict:
    """The search settings that matter for comparing runs, recorded beside the scores."""
    return dict(beam_size=search_config.beam_size, block_trigrams=search_config.block_trigrams,
                no_repeat_ngram_size=search_config.ngram_block, repetition_penalty=search_config.repetition_penalty,
                repeat_window=search_config.repeat_window)


class NoDocuments(DataError):
    """A corpus that held nothing to evaluate (no rows, or none with tokens)."""


def evaluate_examples(summarizer: Summarizer, examples: Iterable[Example], search_config: SearchConfig,
                      batch_size: int = 16, progress=None, chunk: int = 1000
                      ) -> tuple[list[str], list[str], list[str], dict]:
    """:func:`evaluate` of a corpus read as it goes: ``chunk`` examples at a time are prepared and
    decoded, so memory holds one chunk's documents, not the corpus's (the 11,490 CNN/DailyMail test
    articles as well as a hundred). Documents without tokens are left out, as in training.
    Returns (predictions, references, ids, scores)."""
    started = time.perf_counter()
    language = summarizer.language
    predictions: list[str] = []
    references: list[str] = []
    ids: list[str] = []
    pending: list[Example] = []

    def decode() -> None:
        docs = [d for d in summarizer.prepare_examples(pending, keep_text=False) if any(d.agents)]
        for d, t in zip(docs, summarizer.summarize_documents(docs, search_config, batch_size, progress)):
            predictions.append(language.summary_text(t))
            references.append(d.reference)
            ids.append(d.id)
        pending.clear()

    for example in examples:
        pending.append(example)
        if len(pending) == chunk:
            decode()
    if pending:
        decode()
    seconds = time.perf_counter() - started
    if not predictions:
        raise NoDocuments("no document with tokens to evaluate")
    scores = rouge_for(language, predictions, references)
    scores.update(_readers_view(summarizer, predictions))
    scores.update(seconds=seconds, documents_per_s=len(predictions) / max(seconds, 1e-9),
                  **_search_fields(search_config))
    return predictions, references, ids, scores


def write_results(out_dir: str | Path, predictions: Sequence[str], references: Sequence[str], ids: Sequence[str],
                  scores: dict) -> None:
    """predictions.txt (one summary per line, sentences separated by spaces), scores.json, and
    predictions.jsonl with the sentence-split summaries and references."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "predictions.txt").open("w", encoding="utf-8") as f:
        for p in predictions:
            f.write(p.replace("\n", " ") + "\n")
    with (out / "predictions.jsonl").open("w", encoding="utf-8") as f:
        for i, p, r in zip(ids, predictions, references):
            f.write(json.dumps({"id": i, "prediction": p, "reference": r}, ensure_ascii=False) + "\n")
    (out / "scores.json").write_text(json.dumps(scores, indent=2) + "\n", encoding="utf-8")
