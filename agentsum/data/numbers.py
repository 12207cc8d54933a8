"""Numbers as text states them: a numeral with its scale and unit, read from raw or tokenized text,
and when two numbers match. The numbers figures (:mod:`agentsum.evaluation.numbers`), the claim
figures and the number links of provenance read numbers through this module.

How text is read. Every text (model output, reference, source) goes through the project's English
tokenizer (:func:`agentsum.data.text.tokenize`), so raw text and the lower-cased tokens that the model
writes (``q3 revenue rose 2.5 percent to $ 452.2 million .``) read alike. A number is a numeral with
what attaches to it:

* the numeral: digits with an optional decimal part, thousands separated by commas (``1,000`` =
  ``1000``; a tokenizer's ``1 , 000`` is joined when the groups after the first are of three digits;
  ``452.20`` = ``452.2``: values are compared, not strings), or cardinal words (``twenty``,
  ``twenty-five``, ``two hundred``, ``two million``). ``one`` alone is not read (``one of the ...``);
  ``one million`` and ``twenty one`` are. Ordinals, times (``10:30``), dates (``9/11``) and tokens
  with letters glued on (``q3``, ``3rd``, ``10x``) are not numbers. Hyphenated ranges count each end
  (``3-4 %`` is 3% and 4%). The sign is not read: ``fell 5%`` and ``-5%`` state the same number.
  Which digit tokens are numerals is :mod:`agentsum.data.numerals`' test, which search's
  ``numbers_from_source`` shares.
* the scale, after it: ``thousand``, ``million``, ``billion``, ``trillion`` and their short forms, as
  a word (``mln``, ``bln``, ``mn``, ``bn``, ``tn``) or glued on (``1.5m``, ``3bn``, ``100k``, ``$5mm``);
  it multiplies the value, so ``$1.2 billion`` = ``$1,200 million`` and ``$1.2 billion`` !=
  ``$1.2 million``.
* the unit: a currency sign before it (``$``, ``€``, ``£``, ``¥``; a country code before ``$`` is not
  read) or a currency word after it (``dollars``, ``usd``, ``euros``, ``eur``; ``25 cents`` =
  ``$0.25``); ``%``, ``percent``, ``pct``, ``per cent`` and ``percentage points`` after it are
  percent (``2.5%`` = ``2.5 percent`` = ``2.5 pct``); ``basis points`` / ``bps`` / ``bp`` are basis points.

Two numbers match when their values are equal and their units agree where both state one: ``$1.2
billion`` in a summary is supported by ``1.2 billion dollars`` or by ``1.2 billion`` in the source
(which often leaves the currency to the context), but not by ``€1.2 billion`` or ``1.2%``.

Chinese numerals (``万``, ``亿``) are not read; the figures are reported for English only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from agentsum.data.numerals import NUMERAL_RE, SCALES
from agentsum.data.text import tokenize

__all__ = ["Number", "read_numbers", "matches", "CURRENCY_SIGNS", "CURRENCY_WORDS", "PERCENT_WORDS",
           "BASIS_POINT_WORDS", "GLUED_SCALES", "UNIT_WORDS", "TENS_WORDS", "PERCENT", "BASIS_POINTS"]

#: currency signs before a numeral (the tokenizer splits them off: ``$1.2`` -> ``$`` ``1.2``)
CURRENCY_SIGNS = {"$": "$", "€": "€", "£": "£", "¥": "¥"}
#: currency words after a numeral, as the sign they mean
CURRENCY_WORDS = {"dollar": "$", "dollars": "$", "usd": "$", "euro": "€", "euros": "€", "eur": "€"}
PERCENT_WORDS = frozenset({"%", "percent", "pct"})
BASIS_POINT_WORDS = frozenset({"bps", "bp"})
#: scales glued to a numeral (``1.5m``, ``3bn``); a lone ``m`` or ``k`` token is a letter, not a scale
GLUED_SCALES = {"k": 10 ** 3, "m": 10 ** 6, "mm": 10 ** 6, "b": 10 ** 9, "t": 10 ** 12,
                "mn": 10 ** 6, "mln": 10 ** 6, "bn": 10 ** 9, "bln": 10 ** 9, "tn": 10 ** 12, "trn": 10 ** 12}
UNIT_WORDS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve "
                                          "thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split())}
TENS_WORDS = {w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}

PERCENT, BASIS_POINTS = "%", "bp"

_GROUP_RE = re.compile(r"\d{3}(?:\.\d+)?")  # a thousands group split off by a tokenizer: 1 , 000
_LEADING_GROUP_RE = re.compile(r"\d{1,3}")


@dataclass(frozen=True)
class Number:
    """One number as read from text: its ``value`` (scale multiplied in), its ``unit`` (a currency
    sign, ``%``, ``bp``, or None) and the tokens it was read from (``text``)."""

    value: Decimal
    unit: str | None
    text: str
    scaled: bool = False  # a scale word or suffix was written (5 million)

    @property
    def key(self) -> tuple[Decimal, str | None]:
        return self.value, self.unit

    @property
    def one_digit(self) -> bool:
        """A bare whole number 0-9 (``5``, ``five``): counted apart from the main figures."""
        return self.unit is None and not self.scaled and self.value == self.value.to_integral_value() \
            and 0 <= self.value <= 9


def read_numbers(text: str | Sequence[str]) -> list[Number]:
    """The numbers of ``text`` (raw or tokenized; or a token list), in order, as the module docstring
    says they are read."""
    tokens = _join_thousands(tokenize(text) if isinstance(text, str) else [t.lower() for t in text])
    found: list[Number] = []
    i, n = 0, len(tokens)
    while i < n:
        start = i
        unit = None
        if tokens[i] in CURRENCY_SIGNS:
            unit = CURRENCY_SIGNS[tokens[i]]
            i += 1
            if i < n and tokens[i] == "(":  # $ ( 0.03 ): an accounting negative
                i += 1
        values, i, scaled_by_suffix, unit = _numeral(tokens, i, unit)
        if not values:
            i = start + 1
            continue
        scaled = scaled_by_suffix
        if not scaled and i < n and tokens[i] in SCALES:
            values = [v * SCALES[tokens[i]] for v in values]
            scaled = True
            i += 1
        if unit is None or unit in CURRENCY_SIGNS.values():
            unit, values, i = _unit_after(tokens, i, unit, values)
        text_read = " ".join(t for t in tokens[start:i] if t != "(")
        found.extend(Number(v.normalize(), unit, text_read, scaled) for v in values)
    return found


def _join_thousands(tokens: list[str]) -> list[str]:
    """``1 , 000 , 000`` (a number whose commas a tokenizer split off) as ``1,000,000``: joined where
    the first group has one to three digits and every group after it exactly three."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if _LEADING_GROUP_RE.fullmatch(token):
            while i + 2 < len(tokens) and tokens[i + 1] == "," and _GROUP_RE.fullmatch(tokens[i + 2]):
                token += "," + tokens[i + 2]
                i += 2
        out.append(token)
        i += 1
    return out


