"""The lane-based dropout: drop rate, independence, scaling, gradients, reproducibility."""

import pytest
import torch

from agentsum.models.dropout import Dropout, dropout, keep_scale_mask, quantised_p

N = 1 << 22  # 4M elements: the standard error of a 0.1 rate is 1.5e-4


def test_quantised_p_is_a_multiple_of_2_to_the_minus_16():
    assert quantised_p(0.1) == 6554 / 65536
    assert quantised_p(0.5) == 0.5
    assert abs(quantised_p(0.3) - 0.3) <= 2 ** -17


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_drop_rate_overall_and_in_every_lane(p):
    """Each 64-bit draw feeds four elements; every lane (element index mod 4) must drop at rate p.
    (A draw whose top bit is always 0, as ``random_()`` gives, never drops in lane 3.)"""
    torch.manual_seed(0)
    dropped = (keep_scale_mask(torch.Size([N]), p, torch.float32) == 0).float()
    q = quantised_p(p)
    assert abs(dropped.mean().item() - q) < 1e-3
    for lane in range(4):
        assert abs(dropped[lane::4].mean().item() - q) < 2e-3, lane


def test_lanes_are_independent():
    """Adjacent elements (same draw) and elements of neighbouring draws are dropped together at
    rate q^2, as independent draws would be."""
    torch.manual_seed(1)
    dropped = (keep_scale_mask(torch.Size([N]), 0.5, torch.float32) == 0).float()
    for shift in (1, 2, 3, 4):
        both = (dropped[:-shift] * dropped[shift:]).mean().item()
        assert abs(both - 0.25) < 2e-3, shift


def test_survivors_are_scaled_and_the_rest_are_zero():
    torch.manual_seed(2)
    x = torch.randn(64, 33, 7)
    y = dropout(x, 0.25, training=True)
    kept = y != 0
    assert 0.6 < kept.float().mean().item() < 0.9
    scale = 1.0 / (1.0 - quantised_p(0.25))
    torch.testing.assert_close(y[kept], x[kept] * scale, rtol=0, atol=0)


def test_expectation_is_preserved():
    torch.manual_seed(3)
    x = torch.full((N,), 2.0)
    assert abs(dropout(x, 0.1).mean().item() - 2.0) < 2e-3


def test_backward_applies_the_forward_mask():
    torch.manual_seed(4)
    x = torch.randn(50, 40, requires_grad=True)
    y = dropout(x, 0.3)
    g = torch.randn(50, 40)
    y.backward(g)
    scale = 1.0 / (1.0 - quantised_p(0.3))
    expected = torch.where(y.detach() != 0, g * scale, torch.zeros_like(g))
    torch.testing.assert_close(x.grad, expected, rtol=0, atol=0)


def test_same_seed_same_mask_other_seed_other_mask():
    x = torch.ones(1000)
    torch.manual_seed(6)
    a = dropout(x, 0.5)
    torch.manual_seed(6)
    b = dropout(x, 0.5)
    torch.manual_seed(7)
    c = dropout(x, 0.5)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_eval_and_zero_p_are_the_identity_and_p_one_drops_everything():
    x = torch.randn(10, 10)
    assert dropout(x, 0.5, training=False) is x
    assert dropout(x, 0.0) is x
    assert torch.count_nonzero(dropout(x, 1.0)) == 0
    module = Dropout(0.5).eval()
    assert module(x) is x


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64])
def test_keeps_the_input_dtype(dtype):
    x = torch.randn(100, 3, dtype=dtype)
    assert dropout(x, 0.2).dtype == dtype


def test_non_contiguous_input():
    torch.manual_seed(8)
    x = torch.randn(30, 20).t()
    y = dropout(x, 0.5)
    assert y.shape == x.shape
    kept = y != 0
    torch.testing.assert_close(y[kept], x[kept] * 2.0, rtol=0, atol=0)


@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_bad_probability(p):
    with pytest.raises(ValueError, match="dropout probability"):
        Dropout(p)
    with pytest.raises(ValueError, match="dropout probability"):
        dropout(torch.ones(3), p)


def test_module_matches_nn_dropout_interface():
    module = Dropout(0.1)
    assert module.state_dict() == {}
    assert "p=0.1" in repr(module)
