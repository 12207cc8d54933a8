"""Runs that survive a cluster: --resume auto, checkpoints on a clock, the run directory's lock,
SIGUSR1, a torchrun restart after a rank is SIGKILLed, and two torchrun "nodes" on one machine.

Everything that trains goes through the command line in subprocesses, as a cluster job would.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from agentsum.checkpoint import read_checkpoint, save_checkpoint
from agentsum.config import ConfigError, load_config
from agentsum.training import resuming
from conftest import synthetic_rows, write_jsonl

RUN_TIMEOUT_S = 300

BASE = {
    "data.valid": "null",
    "train.threads": 1,
    "train.log_every": 1,
    "train.keep_checkpoints": 0,
    "train.tensorboard": "false",
    "train.batch_size": 8,
    "model.dropout": 0.3,  # the comparisons then cover every process's restored generator states
}


def _env() -> dict:
    return dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _train_args(corpus: str, run_dir: Path, steps: int, **sets) -> list[str]:
    args = ["train", "--config", "tiny", "--run-dir", str(run_dir)]
    for key, value in {**BASE, "data.train": corpus, "train.max_steps": steps, **sets}.items():
        args += ["--set", f"{key}={value}"]
    return args


def _single(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "agentsum.cli", *args]


def _torchrun(args: list[str], *launcher: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", *launcher, "-m", "agentsum.cli", *args]


def _run(cmd: list[str], log: Path) -> str:
    with log.open("w") as out:
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=_env(), timeout=RUN_TIMEOUT_S)
    text = log.read_text()
    assert done.returncode == 0, text[-4000:]
    return text


def _last_logged_step(run_dir: Path) -> int:
    path = run_dir / "metrics.jsonl"
    step = 0
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line being written
            if "loss" in record:
                step = max(step, record["step"])
    return step


def _losses(run_dir: Path) -> dict[int, float]:
    out = {}
    for line in (run_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "loss" in record:
            out[record["step"]] = record["loss"]
    return out


def _wait_for_step(proc: subprocess.Popen, run_dir: Path, step: int, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while _last_logged_step(run_dir) < step:
        assert proc.poll() is None, f"training exited early: {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, "training did not reach the step in time"
        time.sleep(0.005)


def _workers(launcher: subprocess.Popen) -> list[int]:
    """The pids of a torchrun launcher's worker processes, in start (rank) order."""
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(launcher.pid)], capture_output=True, text=True).stdout
    return sorted(int(pid) for pid in out.split())


def _same_weights(a: dict, b: dict, atol: float = 1e-6) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert torch.allclose(a[name], b[name], rtol=0, atol=atol), name


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> str:
    return write_jsonl(tmp_path_factory.mktemp("cluster") / "train.jsonl", synthetic_rows(40))


# --- --resume auto: which start, decided from RUN_DIR ---------------------------------------------


def _config(run_dir: Path, *overrides: str):
    return load_config("tiny", [f"train.run_dir={run_dir}", *overrides])


def _fake_last(run_dir: Path, config, step: int = 7) -> Path:
    """A last.pt as the trainer writes it, without training (choose_start reads config and step)."""
    path = run_dir / "checkpoints" / "last.pt"
    save_checkpoint({"model": {}, "config": config.to_dict(), "vocab": ["<pad>"], "step": step}, path)
    return path


def test_resume_auto_starts_fresh_where_there_is_no_last_checkpoint(tmp_path):
    start = resuming.choose_start("auto", tmp_path, _config(tmp_path))
    assert start.checkpoint is None
    assert start.message == f"resume auto: no {tmp_path / 'checkpoints' / 'last.pt'}; starting fresh"


