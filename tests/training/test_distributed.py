"""Distributed training through torchrun (gloo on CPU) gives the single-process result."""

import os
import subprocess
import sys

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


def _assert_same_parameters(a, b, atol=1e-5):
    assert a.keys() == b.keys()
    for name in a:
        assert torch.allclose(a[name], b[name], atol=atol), name


# SGD keeps the comparison exact up to float rounding; Adam's first steps move every parameter by
# about lr * sign(gradient), which turns rounding noise in near-zero gradients into lr-sized moves.
def test_two_gloo_processes_equal_one_process_with_the_whole_batch(tmp_path):
    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(20))  # 20 docs: the last batch is short
    single = _train(tmp_path, corpus, tmp_path / "one", 1, steps=4)
    double = _train(tmp_path, corpus, tmp_path / "two", 2, steps=4)
    assert single["step"] == double["step"] == 4
    _assert_same_parameters(single["model"], double["model"])
    # and the same with gradient accumulation in each process
    accumulated = _train(tmp_path, corpus, tmp_path / "acc", 2, steps=4, extra=["--set", "train.accumulate=2"])
    _assert_same_parameters(single["model"], accumulated["model"])


def test_resume_from_two_processes_into_one(tmp_path):
    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(16))
    straight = _train(tmp_path, corpus, tmp_path / "straight", 1, steps=4)
    first = _train(tmp_path, corpus, tmp_path / "split", 2, steps=2)
    assert first["step"] == 2
    resumed = _train(tmp_path, corpus, tmp_path / "split", 1, steps=4, resume=tmp_path / "split" / "checkpoints" / "last.pt")
    assert resumed["step"] == 4
    _assert_same_parameters(straight["model"], resumed["model"])


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
