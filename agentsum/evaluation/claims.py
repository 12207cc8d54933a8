"""Claims, measured: is each figure of a summary stated for the right metric, the right period and the
right direction, and is it written as a figure at all?

"The number occurs in the source" (:mod:`agentsum.evaluation.numbers`) is a weak test for earnings
calls, which hold hundreds of numbers. A claim is right when the source states that number for that
metric, that period and that direction. Five figures read what a summary claims (``agentsum
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
  no metric, or only a generic earnings word (earnings, income, profit, loss), comes before it. Numbers stated as analysts' estimates (``versus refinitiv ibes
  estimate of $880 million``) and numbers with no metric before them are counted apart
  (``numbers_estimates``, ``numbers_no_metric``). A number the source lacks counts as out of
  context. Years, bare one-digit numbers (``5``) and numbers written in words are not claims here.
* **numbers stated so** (``numbers_stated_so``; the strict test of numbers in context): the share of
  the summary's numbers stated for a metric for which one statement of the number in the source
  states it as the summary does (:func:`agentsum.data.claims.statement_fits`): the metric read at the
  number, not anywhere in its sentence (``revenue of $3.7 billion and EBITDA of $830 million``
  states $830 million for EBITDA only), the number the source's own value and not a comparison
  (``from $0.64 to $0.31``), GAAP for GAAP and adjusted for adjusted where both say, a change for a
  change (an EPS improvement of $0.08 is not EPS of $0.08), the same direction, guidance for
  guidance (``we expect adjusted EPS of $2.70`` is not the quarter's EPS), and the summary
  sentence's period (a full-year or year-to-date figure is not the quarter's). It is the lexical
  test made to see what a reader of ``benchmarks/results/ectsum/handread_v2.md`` found wrong: on
  those 39 figures (of which 16 right) it passes the 16 right and 7 of the 23 wrong ones, where
  the lexical test passes 37. Written against those figures, so that agreement is an upper bound.
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
from dataclasses import dataclass, fields

from agentsum.data.claims import Claim, SourceClaims, malformed_figures, sentence_claims
from agentsum.data.figures import Period, document_period, forward_looking, mention_agrees, period_mentions
from agentsum.data.text import split_sentences, tokenize
from agentsum.evaluation.numbers import percent, show_percent

__all__ = ["ClaimCounts", "document_claims", "claim_scores", "claim_figures", "claim_row", "format_claims"]

# ------------------------------------------------------------------------------------ claims

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
    stated_so: int = 0  # numbers stated for a metric that a source statement states so (the strict test)
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
            counts.stated_so += bool(claim.strict)
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
    """One document's claim fields for predictions.jsonl: the detected ``period``, the five figures
    (percent, None where nothing was counted) and what they were read from."""
    return {
        "period": str(period) if period else None,
        "period_agreement": percent(counts.period_agree, counts.period_mentions),
        "numbers_in_metric_context": percent(counts.in_context, counts.numbers),
        "numbers_stated_so": percent(counts.stated_so, counts.numbers),
        "direction_agreement": percent(counts.direction_agree, counts.direction_claims),
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
        "period_agreement": percent(total.period_agree, total.period_mentions),
        "period_agreement_reference": percent(total.period_agree_reference, total.period_mentions_reference),
        "period_mentions": total.period_mentions,
        "period_undetected": total.period_undetected,
        "numbers_in_metric_context": percent(total.in_context, total.numbers),
        "numbers_stated_so": percent(total.stated_so, total.numbers),
        "numbers_elsewhere": percent(total.elsewhere, total.numbers),
        "numbers_absent": percent(total.absent, total.numbers),
        "numbers_with_metric": total.numbers,
        "numbers_estimates": total.estimates,
        "numbers_no_metric": total.no_metric,
        "direction_agreement": percent(total.direction_agree, total.direction_claims),
        "direction_claims": total.direction_claims,
        "direction_unverifiable": total.direction_unverifiable,
        "malformed_figures": percent(total.malformed, total.summaries),
    }


def format_claims(scores: dict) -> str:
    """The claim figures as one line for the terminal."""
    return (f"claims: period agreement {show_percent(scores['period_agreement'])} of {scores['period_mentions']} mentions "
            f"({scores['period_undetected']} documents without a detected period); numbers in context "
            f"{show_percent(scores['numbers_in_metric_context'])} of {scores['numbers_with_metric']} "
            f"({scores['numbers_estimates']} estimates, {scores['numbers_no_metric']} with no metric apart), "
            f"stated so (the strict test) {show_percent(scores['numbers_stated_so'])}; "
            f"direction agreement {show_percent(scores['direction_agreement'])} of {scores['direction_claims']}; "
            f"malformed figures in {show_percent(scores['malformed_figures'])} of summaries")
