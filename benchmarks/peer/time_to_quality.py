"""Time to quality: the CPU minutes agentsum needs to first reach the peer's best validation ROUGE-1.

Reads ``curve.jsonl`` (written by ``quality_curve.py`` for agentsum's runs and by ``peer_quality.py``
for OpenNMT-py's), takes each run's step checkpoints on one slice of held-out documents, and reports:

* the peer's best ROUGE-1 (the target) and the minute of the checkpoint that first reached it;
* the minute of agentsum's first checkpoint at or above the target, and the minute at which the
  straight line between that checkpoint and the one before it crosses the target (checkpoints are
  minutes apart; the crossing is the finer estimate, the checkpoint the conservative one);
* the minute from which every later checkpoint of agentsum stays at or above the target;
* their ratios (agentsum's minutes over the peer's), and both curves with the target in
  ``OUT/time_to_quality.png``, the figures in ``OUT/time_to_quality.{json,md}``.

    python benchmarks/peer/time_to_quality.py benchmarks/results/samsum/time_to_quality/curve.jsonl \\
        --agentsum ttq-agentsum --peer opennmt --out benchmarks/results/samsum/time_to_quality
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def curve(records: list[dict], run: str, data: str | None) -> list[dict]:
    """A run's step checkpoints on ``data`` (default: the slice the run has most points on), by minute."""
    mine = [r for r in records if r["run"] == run and r["checkpoint"].startswith(("step-", "model_step_"))]
    if data is None and mine:
        counts: dict[str, int] = {}
        for r in mine:
            counts[r["data"]] = counts.get(r["data"], 0) + 1
        data = max(counts, key=counts.get)
    points = sorted((r for r in mine if r["data"] == data), key=lambda r: r["minutes"])
    if not points:
        raise SystemExit(f"no step checkpoints of run {run!r} on {data} in the curve")
    return points


def first_reach(points: list[dict], target: float, metric: str = "rouge1") -> tuple[float | None, float | None]:
    """(minute of the first checkpoint with ``metric`` >= target, the minute the line from the previous
    checkpoint crosses the target); (None, None) when no checkpoint reaches it. Before the first
    checkpoint the line starts from nothing known, so a first checkpoint already at the target is its
    own crossing."""
    previous = None
    for p in points:
        if p[metric] >= target:
            if previous is None:
                return p["minutes"], p["minutes"]
            a, b = previous, p
            share = (target - a[metric]) / (b[metric] - a[metric])
            return b["minutes"], a["minutes"] + share * (b["minutes"] - a["minutes"])
        previous = p
    return None, None


