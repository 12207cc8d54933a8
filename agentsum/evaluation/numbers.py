"""Numbers, measured: does a summary state numbers that its source holds, and the ones its reference
states?

Two figures per document and for a corpus (``agentsum evaluate`` and ``agentsum lead3`` / ``extract``
report them for English beside ROUGE):

* **supported**: the share (percent) of the summary's numbers that occur in the source article. A
  number the source lacks is invented or miscopied (``$1.2 million`` for ``$1.2 billion``).
* **recall**: of the reference's numbers that occur in the source, the share the summary also
  states. Reference numbers that the source lacks (an analyst's estimate quoted by the reference)
  are left out: no summary of the source could state them.

Corpus figures are micro-averages: all supported numbers over all numbers, summed over documents, so
a summary with ten numbers weighs ten times one with one; a document without numbers adds nothing
(its per-document figure is None). Each distinct number counts once per document (a summary that
states ``$1.2 billion`` twice states one number).

Numbers of one character (a bare ``1`` ... ``9`` or ``0``, or the word ``five``: list markers and
small counts, which match the source by chance) are counted apart, in the ``*_1digit`` figures; the
main figures count numbers of two characters or more, as the corpus notes do. ``$5``, ``5%`` and
``5 million`` carry a unit or scale and are main numbers.

How text is read (the numeral, its scale and unit, when two numbers match) is
:mod:`agentsum.data.numbers`' reading, which search and training share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from agentsum.data.numbers import Number, read_numbers

class NumberIndex:
    """The numbers of one text, for looking up whether a number :func:`matches` one of them."""

    def __init__(self, numbers: Sequence[Number]):
        self._units: dict[Decimal, set[str | None]] = {}
        for number in numbers:
            self._units.setdefault(number.value, set()).add(number.unit)

    def __contains__(self, number: Number) -> bool:
        units = self._units.get(number.value)
        return units is not None and (number.unit is None or None in units or number.unit in units)


def distinct(numbers: Sequence[Number]) -> list[Number]:
    """The first mention of each (value, unit), in order."""
    seen: dict[tuple, Number] = {}
    for number in numbers:
        seen.setdefault(number.key, number)
    return list(seen.values())


@dataclass
class NumberCounts:
    """Counts behind the figures, for one document or summed over a corpus. ``stated``: distinct
    numbers in the summary; ``supported``: those the source holds; ``recallable``: distinct reference
    numbers the source holds; ``recalled``: those the summary states. The ``*_1digit`` fields count
    the one-character numbers apart."""

    stated: int = 0
    supported: int = 0
    recallable: int = 0
    recalled: int = 0
    stated_1digit: int = 0
    supported_1digit: int = 0
    recallable_1digit: int = 0
    recalled_1digit: int = 0

    def __add__(self, other: NumberCounts) -> NumberCounts:
        return NumberCounts(*(a + b for a, b in zip(self.astuple(), other.astuple())))

    def add(self, other: NumberCounts) -> None:
        """Add ``other``'s counts to these, in place."""
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def astuple(self) -> tuple[int, ...]:
        return (self.stated, self.supported, self.recallable, self.recalled, self.stated_1digit,
                self.supported_1digit, self.recallable_1digit, self.recalled_1digit)

    @property
    def supported_percent(self) -> float | None:
        return percent(self.supported, self.stated)

    @property
    def recall_percent(self) -> float | None:
        return percent(self.recalled, self.recallable)


def percent(part: int, whole: int) -> float | None:
    """100 * part / whole, to two decimals; None where nothing was counted (whole 0)."""
    return round(100.0 * part / whole, 2) if whole else None


def document_numbers(summary: str, reference: str, source: str | NumberIndex) -> tuple[NumberCounts, list[str]]:
    """The counts of one document and the summary's numbers that the source lacks (as written).
    ``source`` is the article's text or a :class:`NumberIndex` of it."""
    source_index = source if isinstance(source, NumberIndex) else NumberIndex(read_numbers(source))
    stated = distinct(read_numbers(summary))
    summary_index = NumberIndex(stated)
    recallable = [r for r in distinct(read_numbers(reference)) if r in source_index]
    counts = NumberCounts()
    unsupported = []
    for number in stated:
        supported = number in source_index
        if number.one_digit:
            counts.stated_1digit += 1
            counts.supported_1digit += supported
        else:
            counts.stated += 1
            counts.supported += supported
            if not supported:
                unsupported.append(number.text)
    for number in recallable:
        recalled = number in summary_index
        if number.one_digit:
            counts.recallable_1digit += 1
            counts.recalled_1digit += recalled
        else:
            counts.recallable += 1
            counts.recalled += recalled
    return counts, unsupported


def number_scores(summaries: Sequence[str], references: Sequence[str], sources: Sequence[str]
                  ) -> tuple[dict, list[dict]]:
    """Corpus figures for ``scores.json`` (:func:`number_figures`) and per-document rows for
    ``predictions.jsonl`` (:func:`document_row`) of the summaries, their references and their source
    articles."""
    if not len(summaries) == len(references) == len(sources):
        raise ValueError(f"{len(summaries)} summaries, {len(references)} references and {len(sources)} sources")
    total = NumberCounts()
    rows = []
    for summary, reference, source in zip(summaries, references, sources):
        counts, unsupported = document_numbers(summary, reference, source)
        total += counts
        rows.append(document_row(counts, unsupported))
    return number_figures(total), rows


def document_row(counts: NumberCounts, unsupported: list[str]) -> dict:
    """One document's figures: ``numbers_supported`` and ``numbers_recall`` (percent, None where the
    summary states no number / the reference no number the source holds) and ``numbers_unsupported``
    (the summary's numbers the source lacks, as written)."""
    return {"numbers_supported": counts.supported_percent, "numbers_recall": counts.recall_percent,
            "numbers_unsupported": unsupported}


def number_figures(total: NumberCounts) -> dict:
    """Corpus figures from counts summed over its documents: micro-averages in percent (None where
    nothing was counted) and the counts behind them."""
    return {
        "numbers_supported": total.supported_percent,
        "numbers_recall": total.recall_percent,
        "numbers_supported_1digit": percent(total.supported_1digit, total.stated_1digit),
        "numbers_recall_1digit": percent(total.recalled_1digit, total.recallable_1digit),
        "numbers_stated": total.stated,
        "numbers_recallable": total.recallable,
        "numbers_stated_1digit": total.stated_1digit,
        "numbers_recallable_1digit": total.recallable_1digit,
    }


def show_percent(value: float | None) -> str:
    """A figure for the terminal: ``12.3%``, or ``n/a`` where nothing was counted."""
    return "n/a" if value is None else f"{value:.1f}%"


def format_numbers(scores: dict) -> str:
    """The figures as one line for the terminal."""
    return (f"numbers: supported by the source {show_percent(scores['numbers_supported'])} of {scores['numbers_stated']}, "
            f"recall of the reference's {scores['numbers_recallable']} {show_percent(scores['numbers_recall'])}; "
            f"one-digit: supported {show_percent(scores['numbers_supported_1digit'])} of {scores['numbers_stated_1digit']}, "
            f"recall {show_percent(scores['numbers_recall_1digit'])} of {scores['numbers_recallable_1digit']}")
