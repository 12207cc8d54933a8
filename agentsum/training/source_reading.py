"""What the sentence rewards beside ROUGE (claims, attribution, fluency) read of a batch: each
document's source, read once per document id and kept in a bounded cache, and a candidate
summary's words."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from agentsum.data.batch import Batch
from agentsum.data.vocab import Vocabulary

__all__ = ["SourceCache", "candidate_words"]

T = TypeVar("T")


class SourceCache(Generic[T]):
    """``read(tokens)`` of a document's source tokens (its agents' tokens in order, lower-cased),
    kept for the last ``size`` document ids read (an epoch of SAMSum is 14,155 ids; what is kept of
    one is small). A document without an id is read each time; a reading of None is kept too."""

    def __init__(self, read: Callable[[list[str]], T], size: int):
        self.read, self.size = read, size
        self._kept: dict[str, T] = {}

    def __call__(self, batch: Batch, b: int) -> T:
        key = batch.ids[b] if b < len(batch.ids) and batch.ids[b] else None
        if key is not None and key in self._kept:
            return self._kept[key]
        found = self.read(batch.source_tokens(b))
        if key is not None:
            if len(self._kept) >= self.size:
                self._kept.pop(next(iter(self._kept)))
            self._kept[key] = found
        return found


def candidate_words(ids: Sequence[int], batch: Batch, b: int, vocab: Vocabulary) -> list[str]:
    """Extended ids of document b's candidate as words: ids >= V are its OOV words (an id past them, "")."""
    V = len(vocab)
    oovs = batch.oov_words[b]
    return [vocab.itos[i] if i < V else (oovs[i - V] if i - V < len(oovs) else "") for i in ids]
