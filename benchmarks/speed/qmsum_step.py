"""What one qmsum-m6 training step costs on the CPU, and how it grows with agents and summary length.

The preset (agentsum/configs/qmsum-m6.yaml) reads whole QMSum meetings, up to 24,000 tokens, over as
many 400-token agents as a meeting needs (60-79 for the longest), batch 4, MLE + SEM. Every case runs
the step the trainer runs (``objective(model, batch)``, backward, gradient clipping, Adam) with
qmsum-m6's model and objective on its own training meetings (``data.train``, prepared as the preset
says), one thread, each case in its own subprocess so that its peak RSS is its own.

Cases:

    agents K      the longest meeting (batch 1), its first K agents, its summary cut to 100 tokens:
                  step cost against source length at a fixed summary length
    summary T     the longest meeting (batch 1), all its agents, a target of T tokens (its summary
                  repeated and cut; 200 is max_summary_tokens): step cost against summary length
    first         the first batch of the preset's run (train.seed 1, batch 4): what `agentsum train
                  --config qmsum-m6` computes in its first step
    batch K       batch K of the first epoch, in the trainer's order (``--epoch-batches``)
    longest N     the N longest meetings with the N longest summaries (``--longest``, default 4, the
                  preset's batch): the most a step of the preset can cost
    epoch         ``--epoch``: the 36 batches of one epoch in the trainer's order (seed 1), one
                  step each, no warm-up: the mean step of a run

Times are CPU seconds of the process (``time.process_time``): the machine is shared with other
trainings, and CPU time, unlike wall time, does not count the time the process waits for a core.
Wall seconds are given beside them.

``--lstm`` also times one ``nn.LSTM(128, 128)`` (batch 8, 8k and 16k steps, forward + backward) at 1
and 2 threads: the one-agent rows of bench_long.py run a 16,000-step recurrence with 2 threads.

    python benchmarks/speed/qmsum_step.py                 # ~10 minutes on 2 shared cores
    python benchmarks/speed/qmsum_step.py --epoch --lstm
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "long"
PRESET = "qmsum-m6"


def training_docs():
    """The preset's config and its training meetings, prepared in memory as its store holds them."""
    from agentsum.config import load_config
    from agentsum.data.dataset import load_documents

    config = load_config(PRESET, [])
    return config, load_documents(config.data.train, config.data)


