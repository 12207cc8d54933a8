"""Summarize documents with a trained model, score with ROUGE, and the Lead-3 baseline."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from agentsum.data.dataset import Document, sorted_batches
from agentsum.data.language import TextProcessor
from agentsum.decoding.copying import to_words
from agentsum.decoding.search import SearchConfig, search
from agentsum.data.vocab import Vocabulary


@torch.no_grad()
def summarize_documents(model, vocab: Vocabulary, docs: Sequence[Document], search_config: SearchConfig,
                        batch_size: int = 16, progress=None, with_attention: bool = False):
    """Summary tokens for each document, in the order given; decoded in length-sorted batches.

    With ``with_attention`` returns ``(tokens, attention)`` where ``attention[i]`` is document i's
    agent attention g^t per output token, a (len, A) tensor.
    """
    model.eval()
    device = next(model.parameters()).device
    results: list[list[str]] = [[] for _ in docs]
    attention: list[torch.Tensor | None] = [None for _ in docs]
    for indices, batch in sorted_batches(docs, vocab, batch_size, with_targets=False):
        hyps = search(model, batch.to(device), search_config)
        words = to_words(hyps.tokens, hyps.copy_positions, batch, vocab, unk_replace=search_config.unk_replace)
        for i, w, g in zip(indices, words, hyps.agent_attention):
            results[i] = w
            attention[i] = g
        if progress is not None:
            progress(len(indices))
    return (results, attention) if with_attention else results


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


def evaluate_model(model, vocab: Vocabulary, docs: Sequence[Document], search_config: SearchConfig,
                   language: TextProcessor, batch_size: int = 16, progress=None) -> tuple[list[str], dict]:
    """Summaries (one sentence per line) and ROUGE scores of ``docs`` against their references."""
    started = time.perf_counter()
    tokens = summarize_documents(model, vocab, docs, search_config, batch_size, progress)
    seconds = time.perf_counter() - started
    predictions = [language.summary_text(t) for t in tokens]
    scores = language.rouge(predictions, [d.reference for d in docs])
    scores.update(seconds=seconds, documents_per_s=len(docs) / max(seconds, 1e-9),
                  beam_size=search_config.beam_size, block_trigrams=search_config.block_trigrams)
    return predictions, scores
