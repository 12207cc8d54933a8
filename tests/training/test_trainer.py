"""Training end to end: overfitting, checkpoints and resume, and the command line."""

import json

import pytest
import torch

from agentsum.cli import main
from agentsum.config import load_config
from agentsum.data.batch import make_batch, round_up
from agentsum.data.vocab import Vocabulary
from agentsum.decoding.copying import to_words
from agentsum.decoding.search import SearchConfig, search
from agentsum.models.dca import DCA, DCAConfig
from agentsum.checkpoint import CheckpointError, load_model, read_checkpoint
from agentsum.training.objectives import MLE
from agentsum.training.trainer import Trainer
from conftest import synthetic_rows, write_jsonl

def test_tiny_model_overfits_eight_examples_and_greedy_reproduces_them():
    torch.manual_seed(0)
    docs = [
        [["the", "cat", "sat", "on", "the", "mat", "."], ["a", "dog", "ran", "zorp", "."]],
        [["big", "red", "house", "."], ["the", "tree", "quux", "fell", "."]],
        [["a", "bird", "sang", "."], ["small", "fish", "swam", "."]],
        [["the", "sun", "rose", "early", "."], ["cold", "wind", "blew", "."]],
        [["rain", "fell", "all", "day", "."], ["the", "river", "rose", "."]],
        [["the", "cat", "saw", "a", "bird", "."], ["blorb", "flew", "away", "."]],
        [["two", "men", "met", "."], ["they", "talked", "."]],
        [["the", "dog", "barked", "."], ["the", "cat", "hid", "."]],
    ]
    summaries = [["dog", "ran", "zorp", "."], ["tree", "quux", "fell", "."], ["bird", "sang", "."], ["wind", "blew", "."],
                 ["river", "rose", "."], ["blorb", "flew", "."], ["men", "talked", "."], ["cat", "hid", "."]]
    rare = {"zorp", "quux", "blorb"}  # OOV: only copying can produce them
    vocab = Vocabulary.build([[t for doc in docs for chunk in doc for t in chunk if t not in rare]])
    batch = make_batch(docs, vocab, summaries=summaries)
    model = DCA(DCAConfig(vocab_size=len(vocab), embedding_size=32, hidden_size=48, pointer="multi",
                          contextual_agent_attention=True))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    objective = MLE()
    for _ in range(300):
        loss, _ = objective(model, batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if loss.item() < 0.01:
            break
    assert loss.item() < 0.05
    model.eval()
    hyps = search(model, make_batch(docs, vocab), SearchConfig(beam_size=1, max_length=10, block_trigrams=False))
    words = to_words(hyps.tokens, hyps.copy_positions, make_batch(docs, vocab), vocab, unk_replace=False)
    assert words == summaries


def tiny_config(tmp_path, corpus, **overrides):
    items = [f"data.train={corpus}", f"data.valid={{path: {corpus}, start: 0, end: 4}}", f"train.run_dir={tmp_path / 'run'}"]
    items += [f"{k}={v}" for k, v in overrides.items()]
    return load_config("tiny", items)


def test_checkpoint_holds_everything_and_resume_continues_exactly(tmp_path):
    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(24))
    # Uninterrupted: 8 steps.
    full = Trainer(tiny_config(tmp_path / "a", corpus, **{"train.max_steps": 8, "train.valid_every": 4}))
    full.run()
    # Interrupted after 4 steps, then resumed from last.pt up to 8.
    first = Trainer(tiny_config(tmp_path / "b", corpus, **{"train.max_steps": 4, "train.valid_every": 4}))
    first.run()
    last = tmp_path / "b" / "run" / "checkpoints" / "last.pt"
    state = read_checkpoint(last)
    assert state["step"] == 4 and set(state) >= {"model", "optimizer", "config", "vocab", "step", "rng", "selection"}
    resumed = Trainer(tiny_config(tmp_path / "b", corpus, **{"train.max_steps": 8, "train.valid_every": 4}),
                      resume=str(last))
    assert resumed.step == 4
    resumed.run()
    for (name, p), q in zip(full.model.named_parameters(), resumed.model.parameters()):
        assert torch.allclose(p, q, atol=1e-6), name
    model, vocab, config, metadata = load_model(tmp_path / "b" / "run" / "checkpoints" / "last.pt")
    assert vocab == full.vocab and config.model["pointer"] == "multi"
    for (name, p), q in zip(model.named_parameters(), resumed.model.parameters()):
        assert torch.equal(p, q), name
    # inference keeps no second copy of the weights and no optimizer state
    assert metadata["step"] == 8 and not {"model", "optimizer", "scheduler", "rng"} & set(metadata)
    # a checkpoint in torch's legacy (non-zip) format cannot be memory-mapped: it is read whole
    legacy = tmp_path / "legacy.pt"
    torch.save(read_checkpoint(last), legacy, _use_new_zipfile_serialization=False)
    again, _, _, legacy_metadata = load_model(legacy)
    assert legacy_metadata["step"] == 8
    assert all(torch.equal(p, q) for p, q in zip(again.parameters(), resumed.model.parameters()))


