"""What a training run shows and records: a progress display, ``metrics.jsonl`` and TensorBoard.

* On a terminal, a rich progress bar with step, loss, tokens/s, rewards (RL) and ETA; elsewhere (logs,
  CI, ``nohup``) one plain line every ``log_every`` steps.
* ``RUN_DIR/metrics.jsonl``: one JSON object per logged step or validation (read by ``agentsum plot``).
* ``RUN_DIR/tensorboard/``: the same scalars for TensorBoard, when the ``tensorboard`` package is
  installed (``tensorboard --logdir runs``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def format_duration(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}"


def _tensorboard_writer(directory: Path):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # tensorboard not installed: metrics.jsonl only
        return None
    return SummaryWriter(log_dir=str(directory))


#: Per-step statistics logged as their mean over each logging window, beside the loss.
WINDOW_MEANS = ("reward_sample", "reward_greedy", "rl", "nll", "claims_right_share", "misattributed_share",
                "disfluent_share")


class TrainingMonitor:
    def __init__(self, run_dir: Path, *, max_steps: int, start_step: int, log_every: int,
                 deadline: float | None = None, tensorboard: bool = True, live: bool | None = None):
        self.max_steps = max_steps
        self.log_every = log_every
        self.deadline = deadline
        self.start_step = start_step
        self.started = time.perf_counter()
        self.metrics = (run_dir / "metrics.jsonl").open("a", encoding="utf-8")
        self.writer = _tensorboard_writer(run_dir / "tensorboard") if tensorboard else None
        self._window = {"loss": 0.0, "tokens": 0, "steps": 0, "sums": {}, "start": time.perf_counter()}
        self.progress = None
        if live if live is not None else sys.stderr.isatty():
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            self.progress = Progress(TextColumn("[bold]train"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                                     TextColumn("{task.fields[status]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                                     transient=False)
            total = max_steps if deadline is None else None
            self.task = self.progress.add_task("train", total=total, completed=start_step, status="")
            self.progress.start()

    def record(self, step: int, **values) -> None:
        self.metrics.write(json.dumps({"step": step, "time": time.time(), **values}) + "\n")
        self.metrics.flush()
        if self.writer is not None:
            for key, value in values.items():
                if isinstance(value, (int, float)):
                    self.writer.add_scalar(key, value, step)

    def eta(self, step: int) -> float:
        per_step = (time.perf_counter() - self.started) / max(step - self.start_step, 1)
        remaining = (self.max_steps - step) * per_step
        if self.deadline is not None:
            remaining = min(remaining, self.deadline - time.perf_counter())
        return remaining

    def position(self, step: int) -> tuple[str, str]:
        """Where the run is against the bound that will stop it: (``step 40/200000``, ``elapsed 0:01:10``)
        when the step limit comes first, (``step 40``, ``elapsed 0:01:10/0:05:00``) when the minutes cap does."""
        now = time.perf_counter()
        elapsed = format_duration(now - self.started)
        if self.deadline is not None:
            per_step = (now - self.started) / max(step - self.start_step, 1)
            if (self.max_steps - step) * per_step >= self.deadline - now:
                return f"step {step}", f"elapsed {elapsed}/{format_duration(self.deadline - self.started)}"
        return f"step {step}/{self.max_steps}", f"elapsed {elapsed}"

    def step(self, step: int, stats: dict, tokens: int, grad_norm, lr: float) -> None:
        """Count one optimizer step. ``grad_norm`` may be a tensor on the device: it is read (a wait
        for the device) only on the steps that log."""
        w = self._window
        w["loss"] += stats["loss"]
        w["tokens"] += tokens
        w["steps"] += 1
        for key in WINDOW_MEANS:
            if key in stats:
                w["sums"][key] = w["sums"].get(key, 0.0) + stats[key]
        if self.progress is not None:
            self.progress.update(self.task, completed=step, status=f"loss {stats['loss']:.3f}")
        if step % self.log_every:
            return
        grad_norm = float(grad_norm)
        seconds = time.perf_counter() - w["start"]
        rate = w["tokens"] / max(seconds, 1e-9)
        loss = w["loss"] / w["steps"]
        # means over the window, like the loss (a single step's value would make a smoothed
        # curve of them as noisy as the raw one)
        rewards = {k: v / w["steps"] for k, v in w["sums"].items()}
        shown = f"loss {loss:.4f}"
        if "reward_sample" in rewards:
            shown += f"  reward {rewards['reward_sample']:.3f}/{rewards['reward_greedy']:.3f} (sample/greedy)"
        if "claims_right_share" in rewards:
            shown += f"  right claims {100 * rewards['claims_right_share']:.1f}%"
        if "misattributed_share" in rewards:
            shown += f"  misattributed {100 * rewards['misattributed_share']:.1f}%"
        if "disfluent_share" in rewards:
            shown += f"  disfluent {100 * rewards['disfluent_share']:.1f}%"
        shown += f"  {rate:,.0f} tok/s"
        if self.progress is not None:
            self.progress.update(self.task, status=shown)
        else:
            where, elapsed = self.position(step)
            log(f"{where}  {shown}  grad {grad_norm:.2f}  {elapsed}  eta {format_duration(self.eta(step))}")
        self.record(step, loss=loss, tokens_per_s=rate, tokens=w["tokens"], seconds=seconds, steps=w["steps"],
                    grad_norm=grad_norm, lr=lr, **rewards)
        self._window = {"loss": 0.0, "tokens": 0, "steps": 0, "sums": {}, "start": time.perf_counter()}

    def message(self, text: str) -> None:
        if self.progress is not None:
            self.progress.console.print(text)
        else:
            log(text)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
        if self.writer is not None:
            self.writer.close()
        self.metrics.close()
