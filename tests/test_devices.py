"""Device choice and what each device gets (agentsum/devices.py), on a machine without a GPU: the
CUDA paths run against monkeypatched ``torch.cuda`` functions."""

import pytest
import torch

from agentsum import devices
from agentsum.devices import check_bf16, choose_device, use_tf32


@pytest.fixture
def fake_gpu(monkeypatch):
    """torch.cuda reports one GPU (nothing is ever run on it)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)


def test_auto_is_the_cpu_without_a_gpu_and_cuda_with_one(monkeypatch, fake_gpu):
    assert choose_device("auto") == torch.device("cuda", 0)
    assert choose_device("auto", 3) == torch.device("cuda", 3)  # a torchrun process's LOCAL_RANK
    assert choose_device("cuda:1", 3) == torch.device("cuda", 1)
    assert choose_device(torch.device("cuda", 2)) == torch.device("cuda", 2)
    assert choose_device("cpu") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert choose_device("auto") == torch.device("cpu")


def test_unknown_devices_and_a_missing_gpu_are_clear_errors(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="--device is cuda but no GPU is available"):
        choose_device("cuda", setting="--device")
    for bad in ("tpu", "cpu:1", "auto:0"):
        with pytest.raises(ValueError, match="must be auto, cpu"):
            choose_device(bad)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    with pytest.raises(ValueError, match="must be auto, cpu, cuda or cuda:N"):
        choose_device("cuda:x")


def test_every_device_option_offers_the_same_choices():
    from agentsum.cli import build_parser
    from agentsum.config import CHOICES

    assert CHOICES["train.device"] == devices.DEVICE_CHOICES
    parser = build_parser()
    for command in (["summarize"], ["evaluate", "--data", "x.jsonl"], ["serve"]):
        assert parser.parse_args(command).device == "auto"
        assert parser.parse_args([*command, "--device", "cuda"]).device == "cuda"
        with pytest.raises(SystemExit):
            parser.parse_args([*command, "--device", "tpu"])


def test_bf16_is_refused_on_a_gpu_without_native_bf16(monkeypatch, fake_gpu):
    asked = {}

    def is_bf16_supported(including_emulation=True):
        asked["including_emulation"] = including_emulation
        return including_emulation  # a V100 / T4: emulated only

    monkeypatch.setattr(torch.cuda, "is_bf16_supported", is_bf16_supported)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (7, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Tesla V100-SXM2-16GB")
    with pytest.raises(ValueError, match=r"native bfloat16.*Tesla V100-SXM2-16GB has 7\.0.*train.precision=fp32"):
        check_bf16(torch.device("cuda", 0))
    assert asked == {"including_emulation": False}  # emulation does not count
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)  # an A100
    check_bf16(torch.device("cuda", 0))
    check_bf16(torch.device("cpu"))  # CPUs: autocast runs (bf16 matrix products; the LSTMs in float32)


def test_tf32_is_switched_on_for_cuda_only():
    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("highest")
        use_tf32(torch.device("cpu"))
        assert torch.get_float32_matmul_precision() == "highest"
        use_tf32(torch.device("cuda", 0))  # sets process flags only: no GPU needed
        assert torch.get_float32_matmul_precision() == "high"
        assert torch.backends.cudnn.allow_tf32
    finally:
        torch.set_float32_matmul_precision(before)


def test_summarizer_places_the_model_where_asked(tiny_run, monkeypatch):
    from agentsum.summarizer import Summarizer

    summarizer = Summarizer(tiny_run["checkpoint"], device="cpu")
    assert summarizer.device == torch.device("cpu") and "device='cpu'" in repr(summarizer)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert Summarizer(tiny_run["checkpoint"]).device == torch.device("cpu")  # auto without a GPU
    with pytest.raises(ValueError, match="device is cuda but no GPU is available"):
        Summarizer(tiny_run["checkpoint"], device="cuda")


def test_a_missing_gpu_is_a_command_error_without_traceback(tiny_run, monkeypatch, capsys):
    from agentsum.cli import main

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["summarize", "--checkpoint", str(tiny_run["checkpoint"]), "--device", "cuda", "-"]) == 2
    err = capsys.readouterr().err
    assert "agentsum summarize: error: --device is cuda but no GPU is available" in err and "Traceback" not in err
