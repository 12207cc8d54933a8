"""Claims, measured: is each figure of a summary stated for the right metric, the right period and the
right direction, and is it written as a figure at all?

"The number occurs in the source" (:mod:`agentsum.evaluation.numbers`) is a weak test for earnings
calls, which hold hundreds of numbers. A claim is right when the source states that number for that
metric, that period and that direction. Four figures read what a summary claims (``agentsum
evaluate``, ``lead3`` and ``extract`` report them for English beside ROUGE and the numbers figures):

* **period agreement**: the share of the summary's period mentions that match the document's own
  reporting period (and, where a reference is given, the reference's). Mentions are quarters
  (``q1``-``q4``, ``1q``, ``first quarter``, ``fourth-quarter``), halves (``h1``, ``first half``),
  the full year (``fy``, ``fy21``, ``full year``, ``fiscal year``, ``fiscal 2021``) and years
  (``2021``). The document's period is the quarter its sentences name most, compared periods left
  out (:func:`document_period`). How a mention is judged (:func:`mention_agrees`):

  - in a sentence about results, a quarter agrees when it is the document's quarter; a half when it
    holds the document's quarter; the full year only in a fourth-quarter call (which reports the
    year); a year when it is the document's year;
  - in a forward-looking sentence (``sees``, ``expects``, ``guidance``, ``outlook`` ...: the
    bullets' guidance), a period agrees when it lies after the document's (``sees q4`` in a
    third-quarter call, ``sees fy`` in any call, ``expects 2022`` in a fourth-quarter 2021 call).

  A year mention where the document's year is not known is not counted (it is not judged either
  way); the year is not read from the source (:func:`document_period` says why), so a bare year is
  judged only against a known year, and ``q2 2020`` is judged by its quarter. A document whose
  quarter cannot be found has no period agreement (None, never 0% or 100%), counted in
  ``period_undetected``.
* **numbers in context**: the share of the summary's numbers for which one source sentence holds
  both the number and the metric the summary states it for. The summary's metric is the nearest
  metric phrase before the number in its summary sentence, from the lexicon kept as data in
  ``metrics.yaml`` (revenue / sales, EPS, FFO, EBITDA, margin, net income, cash flow, capex,
  dividend, same-store sales, ...; with synonyms), or EPS where ``per share`` follows the number and
  no other metric comes before it. Numbers stated as analysts' estimates (``versus refinitiv ibes
  estimate of $880 million``) and numbers with no metric before them are counted apart
  (``numbers_estimates``, ``numbers_no_metric``). A number the source lacks counts as out of
  context. Years, bare one-digit numbers (``5``) and numbers written in words are not claims here.
* **direction agreement**: of the summary's numbers with a direction word before them in their
  sentence (``rose`` / ``up`` / ``increased`` against ``fell`` / ``down`` / ``decreased``), the
  share whose source sentence holding the number (one that states the metric where there is one)
  has the same direction nearest the number. A claim whose source sentences have no direction word
  cannot be checked and is counted apart (``direction_unverifiable``).
* **malformed figures**: the share of summaries with a currency sign, a scale word or ``percent``
  that has no number (``$ common billion``, ``$, million``, ``$ per share``), or with units stacked
  on one number (``5% million``, ``$5 percent``).

Corpus figures are micro-averages over mentions / numbers / claims (summed counts), like the
numbers figures; ``malformed_figures`` is over summaries. Every per-document figure is None where
there is nothing to count.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from functools import lru_cache
from importlib import resources

import yaml

from agentsum.data.numerals import SCALES, is_numeral
from agentsum.data.text import split_sentences, tokenize
from agentsum.evaluation.numbers import (CURRENCY_SIGNS, PERCENT_WORDS, TENS_WORDS, UNIT_WORDS, Number, matches,
                                        read_numbers)

__all__ = ["Lexicon", "lexicon", "Period", "document_period", "period_mentions", "mention_agrees",
           "sentence_claims", "Claim", "ClaimCounts", "document_claims", "claim_scores", "claim_figures",
           "claim_row", "malformed_figures", "format_claims", "FORWARD_WORDS", "DIRECTION_WORDS"]

#: words that make a sentence forward-looking (guidance): its periods are judged as the future
FORWARD_WORDS = frozenset("sees see expects expect expected expecting guidance guides guide guiding outlook "
                          "forecast forecasts anticipates anticipate projects targets reaffirms raises lowers "
                          "narrows will".split())
#: direction words, as +1 (up) or -1 (down); "up to" is a bound, not a direction
DIRECTION_WORDS = {
    **{w: 1 for w in "rose rise rises risen rising up increased increase increases increasing grew grow grows "
                     "growth growing gained gain gains higher improved improvement improves jumped climbed "
                     "expanded expansion surged".split()},
    **{w: -1 for w in "fell fall falls fallen falling down decreased decrease decreases decreasing declined "
                      "decline declines declining dropped drop drops lower shrank contracted contraction slipped "
                      "reduced reduction lowered".split()},
}
#: words before a quarter that name a compared period, not the reported one (``up from q1``)
COMPARISON_WORDS = frozenset("from versus vs than over since last prior previous sequentially compared against".split())

ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4}
_QUARTER_RE = re.compile(r"(?:q([1-4])|([1-4])q)(?:'?(\d{2}|\d{4}))?")
_HALF_RE = re.compile(r"(?:h([12])|([12])h)(?:'?(\d{2}|\d{4}))?")
_FY_RE = re.compile(r"fy'?(\d{2}|\d{4})?")
_YEAR_RE = re.compile(r"(?:19|20)\d{2}")
QUARTER, HALF, FULL_YEAR, YEAR = "quarter", "half", "fy", "year"
UP, DOWN = 1, -1


# ------------------------------------------------------------------------------------ the lexicon

@dataclass(frozen=True)
class Lexicon:
    """The metric lexicon (``metrics.yaml``): ``phrases`` maps each phrase's tokens to its metric
    (longest phrases first within a first token), ``combos`` the ``a + b`` entries a source sentence
    may hold apart, ``estimate_words`` the words of analysts' figures."""

    phrases: dict[str, list[tuple[tuple[str, ...], str]]]
    combos: dict[str, list[tuple[tuple[str, ...], ...]]]
    estimate_words: frozenset[str]

    @classmethod
    def from_mapping(cls, data: dict) -> Lexicon:
        phrases: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        combos: dict[str, list[tuple[tuple[str, ...], ...]]] = {}
        for metric, entries in data["metrics"].items():
            for entry in entries:
                parts = [tuple(tokenize(part)) for part in str(entry).split(" + ")]
                if len(parts) > 1:
                    combos.setdefault(metric, []).append(tuple(parts))
                else:
                    phrases.setdefault(parts[0][0], []).append((parts[0], metric))
        for first in phrases:
            phrases[first].sort(key=lambda p: -len(p[0]))
        return cls(phrases, combos, frozenset(data.get("estimate_words", [])))

    def find(self, tokens: Sequence[str]) -> list[tuple[int, int, str]]:
        """The metric phrases of ``tokens``: (start, end, metric), left to right, longest match at
        each position, no overlaps."""
        found, i = [], 0
        while i < len(tokens):
            for phrase, metric in self.phrases.get(tokens[i], ()):
                if tuple(tokens[i:i + len(phrase)]) == phrase:
                    found.append((i, i + len(phrase), metric))
                    i += len(phrase)
                    break
            else:
                i += 1
        return found

    def metrics_of(self, tokens: Sequence[str]) -> set[str]:
        """Every metric ``tokens`` state: by a phrase, or by all parts of an ``a + b`` entry."""
        stated = {metric for _, _, metric in self.find(tokens)}
        for metric, entries in self.combos.items():
            if metric not in stated and any(all(_holds(tokens, part) for part in parts) for parts in entries):
                stated.add(metric)
        return stated


