"""Who did what: the reading behind the attribution figure and reward -- whose words a dialogue
summary's sentence reuses.

A summary sentence whose subject is a participant ("Mike will call Dale at 5") is **checked**: its
content words (not function words, not names, not reporting verbs; Porter-stemmed as ROUGE stems)
are looked up in each participant's utterances.

The sentence is **misattributed** when its subject wrote none of those words while another
participant wrote at least two of them, or when it names its subject again in another role ("Mike
wants to call Mike"); else it is **attributed**. A sentence whose subject is "X and Y" counts
either person's words. Sentences with no content word found in the dialogue, or whose subject is
not a participant, are not checked.

The rule is deliberately one-sided. In a two-person chat the answer repeats the question's words
("Don't buy milk" / "OK, no milk"), so "more of the words are the other person's" flags correct
sentences as often as wrong ones: that first reading found 10 of 25 reference summaries suspect.
"None of the words are the subject's own" keeps the flags to sentences whose person very likely
did not say or do it, and misses wrong persons whose words the subject also used.

A dialogue is read from its text (``Speaker: text`` lines, :meth:`Dialogue.parse`) or, as a
prepared corpus keeps it, from its tokens (``name : text`` turns without line breaks,
:meth:`Dialogue.from_tokens`, the turns of :mod:`agentsum.data.speakers`).

The figure of ``agentsum evaluate`` is :mod:`agentsum.evaluation.attribution`; the reward of
self-critical RL is :mod:`agentsum.training.attribution_reward`.
"""


from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from agentsum.data.readable import FUNCTION_WORDS
from agentsum.data.speakers import is_turn_start
from agentsum.data.text import tokenize

__all__ = ["OTHER_WORDS", "REPORTING", "Dialogue", "check_sentence", "content_stems", "sentence_subject",
           "sentence_support", "summary_sentences", "turns"]

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
        return cls._of(utterances)

    @classmethod
    def from_tokens(cls, tokens: Sequence[str]) -> Dialogue | None:
        """A dialogue from its tokens as a prepared corpus keeps them (``amanda : lunch at 1 ?
        jerry : sure``; a turn starts at a name followed by ``:``); None for fewer than two turns."""
        return cls._of(list(turns(tokens)))

    @classmethod
    def _of(cls, utterances: list[tuple[str, list[str]]]) -> Dialogue | None:
        if len(utterances) < 2:
            return None
        speakers = list(dict.fromkeys(s for s, _ in utterances))
        sides = {s: set() for s in speakers}
        for speaker, tokens in utterances:
            sides[speaker] |= content_stems(tokens, speakers)
        return cls(speakers, sides)


def turns(tokens: Sequence[str]):
    """(speaker, utterance tokens) of each ``name : text`` turn of a token sequence, in order;
    tokens before the first turn are no one's, and a turn with no words is dropped."""
    speaker, current = None, []
    i = 0
    while i < len(tokens):
        if is_turn_start(tokens, i):
            if speaker is not None and current:
                yield speaker, current
            speaker, current = tokens[i], []
            i += 2  # the name and its colon
            continue
        if speaker is not None:
            current.append(tokens[i])
        i += 1
    if speaker is not None and current:
        yield speaker, current


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
    support = sentence_support(rest, dialogue)
    best = max(support.values(), default=0)
    if best == 0:
        return None
    return not (max(support[s] for s in subject) == 0 and best >= OTHER_WORDS)


def sentence_support(tokens: list[str], dialogue: Dialogue) -> dict[str, int]:
    """Participant -> how many of ``tokens``' content words (stems) their side of the dialogue holds."""
    stems = content_stems(tokens, dialogue.speakers)
    return {s: len(stems & side) for s, side in dialogue.sides.items()}


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
