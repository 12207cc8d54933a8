"""The claim reward study's curves and tables, from the files ``claim_reward_study.sh`` leaves.

Each run directory (``runs/claim-reward/NAME``, or its copy under
``benchmarks/results/ectsum/claim_reward/NAME``) holds ``metrics.jsonl`` (the training log: per logged
step the loss, and for RL the sample's and greedy baseline's ROUGE reward and the share of the
sample's claims that are right; per validation the NLL on the 100 selection calls and greedy ROUGE-L
with the claim figures of those greedy summaries), the CPU clock that stopped it (``cpu.jsonl``, or
``NAME.cpu.jsonl`` beside the directory) and, once scored, ``sel-step-*/scores.json``: each step
checkpoint decoded on the selection calls with the calls model's search (beam 5 and the three claim
constraints, the same for every run).

This script prints, in markdown:

* the curves: one row per validation of each run (step, CPU minutes, validation NLL, greedy ROUGE-L,
  numbers in context, period agreement, malformed figures of the greedy summaries), with the start
  (``--origin``: the shipped model's figures, CPU minute 0) on top;
* each checkpoint decoded with the calls model's search on the selection calls (ROUGE-1, the claim
  figures), and which one the selection picks: the highest ROUGE-1 among those whose numbers in
  context, period agreement and direction agreement are not below the start's, else the highest
  ROUGE-1.

``--plot PATH`` draws greedy ROUGE-L, numbers in context and validation NLL against CPU minutes, one
line per run. ``--origin-json PATH`` writes the start's figures (decoding the shipped calls model
greedily on the selection calls, as a validation does; a minute or two on one thread) for
``--origin`` to read.

    python benchmarks/studies/claim_reward_table.py --origin-json runs/claim-reward/origin.json
    python benchmarks/studies/claim_reward_table.py runs/claim-reward/rl-0.1 runs/claim-reward/mle \\
        --origin runs/claim-reward/origin.json --plot benchmarks/results/ectsum/claim_reward/curves.png
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from claim_table import read_jsonl  # noqa: E402
from cpu_clock import cpu_at  # noqa: E402

#: validation records' claim figures, in the curves' columns
CURVE = (("valid_rougeL", "greedy R-L"), ("valid_numbers_in_metric_context", "in context"),
         ("valid_period_agreement", "period"), ("valid_direction_agreement", "direction"),
         ("valid_malformed_figures", "malformed"))
#: selection scores' columns
SELECTED = (("rouge1", "R-1"), ("rouge2", "R-2"), ("rougeLsum", "R-L"), ("numbers_supported", "in call"),
            ("period_agreement", "period"), ("numbers_in_metric_context", "in context"),
            ("direction_agreement", "direction"), ("malformed_figures", "malformed"))
#: claim figures a chosen checkpoint may not lose against the start (higher is better)
GUARDED = ("numbers_in_metric_context", "period_agreement", "direction_agreement")


@dataclass
class Run:
    name: str
    validations: list[dict] = field(default_factory=list)  # with "cpu_min" where a clock is known
    logged: list[dict] = field(default_factory=list)
    selection: dict[int, dict] = field(default_factory=dict)  # step -> scores.json
    cpu_minutes: float | None = None


def load_run(directory: Path) -> Run:
    metrics = read_jsonl(directory / "metrics.jsonl")
    if not metrics:
        raise SystemExit(f"{directory}: no metrics.jsonl")
    cpu = read_jsonl(directory / "cpu.jsonl") or read_jsonl(directory.parent / f"{directory.name}.cpu.jsonl")
    run = Run(directory.name)
    for record in metrics:
        record = dict(record)
        if cpu:
            record["cpu_min"] = cpu_at(cpu, record["time"]) / 60
        (run.validations if "valid_nll" in record else run.logged).append(record)
    if cpu:
        run.cpu_minutes = cpu[-1]["cpu_s"] / 60
    for scores in sorted(directory.glob("sel-step-*/scores.json")):
        run.selection[int(scores.parent.name.rsplit("-", 1)[1])] = json.loads(scores.read_text(encoding="utf-8"))
    return run


def fmt(value, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def curve_table(runs: list[Run], origin: dict | None) -> list[str]:
    head = ["run", "step", "CPU min", "valid NLL", *(label for _, label in CURVE)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    if origin:
        lines.append("| start (shipped calls model) | 0 | 0 | " + fmt(origin.get("valid_nll"), 3) + " | "
                     + " | ".join(fmt(origin.get(key)) for key, _ in CURVE) + " |")
    for run in runs:
        for v in run.validations:
            lines.append(f"| {run.name} | {v['step']} | {fmt(v.get('cpu_min'))} | {fmt(v['valid_nll'], 3)} | "
                         + " | ".join(fmt(v.get(key)) for key, _ in CURVE) + " |")
    return lines


def training_notes(runs: list[Run]) -> list[str]:
    """Per run: steps, CPU minutes, and for RL the mean sample and baseline rewards and right-claim
    share over the last logged records (what the policy was writing when it stopped)."""
    lines = []
    for run in runs:
        steps = max((r["step"] for r in run.logged + run.validations), default=0)
        text = f"- {run.name}: {steps} steps in {fmt(run.cpu_minutes)} CPU minutes"
        tail = [r for r in run.logged if "reward_sample" in r][-3:]
        if tail:
            mean = lambda key: sum(r.get(key, 0.0) for r in tail) / len(tail)  # noqa: E731
            text += (f"; last {len(tail)} logged steps: sample ROUGE-L reward {mean('reward_sample'):.3f}, "
                     f"greedy {mean('reward_greedy'):.3f}")
            if any("claims_right_share" in r for r in tail):
                text += f", right share of the sample's claims {mean('claims_right_share'):.2f}"
        lines.append(text)
    return lines


def choose(runs: list[Run], start: dict | None) -> tuple[str, int] | None:
    """The checkpoint the selection calls pick: highest ROUGE-1 among those whose guarded claim
    figures are not below the start's; else highest ROUGE-1."""
    candidates = [(run.name, step, scores) for run in runs for step, scores in run.selection.items()]
    if not candidates:
        return None

    def kept(scores: dict) -> bool:
        return start is None or all((scores.get(k) or 0.0) >= (start.get(k) or 0.0) for k in GUARDED)

    pool = [c for c in candidates if kept(c[2])] or candidates
    name, step, _ = max(pool, key=lambda c: c[2]["rouge1"])
    return name, step


