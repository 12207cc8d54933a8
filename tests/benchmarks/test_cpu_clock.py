"""benchmarks/studies/cpu_clock.py: the CPU clock that makes side-by-side runs fair, and its CPU budget."""

import json
import signal
import subprocess
import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks" / "studies"))
import cpu_clock  # noqa: E402


def test_cpu_at_interpolates_between_samples_and_clamps_at_the_ends():
    samples = [{"time": 10.0, "cpu_s": 1.0}, {"time": 20.0, "cpu_s": 5.0}]
    assert cpu_clock.cpu_at(samples, 15.0) == 3.0
    assert cpu_clock.cpu_at(samples, 0.0) == 1.0 and cpu_clock.cpu_at(samples, 99.0) == 5.0


def test_a_process_is_stopped_with_sigterm_once_it_has_had_its_cpu_budget(tmp_path):
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        out = tmp_path / "cpu.jsonl"
        assert cpu_clock.main(["--pid", str(busy.pid), "--out", str(out), "--every", "0.05",
                               "--stop-after-minutes", str(0.5 / 60)]) == 0
        # main returns once the process has exited, before anyone reaps it
        assert busy.wait(timeout=30) == -signal.SIGTERM
        samples = [json.loads(line) for line in out.read_text().splitlines()]
        assert samples and 0.5 <= samples[-1]["cpu_s"] < 5.0
        assert all(a["cpu_s"] <= b["cpu_s"] for a, b in zip(samples, samples[1:]))
    finally:
        busy.kill()


def test_the_machine_is_named_by_its_boot_id_cpu_and_cores():
    import os

    info = cpu_clock.machine()
    assert info["cores"] == os.cpu_count() and info["cpu"]
    assert info == cpu_clock.machine()  # one machine, one answer: what claim_table.py groups runs by
    if os.path.exists("/proc/sys/kernel/random/boot_id"):
        assert len(info["boot_id"]) == 36
    if os.path.exists("/proc/cpuinfo"):  # two machines here share the model name; AVX-512 tells them apart
        flags = [line for line in open("/proc/cpuinfo") if line.startswith("flags")]
        assert info["avx512"] is (("avx512f" in flags[0].split()) if flags else None)


def test_a_resumed_sitting_counts_the_cpu_spent_up_to_its_checkpoint(tmp_path):
    samples = [{"time": 100.0, "cpu_s": 0.0}, {"time": 200.0, "cpu_s": 90.0}, {"time": 300.0, "cpu_s": 180.0}]
    metrics = [{"step": 10, "time": 150.0, "loss": 1.0}, {"step": 20, "time": 250.0, "loss": 0.9},
               {"step": 20, "time": 260.0, "valid_nll": 1.2}]
    # the checkpoint of step 20: 135 s of CPU had gone into it; what the killed sitting spent after is not counted
    assert cpu_clock.cpu_before_step(samples, metrics, 20) == 135.0
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        out = tmp_path / "cpu.jsonl"
        # 100 s spent before: a budget of 100.5 s leaves the new sitting half a second
        assert cpu_clock.main(["--pid", str(busy.pid), "--out", str(out), "--every", "0.05", "--offset-seconds", "100",
                               "--stop-after-minutes", str(100.5 / 60)]) == 0
        assert busy.wait(timeout=30) == -signal.SIGTERM
        cpu = [json.loads(line)["cpu_s"] for line in out.read_text().splitlines()]
        assert cpu[0] >= 100.0 and 100.5 <= cpu[-1] < 105.0
    finally:
        busy.kill()


def test_the_resume_offset_of_a_run_is_read_from_its_checkpoint_clock_and_log(tmp_path, capsys):
    """What the study scripts' RESUME=1 passes as --offset-seconds: the CPU spent when last.pt's step
    was logged, from RUN.cpu.jsonl beside the run and RUN/metrics.jsonl; 0 for a step-0 checkpoint."""
    import torch

    run = tmp_path / "rl-0.1"
    (run / "checkpoints").mkdir(parents=True)
    samples = [{"time": 100.0, "cpu_s": 0.0}, {"time": 200.0, "cpu_s": 90.0}]
    (tmp_path / "rl-0.1.cpu.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    (run / "metrics.jsonl").write_text(json.dumps({"step": 20, "time": 150.0, "loss": 1.0}) + "\n")
    for step, expected in ((20, 45.0), (0, 0.0)):
        torch.save({"model": {}, "config": {}, "vocab": [], "step": step}, run / "checkpoints" / "last.pt")
        assert cpu_clock.resume_offset(run) == expected
        assert cpu_clock.main(["--resume-offset", str(run)]) == 0
        assert float(capsys.readouterr().out) == expected
