"""The claim study's tables (DCA against one agent), rebuilt from the committed files of each run.

``benchmarks/studies/claim_study.sh`` leaves, for every run ``CORPUS-READING-sSEED``, a directory under
``benchmarks/results/CORPUS/claim/`` with the run's ``metrics.jsonl`` (training and validation
records), ``cpu.jsonl`` (the CPU clock that stopped it; absent for a run stopped on the wall clock)
and ``scores.json`` (``agentsum evaluate`` of its last checkpoint on the reported rows: CNN/DM
validation rows 500-999, all of SAMSum's and ECTSum's validation; with the checkpoint's ``step``): its
ROUGE, doubled-word rate, numbers figures (the share of the summaries' numbers the source states, the
share of the reference's numbers recalled) and the search settings it was decoded with. Runs scored
before the script ran ``agentsum evaluate`` have ``curve.jsonl`` instead (``quality_curve.py``'s
ROUGE of the same checkpoint on the same rows), which records beam and lengths only; a scores.json
wins over it. This script prints:

* one row per run: steps, CPU minutes, training tokens/s, validation NLL every 100 steps, ROUGE,
  and which search settings decoded it (``s1``, ``s2``, ... spelled out under the table);
* DCA against one agent in each seed (same seed, trained side by side);
* each change on and off: every two readings of the same model that differ by one change, in the
  same seed, at equal steps (validation NLL at the last step both reached) and at equal CPU time
  (ROUGE of the last checkpoints, when both were stopped on the CPU clock).

Two rows decoded with different search settings are not compared: their ROUGE difference is left
out, naming the settings that differ, seeds decoded differently are not pooled, and a warning says
so (on stderr as well). ``claim_study.sh`` pins one set per corpus for this reason: each checkpoint's
own settings are its preset's, and the presets differ. Settings that some rows do not record (older
scores) are listed under the table.

Equal CPU time is equal work only on one machine: m6 made 14.8 steps per CPU minute on one machine
of this workplace, and m6 with ``agent_state: ends`` 32.9 on another. So ROUGE at equal time, and the ratio of speeds,
are given only for runs of one machine (the same boot id in their ``machine.json``, or, for runs
without one, started within ``SIDE_BY_SIDE_S`` of each other). Runs are compared at equal steps
when their step counts agree within 1% (``STEPS=N bash benchmarks/studies/claim_study.sh ...`` stops a run
at a step), and not at all otherwise. A comparison of runs whose batch orders differ (``order.json``;
runs without one were shuffled with ``random.shuffle``, the order before ``pcg64-sort``) says so:
the seed then fixes the initial weights but not the batches. A reading run again on another machine
is kept as ``CORPUS-READING-sSEED-rN``.

``--plot PATH`` also draws every run's validation NLL against its CPU minutes (where it has a CPU
clock; against steps otherwise) and against steps, one colour per reading, one line style per seed.

    python benchmarks/studies/claim_table.py [--corpus cnndm|samsum|ectsum] [--dir DIR] [--plot PATH]
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

# the batch order of runs saved without an order.json
from agentsum.data.dataset import LEGACY_EPOCH_ORDER

sys.path.insert(0, str(Path(__file__).resolve().parent))  # cpu_clock and search_settings, beside this script
import search_settings  # noqa: E402
from cpu_clock import cpu_at  # noqa: E402

#: The changes a reading's name may carry after its model, as claim_study.sh names them.
CHANGES = {"if": "input feeding", "whole": "whole-article split", "ends": "agent_state: ends",
           "long": "the agents' tokens"}
RUN_NAME = re.compile(r"([a-z]+)-(m\d)((?:-(?:if|whole|ends|long))*)-s(\d+)(?:-r(\d+))?$")
#: The rows each corpus's ROUGE is reported on, as they appear in quality_curve.py's ``data`` key.
REPORTED_ROWS = {"cnndm": "[500:", "samsum": "[:", "ectsum": "[:"}
#: Runs started this close together were trained side by side, on one machine.
SIDE_BY_SIDE_S = 20 * 60


@dataclass
class Run:
    name: str
    corpus: str
    model: str
    changes: frozenset[str]
    seed: int
    valid: dict[int, float] = field(default_factory=dict)
    tokens: int = 0
    steps: int = 0
    cpu_minutes: float | None = None
    rouge: tuple[float, float, float] | None = None
    doubled: float | None = None
    numbers: tuple[float, float] | None = None  # supported, recall (%), from agentsum evaluate's scores.json
    search: dict = field(default_factory=dict)  # the search settings its ROUGE was decoded with, as recorded
    valid_cpu: dict[int, float] = field(default_factory=dict)  # step -> CPU minutes at its validation
    started: float | None = None  # the first time stamp of its CPU clock or metrics (Unix seconds)
    machine: str | None = None  # the boot id of the machine that trained it
    order: str = LEGACY_EPOCH_ORDER  # the batch order of its epochs (agentsum.data.dataset.EPOCH_ORDER)
    repeat: int = 1

    @property
    def tokens_per_cpu_s(self) -> float | None:
        """Training tokens per CPU second: a speed that other work on the cores does not change
        much (wall-clock tokens/s does); None for a run without a CPU clock."""
        return self.tokens / (self.cpu_minutes * 60) if self.cpu_minutes and self.tokens else None

    @property
    def reading(self) -> str:
        return self.model + "".join(f"-{c}" for c in CHANGES if c in self.changes)

    @property
    def tag(self) -> str:
        """The reading, and which run of it when it was run again (on another machine)."""
        return self.reading + (f" (run {self.repeat})" if self.repeat > 1 else "")

    @property
    def label(self) -> str:
        extra = " + ".join(CHANGES[c] for c in CHANGES if c in self.changes - {"long"})
        long = "-long" if "long" in self.changes else ""  # a preset of its own (ectsum-m1-long)
        return f"`{self.corpus}-{self.model}{long}`" + (f" + {extra}" if extra else "")


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_run(directory: Path) -> Run | None:
    match = RUN_NAME.match(directory.name)
    if match is None:
        return None
    changes = frozenset(c for c in match.group(3).split("-") if c)
    run = Run(directory.name, match.group(1), match.group(2), changes, int(match.group(4)),
              repeat=int(match.group(5) or 1))
    if (directory / "machine.json").exists():
        run.machine = json.loads((directory / "machine.json").read_text())["boot_id"]
    if (directory / "order.json").exists():
        run.order = json.loads((directory / "order.json").read_text())["epoch_order"]
    records = read_jsonl(directory / "metrics.jsonl")
    run.valid = {r["step"]: r["valid_nll"] for r in records if "valid_nll" in r}
    train = [r for r in records if "tokens_per_s" in r]
    if train:
        run.tokens = sum(r["tokens"] for r in train)
        run.steps = max(r["step"] for r in train)
    cpu = read_jsonl(directory / "cpu.jsonl")
    if cpu:
        run.cpu_minutes = cpu[-1]["cpu_s"] / 60
        run.valid_cpu = {r["step"]: cpu_at(cpu, r["time"]) / 60 for r in records if "valid_nll" in r and "time" in r}
    stamps = [r["time"] for r in (cpu or records) if "time" in r]
    run.started = min(stamps) if stamps else None
    rows = REPORTED_ROWS.get(run.corpus, "[")
    scores = [r for r in read_jsonl(directory / "curve.jsonl") if rows in r["data"]]
    if scores:
        last = max(scores, key=lambda r: r["step"])
        run.steps = max(run.steps, last["step"])
        run.rouge = (last["rouge1"], last["rouge2"], last["rougeLsum"])
        run.doubled = last.get("doubled")
        run.search = search_settings.recorded(last)
    if (directory / "scores.json").exists():  # agentsum evaluate of the last checkpoint: it wins over curve.jsonl
        scores = json.loads((directory / "scores.json").read_text())
        run.steps = max(run.steps, scores.get("step", 0))
        run.search = search_settings.recorded(scores)
        run.rouge = (scores["rouge1"], scores["rouge2"], scores["rougeLsum"])
        run.doubled = scores.get("doubled", run.doubled)
        if "numbers_supported" in scores:
            run.numbers = (scores["numbers_supported"], scores["numbers_recall"])
    return run


def plot(runs: list[Run], path: Path) -> None:
    """Validation NLL against CPU minutes (left) and steps (right), a colour per reading, a line
    style per seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    readings = sorted({run.reading for run in runs})
    colours = {reading: f"C{i}" for i, reading in enumerate(readings)}
    styles = ["-", "--", ":", "-."]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for run in sorted(runs, key=lambda r: (r.reading, r.seed, r.repeat)):
        name = f"{run.label.strip('`')} seed {run.seed}" + (f" (run {run.repeat})" if run.repeat > 1 else "")
        style = dict(color=colours[run.reading], linestyle=styles[(run.seed - 1) % len(styles)], marker="o",
                     markersize=3, label=name)
        steps = sorted(run.valid)
        if run.valid_cpu:
            timed = sorted(s for s in steps if s in run.valid_cpu)
            axes[0].plot([run.valid_cpu[s] for s in timed], [run.valid[s] for s in timed], **style)
        axes[1].plot(steps, [run.valid[s] for s in steps], **style)
    axes[0].set_xlabel("CPU minutes (one thread)")
    axes[1].set_xlabel("training steps")
    axes[0].set_ylabel("validation NLL per token")
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=8)
    corpus = runs[0].corpus
    fig.suptitle(f"{corpus}: validation NLL at equal time and at equal steps", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"plot: {path}")


