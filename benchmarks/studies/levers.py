"""The training levers at equal minutes: each run's selected checkpoint on SAMSum validation.

Every run is ``agentsum train --config samsum-m1`` with one change and the same
``train.max_minutes``, trained two at a time, one thread each, on a 2-core machine
(``benchmarks/studies/levers.sh`` has the commands). For each run this decodes all 814 SAMSum validation
dialogues with its best checkpoint (lowest validation NLL) twice: with trigram blocking alone (beam
5, 15-60 tokens: the SAMSum presets' search before they gained the pair) and with ``repeat_window 2
+ repetition_penalty 1.5``, every setting pinned here rather than taken from the checkpoint (whose
preset's settings changed while the levers were measured) and recorded beside each row's scores, and
reports ROUGE-1/2/L (rouge-score, stemmed, rougeLsum), the share of summaries repeating a content
word within three tokens ("doubled") and the share naming one word twice around "and" ("X and
X"); with ``--dialogsum``, the same for DialogSum's validation dialogues beside Lead-3. Steps, the
best validation NLL and training tokens/s come from the run's metrics.jsonl.

    python benchmarks/studies/levers.py base=runs/lever-base feeding=runs/lever-if [--dialogsum] [--docs 814]

Rows go to benchmarks/results/samsum/levers.{json,md}; a label run again replaces its row.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from decoding_controls import rates  # noqa: E402
from search_settings import describe, recorded, settings_of  # noqa: E402

from agentsum.config import TrainConfig  # noqa: E402
from agentsum.data.sources import load_examples  # noqa: E402
from agentsum.decoding.search import SearchConfig  # noqa: E402
from agentsum.evaluation.rouge import rouge_for  # noqa: E402
from agentsum.summarizer import Summarizer  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
#: Every search setting, explicit, so that every run is decoded alike whatever its checkpoint says (runs
#: trained after the presets gained repeat_window / repetition_penalty are scored like the runs before):
#: beam 5, 15-60 tokens, trigram blocking alone, then with the pair
SEARCHES = {name: SearchConfig(beam_size=5, min_length=15, max_length=60, block_trigrams=True, no_repeat_ngram_size=3,
                               length_penalty=1.0, unk_replace=True, numbers_from_source=False, **changes)
            for name, changes in {"trigram": {"repeat_window": 0, "repetition_penalty": 1.0},
                                  "rw2+pen1.5": {"repeat_window": 2, "repetition_penalty": 1.5}}.items()}


def run_facts(run_dir: Path) -> dict:
    """Steps, training minutes (first to last logged step), best validation NLL and median tokens/s."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    train = [r for r in rows if "tokens_per_s" in r]
    valid = [r["valid_nll"] for r in rows if "valid_nll" in r]
    return {"valid_nll_at": {str(r["step"]): round(r["valid_nll"], 4) for r in rows if "valid_nll" in r},
            "steps": max(r["step"] for r in rows),
            "minutes": round((train[-1]["time"] - train[0]["time"] + train[0]["seconds"]) / 60, 1),
            "best_valid_nll": min(valid) if valid else None,
            "tokens_per_s": round(statistics.median(r["tokens_per_s"] for r in train))}


def score(summarizer: Summarizer, path: Path, docs: int | None, search: SearchConfig) -> dict:
    examples = load_examples(str(path), end=docs)
    prepared = summarizer.prepare_examples(examples)
    started = time.perf_counter()
    tokens = summarizer.summarize_documents(prepared, search)
    predictions = [summarizer.language.summary_text(t) for t in tokens]
    scores = rouge_for(summarizer.language, predictions, [d.reference for d in prepared])
    doubled, xx = rates(predictions)
    return {"rouge1": round(scores["rouge1"], 2), "rouge2": round(scores["rouge2"], 2),
            "rougeL": round(scores["rougeLsum"], 2), "doubled": round(doubled, 1), "x_and_x": round(xx, 1),
            "docs": len(prepared), "seconds": round(time.perf_counter() - started), **settings_of(search)}


def lead3(summarizer: Summarizer, path: Path, docs: int | None) -> dict:
    """Lead-3 (the first three utterances) against the same references."""
    examples = load_examples(str(path), end=docs)
    prepared = summarizer.prepare_examples(examples)
    language = summarizer.language
    scores = rouge_for(language, [language.lead(ex.article) for ex in examples], [d.reference for d in prepared])
    return {"rouge1": round(scores["rouge1"], 2), "rouge2": round(scores["rouge2"], 2),
            "rougeL": round(scores["rougeLsum"], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="LABEL=RUN_DIR")
    parser.add_argument("--docs", type=int, default=None, help="first N validation dialogues (default: all)")
    parser.add_argument("--checkpoint", default="best", help="checkpoint name in RUN_DIR/checkpoints (default best)")
    parser.add_argument("--dialogsum", action="store_true", help="also score DialogSum validation")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "samsum"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    saved = out / "levers.json"
    table = json.loads(saved.read_text()) if saved.exists() else {}
    for spec in args.runs:
        label, _, run = spec.partition("=")
        run_dir = Path(run)
        summarizer = Summarizer(str(run_dir / "checkpoints" / f"{args.checkpoint}.pt"), device="cpu")
        row = {"run": str(run_dir), "checkpoint": args.checkpoint, **run_facts(run_dir)}
        max_steps = summarizer.config.train.max_steps
        if max_steps < TrainConfig.max_steps:  # a run budgeted in steps (its schedule reads them)
            row["max_steps"] = max_steps
        for name, search in SEARCHES.items():
            row[f"samsum {name}"] = score(summarizer, DATA / "samsum" / "valid.jsonl", args.docs, search)
            if args.dialogsum:
                row[f"dialogsum {name}"] = score(summarizer, DATA / "dialogsum" / "valid.jsonl", args.docs, search)
        for corpus in ("samsum", "dialogsum") if args.dialogsum else ("samsum",):
            table.setdefault("_lead3", {})[corpus] = lead3(summarizer, DATA / corpus / "valid.jsonl", args.docs)
        table[label] = row
        print(label, json.dumps(row), flush=True)
        out.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps(table, indent=1) + "\n")
    write_markdown(table, out / "levers.md")