def _holds(tokens: Sequence[str], phrase: tuple[str, ...]) -> bool:
    n = len(phrase)
    return any(tuple(tokens[i:i + n]) == phrase for i in range(len(tokens) - n + 1))


@lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    """The package's metric lexicon (``agentsum/evaluation/metrics.yaml``)."""
    text = resources.files("agentsum.evaluation").joinpath("metrics.yaml").read_text(encoding="utf-8")
    return Lexicon.from_mapping(yaml.safe_load(text))


# ------------------------------------------------------------------------------------ periods

@dataclass(frozen=True)
class Period:
    """A reporting period: the ``quarter`` (1-4) and, where known, the ``year``."""

    quarter: int
    year: int | None = None

    def __str__(self) -> str:
        return f"q{self.quarter}" + (f" {self.year}" if self.year else "")


@dataclass(frozen=True)
class Mention:
    """A period named in a sentence: ``kind`` (quarter, half, fy, year), ``value`` (the quarter or
    half; None for fy and year), the ``year`` written with it, the token index ``at``."""

    kind: str
    value: int | None
    year: int | None
    at: int
    text: str


def _year(digits: str | None) -> int | None:
    if not digits:
        return None
    return int(digits) if len(digits) == 4 else 2000 + int(digits)


def period_mentions(tokens: Sequence[str]) -> list[Mention]:
    """The period mentions of one tokenized sentence, in order. A year right after a quarter, half or
    fiscal year (``q1 2021``, ``first quarter of 2021``, ``fiscal 2022``) belongs to it."""
    found: list[Mention] = []
    i, n = 0, len(tokens)
    while i < n:
        token = tokens[i]
        mention, j = None, i + 1
        if (m := _QUARTER_RE.fullmatch(token)) is not None:
            mention = (QUARTER, int(m[1] or m[2]), _year(m[3]))
        elif (m := _HALF_RE.fullmatch(token)) is not None:
            mention = (HALF, int(m[1] or m[2]), _year(m[3]))
        elif token in ORDINALS and j < n and tokens[j] in ("quarter", "half"):
            mention = (QUARTER if tokens[j] == "quarter" else HALF, ORDINALS[token], None)
            j += 1
        elif token.endswith(("-quarter", "-half")) and token.split("-")[0] in ORDINALS:
            word, kind = token.split("-")[0], token.split("-")[1]
            mention = (QUARTER if kind == "quarter" else HALF, ORDINALS[word], None)
        elif (m := _FY_RE.fullmatch(token)) is not None:
            mention = (FULL_YEAR, None, _year(m[1]))
        elif token in ("full", "fiscal") and j < n and tokens[j] in ("year", "-year"):
            mention = (FULL_YEAR, None, None)
            j += 1
        elif token in ("full-year", "fiscal-year"):
            mention = (FULL_YEAR, None, None)
        elif token == "fiscal" and j < n and _YEAR_RE.fullmatch(tokens[j]):
            mention = (FULL_YEAR, None, None)  # the year is read just below
        elif _YEAR_RE.fullmatch(token):
            mention = (YEAR, None, int(token))
        if mention is None:
            i += 1
            continue
        kind, value, year = mention
        if kind != YEAR and year is None:  # q1 2021, first quarter of 2021, fiscal 2022
            k = j + 1 if j < n and tokens[j] in ("of", "fiscal", "'") else j
            if k < n and _YEAR_RE.fullmatch(tokens[k]):
                year, j = int(tokens[k]), k + 1
            elif k + 1 < n and tokens[k] == "fiscal" and _YEAR_RE.fullmatch(tokens[k + 1]):
                year, j = int(tokens[k + 1]), k + 2
        found.append(Mention(kind, value, year, i, " ".join(tokens[i:j])))
        i = j
    return found


