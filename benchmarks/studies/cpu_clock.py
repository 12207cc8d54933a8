"""Sample a process's CPU time (user + system, its children included once they exit) every few seconds.

Wall-clock minutes compare runs fairly only when they had the same share of the machine. When other
work shares the cores, the CPU time a single-threaded training process received is the fairer clock:
``peer_quality.py`` writes these samples for OpenNMT-py itself, and this script samples any running
process (``--pid``) the same way, one JSON object per line: ``{"time": epoch_s, "cpu_s": seconds}``.

    python benchmarks/studies/cpu_clock.py --pid 1234 --out runs/peer-samsum/cpu.jsonl
    python benchmarks/studies/cpu_clock.py --pid 1234 --out runs/x.cpu.jsonl --stop-after-minutes 65

``--stop-after-minutes`` makes CPU time the budget of a run: the process gets SIGTERM (agentsum train
saves last.pt on it) once it has had that many minutes of CPU. ``--offset-seconds`` continues a budget
across sittings: a run resumed from its checkpoint counts the CPU its earlier sittings spent up to
that checkpoint (``cpu_before_step``), and its samples go on from there.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sys
import time
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of ``pid`` from /proc (None once it has exited, reaped or not: a zombie has no
    more CPU to take and would otherwise keep a sampler waiting on its parent)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    if fields[0] in ("Z", "X"):  # field 3 of proc(5): the state
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS  # fields 14 and 15 of proc(5), after "pid (comm)"


def cpu_at(samples: list[dict], when: float) -> float:
    """CPU seconds at epoch time ``when``, interpolated between samples (clamped at the ends)."""
    if not samples:
        raise ValueError("no CPU samples")
    if when <= samples[0]["time"]:
        return samples[0]["cpu_s"]
    for a, b in zip(samples, samples[1:]):
        if a["time"] <= when <= b["time"]:
            share = (when - a["time"]) / max(b["time"] - a["time"], 1e-9)
            return a["cpu_s"] + share * (b["cpu_s"] - a["cpu_s"])
    return samples[-1]["cpu_s"]


def cpu_before_step(samples: list[dict], metrics: list[dict], step: int) -> float:
    """CPU seconds a run had spent when it logged ``step`` (its checkpoint's step): the work a resumed
    sitting builds on. The CPU spent after that step by a sitting that was killed is not counted."""
    times = [r["time"] for r in metrics if r.get("step") == step and "time" in r]
    if not times:
        raise ValueError(f"no record of step {step} in the run's metrics")
    return cpu_at(samples, min(times))


def resume_offset(run: str | Path) -> float:
    """The CPU seconds a run resumed from ``RUN/checkpoints/last.pt`` counts in its budget: what it had
    spent when it logged that checkpoint's step (``RUN.cpu.jsonl`` beside the run directory; 0 for a
    checkpoint of step 0). For study scripts: ``python benchmarks/studies/cpu_clock.py --resume-offset RUN``."""
    from agentsum.checkpoint import read_checkpoint

    run = Path(run)
    step = int(read_checkpoint(run / "checkpoints" / "last.pt", mmap=True)["step"])
    if not step:
        return 0.0
    read = lambda path: [json.loads(line) for line in path.read_text().splitlines() if line.strip()]  # noqa: E731
    return cpu_before_step(read(run.parent / f"{run.name}.cpu.jsonl"), read(run / "metrics.jsonl"), step)


def machine() -> dict:
    """Which machine measured a run: its boot id (one per machine here), CPU model, cores and whether
    it has AVX-512 (two machines here both say "AMD EPYC", and only one has it). CPU
    seconds are comparable only on one machine: the same model trains at 15 steps per CPU minute on
    one and 33 on another."""
    def read(path: str) -> str | None:
        try:
            return Path(path).read_text(encoding="utf-8")
        except OSError:
            return None
    cpuinfo = read("/proc/cpuinfo") or ""
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")),
                 platform.processor() or "unknown CPU")
    flags = next((line.split(":", 1)[1].split() for line in cpuinfo.splitlines() if line.startswith("flags")), [])
    return {"boot_id": (read("/proc/sys/kernel/random/boot_id") or "").strip() or None, "cpu": model,
            "cores": os.cpu_count(), "avx512": "avx512f" in flags if flags else None}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--resume-offset", metavar="RUN", help="print the CPU seconds RUN had spent at its last.pt "
                   "(what --offset-seconds takes when it resumes) and exit")
    p.add_argument("--pid", type=int)
    p.add_argument("--out", type=Path)
    p.add_argument("--every", type=float, default=5.0, help="seconds between samples")
    p.add_argument("--stop-after-minutes", type=float, default=None, metavar="MIN",
                   help="send the process SIGTERM once it has had MIN minutes of CPU, then keep sampling "
                        "until it exits")
    p.add_argument("--offset-seconds", type=float, default=0.0, metavar="S",
                   help="CPU seconds of earlier sittings of the run, added to every sample and counted in the "
                        "budget (a run resumed from its checkpoint)")
    args = p.parse_args(argv)
    if args.resume_offset:
        print(resume_offset(args.resume_offset))
        return 0
    if args.pid is None or args.out is None:
        p.error("--pid and --out are required (or --resume-offset RUN)")
    stopped = False
    with args.out.open("a") as f:
        while (process := cpu_seconds(args.pid)) is not None:
            cpu = args.offset_seconds + process
            f.write(json.dumps({"time": round(time.time(), 2), "cpu_s": cpu}) + "\n")
            f.flush()
            if args.stop_after_minutes is not None and not stopped and cpu >= args.stop_after_minutes * 60:
                os.kill(args.pid, signal.SIGTERM)
                stopped = True
            time.sleep(args.every)
    return 0


if __name__ == "__main__":
    sys.exit(main())
