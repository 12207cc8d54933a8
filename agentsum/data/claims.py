"""Claims as a summary states them: each number of a summary sentence with the metric it is stated for,
read against a source (does one source sentence state the number beside that metric?), its
direction, and the malformed figures of a sentence. The claim figures
(:mod:`agentsum.evaluation.claims`, which says how each is read and why), the number marks of
provenance (:mod:`agentsum.data.number_links`) read claims through this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agentsum.data.figures import (DIRECTION_WORDS, YEAR_RE, Lexicon, Period, comparison_value, document_period,
                                   forward_looking, lexicon, sentence_periods, summary_period)
from agentsum.data.numbers import CURRENCY_SIGNS, PERCENT_WORDS, TENS_WORDS, UNIT_WORDS, Number, matches, read_numbers
from agentsum.data.numerals import SCALES, is_numeral
from agentsum.data.text import split_sentences, tokenize

__all__ = ["Claim", "SourceClaims", "sentence_claims", "numbers_with_positions", "malformed_figures", "direction_near",
           "Statement", "read_statement", "statement_fits"]


@dataclass
class Claim:
    """One number of a summary sentence: what it is stated for and what the source says of it.

    ``status``: ``in_context`` (a source sentence holds the number and the metric), ``elsewhere`` (the
    source holds the number, never beside that metric), ``absent`` (the source lacks it),
    ``estimate`` (an analysts' figure) or ``no_metric`` (none before it: ``in_source`` says whether
    the source holds it). ``sentences``: the source sentences holding the number beside the metric
    (in_context) or at all (elsewhere, no_metric). ``direction`` / ``source_direction``: +1, -1 or
    None; ``direction_agrees``: None where either is missing. ``strict``: for a number stated for a
    metric (in_context, elsewhere, absent), whether one statement of it in the source is stated as
    the summary states it (:func:`statement_fits`: that metric, its own number, not a comparison,
    the same basis, change or level, direction and period); None for estimates and numbers with no
    metric. ``strict_sentences``: the source sentences of those statements."""

    text: str
    at: int
    metric: str | None
    status: str
    in_source: bool
    sentences: list[int] = field(default_factory=list)
    direction: int | None = None
    source_direction: int | None = None
    strict: bool | None = None
    strict_sentences: list[int] = field(default_factory=list)

    @property
    def direction_agrees(self) -> bool | None:
        if self.direction is None or self.source_direction is None:
            return None
        return self.direction == self.source_direction

    def as_dict(self) -> dict:
        return {"number": self.text, "metric": self.metric, "status": self.status, "strict": self.strict,
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
        self.found = [self.lexicon.find(s) for s in self.sentences]
        self.metrics = [self.lexicon.metrics_of(s) for s in self.sentences]
        self._by_value: dict = {}
        for k, tokens in enumerate(self.sentences):
            for at, number in numbers_with_positions(tokens):
                self._by_value.setdefault(number.value, []).append((k, at, number))
        self.period = document_period(self.sentences)
        self._statements: dict[tuple[int, int], Statement] = {}

    @classmethod
    def from_text(cls, text: str, lex: Lexicon | None = None) -> SourceClaims:
        return cls([tokenize(s) for s in split_sentences(text)], lex)

    def statement(self, k: int, at: int) -> Statement:
        """How sentence ``k`` states its number at token ``at`` (:func:`read_statement`), read once."""
        key = (k, at)
        if key not in self._statements:
            self._statements[key] = read_statement(self.sentences[k], at, self.lexicon, self.found[k])
        return self._statements[key]

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
        strict, strict_sentences = None, []
        if status in ("in_context", "elsewhere", "absent"):
            stated = read_statement(tokens, i, lex, found, summary=True)
            strict_sentences = sorted({k for k, at in holding
                                       if statement_fits(stated, source.statement(k, at), source.period)})
            strict = bool(strict_sentences)
        claims.append(Claim(number.text, i, metric, status, in_source, sentences, direction, source_direction,
                            strict, strict_sentences))
    return claims


# ------------------------------------------------------------------------------------ a number as it is stated

#: words of a non-GAAP figure, and of a GAAP (reported) one
_ADJUSTED_WORDS = frozenset("adjusted non-gaap excluding ex-items core underlying comparable pro-forma".split())
_GAAP_WORDS = frozenset("gaap reported".split())
#: words that, after a number with no metric before it, lead to the metric it measures (``$500 million
#: of free cash flow``, ``$3.7 billion in new business``)
_TO_METRIC = frozenset("of in % percent million billion thousand total adjusted gaap non-gaap diluted".split())
#: spans a period tag of its own: the year to date and halves (``for the nine-month period``)
_YEAR_TO_DATE = (("nine", "months"), ("nine-month",), ("six", "months"), ("six-month",), ("year-to-date",),
                 ("ytd",), ("first", "half"), ("second", "half"), ("year", "to", "date"))
#: forward-looking words beside those of :data:`agentsum.data.figures.FORWARD_WORDS`, as a call says them
_PROJECTING = frozenset("projecting project anticipating plan planning".split())
#: words of a change against the previous quarter, not the year before
_SEQUENTIAL = frozenset("sequential sequentially quarter-over-quarter q/q".split())


@dataclass(frozen=True)
class Statement:
    """How one number is stated in its sentence (a summary's or a source's): the ``metric`` it
    measures, its ``basis`` (``adjusted``, ``gaap`` or None), whether it is a ``change`` of the metric
    (``up 7%``, ``an improvement of $0.08``) rather than its level, its ``direction`` (+1 / -1 / None),
    the sentence's ``periods`` (``fy``, ``qK``, ``ytd``) and whether the sentence is ``forward``
    looking, and whether the number is a ``comparison`` value (``compared to $0.64 a year ago``). A
    change is ``sequential`` where the sentence says so (``up 8% sequentially``)."""

    metric: str | None
    basis: str | None
    change: bool
    sequential: bool
    direction: int | None
    periods: frozenset
    forward: bool
    comparison: bool
    summary_period: str | None = None  # a summary sentence's own period (fy, qK, current)


def _basis(tokens: Sequence[str]) -> str | None:
    words = set(tokens)
    if not _ADJUSTED_WORDS.isdisjoint(words) or any(a == "non" and b in ("-", "gaap") for a, b in zip(tokens, tokens[1:])):
        return "adjusted"
    return "gaap" if not _GAAP_WORDS.isdisjoint(words) else None


def _year_to_date(tokens: Sequence[str]) -> bool:
    return any(tuple(tokens[k:k + len(p)]) == p for p in _YEAR_TO_DATE for k in range(len(tokens)))


def read_statement(tokens: Sequence[str], i: int, lex: Lexicon, found: list[tuple[int, int, str]] | None = None,
                   summary: bool = False) -> Statement:
    """How the number at ``tokens[i]`` is stated, read alike in a summary and a source sentence.

    The metric is the nearest metric phrase before the number (EPS where ``per share`` follows it after
    no metric or a generic earnings word), as the claim figures read it; in a source sentence, a phrase
    right after the number (only units, ``of`` or ``in`` between: ``$500 million of free cash flow``)
    comes first, because a call says a figure both ways. The basis and the change are read between
    that metric phrase (and the three words before it) and the number; a change is a direction word
    there, unless ``to`` comes right before the number (``rose 7% to $1.8 billion``: the 7% is a
    change, the $1.8 billion a level). The periods are :func:`agentsum.data.figures.sentence_periods`
    plus ``ytd`` for the year to date and halves. The sentence looks forward where a forward-looking
    word comes before the number (``we expect sales to be up 8%``), not after it (``EPS of $0.57
    exceeded the midpoint of guidance``)."""
    found = lex.find(tokens) if found is None else found
    metric, _ = _summary_metric(tokens, i, found, lex)
    before = [f for f in found if f[1] <= i]
    start, end = (before[-1][0], before[-1][1]) if before else (i, i)
    if not summary:
        after = [f for f in found if i < f[0] <= i + 5 and _TO_METRIC.issuperset(tokens[i + 1:f[0]])]
        if after:
            metric, start, end = after[0][2], after[0][0], after[0][0]
    between = list(tokens[end:i])
    cue = tokens[i - 2] if i >= 2 and tokens[i - 1] in CURRENCY_SIGNS else (tokens[i - 1] if i else "")
    change = any(w in DIRECTION_WORDS for w in between) and cue != "to"
    if not change and i + 1 < len(tokens) and tokens[i + 1] in ("%", "percent") and any(
            w in DIRECTION_WORDS for w in tokens[max(i - 3, 0):i]):
        change = True  # "up 7%" with the metric after the number
    basis = _basis(tokens[max(start - 3, 0):i + 1])
    periods = sentence_periods(list(tokens)) | ({"ytd"} if _year_to_date(tokens) else frozenset())
    forward = forward_looking(tokens[:i]) or not _PROJECTING.isdisjoint(tokens[:i])
    sequential = change and not _SEQUENTIAL.isdisjoint(tokens)
    return Statement(metric, basis, change, sequential, direction_near(tokens, i), frozenset(periods), forward,
                     comparison_value(list(tokens), i), summary_period(list(tokens)) if summary else None)


def statement_fits(claim: Statement, source: Statement, reported: Period | None) -> bool:
    """Whether a source statement of a number (``source``) states it as the summary does (``claim``):

    * the same metric, and the number is the source's own value, not a comparison;
    * the same basis where both name one (GAAP EPS given as non-GAAP is wrong);
    * a change for a change, a level for a level (an EPS improvement of $0.08 is not EPS of $0.08),
      and a sequential change only for one the summary calls sequential;
    * the same direction where both state one;
    * guidance for guidance, results for results (the source sentence looks forward as the summary
      sentence does);
    * the summary sentence's period: the full year from a sentence that names it (or, for guidance,
      a year); a quarter from a sentence that names it, or names no period in a call reporting that
      quarter; a sentence that names no period from one that names none, or names the reported
      quarter. A year-to-date or half-year sentence supplies no quarter's figure.

    Stricter than the ``numbers_in_context`` constraint of search, which reads the metrics of the
    whole source sentence (any of them), not the one stated for the number."""
    if source.comparison or claim.metric is None or source.metric != claim.metric:
        return False
    if claim.basis is not None and source.basis is not None and claim.basis != source.basis:
        return False
    if claim.change != source.change or claim.sequential != source.sequential:
        return False
    if claim.direction is not None and source.direction is not None and claim.direction != source.direction:
        return False
    if claim.forward != source.forward:
        return False
    period, tags = claim.summary_period or "current", source.periods
    quarters = {t for t in tags if t.startswith("q")}
    if period == "fy":
        return "fy" in tags or (claim.forward and not quarters and "ytd" not in tags)
    if "ytd" in tags and "fy" not in tags and not quarters:
        return False
    if period.startswith("q"):
        return period in quarters or (not quarters and "fy" not in tags
                                      and (reported is None or period == f"q{reported.quarter}"))
    return (not quarters and "fy" not in tags) or (reported is not None and f"q{reported.quarter}" in quarters)


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
