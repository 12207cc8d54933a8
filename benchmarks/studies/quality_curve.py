"""Validation ROUGE against training minutes for several runs, in one table and one plot.

Every ``checkpoints/step-*.pt`` (and ``best.pt``) of each run directory is decoded on held-out
documents with the run's own search settings (or ``--beam``/``--min-length``/``--max-length``) and
scored with rouge-score (stemmed ROUGE-1/2, rougeLsum), beside Lead-3 on the same documents, with
the share of summaries that repeat a content word within three tokens (``doubled``: "emma and
emma"). The
minute of a checkpoint is the run's wall-clock training time at its step, read from the run's
``metrics.jsonl`` (the clock ``train.max_minutes`` stops on), so runs of different speed compare at
equal time. Results are appended to ``OUT/curve.jsonl``, one record per (run, checkpoint, data,
search); a checkpoint already there is not decoded again, so the script can follow runs that are
still training.

    python benchmarks/studies/quality_curve.py runs/samsum-m1 runs/samsum-m6 \
        --data ../shared/data/samsum/valid.jsonl --docs 300 --out benchmarks/results/samsum

writes ``OUT/curve.jsonl``, ``OUT/curve.png`` (ROUGE-1 and ROUGE-2 against minutes) and prints the table.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # cpu_clock

from agentsum.data.dataset import prepare_all
from agentsum.data.language import text_processor
from agentsum.data.sources import load_examples
from agentsum.evaluation.evaluate import evaluate
from agentsum.evaluation.rouge import rouge_for
from agentsum.summarizer import Summarizer
from agentsum.checkpoint import read_checkpoint
from agentsum.evaluation.repetition import doubled_rate


def training_minutes(run_dir: Path) -> dict[int, float]:
    """Step -> wall-clock minutes since the run started, from its metrics.jsonl (resumed runs:
    the gap between sessions is not counted)."""
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    minutes, elapsed, last_time = {}, 0.0, None
    for r in records:
        if last_time is None:
            elapsed = r.get("seconds", 0.0)
        elif r["time"] - last_time < 600:  # longer gaps are a restart, not training
            elapsed += r["time"] - last_time
        else:
            elapsed += r.get("seconds", 0.0)
        last_time = r["time"]
        minutes[r["step"]] = elapsed / 60
    return minutes


def cpu_minutes(run_dir: Path, cpu_log: Path) -> dict[int, float]:
    """Step -> CPU minutes the training process had spent on training at that step, from samples of
    ``cpu_clock.py`` (the CPU spent before the first step, on data preparation, is subtracted)."""
    from cpu_clock import cpu_at

    samples = [json.loads(line) for line in cpu_log.read_text().splitlines() if line.strip()]
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    began = cpu_at(samples, records[0]["time"] - records[0].get("seconds", 0.0))
    return {r["step"]: (cpu_at(samples, r["time"]) - began) / 60 for r in records}


def minute_at(minutes: dict[int, float], step: int) -> float:
    known = [s for s in minutes if s <= step]
    return minutes[max(known)] if known else 0.0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="run directories (RUN_DIR of agentsum train)")
    p.add_argument("--data", required=True, help="held-out JSONL (validation)")
    p.add_argument("--start", type=int, default=0, help="first row (default 0)")
    p.add_argument("--docs", type=int, default=None, help="N documents from --start (default: all)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--beam", type=int), p.add_argument("--min-length", type=int), p.add_argument("--max-length", type=int)
    p.add_argument("--only", choices=("best", "last", "steps", "all"), default="all",
                   help="which checkpoints to decode: best.pt, last.pt, the step-*.pt, or all of them")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--cpu-log", action="append", default=[], metavar="RUN=PATH",
                   help="place RUN on the CPU clock: CPU minutes from cpu_clock.py's samples instead of wall "
                        "minutes (for runs that shared the machine unevenly)")
    p.add_argument("--lead-chars", type=int, default=None,
                   help="baseline: the first N characters (the Chinese lead baseline) instead of Lead-3")
    p.add_argument("--offset", action="append", default=[], metavar="RUN=MINUTES",
                   help="minutes a run had trained before it started (a run --init-from another), e.g. "
                        "samsum-m1-cov=80")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    log_path = args.out / "curve.jsonl"
    done = [json.loads(line) for line in log_path.read_text().splitlines()] if log_path.exists() else []
    end = None if args.docs is None else args.start + args.docs
    data_key = f"{args.data}[{args.start or ''}:{end}]"

    offsets = {name: float(value) for name, value in (o.split("=", 1) for o in args.offset)}
    cpu_logs = dict(o.split("=", 1) for o in args.cpu_log)
    records = list(done)
    prepared: dict[str, list] = {}  # the held-out documents, prepared once per data configuration
    for run_dir in args.runs:
        clock = cpu_minutes(run_dir, Path(cpu_logs[run_dir.name])) if run_dir.name in cpu_logs \
            else training_minutes(run_dir)
        minutes = {step: m + offsets.get(run_dir.name, 0.0) for step, m in clock.items()}
        names = sorted((run_dir / "checkpoints").glob("step-*.pt")) if args.only in ("steps", "all") else []
        for name in ("best", "last"):
            if args.only in (name, "all") and (run_dir / "checkpoints" / f"{name}.pt").exists():
                names.append(run_dir / "checkpoints" / f"{name}.pt")
        for path in names:
            summarizer = Summarizer(path)
            config = summarizer.config
            step = int(summarizer.metadata["step"])
            search = dataclasses.replace(config.search, **{k: v for k, v in (
                ("beam_size", args.beam), ("min_length", args.min_length), ("max_length", args.max_length))
                if v is not None})
            key = dict(run=run_dir.name, checkpoint=path.name, step=step, data=data_key,
                       beam=search.beam_size, min_length=search.min_length, max_length=search.max_length)
            if any(all(r.get(k) == v for k, v in key.items()) for r in done):
                continue
            data_key_config = repr(config.data)
            if data_key_config not in prepared:
                examples = load_examples(args.data, start=args.start or None, end=end)
                prepared[data_key_config] = prepare_all(examples, config.data)
            docs = prepared[data_key_config]
            started = time.perf_counter()
            predictions, scores = evaluate(summarizer, docs, search)
            record = {**key, "minutes": round(minute_at(minutes, step), 2),
                      "clock": "cpu" if run_dir.name in cpu_logs else "wall",
                      "rouge1": scores["rouge1"], "rouge2": scores["rouge2"], "rougeLsum": scores["rougeLsum"],
                      "doubled": round(doubled_rate(predictions), 2), "decode_s": round(time.perf_counter() - started, 1)}
            records.append(record)
            with log_path.open("a") as f:
                f.write(json.dumps(record) + "\n")
            print(f"{record['run']:<16} {path.name:<22} step {step:>6} {record['minutes']:6.1f} min  "
                  f"R-1 {record['rouge1']:.2f}  R-2 {record['rouge2']:.2f}  R-Lsum {record['rougeLsum']:.2f}  "
                  f"doubled {record['doubled']:.1f}%",
                  flush=True)

    # Lead-3 on the same documents, with the first run's preprocessing
    first = read_checkpoint(args.runs[0] / "checkpoints" / "last.pt", mmap=True)
    from agentsum.config import Config

    language = text_processor(Config.from_dict(first["config"]).data)
    examples = load_examples(args.data, start=args.start or None, end=end)
    lead = rouge_for(language, [language.lead(e.article, chars=args.lead_chars) for e in examples],
                     [language.join_sentences(language.summary_sentences(e.summary)) for e in examples])
    lead["name"] = f"first {args.lead_chars} characters" if args.lead_chars else "Lead-3"
    print(f"{lead['name']} on {data_key}: R-1 {lead['rouge1']:.2f}  R-2 {lead['rouge2']:.2f}  "
          f"R-Lsum {lead['rougeLsum']:.2f}")
    steps = collections.Counter(r["run"] for r in records if r["data"] == data_key
                                and r["checkpoint"].startswith(("step-", "model_step_")))
    if max(steps.values(), default=0) >= 2:
        plot(records, data_key, lead, args.out / "curve.png")
    else:  # a best/last-only or one-checkpoint slice would replace the curve plot with an empty one
        print(f"no curve on {data_key} (fewer than two checkpoints per run); {args.out / 'curve.png'} left as it was")
    return 0


def plot(records: list[dict], data_key: str, lead: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, metric, label in ((axes[0], "rouge1", "ROUGE-1 F1"), (axes[1], "rouge2", "ROUGE-2 F1")):
        # one line per run and search setting (a checkpoint decoded with two settings is two points)
        lines = sorted({(r["run"], r.get("beam"), r.get("min_length"), r.get("max_length"))
                        for r in records if r["data"] == data_key})
        for key in lines:
            run = key[0]
            points = sorted((r["minutes"], r[metric]) for r in records
                            if (r["run"], r.get("beam"), r.get("min_length"), r.get("max_length")) == key
                            and r["data"] == data_key
                            and r["checkpoint"].startswith(("step-", "model_step_")))  # agentsum's, OpenNMT-py's
            on_cpu = any(r.get("clock") == "cpu" for r in records if r["run"] == run)
            name = f"{run} (CPU minutes)" if on_cpu else run
            if sum(1 for k in lines if k[0] == run) > 1:
                name += f" (beam {key[1]}, min {key[2]})"
            if points:
                ax.plot(*zip(*points), marker="o", label=name)
        ax.axhline(lead[metric], color="grey", linestyle="--", label=lead.get("name", "Lead-3"))
        ax.set_xlabel("training minutes, one thread (wall clock, or CPU time where marked)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle(f"Validation ROUGE against training time ({data_key})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


if __name__ == "__main__":
    sys.exit(main())
