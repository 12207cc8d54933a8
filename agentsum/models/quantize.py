"""Dynamic int8 quantization of a model for CPU inference (``--quantize int8``).

PyTorch's dynamic quantization (``torch.ao.quantization.quantize_dynamic``) stores the weights of
``nn.LSTM`` and ``nn.Linear`` layers in int8 (one scale per tensor) and quantizes their inputs on
the fly; the matrix products run in int8 on the CPU (fbgemm on x86, qnnpack on ARM). It was chosen
over ``torchao``'s ``quantize_`` because the DCA agents and decoder are LSTMs, which torchao does
not quantize, and over CTranslate2 because that would need a converter for a custom architecture.
torch marks ``torch.ao.quantization`` deprecated and warns on every call: the warning is kept out of
users' output here.

Left in float: layers whose weight a model reads as a tensor rather than calling the layer (the
attention vectors ``v2`` and ``w_cov`` of DCA's eq 8 and its coverage: a model names them in
``float_layers``), embeddings, and everything that is not a product with a weight matrix (the
attention softmaxes, the copy distribution). Quantization is for inference: the model returned is
in eval mode and cannot be trained.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

#: The ``quantize`` values the CLI, ``Summarizer(quantize=...)`` and the service accept.
QUANTIZE_CHOICES = ("none", "int8")


class QuantizeError(ValueError):
    """A quantization that cannot be applied (a GPU model, an unknown mode)."""


def quantizable_layers(model: nn.Module) -> set[str]:
    """The names of the LSTM and linear layers that int8 quantization replaces: every one but the
    model's ``float_layers`` (layers whose weight it reads as a tensor)."""
    kept = set(getattr(model, "float_layers", ()))
    return {name for name, module in model.named_modules()
            if isinstance(module, (nn.LSTM, nn.Linear)) and name not in kept and name}


def quantize_model(model: nn.Module, mode: str | None) -> nn.Module:
    """``model`` with its LSTM and linear layers in dynamic int8 (``mode="int8"``), or unchanged
    (``None`` or ``"none"``). The model must be on the CPU, in float32 (16-bit weights are widened
    first); it is put in eval mode."""
    if mode in (None, "none"):
        return model
    if mode not in QUANTIZE_CHOICES:
        raise QuantizeError(f"unknown quantization {mode!r}: choose from {', '.join(QUANTIZE_CHOICES)}")
    parameter = next(model.parameters(), None)
    if parameter is not None and parameter.device.type != "cpu":
        raise QuantizeError(f"int8 quantization runs on the CPU; this model is on {parameter.device} "
                            f"(use --device cpu with --quantize int8)")
    engines = torch.backends.quantized.supported_engines
    if not any(e in engines for e in ("fbgemm", "x86", "qnnpack")):
        raise QuantizeError(f"this PyTorch build has no int8 CPU engine (supported: {', '.join(engines)})")
    model = model.float().eval()
    layers = quantizable_layers(model)
    with warnings.catch_warnings():  # torch.ao.quantization's deprecation notice, on every call
        warnings.simplefilter("ignore")
        from torch.ao.quantization import default_dynamic_qconfig, quantize_dynamic

        quantized = quantize_dynamic(model, {name: default_dynamic_qconfig for name in layers}, dtype=torch.qint8)
    quantized.quantized = "int8"
    return quantized


def is_quantized(model: nn.Module) -> bool:
    """Whether :func:`quantize_model` made ``model``."""
    return getattr(model, "quantized", None) == "int8"