def forward_looking(tokens: Sequence[str]) -> bool:
    """A sentence of guidance: it holds a :data:`FORWARD_WORDS` word."""
    return not FORWARD_WORDS.isdisjoint(tokens)


def _comparison(tokens: Sequence[str], mention: Mention) -> bool:
    """A mention that names the period compared with, not the one reported (``up from the first
    quarter``, ``versus q2``, ``the third quarter of last year``, ``a year ago``)."""
    before = tokens[max(mention.at - 3, 0):mention.at]
    after = tokens[mention.at:mention.at + 6]
    return not COMPARISON_WORDS.isdisjoint(before) or "ago" in after or ("last" in after and "year" in after)


def document_period(sentences: Sequence[Sequence[str]]) -> Period | None:
    """The period a document reports: the quarter its sentences name most, leaving out
    forward-looking sentences and mentions of a compared period (:func:`_comparison`; all mentions
    where that leaves none; ties to the quarter named first). None where no quarter is named. The
    year is left unknown (None).

    Choices. The whole document, not its opening sentences, because the transcripts often omit the
    opening that names the quarter and talk of the previous quarter early ("up 6% sequentially from
    our first quarter"): on the ECTSum calls, whose file names give the quarter, the whole document
    finds the right quarter for 238 of 247 validation and 1,562 of 1,622 training calls; the quarter
    named most in the first 10 sentences for 232 and 1,518, the first quarter named for 224 and 1,443.
    No year, because the years a call names beside its quarter are mostly those of comparisons ("in
    q3 of 2019"): the latest year named beside the reported quarter, outside sentences that compare,
    agreed with the file name's year for only 105 of the 122 validation calls that name one
    (benchmarks/studies/claim_figures.py)."""
    reported, named = [], []
    for tokens in sentences:
        if forward_looking(tokens):
            continue
        for mention in period_mentions(tokens):
            if mention.kind == QUARTER:
                named.append(mention)
                if not _comparison(tokens, mention):
                    reported.append(mention)
    mentions = reported or named
    if not mentions:
        return None
    return Period(Counter(m.value for m in mentions).most_common(1)[0][0])


