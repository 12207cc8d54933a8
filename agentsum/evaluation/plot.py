"""``agentsum plot RUN_DIR``: training curves from ``RUN_DIR/metrics.jsonl`` as PNG files.

``agentsum train`` appends one JSON object per logged step (``step``, ``time``, ``loss``,
``tokens_per_s``, ``grad_norm``, ``lr`` and, with RL, ``reward_sample``, ``reward_greedy``, ``rl``,
``nll``) and one per validation (``step``, ``time``, ``valid_nll`` and optionally ``valid_rougeL``).

Written to ``--out`` (default ``RUN_DIR/plots``), each only when its metrics are present:

* ``loss.png``        training loss (faint: every logged value; bold: smoothed), the MLE part
                      ``nll`` of a mixed RL loss, and the validation NLL as markers;
* ``validation.png``  validation NLL and ROUGE-L, the best value marked;
* ``rewards.png``     RL rewards of sampled vs greedy summaries (self-critical baseline);
* ``throughput.png``  tokens per second;
* ``lr.png``          learning rate;
* ``grad_norm.png``   gradient norm before clipping;
* ``overview.png``    every panel above in one figure.

A resumed run appends to the same file, so a step can be logged twice: the later record wins.
Matplotlib runs with the headless Agg backend.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from agentsum.data.records import DataError, json_lines

__all__ = ["MetricsError", "read_metrics", "series", "smooth", "plot_run", "add_parser", "run"]

TRAIN_KEYS = ("loss", "tokens_per_s", "grad_norm", "lr", "reward_sample", "reward_greedy", "rl", "nll")
VALID_KEYS = ("valid_nll", "valid_rougeL")

COLORS = {"train": "#1f77b4", "valid": "#d62728", "nll": "#2ca02c", "sample": "#ff7f0e", "greedy": "#9467bd",
          "other": "#555555"}


class MetricsError(ValueError):
    """metrics.jsonl is missing, empty or malformed (the message names file and line)."""


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


def metrics_path(run: str | Path) -> Path:
    """``RUN_DIR/metrics.jsonl``, or the path itself when it names a file."""
    path = Path(run)
    return path if path.suffix == ".jsonl" or path.is_file() else path / "metrics.jsonl"


def _number(value, key: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MetricsError(f"{where}: {key!r} is {json.dumps(value)}, expected a number")
    return float(value)


def read_metrics(path: str | Path) -> list[dict]:
    """The records of a metrics.jsonl file, validated.

    Raises :class:`MetricsError` naming the file when it is missing or holds no records, and
    ``file:line`` for a line that is not a JSON object with an integer ``step`` and numeric values.
    A last line without its newline that does not parse is a record still being written by a
    running training job: it is skipped with a warning.
    """
    path = Path(path)
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "not found"
        raise MetricsError(f"{path}: {what} (expected the metrics.jsonl that `agentsum train` writes in its run directory)")

    def partial(where: str) -> None:  # the last record of a running job, still being written
        print(f"agentsum plot: warning: {where}: skipping an incomplete last line", file=sys.stderr)

    records = []
    try:
        rows = list(json_lines(path, on_partial_tail=partial))
    except DataError as e:
        raise MetricsError(str(e)) from None
    for where, obj in rows:
        step = obj.get("step")
        if isinstance(step, bool) or not isinstance(step, int):
            raise MetricsError(f"{where}: 'step' is {json.dumps(step)}, expected an integer")
        record = {"step": step}
        for key, value in obj.items():
            if key == "step":
                continue
            if key in TRAIN_KEYS or key in VALID_KEYS or key == "time":
                record[key] = _number(value, key, where)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                record[key] = float(value)  # metrics this module does not know: kept, not plotted
        records.append(record)
    if not records:
        raise MetricsError(f"{path}: no metric records (the file is empty)")
    return records


def series(records: Sequence[dict], key: str) -> tuple[list[int], list[float]]:
    """(steps, values) of one metric, sorted by step; a step logged twice keeps its later value."""
    by_step: dict[int, float] = {}
    for r in records:
        if key in r:
            by_step[r["step"]] = r[key]
    steps = sorted(by_step)
    return steps, [by_step[s] for s in steps]


def auto_weight(n: int) -> float:
    """Smoothing weight giving an averaging window of about n/30 points (0 below 30 points, at most 0.98)."""
    return min(0.98, max(0.0, 1.0 - 30.0 / max(n, 1)))


def smooth(values: Sequence[float], weight: float) -> list[float]:
    """Debiased exponential moving average (as TensorBoard's smoothing slider); NaNs are passed over."""
    if not 0.0 <= weight < 1.0:
        raise ValueError(f"smoothing weight must be in [0, 1), got {weight}")
    out, avg, norm = [], 0.0, 0.0
    for v in values:
        if math.isfinite(v):
            avg = weight * avg + (1.0 - weight) * v
            norm = weight * norm + (1.0 - weight)
        out.append(avg / norm if norm > 0 else float("nan"))
    return out


# --------------------------------------------------------------------------------------------
# Panels: each draws one quantity on an axis and returns whether it drew anything
# --------------------------------------------------------------------------------------------


def _style(ax, title: str, ylabel: str) -> None:
    ax.set_title(title, fontsize=11)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3, linewidth=0.6)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.ticklabel_format(axis="x", style="plain", useOffset=False)