def test_resume_auto_continues_a_last_checkpoint_of_the_same_configuration(tmp_path):
    last = _fake_last(tmp_path, _config(tmp_path), step=7)
    # how long, how often and where may change: a restart with a later max_steps is the same run
    start = resuming.choose_start("auto", tmp_path, _config(tmp_path, "train.max_steps=99", "train.threads=3",
                                                            "train.save_every_minutes=1", "search.beam_size=7"))
    assert start.checkpoint == str(last)
    assert start.message == f"resume auto: continuing from {last} at step 7"


def test_resume_auto_refuses_a_last_checkpoint_of_another_configuration_naming_the_setting(tmp_path):
    _fake_last(tmp_path, _config(tmp_path))
    with pytest.raises(ConfigError) as e:
        resuming.choose_start("auto", tmp_path, _config(tmp_path, "model.hidden_size=32", "train.lr=0.5"))
    message = str(e.value)
    assert "model.hidden_size: saved 16, now 32" in message and "train.lr: saved 0.01, now 0.5" in message
    assert "--run-dir" in message and "--resume" in message


def test_a_setting_added_since_a_checkpoint_was_written_is_no_difference(tmp_path):
    config = _config(tmp_path)
    saved = config.to_dict()
    del saved["train"]["save_every_minutes"]  # an older checkpoint's configuration lacks the key
    assert resuming.config_differences(saved, config) == []


def test_resume_auto_names_a_damaged_last_checkpoint_and_the_checkpoint_to_use_instead(tmp_path):
    last = _fake_last(tmp_path, _config(tmp_path))
    _fake_last(tmp_path, _config(tmp_path)).rename(tmp_path / "checkpoints" / "step-00000400.pt")
    last.write_bytes(b"PK\x03\x04" + b"\0" * 100)  # the head of a torch file without its end
    with pytest.raises(ValueError) as e:
        resuming.choose_start("auto", tmp_path, _config(tmp_path))
    assert "truncated or damaged" in str(e.value) and "step-00000400.pt" in str(e.value)


def test_resuming_with_another_batch_size_warns_that_the_batches_differ(tmp_path, corpus):
    run = tmp_path / "run"
    _run(_single(_train_args(corpus, run, 2)), tmp_path / "first.txt")
    text = _run(_single(_train_args(corpus, run, 4, **{"train.batch_size": 4}) + ["--resume", "auto"]),
                tmp_path / "second.txt")
    assert f"warning: {run / 'checkpoints' / 'last.pt'} was trained with train.batch_size 8 and this run uses 4" in text
    assert read_checkpoint(run / "checkpoints" / "last.pt")["step"] == 4


def test_a_changed_batch_size_is_warned_about(tmp_path):
    saved = _config(tmp_path).to_dict()
    warning = resuming.batch_size_warning(saved, _config(tmp_path, "train.batch_size=8"), 120, "last.pt")
    assert warning.startswith("warning: last.pt was trained with train.batch_size 4 and this run uses 8")
    assert "from step 120 on" in warning
    assert resuming.batch_size_warning(saved, _config(tmp_path), 120, "last.pt") is None


def test_processes_that_see_different_checkpoints_or_configurations_are_stopped_naming_them(tmp_path):
    from agentsum.training.distributed import DistContext
    from agentsum.training.trainer import Trainer

    config = _config(tmp_path)
    other = {"config": config.to_dict()}

    class TwoNodes(DistContext):
        def gather_objects(self, obj):
            return [obj, (False, 0, "node-b", None, other["config"])]

    trainer = object.__new__(Trainer)
    trainer.ctx, trainer.config = TwoNodes(0, 2, 0, torch.device("cpu")), config
    # rank 1 does not see rank 0's last.pt
    with pytest.raises(ConfigError) as e:
        trainer._check_same_start("runs/x/checkpoints/last.pt", {"step": 400})
    assert "rank 0 on" in str(e.value) and "at step 400" in str(e.value)
    assert "rank 1 on node-b from no checkpoint (fresh)" in str(e.value) and "shared filesystem" in str(e.value)
    # rank 1 was started with another batch size; its own store and threads are its business
    other["config"] = _config(tmp_path, "train.batch_size=8", "data.store_dir=/local/store", "train.threads=4").to_dict()
    with pytest.raises(ConfigError) as e:
        trainer._check_same_start(None, None)
    assert "rank 1 on node-b was started with another configuration" in str(e.value)
    assert "train.batch_size: rank 0 4, rank 1 8" in str(e.value)
    assert "store_dir" not in str(e.value) and "threads" not in str(e.value)


