"""CopyDistribution.log_probs(no_generation=...): forbidden words keep only their copy mass."""

import math

import pytest
import torch

from agentsum.data.vocab import SPECIALS, Vocabulary
from agentsum.decoding.search import numeral_mask
from agentsum.models.pointer import CopyDistribution

VOCAB = Vocabulary([*SPECIALS, "revenue", "rose", "to", "$", "million", "2021", "45", "q3", "."])
V = len(VOCAB)
# the source: "revenue rose to $ 45 million . 7.5" ("7.5" is out of the vocabulary: extended id V)
SOURCE = [VOCAB.id(t) for t in ["revenue", "rose", "to", "$", "45", "million", "."]] + [V]


def scripted(gen_weight: float = 0.8, favourite: str = "2021", requires_grad: bool = False) -> CopyDistribution:
    """One step whose generator puts most of its mass on ``favourite``; the copy weights spread
    1 - gen_weight over the source, with a peak on "45" and some mass on "7.5"."""
    logits = torch.full((1, V), -1.0)
    logits[0, VOCAB.id(favourite)] = 4.0
    logits.requires_grad_(requires_grad)
    copy = torch.tensor([[0.05, 0.05, 0.05, 0.05, 0.5, 0.1, 0.05, 0.15]])
    copy = copy / copy.sum() * (1 - gen_weight)
    return CopyDistribution(logits, torch.tensor([gen_weight]), copy, torch.tensor([SOURCE]), V + 1)


def test_a_generated_number_absent_from_the_source_gets_no_mass_and_loses_the_argmax():
    dist = scripted()
    free, only_copied = dist.log_probs()[0], dist.log_probs(numeral_mask(VOCAB))[0]
    assert int(free.argmax()) == VOCAB.id("2021")
    assert only_copied.exp()[VOCAB.id("2021")] < 1e-30
    assert int(only_copied.argmax()) != VOCAB.id("2021")


def test_a_number_in_the_source_keeps_exactly_its_copy_mass():
    dist = scripted(favourite="45")
    probs = dist.log_probs(numeral_mask(VOCAB))[0].exp()
    copy = dist.copy_weight[0]
    assert probs[VOCAB.id("45")].item() == pytest.approx(copy[4].item(), rel=1e-6)
    # generated, it had far more: the generator's share is what was removed
    assert dist.log_probs()[0].exp()[VOCAB.id("45")] > probs[VOCAB.id("45")] + 0.5
    # an out-of-vocabulary number is copy-only anyway: unchanged
    assert probs[V].item() == pytest.approx(copy[7].item(), rel=1e-6)


def test_other_words_keep_exactly_their_probability():
    dist = scripted()
    free, only_copied = dist.log_probs()[0], dist.log_probs(numeral_mask(VOCAB))[0]
    words = [VOCAB.id(t) for t in ["revenue", "rose", "to", "$", "million", "q3", "."]]
    torch.testing.assert_close(only_copied[words], free[words])
    # no renormalisation: the dropped mass is the generator's share of the numerals
    dropped = dist.gen_weight[0] * torch.softmax(dist.vocab_logits[0], -1)[[VOCAB.id("2021"), VOCAB.id("45")]].sum()
    assert only_copied.exp().sum().item() == pytest.approx(1 - dropped.item(), rel=1e-5)


def test_the_training_path_applies_the_same_mask():
    mask = numeral_mask(VOCAB)
    with_grad = scripted(requires_grad=True).log_probs(mask)
    assert with_grad.requires_grad
    with torch.no_grad():
        fast = scripted(requires_grad=True).log_probs(mask)
    torch.testing.assert_close(fast, with_grad.detach())


def test_without_a_copy_mechanism_a_forbidden_word_is_impossible():
    logits = torch.zeros(1, V)
    logits[0, VOCAB.id("45")] = 5.0
    dist = CopyDistribution(logits, None, None, torch.tensor([SOURCE]), V + 1)
    probs = dist.log_probs(numeral_mask(VOCAB))[0].exp()
    assert probs[VOCAB.id("45")] < 1e-30 and probs[VOCAB.id("2021")] < 1e-30
    assert probs[VOCAB.id("revenue")].item() == pytest.approx(math.exp(0) / (math.exp(5) + V - 1), rel=1e-5)


def test_a_mask_of_the_wrong_size_is_refused():
    with pytest.raises(ValueError, match=rf"no_generation must be a \({V},\) mask"):
        scripted().log_probs(torch.zeros(V + 1, dtype=torch.bool))
