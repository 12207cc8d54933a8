"""Inference-only export, the shipped default model and readable ``summarize`` output."""

from pathlib import Path

import pytest
import torch

from agentsum.cli import main
from agentsum import checkpoint as ckpt
from agentsum.checkpoint import CheckpointError, export_inference, load_model, read_checkpoint


def test_export_keeps_weights_in_16_bits_without_training_state(tiny_run, tmp_path):
    out = tmp_path / "model.pt"
    metadata = export_inference(tiny_run["checkpoint"], out)
    state = read_checkpoint(out)
    assert set(state) >= {"model", "config", "vocab", "step"}
    assert not {"optimizer", "rng", "scheduler"} & set(state)
    assert {v.dtype for v in state["model"].values() if v.is_floating_point()} == {torch.float16}
    assert metadata["exported"]["dtype"] == "float16"
    full, _, _, _ = load_model(tiny_run["checkpoint"])
    slim, _, _, _ = load_model(out)
    for (name, a), (_, b) in zip(full.state_dict().items(), slim.state_dict().items()):
        assert b.dtype == a.dtype == torch.float32
        torch.testing.assert_close(b, a.half().float(), msg=name)
    assert out.stat().st_size < Path(tiny_run["checkpoint"]).stat().st_size / 4


def test_summarize_without_checkpoint_uses_the_shipped_model(tiny_run, tmp_path, monkeypatch, capsys):
    shipped = tmp_path / "pkg" / "shipped.pt"
    shipped.parent.mkdir()
    export_inference(tiny_run["checkpoint"], shipped)
    monkeypatch.setattr(ckpt, "default_checkpoint", lambda: shipped)
    article = tmp_path / "a.txt"
    article.write_text("The Fox saw a cat near the Tower. The owl met a dog near the river.", encoding="utf-8")
    assert main(["summarize", str(article), "--beam", "2", "--min-length", "6"]) == 0
    readable = capsys.readouterr().out.strip()
    assert main(["summarize", "--checkpoint", str(shipped), "--raw", str(article), "--beam", "2",
                 "--min-length", "6"]) == 0
    raw = capsys.readouterr().out.strip()
    assert raw == raw.lower()  # model tokens, space-separated
    first_letter = next(ch for ch in readable if ch.isalpha())
    assert readable != raw and first_letter.isupper()
    # same words: casing and spacing are all that change
    from agentsum.data.readable import detokenize
    assert readable.lower().replace(" ", "") == detokenize(raw.split()).lower().replace(" ", "")
    if "fox" in raw.split():
        assert "Fox" in readable  # cased as in the article ("Fox" mid-sentence)


def test_missing_shipped_model_is_a_clear_error(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(ckpt, "DEFAULT_MODEL", "pretrained/not-there.pt")
    with pytest.raises(CheckpointError, match="no model is shipped"):
        ckpt.default_checkpoint()
    article = tmp_path / "a.txt"
    article.write_text("Some text.", encoding="utf-8")
    assert main(["summarize", str(article)]) == 2
    assert "pass --checkpoint" in capsys.readouterr().err


def test_export_command(tiny_run, tmp_path, capsys):
    out = tmp_path / "e.pt"
    assert main(["export", "--checkpoint", str(tiny_run["checkpoint"]), "--out", str(out), "--dtype", "bfloat16",
                 "--set", "search.min_length=7", "--set", "search.beam_size=3"]) == 0
    assert "MiB" in capsys.readouterr().out
    state = read_checkpoint(out)
    assert state["exported"]["dtype"] == "bfloat16"
    assert state["config"]["search"]["min_length"] == 7 and state["config"]["search"]["beam_size"] == 3
    assert main(["export", "--checkpoint", str(tiny_run["checkpoint"]), "--out", str(out),
                 "--set", "train.lr=1"]) == 2
    assert "only decoding defaults" in capsys.readouterr().err
    assert main(["export", "--checkpoint", str(tiny_run["checkpoint"]), "--out", str(out),
                 "--set", "search.beam=3"]) == 2
    assert "unknown key(s) ['beam']" in capsys.readouterr().err


def test_python_api_summarizes_a_text_and_a_list(tiny_run, tmp_path, monkeypatch):
    from agentsum import Summarizer
    from agentsum.data.corpus import DataError

    summarizer = Summarizer(tiny_run["checkpoint"])
    text = "The Fox saw a cat near the Tower. The owl met a dog near the river."
    one = summarizer(text, beam_size=2, min_length=6)
    assert isinstance(one, str) and next(ch for ch in one if ch.isalpha()).isupper()
    many = summarizer([text, "The dog met a hen near the park."], beam_size=2, min_length=6)
    assert isinstance(many, list) and len(many) == 2 and many[0] == one
    raw = summarizer(text, beam_size=2, min_length=6, raw=True)
    assert raw == raw.lower() and len(raw.split()) >= 6
    with pytest.raises(DataError, match=r"texts\[1\]: no words"):
        summarizer(["A text.", "   "])
    shipped = tmp_path / "shipped.pt"
    export_inference(tiny_run["checkpoint"], shipped)
    monkeypatch.setattr(ckpt, "default_checkpoint", lambda: shipped)
    assert Summarizer().checkpoint == shipped