def stays_above(points: list[dict], target: float, metric: str = "rouge1") -> float | None:
    """Minute of the first checkpoint from which every later checkpoint scores at least ``target``
    (a noisy curve can touch a target once and fall back), or None."""
    minute = None
    for p in points:
        if p[metric] >= target:
            minute = p["minutes"] if minute is None else minute
        else:
            minute = None
    return minute


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("curve", type=Path, help="curve.jsonl")
    p.add_argument("--agentsum", required=True, help="agentsum's run name in the curve")
    p.add_argument("--peer", required=True, help="the peer's run name in the curve")
    p.add_argument("--data", default=None, help="held-out slice key (default: the one with most checkpoints)")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)

    records = [json.loads(line) for line in args.curve.read_text().splitlines() if line.strip()]
    peer = curve(records, args.peer, args.data)
    data = args.data or peer[0]["data"]
    ours = curve(records, args.agentsum, data)
    best = max(peer, key=lambda r: r["rouge1"])
    target = best["rouge1"]
    peer_minutes = best["minutes"]  # max() keeps the first of equal scores: the first to reach it
    at_checkpoint, crossing = first_reach(ours, target)
    settled = stays_above(ours, target)
    ours_best = max(ours, key=lambda r: r["rouge1"])
    result = {
        "data": data, "metric": "rouge1", "clock": sorted({r.get("clock", "wall") for r in peer + ours}),
        "target": target, "peer_run": args.peer, "peer_minutes": peer_minutes, "peer_step": best["step"],
        "peer_trained_minutes": peer[-1]["minutes"],
        "agentsum_run": args.agentsum, "agentsum_trained_minutes": ours[-1]["minutes"],
        "agentsum_minutes_checkpoint": at_checkpoint, "agentsum_minutes_crossing": crossing,
        "ratio_checkpoint": None if at_checkpoint is None else round(at_checkpoint / peer_minutes, 3),
        "ratio_crossing": None if crossing is None else round(crossing / peer_minutes, 3),
        "agentsum_minutes_stays_above": settled,
        "ratio_stays_above": None if settled is None else round(settled / peer_minutes, 3),
        "agentsum_best": ours_best["rouge1"], "agentsum_best_minutes": ours_best["minutes"],
        "curves": {args.peer: [(r["minutes"], r["step"], r["rouge1"]) for r in peer],
                   args.agentsum: [(r["minutes"], r["step"], r["rouge1"]) for r in ours]},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "time_to_quality.json").write_text(json.dumps(result, indent=1) + "\n")

    lines = [f"# Time to quality on {data} (ROUGE-1, {'/'.join(result['clock'])} minutes)", "",
             f"Target: the peer's best ROUGE-1, **{target:.2f}**, first reached by {args.peer} at "
             f"{peer_minutes:.1f} minutes (step {best['step']}; it trained {peer[-1]['minutes']:.1f}).", ""]
    if at_checkpoint is None:
        lines.append(f"{args.agentsum} did not reach it in {ours[-1]['minutes']:.1f} minutes (best "
                     f"{ours_best['rouge1']:.2f} at {ours_best['minutes']:.1f}): ratio above "
                     f"{ours[-1]['minutes'] / peer_minutes:.2f}x.")
    else:
        lines.append(f"{args.agentsum} reached it at {crossing:.1f} minutes (the line between checkpoints; its "
                     f"first checkpoint at or above it is at {at_checkpoint:.1f}): **{crossing / peer_minutes:.2f}x** "
                     f"the peer's minutes ({at_checkpoint / peer_minutes:.2f}x by checkpoint). Its best: "
                     f"{ours_best['rouge1']:.2f} at {ours_best['minutes']:.1f} minutes.")
        if settled is not None:
            lines.append("")
            lines.append(f"Every checkpoint from {settled:.1f} minutes on scores at least the target: "
                         f"**{settled / peer_minutes:.2f}x** the peer's minutes by that reading.")
    lines += ["", "| run | minutes | step | ROUGE-1 |", "|---|---|---|---|"]
    for run, points in ((args.peer, peer), (args.agentsum, ours)):
        lines += [f"| {run} | {r['minutes']:.1f} | {r['step']} | {r['rouge1']:.2f} |" for r in points]
    (args.out / "time_to_quality.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    plot(peer, ours, args, result)
    return 0


def plot(peer: list[dict], ours: list[dict], args, result: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for run, points in ((args.peer, peer), (args.agentsum, ours)):
        ax.plot([r["minutes"] for r in points], [r["rouge1"] for r in points], marker="o", label=run)
    ax.axhline(result["target"], color="grey", linestyle="--", label=f"peer's best {result['target']:.2f}")
    ax.axvline(result["peer_minutes"], color="C0", linestyle=":", alpha=0.6)
    if result["agentsum_minutes_crossing"] is not None:
        ax.axvline(result["agentsum_minutes_crossing"], color="C1", linestyle=":", alpha=0.6)
        ax.set_title(f"time to the peer's best: {result['ratio_crossing']:.2f}x", fontsize=10)
    ax.set_xlabel(f"training minutes, one thread ({'/'.join(result['clock'])} clock)")
    ax.set_ylabel(f"ROUGE-1 F1, {result['data']}")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out / "time_to_quality.png", dpi=120)
    print(f"plot: {args.out / 'time_to_quality.png'}")


if __name__ == "__main__":
    sys.exit(main())
