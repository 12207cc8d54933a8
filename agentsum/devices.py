"""Where models run: the device a ``device`` setting names, and what each device needs to run well.

One resolution for every entry point: ``train.device``, ``agentsum summarize / evaluate / serve
--device`` and ``Summarizer(device=...)`` all take ``auto`` (CUDA where a GPU is present, else the
CPU), ``cpu`` or ``cuda`` (``cuda:N`` and ``torch.device`` objects too, in the Python API).

Errors are :class:`~agentsum.fields.ConfigError` (a ``ValueError``): the commands report them without a
traceback.

* :func:`check_bf16`: bf16 autocast only where the hardware runs it natively. GPUs before Ampere
  (V100, T4) emulate bfloat16 matrix products far slower than fp32, so training refuses them with
  the fix named (``train.precision=fp32``).
* :func:`use_tf32`: float32 matrix products and convolutions on CUDA use TF32 tensor cores
  (10 mantissa bits, fp32's range), PyTorch's ``"high"`` precision; CPUs are left as they are.
* :func:`copy_to`: host tensors reach a GPU through page-locked memory, without the host waiting
  for the work already queued there.
"""

from __future__ import annotations

import torch

from agentsum.fields import ConfigError

DEVICE_CHOICES = ("auto", "cpu", "cuda")


def choose_device(preference: str | torch.device, index: int | None = None, setting: str = "device") -> torch.device:
    """The device of ``preference`` (``auto``, ``cpu``, ``cuda`` or ``cuda:N``); ``index`` picks the GPU
    of ``cuda`` (a torchrun process's LOCAL_RANK). ``setting`` names the option in errors."""
    if isinstance(preference, torch.device):
        preference = str(preference)
    kind, _, number = str(preference).partition(":")
    if kind == "auto" and not number:
        kind = "cuda" if torch.cuda.is_available() else "cpu"
    if kind == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(f"{setting} is cuda but no GPU is available (torch {torch.__version__}, "
                             f"CUDA build: {torch.version.cuda or 'no'})")
        if number and not number.isdigit():
            raise ConfigError(f"{setting} must be auto, cpu, cuda or cuda:N, got {preference!r}")
        return torch.device("cuda", int(number) if number else (index or 0))
    if kind != "cpu" or number:
        raise ConfigError(f"{setting} must be auto, cpu or cuda, got {preference!r}")
    return torch.device("cpu")


def cpu_has_bf16() -> bool:
    """Whether this CPU runs oneDNN's bfloat16 kernels (AVX512-BF16 or AMX)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def check_bf16(device: torch.device) -> None:
    """Refuse bf16 autocast on a GPU without native bfloat16 (compute capability below 8.0)."""
    if device.type != "cuda" or torch.cuda.is_bf16_supported(including_emulation=False):
        return
    major, minor = torch.cuda.get_device_capability(device)
    raise ConfigError(f"train.precision=bf16 needs a GPU with native bfloat16 (compute capability 8.0 or newer: "
                     f"A100, H100, RTX 30xx and later); {torch.cuda.get_device_name(device)} has {major}.{minor} and "
                     f"would emulate it, slower than fp32: use train.precision=fp32")


def use_tf32(device: torch.device) -> None:
    """On CUDA, let float32 matrix products and cuDNN (the LSTMs) use TF32 tensor cores."""
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")
        torch.backends.cudnn.allow_tf32 = True


def copy_to(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``tensor`` on ``device``. From the host to a GPU the copy goes through page-locked memory
    and is queued (``non_blocking``) instead of waiting for the GPU's queued work to finish; on the
    same device it is the tensor itself."""
    if device.type == "cuda" and tensor.device.type == "cpu" and not tensor.is_pinned():
        tensor = tensor.pin_memory()
    return tensor.to(device, non_blocking=True)
