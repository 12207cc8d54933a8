"""Additive (Bahdanau) attention scores without the (B, T, S, H) intermediate on CPU.

DCA's word attention, eq (8), scores every decoder step t against every encoder position s as
``v^T tanh(W5 h_s + W6 s_t + b1)``. Written with broadcasting, that builds a (B, T, S, H) tensor
(16 x 100 x 400 x 256 floats = 655 MB per training batch), runs tanh over it, keeps it for the
backward pass, and streams it through memory about ten times per step: on a CPU the attention then
costs more than the 50k-word output layer.

:func:`additive_scores` computes the same numbers in blocks of about ``BLOCK_ELEMENTS`` elements
that stay in the CPU cache, and its backward pass recomputes each block's tanh instead of storing
it. Same result up to float rounding (tested against the broadcast form, values and gradients);
measured 4.7x faster forward + backward at B 16, T 56, S 400, H 256 on 2 cores, and 6x faster
for one beam-search step of 150 hypotheses (``benchmarks/speed/bench_additive.py``). On GPUs the
broadcast form is used: memory there is fast and a Python loop over blocks would launch many small
kernels.
"""

from __future__ import annotations

import torch

BLOCK_ELEMENTS = 1 << 19  # 2 MiB of float32 per block: fits a core's L2 cache


def _blocks(B: int, T: int, S: int, H: int):
    """(b0, b1, t0, t1) blocks covering (B, T) with about BLOCK_ELEMENTS elements of (S, H) rows each."""
    per_t = S * H
    if T * per_t <= BLOCK_ELEMENTS:  # whole rows of T steps: group documents (beam search, T = 1)
        nb = max(1, BLOCK_ELEMENTS // (T * per_t))
        for b0 in range(0, B, nb):
            yield b0, min(b0 + nb, B), 0, T
    else:  # one document at a time, a few steps per block (teacher forcing)
        nt = max(1, BLOCK_ELEMENTS // per_t)
        for b in range(B):
            for t0 in range(0, T, nt):
                yield b, b + 1, t0, min(t0 + nt, T)


class _AdditiveScores(torch.autograd.Function):
    # Blocks are computed in float32 (or float64) even when the inputs are bfloat16 (CPU autocast):
    # the CPU has no fast bfloat16 tanh, and the inputs are small next to the blocks. Scores come
    # back in that precision (the softmax that follows wants it); gradients in each input's dtype.
    # Every block is written into one buffer allocated once per call: a fresh 2 MiB tensor per
    # block costs an allocation, and page faults where the allocator returns it to the kernel.

    @staticmethod
    def forward(ctx, keys: torch.Tensor, query: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        B, S, H = keys.shape
        T = query.size(1)
        work = torch.promote_types(keys.dtype, torch.float32)
        k, q, w = keys.to(work), query.to(work), v.to(work)
        out = keys.new_empty(B, T, S, dtype=work)
        blocks = list(_blocks(B, T, S, H))
        buffer = keys.new_empty(_largest(blocks) * S * H, dtype=work)
        for b0, b1, t0, t1 in blocks:
            x = torch.add(k[b0:b1].unsqueeze(1), q[b0:b1, t0:t1].unsqueeze(2),
                          out=buffer[: (b1 - b0) * (t1 - t0) * S * H].view(b1 - b0, t1 - t0, S, H))
            x.tanh_()
            out[b0:b1, t0:t1] = x @ w
        ctx.save_for_backward(keys, query, v)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        # With x = tanh(k_s + q_t) and d = 1 - x^2, the gradients are
        #   dv = sum_{t,s} g_ts x_ts,  dq_t = v * sum_s g_ts d_ts,  dk_s = v * sum_t g_ts d_ts:
        # two matrix-vector products and one multiply-add per block over the recomputed tanh, and
        # the factor v once at the end instead of once per block element.
        keys, query, v = ctx.saved_tensors
        B, S, H = keys.shape
        T = query.size(1)
        work = torch.promote_types(keys.dtype, torch.float32)
        k, q, w, grad = keys.to(work), query.to(work), v.to(work), grad.to(work).contiguous()
        g_keys = keys.new_zeros(keys.shape, dtype=work)  # sum_t g d, times v at the end
        g_query = query.new_empty(query.shape, dtype=work)  # sum_s g d, times v at the end
        g_v = v.new_zeros(v.shape, dtype=work)
        one = keys.new_ones((), dtype=work)
        blocks = list(_blocks(B, T, S, H))
        buffer = keys.new_empty(_largest(blocks) * S * H, dtype=work)
        for b0, b1, t0, t1 in blocks:
            g = grad[b0:b1, t0:t1]  # (b, t, S)
            x = torch.add(k[b0:b1].unsqueeze(1), q[b0:b1, t0:t1].unsqueeze(2),
                          out=buffer[: (b1 - b0) * (t1 - t0) * S * H].view(b1 - b0, t1 - t0, S, H))
            x.tanh_()  # recomputed, not stored
            g_v.addmv_(x.view(-1, H).t(), g.reshape(-1))  # d/dv = sum g * tanh
            d = torch.addcmul(one, x, x, value=-1, out=x)  # 1 - tanh^2, in place
            g_query[b0:b1, t0:t1] = (g.unsqueeze(-2) @ d).squeeze(-2)  # (b, t, 1, S) @ (b, t, S, H)
            for j in range(t1 - t0):
                g_keys[b0:b1].addcmul_(g[:, j].unsqueeze(-1), d[:, j])
        g_keys.mul_(w)
        g_query.mul_(w)
        return g_keys.to(keys.dtype), g_query.to(query.dtype), g_v.to(v.dtype)


def _largest(blocks) -> int:
    """The most (document, step) pairs any one block holds."""
    return max(((b1 - b0) * (t1 - t0) for b0, b1, t0, t1 in blocks), default=0)


def additive_scores(keys: torch.Tensor, query: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """scores[b, t, s] = v . tanh(keys[b, s] + query[b, t]).

    keys: (B, S, H), query: (B, T, H) (any bias already added), v: (H,) -> (B, T, S).
    """
    if keys.device.type != "cpu":
        return torch.tanh(keys.unsqueeze(1) + query.unsqueeze(2)) @ v
    return _AdditiveScores.apply(keys.contiguous(), query.contiguous(), v.contiguous())