# --- the run directory's lock --------------------------------------------------------------------


def test_a_run_directory_held_by_a_live_job_is_refused_naming_its_host_and_pid(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from agentsum.training.resuming import RunLock; "
        f"lock = RunLock({str(tmp_path)!r}).acquire(); print('held', flush=True); time.sleep(60)")],
        stdout=subprocess.PIPE, text=True, env=_env())
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ConfigError) as e:
            resuming.RunLock(tmp_path).acquire()
        assert f"pid {holder.pid} on host {socket.gethostname()}" in str(e.value)
        # a job killed outright leaves no lock behind: the kernel drops it with the process
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        resuming.RunLock(tmp_path).acquire().release()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_train_refuses_a_run_directory_in_use(tmp_path, corpus):
    lock = resuming.RunLock(tmp_path / "run").acquire()
    try:
        done = subprocess.run(_single(_train_args(corpus, tmp_path / "run", 2)), capture_output=True, text=True,
                              env=_env(), timeout=RUN_TIMEOUT_S)
    finally:
        lock.release()
    assert done.returncode == 2
    assert f"is in use by another training job (pid {os.getpid()} on host" in done.stderr
    assert not (tmp_path / "run" / "checkpoints" / "last.pt").exists()


# --- atomic checkpoints --------------------------------------------------------------------------

_KILLED_WRITER = """
import os, signal, sys, torch
from agentsum.checkpoint import save_checkpoint
real = torch.save
def half_then_die(obj, f, *args, **kwargs):
    f.write(b"PK\\x03\\x04" + b"x" * 4096)  # part of a file, then the process is killed outright
    f.flush()
    os.kill(os.getpid(), signal.SIGKILL)
torch.save = half_then_die
save_checkpoint({"model": {}, "config": {}, "vocab": [], "step": 999}, sys.argv[1])
"""


def test_a_kill_during_a_checkpoint_write_leaves_the_previous_checkpoint_whole(tmp_path, corpus):
    run = tmp_path / "run"
    _run(_single(_train_args(corpus, run, 3)), tmp_path / "first.txt")
    last = run / "checkpoints" / "last.pt"
    before = last.read_bytes()
    killed = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(last)], env=_env(), timeout=60)
    assert killed.returncode == -signal.SIGKILL
    assert last.read_bytes() == before and read_checkpoint(last)["step"] == 3
    assert len(list((run / "checkpoints").glob("last.pt.*.tmp"))) == 1  # the cut-short write, beside it
    text = _run(_single(_train_args(corpus, run, 5, **{"train.resume": "auto"})), tmp_path / "second.txt")
    assert "removed 1 unfinished checkpoint write(s) of a killed run" in text
    assert f"resume auto: continuing from {last} at step 3" in text
    assert not list((run / "checkpoints").glob("*.tmp")) and read_checkpoint(last)["step"] == 5


# --- checkpoints on a clock, SIGUSR1, SIGKILL, and resume auto in one process ----------------------