def test_unreadable_checkpoints_give_clear_errors(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="not an agentsum checkpoint: not a PyTorch file"):
        load_model(bad)
    torch.save({"weights": torch.zeros(2)}, tmp_path / "foreign.pt")
    with pytest.raises(CheckpointError, match="missing"):
        load_model(tmp_path / "foreign.pt")
    with pytest.raises(CheckpointError, match="not found"):
        load_model(tmp_path / "absent.pt")


def test_cli_train_summarize_evaluate_lead3(tmp_path, capsys):
    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(16))
    test = write_jsonl(tmp_path / "test.jsonl", synthetic_rows(5, seed=1))
    run = tmp_path / "run"
    assert main(["train", "--config", "tiny", "--run-dir", str(run), "--set", f"data.train={corpus}",
                 "--set", f"data.valid={test}", "--set", "train.max_steps=6", "--set", "train.valid_every=3"]) == 0
    ckpt = run / "checkpoints" / "best.pt"
    assert ckpt.is_file() and (run / "checkpoints" / "last.pt").is_file()
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics if "valid_nll" in m] == [3, 6]
    capsys.readouterr()

    article = tmp_path / "article.txt"
    article.write_text(json.loads(open(test).readline())["article"], encoding="utf-8")
    assert main(["summarize", "--checkpoint", str(ckpt), str(article), "--beam", "2", "--max-length", "12"]) == 0
    captured = capsys.readouterr()
    summary = captured.out.strip().splitlines()
    assert len(summary) == 1 and 1 <= len(summary[0].split()) <= 12
    assert "summarized 1 document(s) in" in captured.err and "documents/s, beam 2" in captured.err

    out = tmp_path / "eval"
    assert main(["evaluate", "--checkpoint", str(ckpt), "--data", test, "--out", str(out), "--max-length", "12"]) == 0
    scores = json.loads((out / "scores.json").read_text())
    assert scores["n"] == 5 and 0 <= scores["rouge1"] <= 100 and scores["beam_size"] == 3
    assert len((out / "predictions.txt").read_text().splitlines()) == 5
    assert "ROUGE-1" in capsys.readouterr().out

    assert main(["lead3", "--data", test, "--out", str(tmp_path / "lead3")]) == 0
    lead = json.loads((tmp_path / "lead3" / "scores.json").read_text())
    assert lead["n"] == 5 and lead["rouge1"] > 30  # the summaries restate article sentences