def mention_agrees(mention: Mention, period: Period, forward: bool) -> bool | None:
    """Whether ``mention`` (in a forward-looking sentence or not) agrees with ``period``, as the module
    says; None where it cannot be judged (a year against a period whose year is unknown)."""
    if mention.year is not None and period.year is not None:
        if mention.year < period.year or (mention.year > period.year and not forward):
            return False
        if mention.year > period.year:
            return True  # guidance for a later year
    elif mention.kind == YEAR:
        return None
    if mention.kind == YEAR:
        return True  # the document's year (a later one is handled above)
    if mention.kind == QUARTER:
        return mention.value != period.quarter if forward else mention.value == period.quarter
    if mention.kind == HALF:
        half = (period.quarter + 1) // 2
        return mention.value > half or (mention.value == half and period.quarter % 2 == 1) if forward \
            else mention.value == half
    return forward or period.quarter == 4  # the full year: guidance, or a fourth-quarter call's results


# ------------------------------------------------------------------------------------ claims

@dataclass
class Claim:
    """One number of a summary sentence: what it is stated for and what the source says of it.

    ``status``: ``in_context`` (a source sentence holds the number and the metric), ``elsewhere`` (the
    source holds the number, never beside that metric), ``absent`` (the source lacks it),
    ``estimate`` (an analysts' figure) or ``no_metric`` (none before it: ``in_source`` says whether
    the source holds it). ``sentences``: the source sentences holding the number beside the metric
    (in_context) or at all (elsewhere, no_metric). ``direction`` / ``source_direction``: +1, -1 or
    None; ``direction_agrees``: None where either is missing."""

    text: str
    at: int
    metric: str | None
    status: str
    in_source: bool
    sentences: list[int] = field(default_factory=list)
    direction: int | None = None
    source_direction: int | None = None

    @property
    def direction_agrees(self) -> bool | None:
        if self.direction is None or self.source_direction is None:
            return None
        return self.direction == self.source_direction

    def as_dict(self) -> dict:
        return {"number": self.text, "metric": self.metric, "status": self.status,
                "direction": _direction_name(self.direction), "source_direction": _direction_name(self.source_direction)}


def _direction_name(direction: int | None) -> str | None:
    return None if direction is None else ("up" if direction > 0 else "down")


def _is_claim_number(number: Number) -> bool:
    """A number a claim is about: not a bare year, not a bare one-digit count."""
    if number.one_digit:
        return False
    whole = number.value == number.value.to_integral_value()
    return not (number.unit is None and not number.scaled and whole and 1900 <= number.value <= 2099
                and _YEAR_RE.fullmatch(number.text) is not None)