def test_clock_checkpoints_let_resume_auto_continue_a_killed_run_exactly(tmp_path, corpus):
    steps = 40
    clock = {"train.valid_every": 100_000, "train.save_every_minutes": 0.0002}  # about every step; no validation
    straight = tmp_path / "straight"
    _run(_single(_train_args(corpus, straight, steps, **clock)), tmp_path / "straight.txt")

    run = tmp_path / "run"
    log = tmp_path / "killed.txt"
    with log.open("w") as out:
        proc = subprocess.Popen(_single(_train_args(corpus, run, steps, **clock)), stdout=out,
                                stderr=subprocess.STDOUT, env=_env())
        try:
            _wait_for_step(proc, run, 15, log)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == -signal.SIGKILL
    saved = read_checkpoint(run / "checkpoints" / "last.pt")["step"]
    assert 1 <= saved < steps  # written on the clock, with validation every 100,000 steps
    assert "(train.save_every_minutes 0.0002)" in log.read_text()

    text = _run(_single(_train_args(corpus, run, steps, **clock) + ["--resume", "auto"]), tmp_path / "resumed.txt")
    # said on one line at start (after the removal of a write the kill may have cut short)
    assert f"resume auto: continuing from {run / 'checkpoints' / 'last.pt'} at step {saved}" in text.splitlines()[:2]
    final = read_checkpoint(run / "checkpoints" / "last.pt")
    assert final["step"] == steps
    _same_weights(final["model"], read_checkpoint(straight / "checkpoints" / "last.pt")["model"])


def test_sigusr1_stops_after_the_step_and_saves_there_even_when_sent_twice(tmp_path, corpus):
    steps = 60
    straight = tmp_path / "straight"
    _run(_single(_train_args(corpus, straight, steps)), tmp_path / "straight.txt")
    run, log = tmp_path / "run", tmp_path / "stopped.txt"
    with log.open("w") as out:
        proc = subprocess.Popen(_single(_train_args(corpus, run, steps)), stdout=out, stderr=subprocess.STDOUT,
                                env=_env())
        try:
            _wait_for_step(proc, run, 5, log)
            proc.send_signal(signal.SIGUSR1)  # SLURM's warning ...
            proc.send_signal(signal.SIGUSR1)  # ... and torchrun forwarding it: one request
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    text = log.read_text()
    assert proc.returncode == 130, text[-3000:]
    state = read_checkpoint(run / "checkpoints" / "last.pt")
    assert 5 <= state["step"] < steps
    assert f"stopped at step {state['step']}; saving" in text and "stopped at once" not in text
    assert state["step"] == _last_logged_step(run)  # saved after the last step it logged: nothing lost
    _run(_single(_train_args(corpus, run, steps) + ["--resume", "auto"]), tmp_path / "resumed.txt")
    _same_weights(read_checkpoint(run / "checkpoints" / "last.pt")["model"],
                  read_checkpoint(straight / "checkpoints" / "last.pt")["model"])


# --- torchrun -------------------------------------------------------------------------------------


def test_torchrun_restarts_a_killed_rank_and_resumes_to_the_uninterrupted_weights(tmp_path, corpus):
    """2 ranks, --max-restarts 1, --resume auto; rank 1 is SIGKILLed mid-run. The restarted worker
    group forms its process group again (a store prefix per restart round), continues from the clock
    checkpoint, ends with exit 0 at max_steps, and its weights equal an uninterrupted run's."""
    steps = 80
    sets = {"train.valid_every": 100_000, "train.save_every_minutes": 0.0002}
    straight = tmp_path / "straight"
    _run(_torchrun(_train_args(corpus, straight, steps, **sets), "--nproc_per_node", "2",
                   "--master_port", str(_free_port())), tmp_path / "straight.txt")

    run, log = tmp_path / "run", tmp_path / "restarted.txt"
    cmd = _torchrun(_train_args(corpus, run, steps, **sets) + ["--resume", "auto"], "--nproc_per_node", "2",
                    "--max-restarts", "1", "--master_port", str(_free_port()))
    with log.open("w") as out:
        launcher = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=_env())
        try:
            _wait_for_step(launcher, run, 25, log)
            killed = read_checkpoint(run / "checkpoints" / "last.pt")["step"]  # saved by now, on the clock
            ranks = _workers(launcher)
            assert len(ranks) == 2
            os.kill(ranks[1], signal.SIGKILL)
            assert launcher.wait(timeout=RUN_TIMEOUT_S) == 0, log.read_text()[-4000:]
        finally:
            if launcher.poll() is None:
                launcher.kill()
    text = log.read_text()
    resumed = [line for line in text.splitlines() if line.startswith("resume auto: continuing from")]
    assert len(resumed) == 1, text[-4000:]
    at = int(resumed[0].rsplit(" ", 1)[1])
    assert killed <= at < steps
    final = read_checkpoint(run / "checkpoints" / "last.pt")
    assert final["step"] == steps
    _same_weights(final["model"], read_checkpoint(straight / "checkpoints" / "last.pt")["model"])
    print(f"saved at step >= {killed} before the kill, resumed from step {at}, final step {final['step']}")


