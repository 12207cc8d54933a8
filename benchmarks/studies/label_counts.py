"""Hand labels of dialogue summaries: counts per system, and how far the attribution figure agrees.

The labels (``benchmarks/results/samsum/labels/labels.jsonl``: one line per dialogue and system, with
``wrong_person``, ``unsupported``, ``ungrammatical``, ``signable`` and a note) judge each summary
against its dialogue only, by the criteria of that folder's README. This script prints, in markdown,
each system's counts and the attribution figure's agreement with ``wrong_person`` (precision and
recall of ``wrong_person_suspected``, summary by summary; agentsum.evaluation.attribution) and, with
``--grammar``, the grammar figure's agreement with ``ungrammatical`` (a summary flagged when link
grammar cannot parse one of its sentences whole; agentsum.evaluation.grammar).

    python benchmarks/studies/label_counts.py benchmarks/results/samsum/labels/labels.jsonl \\
        --dialogues runs/labels/valid100.jsonl [--grammar]

Several label files may be given (the shipped model's and references' labels, and a later round's
``levers.jsonl``). ``--changed-against v1`` adds a table of the summaries each system writes
differently from v1, with v1's labels of the same dialogues beside its own ("v1 -> system").

    python benchmarks/studies/label_counts.py benchmarks/results/samsum/labels/{labels,levers}.jsonl \
        --dialogues runs/labels/valid100.jsonl --changed-against v1 --plot benchmarks/results/samsum/labels/levers.png

``--plot`` draws each system's four counts, one panel per label (systems labelled on every dialogue).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agentsum.evaluation.attribution import document_attribution  # noqa: E402
from agentsum.evaluation.grammar import document_grammar  # noqa: E402

LABELS = ("wrong_person", "unsupported", "ungrammatical", "signable")


def read_jsonl(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def sentences(summary: str) -> list[str]:
    """A labelled summary's sentences (the text as it was labelled)."""
    return [s for s in re.split(r"(?<=[.!?])\s+", summary.strip()) if s]


def grammar_flags(rows: list[dict]) -> list[bool]:
    """For each labelled summary, whether link grammar leaves a word of one of its sentences unlinked."""
    return [counts.flagged > 0 for counts, _ in document_grammar([sentences(r["summary"]) for r in rows])]


def agreement(rows: list[dict], dialogues: dict[str, str] | None = None, label: str = "wrong_person",
              flags: list[bool] | None = None) -> dict:
    """Precision and recall of a summary-level flag against ``label``: the attribution figure's
    ``wrong_person_suspected`` (given the dialogues), or ``flags``."""
    if flags is None:
        flags = [bool(document_attribution(r["summary"], dialogues[r["id"]])[1]["wrong_person_suspected"])
                 for r in rows]
    tp = fp = fn = tn = 0
    for row, suspected in zip(rows, flags):
        labelled = row[label]
        tp += suspected and labelled
        fp += suspected and not labelled
        fn += labelled and not suspected
        tn += not suspected and not labelled
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": 100 * tp / (tp + fp) if tp + fp else None, "recall": 100 * tp / (tp + fn) if tp + fn else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("labels", nargs="+")
    parser.add_argument("--dialogues", required=True, help="the JSONL the summaries were made from (id, article)")
    parser.add_argument("--rows", type=int, nargs=2, metavar=("FIRST", "END"),
                        help="only the dialogues of rows FIRST to END-1 (the label's row field)")
    parser.add_argument("--changed-against", metavar="SYSTEM",
                        help="also: per system, the dialogues where its summary differs from SYSTEM's, both labelled")
    parser.add_argument("--plot", metavar="PNG", help="also draw the counts per system and label to this file")
    parser.add_argument("--grammar", action="store_true",
                        help="also the grammar figure's agreement with 'ungrammatical' (needs link-grammar)")
    args = parser.parse_args()
    rows = [r for path in args.labels for r in read_jsonl(path)]
    if args.rows:
        rows = [r for r in rows if args.rows[0] <= r["row"] < args.rows[1]]
    dialogues = {r["id"]: r["article"] for r in read_jsonl(args.dialogues)}
    by_system: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_system[row["system"]].append(row)
    head = "| system | summaries | " + " | ".join(LABELS) + " | attribution: precision | recall (wrong person) |"
    if args.grammar:
        head += " grammar: precision | recall (ungrammatical) |"
    print(head)
    print("|---|---|" + "---|" * (len(LABELS) + 2 + 2 * args.grammar))
    fmt = lambda v: "n/a" if v is None else f"{v:.0f}%"  # noqa: E731
    cells = lambda a: f" {fmt(a['precision'])} ({a['tp']}/{a['tp'] + a['fp']}) | {fmt(a['recall'])} ({a['tp']}/{a['tp'] + a['fn']}) |"  # noqa: E731
    for system, group in by_system.items():
        line = f"| {system} | {len(group)} | " + " | ".join(str(sum(r[k] for r in group)) for k in LABELS) + " |"
        line += cells(agreement(group, dialogues))
        if args.grammar:
            line += cells(agreement(group, label="ungrammatical", flags=grammar_flags(group)))
        print(line)
    if args.plot:
        plot_counts(by_system, args.plot)
    if args.changed_against:
        print()
        print(changed_table(by_system, args.changed_against))
    return 0


def plot_counts(by_system: dict[str, list[dict]], path: str) -> None:
    """One panel per label: each system's share of summaries with it. Only systems labelled on every
    dialogue are drawn: a relabelling check of some of them (v1-recheck-3: the 22 a lever changed)
    would read as a share of another set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    full = max(len(rows) for rows in by_system.values())
    systems = [s for s, rows in by_system.items() if len(rows) == full]
    fig, axes = plt.subplots(1, len(LABELS), figsize=(3.2 * len(LABELS), 0.32 * len(systems) + 1.2), sharey=True)
    for ax, label in zip(axes, LABELS):
        shares = [100 * sum(r[label] for r in by_system[s]) / len(by_system[s]) for s in systems]
        ax.barh(range(len(systems)), shares, color=["#888" if s in ("v1", "reference") else "#4c72b0" for s in systems])
        for y, v in enumerate(shares):
            ax.text(v + 1, y, f"{v:.0f}", va="center", fontsize=8)
        ax.set_title(label.replace("_", " "))
        ax.set_xlim(0, 100)
        ax.set_xlabel("% of summaries")
    axes[0].set_yticks(range(len(systems)), systems)
    axes[0].invert_yaxis()
    fig.suptitle("labels of 100 SAMSum validation summaries (rows 0-99)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def changed_table(by_system: dict[str, list[dict]], baseline: str) -> str:
    """Markdown: per system, its summaries that differ from ``baseline``'s of the same dialogue, and
    each label's count for the baseline's summaries of those dialogues -> the system's."""
    if baseline not in by_system:
        raise SystemExit(f"--changed-against {baseline}: no labels of that system")
    base = {r["id"]: r for r in by_system[baseline]}
    lines = [f"| system | dialogues changed (of those {baseline} has) | " + " | ".join(f"{k}: {baseline} -> system"
                                                                            for k in LABELS) + " |",
             "|---|---|" + "---|" * len(LABELS)]
    for system, group in by_system.items():
        if system == baseline:
            continue
        changed = [(base[r["id"]], r) for r in group if r["id"] in base and r["summary"] != base[r["id"]]["summary"]]
        shared = sum(r["id"] in base for r in group)
        lines.append(f"| {system} | {len(changed)} of {shared} | " + " | ".join(
            f"{sum(b[k] for b, _ in changed)} -> {sum(r[k] for _, r in changed)}" for k in LABELS) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
