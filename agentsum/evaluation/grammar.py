"""The grammar figure: the share of summary sentences that link grammar (Debian's ``link-grammar``,
its ``link-parser`` program and English dictionary) cannot parse whole.

Each summary sentence, as a person reads it (cased and detokenized,
:meth:`agentsum.data.language.TextProcessor.readable`), is parsed by ``link-parser``; a sentence is
**unparsed** when its best linkage leaves a word unlinked (null count > 0: "Lisa have to clean the
house.", "They will met at 5."). A summary is **flagged** when one of its sentences is unparsed.

Agreement with the hand labels (100 SAMSum validation dialogues, ``benchmarks/results/samsum/labels``,
"ungrammatical"): of the shipped model's summaries it flags, nearly all are ungrammatical, but it
flags about a third of the ungrammatical ones: it sees broken syntax, not broken sense ("Amanda is
lunch at 1." parses; so does "Jerry will see lunch at the cafe"). The measured figures are in
docs/analysis.md ("Grammar"). Choice: the null count, not the linkage cost, because a threshold on
the cost would be tuned on the same 100 labels it is checked against.

link-grammar has no Python bindings for every interpreter (Debian's are for its own python3), so
the program is run, once per batch of summaries, one sentence per line; it is optional and
``agentsum evaluate --grammar`` says how to install it where it is missing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from agentsum.fields import ConfigError

__all__ = ["GrammarCounts", "GrammarUnavailable", "document_grammar", "grammar_figures", "link_parser",
           "null_counts"]

INSTALL = "apt-get install link-grammar link-grammar-dictionaries-en"
#: seconds link-parser may spend on one sentence (then it reports its best partial linkage)
SENTENCE_TIMEOUT = 10
_COST = re.compile(r"cost vector = \(UNUSED=(\d+)")
_WORD = re.compile(r"[^\W_]")


class GrammarUnavailable(ConfigError):
    """link-parser is not installed."""


def link_parser() -> str:
    """The path of ``link-parser``; :class:`GrammarUnavailable` where it is not installed."""
    path = shutil.which("link-parser")
    if path is None:
        raise GrammarUnavailable(f"the grammar figure needs link-grammar's link-parser, which is not installed "
                                 f"(Debian/Ubuntu: {INSTALL})")
    return path


def _line(sentence: str) -> str:
    # one line each; a leading "!" would be read as a command of link-parser
    return " ".join(sentence.split()).lstrip("!")


def null_counts(sentences: Sequence[str]) -> list[int]:
    """Each sentence's null count (words its best linkage leaves unlinked), one link-parser run
    for all of them. A sentence without a letter or digit ("?", ".") is not parsed and counts 0."""
    lines = [_line(s) for s in sentences]
    parsed = [i for i, line in enumerate(lines) if _WORD.search(line)]
    counts = [0] * len(lines)
    if not parsed:
        return counts
    text = "".join(lines[i] + "\n" for i in parsed)
    run = subprocess.run([link_parser(), "en", "-verbosity=1", "-graphics=0", "-echo=1",
                          f"-timeout={SENTENCE_TIMEOUT}"], input=text, capture_output=True, text=True,
                         check=True)
    # the output echoes each sentence, then its linkages: the first cost vector after the echo is its
    # best linkage's. Sentences are matched in order, so an output line equal to a sentence that is
    # not yet due cannot shift the rest.
    k, found = 0, [None] * len(parsed)
    for out in run.stdout.splitlines():
        if k < len(parsed) and out.strip() == lines[parsed[k]]:
            k += 1
            continue
        m = _COST.search(out)
        if m and k > 0 and found[k - 1] is None:
            found[k - 1] = int(m.group(1))
    missing = [lines[parsed[j]] for j, n in enumerate(found) if n is None]
    if missing:
        raise RuntimeError(f"link-parser gave no linkage for {len(missing)} sentence(s), first {missing[0]!r}")
    for j, i in enumerate(parsed):
        counts[i] = found[j]
    return counts


@dataclass
class GrammarCounts:
    """Sentences and summaries read, and those link grammar could not parse whole."""

    summaries: int = 0
    flagged: int = 0
    sentences: int = 0
    unparsed: int = 0

    def add(self, other: GrammarCounts) -> None:
        self.summaries += other.summaries
        self.flagged += other.flagged
        self.sentences += other.sentences
        self.unparsed += other.unparsed


def document_grammar(summaries: Sequence[Sequence[str]]) -> list[tuple[GrammarCounts, dict]]:
    """For each summary (its sentences as a person reads them): its counts and its row for
    predictions.jsonl (``unparsed_sentences``), all summaries in one link-parser run."""
    flat = [s for sentences in summaries for s in sentences]
    counts = iter(null_counts(flat))
    out = []
    for sentences in summaries:
        unparsed = [s for s in sentences if next(counts) > 0]
        out.append((GrammarCounts(1, int(bool(unparsed)), len(sentences), len(unparsed)),
                    {"unparsed_sentences": unparsed}))
    return out


def grammar_figures(counts: GrammarCounts) -> dict:
    """``grammar_unparsed`` (of the sentences, %), ``grammar_flagged`` (of the summaries, %) and the counts."""
    return {"grammar_unparsed": 100.0 * counts.unparsed / max(counts.sentences, 1),
            "grammar_flagged": 100.0 * counts.flagged / max(counts.summaries, 1),
            "grammar_sentences": counts.sentences}
