"""Distributed training through torchrun (gloo on CPU) gives the single-process result."""

import json
import os
import subprocess
import sys
from datetime import timedelta

import pytest
import torch

from agentsum.data.dataset import epoch_order
from agentsum.checkpoint import read_checkpoint
from conftest import synthetic_rows, write_jsonl


def _train(tmp_path, corpus, run, nproc, steps, extra=(), resume=None):
    args = ["train", "--config", "tiny", "--run-dir", str(run), "--set", f"data.train={corpus}",
            "--set", "data.valid=null", "--set", f"train.max_steps={steps}", "--set", "train.valid_every=2",
            "--set", "train.batch_size=8", "--set", "train.threads=1", "--set", "train.lr=0.05", "--set", "train.optimizer=sgd", *extra]
    if resume:
        args += ["--resume", str(resume)]
    if nproc > 1:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc), "--master_port",
               str(29500 + os.getpid() % 1000), "-m", "agentsum.cli", *args]
    else:
        cmd = [sys.executable, "-m", "agentsum.cli", *args]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return read_checkpoint(run / "checkpoints" / "last.pt")


def _logged_losses(run) -> list[float]:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [r["loss"] for r in rows if "loss" in r]


def _assert_same_parameters(a, b, atol=1e-5):
    assert a.keys() == b.keys()
    for name in a:
        assert torch.allclose(a[name], b[name], atol=atol), name


# SGD keeps the comparison exact up to float rounding; Adam's first steps move every parameter by
# about lr * sign(gradient), which turns rounding noise in near-zero gradients into lr-sized moves.
def test_two_gloo_processes_equal_one_process_with_the_whole_batch(tmp_path):
    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(20))  # 20 docs: the last batch is short
    every_step = ["--set", "train.log_every=1"]
    single = _train(tmp_path, corpus, tmp_path / "one", 1, steps=4, extra=every_step)
    double = _train(tmp_path, corpus, tmp_path / "two", 2, steps=4, extra=every_step)
    assert single["step"] == double["step"] == 4
    _assert_same_parameters(single["model"], double["model"])
    # the logged loss is the whole batch's, averaged over both processes, not rank 0's half
    assert _logged_losses(tmp_path / "two") == pytest.approx(_logged_losses(tmp_path / "one"), rel=1e-5)
    # and the same with gradient accumulation in each process
    accumulated = _train(tmp_path, corpus, tmp_path / "acc", 2, steps=4, extra=["--set", "train.accumulate=2", *every_step])
    _assert_same_parameters(single["model"], accumulated["model"])
    assert _logged_losses(tmp_path / "acc") == pytest.approx(_logged_losses(tmp_path / "one"), rel=1e-5)


def test_resume_from_two_processes_into_one(tmp_path):
    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(16))
    straight = _train(tmp_path, corpus, tmp_path / "straight", 1, steps=4)
    first = _train(tmp_path, corpus, tmp_path / "split", 2, steps=2)
    assert first["step"] == 2
    resumed = _train(tmp_path, corpus, tmp_path / "split", 1, steps=4, resume=tmp_path / "split" / "checkpoints" / "last.pt")
    assert resumed["step"] == 4
    _assert_same_parameters(straight["model"], resumed["model"])


def test_processes_draw_their_own_dropout_and_resume_exactly_on_as_many_processes(tmp_path):
    """Each process is seeded with train.seed + rank; every process's generator states are in the
    checkpoint, so a 2-process run resumed on 2 processes continues as if never stopped."""
    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(16))
    dropout = ["--set", "model.dropout=0.3"]
    straight = _train(tmp_path, corpus, tmp_path / "straight", 2, steps=4, extra=dropout)
    first = _train(tmp_path, corpus, tmp_path / "split", 2, steps=2, extra=dropout)
    ranks = first["rng_ranks"]
    assert len(ranks) == 2 and not torch.equal(ranks[0]["torch"], ranks[1]["torch"])
    assert torch.equal(first["rng"]["torch"], ranks[0]["torch"])
    resumed = _train(tmp_path, corpus, tmp_path / "split", 2, steps=4, extra=dropout,
                     resume=tmp_path / "split" / "checkpoints" / "last.pt")
    assert resumed["step"] == 4
    _assert_same_parameters(straight["model"], resumed["model"], atol=1e-6)


def test_the_minutes_cap_stops_every_process_at_the_same_step(tmp_path):
    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(16))
    state = _train(tmp_path, corpus, tmp_path / "capped", 2, steps=100_000, extra=["--set", "train.max_minutes=0.002"])
    assert 1 <= state["step"] < 100_000  # both processes left the loop together (no hang in a collective)


def test_setup_gives_the_process_group_its_timeout_and_a_store_of_its_restart_round(monkeypatch):
    import torch.distributed as dist

    from agentsum.training import distributed

    calls, store = [], dist.HashStore()
    monkeypatch.setattr(distributed.dist, "is_initialized", lambda: False)
    monkeypatch.setattr(distributed.dist, "init_process_group", lambda **kw: calls.append(kw))
    monkeypatch.setattr(distributed, "rendezvous", lambda url, rank, world, timeout: iter([(store, rank, world)]))
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "3")
    ctx = distributed.setup("cpu", timeout_minutes=90)
    (call,) = calls
    assert (call["backend"], call["rank"], call["world_size"], call["timeout"]) == ("gloo", 1, 2, timedelta(minutes=90))
    assert (ctx.rank, ctx.world_size, ctx.enabled) == (1, 2, True)
    # the process group's keys live under the round's prefix: a restarted group never reads the
    # addresses its dead predecessor wrote under the same key
    call["store"].set("default_pg/0", "new address")
    assert store.get("agentsum/round-3/default_pg/0") == b"new address"
    assert not store.check(["default_pg/0"])


