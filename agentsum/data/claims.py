"""Claims as a summary states them: each number of a summary sentence with the metric it is stated for,
read against a source (does one source sentence state the number beside that metric?), its
direction, and the malformed figures of a sentence. The claim figures
(:mod:`agentsum.evaluation.claims`, which says how each is read and why), the number marks of
provenance (:mod:`agentsum.data.number_links`) read claims through this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agentsum.data.figures import DIRECTION_WORDS, YEAR_RE, Lexicon, document_period, lexicon
from agentsum.data.numbers import CURRENCY_SIGNS, PERCENT_WORDS, TENS_WORDS, UNIT_WORDS, Number, matches, read_numbers
from agentsum.data.numerals import SCALES, is_numeral
from agentsum.data.text import split_sentences, tokenize

__all__ = ["Claim", "SourceClaims", "sentence_claims", "numbers_with_positions", "malformed_figures", "direction_near"]


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


def direction_near(tokens: Sequence[str], i: int) -> int | None:
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
        direction = direction_near(tokens, i)
        source_direction = None
        if direction is not None and holding:
            candidates = [(k, at) for k, at in holding if k in in_context] or holding
            for k, at in candidates:
                source_direction = direction_near(source.sentences[k], at)
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
            elif previous in PERCENT_WORDS or previous in SCALES:
                bad.append(" ".join(tokens[max(i - 2, 0):i + 1]))  # 5 % million, 5 % percent, 5 million %, 5 million billion
            elif token in PERCENT_WORDS and i >= 2 and tokens[i - 2] in CURRENCY_SIGNS:
                bad.append(" ".join(tokens[i - 2:i + 1]))  # $ 5 percent
    return bad
