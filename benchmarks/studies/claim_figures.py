"""The claim figures (agentsum/evaluation/claims.py) of several systems on one corpus, side by side,
with the references themselves as a ceiling, and how often the period detector finds the quarter a
call reports.

Each ``--run NAME=DIR`` is a directory that ``agentsum evaluate``, ``lead3`` or ``extract`` wrote:
its summaries are read from ``predictions.jsonl`` (in the corpus's order, matched by id) and scored
again here with the current claim code, against the articles of ``--data``; its ROUGE-1, numbers
supported and search settings are read from its ``scores.json``. The references row scores the
corpus's own summaries against their articles: they quote press releases, which a call does not
always repeat, so they are a ceiling, not 100%.

The period check reads the quarter from ECTSum's file names (``ectsum/ABM_q1_2021``: the first
quarter) and counts the calls whose detected quarter agrees.

    python benchmarks/studies/claim_figures.py --data ../shared/data/ectsum/valid.jsonl \\
        --run "calls model v1=runs/claims/v1" --run Lead-3=runs/claims/lead3 \\
        --out benchmarks/results/ectsum/claims.md

``benchmarks/studies/claims_study.sh`` runs every system of the table and then this script.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from agentsum.data.corpus import Example
from agentsum.data.sources import load_examples
from agentsum.data.text import split_sentences, tokenize
from agentsum.data.claims import SourceClaims
from agentsum.evaluation.claims import ClaimCounts, claim_figures, document_claims

_QUARTER_ID = re.compile(r"_q([1-4])_(\d{4})$")

COLUMNS = [("ROUGE-1", "rouge1"), ("numbers supported", "numbers_supported"),
           ("period agreement", "period_agreement"), ("vs reference's period", "period_agreement_reference"),
           ("numbers in context", "numbers_in_metric_context"), ("stated so (strict)", "numbers_stated_so"),
           ("elsewhere", "numbers_elsewhere"),
           ("absent", "numbers_absent"), ("direction agreement", "direction_agreement"),
           ("malformed figures", "malformed_figures")]
COUNTS = [("period mentions", "period_mentions"), ("numbers with a metric", "numbers_with_metric"),
          ("estimates", "numbers_estimates"), ("no metric", "numbers_no_metric"),
          ("directions checked", "direction_claims"), ("unverifiable", "direction_unverifiable")]


def read_predictions(directory: Path) -> dict[str, str]:
    """id -> summary of a run's predictions.jsonl."""
    out = {}
    with (directory / "predictions.jsonl").open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            out[row["id"]] = row["prediction"]
    return out


def score(summaries: list[str], corpus: list[Example], sources: list[SourceClaims]) -> dict:
    total = ClaimCounts()
    for summary, row, source in zip(summaries, corpus, sources):
        counts, _ = document_claims(summary, source, row.summary)
        total.add(counts)
    return claim_figures(total)


def period_check(corpus: list[Example], sources: list[SourceClaims]) -> tuple[int, int, int]:
    """(calls whose id names a quarter, detected quarter agrees, no quarter detected)."""
    named = agree = none = 0
    for row, source in zip(corpus, sources):
        match = _QUARTER_ID.search(str(row.id))
        if match is None:
            continue
        named += 1
        if source.period is None:
            none += 1
        else:
            agree += source.period.quarter == int(match[1])
    return named, agree, none


def show(value) -> str:
    return "n/a" if value is None else (f"{value:.1f}" if isinstance(value, float) else str(value))


def table(rows: list[tuple[str, dict]]) -> str:
    head = "| system | " + " | ".join(name for name, _ in COLUMNS) + " |"
    lines = [head, "|---|" + "---:|" * len(COLUMNS)]
    lines += ["| " + name + " | " + " | ".join(show(scores.get(key)) for _, key in COLUMNS) + " |"
              for name, scores in rows]
    lines += ["", "| system | " + " | ".join(name for name, _ in COUNTS) + " |", "|---|" + "---:|" * len(COUNTS)]
    lines += ["| " + name + " | " + " | ".join(show(scores.get(key)) for _, key in COUNTS) + " |"
              for name, scores in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--start", type=int, default=0, help="first row of --data (0-based)")
    parser.add_argument("--end", type=int, help="row after the last")
    parser.add_argument("--run", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--out", type=Path, help="write the markdown table here (and NAME.json beside it)")
    args = parser.parse_args(argv)
    # read as agentsum evaluate reads it, so that ids match its predictions.jsonl
    corpus = load_examples(str(args.data), start=args.start, end=args.end)
    sources = [SourceClaims([tokenize(s) for s in split_sentences(row.article)]) for row in corpus]
    rows = []
    for spec in args.run:
        name, _, directory = spec.partition("=")
        if not directory:
            parser.error(f"--run {spec!r}: expected NAME=DIR")
        predictions = read_predictions(Path(directory))
        missing = [row.id for row in corpus if row.id not in predictions]
        if missing:
            parser.error(f"--run {name}: {Path(directory) / 'predictions.jsonl'} lacks {len(missing)} of the "
                         f"{len(corpus)} ids of {args.data} (first: {missing[0]})")
        scores = score([predictions[row.id] for row in corpus], corpus, sources)
        recorded = json.loads((Path(directory) / "scores.json").read_text(encoding="utf-8"))
        scores.update({k: recorded.get(k) for k in ("rouge1", "numbers_supported")})
        rows.append((name, scores))
    references = score([row.summary for row in corpus], corpus, sources)
    rows.append(("references (ceiling)", references))
    named, agree, none = period_check(corpus, sources)
    rows_read = f"rows {args.start}-{args.start + len(corpus) - 1} of " if args.start or args.end is not None else ""
    text = (f"Claim figures on {rows_read}{args.data.name} ({len(corpus)} documents), in percent; "
            f"python benchmarks/studies/claim_figures.py {' '.join(sys.argv[1:]) if argv is None else ' '.join(argv)}\n\n"
            + table(rows) + "\n\n"
            + f"Period detection: of {named} calls whose file name gives the quarter, the detected quarter agrees "
              f"for {agree}, none detected for {none}.\n")
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
        args.out.with_suffix(".json").write_text(json.dumps(dict(rows), indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
