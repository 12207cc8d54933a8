"""Who did what: whether a dialogue summary gives each statement to the person whose words hold it.

The reading (which sentences are checked, when one is misattributed, and why the rule is
one-sided) is :mod:`agentsum.data.attribution`; this module counts it over summaries.

This is a lexical test, and a weak one: it sees whose words a sentence reuses, not what the
sentence says about them. Its agreement with hand labels of "wrong person" (precision and
recall, ``benchmarks/results/samsum/labels/``) says how far it can be trusted.

``agentsum evaluate`` reports, for dialogue sources (``Speaker: text`` lines): ``attribution``,
the share of checked sentences attributed, ``attribution_checked``, ``attribution_misattributed``,
``wrong_person_suspected`` (the share of summaries with a misattributed sentence), and per summary
``wrong_person_suspected`` and ``misattributed_sentences`` in predictions.jsonl.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from agentsum.data.attribution import (OTHER_WORDS, REPORTING, Dialogue, check_sentence, content_stems,
                                       sentence_subject, summary_sentences)

__all__ = ["OTHER_WORDS", "REPORTING", "AttributionCounts", "Dialogue", "attribution_figures", "check_sentence",
           "content_stems", "document_attribution", "sentence_subject", "summary_sentences"]


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