def test_cli_reports_data_errors_without_traceback(tmp_path, capsys):
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"article": "a b c .", "summary": "a ."}\n{"article": "x"\n', encoding="utf-8")
    assert main(["lead3", "--data", str(broken)]) == 2
    err = capsys.readouterr().err
    assert "broken.jsonl:2" in err and "Traceback" not in err


class _NaNAt:
    """Wraps an objective so that one step's loss is NaN."""

    def __init__(self, objective, bad_call):
        self.objective, self.bad_call, self.calls = objective, bad_call, 0
        self.selection = objective.selection

    def __call__(self, model, batch):
        loss, stats = self.objective(model, batch)
        self.calls += 1
        return (loss * float("nan") if self.calls == self.bad_call else loss), stats


def test_nonfinite_loss_is_skipped_or_stops_without_touching_checkpoints(tmp_path):
    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(16))
    skip = Trainer(tiny_config(tmp_path / "skip", corpus, **{"train.max_steps": 4, "train.valid_every": 2}))
    skip.objective = _NaNAt(skip.objective, bad_call=3)
    skip.run()
    assert skip.step == 4 and all(torch.isfinite(p).all() for p in skip.model.parameters())

    stop = Trainer(tiny_config(tmp_path / "stop", corpus, **{"train.max_steps": 4, "train.valid_every": 2,
                                                          "train.on_nonfinite": "stop"}))
    stop.objective = _NaNAt(stop.objective, bad_call=3)
    with pytest.raises(FloatingPointError, match="step 2: non-finite loss"):
        stop.run()
    last = read_checkpoint(tmp_path / "stop" / "run" / "checkpoints" / "last.pt")
    assert last["step"] == 2 and all(torch.isfinite(v).all() for v in last["model"].values())


def test_last_n_validation_checkpoints_are_kept(tmp_path):
    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(16))
    Trainer(tiny_config(tmp_path, corpus, **{"train.max_steps": 6, "train.valid_every": 2,
                                             "train.keep_checkpoints": 2})).run()
    kept = sorted(p.name for p in (tmp_path / "run" / "checkpoints").glob("step-*.pt"))
    assert kept == ["step-00000004.pt", "step-00000006.pt"]


def test_skip_bad_counts_and_reports_bad_lines(tmp_path, capsys):
    data = tmp_path / "mixed.jsonl"
    data.write_text('{"article": "The cat sat. It ran.", "summary": "the cat sat ."}\nnot json\n'
                    '{"article": "A dog barked.", "summary": "a dog barked ."}\n', encoding="utf-8")
    assert main(["lead3", "--data", str(data), "--skip-bad"]) == 0
    captured = capsys.readouterr()
    assert "(F1, 2 documents)" in captured.out
    assert "skipped 1 bad line(s)" in captured.err and "mixed.jsonl:2" in captured.err


def test_bf16_on_a_cpu_without_bf16_kernels_says_it_is_emulated(tmp_path, monkeypatch, capsys):
    import agentsum.training.trainer as train_module

    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(8))
    monkeypatch.setattr(train_module, "cpu_has_bf16", lambda: False)
    Trainer(tiny_config(tmp_path, corpus, **{"train.precision": "bf16"}))  # DCA: its LSTMs run in float32
    assert "bf16 matrix products are emulated, slower than fp32" in capsys.readouterr().err


def test_bf16_is_refused_on_a_gpu_without_native_bf16(tmp_path, monkeypatch):
    """A V100 as torch.cuda describes it: the trainer refuses before it touches the GPU."""
    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(8))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: including_emulation)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (7, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Tesla V100-SXM2-16GB")
    with pytest.raises(ValueError, match=r"native bfloat16.*Tesla V100-SXM2-16GB has 7\.0.*train.precision=fp32"):
        Trainer(tiny_config(tmp_path, corpus, **{"train.precision": "bf16", "train.device": "cuda"}))


@pytest.mark.parametrize("model", ["dca", "transformer_pg"])
def test_bf16_autocast_trains_on_cpu_close_to_fp32(tmp_path, model):
    """On every CPU: DCA's LSTMs run in float32 (no bf16 LSTM kernel is needed)."""
    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(16))
    losses = {}
    for precision in ("fp32", "bf16"):
        config = tiny_config(tmp_path / precision, corpus, **{"train.max_steps": 4, "train.valid_every": 4,
                                                               "train.log_every": 1, "train.precision": precision})
        if model == "transformer_pg":
            config.model = {"type": "transformer_pg", "d_model": 32, "heads": 2, "d_ff": 64, "encoder_layers": 1,
                            "decoder_layers": 1}
        trainer = Trainer(config)
        trainer.run()
        assert all(p.dtype == torch.float32 for p in trainer.model.parameters())
        rows = [json.loads(line) for line in (tmp_path / precision / "run" / "metrics.jsonl").read_text().splitlines()]
        losses[precision] = [r["loss"] for r in rows if "loss" in r]
    assert len(losses["bf16"]) == 4 and all(torch.isfinite(torch.tensor(losses["bf16"])))
    # same data, same initial weights: bf16 matmuls change the loss by well under 2%
    assert losses["bf16"][0] == pytest.approx(losses["fp32"][0], rel=0.02)
    assert losses["bf16"][0] != losses["fp32"][0]  # autocast really ran in bf16


