"""Shipped models by name: ``--model dialogue|calls`` for summarize, evaluate and serve,
``Summarizer(NAME)``, and ``agentsum models``.

The earnings-call model (``calls``) may or may not be in the installation: its tests point the
registry at a tiny exported checkpoint, or at a file that is certainly missing, and the one check
against the real installation runs only while the file is absent.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from agentsum import checkpoint as ckpt
from agentsum.checkpoint import SHIPPED_MODELS, CheckpointError, checkpoint_path, export_inference
from agentsum.cli import main

torch.set_num_threads(1)

DIALOGUE = "Amanda: I baked cookies. Do you want some?\nJerry: Sure!\nAmanda: I'll bring you some tomorrow :-)\n"
ARTICLE = "The Fox saw a cat near the Tower. The owl met a dog near the river."


@pytest.fixture
def calls_here(tiny_run, tmp_path, monkeypatch) -> Path:
    """The ``calls`` model installed: the registry's file is a tiny exported checkpoint."""
    exported = tmp_path / "pretrained" / "ectsum-en.pt"
    export_inference(tiny_run["checkpoint"], exported)
    real = ckpt.shipped_path
    monkeypatch.setattr(ckpt, "shipped_path", lambda name: exported if name == "calls" else real(name))
    return exported


@pytest.fixture
def calls_missing(monkeypatch) -> str:
    """The ``calls`` model absent from the installation, whether or not the real file is there."""
    missing = "pretrained/no-such-model.pt"
    monkeypatch.setitem(SHIPPED_MODELS, "calls", dataclasses.replace(SHIPPED_MODELS["calls"], file=missing))
    return missing


@pytest.fixture
def article(tmp_path) -> str:
    path = tmp_path / "article.txt"
    path.write_text(ARTICLE, encoding="utf-8")
    return str(path)


def assert_clean_error(rc: int, err: str, *needles: str) -> None:
    assert "Traceback" not in err, err
    assert rc == 2, err
    for needle in needles:
        assert needle in err, (needle, err)


# ------------------------------------------------------------------------------------------ the registry


def test_the_registry_names_both_models_with_their_files_and_corpora():
    assert set(SHIPPED_MODELS) == {"dialogue", "calls"}
    assert SHIPPED_MODELS["dialogue"].file == ckpt.DEFAULT_MODEL == "pretrained/samsum-en.pt"
    assert SHIPPED_MODELS["calls"].file == "pretrained/ectsum-en.pt"
    assert SHIPPED_MODELS["dialogue"].corpus == "SAMSum" and SHIPPED_MODELS["calls"].corpus == "ECTSum"
    for name, model in SHIPPED_MODELS.items():
        assert model.name == name and model.purpose
        assert ckpt.shipped_path(name).as_posix().endswith("agentsum/" + model.file)


def test_names_resolve_to_the_shipped_files():
    assert checkpoint_path(None) == checkpoint_path("dialogue") == ckpt.default_checkpoint()
    assert checkpoint_path("runs/x/best.pt") == Path("runs/x/best.pt")  # anything else is a path
    with pytest.raises(CheckpointError, match="no shipped model is called 'nope'"):
        ckpt.shipped_checkpoint("nope")


def test_calls_resolves_when_installed(calls_here):
    assert checkpoint_path("calls") == ckpt.shipped_checkpoint("calls") == calls_here


def test_a_missing_shipped_model_names_its_file_and_checkpoint(calls_missing):
    with pytest.raises(CheckpointError) as e:
        checkpoint_path("calls")
    assert calls_missing.rsplit("/", 1)[1] in str(e.value) and "--checkpoint" in str(e.value)


def test_an_existing_path_wins_over_a_name(tiny_run, tmp_path, monkeypatch, calls_missing):
    monkeypatch.chdir(tmp_path)
    Path("calls").write_bytes(Path(tiny_run["checkpoint"]).read_bytes())
    assert checkpoint_path("calls") == Path("calls")
    assert checkpoint_path(Path("dialogue")) == Path("dialogue")  # a Path is always a path


def test_summarizer_takes_a_name(calls_here):
    from agentsum import Summarizer

    summarizer = Summarizer("calls", device="cpu")
    assert summarizer.checkpoint == calls_here
    assert summarizer(ARTICLE, beam_size=2).strip()


# ------------------------------------------------------------------------------------------ commands


