"""CopyDistribution: the full distribution and the target-only path agree, with and without autograd."""

import torch

from agentsum.models.pointer import CopyDistribution


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
    from agentsum.models.pointer import target_log_softmax

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


def test_lazy_logits_at_kept_positions_equal_the_dense_distribution_with_gradients():
    """``at(mask)`` with lazy logits runs the output layer on the kept rows only, and gives the
    same log-probabilities and parameter gradients as the dense (B, T, V) path."""
    g = torch.Generator().manual_seed(7)
    B, T, F_, V, L, n_oov = 3, 5, 6, 9, 4, 2
    layer = torch.nn.Linear(F_, V).double()
    features = torch.randn(B, T, F_, dtype=torch.float64, generator=g)
    gen = torch.rand(B, T, dtype=torch.float64, generator=g) * 0.8 + 0.1
    copy = torch.rand(B, T, L, dtype=torch.float64, generator=g)
    copy = copy / copy.sum(-1, keepdim=True) * (1 - gen).unsqueeze(-1)
    src = torch.randint(4, V + n_oov, (B, L), generator=g)
    target = torch.randint(0, V + n_oov, (B, T), generator=g)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]], dtype=torch.bool)

    dense = CopyDistribution(layer(features), gen, copy, src, V + n_oov)
    expected = -(dense.log_prob(target) * mask).sum()
    expected.backward()
    grads = [p.grad.clone() for p in layer.parameters()]
    layer.zero_grad()

    calls = []
    layer.register_forward_hook(lambda module, inputs, output: calls.append(inputs[0].shape))
    lazy = CopyDistribution(None, gen, copy, src, V + n_oov, features=features, output_layer=layer)
    assert lazy.vocab_size == V
    kept = lazy.at(mask)
    got = -kept.log_prob(target[mask]).sum()
    got.backward()
    assert calls == [torch.Size([int(mask.sum()), F_])]  # the output layer saw the 9 kept rows only
    torch.testing.assert_close(got, expected)
    for p, want in zip(layer.parameters(), grads):
        torch.testing.assert_close(p.grad, want)
    # the full distribution of a lazy one equals the dense one
    torch.testing.assert_close(lazy.log_probs(), dense.log_probs())


def test_copy_distribution_needs_logits_or_features():
    import pytest

    with pytest.raises(ValueError, match="vocab_logits"):
        CopyDistribution(None, None, None, torch.zeros(1, 2, dtype=torch.long), 5)


def _lazy(seed=11, pointer=True):
    g = torch.Generator().manual_seed(seed)
    B, T, F_, V, L = 2, 3, 4, 6, 3
    layer = torch.nn.Linear(F_, V)
    features = torch.randn(B, T, F_, generator=g)
    gen = torch.rand(B, T, generator=g) * 0.5 + 0.25 if pointer else None
    copy = (1 - gen).unsqueeze(-1).expand(B, T, L) / L if pointer else None
    src = torch.randint(4, V + 1, (B, L), generator=g)
    return CopyDistribution(None, gen, copy, src, V + 1, features=features, output_layer=layer)


def test_at_edge_cases():
    import pytest

    dist = _lazy()
    none_kept = dist.at(torch.zeros(2, 3, dtype=torch.bool))
    assert none_kept.log_prob(torch.zeros(0, dtype=torch.long)).shape == (0,)
    with pytest.raises(TypeError, match="boolean mask"):
        dist.at(torch.ones(2, 3, dtype=torch.long))
    mask = torch.tensor([[True, False, True], [False, True, True]])
    target = torch.tensor([[1, 2, 6], [3, 4, 5]])
    # after the dense logits exist, at() slices them; without a pointer there is no copy part
    for d in (dist, _lazy(pointer=False)):
        dense = d.log_prob(target)[mask]
        assert d._logits is not None  # log_prob on the whole distribution computed them
        torch.testing.assert_close(d.at(mask).log_prob(target[mask]), dense)


def test_bf16_features_read_after_autocast():
    """Features made under bf16 autocast and read after the region still meet the fp32 layer."""
    dist = _lazy()
    lazy = CopyDistribution(None, dist.gen_weight, dist.copy_weight, dist.src_ext_ids, dist.n_ext,
                            features=dist.features.bfloat16(), output_layer=dist.output_layer)
    log_p = lazy.log_probs()  # outside autocast: the features are cast to the layer's dtype
    assert log_p.dtype == torch.float32 and torch.isfinite(log_p).all()