def test_pad_multiple_defaults_to_8_under_bf16_and_rounds_training_batches(tmp_path, monkeypatch):
    import agentsum.training.trainer as train_module

    monkeypatch.setattr(train_module, "cpu_has_bf16", lambda: True)  # batches only: no bf16 kernel runs
    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(8))
    for precision, setting, expected in (("fp32", "null", 1), ("bf16", "null", 8), ("fp32", 4, 4)):
        config = tiny_config(tmp_path / f"{precision}{setting}", corpus,
                             **{"train.precision": precision, "train.pad_multiple": setting})
        trainer = Trainer(config)
        assert trainer.pad_multiple == expected
        (micro,) = trainer._micro_batches(list(range(4)))
        batch = micro.batch
        assert micro.weight == 1.0 and micro.target_tokens == batch.num_target_tokens()
        assert micro.tokens == batch.num_source_tokens() + batch.num_target_tokens()
        assert batch.src_ids.size(-1) % expected == 0 and batch.tgt_out.size(1) % expected == 0
        longest = max(len(trainer.train_docs[i].summary) for i in range(4)) + 1
        assert batch.tgt_out.size(1) == round_up(longest, expected)
        assert batch.num_target_tokens() == sum(len(trainer.train_docs[i].summary) + 1 for i in range(4))
    with pytest.raises(ValueError, match="train.pad_multiple"):
        Trainer(tiny_config(tmp_path / "bad", corpus, **{"train.pad_multiple": 0}))


def test_pad_multiple_beyond_max_positions_is_a_clear_error(tmp_path):
    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(8))
    config = tiny_config(tmp_path, corpus, **{"train.precision": "bf16", "data.max_summary_tokens": 32})
    config.model = {"type": "transformer_pg", "d_model": 16, "heads": 2, "d_ff": 32, "encoder_layers": 1,
                    "decoder_layers": 1, "max_positions": 36}
    with pytest.raises(ValueError, match="40 positions .* exceed model.max_positions 36"):
        Trainer(config)
    config.train.pad_multiple = 1
    Trainer(config)  # 33 positions fit


def test_prepared_ahead_keeps_the_order_and_prepares_the_next_item_meanwhile():
    import threading

    from agentsum.training.trainer import prepared_ahead

    started = {k: threading.Event() for k in range(4)}

    def prepare(k):
        started[k].set()
        return k * 10

    seen = []
    for item, prepared in prepared_ahead(iter(range(4)), prepare, enabled=True):
        seen.append((item, prepared))
        if item < 3:  # the next item is being prepared while this one is worked on
            assert started[item + 1].wait(timeout=30)
    assert seen == [(0, 0), (1, 10), (2, 20), (3, 30)]
    assert list(prepared_ahead(iter(range(3)), prepare, enabled=False)) == [(0, 0), (1, 10), (2, 20)]
    assert list(prepared_ahead(iter([]), prepare, enabled=True)) == []


