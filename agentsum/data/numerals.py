"""Which tokens are numerals: the token-level test shared by the numbers figures
(:mod:`agentsum.evaluation.numbers`) and search's ``numbers_from_source``
(:mod:`agentsum.decoding.search`), kept here, below both, so the two read a number alike.

A numeral token is digits with an optional decimal part, thousands separated by commas (``1000``,
``1,000``, ``2.5``, ``.5``, ``452.2``), optionally with a scale or unit glued on (``1.5m``, ``3bn``,
``100k``, ``50bps``, ``2.5pct``). A hyphenated token holds a numeral when one of its parts is one
(``3-4``, ``18-year-old``): the figures read those numbers from it. Tokens with other letters glued
on (``q3``, ``3rd``, ``10x``, ``mp3``), times (``10:30``) and dates (``9/11``) are words, not
numerals; so are cardinal words (``two``, ``twenty``), which this test leaves to the figures'
reader because prose needs them as words (``the two segments``). A scale word after a numeral
(:data:`SCALES`) is part of the number: ``1.2 billion`` is not ``1.2 million``.
"""

from __future__ import annotations

import re

__all__ = ["NUMERAL_RE", "SCALES", "is_numeral"]

#: scale words written after a numeral (``1.2 billion``, ``3 mln``), as the factor they multiply it by
SCALES = {"thousand": 10 ** 3, "million": 10 ** 6, "billion": 10 ** 9, "trillion": 10 ** 12,
          "mln": 10 ** 6, "mn": 10 ** 6, "bln": 10 ** 9, "bn": 10 ** 9, "tn": 10 ** 12, "trn": 10 ** 12}

#: a numeral: 1000, 1,000, 2.5, .5, with an optional glued scale or unit (1.5m, 3bn, 50bps, 2.5pct)
NUMERAL_RE = re.compile(r"(?P<digits>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
                        r"(?P<suffix>k|m|mm|mn|mln|b|bn|bln|t|tn|trn|bps|bp|pct)?")


def is_numeral(token: str) -> bool:
    """True when the (lower-cased) token is a numeral or a hyphenated token with a numeral part."""
    if NUMERAL_RE.fullmatch(token) is not None:
        return True
    if "-" not in token.strip("-"):
        return False
    return any(NUMERAL_RE.fullmatch(part) is not None for part in token.split("-"))
