"""Figures as an earnings call or a summary states them: the metric a phrase names (the lexicon kept as
data in ``metrics.yaml``), the periods a sentence names, the period a document reports, whether a
sentence looks forward (guidance), and directions. Read on the project's tokens (lower-cased,
punctuation split off, :func:`agentsum.data.text.tokenize`).

The claim figures (:mod:`agentsum.evaluation.claims`) and the claim constraints of search
(:mod:`agentsum.decoding.constraints`) both read text through this module, so a summary is
constrained by the same reading it is measured by.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml

from agentsum.data.numerals import is_numeral
from agentsum.data.text import tokenize

__all__ = ["Lexicon", "lexicon", "Period", "Mention", "period_mentions", "forward_looking", "document_period",
           "mention_agrees", "FORWARD_WORDS", "DIRECTION_WORDS", "COMPARISON_WORDS", "QUARTER", "HALF",
           "FULL_YEAR", "YEAR", "YEAR_RE", "ORDINALS", "comparison_value", "sentence_periods", "summary_period",
           "last_direction"]

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
YEAR_RE = re.compile(r"(?:19|20)\d{2}")
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
    """The package's metric lexicon (``agentsum/data/metrics.yaml``)."""
    text = resources.files("agentsum.data").joinpath("metrics.yaml").read_text(encoding="utf-8")
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
        elif token == "fiscal" and j < n and YEAR_RE.fullmatch(tokens[j]):
            mention = (FULL_YEAR, None, None)  # the year is read just below
        elif YEAR_RE.fullmatch(token):
            mention = (YEAR, None, int(token))
        if mention is None:
            i += 1
            continue
        kind, value, year = mention
        if kind != YEAR and year is None:  # q1 2021, first quarter of 2021, fiscal 2022
            k = j + 1 if j < n and tokens[j] in ("of", "fiscal", "'") else j
            if k < n and YEAR_RE.fullmatch(tokens[k]):
                year, j = int(tokens[k]), k + 1
            elif k + 1 < n and tokens[k] == "fiscal" and YEAR_RE.fullmatch(tokens[k + 1]):
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
    finds the right quarter for 238 of 247 validation and 1,566 of 1,622 training calls; the quarter
    named most in the first 10 sentences for 233 and 1,523, the first quarter named for 223 and 1,455.
    No year, because the years a call names beside its quarter are mostly those of comparisons ("in
    q3 of 2019"): the latest year named beside the reported quarter, outside sentences that compare,
    agreed with the file name's year for only 105 of the 122 validation calls that name one
    (benchmarks/studies/claim_figures.py prints the check)."""
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
    if mention.kind == QUARTER:  # guidance: a later quarter, of this year or (from a fourth quarter) the next
        return (mention.value > period.quarter or period.quarter == 4) if forward else mention.value == period.quarter
    if mention.kind == HALF:
        half = (period.quarter + 1) // 2
        return mention.value > half or (mention.value == half and period.quarter % 2 == 1) if forward \
            else mention.value == half
    return forward or period.quarter == 4  # the full year: guidance, or a fourth-quarter call's results


# ------------------------------------------------------------------------------------ a number in its sentence

#: words after a number that make it a comparison value (``$0.64 a year ago``)
AGO_AFTER = (("a", "year", "ago"), ("year", "ago"), ("last", "year"), ("prior", "year"), ("year-ago",),
             ("prior-year",), ("the", "prior", "year"), ("the", "year-ago"))
#: words that, nearest before a number, make it the period's own value rather than a comparison
VALUE_CUES = frozenset("to of was were is reached totaled totalled at by".split())
#: a full-year source sentence
FULL_YEAR_WORDS = frozenset({"full-year", "annual", "fy"})
_WINDOW = 6  # tokens read before a number for its cue
#: words that, nearest before a number in its sentence, make it the value compared with
COMPARING = frozenset("from versus vs vs. since prior previous last against".split())


def comparison_value(sentence: list[str], i: int) -> bool:
    """The numeral at ``sentence[i]`` is stated as a comparison: the nearest cue before it in its
    sentence (within a few tokens; a direction word, a value cue such as ``was`` or ``to``, or another
    numeral ends the search) is a comparison word (``versus $0.64``, ``from $0.64``, ``compared to
    $0.64``), or a year-ago phrase follows it before the next numeral or comparison word (``$0.64 a
    year ago``). ``up 10% from last year`` and ``more than $1 billion`` are not comparisons."""
    for j in range(i - 1, max(i - _WINDOW, -1), -1):
        word = sentence[j]
        if word == "to" and j > 0 and sentence[j - 1] in ("compared", "compares", "comparison"):
            return True
        if word in COMPARING:
            return True
        if word in VALUE_CUES or word in DIRECTION_WORDS or is_numeral(word):
            break
    after: list[str] = []
    for word in sentence[i + 1:i + 7]:
        if is_numeral(word) or word in COMPARING or word == "compared":
            break
        after.append(word)
    following = tuple(after)
    return any(following[k:k + len(p)] == p for p in AGO_AFTER for k in range(len(following)))


def sentence_periods(sentence: list[str]) -> frozenset:
    """The period tags of a source sentence: ``fy`` where it names the full year (``full year``,
    ``fiscal year``, ``fiscal 2021``, ``full-year``, ``annual``, ``fy``), ``qK`` for each quarter it
    names (comparisons included: the sentence is about that quarter too)."""
    tags = set()
    for m in period_mentions(sentence):
        if m.kind == FULL_YEAR:
            tags.add("fy")
        elif m.kind == QUARTER:
            tags.add(f"q{m.value}")
    if not FULL_YEAR_WORDS.isdisjoint(sentence) or ("for", "the", "year") in zip(sentence, sentence[1:], sentence[2:]):
        tags.add("fy")
    return frozenset(tags)


def last_direction(sentence: list[str]) -> int | None:
    """The direction (+1 / -1) of the last direction word of a summary sentence so far, or None
    (``up to`` is a bound, not a direction)."""
    for k in range(len(sentence) - 1, -1, -1):
        word = sentence[k]
        if word in DIRECTION_WORDS and not (word == "up" and k + 1 < len(sentence) and sentence[k + 1] == "to"):
            return DIRECTION_WORDS[word]
    return None


def summary_period(sentence: list[str]) -> str:
    """What a summary sentence so far is about: ``fy``, ``qK`` (its last period mention), or
    ``current`` where it names neither."""
    period = "current"
    for m in period_mentions(sentence):
        if m.kind == FULL_YEAR:
            period = "fy"
        elif m.kind == QUARTER:
            period = f"q{m.value}"
    return period