def test_batches_built_in_a_worker_thread_train_the_same_model(tmp_path):
    """What a GPU run does (the next step's batches are built while the device computes) gives the
    parameters of the plain loop."""
    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(16))
    models = []
    for prefetch in (False, True):
        trainer = Trainer(tiny_config(tmp_path / str(prefetch), corpus, **{"train.max_steps": 5,
                                                                          "train.valid_every": 5}))
        assert trainer.prefetch is False  # the CPU default
        trainer.prefetch = prefetch
        trainer.run()
        models.append(trainer.model.state_dict())
    for name, tensor in models[0].items():
        assert torch.equal(tensor, models[1][name]), name


@pytest.mark.parametrize("signum", ["SIGTERM", "SIGINT"])
def test_a_signal_inside_a_step_stops_after_it_and_resume_matches_an_uninterrupted_run(tmp_path, signum):
    """The signal arrives inside step 3's forward pass, after its dropout masks were drawn: the run
    finishes the step and saves last.pt there, so resuming gives the uninterrupted run's weights to
    the last bit (saving part-way through the step would resume with the generators advanced)."""
    import os
    import signal

    # as in a terminal: a test run started in the background (nohup, `&`) inherits SIGINT ignored
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(24))
    settings = {"train.max_steps": 8, "train.valid_every": 100, "train.tensorboard": "false"}
    full = Trainer(tiny_config(tmp_path / "a", corpus, **settings))
    full.run()
    stopped = Trainer(tiny_config(tmp_path / "b", corpus, **settings))
    objective, calls = stopped.objective, []

    def signalled(model, batch):
        calls.append(1)
        result = objective(model, batch)
        if len(calls) == 3:
            os.kill(os.getpid(), getattr(signal, signum))
        return result

    stopped.objective = signalled
    try:
        with pytest.raises(KeyboardInterrupt):
            stopped.run()
        assert {s: signal.getsignal(s) for s in before} == before  # the handlers are put back
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(calls) == 3  # no step after the signal
    last = tmp_path / "b" / "run" / "checkpoints" / "last.pt"
    assert read_checkpoint(last)["step"] == 3
    resumed = Trainer(tiny_config(tmp_path / "b", corpus, **settings), resume=str(last))
    resumed.run()
    for (name, p), q in zip(full.model.named_parameters(), resumed.model.parameters()):
        assert torch.equal(p, q), name


def test_sigterm_saves_last_checkpoint_and_resume_goes_on_from_it(tmp_path):
    """``kill``, ``timeout`` and a cluster's preemption send SIGTERM: the run saves last.pt at the step it
    reached, as Ctrl-C does, instead of losing everything since the last validation."""
    import os
    import signal
    import subprocess
    import sys
    import time

    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(24))
    run_dir = tmp_path / "run"
    argv = [sys.executable, "-m", "agentsum", "train", "--config", "tiny", "--set", f"data.train={corpus}",
            "--set", f"train.run_dir={run_dir}", "--set", "train.max_steps=1000000", "--set", "train.valid_every=1000000",
            "--set", "train.log_every=1", "--set", "train.tensorboard=false"]
    # started as a non-interactive shell starts `cmd &`: SIGINT ignored, so only SIGTERM can stop it cleanly
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    metrics = run_dir / "metrics.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if metrics.exists() and sum(1 for line in metrics.read_text().splitlines() if '"loss"' in line) >= 3:
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()
    os.kill(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    assert "interrupted" in out + err
    state = read_checkpoint(run_dir / "checkpoints" / "last.pt")
    assert state["step"] >= 3 and "optimizer" in state
    resumed = Trainer(load_config("tiny", [f"data.train={corpus}", f"train.run_dir={run_dir}",
                                           f"train.max_steps={state['step'] + 2}", "train.tensorboard=false"]),
                      resume=str(run_dir / "checkpoints" / "last.pt"))
    assert resumed.step == state["step"]
    resumed.run()
    assert read_checkpoint(run_dir / "checkpoints" / "last.pt")["step"] == state["step"] + 2


def test_resuming_a_checkpoint_of_another_epoch_order_warns_that_the_batches_differ(tmp_path, capsys):
    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(24))
    Trainer(tiny_config(tmp_path, corpus, **{"train.max_steps": 2, "train.valid_every": 2})).run()
    last = tmp_path / "run" / "checkpoints" / "last.pt"
    state = read_checkpoint(last)
    assert state["epoch_order"] == "pcg64-sort"
    capsys.readouterr()
    Trainer(tiny_config(tmp_path, corpus, **{"train.max_steps": 3}), resume=str(last))
    assert "epoch order" not in capsys.readouterr().err
    del state["epoch_order"]  # as saved before the order was recorded
    old = tmp_path / "old.pt"
    torch.save(state, old)
    resumed = Trainer(tiny_config(tmp_path, corpus, **{"train.max_steps": 3}), resume=str(old))
    assert resumed.step == 2
    err = capsys.readouterr().err
    assert "trained with the epoch order 'random.shuffle'" in err and "'pcg64-sort'" in err


