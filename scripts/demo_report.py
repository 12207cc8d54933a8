"""The closing text of ``scripts/demo.sh``, computed from what the demo itself measured.

``python scripts/demo_report.py RUN_DIR --rows 400-500`` reads

* ``RUN_DIR/eval/scores.json``, ``RUN_DIR/eval-shipped/scores.json``, ``RUN_DIR/lead3/scores.json``
  (``agentsum evaluate`` / ``agentsum lead3 --out``): ROUGE of the trained model, the shipped model
  and Lead-3 on the same validation rows;
* ``RUN_DIR/metrics.jsonl`` (written by ``agentsum train``): the steps the run made, the minutes
  it took, and the step of its lowest validation NLL (``best.pt``). The file is
  appended to by every run in the directory; only the last run (from the last time the step went
  down) counts;
* ``benchmarks/results/samsum/curve.jsonl``: the same architecture's ROUGE at its checkpoints in the
  study behind the shipped model, for a comparison by steps (minutes depend on the machine).

and prints which model is above or below which, and by how much, on each ROUGE measure.
"""

from __future__ import annotations

import argparse
import json
import textwrap
from dataclasses import dataclass
from pathlib import Path

#: The study's curve: ROUGE of ``samsum-m1`` checkpoints (the demo's architecture) on validation rows 0-199.
CURVE = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "samsum" / "curve.jsonl"
STUDY_RUN = "samsum-m1"
STUDY_ROWS = "valid.jsonl[:200]"
MEASURES = ("ROUGE-1", "ROUGE-2", "ROUGE-L")
#: Columns of the printed text.
WIDTH = 100


@dataclass(frozen=True)
class Rouge:
    """ROUGE-1 / 2 / L F1 in percent (L is rougeLsum, as ``agentsum evaluate`` prints it)."""

    r1: float
    r2: float
    rl: float

    @classmethod
    def from_scores(cls, scores: dict) -> "Rouge":
        return cls(scores["rouge1"], scores["rouge2"], scores["rougeLsum"])

    @property
    def values(self) -> tuple[float, float, float]:
        return (self.r1, self.r2, self.rl)

    def __str__(self) -> str:
        return " / ".join(f"{v:.2f}" for v in self.values)


def read_rouge(path: str | Path) -> Rouge:
    return Rouge.from_scores(json.loads(Path(path).read_text(encoding="utf-8")))


@dataclass(frozen=True)
class Training:
    """What one run did: its last step, the minutes its logged steps took, its lowest-NLL step."""

    steps: int
    minutes: float
    best_step: int | None


def training_progress(metrics_path: str | Path) -> Training:
    """The last run in ``metrics.jsonl``: a record with a lower step than the one before starts a new
    run (a fresh run in a used directory appends to the file). Minutes run from the start of the
    run's first logging window (its record's ``time`` less its ``seconds``) to its last record (the
    final validation), so they count the steps after the last logged one too."""
    runs: list[list[dict]] = []
    previous = None
    for line in Path(metrics_path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if previous is None or record["step"] < previous:
            runs.append([])
        runs[-1].append(record)
        previous = record["step"]
    if not runs:
        raise ValueError(f"{metrics_path}: no training records")
    run = runs[-1]
    first_window = next((r for r in run if "seconds" in r), None)
    if first_window is None:
        raise ValueError(f"{metrics_path}: the last run logged no training step")
    seconds = max(r["time"] for r in run) - (first_window["time"] - first_window["seconds"])
    validated = [r for r in run if "valid_nll" in r]
    best = min(validated, key=lambda r: r["valid_nll"])["step"] if validated else None
    return Training(steps=max(r["step"] for r in run), minutes=seconds / 60, best_step=best)


def versus(model: Rouge, other: Rouge, name: str) -> str:
    """``above Lead-3 by 2.15 / 0.86 / 0.43`` when every measure is higher (at two decimals),
    ``below ...`` when every one is lower, else each measure's difference with its sign."""
    deltas = [round(a - b, 2) for a, b in zip(model.values, other.values)]
    if all(d > 0 for d in deltas):
        return f"above {name} by " + " / ".join(f"{d:.2f}" for d in deltas)
    if all(d < 0 for d in deltas):
        return f"below {name} by " + " / ".join(f"{-d:.2f}" for d in deltas)
    parts = [f"{m} {d:+.2f}" if d else f"{m} level" for m, d in zip(MEASURES, deltas)]
    return f"against {name}: " + ", ".join(parts)


def study_checkpoints(curve_path: str | Path = CURVE) -> list[dict]:
    """The study's ``samsum-m1`` checkpoints scored on validation rows 0-199, by step."""
    path = Path(curve_path)
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    chosen = {r["step"]: r for r in rows if r.get("run") == STUDY_RUN and r.get("data", "").endswith(STUDY_ROWS)}
    return [chosen[step] for step in sorted(chosen)]


def study_line(steps: int, checkpoints: list[dict]) -> str | None:
    """The study's checkpoint at or after ``steps`` and its last one, with their steps and minutes."""
    if not checkpoints:
        return None
    reached = next((c for c in checkpoints if c["step"] >= steps), checkpoints[-1])
    shown = [reached] + ([checkpoints[-1]] if checkpoints[-1] is not reached else [])
    parts = [f"{Rouge.from_scores(c)} at step {c['step']:,} ({c['minutes']:.1f} minutes there)" for c in shown]
    return ("In the study behind the shipped model (benchmarks/results/samsum/curve.jsonl: one CPU "
            "thread of a shared 2-core machine, validation rows 0-199), the same architecture scored "
            + " and ".join(parts) + ". Steps, not minutes, compare across machines.")


def closing_text(trained: Rouge, shipped: Rouge, lead3: Rouge, training: Training, rows: str,
                 checkpoints: list[dict] | None = None) -> str:
    """What the demo's numbers show, in their own terms (ROUGE-1 / 2 / L on validation ``rows``)."""
    best = f"; best.pt, the lowest validation NLL, is step {training.best_step:,}" if training.best_step else ""
    lines = [
        f"What these numbers show (ROUGE-1 / 2 / L F1 on validation dialogues {rows}):",
        f"* the model trained here made {training.steps:,} steps in {training.minutes:.1f} minutes on this "
        f"machine{best}. It scores {trained}: {versus(trained, lead3, 'Lead-3')} ({lead3}).",
        f"* the shipped model scores {shipped}: {versus(shipped, trained, 'the model trained here')}, "
        f"and {versus(shipped, lead3, 'Lead-3')}.",
    ]
    study = study_line(training.steps, checkpoints or [])
    if study:
        lines.append(study)
    lines.append("docs/model_card.md gives the shipped model's data, minutes and scores, what it is good and bad "
                 "at, and the commands that retrain it.")
    return "\n".join(textwrap.fill(line, WIDTH, subsequent_indent="  " if line.startswith("*") else "")
                     for line in lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run_dir", type=Path, help="the demo's run directory (runs/demo)")
    p.add_argument("--rows", default="400-500", help="the validation rows scored, as shown (default 400-500)")
    p.add_argument("--curve", type=Path, default=CURVE, help="the study's curve.jsonl")
    args = p.parse_args(argv)
    run = args.run_dir
    print(closing_text(read_rouge(run / "eval" / "scores.json"), read_rouge(run / "eval-shipped" / "scores.json"),
                       read_rouge(run / "lead3" / "scores.json"), training_progress(run / "metrics.jsonl"),
                       args.rows, study_checkpoints(args.curve)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
