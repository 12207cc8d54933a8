"""Objectives of DCA section 3: MLE, semantic cohesion, self-critical RL, mixed loss; presets m1-m7."""

import math

import pytest
import torch

from agentsum.config import load_config, preset_names
from agentsum.data.batch import make_batch
from agentsum.data.vocab import BOS_ID, EOS_ID, PAD_ID, Vocabulary
from agentsum.decoding.copying import teacher_forced
from agentsum.decoding.search import SearchConfig, greedy_search, sample_and_greedy
from agentsum.models.dca import DCA, DCAConfig
from agentsum.checkpoint import read_checkpoint
from agentsum.training.objectives import MLE, SelfCritical, semantic_cohesion, sentence_baselines, sentence_end_ids
from agentsum.training.rewards import sentence_reward_matrix, sequence_rewards
from agentsum.training.trainer import Trainer
from conftest import synthetic_rows, write_jsonl

WORDS = "the a cat dog sat on mat ran . and big small red blue house tree saw !".split()
VOCAB = Vocabulary.build([WORDS])
DOT = VOCAB.id(".")
DOCS = [[["the", "cat", "sat", "on", "the", "mat", "."], ["the", "dog", "ran", "."]],
        [["a", "big", "red", "house", "."], ["the", "tree", "saw", "a", "cat", "."]]]
SUMMARIES = [["the", "cat", "sat", ".", "the", "dog", "ran", "."], ["a", "red", "house", "."]]


def tiny_model(seed=0, **kw):
    torch.manual_seed(seed)
    return DCA(DCAConfig(vocab_size=len(VOCAB), embedding_size=8, hidden_size=12, **kw))


