"""Where a training run starts: ``--resume auto``, the run directory's lock, and what may change.

``--resume auto`` (``train.resume: auto``) is what a process that may be restarted needs: torchrun
restarting a worker group after a rank died (TorchElastic expects the script to load its latest
checkpoint when it starts), a requeued cluster job, or the same command typed again. It continues
from ``RUN_DIR/checkpoints/last.pt`` where that file exists and was written by this configuration,
starts fresh where it does not exist, and refuses a ``last.pt`` of another configuration, naming
the setting that differs: continuing someone else's run with other settings is never what a
restart means.

Settings that may change across a resume are those that do not change what the next step
computes (:data:`FREE_ON_RESUME`): how long to train, how often to log, validate and save, threads
and devices, decoding. ``train.batch_size`` may change but then the batches from the resumed step on
are not those of the run that saved the checkpoint, which is said with a warning.

The lock: the main process of a run holds an exclusive ``flock`` on ``RUN_DIR/train.lock`` while it
trains, with its host and process id written in the file. A second job started on the same run
directory is refused with the first job's host and pid instead of both writing the same
``last.pt``. The kernel drops the lock when its process ends, however it ends (SIGKILL included), so
a dead job never blocks a restart.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from agentsum.checkpoint import CheckpointError, read_checkpoint
from agentsum.config import Config, ConfigError

#: ``section.key`` settings that may differ between a checkpoint's configuration and the one that
#: resumes it: they say how long and where to train, how often to log, validate and save, and how to
#: decode, but not what a training step computes.
FREE_ON_RESUME = frozenset({
    "train.max_steps", "train.max_minutes", "train.threads", "train.device", "train.dist_timeout_minutes",
    "train.resume", "train.save_every_minutes", "train.log_every", "train.valid_every", "train.keep_checkpoints",
    "train.tensorboard", "train.run_dir", "train.init_from", "train.valid_rouge_docs", "train.valid_rouge", "train.accumulate",
    "train.batch_size", "train.pad_multiple",
    "data.valid", "data.test", "data.store", "data.store_dir", "data.prepare_workers", "data.skip_bad",
})
#: ``train.accumulate`` and ``train.pad_multiple`` change how a step is computed, not what: the
#: gradient of a global batch is the same in any number of micro-batches, and padding is masked.
#: ``data.skip_bad`` only decides whether a malformed corpus line stops the run.

#: Settings that may differ between the processes of one run: where each node keeps its corpus
#: store and prepares it, its CPU threads and device choice, and how the run directory is reached.
FREE_ACROSS_RANKS = frozenset({"train.run_dir", "train.resume", "train.threads", "train.device",
                               "data.store_dir", "data.prepare_workers"})

AUTO = "auto"


@dataclass(frozen=True)
class Start:
    """How a run starts: ``checkpoint`` to continue from (None: fresh) and the line that says so."""

    checkpoint: str | None
    message: str


def _flatten(config: dict) -> dict[str, object]:
    flat = {}
    for section in ("data", "model", "train", "search"):
        for key, value in (config.get(section) or {}).items():
            flat[f"{section}.{key}"] = value
    return flat


def config_differences(saved: dict, current: Config, *, free: frozenset[str] = FREE_ON_RESUME,
                       labels: tuple[str, str] = ("saved", "now")) -> list[str]:
    """The settings in which ``current`` differs from a checkpoint's saved configuration, outside
    ``free`` and the search section, as ``"section.key: saved X, now Y"`` (``labels`` name the two). The saved configuration
    is read with this version's defaults first, so that a setting added since it was written (and left
    at its default) is no difference."""
    try:
        saved = Config.from_dict(saved, "checkpoint config").to_dict()
    except (ConfigError, TypeError, ValueError) as e:
        return [f"its configuration cannot be read by this version ({e})"]
    old, new = _flatten(saved), _flatten(current.to_dict())
    return [f"{key}: {labels[0]} {old.get(key)!r}, {labels[1]} {new.get(key)!r}" for key in sorted(set(old) | set(new))
            if not key.startswith("search.") and key not in free and old.get(key) != new.get(key)]


def choose_start(resume: str | None, run_dir: Path, config: Config) -> Start:
    """Where training starts. ``resume`` is None (fresh), a checkpoint path (continue from it,
    whatever its configuration: the caller asked for that file) or ``auto``."""
    if resume is None:
        return Start(None, "starting fresh")
    if resume != AUTO:
        return Start(resume, f"resuming from {resume}")
    last = run_dir / "checkpoints" / "last.pt"
    if not last.exists():
        return Start(None, f"resume auto: no {last}; starting fresh")
    try:
        state = read_checkpoint(last, mmap=True)
    except CheckpointError as e:
        others = sorted(last.parent.glob("step-*.pt"))
        hint = f"--resume {others[-1]} continues from the newest validation checkpoint, " if others else ""
        raise CheckpointError(f"resume auto: {e}; {hint}or move it away to start fresh") from None
    differences = config_differences(state["config"], config)
    if differences:
        shown = "; ".join(differences[:3]) + (f" (and {len(differences) - 3} more)" if len(differences) > 3 else "")
        raise ConfigError(f"resume auto: {last} was written by another configuration: {shown}. Give another "
                          f"--run-dir to train this one, or --resume {last} to continue it with the new settings")
    return Start(str(last), f"resume auto: continuing from {last} at step {int(state.get('step', 0))}")


def batch_size_warning(saved: dict, config: Config, step: int, source: str) -> str | None:
    """A warning when the resumed run's global batch differs from the saved one's, else None."""
    before = (saved.get("train") or {}).get("batch_size")
    now = config.train.batch_size
    if before is None or before == now:
        return None
    return (f"warning: {source} was trained with train.batch_size {before} and this run uses {now}: training goes "
            f"on, but from step {step} on it sees other batches than the run that saved it would have")


class RunLock:
    """An exclusive ``flock`` on ``RUN_DIR/train.lock`` held by the run's main process while it
    trains; the file names the holder (host, pid, start time, command line)."""

    NAME = "train.lock"

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / self.NAME
        self._file = None

    def acquire(self) -> "RunLock":
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        f = open(self.path, "a+", encoding="utf-8")
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.seek(0)
            holder = _describe(f.read())
            f.close()
            raise ConfigError(f"{self.path.parent} is in use by another training job ({holder}); wait for it to end, "
                              f"stop it, or give this run another --run-dir") from None
        f.seek(0)
        f.truncate()
        f.write(json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                            "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                            "command": " ".join(_command_line())}) + "\n")
        f.flush()
        self._file = f
        return self

    def release(self) -> None:
        if self._file is not None:
            self._file.close()  # closing the descriptor drops the lock; the file stays, naming the last holder
            self._file = None


def _describe(text: str) -> str:
    try:
        holder = json.loads(text)
        return f"pid {holder['pid']} on host {holder['host']}, started {holder['started']}"
    except (ValueError, KeyError, TypeError):
        return "a process that holds its lock file"


def _command_line() -> list[str]:
    import sys

    return [Path(sys.argv[0]).name, *sys.argv[1:]] if sys.argv else []