def test_summarize_with_model_dialogue(tmp_path, capsys):
    chat = tmp_path / "chat.txt"
    chat.write_text(DIALOGUE, encoding="utf-8")
    assert main(["--threads", "1", "summarize", "--model", "dialogue", str(chat), "--beam", "2"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.strip().splitlines()) == 1 and captured.out.strip()
    assert "warning" not in captured.err


def test_summarize_and_evaluate_with_model_calls(calls_here, tiny_run, article, tmp_path, capsys):
    assert main(["--threads", "1", "summarize", "--model", "calls", article, "--beam", "2"]) == 0
    assert capsys.readouterr().out.strip()
    out = tmp_path / "eval"
    assert main(["--threads", "1", "evaluate", "--model", "calls", "--data", tiny_run["test"], "--beam", "2",
                 "--out", str(out)]) == 0
    assert (out / "scores.json").is_file()


def test_serve_with_model_calls_serves_its_file(calls_here, monkeypatch):
    import uvicorn

    from agentsum.serve import app

    served = []
    monkeypatch.setattr(app, "create_app", lambda path, **kwargs: served.append(path) or object())
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: None)
    assert main(["serve", "--model", "calls"]) == 0
    assert main(["serve", "--model", "dialogue"]) == 0
    assert served == [calls_here, ckpt.default_checkpoint()]


@pytest.mark.parametrize("command", [["summarize"], ["evaluate", "--data", "x.jsonl"], ["serve"]])
def test_a_missing_calls_model_is_a_clean_error(calls_missing, article, command, capsys):
    rc = main([command[0], "--model", "calls", *command[1:], *([article] if command == ["summarize"] else [])])
    err = capsys.readouterr().err
    assert_clean_error(rc, err, "'calls'", "no-such-model.pt", "is missing", "--checkpoint")


@pytest.mark.skipif(ckpt.shipped_path("calls").is_file(), reason="the earnings-call model is installed")
def test_the_real_installation_without_the_calls_model_says_so(article, capsys):
    rc = main(["summarize", "--model", "calls", article])
    assert_clean_error(rc, capsys.readouterr().err, "ectsum-en.pt", "is missing", "--checkpoint")


def test_a_missing_calls_model_through_a_subprocess_has_no_traceback(calls_missing, article):
    """What a shell sees: a message and status 2 (the registry is patched in the child by name)."""
    import subprocess
    import sys

    code = ("import dataclasses, sys; from agentsum import checkpoint as c; "
            "c.SHIPPED_MODELS['calls'] = dataclasses.replace(c.SHIPPED_MODELS['calls'], file='pretrained/none.pt'); "
            "from agentsum.cli import main; sys.exit(main(sys.argv[1:]))")
    done = subprocess.run([sys.executable, "-c", code, "summarize", "--model", "calls", article],
                          capture_output=True, text=True, timeout=120, env={**__import__("os").environ,
                                                                            "OMP_NUM_THREADS": "1"})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "none.pt is missing" in done.stderr and done.stdout == ""


@pytest.mark.parametrize("command", [["summarize"], ["evaluate", "--data", "x.jsonl"], ["serve"]])
def test_model_and_checkpoint_together_is_a_clean_error(tiny_run, article, command, capsys):
    rc = main([command[0], "--model", "dialogue", "--checkpoint", str(tiny_run["checkpoint"]), *command[1:],
               *([article] if command == ["summarize"] else [])])
    assert_clean_error(rc, capsys.readouterr().err, "--model dialogue and --checkpoint", "choose one")


def test_models_lists_both_with_what_their_checkpoints_record(calls_here, capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    dialogue = next(i for i, line in enumerate(lines) if line.startswith("dialogue (default): installed"))
    calls = next(i for i, line in enumerate(lines) if line.startswith("calls: installed"))
    assert "MiB" in lines[dialogue] and "SAMSum" in lines[dialogue + 1]
    assert "step " in lines[dialogue + 2] and "selected by valid_rougeL" in lines[dialogue + 2]
    assert "agents 1, reads the first 500 tokens" in lines[dialogue + 2]
    assert "ECTSum" in lines[calls + 1] and "agents 3 of 20 tokens" in lines[calls + 2]


def test_models_says_which_is_missing(calls_missing, capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "calls: not installed (agentsum/pretrained/no-such-model.pt" in out
    assert "dialogue (default): installed" in out
