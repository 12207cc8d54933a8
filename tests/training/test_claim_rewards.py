"""The claim reward of self-critical RL (agentsum.training.claim_rewards): each sentence's claim score,
its per-token layout beside the ROUGE rewards, its place in the advantages, and its configuration."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from agentsum.data.batch import make_batch
from agentsum.data.claims import SourceClaims
from agentsum.data.text import tokenize
from agentsum.data.vocab import EOS_ID, PAD_ID, Vocabulary
from agentsum.models.dca import DCA, DCAConfig
from agentsum.training.claim_rewards import ClaimReward, sentence_claim_score
from agentsum.training.objectives import SelfCritical, build_objective, sentence_end_ids

CALL = tokenize("Second quarter sales decreased 28% to $403.6 million. Net debt was $112.1 million. "
                "Adjusted EPS was $0.31 in the second quarter.")
RIGHT = tokenize("q2 sales fell 28% to $403.6 million.")  # two numbers in context, q2 agrees
WRONG = tokenize("q3 sales $112.1 million.")  # q3 disagrees, net debt stated as sales
PLAIN = tokenize("the company did well.")  # no claim
MALFORMED = tokenize("sales $ per share.")
VOCAB = Vocabulary.build([CALL + RIGHT + WRONG + PLAIN + MALFORMED])


def source():
    sentences, start = [], 0
    for k, token in enumerate(CALL):
        if token == ".":
            sentences.append(CALL[start:k + 1])
            start = k + 1
    return SourceClaims(sentences)


@pytest.mark.parametrize("words, expected", [
    (RIGHT, (1.0, 3, 0)),
    (WRONG, (-1.0, 0, 2)),
    (PLAIN, (0.0, 0, 0)),
    (MALFORMED, (-1.0, 0, 1)),
    (tokenize("q2 sales $112.1 million and eps $0.31."), (1 / 3, 2, 1)),
])
def test_a_sentence_scores_its_right_claims_against_its_wrong_ones(words, expected):
    score, right, wrong = sentence_claim_score(words, source())
    assert (right, wrong) == expected[1:] and score == pytest.approx(expected[0])


def test_a_period_mention_pays_only_beside_a_figure_but_a_wrong_one_always_costs():
    """A sentence of period mentions alone (``q2 .``) is no claim: rewarded, a policy could write one
    per sentence for lambda each. Beside a figure the agreeing period counts right; a disagreeing
    period counts wrong with or without one."""
    assert sentence_claim_score(tokenize("q2 ."), source()) == (0.0, 0, 0)
    assert sentence_claim_score(tokenize("in q2 the company did well."), source()) == (0.0, 0, 0)
    assert sentence_claim_score(tokenize("q3 ."), source()) == (-1.0, 0, 1)
    assert sentence_claim_score(tokenize("q2 eps $0.31."), source()) == (1.0, 2, 0)


def ids(words):
    return [VOCAB.id(w) for w in words]


def test_every_token_of_a_sentence_carries_its_weighted_score_and_eos_the_last():
    batch = make_batch([[CALL]], VOCAB, ids=["call"])
    row = ids(RIGHT) + ids(WRONG) + [EOS_ID, PAD_ID, PAD_ID]
    reward = ClaimReward(VOCAB, 0.5, sentence_end_ids(VOCAB))
    matrix, counts = reward.matrix(torch.tensor([row]), batch)
    n, m = len(RIGHT), len(WRONG)
    assert matrix[0, :n].tolist() == [0.5] * n
    assert matrix[0, n:n + m].tolist() == [-0.5] * m
    assert matrix[0, n + m].item() == -0.5  # EOS: the last sentence's
    assert matrix[0, n + m + 1:].tolist() == [0.0, 0.0]
    assert counts == {"claims_right": 3, "claims_wrong": 2}
    assert reward.source(batch, 0) is reward.source(batch, 0)  # read once per document


def test_the_claim_reward_moves_the_advantage_of_a_wrong_sentence_only():
    """Sample and baseline agree on ROUGE's view of their second sentence's tokens but not on its
    claims: with the reward, the sample's wrong sentence has a lower advantage; its right first
    sentence, equal to the baseline's, keeps its advantage."""
    batch = make_batch([[CALL]], VOCAB, summaries=[RIGHT + PLAIN], ids=["call"])
    reference = batch.tgt_out.masked_fill(batch.tgt_out == 0, -1)
    sample = torch.tensor([ids(RIGHT) + ids(WRONG) + [EOS_ID]])
    greedy = torch.tensor([ids(RIGHT) + ids(PLAIN) + [EOS_ID]])
    ends = sentence_end_ids(VOCAB)
    plain, _ = SelfCritical(ends).advantages(sample, greedy, reference, batch)
    claims, stats = SelfCritical(ends, claim_reward=ClaimReward(VOCAB, 1.0, ends)).advantages(sample, greedy,
                                                                                               reference, batch)
    n = len(RIGHT)
    assert torch.allclose(claims[0, :n], plain[0, :n])
    assert torch.allclose(claims[0, n:], plain[0, n:] - 1.0)  # -1 (two wrong claims) against 0 (no claim)
    assert stats["claims_right_share"].item() == pytest.approx(3 / 5)