def numbers_with_positions(tokens: Sequence[str]) -> list[tuple[int, Number]]:
    """(token index of the numeral, number) for every numeral token of ``tokens`` that states a claim
    number (:func:`_is_claim_number`), read with its currency sign, scale and unit."""
    out = []
    for i, token in enumerate(tokens):
        if not is_numeral(token):
            continue
        start = i
        if i > 0 and tokens[i - 1] in CURRENCY_SIGNS:
            start = i - 1
        elif i > 1 and tokens[i - 1] == "(" and tokens[i - 2] in CURRENCY_SIGNS:  # $ ( 0.03 )
            start = i - 2
        found = read_numbers(list(tokens[start:i + 4]))
        out += [(i, n) for n in found if n.text == found[0].text and _is_claim_number(n)] if found else []
    return out


def _per_share_after(tokens: Sequence[str], i: int) -> bool:
    window = tokens[i + 1:i + 6]
    return any(tuple(window[k:k + 2]) in (("per", "share"), ("a", "share"), ("per", "diluted")) for k in range(len(window)))


def _summary_metric(tokens: Sequence[str], i: int, found: list[tuple[int, int, str]], lex: Lexicon
                    ) -> tuple[str | None, bool]:
    """The metric the number at ``tokens[i]`` is stated for (the nearest phrase ending before it, or
    EPS for ``... per share`` after a number with no metric or a generic earnings word before it) and
    whether it is an analysts' estimate (an estimate word between that phrase and the number)."""
    before = [f for f in found if f[1] <= i]
    metric, end = (before[-1][2], before[-1][1]) if before else (None, 0)
    if _per_share_after(tokens, i) and metric in (None, "net_income"):
        metric = "eps"
    estimate = not lex.estimate_words.isdisjoint(tokens[end:i])
    return metric, estimate


def _direction_near(tokens: Sequence[str], i: int, before_only: bool) -> int | None:
    """The direction word nearest the token ``i`` (only before it where ``before_only``; ties to the
    word before), as +1 / -1, or None."""
    best, best_distance = None, None
    for j, token in enumerate(tokens):
        if j == i or token not in DIRECTION_WORDS or (before_only and j > i):
            continue
        if token == "up" and j + 1 < len(tokens) and tokens[j + 1] == "to":
            continue
        distance = abs(i - j) + (0.5 if j > i else 0)
        if best_distance is None or distance < best_distance:
            best, best_distance = DIRECTION_WORDS[token], distance
    return best


class SourceClaims:
    """A source document read for claims: its tokenized sentences, the metrics each states, and its
    claim numbers by value, for :func:`sentence_claims`."""

    def __init__(self, sentences: Sequence[Sequence[str]], lex: Lexicon | None = None):
        self.lexicon = lex or lexicon()
        self.sentences = [list(s) for s in sentences]
        self.metrics = [self.lexicon.metrics_of(s) for s in self.sentences]
        self._by_value: dict = {}
        for k, tokens in enumerate(self.sentences):
            for at, number in numbers_with_positions(tokens):
                self._by_value.setdefault(number.value, []).append((k, at, number))
        self.period = document_period(self.sentences)

    @classmethod
    def from_text(cls, text: str, lex: Lexicon | None = None) -> SourceClaims:
        return cls([tokenize(s) for s in split_sentences(text)], lex)

    def holding(self, number: Number) -> list[tuple[int, int]]:
        """(sentence, token index) of every statement of a number matching ``number``."""
        return [(k, at) for k, at, there in self._by_value.get(number.value, ()) if matches(number, there)]


def sentence_claims(tokens: Sequence[str], source: SourceClaims) -> list[Claim]:
    """The claims of one tokenized summary sentence against ``source``, in order."""
    lex = source.lexicon
    found = lex.find(tokens)
    claims = []
    for i, number in numbers_with_positions(tokens):
        metric, estimate = _summary_metric(tokens, i, found, lex)
        holding = source.holding(number)
        in_source = bool(holding)
        in_context = sorted({k for k, _ in holding if metric in source.metrics[k]}) if metric else []
        if estimate:
            status = "estimate"
        elif metric is None:
            status = "no_metric"
        else:
            status = "in_context" if in_context else ("elsewhere" if in_source else "absent")
        sentences = in_context or sorted({k for k, _ in holding})
        direction = _direction_near(tokens, i, before_only=True)
        source_direction = None
        if direction is not None and holding:
            candidates = [(k, at) for k, at in holding if k in in_context] or holding
            for k, at in candidates:
                source_direction = _direction_near(source.sentences[k], at, before_only=False)
                if source_direction is not None:
                    break
        claims.append(Claim(number.text, i, metric, status, in_source, sentences, direction, source_direction))
    return claims


