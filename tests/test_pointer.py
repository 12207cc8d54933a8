"""CopyDistribution: the full distribution and the target-only path agree, with and without autograd."""

import torch

from agentsum.pointer import CopyDistribution


def make(requires_grad: bool, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    B, T, V, L, n_oov = 3, 4, 7, 5, 2
    logits = torch.randn(B, T, V, generator=g, requires_grad=requires_grad)
    gen = torch.rand(B, T, generator=g) * 0.8 + 0.1
    copy = torch.rand(B, T, L, generator=g)
    copy = copy / copy.sum(-1, keepdim=True) * (1 - gen).unsqueeze(-1)
    src = torch.randint(4, V + n_oov, (B, L), generator=g)
    return CopyDistribution(logits, gen, copy, src, V + n_oov)


def test_no_grad_fast_path_equals_the_differentiable_path():
    with_grad = make(True).log_probs()
    assert with_grad.requires_grad
    with torch.no_grad():
        fast = make(True).log_probs()
    torch.testing.assert_close(fast, with_grad.detach())
    assert torch.allclose(fast.exp().sum(-1), torch.ones(3, 4), atol=1e-6)  # a distribution over V_ext


def test_log_prob_of_target_equals_the_full_distribution_entry():
    dist = make(False, seed=1)
    target = torch.randint(0, dist.n_ext, (3, 4), generator=torch.Generator().manual_seed(2))
    full = dist.log_probs().gather(-1, target.unsqueeze(-1)).squeeze(-1)
    torch.testing.assert_close(dist.log_prob(target), full)


def test_target_log_softmax_matches_log_softmax_gather_with_gradients():
    from agentsum.pointer import target_log_softmax

    g = torch.Generator().manual_seed(5)
    logits = torch.randn(3, 4, 9, dtype=torch.float64, generator=g, requires_grad=True)
    index = torch.randint(0, 9, (3, 4), generator=g)
    index[0, 0] = index[0, 1] = 2  # repeated targets
    upstream = torch.randn(3, 4, dtype=torch.float64, generator=g)
    expected = torch.log_softmax(logits, -1).gather(-1, index.unsqueeze(-1)).squeeze(-1)
    got = target_log_softmax(logits, index)
    torch.testing.assert_close(got, expected)
    (e_grad,) = torch.autograd.grad((expected * upstream).sum(), logits)
    (g_grad,) = torch.autograd.grad((got * upstream).sum(), logits)
    torch.testing.assert_close(g_grad, e_grad)
    assert torch.autograd.gradcheck(lambda x: target_log_softmax(x, index), (logits,))