def fmt_rouge(rouge) -> str:
    return " / ".join(f"{x:.2f}" for x in rouge) if rouge else "–"


def table_order(runs: list[Run]) -> list[Run]:
    return sorted(runs, key=lambda r: (r.seed, r.model, sorted(r.changes), r.repeat))


def search_labels(runs: list[Run]) -> dict[str, str]:
    """``s1``, ``s2``, ... per distinct search settings of the scored runs, in the runs table's order."""
    return search_settings.labels({r.name: r.search for r in table_order(runs) if r.rouge})


def runs_table(runs: list[Run]) -> list[str]:
    # the validation interval: the most common gap between validations (a stop adds an odd last one)
    gaps = collections.Counter(b - a for r in runs for a, b in zip(sorted(r.valid), sorted(r.valid)[1:]))
    every = gaps.most_common(1)[0][0] if gaps else 100
    steps = sorted({s for r in runs for s in r.valid if s % every == 0})
    machines = machine_labels(runs)
    searches = search_labels(runs)
    lines = ["| reading | seed | machine | steps | CPU min | train tokens per CPU s | valid NLL at step "
             + " / ".join(map(str, steps)) + " | search | R-1 / R-2 / R-L | doubled | numbers supported / recall |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in table_order(runs):
        nll = " / ".join(f"{r.valid[s]:.3f}" if s in r.valid else "–" for s in steps)
        cpu = f"{r.cpu_minutes:.1f}" if r.cpu_minutes is not None else "wall"
        tok = f"{r.tokens_per_cpu_s:,.0f}" if r.tokens_per_cpu_s else "–"
        doubled = f"{r.doubled:.1f}%" if r.doubled is not None else "–"
        again = f" (run {r.repeat})" if r.repeat > 1 else ""
        numbers = f"{r.numbers[0]:.1f}% / {r.numbers[1]:.1f}%" if r.numbers else "–"
        lines.append(f"| {r.label}{again} | {r.seed} | {machines[r.name]} | {r.steps:,} | {cpu} | {tok} | {nll} "
                     f"| {searches.get(r.name, '–')} | {fmt_rouge(r.rouge)} | {doubled} | {numbers} |")
    return lines


def search_notes(runs: list[Run]) -> list[str]:
    """Under the tables: each search label spelled out, the settings some rows do not record, and a
    warning where the rows were decoded differently."""
    scored = [r for r in table_order(runs) if r.rouge]
    labels = search_labels(scored)
    lines = []
    for label in dict.fromkeys(labels.values()):
        settings = next(r.search for r in scored if labels[r.name] == label)
        lines.append(f"Search {label}: {search_settings.describe(settings)}.")
    none, some = search_settings.unrecorded([r.search for r in scored])
    if none:
        lines.append(f"Not recorded for any row: {', '.join(none)}.")
    for name in some:
        lines.append(f"Not recorded for {', '.join(r.name for r in scored if name not in r.search)}: {name}.")
    if len(set(labels.values())) > 1:
        lines.append("**Warning: these rows were decoded with different search settings.** A comparison across "
                     "them gives no ROUGE difference and seeds across them are not pooled; score every run again "
                     "with one set (`SCORE_ONLY=1 bash benchmarks/studies/claim_study.sh SEED A B`).")
    return lines


def machine_labels(runs: list[Run]) -> dict[str, str]:
    """A letter per machine, in the order of the runs' starts (A for the earliest)."""
    labels: dict[str, str] = {}
    seen: list[Run] = []
    for r in sorted(runs, key=lambda r: r.started or 0):
        same = next((o for o in seen if one_machine(o, r)), None)
        labels[r.name] = labels[same.name] if same else chr(ord("A") + len({*labels.values()}))
        seen.append(r)
    return labels


def nll_gap(a: Run, b: Run) -> str:
    """b minus a at every validation step both have, from step 200: 'min..max (n steps)'."""
    common = sorted(s for s in set(a.valid) & set(b.valid) if s >= 200)
    if not common:
        return "–"
    gaps = [b.valid[s] - a.valid[s] for s in common]
    orders = "" if a.order == b.order else "; other batch orders"
    return (f"{min(gaps):+.3f} to {max(gaps):+.3f} ({len(common)} validation{'s' if len(common) > 1 else ''}, "
            f"to step {common[-1]}{orders})")


def one_machine(a: Run, b: Run) -> bool:
    if a.machine and b.machine:
        return a.machine == b.machine
    return a.started is not None and b.started is not None and abs(a.started - b.started) < SIDE_BY_SIDE_S


def rouge_gap(a: Run, b: Run) -> str:
    """b minus a, at equal CPU time (one machine, both stopped on the CPU clock at the same minute) or
    at equal steps (their step counts within 1%), or '–' with the reason."""
    if not (a.rouge and b.rouge):
        return "–"
    differ = search_settings.differences(a.search, b.search)
    if differ:  # not a comparison of the models: their summaries were searched for differently
        return f"– (decoded differently: {', '.join(differ)})"
    text = " / ".join(f"{y - x:+.2f}" for x, y in zip(a.rouge, b.rouge))
    same = one_machine(a, b)
    orders = "" if a.order == b.order else ", other batch orders"
    if same and (a.cpu_minutes is None or b.cpu_minutes is None):
        return text + f" (wall clock{orders})"
    if same and abs(a.cpu_minutes - b.cpu_minutes) <= 0.02 * max(a.cpu_minutes, b.cpu_minutes):
        return text + (f" ({orders[2:]})" if orders else "")
    where = ("" if same else ", other machines") + orders
    if abs(a.steps - b.steps) <= 0.01 * max(a.steps, b.steps):
        return text + f" (equal steps{where})"
    return f"– ({a.steps:,} and {b.steps:,} steps{where})"


def comparisons(runs: list[Run]) -> list[str]:
    lines = ["| comparison | seed | off | on | NLL on minus off, per step | R-1 / R-2 / R-L on minus off, equal time or steps | tokens per CPU s, on / off |",
             "|---|---|---|---|---|---|---|"]
    rows = []
    for r in runs:  # agents against one, same seed and same changes where m1 has them
        if r.model == "m6":
            for one in runs:
                if one.model == "m1" and one.seed == r.seed and one.changes - {"long"} == (r.changes & {"if"}):
                    what = ("agents against one" + (" over the same tokens" if "long" in one.changes else "")
                            if r.corpus == "ectsum" else "three agents against one")
                    rows.append((what, one, r))
    for on in runs:  # each change (or set of changes) on and off
        for off in runs:
            if (off.seed, off.model) == (on.seed, on.model) and off.changes < on.changes:
                added = " + ".join(CHANGES[c] for c in CHANGES if c in on.changes - off.changes)
                rows.append((f"{added} ({off.reading})", off, on))
    for what, off, on in sorted(rows, key=lambda x: (x[0], x[1].seed, x[1].repeat, x[2].repeat)):
        ratio = f"{on.tokens_per_cpu_s / off.tokens_per_cpu_s:.2f}x" \
            if on.tokens_per_cpu_s and off.tokens_per_cpu_s and one_machine(off, on) else "–"
        lines.append(f"| {what} | {off.seed} | {off.tag} | {on.tag} | {nll_gap(off, on)} | {rouge_gap(off, on)} | {ratio} |")
    return lines


def seed_summary(runs: list[Run]) -> list[str]:
    """Mean and spread over the seeds of each reading that has two or more scored seeds, one row per
    batch order and search settings: a seed gives the same batches only under one order, and seeds
    decoded differently are not one reading's spread, so neither is pooled."""
    lines = ["| reading | batch order | search | seeds | R-1 mean (spread) | R-2 mean (spread) | R-L mean (spread) |",
             "|---|---|---|---|---|---|---|"]
    searches = search_labels(runs)
    readings: dict[tuple[str, str, str], list[Run]] = {}
    for r in runs:
        if r.rouge:
            readings.setdefault((r.reading, r.order, searches[r.name]), []).append(r)
    for (reading, order, search), group in sorted(readings.items()):
        if len(group) < 2:
            continue
        cells = []
        for k in range(3):
            values = [r.rouge[k] for r in group]
            cells.append(f"{statistics.mean(values):.2f} ({max(values) - min(values):.2f})")
        seeds = ", ".join(str(r.seed) for r in sorted(group, key=lambda r: r.seed))
        lines.append(f"| {group[0].label} | {order} | {search} | {seeds} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="cnndm", choices=sorted(REPORTED_ROWS))
    parser.add_argument("--dir", help="default: benchmarks/results/CORPUS/claim")
    parser.add_argument("--plot", type=Path, help="also draw the runs' validation NLL against CPU minutes and steps")
    args = parser.parse_args()
    directory = Path(args.dir or f"benchmarks/results/{args.corpus}/claim")
    runs = [run for d in sorted(directory.iterdir()) if d.is_dir() and (run := load_run(d)) is not None]
    if not runs:
        raise SystemExit(f"no runs named {args.corpus}-READING-sSEED under {directory}")
    notes = search_notes(runs)
    print("\n".join(runs_table(runs) + [""] + comparisons(runs) + [""] + seed_summary(runs) + [""] + notes))
    if any(line.startswith("**Warning") for line in notes):
        print(f"{Path(sys.argv[0]).name}: rows decoded with different search settings; their comparisons are "
              "left out (see the warning under the tables)", file=sys.stderr)
    if args.plot:
        plot(runs, args.plot)


if __name__ == "__main__":
    main()
