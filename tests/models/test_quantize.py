"""Dynamic int8 quantization (agentsum.models.quantize): which layers it replaces, that the model it
gives scores words as the float model does, and that --quantize reaches the Summarizer, the CLI and
an exported file."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.ao.nn.quantized import dynamic as qdynamic

from agentsum.checkpoint import export_inference, read_checkpoint
from agentsum.cli import main
from agentsum.config import load_config
from agentsum.models import build_model
from agentsum.models.quantize import QuantizeError, quantizable_layers, quantize_model
from agentsum.summarizer import Summarizer

torch.set_num_threads(1)


def test_every_lstm_and_linear_but_the_float_layers_is_quantized(tiny_run):
    summarizer = Summarizer(tiny_run["checkpoint"], device="cpu")
    names = quantizable_layers(summarizer.model)
    assert "out_vocab" in names and "decoder" in names and "v2" not in names
    model = quantize_model(summarizer.model, "int8")
    modules = dict(model.named_modules())
    assert isinstance(modules["out_vocab"], qdynamic.Linear) and isinstance(modules["decoder"], qdynamic.LSTM)
    assert isinstance(modules["local.forward_lstm"], qdynamic.LSTM)
    assert type(modules["v2"]) is nn.Linear  # read as a tensor (eq 8): kept in float
    assert not model.training


def test_the_int8_model_writes_mostly_the_float_models_words(tiny_run):
    summarizer = Summarizer(tiny_run["checkpoint"], device="cpu")
    int8 = Summarizer(tiny_run["checkpoint"], device="cpu", quantize="int8")
    assert int8.quantize == "int8" and "quantize='int8'" in repr(int8)
    texts = ["The cat saw a dog near the park. The fox met an owl near the river. The ant heard an elk near the "
             "school.", "The bee chased a cow near the house. The pig found a hen near the field."]
    plain, quantized = summarizer(texts, raw=True), int8(texts, raw=True)
    # dynamic int8 moves each score a little: the summaries are mostly the same words
    for a, b in zip(plain, quantized):
        shared = len(set(a.split()) & set(b.split())) / max(len(set(a.split())), 1)
        assert shared >= 0.6, (a, b)


def test_bad_modes_and_gpu_models_are_refused():
    model = build_model(load_config("tiny").model, 50)
    with pytest.raises(QuantizeError, match="int4"):
        quantize_model(model, "int4")
    assert quantize_model(model, "none") is model and quantize_model(model, None) is model
    with pytest.raises(ValueError, match="quantize='int4'"):
        Summarizer(quantize="int4")


def test_the_transformer_is_quantized_too():
    model = quantize_model(build_model(load_config("lcsts-small").model, 300), "int8")
    assert any(isinstance(m, qdynamic.Linear) for m in model.modules())


def test_an_export_with_quantize_int8_loads_as_int8_unless_told_otherwise(tiny_run, tmp_path):
    out = tmp_path / "int8.pt"
    export_inference(tiny_run["checkpoint"], out, quantize="int8")
    assert read_checkpoint(out)["quantize"] == "int8"
    assert Summarizer(out, device="cpu").quantize == "int8"
    assert Summarizer(out, device="cpu", quantize="none").quantize == "none"
    plain = tmp_path / "plain.pt"
    export_inference(out, plain)  # exported again without it: float
    assert "quantize" not in read_checkpoint(plain) and Summarizer(plain, device="cpu").quantize == "none"


def test_the_cli_summarizes_with_quantize_int8(tiny_run, tmp_path, capsys):
    text = tmp_path / "a.txt"
    text.write_text("The cat saw a dog near the park. The fox met an owl near the river.", encoding="utf-8")
    assert main(["summarize", str(text), "--checkpoint", str(tiny_run["checkpoint"]), "--quantize", "int8"]) == 0
    out = capsys.readouterr().out
    assert out.strip()
    assert main(["export", "--checkpoint", str(tiny_run["checkpoint"]), "--out", str(tmp_path / "q.pt"),
                 "--quantize", "int8"]) == 0
    assert "runs in int8 on the CPU" in capsys.readouterr().out
