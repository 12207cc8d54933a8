"""Learning-rate schedules (agentsum.training.schedule)."""

import pytest
import torch

from agentsum.training.schedule import build_scheduler, noam, noam_vaswani


def test_noam_warms_up_linearly_and_peaks_at_peak_lr():
    assert noam(1, warmup=4000, peak_lr=5e-4) == pytest.approx(5e-4 / 4000)
    assert noam(2000, warmup=4000, peak_lr=5e-4) == pytest.approx(2.5e-4)
    assert noam(4000, warmup=4000, peak_lr=5e-4) == pytest.approx(5e-4)
    assert noam(16000, warmup=4000, peak_lr=5e-4) == pytest.approx(2.5e-4)  # sqrt(4000 / 16000) = 1/2
    assert noam(0) == noam(1)


def test_noam_is_monotone_up_then_down():
    lrs = [noam(s, warmup=100, peak_lr=1.0) for s in range(1, 1001)]
    peak = max(range(len(lrs)), key=lrs.__getitem__)
    assert peak + 1 == 100 and lrs[peak] == pytest.approx(1.0)
    assert all(a < b for a, b in zip(lrs[:peak], lrs[1: peak + 1]))
    assert all(a > b for a, b in zip(lrs[peak:], lrs[peak + 1:]))


def test_vaswani_form_is_a_rescaled_noam():
    for step in (1, 10, 4000, 50_000):
        expected = noam(step, 4000, (512 * 4000) ** -0.5)
        assert noam_vaswani(step, d_model=512, warmup=4000) == pytest.approx(expected, rel=1e-12)
    assert noam_vaswani(4000, 512, 4000) == pytest.approx(6.9877e-4, rel=1e-4)


def test_build_scheduler_multiplies_the_base_lr_from_the_first_update():
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=5e-4)
    sched = build_scheduler(opt, "noam", warmup=4)
    seen = []
    for _ in range(8):
        seen.append(opt.param_groups[0]["lr"])  # the lr the next update runs with
        opt.step()
        sched.step()
    assert seen == pytest.approx([noam(k, 4, 5e-4) for k in range(1, 9)])
    assert max(seen) == pytest.approx(5e-4) and seen.index(max(seen)) == 3  # the 4th update


def test_build_scheduler_constant_and_errors():
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    assert build_scheduler(opt, "none", 10) is None and build_scheduler(opt, "constant", 10) is None
    with pytest.raises(ValueError):
        build_scheduler(opt, "cosine", 10)
    with pytest.raises(ValueError):
        build_scheduler(opt, "noam", 0)


def test_linear_warms_up_then_falls_to_zero_just_after_the_last_update():
    from agentsum.training.schedule import linear

    lrs = [linear(k, warmup=4, total=10, peak_lr=2.0) for k in range(1, 12)]
    assert lrs[:4] == pytest.approx([0.5, 1.0, 1.5, 2.0])
    assert lrs[4:10] == pytest.approx([2.0 * (11 - k) / 7 for k in range(5, 11)])  # straight down
    assert lrs[9] > 0 and lrs[10] == 0.0  # the 10th update still moves; none after
    assert [linear(k, warmup=0, total=3) for k in (1, 2, 3)] == pytest.approx([3 / 4, 2 / 4, 1 / 4])  # no warm-up
    with pytest.raises(ValueError):
        linear(1, warmup=10, total=10)


def test_build_scheduler_linear_runs_over_the_given_number_of_updates():
    from agentsum.training.schedule import linear

    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    sched = build_scheduler(opt, "linear", warmup=2, total=6)
    seen = []
    for _ in range(6):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert seen == pytest.approx([linear(k, 2, 6, 0.1) for k in range(1, 7)])
    with pytest.raises(ValueError, match="max_steps"):
        build_scheduler(opt, "linear", warmup=2)
    with pytest.raises(ValueError, match="warm-up"):
        build_scheduler(opt, "linear", warmup=6, total=6)


def test_a_warm_up_as_long_as_the_run_is_a_config_error(tmp_path):
    from agentsum.config import ConfigError, load_config
    from agentsum.training.trainer import Trainer

    from conftest import FIXTURES

    config = load_config("tiny", [f"data.train={FIXTURES / 'chats.jsonl'}", f"train.run_dir={tmp_path / 'run'}",
                                  "train.schedule=linear", "train.warmup=50", "train.max_steps=50"])
    with pytest.raises(ConfigError, match="train.warmup 50"):
        Trainer(config)
    config.train.warmup = 10  # a warm-up shorter than the run is fine; the rate falls over max_steps
    trainer = Trainer(config)
    assert trainer.scheduler.lr_lambdas[0](49) == pytest.approx(1 / 41)