def _numeral(tokens: list[str], i: int, unit: str | None) -> tuple[list[Decimal], int, bool, str | None]:
    """The value(s) of the numeral at ``tokens[i]`` (several for a range ``3-4``), the index after
    it, whether a glued scale multiplied them, and the unit (a glued ``pct`` / ``bps`` sets it)."""
    if i >= len(tokens):
        return [], i, False, unit
    token = tokens[i]
    words, j = _number_words(tokens, i)
    if words is not None:
        return [words], j, False, unit
    parts = token.split("-") if "-" in token.strip("-") else [token]
    values: list[Decimal] = []
    scaled = False
    for part in parts:
        match = NUMERAL_RE.fullmatch(part)
        if match is None:
            if len(parts) == 1:
                return [], i, False, unit
            continue  # 18-year-old: the 18 counts, the words do not
        value = Decimal(match["digits"].replace(",", ""))
        suffix = match["suffix"]
        if suffix in GLUED_SCALES:
            value *= GLUED_SCALES[suffix]
            scaled = True
        elif suffix == "pct":
            unit = PERCENT
        elif suffix in BASIS_POINT_WORDS:
            unit = BASIS_POINTS
        values.append(value)
    return values, i + 1, scaled, unit


def _number_words(tokens: list[str], i: int) -> tuple[Decimal | None, int]:
    """Cardinal words from ``tokens[i]`` as a value and the index after them: a word below a hundred
    (``seven``, ``twenty``, ``twenty-five``, ``forty two``), optionally times ``hundred`` and plus
    another (``two hundred fifty``). (None, i) where there is none, or only a lone ``one``, which is
    more often a pronoun (``one of the ...``) than a number; ``one million`` is read."""
    value, j = _below_hundred(tokens, i)
    if value is None:
        return None, i
    if j < len(tokens) and tokens[j] == "hundred":
        value *= 100
        j += 1
        rest, k = _below_hundred(tokens, j)
        if rest is not None:
            value, j = value + rest, k
    elif j == i + 1 and tokens[i] == "one" and not (j < len(tokens) and tokens[j] in SCALES):
        return None, i
    return Decimal(value), j


def _below_hundred(tokens: list[str], i: int) -> tuple[int | None, int]:
    """``seven``, ``twenty``, ``twenty-five`` or ``twenty five`` at ``tokens[i]``: (value, index after)."""
    if i >= len(tokens):
        return None, i
    word = tokens[i]
    if word in UNIT_WORDS:
        return UNIT_WORDS[word], i + 1
    tens, _, unit = word.partition("-")
    if tens in TENS_WORDS:
        if unit:
            return (TENS_WORDS[tens] + UNIT_WORDS[unit], i + 1) if 0 < UNIT_WORDS.get(unit, 0) < 10 else (None, i)
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if 0 < UNIT_WORDS.get(following, 0) < 10:
            return TENS_WORDS[tens] + UNIT_WORDS[following], i + 2
        return TENS_WORDS[tens], i + 1
    return None, i


def _unit_after(tokens: list[str], i: int, unit: str | None, values: list[Decimal]
                ) -> tuple[str | None, list[Decimal], int]:
    """The unit written after a numeral (percent, basis points, a currency word, cents), with the
    values (cents are hundredths of a dollar) and the index after it."""
    word = tokens[i] if i < len(tokens) else ""
    after = tokens[i + 1] if i + 1 < len(tokens) else ""
    if unit is None:
        if word in PERCENT_WORDS:
            return PERCENT, values, i + 1
        if word == "per" and after == "cent":
            return PERCENT, values, i + 2
        if word == "percentage" and after in ("point", "points"):
            return PERCENT, values, i + 2
        if word in BASIS_POINT_WORDS:
            return BASIS_POINTS, values, i + 1
        if word == "basis" and after in ("point", "points"):
            return BASIS_POINTS, values, i + 2
        if word in ("cent", "cents"):
            return "$", [v / 100 for v in values], i + 1
    if word in CURRENCY_WORDS and unit in (None, CURRENCY_WORDS[word]):
        return CURRENCY_WORDS[word], values, i + 1
    return unit, values, i


def matches(number: Number, other: Number) -> bool:
    """Equal values, and units that agree where both state one."""
    return number.value == other.value and (number.unit == other.unit or number.unit is None or other.unit is None)