# ------------------------------------------------------------------------------------ malformed figures

_NUMBER_WORDS = frozenset(UNIT_WORDS) | frozenset(TENS_WORDS) | {"hundred", "a", "one"}


def malformed_figures(tokens: Sequence[str]) -> list[str]:
    """The malformed figures of a tokenized summary, as written: a currency sign with no numeral after
    it, a scale word or percent with no numeral (or number word) before it, units stacked on one
    numeral (``5 % million``, ``$ 5 percent``, ``5 million %``)."""
    bad = []
    n = len(tokens)
    for i, token in enumerate(tokens):
        if token in CURRENCY_SIGNS:
            j = i + 1 + (i + 1 < n and tokens[i + 1] == "(")
            if j >= n or not is_numeral(tokens[j]):
                bad.append(" ".join(tokens[i:i + 3]))
        elif token in SCALES or token in PERCENT_WORDS:
            previous = tokens[i - 1] if i else ""
            if not (is_numeral(previous) or previous in _NUMBER_WORDS or previous in SCALES
                    or previous in PERCENT_WORDS):
                bad.append(" ".join(tokens[max(i - 2, 0):i + 1]))
            elif previous in PERCENT_WORDS or (previous in SCALES and token in PERCENT_WORDS):
                bad.append(" ".join(tokens[max(i - 2, 0):i + 1]))  # 5 % million, 5 % percent, 5 million %
            elif token in PERCENT_WORDS and i >= 2 and tokens[i - 2] in CURRENCY_SIGNS:
                bad.append(" ".join(tokens[i - 2:i + 1]))  # $ 5 percent
    return bad


# ------------------------------------------------------------------------------------ counts and figures

@dataclass
class ClaimCounts:
    """Counts behind the claim figures, for one document or summed over a corpus."""

    period_mentions: int = 0
    period_agree: int = 0
    period_mentions_reference: int = 0
    period_agree_reference: int = 0
    period_undetected: int = 0  # documents whose period the source does not name
    numbers: int = 0  # numbers stated for a metric (not estimates)
    in_context: int = 0
    elsewhere: int = 0
    absent: int = 0
    estimates: int = 0
    no_metric: int = 0
    direction_claims: int = 0  # numbers with a direction whose source states one
    direction_agree: int = 0
    direction_unverifiable: int = 0
    summaries: int = 0
    malformed: int = 0  # summaries with a malformed figure

    def add(self, other: ClaimCounts) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


def _percent(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 2) if whole else None


def summary_sentences_of(text: str) -> list[list[str]]:
    """A summary (or reference) as tokenized sentences: its lines, each split into sentences."""
    return [tokenize(s) for s in split_sentences(text)]


