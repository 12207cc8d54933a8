"""Who did what: whether a dialogue summary gives each statement to the person whose words hold it.

A summary sentence whose subject is a participant ("Mike will call Dale at 5") is **checked**: its
content words (not function words, not names, not reporting verbs; Porter-stemmed as ROUGE stems)
are looked up in each participant's utterances.

The sentence is **misattributed** when its subject wrote none of those words while another
participant wrote at least two of them, or when it names its subject again in another role ("Mike
wants to call Mike"); else it is **attributed**. A sentence whose subject is "X and Y" counts
either person's words. Sentences with no content word found in the dialogue, or whose subject is
not a participant, are not checked (they are counted apart).

The rule is deliberately one-sided. In a two-person chat the answer repeats the question's words
("Don't buy milk" / "OK, no milk"), so "more of the words are the other person's" flags correct
sentences as often as wrong ones: that first reading found 10 of 25 reference summaries suspect.
"None of the words are the subject's own" keeps the flags to sentences whose person very likely
did not say or do it, and misses wrong persons whose words the subject also used.

This is a lexical test, and a weak one: it sees whose words a sentence reuses, not what the
sentence says about them. Its agreement with hand labels of "wrong person" (precision and
recall, ``benchmarks/results/samsum/labels/``) says how far it can be trusted.

``agentsum evaluate`` reports, for dialogue sources (``Speaker: text`` lines): ``attribution``,
the share of checked sentences attributed, ``attribution_checked``, ``attribution_misattributed``,
``wrong_person_suspected`` (the share of summaries with a misattributed sentence), and per summary
``wrong_person_suspected`` and ``misattributed_sentences`` in predictions.jsonl.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from functools import lru_cache

from agentsum.data.readable import FUNCTION_WORDS
from agentsum.data.text import tokenize

_SPEAKER = re.compile(r"^\s*([^:\n]{1,40}?)\s*:\s*(.*)$")
_WORD = re.compile(r"^[a-z][a-z'-]*$")
#: Words a dialogue summary writes about anyone (reporting verbs, plans): no evidence of whose side.
REPORTING = frozenset("""
will wants want going go gets get got tells told says said asks asked thinks think knows know
let lets like likes doesn't don't didn't isn't aren't can't won't wasn't 's n't 're 've 'll 'd 'm
""".split())


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _porter().stem(word)


@lru_cache(maxsize=1)
def _porter():
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer()


@dataclass
class AttributionCounts:
    """Counts behind the figure, for one summary or summed over a corpus."""

    sentences: int = 0
    checked: int = 0
    attributed: int = 0
    misattributed: int = 0
    summaries: int = 0
    suspected: int = 0  # summaries with a misattributed sentence

    def add(self, other: AttributionCounts) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


#: Fewest content words another participant must have written for a sentence whose subject wrote
#: none of them to be misattributed.
OTHER_WORDS = 2


@dataclass
class Dialogue:
    """A dialogue's participants (lower-cased first names as the tokenizer writes them) and each
    one's side: the content stems of their utterances."""

    speakers: list[str] = field(default_factory=list)
    sides: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> Dialogue | None:
        """None for a text that is not a dialogue (fewer than two lines of ``Speaker: text``)."""
        utterances = []
        for line in text.splitlines():
            m = _SPEAKER.match(line)
            if m and m.group(2).strip():
                name = tokenize(m.group(1))
                if name:
                    utterances.append((name[0], tokenize(m.group(2))))
        if len(utterances) < 2:
            return None
        speakers = list(dict.fromkeys(s for s, _ in utterances))
        sides = {s: set() for s in speakers}
        for speaker, tokens in utterances:
            sides[speaker] |= content_stems(tokens, speakers)
        return cls(speakers, sides)


def content_stems(tokens, names) -> set[str]:
    return {_stem(t) for t in tokens if _WORD.match(t) and t not in FUNCTION_WORDS and t not in REPORTING
            and t not in names}


def sentence_subject(tokens: list[str], speakers: list[str]) -> list[str]:
    """The participants a sentence opens with ("mike", "mike and dale"), else []."""
    subject = []
    i = 0
    while i < len(tokens) and tokens[i] in speakers:
        subject.append(tokens[i])
        if i + 1 < len(tokens) and tokens[i + 1] in ("and", ","):
            i += 2
            continue
        break
    return subject


def check_sentence(tokens: list[str], dialogue: Dialogue) -> bool | None:
    """True: attributed, False: misattributed, None: not checked (see the module docstring)."""
    subject = sentence_subject(tokens, dialogue.speakers)
    if not subject:
        return None
    rest = tokens[len(subject) * 2 - 1:]
    if len(subject) == 1 and subject[0] in rest:
        return False  # "Mike wants to call Mike"
    stems = content_stems(rest, dialogue.speakers)
    support = {s: len(stems & side) for s, side in dialogue.sides.items()}
    best = max(support.values(), default=0)
    if best == 0:
        return None
    return not (max(support[s] for s in subject) == 0 and best >= OTHER_WORDS)


def summary_sentences(summary: str) -> list[list[str]]:
    """A summary's sentences as tokens: its lines, each cut after ``.``, ``!`` and ``?`` tokens (a
    summary as the model writes it, lower-cased, or as a person reads it)."""
    sentences = []
    for line in summary.splitlines():
        current: list[str] = []
        for token in tokenize(line):
            current.append(token)
            if token in (".", "!", "?"):
                sentences.append(current)
                current = []
        if current:
            sentences.append(current)
    return sentences


def document_attribution(summary: str, source: str) -> tuple[AttributionCounts, dict]:
    """The counts and predictions.jsonl row of one summary (sentences one a line or split) against
    its dialogue; nothing is checked where the source is not a dialogue."""
    counts = AttributionCounts(summaries=1)
    dialogue = Dialogue.parse(source)
    if dialogue is None:
        return counts, {"wrong_person_suspected": None}
    flagged = []
    for tokens in summary_sentences(summary):
        counts.sentences += 1
        verdict = check_sentence(tokens, dialogue)
        if verdict is None:
            continue
        counts.checked += 1
        if verdict:
            counts.attributed += 1
        else:
            counts.misattributed += 1
            flagged.append(" ".join(tokens))
    counts.suspected = int(bool(flagged))
    return counts, {"wrong_person_suspected": bool(flagged), "misattributed_sentences": flagged}


def attribution_figures(counts: AttributionCounts) -> dict:
    """The corpus figures of summed counts (``attribution`` None where nothing was checked)."""
    return {"attribution": round(100 * counts.attributed / counts.checked, 2) if counts.checked else None,
            "attribution_checked": counts.checked, "attribution_misattributed": counts.misattributed,
            "wrong_person_suspected": round(100 * counts.suspected / counts.summaries, 2) if counts.summaries else None}
