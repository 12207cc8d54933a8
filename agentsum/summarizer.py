"""The Python API: load a model once, summarize texts.

    from agentsum import Summarizer
    summarizer = Summarizer()                          # the English dialogue model shipped with agentsum
    summarizer("Amanda: I baked cookies. Do you want some?\nJerry: Sure!")
    # -> 'Amanda baked cookies and will bring Jerry some.'   (the shipped model's words may differ)
    summarizer(["first text", "second text"], beam_size=3)   # a list in, a list out
    Summarizer("runs/samsum-m6/checkpoints/best.pt")   # any checkpoint written by agentsum train / export

Summaries come back as text a person reads (cased from the input, detokenized; ``raw=True`` gives
the model's lower-cased tokens joined by spaces, the form ROUGE scores). Decoding settings default to
the checkpoint's ``search`` section. The model runs on the CPU unless ``device`` says otherwise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import torch

from agentsum.training import checkpoint as checkpoints
from agentsum.data.corpus import DataError, Example
from agentsum.data.dataset import NO_WORDS, has_words, prepare_all
from agentsum.evaluation.evaluate import summarize_documents
from agentsum.data.language import text_processor
from agentsum.decoding.search import SearchConfig


class Summarizer:
    """A loaded model and its preprocessing, search settings and output formatting."""

    def __init__(self, checkpoint: str | Path | None = None, device: str | torch.device = "cpu"):
        self.checkpoint = Path(checkpoint) if checkpoint is not None else checkpoints.default_checkpoint()
        self.model, self.vocab, self.config, self.metadata = checkpoints.load_model(self.checkpoint, device)
        self.language = text_processor(self.config.data)

    def __call__(self, texts: str | Sequence[str], *, beam_size: int | None = None, min_length: int | None = None,
                 max_length: int | None = None, raw: bool = False, batch_size: int = 16) -> str | list[str]:
        """The summary of one text (a string), or of each text of a list, in order.

        A text with no words (after preprocessing) is a :class:`agentsum.data.corpus.DataError`.
        """
        single = isinstance(texts, str)
        items = [texts] if single else list(texts)
        if not all(isinstance(t, str) for t in items):
            raise TypeError("texts must be a string or a sequence of strings")
        examples = [Example(id=str(i), article=t, summary="", origin=f"texts[{i}]") for i, t in enumerate(items)]
        search = dataclasses.replace(self.config.search, **{k: v for k, v in (
            ("beam_size", beam_size), ("min_length", min_length), ("max_length", max_length)) if v is not None})
        out, _ = self.summarize_examples(examples, search, raw=raw, batch_size=batch_size)
        return out[0] if single else out

    def summarize_examples(self, examples: Sequence[Example], search: SearchConfig, *, raw: bool = False,
                           batch_size: int = 16, progress=None) -> tuple[list[str], list[list[str]]]:
        """(summary texts, model tokens) of corpus examples, in order; what ``agentsum summarize``
        runs. An example with no words is a DataError naming its origin ("<stdin>" for "-")."""
        docs = prepare_all(examples, self.config.data, drop_empty=False, keep_text=True)
        empty = ["<stdin>" if e.origin == "-" else e.origin for e, d in zip(examples, docs) if not has_words(d)]
        if empty:
            raise DataError(f"{', '.join(empty)}: {NO_WORDS}")
        tokens = summarize_documents(self.model, self.vocab, docs, search, batch_size, progress)
        texts = [self.language.display(t) if raw else " ".join(self.language.readable(t, d.article))
                 for t, d in zip(tokens, docs)]
        return texts, tokens

    def __repr__(self) -> str:
        return f"Summarizer({str(self.checkpoint)!r}, step={self.metadata.get('step')})"
