"""Dropout with a cheaper random mask on CPU.

``torch.nn.Dropout`` draws one random number per element (``bernoulli_``), serially from the CPU
generator: at the benchmark size of the Transformer-PG (``benchmarks/peer/bench_peer.py``, zh) that was
22 % of a training step. ``Dropout`` here draws one 64-bit integer per four elements and reads it
as four independent 16-bit lanes: an element is dropped when its lane is below p * 2^16. The
drop probability is therefore p rounded to a multiple of 2^-16 (0.1 -> 0.100006); survivors are
scaled by 1 / (1 - p) of that rounded p, so the expectation is preserved (exactly in fp32; in bf16
the scale itself rounds, 1.111 -> 1.109 at p = 0.1, as it does in ``F.dropout``). The mask is
built once in the input's dtype (0 or the scale), so forward and backward are one multiplication
each. Measured per call, forward and backward, in ``benchmarks/speed/bench_dropout.py``.

The draw comes from torch's default generator, so ``torch.manual_seed`` makes it reproducible.
Off the CPU (where ``F.dropout`` is a fused kernel) and in eval mode this is ``F.dropout``'s path.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

LANES = 4  # 16-bit lanes per 64-bit draw
_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1


def _drop_count(p: float) -> int:
    """How many of the 2^16 lane values drop an element: p rounded to a multiple of 2^-16."""
    return round(p * 65536)


def quantised_p(p: float) -> float:
    """The drop probability actually used: p rounded to a multiple of 2^-16."""
    return _drop_count(p) / 65536


def random_lanes(n: int, device: torch.device | None = None) -> torch.Tensor:
    """n random signed 16-bit lanes (int16), four per 64-bit draw from the default generator."""
    words = (n + LANES - 1) // LANES
    # randint over the full int64 range: every bit uniform (``random_()`` would leave the top bit 0)
    return torch.randint(_INT64_MIN, _INT64_MAX, (words,), dtype=torch.int64, device=device).view(torch.int16)[:n]


def keep_scale_mask(shape: torch.Size, p: float, dtype: torch.dtype, device: torch.device | None = None) -> torch.Tensor:
    """Tensor of ``shape`` and ``dtype``: 1 / (1 - q) where an element is kept, 0 where it is dropped
    (probability q = ``quantised_p(p)``). A mask in the input's dtype makes forward and backward one
    multiplication each (a boolean mask takes two passes through ``masked_fill``)."""
    lanes = random_lanes(math.prod(shape), device).view(shape)
    threshold = _drop_count(p) - 32768  # kept  <=>  lane (signed) >= threshold  <=>  lane + 2^15 >= p * 2^16
    mask = torch.ge(lanes, threshold, out=torch.empty(shape, dtype=dtype, device=device))
    return mask.mul_(1.0 / (1.0 - quantised_p(p)))


def dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """Functional form of ``Dropout``."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    q = quantised_p(p)
    if x.device.type != "cpu" or q >= 1.0:
        return F.dropout(x, p, True)
    if q == 0.0:
        return x
    # autograd saves only the mask (it needs no gradient), and backward is grad * mask
    return x * keep_scale_mask(x.shape, p, x.dtype, x.device)


class Dropout(nn.Module):
    """In place of ``torch.nn.Dropout`` (same ``p``, train/eval behaviour and empty state dict; no
    ``inplace`` option). Its random stream differs from ``nn.Dropout``'s for the same seed."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability must be in [0, 1], got {p}")
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