def selection_table(runs: list[Run], start: dict | None) -> list[str]:
    head = ["run", "step", *(label for _, label in SELECTED)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    if start:
        lines.append("| start (shipped calls model) | 0 | " + " | ".join(fmt(start.get(k)) for k, _ in SELECTED) + " |")
    chosen = choose(runs, start)
    for run in runs:
        for step in sorted(run.selection):
            mark = " (chosen)" if chosen == (run.name, step) else ""
            lines.append(f"| {run.name}{mark} | {step} | "
                         + " | ".join(fmt(run.selection[step].get(k)) for k, _ in SELECTED) + " |")
    return lines


def plot(runs: list[Run], origin: dict | None, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (("valid_rougeL", "greedy ROUGE-L, selection calls"),
              ("valid_numbers_in_metric_context", "greedy numbers in context, %"),
              ("valid_nll", "validation NLL per token"))
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    for run in runs:
        timed = [v for v in run.validations if "cpu_min" in v]
        for axis, (key, _) in zip(axes, panels):
            points = [(0.0, origin[key])] if origin and origin.get(key) is not None else []
            points += [(v["cpu_min"], v[key]) for v in timed if v.get(key) is not None]
            if points:
                axis.plot(*zip(*points), marker="o", label=run.name)
    for axis, (_, title) in zip(axes, panels):
        axis.set_title(title)
        axis.set_xlabel("CPU minutes from the shipped calls model")
        axis.grid(alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"plot: {path}", file=sys.stderr)


def origin_figures(out: Path) -> None:
    """The shipped calls model's validation figures on the selection calls, as a run's validation
    computes them (validation NLL and greedy decoding without constraints)."""
    import torch

    from agentsum.config import load_config
    from agentsum.training.trainer import Trainer, validation_greedy, validation_nll

    torch.set_num_threads(1)
    config = load_config("ectsum-m7", [f"train.run_dir={out.parent / 'origin-run'}"])
    trainer = Trainer(config, init_from="calls")  # built, not run: its model, vocabulary and selection calls
    docs = trainer.valid_docs
    values = {"valid_nll": validation_nll(trainer.model, docs, trainer.vocab, config.train.batch_size),
              **validation_greedy(trainer.model, docs[: config.train.valid_rouge_docs], trainer.vocab, config)}
    out.write_text(json.dumps(values, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(values), file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", type=Path)
    parser.add_argument("--origin", type=Path, help="the start's validation figures (--origin-json writes them)")
    parser.add_argument("--start-scores", type=Path,
                        help="scores.json of the shipped calls model on the selection calls, decoded as the runs")
    parser.add_argument("--origin-json", type=Path, help="write the start's validation figures here and stop")
    parser.add_argument("--plot", type=Path)
    args = parser.parse_args(argv)
    if args.origin_json:
        origin_figures(args.origin_json)
        return 0
    runs = [load_run(d) for d in args.runs]
    origin = json.loads(args.origin.read_text(encoding="utf-8")) if args.origin else None
    start = json.loads(args.start_scores.read_text(encoding="utf-8")) if args.start_scores else None
    print("Validation on the 100 selection calls (greedy, no constraints), against CPU minutes:\n")
    print("\n".join(curve_table(runs, origin)))
    print("\n" + "\n".join(training_notes(runs)))
    if any(run.selection for run in runs):
        print("\nStep checkpoints on the selection calls, decoded with the calls model's search "
              "(beam 5, the three claim constraints):\n")
        print("\n".join(selection_table(runs, start)))
    if args.plot:
        plot(runs, origin, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
