"""A language model of summaries, for rescoring a search's n-best list (a grammar lever).

An interpolated Kneser-Ney n-gram model (Chen and Goodman, 1998, eq 17 with one discount per order)
over the tokens of training summaries, each summary one sequence between ``<s>`` and ``</s>``.
Participant names are one class, ``<name>``: a summary of one chat names Amanda where another names
Jerry, and "<name> have" is what the model should learn to find unlikely, whoever the name is.
Tokens seen fewer than ``min_count`` times in training are ``<unk>``.

Choice: an n-gram model, not a neural one. It trains in seconds on SAMSum's 14k summaries on one
CPU thread, scores an n-best list in microseconds, and the errors it is for ("lisa have", "will
met", "are been") are local: two or three words see them.

    lm = NgramLM.fit(summaries, order=4)               # summaries: lists of tokens, names as <name>
    lm.logprob(["<name>", "has", "to", "go", "."])     # natural log, </s> included

A model's summary LM lives beside its checkpoint (:func:`lm_path`: ``samsum-en.pt`` ->
``samsum-en.lm.json.gz``), written by ``agentsum fit-lm`` from training documents
(:meth:`NgramLM.of_documents`), and read by search's ``search.lm_weight`` (n-best rescoring,
:mod:`agentsum.decoding.rerank`).
"""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from agentsum.data.attribution import Dialogue

BOS, EOS, UNK, NAME = "<s>", "</s>", "<unk>", "<name>"


def lm_path(checkpoint: str | Path) -> Path:
    """Where the summary LM of a checkpoint lives: beside it, ``NAME.lm.json.gz`` for ``NAME.pt``."""
    checkpoint = Path(checkpoint)
    return checkpoint.with_name(checkpoint.stem + ".lm.json.gz")


def participants(tokens: Sequence[str]) -> list[str]:
    """The speakers of a source read as a dialogue (``name : text`` turns), none for other sources."""
    dialogue = Dialogue.from_tokens(tokens)
    return dialogue.speakers if dialogue is not None else []


def with_name_class(tokens: Sequence[str], names: Iterable[str]) -> list[str]:
    """``tokens`` with every token in ``names`` (the dialogue's participants, as tokens) as ``<name>``."""
    names = set(names)
    return [NAME if t in names else t for t in tokens]


class NgramLM:
    """Interpolated Kneser-Ney: the highest order uses counts, the lower ones continuation counts
    (the number of distinct words seen before a context), each discounted by ``discount``; the
    unigram level is interpolated with a uniform distribution over the vocabulary and ``<unk>``."""

    def __init__(self, order: int, discount: float, vocab: set[str], counts: list[dict[tuple, dict[str, int]]]):
        if order < 1:
            raise ValueError(f"order must be >= 1, got {order}")
        self.order, self.discount, self.vocab = order, discount, vocab
        # counts[k][context of k words][word]: k = order - 1 raw counts, lower k continuation counts
        self.counts = counts
        self._totals = [{h: sum(ws.values()) for h, ws in level.items()} for level in counts]

    @classmethod
    def fit(cls, summaries: Iterable[Sequence[str]], order: int = 4, discount: float = 0.75,
            min_count: int = 2) -> "NgramLM":
        summaries = [list(s) for s in summaries]
        frequency = Counter(t for s in summaries for t in s)
        vocab = {t for t, c in frequency.items() if c >= min_count} | {EOS}
        raw: dict[tuple, Counter] = defaultdict(Counter)
        for s in summaries:
            seq = [BOS] * (order - 1) + [t if t in vocab else UNK for t in s] + [EOS]
            for i in range(order - 1, len(seq)):
                raw[tuple(seq[i - order + 1: i])][seq[i]] += 1
        counts: list[dict[tuple, dict[str, int]]] = [dict() for _ in range(order)]
        counts[order - 1] = {h: dict(ws) for h, ws in raw.items()}
        for k in range(order - 1, 0, -1):  # continuation counts of the (k-1)-word contexts
            lower: dict[tuple, Counter] = defaultdict(Counter)
            for h, ws in counts[k].items():
                for w in ws:
                    lower[h[1:]][w] += 1
            counts[k - 1] = {h: dict(ws) for h, ws in lower.items()}
        return cls(order, discount, vocab | {UNK}, counts)

    @classmethod
    def of_documents(cls, docs: Iterable, order: int = 4) -> "NgramLM":
        """From prepared documents (:class:`agentsum.data.dataset.Document`): their summary tokens,
        lower-cased, a dialogue's participants as ``<name>`` -- the tokens search rescoring reads."""
        return cls.fit(document_summaries(docs), order=order)

    def prob(self, word: str, context: Sequence[str]) -> float:
        """P(word | the last order-1 words of context), context padded with ``<s>``."""
        word = word if word in self.vocab else UNK
        context = ([BOS] * (self.order - 1) + list(context))[len(context):] if self.order > 1 else []
        context = [t if t in self.vocab or t == BOS else UNK for t in context]
        p = 1.0 / len(self.vocab)  # uniform over the vocabulary (<unk> included)
        for k in range(self.order):
            h = tuple(context[len(context) - k:]) if k else ()
            words = self.counts[k].get(h)
            if not words:
                continue  # an unseen context: the lower order's estimate stands
            total = self._totals[k][h]
            p = max(words.get(word, 0) - self.discount, 0) / total + self.discount * len(words) / total * p
        return p

    def token_logprobs(self, tokens: Sequence[str]) -> list[float]:
        """Natural-log probability of each token given the tokens before it (only the last order-1
        are read, so each costs the same however long the summary); no ``</s>``."""
        n = self.order - 1
        return [math.log(self.prob(w, tokens[max(0, i - n):i])) for i, w in enumerate(tokens)]

    def logprob(self, tokens: Sequence[str]) -> float:
        """Natural-log probability of a whole summary, ``</s>`` included."""
        return sum(self.token_logprobs([*tokens, EOS]))

    # ------------------------------------------------------------------------------ storage
    def to_json(self) -> dict:
        return {"order": self.order, "discount": self.discount, "vocab": sorted(self.vocab),
                "counts": [[[list(h), ws] for h, ws in level.items()] for level in self.counts]}

    @classmethod
    def from_json(cls, record: dict) -> "NgramLM":
        counts = [{tuple(h): ws for h, ws in level} for level in record["counts"]]
        return cls(int(record["order"]), float(record["discount"]), set(record["vocab"]), counts)

    def save(self, path: str | Path) -> None:
        """As JSON; gzip-compressed when the name ends in ``.gz`` (no name or time stamp: the same model writes
        the same bytes)."""
        text = json.dumps(self.to_json())
        if str(path).endswith(".gz"):
            with open(path, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=9, mtime=0) as f:
                f.write(text.encode("utf-8"))
        else:
            Path(path).write_text(text, encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> "NgramLM":
        if str(path).endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8") as f:
                return cls.from_json(json.load(f))
        return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))


def document_summaries(docs: Iterable) -> list[list[str]]:
    """Each document's summary tokens, lower-cased, its source's participants as ``<name>`` (documents
    without a summary are skipped)."""
    return [with_name_class([t.lower() for t in d.summary], participants([t.lower() for a in d.agents for t in a]))
            for d in docs if d.summary]