def _raw_and_smooth(ax, records, key, label, color, weight) -> bool:
    steps, values = series(records, key)
    if not steps:
        return False
    w = auto_weight(len(values)) if weight is None else weight
    if w > 0 and len(values) > 2:
        ax.plot(steps, values, color=color, alpha=0.25, linewidth=0.8)
        ax.plot(steps, smooth(values, w), color=color, linewidth=1.8, label=f"{label} (smoothed)")
    else:
        ax.plot(steps, values, color=color, linewidth=1.6, marker="." if len(values) < 50 else None, label=label)
    return True


def _robust_ylim(ax, records, keys) -> None:
    """Keep a huge first value (e.g. the loss at step 0) from flattening the rest of the curve."""
    values = sorted(v for k in keys for v in series(records, k)[1] if math.isfinite(v))
    if len(values) < 20:
        return
    lo, hi = values[0], values[int(0.98 * (len(values) - 1))]
    if values[-1] > hi + 3 * (hi - lo):
        pad = 0.05 * (hi - lo or 1.0)
        ax.set_ylim(lo - pad, hi + 4 * pad)


def panel_loss(ax, records, weight) -> bool:
    drew = _raw_and_smooth(ax, records, "loss", "training loss", COLORS["train"], weight)
    # plain MLE logs nll equal to the loss: a second curve only where RL, SEM or coverage add terms
    if any("nll" in r and "loss" in r and abs(r["nll"] - r["loss"]) > 1e-4 * max(abs(r["loss"]), 1.0)
           for r in records):
        drew |= _raw_and_smooth(ax, records, "nll", "training NLL (MLE part)", COLORS["nll"], weight)
    steps, values = series(records, "valid_nll")
    if steps and drew:
        ax.plot(steps, values, color=COLORS["valid"], marker="o", markersize=4, linewidth=1.0, label="validation NLL")
    if not drew:
        return False
    _robust_ylim(ax, records, ("loss", "nll"))
    _style(ax, "Training loss", "loss")
    ax.legend(fontsize=8, frameon=False)
    return True


def _valid(ax, records, key, title, ylabel, best) -> bool:
    steps, values = series(records, key)
    if not steps:
        return False
    ax.plot(steps, values, color=COLORS["valid"], marker="o", markersize=4, linewidth=1.4)
    finite = [(v, s) for s, v in zip(steps, values) if math.isfinite(v)]
    if finite:
        v, s = best(finite)
        ax.plot([s], [v], marker="*", markersize=14, color="#f2b701", markeredgecolor="black", linestyle="none",
                label=f"best {v:.3f} at step {s}", zorder=5)
        ax.legend(fontsize=8, frameon=False, loc="best")
    _style(ax, title, ylabel)
    return True


def panel_valid_nll(ax, records, weight) -> bool:
    return _valid(ax, records, "valid_nll", "Validation NLL", "NLL per token", min)


def panel_valid_rouge(ax, records, weight) -> bool:
    return _valid(ax, records, "valid_rougeL", "Validation ROUGE-L", "ROUGE-L F1", max)


def panel_rewards(ax, records, weight) -> bool:
    drew = _raw_and_smooth(ax, records, "reward_sample", "sampled", COLORS["sample"], weight)
    drew |= _raw_and_smooth(ax, records, "reward_greedy", "greedy (baseline)", COLORS["greedy"], weight)
    if drew:
        _style(ax, "RL reward: sampled vs greedy", "reward")
        ax.legend(fontsize=8, frameon=False)
    return drew


def panel_throughput(ax, records, weight) -> bool:
    if not _raw_and_smooth(ax, records, "tokens_per_s", "tokens/s", COLORS["other"], weight):
        return False
    _style(ax, "Throughput", "tokens / s")
    ax.set_ylim(bottom=0)
    return True


def panel_lr(ax, records, weight) -> bool:
    steps, values = series(records, "lr")
    if not steps:
        return False
    from matplotlib.ticker import FuncFormatter

    ax.plot(steps, values, color=COLORS["other"], linewidth=1.6)
    _style(ax, "Learning rate", "learning rate")
    finite = [v for v in values if math.isfinite(v)]
    if finite and max(finite) > 0:
        ax.set_ylim(0, 1.1 * max(finite))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    return True


def panel_grad_norm(ax, records, weight) -> bool:
    if not _raw_and_smooth(ax, records, "grad_norm", "gradient norm", COLORS["other"], weight):
        return False
    _robust_ylim(ax, records, ("grad_norm",))
    _style(ax, "Gradient norm (before clipping)", "L2 norm")
    return True


