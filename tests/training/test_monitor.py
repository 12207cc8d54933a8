import json

import pytest

from agentsum.training.monitor import TrainingMonitor, format_duration


@pytest.mark.parametrize("live", [False, True])
def test_monitor_logs_every_n_steps_to_metrics_and_tensorboard(tmp_path, capsys, live):
    monitor = TrainingMonitor(tmp_path, max_steps=6, start_step=0, log_every=3, live=live)
    for step in range(1, 7):
        monitor.step(step, {"loss": float(step), "reward_sample": 0.3, "reward_greedy": 0.2}, tokens=100,
                     grad_norm=1.0, lr=1e-3)
    monitor.record(6, valid_nll=2.5)
    monitor.close()
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [3, 6, 6]
    assert rows[0]["loss"] == pytest.approx(2.0) and rows[1]["loss"] == pytest.approx(5.0)  # window means
    assert rows[0]["reward_sample"] == 0.3 and rows[2]["valid_nll"] == 2.5
    # each logged window carries what its rate was computed from (benchmarks sum these)
    assert rows[0]["tokens"] == 300 and rows[0]["steps"] == 3 and rows[0]["seconds"] > 0
    assert rows[0]["tokens_per_s"] == pytest.approx(rows[0]["tokens"] / rows[0]["seconds"])
    assert any((tmp_path / "tensorboard").glob("events.out.tfevents.*"))
    err = capsys.readouterr().err
    if not live:
        assert "step 3/6  loss 2.0000  reward 0.300/0.200 (sample/greedy)" in err


def test_format_duration():
    assert format_duration(3725.9) == "1:02:05"
    assert format_duration(-3) == "0:00:00"


def test_progress_shows_the_bound_that_stops_the_run(tmp_path, monkeypatch):
    import agentsum.training.monitor as monitor_module

    for name in "abc":
        (tmp_path / name).mkdir()
    clock = [1000.0]
    monkeypatch.setattr(monitor_module.time, "perf_counter", lambda: clock[0])
    capped = TrainingMonitor(tmp_path / "a", max_steps=200_000, start_step=0, log_every=10, live=False,
                             deadline=1000.0 + 300, tensorboard=False)
    clock[0] += 30  # 10 steps in 30 s: 200,000 steps would take days, the 5-minute cap comes first
    assert capped.position(10) == ("step 10", "elapsed 0:00:30/0:05:00")
    by_steps = TrainingMonitor(tmp_path / "b", max_steps=20, start_step=0, log_every=10, live=False,
                               deadline=clock[0] + 3600, tensorboard=False)
    clock[0] += 30  # 10 of 20 steps in 30 s: the step limit comes long before the hour
    assert by_steps.position(10) == ("step 10/20", "elapsed 0:00:30")
    uncapped = TrainingMonitor(tmp_path / "c", max_steps=20, start_step=0, log_every=10, live=False,
                               tensorboard=False)
    assert uncapped.position(5)[0] == "step 5/20"


def test_window_means_of_rewards_and_nll(tmp_path):
    monitor = TrainingMonitor(tmp_path, max_steps=4, start_step=0, log_every=2, live=False, tensorboard=False)
    for step, nll in zip(range(1, 5), (1.0, 3.0, 5.0, 9.0)):
        monitor.step(step, {"loss": nll + 1, "nll": nll, "rl": 0.5 * step}, tokens=10, grad_norm=1.0, lr=1e-3)
    monitor.close()
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["nll"] for r in rows] == [2.0, 7.0]  # means of (1, 3) and (5, 9), not the last step's value
    assert [r["rl"] for r in rows] == [0.75, 1.75]


def test_a_grad_norm_tensor_is_logged_as_a_number(tmp_path):
    """The trainer hands over clip_grad_norm_'s tensor, read only on the steps that log."""
    import torch

    monitor = TrainingMonitor(tmp_path, max_steps=3, start_step=0, log_every=3, tensorboard=False, live=False)
    for step, value in enumerate((1.0, 2.0, 3.5), 1):
        monitor.step(step, {"loss": 1.0}, tokens=10, grad_norm=torch.tensor(value), lr=1e-3)
    monitor.close()
    (row,) = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert row["grad_norm"] == 3.5 and isinstance(row["grad_norm"], float)