def test_a_mixed_objective_with_the_claim_reward_trains():
    torch.manual_seed(0)
    model = DCA(DCAConfig(vocab_size=len(VOCAB), embedding_size=8, hidden_size=8, contextual_layers=1,
                          pointer="multi"))
    batch = make_batch([[CALL[:12], CALL[12:]]], VOCAB, summaries=[RIGHT], ids=["call"])
    ends = sentence_end_ids(VOCAB)
    objective = SelfCritical(ends, gamma=0.97, max_length=12, claim_reward=ClaimReward(VOCAB, 0.5, ends))
    loss, stats = objective(model, batch)
    loss.backward()
    assert math.isfinite(loss.item()) and "claims_right_share" in stats


def test_the_claim_reward_is_configured_only_for_rl_with_sentence_rewards():
    base = dict(objective="mixed", sem_weight=0.1, coverage_weight=0.0, gamma=0.97, intermediate_rewards=True,
                reward="rougeL", rl_max_length=20, rl_decode_dropout=False, label_smoothing=0.0, claim_reward=0.3,
                attribution_reward=0.0, fluency_reward=0.0)
    objective = build_objective(SimpleNamespace(**base), VOCAB)
    assert objective.claim_reward is not None and objective.claim_reward.weight == 0.3
    assert build_objective(SimpleNamespace(**{**base, "claim_reward": 0.0}), VOCAB).claim_reward is None
    with pytest.raises(ValueError, match="train.claim_reward .* needs train.objective"):
        build_objective(SimpleNamespace(**{**base, "objective": "mle"}), VOCAB)
    with pytest.raises(ValueError, match="intermediate_rewards"):
        build_objective(SimpleNamespace(**{**base, "intermediate_rewards": False}), VOCAB)
    with pytest.raises(ValueError, match=">= 0"):
        ClaimReward(VOCAB, -1.0, [])


def test_a_run_with_the_claim_reward_logs_the_share_of_right_claims(tmp_path):
    import json

    from agentsum.config import load_config
    from agentsum.training.trainer import Trainer

    rows = [{"id": f"c{i}", "article": "Second quarter sales decreased 28% to $403.6 million. Net debt was "
                                       "$112.1 million. The board met.",
             "summary": "q2 sales fell 28% to $403.6 million."} for i in range(4)]
    corpus = tmp_path / "calls.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = load_config("tiny", [f"data.train={corpus}", f"data.valid={corpus}", f"train.run_dir={tmp_path / 'run'}",
                                  "train.objective=mixed", "train.claim_reward=0.5", "train.max_steps=2",
                                  "train.log_every=1", "train.valid_every=2", "train.batch_size=2",
                                  "train.rl_max_length=12", "search.max_length=12"])
    Trainer(config).run()
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    shares = [r["claims_right_share"] for r in records if "claims_right_share" in r]
    assert shares and all(0.0 <= s <= 1.0 for s in shares)


def test_an_mle_run_records_greedy_rouge_and_claim_figures_when_asked(tmp_path):
    """train.valid_rouge: the control of an RL run records the same validation curve (greedy ROUGE-L
    and the claim figures of its summaries) while still selecting by validation NLL."""
    import json

    from agentsum.config import load_config
    from agentsum.training.trainer import Trainer

    rows = [{"id": f"c{i}", "article": "Second quarter sales decreased 28% to $403.6 million. Net debt was "
                                       "$112.1 million. The board met.",
             "summary": "q2 sales fell 28% to $403.6 million."} for i in range(4)]
    corpus = tmp_path / "calls.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    common = [f"data.train={corpus}", f"data.valid={corpus}", "train.objective=mle", "train.max_steps=2",
              "train.log_every=1", "train.valid_every=2", "train.batch_size=2", "search.max_length=12"]
    for flag, expect in (("true", True), ("false", False)):
        run = tmp_path / f"run-{flag}"
        config = load_config("tiny", [*common, f"train.run_dir={run}", f"train.valid_rouge={flag}"])
        Trainer(config).run()
        records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        valid = [r for r in records if "valid_nll" in r]
        assert valid
        assert all(("valid_rougeL" in r) == expect for r in valid)
        assert all(("valid_malformed_figures" in r) == expect for r in valid)
        state = torch.load(run / "checkpoints" / "best.pt", weights_only=True)
        assert state["selection"]["metric"] == "valid_nll"
