"""What a reader of English summaries notices and ROUGE does not: a content word written twice within a
few tokens (``emma and emma are going ...``, ``jackie 's pregnant is pregnant``) and one person named
twice as ``X and X``.

Both read the lower-cased model tokens that ROUGE scores (``Language.summary_text``: space-separated,
one sentence per line). ``agentsum evaluate`` reports them for English beside ROUGE; the shipped model's
test holds them under the references' rates. On SAMSum validation the references repeat a content
word within three tokens in 3.7% of summaries and name one person twice in 0.1%.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: words whose repetition a reader does not notice (articles, conjunctions, prepositions, pronouns,
#: auxiliaries): "the dog and the cat" is not a doubled word
COMMON = frozenset("the a an and or of to in on at for with is are was were be will he she they it his her their "
                   "i you we me him them that this there not".split())

_X_AND_X = re.compile(r"\b([a-z][a-z'-]*) and \1\b")


def doubles_word(text: str, window: int = 3) -> bool:
    """True when an alphabetic token outside :data:`COMMON` comes back within ``window`` tokens."""
    tokens = text.lower().split()
    return any(t.isalpha() and t not in COMMON and t in tokens[i + 1: i + 1 + window] for i, t in enumerate(tokens))


def x_and_x(text: str) -> str | None:
    """The word of the first ``X and X`` in a summary (lower-cased), or None."""
    match = _X_AND_X.search(text.lower())
    return match.group(1) if match else None


def doubled_rate(predictions: Sequence[str], window: int = 3) -> float:
    """Percent of summaries that repeat a content word within ``window`` tokens (:func:`doubles_word`)."""
    return 100.0 * sum(doubles_word(p, window) for p in predictions) / max(len(predictions), 1)


def x_and_x_rate(predictions: Sequence[str]) -> float:
    """Percent of summaries that name one person twice as ``X and X``."""
    return 100.0 * sum(x_and_x(p) is not None for p in predictions) / max(len(predictions), 1)


def repetition_scores(predictions: Sequence[str]) -> dict[str, float]:
    """``doubled`` and ``x_and_x``, in percent of summaries, for ``scores.json``."""
    return {"doubled": round(doubled_rate(predictions), 2), "x_and_x": round(x_and_x_rate(predictions), 2)}