def case_batch(case: str, size: int, docs, config):
    """The documents of one case (see the module docstring), as Documents."""
    import dataclasses


    by_length = sorted(docs, key=lambda d: -sum(map(len, d.agents)))
    longest = by_length[0]
    if case == "agents":
        return [dataclasses.replace(longest, agents=longest.agents[:size], summary=longest.summary[:100])]
    if case == "summary":
        repeated = longest.summary * (size // max(len(longest.summary), 1) + 1)
        return [dataclasses.replace(longest, summary=repeated[:size])]
    if case == "first":
        return [docs[i] for i in epoch_batches(docs, config)[0]]
    if case == "batch":
        return [docs[i] for i in epoch_batches(docs, config)[size]]
    if case == "longest":
        summaries = sorted((d.summary for d in docs), key=len, reverse=True)
        return [dataclasses.replace(d, summary=s) for d, s in zip(by_length[:size], summaries)]
    raise ValueError(f"unknown case {case!r}")


def epoch_batches(docs, config) -> list[list[int]]:
    """The batches of the preset's first epoch, in the trainer's order (``iterate_global_batches``)."""
    from agentsum.data.dataset import document_lengths, epoch_order

    return epoch_order(document_lengths(docs), config.train.batch_size, config.train.seed, 0,
                       config.train.bucket_batches)


def run_case(case: str, size: int, warmup: int, steps: int) -> dict:
    """One case in this process: step CPU and wall seconds, batch shape, peak RSS."""
    import torch

    from agentsum.data.dataset import to_batch
    from agentsum.models import build_model
    from agentsum.runtime import tune_allocator
    from agentsum.training.objectives import build_objective
    from agentsum.training.trainer import build_optimizer, build_vocab

    tune_allocator()  # as `agentsum train` runs
    torch.set_num_threads(1)
    config, docs = training_docs()
    vocab = build_vocab(docs, config.data.vocab_size)
    torch.manual_seed(0)
    model = build_model(config.model, len(vocab))
    model.train()
    optimizer = build_optimizer(config.train.optimizer, model.parameters(), config.train.lr)
    objective = build_objective(config.train, vocab)

    def step(batch) -> tuple[float, float, float, float, int]:
        before = resource.getrusage(resource.RUSAGE_SELF)
        cpu, wall = time.process_time(), time.perf_counter()
        loss, _ = objective(model, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.train.max_grad_norm)
        optimizer.step()
        after = resource.getrusage(resource.RUSAGE_SELF)
        return (time.process_time() - cpu, time.perf_counter() - wall, float(loss), after.ru_stime - before.ru_stime,
                after.ru_minflt - before.ru_minflt)

    if case == "epoch":
        rows = []
        for indices in epoch_batches(docs, config):
            batch = to_batch([docs[i] for i in indices], vocab)
            cpu, wall, *_ = step(batch)
            rows.append({"shape": list(batch.src_ids.shape), "target": batch.tgt_in.size(1), "cpu_s": cpu, "wall_s": wall})
        return {"case": case, "steps": rows, "cpu_s": sum(r["cpu_s"] for r in rows) / len(rows),
                "wall_s": sum(r["wall_s"] for r in rows) / len(rows), "peak_rss_gb": peak_rss_gb()}
    batch = to_batch(case_batch(case, size, docs, config), vocab)
    times = [step(batch) for _ in range(warmup + steps)][warmup:]
    median = lambda k: sorted(t[k] for t in times)[(len(times) - 1) // 2]  # noqa: E731
    return {"case": case, "size": size, "shape": list(batch.src_ids.shape), "target": batch.tgt_in.size(1),
            "source_tokens": batch.num_source_tokens(), "cpu_s": median(0), "wall_s": median(1), "loss": times[0][2],
            "sys_s": median(3), "page_faults": median(4), "peak_rss_gb": peak_rss_gb()}


def run_lstm(length: int, threads: int) -> dict:
    """nn.LSTM(128, 128) over (8, length, 128), forward + backward, median of 3 after 1."""
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(128, 128, batch_first=True)
    x = torch.randn(8, length, 128, requires_grad=True)
    times = []
    for _ in range(4):
        cpu, wall = time.process_time(), time.perf_counter()
        out, _ = lstm(x)
        out.sum().backward()
        times.append((time.process_time() - cpu, time.perf_counter() - wall))
    times = sorted(times[1:], key=lambda t: t[1])
    return {"case": "lstm", "size": length, "threads": threads, "cpu_s": times[1][0], "wall_s": times[1][1],
            "loadavg": [round(v, 2) for v in os.getloadavg()]}


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def child(job: dict, timeout: float) -> dict:
    """Run one job in a subprocess (its own peak RSS and thread settings)."""
    threads = str(job.get("threads", 1))
    env = dict(os.environ, OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads)
    try:
        done = subprocess.run([sys.executable, __file__, "--job", json.dumps(job)], capture_output=True, text=True,
                              timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {**job, "error": f"over {timeout:.0f} s"}
    if done.returncode:
        return {**job, "error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"rc {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(results: list[dict], command: str, loadavg: tuple) -> str:
    malloc = {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")}
    lines = [f"# qmsum-m6: one training step on the CPU ({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC)", "",
             f"glibc malloc: agentsum.runtime.tune_allocator(){' and ' + str(malloc) if malloc else ''}.", "",
             f"Command: `{command}`; load average at the start {[round(v, 2) for v in loadavg]}, "
             f"at the end {[round(v, 2) for v in os.getloadavg()]}. One thread; CPU seconds of the process "
             "(the machine is shared: wall seconds count the waits for a core too).", "",
             "| case | batch (B, A, S) | target T | source tokens | step CPU s | of which kernel s | page faults | step wall s | CPU ms per 1k source tokens | peak RSS GB |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        if r["case"] in ("lstm", "epoch"):
            continue
        label = {"agents": f"longest meeting, {r.get('size')} agents", "summary": f"longest meeting, T {r.get('size')}",
                 "first": "first batch of the run (seed 1)", "batch": f"batch {r.get('size')} of the run's first epoch",
                 "longest": f"{r.get('size')} longest meetings, {r.get('size')} longest summaries"}[r["case"]]
        if "error" in r:
            lines.append(f"| {label} | | | | {r['error']} | | | | | |")
            continue
        per_k = 1000 * r["cpu_s"] / r["source_tokens"] * 1000
        kernel = f"{r['sys_s']:.2f} | {r['page_faults']:,}" if "sys_s" in r else " | "
        lines.append(f"| {label} | {tuple(r['shape'])} | {r['target']} | {r['source_tokens']} | {r['cpu_s']:.2f} | "
                     f"{kernel} | {r['wall_s']:.2f} | {per_k:.0f} | {r['peak_rss_gb']:.2f} |")
    for r in results:
        if r["case"] == "epoch" and "error" not in r:
            cpu = [s["cpu_s"] for s in r["steps"]]
            lines += ["", f"One epoch in the trainer's order ({len(cpu)} steps of batch 4, seed 1, no warm-up): "
                      f"mean {r['cpu_s']:.2f} CPU s a step (min {min(cpu):.2f}, max {max(cpu):.2f}), "
                      f"mean wall {r['wall_s']:.2f} s, peak RSS {r['peak_rss_gb']:.2f} GB; "
                      f"{7200 / r['cpu_s']:.0f} steps in 120 CPU minutes (validation not counted)."]
    lstm = [r for r in results if r["case"] == "lstm"]
    if lstm:
        lines += ["", "## One LSTM, batch 8, 128 units, forward + backward", "",
                  "| steps | threads | CPU s | wall s | load average |", "|---:|---:|---:|---:|---|"]
        for r in lstm:
            if "error" in r:
                lines.append(f"| {r['size']} | {r['threads']} | {r['error']} | | |")
            else:
                lines.append(f"| {r['size']} | {r['threads']} | {r['cpu_s']:.2f} | {r['wall_s']:.2f} | {r['loadavg']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--agents", type=int, nargs="*", default=[4, 16, 64])
    p.add_argument("--summaries", type=int, nargs="*", default=[50, 100, 200])
    p.add_argument("--batches", nargs="*", default=["first", "longest"], choices=["first", "longest"])
    p.add_argument("--epoch-batches", type=int, nargs="*", default=[], help="batches of the first epoch, by index")
    p.add_argument("--longest", type=int, default=4, help="meetings in the longest batch")
    p.add_argument("--epoch", action="store_true", help="also time one epoch, one step per batch")
    p.add_argument("--lstm", action="store_true", help="also time one LSTM at 1 and 2 threads")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--out", type=Path, default=RESULTS / "qmsum_step.md")
    p.add_argument("--job", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.job:
        job = json.loads(args.job)
        result = (run_lstm(job["size"], job["threads"]) if job["case"] == "lstm"
                  else run_case(job["case"], job.get("size", 0), job["warmup"], job["steps"]))
        print(json.dumps(result))
        return 0
    loadavg = os.getloadavg()
    jobs = ([{"case": "agents", "size": k} for k in args.agents] + [{"case": "summary", "size": t} for t in args.summaries]
            + [{"case": c, "size": args.longest if c == "longest" else 0} for c in args.batches]
            + [{"case": "batch", "size": k} for k in args.epoch_batches] + ([{"case": "epoch"}] if args.epoch else [])
            + ([{"case": "lstm", "size": n, "threads": t} for n in (8000, 16000) for t in (1, 2)] if args.lstm else []))
    results = []
    for job in jobs:
        results.append(child({**job, "warmup": args.warmup, "steps": args.steps}, args.timeout))
        print(json.dumps(results[-1]), flush=True)
        args.out.write_text(report(results, "python benchmarks/speed/qmsum_step.py " + " ".join(argv or sys.argv[1:]),
                                   loadavg), encoding="utf-8")
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
