"""The blockwise additive attention equals the broadcast form it replaces (values and gradients)."""

import pytest
import torch

from agentsum.models import additive
from agentsum.models.additive import additive_scores


def broadcast(keys, query, v):
    return torch.tanh(keys.unsqueeze(1) + query.unsqueeze(2)) @ v


@pytest.mark.parametrize("block", [1, 7, 40, 1 << 19])  # per step, a few steps, several documents, everything
@pytest.mark.parametrize("B,T,S,H", [(3, 7, 5, 4), (1, 1, 9, 3), (4, 1, 6, 5), (2, 11, 1, 2)])
def test_values_and_gradients_match_the_broadcast_form(monkeypatch, block, B, T, S, H):
    monkeypatch.setattr(additive, "BLOCK_ELEMENTS", block)
    g = torch.Generator().manual_seed(B * 100 + T)
    keys = torch.randn(B, S, H, dtype=torch.float64, generator=g, requires_grad=True)
    query = torch.randn(B, T, H, dtype=torch.float64, generator=g, requires_grad=True)
    v = torch.randn(H, dtype=torch.float64, generator=g, requires_grad=True)
    upstream = torch.randn(B, T, S, dtype=torch.float64, generator=g)

    expected = broadcast(keys, query, v)
    expected_grads = torch.autograd.grad((expected * upstream).sum(), (keys, query, v))
    got = additive_scores(keys, query, v)
    got_grads = torch.autograd.grad((got * upstream).sum(), (keys, query, v))

    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)
    for a, b in zip(got_grads, expected_grads):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_gradcheck_and_blocks_cover_every_position_once(monkeypatch):
    monkeypatch.setattr(additive, "BLOCK_ELEMENTS", 12)
    covered = torch.zeros(3, 5, dtype=torch.long)
    for b0, b1, t0, t1 in additive._blocks(3, 5, 2, 3):
        covered[b0:b1, t0:t1] += 1
    assert bool((covered == 1).all())
    keys = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    query = torch.randn(2, 5, 4, dtype=torch.float64, requires_grad=True)
    v = torch.randn(4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(additive_scores, (keys, query, v))


def test_non_contiguous_inputs_and_float32():
    keys = torch.randn(4, 6, 8).transpose(0, 1)[:, :3]  # (6, 3, 8) as a strided view
    query = torch.randn(6, 2, 8)
    v = torch.randn(8)
    torch.testing.assert_close(additive_scores(keys, query, v), broadcast(keys, query, v), rtol=1e-5, atol=1e-5)


def test_bfloat16_inputs_are_computed_in_float32():
    g = torch.Generator().manual_seed(3)
    keys, query, v = (torch.randn(*shape, generator=g).bfloat16().requires_grad_()
                      for shape in ((2, 9, 8), (2, 4, 8), (8,)))
    got = additive_scores(keys, query, v)
    assert got.dtype == torch.float32  # the softmax that follows gets full precision
    exact = broadcast(keys.float(), query.float(), v.float())
    torch.testing.assert_close(got, exact, rtol=1e-5, atol=1e-5)
    grads = torch.autograd.grad(got.sum(), (keys, query, v))
    assert [x.dtype for x in grads] == [torch.bfloat16] * 3
    k32, q32, v32 = (x.detach().float().requires_grad_() for x in (keys, query, v))
    exact_grads = torch.autograd.grad(broadcast(k32, q32, v32).sum(), (k32, q32, v32))
    for a, b in zip(grads, exact_grads):
        torch.testing.assert_close(a.float(), b, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("block", [300, 2000, 1 << 19])  # a step per block, a few steps, several documents
def test_float32_gradients_stay_within_float_rounding_of_the_exact_ones(monkeypatch, block):
    # the backward pass sums g (1 - tanh^2) with matrix products and multiplies by v once at the end:
    # another order of float32 sums than the broadcast form's, so it is held to float64 here
    monkeypatch.setattr(additive, "BLOCK_ELEMENTS", block)
    g = torch.Generator().manual_seed(11)
    keys = torch.randn(3, 40, 8, generator=g, requires_grad=True)
    query = torch.randn(3, 6, 8, generator=g, requires_grad=True)
    v = torch.randn(8, generator=g, requires_grad=True)
    upstream = torch.randn(3, 6, 40, generator=g)
    exact_inputs = [x.detach().double().requires_grad_() for x in (keys, query, v)]
    exact = torch.autograd.grad((broadcast(*exact_inputs) * upstream.double()).sum(), exact_inputs)
    got = torch.autograd.grad((additive_scores(keys, query, v) * upstream).sum(), (keys, query, v))
    for a, b in zip(got, exact):
        assert a.dtype == torch.float32
        torch.testing.assert_close(a.double(), b, rtol=1e-5, atol=1e-5)