def test_training_with_auto_agents_mixes_agent_counts_and_says_so(tmp_path, capsys):
    """data.agents: auto trains on batches whose documents have different agent counts."""
    rows = synthetic_rows(8)
    for i, row in enumerate(rows):  # documents of one to five sentences: one to five 12-token agents
        row["article"] = ". ".join(row["article"].split(". ")[: 1 + i % 5])
    corpus = write_jsonl(tmp_path / "train.jsonl", rows)
    config = load_config("tiny", [f"data.train={corpus}", "data.valid=null", "data.agents=auto", "data.agent_tokens=12",
                                  "train.max_steps=3", f"train.run_dir={tmp_path / 'run'}", "train.tensorboard=false"])
    trainer = Trainer(config)
    counts = {len(doc.agents) for doc in trainer.train_docs}
    assert len(counts) >= 3  # documents of different agent counts share the batches
    trainer.run()
    assert "agents: auto (12 tokens each)" in capsys.readouterr().err
    assert read_checkpoint(tmp_path / "run" / "checkpoints" / "last.pt")["step"] == 3


def test_init_from_takes_a_shipped_models_name(tiny_run, tmp_path, monkeypatch):
    """train.init_from: calls starts from the shipped calls model (qmsum-m6 does): a name that is not
    a file resolves to the shipped file; the weights and vocabulary are then that file's."""
    import agentsum.checkpoint as checkpoint

    base = read_checkpoint(tiny_run["checkpoint"])
    monkeypatch.setitem(checkpoint.SHIPPED_MODELS, "tinyship",
                        checkpoint.ShippedModel("tinyship", "pretrained/tinyship.pt", "tests", "synthetic"))
    real_path = checkpoint.shipped_path
    monkeypatch.setattr(checkpoint, "shipped_path",
                        lambda name: tiny_run["checkpoint"] if name == "tinyship" else real_path(name))
    monkeypatch.chdir(tmp_path)  # no file called tinyship here: the name is the shipped model's
    overrides = [f"data.train={tiny_run['train']}", f"data.valid={tiny_run['test']}", "train.max_steps=1",
                 f"train.run_dir={tmp_path / 'run'}", "train.init_from=tinyship"]
    trainer = Trainer(load_config("tiny", overrides))
    for name, weight in trainer.model.state_dict().items():
        torch.testing.assert_close(weight, base["model"][name].to(weight.dtype))
    assert list(trainer.vocab.itos) == list(base["vocab"])
    # the real shipped calls model is a name too; its weights do not fit the tiny model, and the
    # message names the file it resolved to
    if real_path("calls").is_file():
        with pytest.raises(CheckpointError, match="ectsum-en.pt: its weights do not fit"):
            Trainer(load_config("tiny", overrides[:-1] + ["train.init_from=calls", f"train.run_dir={tmp_path / 'c'}"]))
    with pytest.raises(CheckpointError, match="no-such-model not found"):
        Trainer(load_config("tiny", overrides[:-1] + ["train.init_from=no-such-model", f"train.run_dir={tmp_path / 'n'}"]))