def test_two_torchrun_nodes_train_as_one_node_with_two_processes(tmp_path, corpus):
    """Two torchrun "nodes" (one process each, c10d rendezvous on 127.0.0.1) give the losses of one
    node with two processes; each node prepares its corpus store in its own store_dir."""
    steps = 12
    one = tmp_path / "one"
    _run(_torchrun(_train_args(corpus, one, steps), "--nproc_per_node", "2", "--master_port", str(_free_port())),
         tmp_path / "one.txt")

    run, port = tmp_path / "two", _free_port()
    nodes = []
    for node in (0, 1):
        args = _train_args(corpus, run, steps, **{"data.store_dir": tmp_path / f"store-node{node}"})
        cmd = _torchrun(args, "--nnodes", "2", "--node-rank", str(node), "--nproc-per-node", "1",
                        "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "rehearsal")
        log = (tmp_path / f"node{node}.txt").open("w")
        nodes.append((subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=_env()), log))
    for proc, log in nodes:
        code = proc.wait(timeout=RUN_TIMEOUT_S)
        log.close()
        assert code == 0, Path(log.name).read_text()[-4000:]
    single, double = _losses(one), _losses(run)
    assert sorted(single) == sorted(double) == list(range(1, steps + 1))
    for step in single:
        assert double[step] == pytest.approx(single[step], abs=1e-6), step
    print("step, one node x 2 processes, two nodes x 1 process:",
          [(step, single[step], double[step]) for step in (1, steps // 2, steps)],
          f"largest difference {max(abs(single[s] - double[s]) for s in single):.1e}")
    for node in (0, 1):  # no shared store: each node prepared its own
        assert (tmp_path / f"store-node{node}" / "train").is_dir()


def test_sigusr1_under_torchrun_as_slurm_sends_it_saves_one_step_for_every_rank(tmp_path, corpus):
    """SLURM's --signal=USR1@90 reaches every process of the job step: torchrun (which forwards it
    to its workers when told to handle it, --signals-to-handle) and each worker directly. Every
    worker stops after the same step and saves once, with both ranks' generator states, and
    --resume auto goes on to the uninterrupted run's weights."""
    steps = 60
    launch = ("--nproc_per_node", "2", "--signals-to-handle", "SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1")
    straight = tmp_path / "straight"
    _run(_torchrun(_train_args(corpus, straight, steps), *launch, "--master_port", str(_free_port())),
         tmp_path / "straight.txt")
    run, log = tmp_path / "run", tmp_path / "signalled.txt"
    with log.open("w") as out:
        launcher = subprocess.Popen(_torchrun(_train_args(corpus, run, steps) + ["--resume", "auto"], *launch,
                                              "--master_port", str(_free_port())),
                                    stdout=out, stderr=subprocess.STDOUT, env=_env())
        try:
            _wait_for_step(launcher, run, 8, log)
            for pid in [*_workers(launcher), launcher.pid]:
                os.kill(pid, signal.SIGUSR1)
            launcher.wait(timeout=RUN_TIMEOUT_S)
        finally:
            if launcher.poll() is None:
                launcher.kill()
    text = log.read_text()
    state = read_checkpoint(run / "checkpoints" / "last.pt")
    assert 8 <= state["step"] < steps and len(state["rng_ranks"]) == 2
    assert text.count(f"stopped at step {state['step']}; saving") == 1 and "stopped at once" not in text, text[-3000:]
    assert state["step"] == _last_logged_step(run)
    _run(_torchrun(_train_args(corpus, run, steps) + ["--resume", "auto"], *launch,
                   "--master_port", str(_free_port())), tmp_path / "resumed.txt")
    _same_weights(read_checkpoint(run / "checkpoints" / "last.pt")["model"],
                  read_checkpoint(straight / "checkpoints" / "last.pt")["model"])


# --- the SLURM script, rehearsed with stand-ins for srun and scontrol ------------------------------

_SRUN = """#!/bin/sh
# srun with one task on this machine: drop srun's own options, run the command
while [ $# -gt 0 ]; do case "$1" in --*) shift ;; *) break ;; esac; done
exec "$@"
"""
_SCONTROL = """#!/bin/sh
case "$1" in
  show) echo 127.0.0.1 ;;
  requeue) echo "$2" >> "$REQUEUED" ;;
esac
"""


def _slurm(tmp_path: Path, corpus: str, run: Path, steps: int, sitting: int) -> tuple[list[str], dict]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("srun", _SRUN), ("scontrol", _SCONTROL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    env = dict(_env(), PATH=f"{bin_dir}:{Path(sys.executable).parent}:{os.environ['PATH']}",
               SLURM_JOB_ID="4242", SLURM_JOB_NODELIST="node[01]", SLURM_JOB_NUM_NODES="1",
               SLURM_RESTART_COUNT=str(sitting), SLURM_SUBMIT_DIR=os.getcwd(), GPUS_PER_NODE="2",
               RDZV_PORT=str(_free_port()), CONFIG="tiny", RUN_DIR=str(run), REQUEUED=str(tmp_path / "requeued"))
    script = Path(__file__).resolve().parents[2] / "scripts" / "slurm" / "train.sbatch"
    args = _train_args(corpus, run, steps)[5:]  # the --set options
    return ["bash", str(script), *args], env


def test_the_sbatch_script_saves_on_the_time_limit_signal_requeues_and_the_next_sitting_finishes(tmp_path, corpus):
    steps, run = 60, tmp_path / "run"
    cmd, env = _slurm(tmp_path, corpus, run, steps, sitting=0)
    log = tmp_path / "sitting0.txt"
    with log.open("w") as out:
        job = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            _wait_for_step(job, run, 8, log)
            # SLURM's --signal=USR1@90: every process of the step (torchrun and its workers), not the batch shell
            step_processes = subprocess.run(["pgrep", "-s", str(job.pid)], capture_output=True, text=True).stdout
            for pid in (int(p) for p in step_processes.split()):
                if pid != job.pid:
                    os.kill(pid, signal.SIGUSR1)
            status = job.wait(timeout=RUN_TIMEOUT_S)
        finally:
            if job.poll() is None:
                os.killpg(job.pid, signal.SIGKILL)
    text = log.read_text()
    assert status != 0 and (tmp_path / "requeued").read_text() == "4242\n", text[-3000:]
    assert "requeueing job 4242 (sitting 0 of at most 20)" in text
    saved = read_checkpoint(run / "checkpoints" / "last.pt")["step"]
    assert 8 <= saved < steps

    cmd, env = _slurm(tmp_path, corpus, run, steps, sitting=1)
    with (tmp_path / "sitting1.txt").open("w") as out:
        assert subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=RUN_TIMEOUT_S).returncode == 0
    text = (tmp_path / "sitting1.txt").read_text()
    assert f"resume auto: continuing from {run / 'checkpoints' / 'last.pt'} at step {saved}" in text
    assert read_checkpoint(run / "checkpoints" / "last.pt")["step"] == steps
    assert (tmp_path / "requeued").read_text() == "4242\n"  # finished: not requeued again
