"""Each number a summary writes, linked to where the source states it, or marked unsupported: what
the web page shows a reader checking a summary's figures.

A summary token that is a numeral (:func:`agentsum.data.numerals.is_numeral`) is read as a number
with what attaches to it, exactly as the numbers figures read numbers (:mod:`agentsum.evaluation.numbers`:
a currency sign before, a scale word and a unit after, ``1,000`` = ``1000``, ``$1.2 billion`` !=
``$1.2 million``). It is **supported** when every number it gives (a range ``3-4`` gives two) matches
a number of the source, and its **occurrences** are the source token positions of the numerals
stating a matching number. Numbers written in words (``twenty``) are left unmarked: a reader sees
them as words, and the summary-level figures count them.

Each number also says what it is claimed for (:mod:`agentsum.data.claims`): its ``metric``
(the nearest metric phrase before it in its summary sentence, or None) and its ``claim``, one of
three marks a reader checks first:

* ``in_context``: in the source, stated as the summary states it: a source statement of the number
  is for this metric, as its own value (not a comparison), with the summary's basis, change or
  level, direction and period (the strict test, :func:`agentsum.data.claims.statement_fits`;
  ``context_occurrences``: the number's positions in those sentences). A number with no metric
  before it that the source holds is ``in_context`` with ``metric`` None: it is in the source, and
  nothing more is claimed;
* ``elsewhere``: in the source, but never stated so (for another metric or period, as last year's
  value, GAAP for adjusted ...), or given as an analysts' estimate;
* ``absent``: not in the source.

Sentences are read from the token lists: a summary sentence ends at ``.``, ``!`` or ``?``, and so
does a source sentence.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentsum.data.numerals import is_numeral
from agentsum.data.text import sentence_spans
from agentsum.data.claims import SourceClaims, sentence_claims
from agentsum.data.numbers import CURRENCY_SIGNS, Number, matches, read_numbers

__all__ = ["numbers_at", "number_links"]

#: tokens read after a numeral for its scale and unit (``million``, ``%``, ``percent``, ``points``)
_AFTER = 3


def numbers_at(tokens: Sequence[str], i: int) -> list[Number]:
    """The number(s) the numeral ``tokens[i]`` states, with a currency sign just before it and a
    scale or unit after it."""
    start = i - 1 if i > 0 and tokens[i - 1] in CURRENCY_SIGNS else i
    window = [t.lower() for t in tokens[start:i + 1 + _AFTER]]
    found = read_numbers(window)  # the window starts at the numeral (or its currency sign): read first
    # the first reading's numbers: one, or the two ends of a range (3-4 %)
    return [n for n in found if n.text == found[0].text] if found else []


def _split(tokens: Sequence[str]) -> tuple[list[int], list[list[str]]]:
    spans = sentence_spans(tokens)
    return [s for s, _ in spans], [[t.lower() for t in tokens[s:e]] for s, e in spans]


def number_links(summary: Sequence[str], source: Sequence[str]) -> dict[int, dict]:
    """For every numeral token of ``summary`` (by position): ``{"supported": bool, "occurrences":
    [source token positions], "claim": "in_context" | "elsewhere" | "absent", "metric": str | None,
    "context_occurrences": [source token positions]}``. Both are token lists (the model's tokens and
    the source as the agents read it, in order)."""
    stated = [(p, numbers_at(source, p)) for p, token in enumerate(source) if is_numeral(token.lower())]
    links = {}
    for j, token in enumerate(summary):
        if not is_numeral(token.lower()):
            continue
        numbers = numbers_at(summary, j)
        if not numbers:
            continue
        occurrences = [p for p, there in stated if any(matches(n, m) for n in numbers for m in there)]
        supported = all(any(matches(n, m) for _, there in stated for m in there) for n in numbers)
        links[j] = {"supported": supported, "occurrences": occurrences, "claim": "in_context" if supported else "absent",
                    "metric": None, "context_occurrences": occurrences if supported else []}
    if links:
        _add_claims(links, summary, source)
    return links


#: marks from worst to best
_RANK = {"absent": 0, "elsewhere": 1, "in_context": 2}


def _add_claims(links: dict[int, dict], summary: Sequence[str], source: Sequence[str]) -> None:
    """Each linked number's ``claim``, ``metric`` and ``context_occurrences`` from its summary
    sentence's claims (numbers that are not claims, a year or a one-digit count, keep what
    :func:`number_links` set from ``supported``)."""
    source_starts, source_sentences = _split(source)
    claims_source = SourceClaims(source_sentences)
    summary_starts, summary_sentences = _split(summary)
    for start, sentence in zip(summary_starts, summary_sentences):
        for claim in sentence_claims(sentence, claims_source):
            link = links.get(start + claim.at)
            if link is None:
                continue
            if claim.in_source and (claim.strict or claim.status == "no_metric"):
                mark = "in_context"
            else:
                mark = "elsewhere" if claim.in_source else "absent"
            context = []
            if mark == "in_context":
                numbers = numbers_at(summary, start + claim.at)
                sentences = claim.strict_sentences if claim.strict else claim.sentences
                context = sorted({source_starts[k] + at for n in numbers for k, at in claims_source.holding(n)
                                  if k in sentences})
            if link.get("read") and _RANK[link["claim"]] < _RANK[mark]:
                continue  # a range (3-5 %) keeps the worse mark of its two ends
            link.update(claim=mark, metric=claim.metric, context_occurrences=context, read=True)
    for link in links.values():
        link.pop("read", None)
