"""Validation ROUGE against training minutes for several runs, in one table and one plot.

Every ``checkpoints/step-*.pt`` (and ``best.pt``) of each run directory is decoded on held-out
documents and scored with rouge-score (stemmed ROUGE-1/2, rougeLsum), beside Lead-3 on the same
documents, with the share of summaries that repeat a content word within three tokens (``doubled``:
"emma and emma"). Every checkpoint is decoded with one search config: the checkpoints' own settings
changed by the search options of ``agentsum evaluate`` (``--beam``, ``--min-length``,
``--max-length``, ``--no-repeat-ngram-size``, ``--repetition-penalty``, ``--repeat-window``,
``--numbers-from-source``, ...), which a study passes in full. Runs whose settings still differ are
refused: a curve of runs decoded differently (``ectsum-m1-long`` 20-120 tokens with no repeat window,
``ectsum-m6`` 30-120 with a window of 3) compares their search as much as their training. The
minute of a checkpoint is the run's wall-clock training time at its step, read from the run's
``metrics.jsonl`` (the clock ``train.max_minutes`` stops on), so runs of different speed compare at
equal time. Results are appended to ``OUT/curve.jsonl``, one record per (run, checkpoint, data,
search settings), every setting written (``search_settings.settings_of``); a checkpoint already there
with the same settings is not decoded again, so the script can follow runs that are still training.

    python benchmarks/studies/quality_curve.py runs/samsum-m1 runs/samsum-m6 \
        --data ../shared/data/samsum/valid.jsonl --docs 300 --out benchmarks/results/samsum \
        --beam 5 --min-length 15 --max-length 60 --no-repeat-ngram-size 3 --repetition-penalty 1 \
        --repeat-window 0 --numbers-from-source off --min-length-ratio off --figure-grammar off --source-periods off --numbers-in-context off

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

sys.path.insert(0, str(Path(__file__).resolve().parent))  # cpu_clock, search_settings

from search_settings import describe, differences, recorded, settings_of  # noqa: E402

from agentsum.checkpoint import read_checkpoint  # noqa: E402
from agentsum.config import Config  # noqa: E402
from agentsum.data.dataset import prepare_all  # noqa: E402
from agentsum.data.language import text_processor  # noqa: E402
from agentsum.data.sources import load_examples  # noqa: E402
from agentsum.decoding.search import SearchConfig  # noqa: E402
from agentsum.evaluation.evaluate import evaluate  # noqa: E402
from agentsum.evaluation.repetition import doubled_rate  # noqa: E402
from agentsum.evaluation.rouge import rouge_for  # noqa: E402
from agentsum.options import add_search_options, search_overrides  # noqa: E402
from agentsum.summarizer import Summarizer  # noqa: E402


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


def pinned_search(paths: list[Path], overrides: dict) -> SearchConfig:
    """The one search config the checkpoints ``paths`` are decoded with: each one's own settings with
    ``overrides``, which must then agree (SystemExit naming the settings that differ otherwise)."""
    first, search = None, None
    for path in paths:
        own = Config.from_dict(read_checkpoint(path, mmap=True)["config"]).search
        changed = dataclasses.replace(own, **overrides)
        if search is None:
            first, search = path, changed
        elif differ := differences(settings_of(search), settings_of(changed)):
            raise SystemExit(f"{first} and {path} decode differently ({', '.join(differ)}): give every search "
                             "setting (--beam, --min-length, --max-length, --no-repeat-ngram-size, "
                             "--repetition-penalty, --repeat-window, --numbers-from-source), so that the runs "
                             "are decoded alike")
    return search


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="run directories (RUN_DIR of agentsum train)")
    p.add_argument("--data", required=True, help="held-out JSONL (validation)")
    p.add_argument("--start", type=int, default=0, help="first row (default 0)")
    p.add_argument("--docs", type=int, default=None, help="N documents from --start (default: all)")
    p.add_argument("--out", type=Path, required=True)
    add_search_options(p)  # agentsum evaluate's: one set for every run (pinned_search)
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
    checkpoints = {run_dir: checkpoints_of(run_dir, args.only) for run_dir in args.runs}
    search = pinned_search([path for paths in checkpoints.values() for path in paths], search_overrides(args))
    if search is not None:
        print(f"search: {describe(settings_of(search))}", flush=True)
    for run_dir, names in checkpoints.items():
        clock = cpu_minutes(run_dir, Path(cpu_logs[run_dir.name])) if run_dir.name in cpu_logs \
            else training_minutes(run_dir)
        minutes = {step: m + offsets.get(run_dir.name, 0.0) for step, m in clock.items()}
        for path in names:
            summarizer = Summarizer(path)
            config = summarizer.config
            step = int(summarizer.metadata["step"])
            key = dict(run=run_dir.name, checkpoint=path.name, step=step, data=data_key, **settings_of(search))
            if any(all(r.get(k) == v for k, v in key.items()) for r in done):
                continue
            data_key_config = repr(config.data)
            if data_key_config not in prepared:
                examples = load_examples(args.data, start=args.start or None, end=end)
                prepared[data_key_config] = prepare_all(examples, config.data)
            docs = prepared[data_key_config]
            started = time.perf_counter()
            predictions, scores = evaluate(summarizer, docs, search, args.batch_size)
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


def checkpoints_of(run_dir: Path, only: str) -> list[Path]:
    """The checkpoints of a run that ``--only`` names: its step-*.pt, best.pt, last.pt or all."""
    names = sorted((run_dir / "checkpoints").glob("step-*.pt")) if only in ("steps", "all") else []
    for name in ("best", "last"):
        if only in (name, "all") and (run_dir / "checkpoints" / f"{name}.pt").exists():
            names.append(run_dir / "checkpoints" / f"{name}.pt")
    return names


def plot(records: list[dict], data_key: str, lead: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def line_of(r):  # one line per run and search settings (a checkpoint decoded with two settings is two points)
        return r["run"], json.dumps(recorded(r), sort_keys=True)

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, metric, label in ((axes[0], "rouge1", "ROUGE-1 F1"), (axes[1], "rouge2", "ROUGE-2 F1")):
        lines = sorted({line_of(r) for r in records if r["data"] == data_key})
        for key in lines:
            run = key[0]
            points = sorted((r["minutes"], r[metric]) for r in records
                            if line_of(r) == key and r["data"] == data_key
                            and r["checkpoint"].startswith(("step-", "model_step_")))  # agentsum's, OpenNMT-py's
            on_cpu = any(r.get("clock") == "cpu" for r in records if r["run"] == run)
            name = f"{run} (CPU minutes)" if on_cpu else run
            if sum(1 for k in lines if k[0] == run) > 1:
                name += f" ({describe(json.loads(key[1]))})"
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
