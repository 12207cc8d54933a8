"""Name substitution for dialogue training data: the same dialogue with its participants renamed.

A copy of a dialogue and its summary with every participant's name replaced by another name,
consistently in both (Khalifa et al., 2021, "Bag of Tricks for Dialogue Summarization", call it
name substitution). A model trained on such copies cannot predict a participant's name from the
vocabulary alone, since any name can take any role; it has to copy the name from the turn whose
words the sentence draws on. The study of it against the MLE continuation is
``benchmarks/studies/speaker_study.sh`` (``names-S``). Measured there (40 CPU minutes from the shipped
dialogue model, hand labels of 100 validation summaries): it does not lower wrong-person errors, 71
against the control's 68 (``benchmarks/results/samsum/speakers.md``, "Renamed participants").

Choices:
- Only participants are renamed (the ``Name:`` of a turn), never people merely mentioned: a
  mentioned name has no turn to copy it from, so renaming it teaches nothing about roles.
- A dialogue is left out (no copy) when a participant's name is not one word of letters, or is an
  **ambiguous name**: one that the training summaries also write in lower case, as an ordinary word
  (``Will``, ``May``, ``Bill``). Renaming "will" in "I will call" would corrupt the text.
- New names are drawn uniformly from the distinct unambiguous participant names of the corpus, not
  by their frequency, so that rare names, which the model's vocabulary may not hold, come up often:
  those are the names the pointer must copy.
- A name is matched as a whole word, in any case, and written in the case it was found in
  (``tom``, ``Tom``, ``TOM``); ``Tom's`` becomes ``Ann's``.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence

__all__ = ["ambiguous_names", "name_pool", "participants", "rename", "substitute"]

_TURN = re.compile(r"^\s*([^:\n]{1,40}?)\s*:")
_ONE_NAME = re.compile(r"^[^\W\d_]{2,}$")
_WORD = re.compile(r"[^\W\d_]+")


def participants(dialogue: str) -> list[str] | None:
    """The participants' names in order of their first turn (``Name: text`` lines); None when a
    name is not a single word of letters, or the text has fewer than two turns."""
    names: list[str] = []
    turns = 0
    for line in dialogue.splitlines():
        m = _TURN.match(line)
        if not m:
            continue
        name = m.group(1)
        if not _ONE_NAME.match(name):
            return None
        turns += 1
        if name.lower() not in (n.lower() for n in names):  # "Tom:" and "tom:" are one person
            names.append(name)
    return names if turns >= 2 else None


def ambiguous_names(summaries: Iterable[str], at_least: int = 2) -> set[str]:
    """Lower-cased words that the summaries write in lower case at least ``at_least`` times: a
    participant so named could be an ordinary word ("will", "may") in its dialogue."""
    counts = Counter(w for s in summaries for w in _WORD.findall(s) if w.islower())
    return {w for w, n in counts.items() if n >= at_least}


def name_pool(dialogues: Iterable[str], ambiguous: set[str]) -> list[str]:
    """The distinct unambiguous participant names of the dialogues, sorted (so a seed fixes the draw)."""
    pool = set()
    for text in dialogues:
        for name in participants(text) or []:
            if name.lower() not in ambiguous:
                pool.add(name.capitalize())
    return sorted(pool)


def _cased(new: str, found: str) -> str:
    if found.isupper() and len(found) > 1:
        return new.upper()
    if found.islower():
        return new.lower()
    return new.capitalize()


def rename(text: str, mapping: dict[str, str]) -> str:
    """``text`` with each whole-word occurrence of a key of ``mapping`` (matched in any case)
    replaced by its value, written in the case of the occurrence."""
    if not mapping:
        return text
    lower = {k.lower(): v for k, v in mapping.items()}
    pattern = re.compile(r"(?<![^\W_])(" + "|".join(re.escape(k) for k in sorted(lower, key=len, reverse=True))
                         + r")(?![^\W_])", re.IGNORECASE)
    return pattern.sub(lambda m: _cased(lower[m.group(1).lower()], m.group(1)), text)


def substitute(dialogue: str, summary: str, pool: Sequence[str], ambiguous: set[str],
               rng: random.Random) -> tuple[str, str] | None:
    """The dialogue and its summary with every participant renamed to a distinct name of ``pool``
    that is not already a word of either text; None when the dialogue cannot be renamed safely
    (see the module docstring) or the pool is too small."""
    names = participants(dialogue)
    if not names or any(n.lower() in ambiguous for n in names):
        return None
    taken = {w.lower() for w in _WORD.findall(dialogue + " " + summary)}
    choices = [p for p in pool if p.lower() not in taken]
    if len(choices) < len(names):
        return None
    new = rng.sample(choices, len(names))
    mapping = dict(zip(names, new))
    return rename(dialogue, mapping), rename(summary, mapping)
