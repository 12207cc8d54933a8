"""The fluency reward of self-critical RL (agentsum.training.fluency_reward): SLOR under a summary LM
of the training summaries; a sentence less fluent than the held-out summaries' level is penalised,
a fluent one is not, and the penalty moves only that sentence's advantage."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
import torch

from agentsum.data.batch import make_batch
from agentsum.data.dataset import Document
from agentsum.data.text import tokenize
from agentsum.data.vocab import EOS_ID, PAD_ID, Vocabulary
from agentsum.models.summary_lm import NAME
from agentsum.training.fluency_reward import Fluency, FluencyReward
from agentsum.training.objectives import SelfCritical, build_objective, sentence_end_ids

CHAT = "Lisa: I have to clean the house today\nTom: ok, I will buy the milk then"
SOURCE = tokenize(CHAT.replace("\n", " "))
PATTERNS = ["{a} has to clean the house .", "{a} will buy the milk .", "{a} has to buy the bread .",
            "{a} will clean the kitchen .", "{a} has to go to the shop .", "{a} will call {b} later ."]
NAMES = ["anna", "ben", "carl", "dora", "eve", "finn", "gina", "hugo", "ida", "jon", "kim", "leo"]
FLUENT = tokenize("Lisa has to clean the house.")
BROKEN = tokenize("Lisa have to clean house the.")
OTHER = tokenize("Tom will buy the milk.")
VOCAB = Vocabulary.build([SOURCE + FLUENT + BROKEN + OTHER + tokenize("anna ben bread kitchen shop go call later")])
ENDS = sentence_end_ids(VOCAB)


def docs() -> list[Document]:
    """Training documents: two-person chats whose summaries follow PATTERNS, names varied."""
    out = []
    for k in range(60):
        a, b = NAMES[k % len(NAMES)], NAMES[(k + 5) % len(NAMES)]
        summary = PATTERNS[k % len(PATTERNS)].format(a=a, b=b).split()
        chat = f"{a} : hi {b} : hello {a} : bye".split()
        out.append(Document(f"d{k}", [chat], summary, " ".join(summary)))
    return out


def ids(words):
    return [VOCAB.id(w) for w in words]


def test_slor_prefers_the_grammatical_order_and_takes_word_frequency_out():
    summaries = [[NAME if w in NAMES else w for w in d.summary] for d in docs()]
    fluency = Fluency.fit(summaries, order=3)
    good = [NAME, "has", "to", "clean", "the", "house", "."]
    bad = [NAME, "have", "to", "clean", "house", "the", "."]
    assert fluency.slor(good, 0, len(good)) > fluency.slor(bad, 0, len(bad)) + 1.0
    # the same words in the same order score the same SLOR whether or not they are frequent:
    # the unigram term removes frequency ("kitchen" is rarer than "house" in PATTERNS)
    rare = [NAME, "will", "clean", "the", "kitchen", "."]
    assert fluency.slor(rare, 0, len(rare)) > fluency.slor(bad, 0, len(bad))
    assert fluency.slor(good, 3, 3) == 0.0
    # a span is read after the tokens before it: the same words score differently in another context
    two = good + [NAME, "will", "buy", "the", "milk", "."]
    assert fluency.slor(two, 7, 13) != fluency.slor(two[7:], 0, 6)


def test_only_a_sentence_below_the_level_is_penalised_and_eos_carries_the_last():
    fitted = FluencyReward.fit(VOCAB, 0.5, ENDS, docs(), order=3)
    # the level: the mean sentence SLOR of the held-out summaries (every 10th: d0, d10, ...)
    held = [[NAME if w in NAMES else w for w in d.summary] for d in docs()[::10]]
    assert fitted.level == pytest.approx(sum(fitted.fluency.slor(h, 0, len(h)) for h in held) / len(held))
    a, b = len(FLUENT), len(BROKEN)
    words = [NAME if w in ("lisa", "tom") else w for w in FLUENT + BROKEN]
    slor_fluent, slor_broken = fitted.fluency.slor(words, 0, a), fitted.fluency.slor(words, a, a + b)
    assert slor_fluent > slor_broken
    reward = FluencyReward(VOCAB, 0.5, ENDS, fitted.fluency, level=(slor_fluent + slor_broken) / 2)
    batch = make_batch([[SOURCE]], VOCAB, ids=["chat"])
    assert reward.names(batch, 0) == {"lisa", "tom"}
    row = ids(FLUENT) + ids(BROKEN) + [EOS_ID, PAD_ID]
    matrix, counts = reward.matrix(torch.tensor([row]), batch)
    assert matrix[0, :a].tolist() == [0.0] * a
    penalty = matrix[0, a].item()
    assert penalty < 0 and matrix[0, a:a + b].tolist() == [penalty] * b
    assert matrix[0, a + b].item() == penalty and matrix[0, -1].item() == 0.0
    assert counts == {"sentences": 2, "disfluent": 1} and FluencyReward.share(counts) == 0.5
    assert penalty == pytest.approx(0.5 * (slor_broken - reward.level), rel=1e-5)  # lambda times the gap


def test_the_penalty_moves_the_advantage_of_the_disfluent_sentence_only():
    batch = make_batch([[SOURCE]], VOCAB, summaries=[FLUENT + OTHER], ids=["chat"])
    reference = batch.tgt_out.masked_fill(batch.tgt_out == 0, -1)
    sample = torch.tensor([ids(FLUENT) + ids(BROKEN) + [EOS_ID]])
    greedy = torch.tensor([ids(FLUENT) + ids(OTHER) + [EOS_ID]])
    reward = FluencyReward.fit(VOCAB, 0.3, ENDS, docs(), order=3)
    plain, _ = SelfCritical(ENDS).advantages(sample, greedy, reference, batch)
    penalised, stats = SelfCritical(ENDS, fluency_reward=reward).advantages(sample, greedy, reference, batch)
    n = len(FLUENT)
    mine, counts = reward.matrix(sample, batch)
    baseline, _ = reward.matrix(greedy, batch)
    # the first sentences are the same text: their rewards cancel; the second sentence's advantage
    # moves by the sample's penalty less the baseline's second sentence's
    assert torch.allclose(penalised[0, :n], plain[0, :n])
    assert torch.allclose(penalised[0, n:], plain[0, n:] + mine[0, n:] - baseline[0, n])
    assert (mine[0, n:] < baseline[0, n]).all()  # the broken sentence is penalised more
    assert stats["disfluent_share"].item() == pytest.approx(FluencyReward.share(counts))  # the sample's


def test_the_fluency_reward_is_configured_only_for_rl_with_sentence_rewards():
    base = dict(objective="mixed", sem_weight=0.1, coverage_weight=0.0, gamma=0.97, intermediate_rewards=True,
                reward="rougeL", rl_max_length=20, rl_decode_dropout=False, label_smoothing=0.0, claim_reward=0.0,
                attribution_reward=0.0, fluency_reward=0.2)
    objective = build_objective(SimpleNamespace(**base), VOCAB, docs())
    assert objective.fluency_reward.weight == 0.2 and objective.attribution_reward is None
    assert math.isfinite(objective.fluency_reward.level)
    assert build_objective(SimpleNamespace(**{**base, "fluency_reward": 0.0}), VOCAB).fluency_reward is None
    with pytest.raises(ValueError, match="train.fluency_reward .* needs train.objective"):
        build_objective(SimpleNamespace(**{**base, "objective": "mle"}), VOCAB, docs())
    with pytest.raises(ValueError, match="intermediate_rewards"):
        build_objective(SimpleNamespace(**{**base, "intermediate_rewards": False}), VOCAB, docs())
    with pytest.raises(ValueError, match="needs train_docs"):
        build_objective(SimpleNamespace(**base), VOCAB)
    with pytest.raises(ValueError, match=">= 0"):
        build_objective(SimpleNamespace(**{**base, "fluency_reward": -0.1}), VOCAB, docs())
    with pytest.raises(ValueError, match="needs training summaries"):
        FluencyReward.fit(VOCAB, 0.2, ENDS, [Document("x", [SOURCE], [], "")])


def test_a_run_with_the_fluency_reward_logs_the_disfluent_share(tmp_path):
    from agentsum.config import load_config
    from agentsum.training.trainer import Trainer

    rows = [{"id": f"d{i}", "dialogue": CHAT, "summary": s} for i, s in
            enumerate(["Lisa has to clean the house.", "Tom will buy the milk."] * 3)]
    corpus = tmp_path / "chats.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = load_config("tiny", [f"data.train={corpus}", f"data.valid={corpus}", f"train.run_dir={tmp_path / 'run'}",
                                  "train.objective=mixed", "train.fluency_reward=0.1", "train.max_steps=2",
                                  "train.log_every=1", "train.valid_every=2", "train.batch_size=2",
                                  "train.rl_max_length=12", "search.max_length=12"])
    Trainer(config).run()
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    shares = [r["disfluent_share"] for r in records if "disfluent_share" in r]
    assert shares and all(0.0 <= s <= 1.0 for s in shares)


def test_sentence_slor_is_lm_minus_unigram_log_probability_per_token():
    summaries = [[NAME if w in NAMES else w for w in d.summary] for d in docs()]
    fluency = Fluency.fit(summaries, order=3)
    tokens = [NAME, "has", "to", "clean", "the", "house", ".", NAME, "will", "buy", "the", "milk", "."]
    expected = []
    for start, end in ((0, 7), (7, 13)):
        lm = sum(math.log(fluency.lm.prob(tokens[i], tokens[:i])) for i in range(start, end))
        uni = sum(fluency.unigram[t] for t in tokens[start:end])
        expected.append((lm - uni) / (end - start))
    assert fluency.sentence_slors(tokens, [7, 13]) == pytest.approx(expected, rel=1e-12)
    assert fluency.sentence_slors(tokens, [7, 7, 13])[1] == 0.0  # an empty sentence