PANELS = {  # file stem -> (drawing function, the metric keys it needs (any of))
    "loss": (panel_loss, ("loss", "nll")),
    "valid_nll": (panel_valid_nll, ("valid_nll",)),
    "valid_rougeL": (panel_valid_rouge, ("valid_rougeL",)),
    "rewards": (panel_rewards, ("reward_sample", "reward_greedy")),
    "throughput": (panel_throughput, ("tokens_per_s",)),
    "lr": (panel_lr, ("lr",)),
    "grad_norm": (panel_grad_norm, ("grad_norm",)),
}


def _present(records, keys) -> bool:
    return any(k in r for r in records for k in keys)


def _same_steps(axes, records) -> None:
    """Every panel spans the run's whole step range, so panels line up."""
    steps = [r["step"] for r in records]
    lo, hi = min(steps), max(steps)
    pad = 0.03 * (hi - lo or 1)
    for ax in axes:
        ax.set_xlim(lo - pad, hi + pad)


def _figure_title(fig, run_name: str, records) -> None:
    steps = [r["step"] for r in records]
    times = [r["time"] for r in records if "time" in r]
    span = ""
    if len(times) > 1:
        hours = (max(times) - min(times)) / 3600
        span = f", {hours:.1f} h" if hours >= 1 else f", {60 * hours:.0f} min"
    fig.suptitle(f"{run_name}  (steps {min(steps)}–{max(steps)}{span})", fontsize=12, fontweight="bold")


def plot_run(run: str | Path, out_dir: str | Path | None = None, smoothing: float | None = None,
             dpi: int = 120) -> list[Path]:
    """Write the PNGs for a run directory (or a metrics.jsonl path); returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = metrics_path(run)
    records = read_metrics(path)
    run_name = path.parent.name if path.name == "metrics.jsonl" else path.stem
    out = Path(out_dir) if out_dir is not None else path.parent / "plots"
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def save(fig, name):
        target = out / name
        fig.savefig(target, dpi=dpi, bbox_inches="tight", facecolor="white")
        plt.close(fig)
        written.append(target)

    present = [name for name, (_, keys) in PANELS.items() if _present(records, keys)]
    singles = {  # output file -> the panels it holds
        "loss.png": ["loss"],
        "validation.png": [p for p in ("valid_nll", "valid_rougeL") if p in present],
        "rewards.png": ["rewards"],
        "throughput.png": ["throughput"],
        "lr.png": ["lr"],
        "grad_norm.png": ["grad_norm"],
    }
    for filename, names in singles.items():
        names = [n for n in names if n in present]
        if not names:
            continue
        fig, axes = plt.subplots(1, len(names), figsize=(6.4 * len(names), 4.0), squeeze=False)
        for ax, name in zip(axes[0], names):
            PANELS[name][0](ax, records, smoothing)
        _same_steps(axes[0], records)
        _figure_title(fig, run_name, records)
        fig.tight_layout()
        save(fig, filename)

    if present:
        ncols = 2 if len(present) > 1 else 1
        nrows = math.ceil(len(present) / ncols)
        fig, axes = plt.subplots(nrows, ncols, figsize=(6.4 * ncols, 3.6 * nrows), squeeze=False)
        flat = list(axes.flat)
        for ax, name in zip(flat, present):
            PANELS[name][0](ax, records, smoothing)
        for ax in flat[len(present):]:
            ax.set_visible(False)
        _same_steps(flat[:len(present)], records)
        _figure_title(fig, run_name, records)
        fig.tight_layout()
        save(fig, "overview.png")
    if not written:
        known = ", ".join(TRAIN_KEYS + VALID_KEYS)
        raise MetricsError(f"{path}: {len(records)} records but none of the metrics it can plot ({known})")
    return written


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def add_parser(subparsers):
    p = subparsers.add_parser(
        "plot", help="plot training curves of a run",
        description="Read RUN_DIR/metrics.jsonl and write PNGs: training loss (raw and smoothed) with the validation "
                    "NLL, validation NLL / ROUGE-L, RL rewards (sampled vs greedy), tokens/s, learning rate, "
                    "gradient norm, and overview.png with all of them.")
    p.add_argument("run_dir", metavar="RUN_DIR", help="run directory (or a metrics.jsonl file)")
    p.add_argument("--out", help="output directory (default: RUN_DIR/plots)")
    p.add_argument("--smooth", type=float, default=None, metavar="W",
                   help="exponential smoothing weight in [0, 1) (default: a window of about 1/30 of the points)")
    p.add_argument("--dpi", type=int, default=120)
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    try:
        if args.smooth is not None and not 0.0 <= args.smooth < 1.0:
            raise MetricsError(f"--smooth must be in [0, 1), got {args.smooth}")
        files = plot_run(args.run_dir, args.out, args.smooth, args.dpi)
    except MetricsError as e:
        print(f"agentsum plot: error: {e}", file=sys.stderr)
        return 2
    for f in files:
        print(f)
    return 0
