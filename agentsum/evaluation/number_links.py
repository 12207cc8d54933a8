"""Each number a summary writes, linked to where the source states it, or marked unsupported: what
the web page shows a reader checking a summary's figures.

A summary token that is a numeral (:func:`agentsum.data.numerals.is_numeral`) is read as a number
with what attaches to it, exactly as the numbers figures read numbers (:mod:`agentsum.evaluation.numbers`:
a currency sign before, a scale word and a unit after, ``1,000`` = ``1000``, ``$1.2 billion`` !=
``$1.2 million``). It is **supported** when every number it gives (a range ``3-4`` gives two) matches
a number of the source, and its **occurrences** are the source token positions of the numerals
stating a matching number. Numbers written in words (``twenty``) are left unmarked: a reader sees
them as words, and the summary-level figures count them.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentsum.data.numerals import is_numeral
from agentsum.evaluation.numbers import CURRENCY_SIGNS, Number, matches, read_numbers

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


def number_links(summary: Sequence[str], source: Sequence[str]) -> dict[int, dict]:
    """For every numeral token of ``summary`` (by position): ``{"supported": bool, "occurrences":
    [source token positions]}``. Both are token lists (the model's tokens and the source as the agents
    read it, in order)."""
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
        links[j] = {"supported": supported, "occurrences": occurrences}
    return links
