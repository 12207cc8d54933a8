"""One markdown row per scored run: ROUGE and the attribution figure of its `agentsum evaluate` output.

    python benchmarks/studies/run_scores.py rl-1=runs/attribution/rl-1/eval-100-813 attr-1=...

Each NAME=DIR reads DIR/scores.json; a run's CPU minutes and steps come from DIR/../../NAME.cpu.jsonl
and the training log beside it, where they exist.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path


def row(name: str, directory: Path) -> str:
    s = json.loads((directory / "scores.json").read_text(encoding="utf-8"))
    run = directory.parent
    steps = ""
    log = run.parent / f"{run.name}.log"
    if log.exists():
        found = re.findall(r"stopped at step (\d+)", log.read_text(encoding="utf-8", errors="replace"))
        steps = f"{int(found[-1]):,}" if found else ""
    minutes = ""
    cpu = run.parent / f"{run.name}.cpu.jsonl"
    if cpu.exists():
        samples = [json.loads(line) for line in cpu.read_text().splitlines() if line.strip()]
        minutes = f"{samples[-1]['cpu_s'] / 60:.1f}" if samples else ""
    attribution = "n/a" if s.get("attribution") is None else f"{s['attribution']:.2f}"
    return (f"| {name} | {minutes} | {steps} | {s['rouge1']:.2f} / {s['rouge2']:.2f} / {s['rougeLsum']:.2f} | "
            f"{attribution} | {s.get('attribution_misattributed', '')} / {s.get('attribution_checked', '')} | "
            f"{s.get('wrong_person_suspected', 0):.1f}% |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", metavar="NAME=DIR")
    args = p.parse_args(argv)
    print("| run | CPU minutes | steps | ROUGE-1 / 2 / Lsum | attribution | misattributed / checked | wrong person suspected |")
    print("|---|---|---|---|---|---|---|")
    for spec in args.runs:
        name, _, directory = spec.partition("=")
        print(row(name, Path(directory)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