def test_semantic_cohesion_equals_hand_computed_cosines():
    states = torch.tensor([[[1.0, 0.0], [0.5, 0.5], [0.0, 1.0], [3.0, 4.0], [1.0, 1.0]],
                           [[1.0, 2.0], [2.0, 1.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]])
    # doc 1: delimiters at t = 0, 2, 3 -> cos(s2, s0) + cos(s3, s2); doc 2: one sentence -> 0
    cat = VOCAB.id("cat")
    targets = torch.tensor([[DOT, cat, DOT, DOT, EOS_ID], [cat, DOT, EOS_ID, PAD_ID, PAD_ID]])
    mask = targets != PAD_ID
    sem = semantic_cohesion(states, targets, mask, [DOT])
    expected = 0.0 + 4.0 / 5.0  # cos((0,1),(1,0)) = 0; cos((3,4),(0,1)) = 4/5
    assert sem[0].item() == pytest.approx(expected)
    assert sem[1].item() == 0.0
    # padding is never a delimiter, even if it holds the delimiter id
    targets[1, 3] = DOT
    assert semantic_cohesion(states, targets, mask, [DOT])[1].item() == 0.0


def test_mle_sem_adds_lambda_times_cohesion():
    model = tiny_model()
    batch = make_batch(DOCS, VOCAB, summaries=SUMMARIES)
    plain, s0 = MLE()(model, batch)
    with_sem, s1 = MLE(0.1, sentence_end_ids(VOCAB))(model, batch)
    assert float(s1["nll_sum"]) == pytest.approx(float(s0["nll_sum"]))
    assert s1["sem_sum"] != 0
    assert with_sem.item() == pytest.approx(plain.item() + 0.1 * float(s1["sem_sum"] / s1["tokens"]), rel=1e-5)


@pytest.mark.parametrize("pointer", ["single", "multi", "none"])
def test_label_smoothing_is_eps_of_uniform_cross_entropy_over_the_mixture(pointer):
    model = tiny_model(pointer=pointer).eval()  # the same pass for the objective and the hand computation
    # zebra: an in-article OOV, which the pointers reach through an extended id
    docs = [[DOCS[0][0] + ["zebra", "."], DOCS[0][1]], DOCS[1]]
    summaries = [SUMMARIES[0] + ["zebra", "."], SUMMARIES[1]]
    batch = make_batch(docs, VOCAB, summaries=summaries)
    eps = 0.2
    plain, s0 = MLE()(model, batch)
    smooth, s1 = MLE(label_smoothing=eps)(model, batch)
    assert float(s1["nll_sum"]) == pytest.approx(float(s0["nll_sum"]), rel=1e-6)  # the logged NLL is the true one

    out = model(batch)
    mask = batch.tgt_mask
    log_p = out.dist.log_probs()[mask]  # (P, V_ext), the dense mixture
    target = model.target_ids(batch.tgt_out)[mask]
    nll = -log_p.gather(1, target[:, None]).squeeze(1)
    words = [i for i in range(len(VOCAB)) if i not in (PAD_ID, BOS_ID)]
    uniform = -log_p[:, words].mean(1)
    expected = ((1 - eps) * nll + eps * uniform).sum() / mask.sum()
    assert smooth.item() == pytest.approx(expected.item(), rel=1e-5)
    assert smooth.item() != pytest.approx(plain.item(), rel=1e-3)
    smooth.backward()
    assert all(p.grad is None or torch.isfinite(p.grad).all() for p in model.parameters())


def test_label_smoothing_out_of_range_is_refused():
    with pytest.raises(ValueError, match="label smoothing"):
        MLE(label_smoothing=1.0)


def test_sample_and_greedy_greedy_matches_greedy_search():
    model = tiny_model().eval()
    batch = make_batch(DOCS, VOCAB)
    sample, greedy = sample_and_greedy(model, batch, SearchConfig(beam_size=1, max_length=12, block_trigrams=False))
    hyps = greedy_search(model, batch, SearchConfig(beam_size=1, max_length=12, block_trigrams=False))
    for b in range(2):
        row = [t for t in greedy[b].tolist() if t not in (PAD_ID, EOS_ID)]
        assert row == hyps.tokens[b]
    assert sample.shape == greedy.shape == (2, 12)


def test_teacher_forced_log_probs_of_a_sample_equal_its_sampling_distributions():
    model = tiny_model(pointer="multi", contextual_agent_attention=True).eval()
    batch = make_batch(DOCS, VOCAB, summaries=SUMMARIES)
    enc = model.encode(batch)
    config = SearchConfig(beam_size=1, max_length=6, block_trigrams=False)
    sample, _ = sample_and_greedy(model, batch, config, enc=enc, generator=torch.Generator().manual_seed(3))
    forced = model(teacher_forced(batch, sample), enc).dist.log_prob(sample)
    state, inputs = model.init_state(enc), torch.full((2,), 2)
    for t in range(sample.size(1)):
        log_probs, state, _ = model.step(enc, state, inputs)
        live = sample[:, t] != PAD_ID
        step_lp = log_probs.gather(1, sample[:, t:t + 1]).squeeze(1)
        assert torch.allclose(step_lp[live], forced[live, t], atol=1e-5)
        inputs = sample[:, t].masked_fill(~live, EOS_ID)


def test_sentence_advantages_sum_to_sequence_advantage():
    w = [VOCAB.id(x) for x in "the cat sat dog ran tree".split()]
    reference = torch.tensor([[w[0], w[1], DOT, w[2], w[3], DOT, EOS_ID]])
    sample = torch.tensor([[w[0], w[1], DOT, w[5], DOT, w[2], w[3], DOT, EOS_ID]])
    greedy = torch.tensor([[w[0], DOT, w[2], DOT, w[3], DOT, w[4], DOT, EOS_ID]])  # more sentences than the sample
    sample_tok, r_sample = sentence_reward_matrix(sample, reference, [DOT])
    greedy_tok, r_greedy = sentence_reward_matrix(greedy, reference, [DOT])
    baseline = sentence_baselines(sample, greedy, greedy_tok, [DOT])
    # one value per sentence: take each sentence's first token
    firsts = [0, 3, 5]
    advantages = [(sample_tok[0, i] - baseline[0, i]).item() for i in firsts]
    assert sum(advantages) == pytest.approx((r_sample - r_greedy).item())
    assert sum(baseline[0, i].item() for i in firsts) == pytest.approx(r_greedy.item())
    assert torch.allclose(sequence_rewards(sample, reference), r_sample)
    # the baseline follows the rewards' dtype and device (tensors made inside follow the inputs)
    as_double = sentence_baselines(sample, greedy, greedy_tok.double(), [DOT])
    assert as_double.dtype == torch.float64 and as_double.device == sample.device
    torch.testing.assert_close(as_double.float(), baseline)


def _log_prob_of(model, batch, tokens):
    with torch.no_grad():
        return model(teacher_forced(batch, tokens)).dist.log_prob(tokens).masked_fill(tokens == PAD_ID, 0).sum(1)


@pytest.mark.parametrize("intermediate", [False, True])
def test_rl_step_raises_winning_sample_and_lowers_losing_one(intermediate):
    model = tiny_model(pointer="multi")
    batch = make_batch(DOCS, VOCAB, summaries=SUMMARIES)
    objective = SelfCritical(sentence_end_ids(VOCAB), gamma=1.0, intermediate=intermediate)
    reference = batch.tgt_out
    # doc 1's sample reproduces the reference (beats a greedy "a ." baseline); doc 2's sample is
    # worse than its greedy baseline, which is the reference itself.
    sample = torch.tensor([reference[0].tolist(), [VOCAB.id("blue"), DOT, EOS_ID] + [PAD_ID] * 6])
    greedy = torch.tensor([[VOCAB.id("a"), DOT, EOS_ID] + [PAD_ID] * 6, reference[1].tolist()])
    adv, stats = objective.advantages(sample, greedy, reference)
    assert stats["reward_sample"] != stats["reward_greedy"]
    before = _log_prob_of(model, batch, sample)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    loss = objective.rl_sum(model, batch, sample, adv) / 10
    loss.backward()
    optimizer.step()
    after = _log_prob_of(model, batch, sample)
    assert after[0] > before[0]  # won: more likely
    assert after[1] < before[1]  # lost: less likely


def test_mixed_objective_trains_and_reports_rewards():
    model = tiny_model(pointer="multi", contextual_agent_attention=True)
    batch = make_batch(DOCS, VOCAB, summaries=SUMMARIES)
    objective = SelfCritical(sentence_end_ids(VOCAB), gamma=0.97, sem_weight=0.1, max_length=10)
    loss, stats = objective(model, batch)
    loss.backward()
    assert math.isfinite(loss.item())
    assert {"reward_sample", "reward_greedy", "rl", "nll"} <= set(stats)
    silent = [n for n, p in model.named_parameters() if p.grad is None or not torch.any(p.grad != 0)]
    assert silent == []  # every parameter receives a non-zero gradient


@pytest.mark.parametrize("decode_dropout", [False, True])
def test_rl_decodes_without_dropout_and_scores_with_it(decode_dropout, monkeypatch):
    """The sample and the greedy baseline come from the model in eval mode (dropout off, no gradients):
    the greedy baseline is then the model's own greedy summary, the same on every call; the sample is
    scored by a pass in train mode. ``decode_dropout`` keeps the old reading: decoded in train mode."""
    from agentsum.training import objectives

    model = tiny_model(pointer="multi", contextual_agent_attention=True, dropout=0.5).train()
    batch = make_batch(DOCS, VOCAB, summaries=SUMMARIES)
    decoded, scored = [], []
    real = objectives.sample_and_greedy

    def recording(core, *args, **kwargs):
        out = real(core, *args, **kwargs)
        decoded.append((core.training, out[1].clone()))
        return out

    monkeypatch.setattr(objectives, "sample_and_greedy", recording)
    model.register_forward_hook(lambda module, args, out: scored.append(module.training))
    objective = SelfCritical(sentence_end_ids(VOCAB), gamma=0.97, max_length=10, decode_dropout=decode_dropout)
    for _ in range(3):
        loss, _ = objective(model, batch)
        loss.backward()
    assert model.training  # left in train mode
    assert [mode for mode, _ in decoded] == [decode_dropout] * 3
    assert scored and all(scored)  # every teacher-forced pass (RL and MLE) ran with dropout on
    model.eval()
    _, greedy = real(model, batch, objective.sampling)
    same = [torch.equal(g, greedy) for _, g in decoded]
    assert same == [True] * 3 if not decode_dropout else not all(same)


def test_rl_without_dropout_decodes_from_the_training_encoding(monkeypatch):
    """A model without dropout is the same in both modes: no second encoding is run."""
    from agentsum.training import objectives

    model = tiny_model(pointer="multi").train()
    calls = []
    real = objectives.sample_and_greedy
    monkeypatch.setattr(objectives, "sample_and_greedy",
                        lambda core, batch, config, enc=None: calls.append(enc is not None) or real(core, batch, config,
                                                                                                      enc=enc))
    SelfCritical(sentence_end_ids(VOCAB), gamma=1.0, max_length=10)(model, make_batch(DOCS, VOCAB, summaries=SUMMARIES))
    assert calls == [True]


PAPER_PRESETS = [n for n in preset_names() if n[:1] == "m" and n[1:2].isdigit()]  # m1-m7, m7-2agents, ...


@pytest.mark.parametrize("name", PAPER_PRESETS)
def test_each_preset_trains_two_steps(name, tmp_path):
    corpus = write_jsonl(tmp_path / "train.jsonl", synthetic_rows(8))
    config = load_config(name, [f"data.train={corpus}", f"data.valid={{path: {corpus}, end: 2}}",
                                f"train.run_dir={tmp_path / 'run'}", "train.init_from=null", "train.max_steps=2",
                                "train.valid_every=2", "train.batch_size=4", "train.rl_max_length=12",
                                "search.max_length=12", "model.hidden_size=32", "model.embedding_size=16"])
    trainer = Trainer(config)
    trainer.run()
    assert trainer.step == 2
    state = read_checkpoint(tmp_path / "run" / "checkpoints" / "best.pt")
    expected = "valid_rougeL" if config.train.objective.startswith("mixed") else "valid_nll"
    assert state["selection"]["metric"] == expected and state["selection"]["best"] is not None
