"""Crash safety end to end: SIGKILL a training run at a random step, resume from last.pt, and get
exactly the losses of an uninterrupted run.

Everything goes through the command line in subprocesses. ``train.valid_every=1`` writes last.pt
after every step and ``train.log_every=1`` records every step's loss in metrics.jsonl. Dropout and
a Noam schedule are switched on so that the comparison also covers the restored RNG states and
scheduler (the optimizer is Adam, whose moments must be restored too; the data order comes from
(seed, step)). A run killed between a step's metrics record and its checkpoint repeats that step
after the resume, so metrics.jsonl can hold a step twice: the last record wins.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from agentsum.checkpoint import read_checkpoint
from conftest import synthetic_rows, write_jsonl

torch.set_num_threads(1)

N_STEPS = 16
TRIAL_SEEDS = [11, 22, 33]
KILL_TIMEOUT_S = 60.0
RUN_TIMEOUT_S = 120


def _command(corpus: str, run_dir: Path, resume: Path | None = None) -> list[str]:
    sets = {
        "data.train": corpus,
        "data.valid": "null",
        "train.max_steps": N_STEPS,
        "train.threads": 1,
        "train.valid_every": 1,
        "train.log_every": 1,
        "train.keep_checkpoints": 0,
        "train.tensorboard": "false",
        "train.schedule": "noam",
        "train.warmup": 5,
        "model.dropout": 0.3,
    }
    cmd = [sys.executable, "-m", "agentsum.cli", "train", "--config", "tiny", "--run-dir", str(run_dir)]
    for key, value in sets.items():
        cmd += ["--set", f"{key}={value}"]
    if resume is not None:
        cmd += ["--resume", str(resume)]
    return cmd


def _env() -> dict:
    return dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1")


def _run(cmd: list[str], log: Path) -> None:
    with log.open("w") as out:
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=_env(), timeout=RUN_TIMEOUT_S)
    assert done.returncode == 0, log.read_text()[-3000:]


def _records(run_dir: Path) -> list[dict]:
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _losses(run_dir: Path) -> dict[int, float]:
    """Step -> loss, the last record of each step winning (a resumed run repeats steps)."""
    out: dict[int, float] = {}
    for record in _records(run_dir):
        if "loss" in record:
            out[record["step"]] = record["loss"]
    return out


def _last_logged_step(run_dir: Path) -> int:
    """Highest step with a loss record, tolerant of a line being written right now."""
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        return 0
    step = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # partial last line: its writer is mid-flush
        if "loss" in record:
            step = max(step, record["step"])
    return step


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> str:
    return write_jsonl(tmp_path_factory.mktemp("kill_resume") / "train.jsonl", synthetic_rows(16))


@pytest.fixture(scope="module")
def uninterrupted(corpus, tmp_path_factory) -> dict:
    run_dir = tmp_path_factory.mktemp("straight") / "run"
    _run(_command(corpus, run_dir), run_dir.parent / "log.txt")
    return {"run_dir": run_dir, "losses": _losses(run_dir), "final": read_checkpoint(run_dir / "checkpoints" / "last.pt")}


def test_uninterrupted_run_records_every_step(uninterrupted):
    losses = uninterrupted["losses"]
    assert sorted(losses) == list(range(1, N_STEPS + 1))
    assert all(isinstance(v, float) and v == v for v in losses.values())
    steps = [r["step"] for r in _records(uninterrupted["run_dir"]) if "loss" in r]
    assert steps == list(range(1, N_STEPS + 1))  # one record per step, in order
    assert uninterrupted["final"]["step"] == N_STEPS
    assert len(set(losses.values())) > 1  # the run really trains (losses move)


@pytest.mark.parametrize("seed", TRIAL_SEEDS)
def test_sigkill_then_resume_reproduces_the_uninterrupted_losses(seed, corpus, uninterrupted, tmp_path):
    rng = random.Random(seed)
    kill_step = rng.randint(2, N_STEPS - 6)  # leaves >= 6 steps (~0.3 s) of margin after the kill point
    delay = rng.uniform(0.0, 0.06)  # lands anywhere in the step, checkpoint writes included
    run_dir = tmp_path / "run"
    last = run_dir / "checkpoints" / "last.pt"

    log = (tmp_path / "killed.txt").open("w")
    proc = subprocess.Popen(_command(corpus, run_dir), stdout=log, stderr=subprocess.STDOUT, env=_env())
    try:
        deadline = time.monotonic() + KILL_TIMEOUT_S
        # the checkpoint of step kill_step - 1 exists before step kill_step's record is written
        while not (last.exists() and _last_logged_step(run_dir) >= kill_step):
            assert proc.poll() is None, f"training exited early: {(tmp_path / 'killed.txt').read_text()[-3000:]}"
            assert time.monotonic() < deadline, "training did not reach the kill step in time"
            time.sleep(0.002)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed (slow machine?)"

    # atomic writes: whatever instant the kill hit, last.pt (and best.pt) read back whole
    state = read_checkpoint(last)
    saved = int(state["step"])
    logged = _last_logged_step(run_dir)
    assert kill_step - 1 <= saved <= logged < N_STEPS, (kill_step, saved, logged)
    assert {"optimizer", "scheduler", "rng"} <= set(state)
    best = read_checkpoint(run_dir / "checkpoints" / "best.pt")
    assert 1 <= int(best["step"]) <= logged
    assert all(json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines())  # no torn line

    before = _losses(run_dir)
    expected = uninterrupted["losses"]
    for step, loss in before.items():  # the killed run itself ran exactly like the uninterrupted one
        assert loss == pytest.approx(expected[step], abs=1e-6), f"step {step} before the kill"

    _run(_command(corpus, run_dir, resume=last), tmp_path / "resumed.txt")
    assert f"at step {saved}" in (tmp_path / "resumed.txt").read_text()
    after = _losses(run_dir)
    assert sorted(after) == list(range(1, N_STEPS + 1))
    steps = [r["step"] for r in _records(run_dir) if "loss" in r]
    assert steps[-(N_STEPS - saved):] == list(range(saved + 1, N_STEPS + 1))  # resumed right after last.pt
    mismatches = {s: (after[s], expected[s]) for s in range(saved + 1, N_STEPS + 1)
                  if abs(after[s] - expected[s]) > 1e-6}
    assert not mismatches, f"losses after resuming at step {saved} differ (resumed, uninterrupted): {mismatches}"

    final = read_checkpoint(last)
    assert final["step"] == N_STEPS
    reference = uninterrupted["final"]
    for name, tensor in reference["model"].items():
        assert torch.allclose(final["model"][name], tensor, rtol=0, atol=1e-6), name
    assert final["scheduler"] == reference["scheduler"]
