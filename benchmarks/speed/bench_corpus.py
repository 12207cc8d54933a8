"""Summarizing a corpus on the CPU: int8 against float32, batches of similar length against batches
in input order, one process against two, and a two-node rehearsal, all measured in one run.

For each model (the shipped dialogue model on SAMSum validation, the shipped calls model on ECTSum
validation), one after the other on the same machine:

* decoding in one process with one thread (model loading excluded): float32 with length-bucketed
  batches (the baseline every ratio is against), float32 in input order, int8 bucketed. Each runs in
  its own child process, so its peak resident memory is its own. ROUGE and the numbers and claim
  figures of each are computed on the same rows (``agentsum evaluate``'s code), with their deltas
  against the baseline;
* ``agentsum summarize --out`` as a job: one process with two threads, two processes under
  ``torchrun --nproc-per-node 2`` (one thread each), and two torchrun "nodes" of one process each
  meeting over c10d on localhost. Wall time includes each process's start and model loading; the
  merged outputs are compared byte for byte with the one-process output.

    python benchmarks/speed/bench_corpus.py                          # both models (about 15 minutes)
    python benchmarks/speed/bench_corpus.py --models dialogue --rows 200

Writes a Markdown table to stdout and to --report, and one JSON object per model to --jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
MODELS = {"dialogue": DATA / "samsum" / "valid.jsonl", "calls": DATA / "ectsum" / "valid.jsonl"}
FIGURES = ("rouge1", "rouge2", "rougeLsum", "numbers_supported", "numbers_in_metric_context", "period_agreement",
           "malformed_figures")


def child(model: str, data: str, rows: int, mode: str) -> dict:
    """One decoding configuration, in this process: docs/s, peak RSS, the figures."""
    import itertools

    import torch

    torch.set_num_threads(1)
    from agentsum.data.sources import iter_examples
    from agentsum.evaluation.evaluate import decode_examples, score_decoded
    from agentsum.summarizer import Summarizer

    summarizer = Summarizer(model, device="cpu", quantize="int8" if mode == "int8" else "none")
    examples = list(itertools.islice(iter_examples(data), rows))
    search = summarizer.config.search
    started = time.perf_counter()
    decoded = decode_examples(summarizer, examples, search, batch_size=16, bucket=mode != "in-order")
    seconds = time.perf_counter() - started
    kept = [d for d in decoded if d is not None]
    scores = score_decoded(summarizer.language, kept, search, seconds).scores
    return {"mode": mode, "rows": len(kept), "seconds": seconds, "docs_per_s": len(kept) / seconds,
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "figures": {k: scores.get(k) for k in FIGURES}, "predictions": [d.prediction for d in kept]}


def run_child(model: str, data: Path, rows: int, mode: str) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", mode, "--models", model, "--rows", str(rows)],
                          capture_output=True, text=True, cwd=REPO, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if done.returncode != 0:
        raise SystemExit(f"{model} {mode} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def job(model: str, data: Path, rows: int, work: Path, launch: str) -> dict:
    """``agentsum summarize --out`` of the first ``rows`` rows: its wall time and output."""
    sample = work / f"{model}-{rows}.jsonl"
    if not sample.exists():
        with open(data, encoding="utf-8") as src, open(sample, "w", encoding="utf-8") as dst:
            for _, line in zip(range(rows), src):
                dst.write(line)
    out = work / f"{model}-{launch}"
    command = ["summarize", str(sample), "--model", model, "--out", str(out), "--part-rows", "25"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    torchrun = [sys.executable, "-m", "torch.distributed.run"]
    started = time.perf_counter()
    if launch == "1 process, 2 threads":
        procs = [subprocess.Popen([sys.executable, "-m", "agentsum", "--threads", "2", *command], env=env, cwd=REPO,
                                  stderr=subprocess.PIPE, text=True)]
    elif launch == "2 processes (torchrun)":
        procs = [subprocess.Popen([*torchrun, "--nproc-per-node", "2", "--master-port", "29531", "-m", "agentsum",
                                   *command], env=env, cwd=REPO, stderr=subprocess.PIPE, text=True)]
    else:  # two nodes of one process each, meeting over c10d as machines of a cluster would
        procs = [subprocess.Popen([*torchrun, "--nnodes", "2", "--node-rank", str(rank), "--nproc-per-node", "1",
                                   "--rdzv-backend", "c10d", "--rdzv-endpoint", "localhost:29533", "--rdzv-id",
                                   f"bench-{model}", "-m", "agentsum", *command], env=env, cwd=REPO,
                                  stderr=subprocess.PIPE, text=True) for rank in (0, 1)]
    errors = [p.communicate()[1] for p in procs]
    seconds = time.perf_counter() - started
    if any(p.returncode for p in procs):
        raise SystemExit(f"{model} {launch} failed:\n" + "\n".join(e[-3000:] for e in errors))
    return {"launch": launch, "seconds": seconds, "docs_per_s": rows / seconds,
            "output": (out / "summaries.txt").read_bytes()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--rows", type=int, help="rows of each validation set (default: dialogue 814 = all, calls 80)")
    parser.add_argument("--job-rows", type=int, help="rows for the process comparison (default: dialogue 400, calls 50)")
    parser.add_argument("--report", default=str(REPO / "benchmarks" / "results" / "bench_corpus.md"))
    parser.add_argument("--jsonl", default=str(REPO / "benchmarks" / "results" / "bench_corpus.jsonl"))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        model = args.models[0]
        print(json.dumps(child(model, str(MODELS[model]), args.rows, args.child)))
        return 0
    lines = ["| model | run | rows | docs/s | ratio | peak MiB | R-1 | R-2 | R-L | supported | in context | "
             "period | malformed | same summaries |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    jobs_lines = ["| model | launch | rows | wall s | docs/s | ratio | output identical to 1 process |",
                  "|---|---|---|---|---|---|---|"]
    for model in args.models:
        data = MODELS[model]
        rows = args.rows or (814 if model == "dialogue" else 80)
        runs = [run_child(model, data, rows, mode) for mode in ("bucketed", "in-order", "int8")]
        base = runs[0]
        for r in runs:
            f, b = r["figures"], base["figures"]

            def cell(key: str) -> str:
                if f[key] is None:
                    return "n/a"
                delta = "" if r is base or b[key] is None else f" ({f[key] - b[key]:+.2f})"
                return f"{f[key]:.2f}{delta}"

            same = sum(x == y for x, y in zip(r["predictions"], base["predictions"]))
            name = {"bucketed": "fp32, length-bucketed batches", "in-order": "fp32, batches in input order",
                    "int8": "int8, length-bucketed batches"}[r["mode"]]
            lines.append(f"| {model} | {name} | {r['rows']} | {r['docs_per_s']:.2f} | "
                         f"{r['docs_per_s'] / base['docs_per_s']:.2f}x | {r['peak_mib']:.0f} | "
                         + " | ".join(cell(k) for k in FIGURES) + f" | {same}/{r['rows']} |")
        job_rows = args.job_rows or (400 if model == "dialogue" else 50)
        with tempfile.TemporaryDirectory() as tmp:
            launches = [job(model, data, job_rows, Path(tmp), launch)
                        for launch in ("1 process, 2 threads", "2 processes (torchrun)", "2 nodes x 1 process (c10d)")]
        for j in launches:
            jobs_lines.append(f"| {model} | {j['launch']} | {job_rows} | {j['seconds']:.1f} | {j['docs_per_s']:.2f} | "
                              f"{j['docs_per_s'] / launches[0]['docs_per_s']:.2f}x | "
                              f"{'yes' if j['output'] == launches[0]['output'] else 'NO'} |")
        with open(args.jsonl, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"model": model, "date": time.strftime("%Y-%m-%d"),
                                     "decode": [{k: v for k, v in r.items() if k != "predictions"} for r in runs],
                                     "jobs": [{k: v for k, v in j.items() if k != "output"} |
                                              {"identical": j["output"] == launches[0]["output"]} for j in launches]})
                         + "\n")
    report = ("Decoding in one process, one thread (model loading excluded); ratios against fp32 bucketed, "
              "figures' deltas in brackets:\n\n" + "\n".join(lines) + "\n\n`agentsum summarize --out` as a job on "
              "this machine's two cores (wall time, process start and model loading included):\n\n"
              + "\n".join(jobs_lines) + "\n")
    print(report)
    Path(args.report).write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