def write_markdown(table: dict, path: Path) -> None:
    lines = ["# Training levers at equal minutes (SAMSum validation, all 814 dialogues)", "",
             "`python benchmarks/studies/levers.py`; runs from `benchmarks/studies/levers.sh`. R-1 / R-2 / R-L "
             "from rouge-score (stemmed, rougeLsum); doubled: a content word repeated within three tokens; X and X: "
             "one word twice around \"and\". Best checkpoint by validation NLL.", "",
             "| run | minutes | steps | tokens/s | best valid NLL | trigram blocking: R-1 / R-2 / R-L | doubled | X and X "
             "| rw2 + pen1.5: R-1 / R-2 / R-L | doubled | X and X |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    runs = {k: r for k, r in table.items() if not k.startswith("_")}
    for label, r in runs.items():
        cells = [label, str(r["minutes"]), f"{r['steps']:,}", f"{r['tokens_per_s']:,}",
                 f"{r['best_valid_nll']:.3f}" if r["best_valid_nll"] is not None else "-"]
        for name in SEARCHES:
            s = r[f"samsum {name}"]
            cells += [f"{s['rouge1']:.2f} / {s['rouge2']:.2f} / {s['rougeL']:.2f}", f"{s['doubled']:.1f}%",
                      f"{s['x_and_x']:.1f}%"]
        lines.append("| " + " | ".join(cells) + " |")
    lead = table.get("_lead3", {})
    if "samsum" in lead:
        a = lead["samsum"]
        lines.append(f"| Lead-3 | | | | | {a['rouge1']:.2f} / {a['rouge2']:.2f} / {a['rougeL']:.2f} | | | | | |")
    lines += ["", *search_lines(runs)]
    fixed = [f"{label} ({r['max_steps']:,})" for label, r in runs.items() if r.get("max_steps")]
    if fixed:
        lines += ["", f"Trained to a number of steps rather than minutes (a learning-rate schedule does not change "
                  f"a step's time, so equal steps are equal minutes on a quiet machine): {', '.join(fixed)}."]
    other = [label for label, r in runs.items() if r.get("checkpoint", "best") != "best"]
    if other:
        lines += ["", f"{', '.join(other)}: another checkpoint of the same run (named after the label); minutes, "
                  "steps, tokens/s and NLL are the run's."]
    steps = sorted({int(k) for r in runs.values() for k in r.get("valid_nll_at", {}) if int(k) % 500 == 0})
    if steps:
        lines += ["", "Validation NLL at equal steps (per step, before minutes count):", "",
                  "| run | " + " | ".join(f"step {k:,}" for k in steps) + " |", "|---" * (len(steps) + 1) + "|"]
        for label, r in runs.items():
            at = r.get("valid_nll_at", {})
            lines.append(f"| {label} | " + " | ".join(f"{at[str(k)]:.3f}" if str(k) in at else "" for k in steps) + " |")
    dialog = {k: r for k, r in runs.items() if "dialogsum trigram" in r}
    if dialog:
        lines += ["", "DialogSum validation (491 dialogues):", "",
                  "| run | trigram blocking: R-1 / R-2 / R-L | rw2 + pen1.5: R-1 / R-2 / R-L |", "|---|---|---|"]
        for label, r in dialog.items():
            a, b = r["dialogsum trigram"], r["dialogsum rw2+pen1.5"]
            lines.append(f"| {label} | {a['rouge1']:.2f} / {a['rouge2']:.2f} / {a['rougeL']:.2f} | "
                         f"{b['rouge1']:.2f} / {b['rouge2']:.2f} / {b['rougeL']:.2f} |")
        if "dialogsum" in lead:
            a = lead["dialogsum"]
            lines.append(f"| Lead-3 | {a['rouge1']:.2f} / {a['rouge2']:.2f} / {a['rougeL']:.2f} | |")
    path.write_text("\n".join(lines) + "\n")


def search_lines(runs: dict) -> list[str]:
    """What each column was decoded with, from the rows' records; a warning where rows of one column
    were decoded differently. Rows scored before the settings were written beside the scores are named
    apart."""
    lines = []
    for name in SEARCHES:
        settings = {f"{label} ({corpus})": recorded(r[f"{corpus} {name}"]) for label, r in runs.items()
                    for corpus in ("samsum", "dialogsum") if f"{corpus} {name}" in r}
        described = {row: describe(s) for row, s in settings.items() if s}
        if len(set(described.values())) == 1:
            lines.append(f"{name}: {next(iter(described.values()))}.")
        elif described:
            lines.append(f"**Warning: {name} rows decoded differently**: "
                         + "; ".join(f"{row}: {text}" for row, text in described.items()) + ".")
        unrecorded = [row for row, s in settings.items() if not s]
        if unrecorded:
            rows = "any row" if len(unrecorded) == len(settings) else ", ".join(unrecorded)
            lines.append(f"{name}: settings not recorded for {rows} (scored before they were written beside the "
                         "scores).")
    return lines


if __name__ == "__main__":
    main()
