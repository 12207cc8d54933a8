"""Coverage (See et al., 2017) for DCA: each agent's past word attention in eq (8), and the coverage loss."""

import dataclasses

import pytest
import torch

from agentsum.decoding.search import SearchConfig, search
from agentsum.models.dca import DCA, DCAConfig
from agentsum.training.objectives import MLE
from test_dca import V, batch_of


def model_with(seed=0, **kw) -> DCA:
    torch.manual_seed(seed)
    return DCA(DCAConfig(vocab_size=V, embedding_size=8, hidden_size=12, pointer="multi",
                         contextual_agent_attention=True, **kw)).eval()


def test_coverage_loss_is_the_overlap_of_attention_with_past_attention():
    model = model_with(coverage=True)
    batch = batch_of([0, 1, 2])
    out = model(batch)
    word = out.attention.word  # (B, T, A, S)
    past = torch.cumsum(word, dim=1) - word  # coverage before each step
    agents = batch.src_mask.any(-1).sum(-1).float()  # agents with text: 3, 3, 2
    expected = torch.minimum(word, past).sum((2, 3)) / agents.unsqueeze(1)
    torch.testing.assert_close(out.coverage_loss, expected)
    assert torch.all(out.coverage_loss[:, 0] == 0)  # nothing covered before the first step
    assert out.coverage_loss[:, 1:].sum() > 0


def test_coverage_enters_the_attention_scores():
    covered = model_with(coverage=True)
    plain = model_with(coverage=False)
    missing, unexpected = plain.load_state_dict(covered.state_dict(), strict=False)
    assert missing == [] and unexpected == ["w_cov.weight"]
    batch = batch_of([0, 1])
    with torch.no_grad():
        covered.w_cov.weight.zero_()  # w_c = 0: the coverage has no effect on the scores
        torch.testing.assert_close(covered(batch).attention.word, plain(batch).attention.word)
        covered.w_cov.weight.fill_(3.0)
        changed = covered(batch).attention.word
    assert torch.allclose(changed[:, 0], plain(batch).attention.word[:, 0], atol=1e-6)  # step 0: coverage 0
    assert not torch.allclose(changed[:, 1:], plain(batch).attention.word[:, 1:], atol=1e-3)


def test_mle_adds_the_weighted_coverage_loss_and_its_gradient_reaches_w_cov():
    model = model_with(coverage=True).train()
    batch = batch_of([0, 1, 2])
    torch.manual_seed(3)
    plain, stats = MLE()(model, batch)
    torch.manual_seed(3)
    weighted, stats_w = MLE(coverage_weight=2.0)(model, batch)
    assert stats["coverage"] > 0
    assert weighted.item() == pytest.approx(plain.item() + 2.0 * float(stats_w["coverage"]), rel=1e-5)
    weighted.backward()
    assert model.w_cov.weight.grad.abs().sum() > 0


def test_beam_search_carries_and_reorders_coverage():
    model = model_with(coverage=True)
    batch = batch_of([0, 1, 2], summaries=False)
    state = model.init_state(model.encode(batch))
    assert state.coverage.shape == batch.src_mask.shape and state.coverage.sum() == 0
    _, state, _ = model.step(model.encode(batch), state, torch.full((3,), 2, dtype=torch.long))
    picked = state.select(torch.tensor([2, 0]))
    assert state.coverage.sum() > 0 and torch.equal(picked.coverage, state.coverage[[2, 0]])
    beam = search(model, batch, SearchConfig(beam_size=3, max_length=6, min_length=6, block_trigrams=False))
    greedy = search(model, batch, SearchConfig(beam_size=1, max_length=6, min_length=6, block_trigrams=False))
    assert all(len(t) == 6 for t in beam.tokens) and all(len(t) == 6 for t in greedy.tokens)


def test_coverage_after_each_step_sums_the_attention_so_far():
    model = model_with(coverage=True)
    batch = batch_of([0, 1], summaries=False)
    enc = model.encode(batch)
    state = model.init_state(enc)
    total = torch.zeros_like(state.coverage)
    ids = torch.full((2,), 2, dtype=torch.long)
    for _ in range(4):
        _, state, attention = model.step(enc, state, ids)
        total = total + attention.word
        torch.testing.assert_close(state.coverage, total)
    # every agent holding text spends one unit of attention per step
    torch.testing.assert_close(state.coverage.sum(-1), 4.0 * batch.src_mask.any(-1).float())


def test_config_round_trip_keeps_coverage_off_by_default():
    assert DCAConfig(vocab_size=10).coverage is False
    assert not hasattr(DCA(DCAConfig(vocab_size=10)), "w_cov")
    assert dataclasses.asdict(DCAConfig(vocab_size=10, coverage=True))["coverage"] is True


def test_transformer_coverage_loss_on_the_copy_attention():
    from agentsum.models.transformer_pg import TransformerPG, TransformerPGConfig

    torch.manual_seed(0)
    config = TransformerPGConfig(vocab_size=V, d_model=16, heads=2, d_ff=32, encoder_layers=1, decoder_layers=1,
                                 dropout=0.0, coverage=True)
    model = TransformerPG(config).eval()
    batch = batch_of([0, 1, 2])
    out = model(batch)
    alpha = (out.attention.word * out.attention.agent.unsqueeze(-1)).flatten(-2)
    expected = torch.stack([torch.minimum(alpha[:, t], alpha[:, :t].sum(1)).sum(-1)
                            for t in range(alpha.size(1))], dim=1)
    torch.testing.assert_close(out.coverage_loss, expected)
    plain = TransformerPG(dataclasses.replace(config, coverage=False)).eval()
    plain.load_state_dict(model.state_dict())  # no new parameters
    assert plain(batch).coverage_loss is None
    loss, stats = MLE(coverage_weight=1.0)(model, batch)
    assert float(stats["coverage"]) == pytest.approx(out.coverage_loss[batch.tgt_mask].sum().item() / int(stats["tokens"]))


def test_coverage_phase_starts_from_a_model_trained_without_it(tiny_run, tmp_path):
    """See et al. (2017) add coverage for a last, short phase: --init-from a model without w_c."""
    from agentsum.config import load_config
    from agentsum.checkpoint import CheckpointError, read_checkpoint
    from agentsum.training.trainer import Trainer

    base = read_checkpoint(tiny_run["checkpoint"])
    overrides = [f"data.train={tiny_run['train']}", f"data.valid={tiny_run['test']}", "train.max_steps=2",
                 f"train.run_dir={tmp_path / 'cov'}", "model.coverage=true"]
    Trainer(load_config("tiny", overrides), init_from=str(tiny_run["checkpoint"])).run()
    state = read_checkpoint(tmp_path / "cov" / "checkpoints" / "last.pt")
    assert "w_cov.weight" in state["model"]
    torch.testing.assert_close(state["model"]["embedding.weight"].shape, base["model"]["embedding.weight"].shape)
    # any other mismatch is still an error
    with pytest.raises(CheckpointError, match="do not fit"):
        Trainer(load_config("tiny", overrides[:-1] + ["model.contextual_layers=0", f"train.run_dir={tmp_path / 'x'}"]),
                init_from=str(tiny_run["checkpoint"]))