def document_claims(summary: str, source: str | SourceClaims, reference: str | None = None
                    ) -> tuple[ClaimCounts, dict]:
    """The counts and the predictions.jsonl row (:func:`claim_row`) of one summary."""
    source = source if isinstance(source, SourceClaims) else SourceClaims.from_text(source)
    sentences = summary_sentences_of(summary)
    counts = ClaimCounts(summaries=1)
    period = source.period
    reference_period = document_period(summary_sentences_of(reference)) if reference else None
    claims: list[Claim] = []
    mentions = []
    for tokens in sentences:
        forward = forward_looking(tokens)
        for mention in period_mentions(tokens):
            if period is not None:
                agrees = mention_agrees(mention, period, forward)
                if agrees is not None:
                    counts.period_mentions += 1
                    counts.period_agree += agrees
                    mentions.append({"period": mention.text, "agrees": agrees})
            if reference_period is not None:
                agrees = mention_agrees(mention, reference_period, forward)
                if agrees is not None:
                    counts.period_mentions_reference += 1
                    counts.period_agree_reference += agrees
        claims += sentence_claims(tokens, source)
    counts.period_undetected = int(period is None)
    for claim in claims:
        if claim.status == "estimate":
            counts.estimates += 1
        elif claim.status == "no_metric":
            counts.no_metric += 1
        else:
            counts.numbers += 1
            counts.in_context += claim.status == "in_context"
            counts.elsewhere += claim.status == "elsewhere"
            counts.absent += claim.status == "absent"
        if claim.direction is not None and claim.in_source:
            if claim.source_direction is None:
                counts.direction_unverifiable += 1
            else:
                counts.direction_claims += 1
                counts.direction_agree += bool(claim.direction_agrees)
    malformed = [m for tokens in sentences for m in malformed_figures(tokens)]
    counts.malformed = int(bool(malformed))
    return counts, claim_row(counts, period, claims, mentions, malformed)


def claim_row(counts: ClaimCounts, period: Period | None, claims: Sequence[Claim], mentions: list[dict],
              malformed: list[str]) -> dict:
    """One document's claim fields for predictions.jsonl: the detected ``period``, the four figures
    (percent, None where nothing was counted) and what they were read from."""
    return {
        "period": str(period) if period else None,
        "period_agreement": _percent(counts.period_agree, counts.period_mentions),
        "numbers_in_context": _percent(counts.in_context, counts.numbers),
        "direction_agreement": _percent(counts.direction_agree, counts.direction_claims),
        "malformed_figures": malformed,
        "claims": [c.as_dict() for c in claims],
        "period_mentions": mentions,
    }


def claim_scores(summaries: Sequence[str], sources: Sequence[str], references: Sequence[str] | None = None
                 ) -> tuple[dict, list[dict]]:
    """Corpus figures for scores.json (:func:`claim_figures`) and per-document rows."""
    if len(summaries) != len(sources) or (references is not None and len(references) != len(summaries)):
        raise ValueError(f"{len(summaries)} summaries, {len(sources)} sources"
                         + (f" and {len(references)} references" if references is not None else ""))
    total = ClaimCounts()
    rows = []
    for k, (summary, source) in enumerate(zip(summaries, sources)):
        counts, row = document_claims(summary, source, references[k] if references is not None else None)
        total.add(counts)
        rows.append(row)
    return claim_figures(total), rows


def claim_figures(total: ClaimCounts) -> dict:
    """Corpus figures from summed counts: percentages (None where nothing was counted) and counts."""
    return {
        "period_agreement": _percent(total.period_agree, total.period_mentions),
        "period_agreement_reference": _percent(total.period_agree_reference, total.period_mentions_reference),
        "period_mentions": total.period_mentions,
        "period_undetected": total.period_undetected,
        "numbers_in_context": _percent(total.in_context, total.numbers),
        "numbers_elsewhere": _percent(total.elsewhere, total.numbers),
        "numbers_absent": _percent(total.absent, total.numbers),
        "numbers_with_metric": total.numbers,
        "numbers_estimates": total.estimates,
        "numbers_no_metric": total.no_metric,
        "direction_agreement": _percent(total.direction_agree, total.direction_claims),
        "direction_claims": total.direction_claims,
        "direction_unverifiable": total.direction_unverifiable,
        "malformed_figures": _percent(total.malformed, total.summaries),
    }


def format_claims(scores: dict) -> str:
    """The claim figures as one line for the terminal."""
    def show(value):
        return "n/a" if value is None else f"{value:.1f}%"

    return (f"claims: period agreement {show(scores['period_agreement'])} of {scores['period_mentions']} mentions "
            f"({scores['period_undetected']} documents without a detected period); numbers in context "
            f"{show(scores['numbers_in_context'])} of {scores['numbers_with_metric']} "
            f"({scores['numbers_estimates']} estimates, {scores['numbers_no_metric']} with no metric apart); "
            f"direction agreement {show(scores['direction_agreement'])} of {scores['direction_claims']}; "
            f"malformed figures in {show(scores['malformed_figures'])} of summaries")
