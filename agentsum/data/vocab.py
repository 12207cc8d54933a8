"""Vocabulary with per-document out-of-vocabulary (OOV) extension for copying.

The fixed vocabulary holds the special tokens followed by the V most frequent training tokens.
A document's OOV words get *extended* ids ``V, V+1, ...`` in order of first appearance, so the
pointer can put probability mass on them (See et al., 2017; DCA eq 15-16). The decoder's input
never sees extended ids: the model maps them back to UNK (``Vocabulary.to_input_ids``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import torch

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
SPECIALS = (PAD, UNK, BOS, EOS)
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3


class Vocabulary:
    """Token <-> id mapping. Ids 0-3 are PAD, UNK, BOS, EOS."""

    def __init__(self, tokens: Sequence[str]):
        if tuple(tokens[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"vocabulary must start with {SPECIALS}, got {tuple(tokens[:4])}")
        self.itos: list[str] = list(tokens)
        self.stoi: dict[str, int] = {}
        for i, tok in enumerate(self.itos):
            if tok in self.stoi:
                raise ValueError(f"duplicate vocabulary entry {tok!r} at ids {self.stoi[tok]} and {i}")
            self.stoi[tok] = i

    @classmethod
    def build(cls, token_streams: Iterable[Iterable[str]], max_size: int = 50_000, min_freq: int = 1) -> "Vocabulary":
        """The ``max_size`` most frequent tokens (ties broken alphabetically, so builds are reproducible)."""
        counts: Counter[str] = Counter()
        for tokens in token_streams:
            counts.update(tokens)
        for special in SPECIALS:
            counts.pop(special, None)
        ranked = sorted((t for t, c in counts.items() if c >= min_freq), key=lambda t: (-counts[t], t))
        return cls(list(SPECIALS) + ranked[:max_size])

    def __len__(self) -> int:
        return len(self.itos)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self.itos == other.itos

    def id(self, token: str) -> int:
        return self.stoi.get(token, UNK_ID)

    def encode(self, tokens: Iterable[str]) -> list[int]:
        """In-vocabulary ids; OOV words become UNK."""
        return [self.stoi.get(t, UNK_ID) for t in tokens]

    def encode_extended(self, tokens: Iterable[str], oovs: list[str]) -> list[int]:
        """Ids over the extended vocabulary. New OOV words are appended to ``oovs`` (mutated)."""
        ids = []
        for t in tokens:
            i = self.stoi.get(t)
            if i is None:
                if t not in oovs:
                    oovs.append(t)
                i = len(self.itos) + oovs.index(t)
            ids.append(i)
        return ids

    def encode_target(self, tokens: Iterable[str], oovs: Sequence[str]) -> list[int]:
        """Target ids: a word that is OOV but appears in the source gets its extended id, else UNK."""
        lookup = {w: len(self.itos) + k for k, w in enumerate(oovs)}
        return [self.stoi.get(t, lookup.get(t, UNK_ID)) for t in tokens]

    def decode(self, ids: Iterable[int], oovs: Sequence[str] = ()) -> list[str]:
        """Tokens for (extended) ids; stops at nothing, drops nothing."""
        out = []
        V = len(self.itos)
        for i in ids:
            i = int(i)
            if i < V:
                out.append(self.itos[i])
            elif i - V < len(oovs):
                out.append(oovs[i - V])
            else:
                raise IndexError(f"extended id {i} outside vocabulary ({V}) + {len(oovs)} OOV words")
        return out

    def to_input_ids(self, ids: torch.Tensor) -> torch.Tensor:
        """Map extended ids (>= V) to UNK: what the decoder's embedding may see."""
        return ids.masked_fill(ids >= len(self.itos), UNK_ID)

    def save(self) -> list[str]:
        return list(self.itos)
