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
  ``agentsum/data/metrics.yaml`` (revenue / sales, EPS, FFO, EBITDA, margin, net income, cash flow, capex,
  dividend, same-store sales, ...; with synonyms), or EPS where ``per share`` follows the number and
  no other metric comes before it. Numbers stated as analysts' estimates (``versus refinitiv ibes
  estimate of $880 million``) and numbers with no metric before them are counted apart
  (``numbers_estimates``, ``numbers_no_metric``). A number the source lacks counts as out of
  context. Years, bare one-digit numbers (``5``) and numbers written in words are not claims here.
* **direction agreement**: of the summary's numbers with a direction word in their sentence
  (``rose`` / ``up`` / ``increased`` against ``fell`` / ``down`` / ``decreased``; the one nearest
  the number, ties to the word before), the share whose source sentence holding the number (one
  that states the metric where there is one) has the same direction nearest the number. A claim whose source sentences have no direction word
  cannot be checked and is counted apart (``direction_unverifiable``).
* **malformed figures**: the share of summaries with a currency sign, a scale word or ``percent``
  that has no number (``$ common billion``, ``$, million``, ``$ per share``), or with units stacked
  on one number (``5% million``, ``$5 percent``).

Corpus figures are micro-averages over mentions / numbers / claims (summed counts), like the
numbers figures; ``malformed_figures`` is over summaries. Every per-document figure is None where
there is nothing to count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields

from agentsum.data.figures import (DIRECTION_WORDS, YEAR_RE, Lexicon, Period, document_period, forward_looking,
                                   lexicon, mention_agrees, period_mentions)
from agentsum.data.numerals import SCALES, is_numeral
from agentsum.data.text import split_sentences, tokenize
from agentsum.evaluation.numbers import (CURRENCY_SIGNS, PERCENT_WORDS, TENS_WORDS, UNIT_WORDS, Number, matches,
                                        read_numbers)

__all__ = ["SourceClaims", "sentence_claims", "Claim", "ClaimCounts", "document_claims", "claim_scores",
           "claim_figures", "claim_row", "malformed_figures", "format_claims"]

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
                and YEAR_RE.fullmatch(number.text) is not None)


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


def _direction_near(tokens: Sequence[str], i: int) -> int | None:
    """The direction word nearest the token ``i`` in its sentence (ties to the word before), as +1 /
    -1, or None. The summary and the source are read alike, so a sentence copied whole agrees."""
    best, best_distance = None, None
    for j, token in enumerate(tokens):
        if j == i or token not in DIRECTION_WORDS:
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
        direction = _direction_near(tokens, i)
        source_direction = None
        if direction is not None and holding:
            candidates = [(k, at) for k, at in holding if k in in_context] or holding
            for k, at in candidates:
                source_direction = _direction_near(source.sentences[k], at)
                if source_direction is not None:
                    break
        claims.append(Claim(number.text, i, metric, status, in_source, sentences, direction, source_direction))
    return claims


# ------------------------------------------------------------------------------------ malformed figures

_NUMBER_WORDS = frozenset(UNIT_WORDS) | frozenset(TENS_WORDS) | {"hundred", "a", "one"}


def _digit_word(word: str) -> bool:
    """``double-digit``, ``mid-single-digit``: a size in words that ``percent`` may follow."""
    return word.endswith(("digit", "digits"))


def malformed_figures(tokens: Sequence[str]) -> list[str]:
    """The malformed figures of a tokenized summary, as written: a currency sign with no numeral after
    it, a scale word or percent with no numeral (or number word, or ``double-digit`` before percent)
    before it, units stacked on one numeral (``5 % million``, ``$ 5 percent``, ``5 million %``)."""
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
                    or previous in PERCENT_WORDS or (token in PERCENT_WORDS and _digit_word(previous))):
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
