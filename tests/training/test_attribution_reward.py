"""The attribution reward of self-critical RL (agentsum.training.attribution_reward): a misattributed
sentence is penalised, every other sentence is left alone, and the penalty moves only that sentence's
advantage."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
import torch

from agentsum.data.batch import make_batch
from agentsum.data.text import tokenize
from agentsum.data.vocab import EOS_ID, PAD_ID, Vocabulary
from agentsum.models.dca import DCA, DCAConfig
from agentsum.training.attribution_reward import AttributionReward
from agentsum.training.objectives import SelfCritical, build_objective, sentence_end_ids

CHAT = ("Monica: How is school, Gaia?\nGaia: I have a lot of exams this term\nMonica: Study hard then\n"
        "Gaia: I will, mum")
SOURCE = tokenize(CHAT.replace("\n", " "))
WRONG = tokenize("Monica has a lot of exams this term.")  # the exams are Gaia's
RIGHT = tokenize("Gaia has a lot of exams this term.")
PLAIN = tokenize("They talk about school.")  # no participant subject: not checked
VOCAB = Vocabulary.build([SOURCE + WRONG + RIGHT + PLAIN])
ENDS = sentence_end_ids(VOCAB)


def ids(words):
    return [VOCAB.id(w) for w in words]


def test_only_a_misattributed_sentence_is_penalised_and_eos_carries_the_last():
    batch = make_batch([[SOURCE]], VOCAB, ids=["chat"])
    reward = AttributionReward(VOCAB, 0.5, ENDS)
    row = ids(RIGHT) + ids(PLAIN) + ids(WRONG) + [EOS_ID, PAD_ID]
    matrix, counts = reward.matrix(torch.tensor([row]), batch)
    a, b, c = len(RIGHT), len(PLAIN), len(WRONG)
    assert matrix[0, :a + b].tolist() == [0.0] * (a + b)
    assert matrix[0, a + b:a + b + c].tolist() == [-0.5] * c
    assert matrix[0, a + b + c].item() == -0.5 and matrix[0, -1].item() == 0.0
    assert counts == {"checked": 2, "misattributed": 1} and AttributionReward.share(counts) == 0.5
    assert reward.dialogue(batch, 0) is reward.dialogue(batch, 0)  # read once per document


def test_a_source_that_is_not_a_dialogue_is_never_penalised():
    source = tokenize("Monica has a lot of exams this term. Gaia studies.")
    batch = make_batch([[source]], Vocabulary.build([source]), ids=["news"])
    reward = AttributionReward(VOCAB, 1.0, ENDS)
    matrix, counts = reward.matrix(torch.tensor([ids(WRONG) + [EOS_ID]]), batch)
    assert matrix.abs().sum().item() == 0.0 and counts == {"checked": 0, "misattributed": 0}


def test_the_penalty_moves_the_advantage_of_the_misattributed_sentence_only():
    batch = make_batch([[SOURCE]], VOCAB, summaries=[RIGHT + PLAIN], ids=["chat"])
    reference = batch.tgt_out.masked_fill(batch.tgt_out == 0, -1)
    sample = torch.tensor([ids(RIGHT) + ids(WRONG) + [EOS_ID]])
    greedy = torch.tensor([ids(RIGHT) + ids(PLAIN) + [EOS_ID]])
    plain, _ = SelfCritical(ENDS).advantages(sample, greedy, reference, batch)
    penalised, stats = SelfCritical(ENDS, attribution_reward=AttributionReward(VOCAB, 0.3, ENDS)).advantages(
        sample, greedy, reference, batch)
    n = len(RIGHT)
    assert torch.allclose(penalised[0, :n], plain[0, :n])
    assert torch.allclose(penalised[0, n:], plain[0, n:] - 0.3)
    assert stats["misattributed_share"].item() == pytest.approx(0.5)  # sample: RIGHT checked, WRONG flagged


def test_a_mixed_objective_with_the_attribution_reward_trains():
    torch.manual_seed(0)
    model = DCA(DCAConfig(vocab_size=len(VOCAB), embedding_size=8, hidden_size=8, contextual_layers=1))
    batch = make_batch([[SOURCE]], VOCAB, summaries=[RIGHT], ids=["chat"])
    objective = SelfCritical(ENDS, gamma=0.97, max_length=12, attribution_reward=AttributionReward(VOCAB, 0.2, ENDS))
    loss, stats = objective(model, batch)
    loss.backward()
    assert math.isfinite(loss.item()) and "misattributed_share" in stats


def test_the_attribution_reward_is_configured_only_for_rl_with_sentence_rewards():
    base = dict(objective="mixed", sem_weight=0.1, coverage_weight=0.0, gamma=0.97, intermediate_rewards=True,
                reward="rougeL", rl_max_length=20, rl_decode_dropout=False, label_smoothing=0.0, claim_reward=0.0,
                attribution_reward=0.2, fluency_reward=0.0)
    objective = build_objective(SimpleNamespace(**base), VOCAB)
    assert objective.attribution_reward.weight == 0.2 and objective.claim_reward is None
    assert build_objective(SimpleNamespace(**{**base, "attribution_reward": 0.0}), VOCAB).attribution_reward is None
    with pytest.raises(ValueError, match="train.attribution_reward .* needs train.objective"):
        build_objective(SimpleNamespace(**{**base, "objective": "mle"}), VOCAB)
    with pytest.raises(ValueError, match="intermediate_rewards"):
        build_objective(SimpleNamespace(**{**base, "intermediate_rewards": False}), VOCAB)
    with pytest.raises(ValueError, match=">= 0"):
        AttributionReward(VOCAB, -0.1, ENDS)


def test_a_run_with_the_attribution_reward_logs_the_misattributed_share(tmp_path):
    from agentsum.config import load_config
    from agentsum.training.trainer import Trainer

    rows = [{"id": f"d{i}", "dialogue": CHAT, "summary": "Gaia has a lot of exams this term."} for i in range(4)]
    corpus = tmp_path / "chats.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = load_config("tiny", [f"data.train={corpus}", f"data.valid={corpus}", f"train.run_dir={tmp_path / 'run'}",
                                  "train.objective=mixed", "train.attribution_reward=0.2", "train.max_steps=2",
                                  "train.log_every=1", "train.valid_every=2", "train.batch_size=2",
                                  "train.rl_max_length=12", "search.max_length=12"])
    Trainer(config).run()
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    shares = [r["misattributed_share"] for r in records if "misattributed_share" in r]
    assert shares and all(0.0 <= s <= 1.0 for s in shares)


def test_validation_reads_a_prepared_dialogue_by_its_turns():
    """Validation's greedy summaries are scored against the prepared tokens: a dialogue is given back
    its turn lines, so the attribution figure reads the same sides as from the text."""
    from agentsum.data.attribution import Dialogue
    from agentsum.data.dataset import Document
    from agentsum.training.trainer import source_text

    doc = Document("d", [SOURCE[:14], SOURCE[14:]], [], "")
    text = source_text(doc, dialogue=True)
    assert text.splitlines()[0] == "monica : how is school , gaia ?" and len(text.splitlines()) == 4
    assert Dialogue.parse(text).sides == Dialogue.parse(CHAT).sides
    assert source_text(doc, dialogue=False) == " ".join(SOURCE)