def test_the_trainer_passes_train_dist_timeout_minutes(tmp_path, monkeypatch):
    from agentsum.config import load_config
    from agentsum.training import distributed
    from agentsum.training.trainer import Trainer

    seen = []

    def setup(device, timeout_minutes):
        seen.append(timeout_minutes)
        raise RuntimeError("stop here")

    monkeypatch.setattr(distributed, "setup", setup)
    with pytest.raises(RuntimeError, match="stop here"):
        Trainer(load_config("tiny", ["train.dist_timeout_minutes=25", f"train.run_dir={tmp_path}"]))
    assert seen == [25]
    assert load_config("tiny").train.dist_timeout_minutes == 60


def _recording_dist(monkeypatch, barrier_error=None):
    from agentsum.training import distributed

    calls = []

    def barrier():
        calls.append("barrier")
        if barrier_error is not None:
            raise barrier_error

    monkeypatch.setattr(distributed.dist, "is_initialized", lambda: "destroy" not in calls)
    monkeypatch.setattr(distributed.dist, "barrier", barrier)
    monkeypatch.setattr(distributed.dist, "destroy_process_group", lambda: calls.append("destroy"))
    return distributed, calls


def test_teardown_meets_the_other_processes_before_destroying_the_group_on_a_clean_end(monkeypatch):
    distributed, calls = _recording_dist(monkeypatch)
    distributed.teardown()
    assert calls == ["barrier", "destroy"]
    distributed.teardown()  # once left, a second call does nothing
    assert calls == ["barrier", "destroy"]


def test_teardown_after_an_error_does_not_wait_and_a_failed_barrier_still_destroys(monkeypatch):
    distributed, calls = _recording_dist(monkeypatch)
    distributed.teardown(clean=False)
    assert calls == ["destroy"]
    # what gloo's barrier raises when a peer has already destroyed its group: a plain RuntimeError
    distributed, calls = _recording_dist(monkeypatch, barrier_error=RuntimeError("Connection closed by peer"))
    distributed.teardown()
    assert calls == ["barrier", "destroy"]


def test_train_frees_the_trainer_before_teardown_and_says_whether_every_process_ends_so(tmp_path, monkeypatch,
                                                                                          request):
    import gc
    import signal

    from agentsum.config import load_config
    from agentsum.training import distributed, trainer as trainer_module

    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(16))
    seen = []

    def teardown(clean=True):
        # no collection here: a trainer left in an uncollected reference cycle is still counted
        seen.append((clean, sum(type(o) is trainer_module.Trainer for o in gc.get_objects())))

    def train(run: str, max_steps: int = 2):
        trainer_module.train(load_config("tiny", [f"data.train={corpus}", "data.valid=null",
                                                  f"train.run_dir={tmp_path / run}", f"train.max_steps={max_steps}",
                                                  "train.valid_every=2", "train.tensorboard=false"]))

    monkeypatch.setattr(distributed, "teardown", teardown)
    # automatic collection off: the trainer's reference cycles are freed by train() or not at all
    if gc.isenabled():
        gc.disable()
        request.addfinalizer(gc.enable)
    train("finished")
    # the trainer (and the DDP wrapper holding the process group) is gone when the group is destroyed
    assert seen == [(True, 0)]

    # a signal stop: every process finishes its step, saves and meets the others, then leaves together
    real_init = trainer_module.Trainer.__init__

    def signalled_init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        objective = self.objective

        def signalled(model, batch):
            result = objective(model, batch)
            os.kill(os.getpid(), signal.SIGUSR1)
            return result

        self.objective = signalled

    monkeypatch.setattr(trainer_module.Trainer, "__init__", signalled_init)
    with pytest.raises(trainer_module.StoppedTogether):
        train("stopped", max_steps=50)
    assert seen[-1] == (True, 0)
    monkeypatch.setattr(trainer_module.Trainer, "__init__", real_init)

    # an error: this process leaves without waiting for the others
    def failing_run(self):
        raise RuntimeError("boom")

    monkeypatch.setattr(trainer_module.Trainer, "run", failing_run)
    with pytest.raises(RuntimeError, match="boom"):
        train("failed")
    assert seen[-1][0] is False


def test_ddp_does_not_rebroadcast_buffers(tmp_path):
    import torch.distributed as dist

    from agentsum.models.transformer_pg import TransformerPG, TransformerPGConfig
    from agentsum.training import distributed

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        model = TransformerPG(TransformerPGConfig(vocab_size=20, d_model=8, heads=2, d_ff=16, encoder_layers=1,
                                                  decoder_layers=1))
        wrapped = distributed.wrap(model, distributed.DistContext(0, 2, 0, torch.device("cpu")))
        assert wrapped.module is model and wrapped.broadcast_buffers is False
    finally:
        dist.destroy_process_group()


def test_bucketed_epochs_hold_every_document_exactly_once():
    lengths = [(i * 37) % 101 for i in range(103)]
    for epoch in range(3):
        batches = epoch_order(lengths, batch_size=8, seed=5, epoch=epoch, window=4)
        flat = [i for b in batches for i in b]
        assert sorted(flat) == list(range(103))
        assert sorted(len(b) for b in batches) == [7] + [8] * 12  # 103 = 12 x 8 + 7
    assert epoch_order(lengths, 8, 5, 0, 4) != epoch_order(lengths, 8, 5, 1, 4)  # reshuffled each epoch
    # inside a bucket window, batches hold documents of similar length
    batches = epoch_order(lengths, batch_size=8, seed=5, epoch=0, window=13)
    spread = sum(max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in batches) / len(batches)
    assert spread < 20
