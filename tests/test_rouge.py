import pytest
from rouge_score import rouge_scorer

from agentsum.rouge import rouge, rouge_per_document

PREDICTIONS = ["the cat sat\non the mat", "police arrested two men .\nthey were charged", "nothing in common"]
REFERENCES = ["the cat sat on the mat", "two men were arrested by police .\nboth were charged on monday", "a b c"]


def test_hand_computed_unigram_scores_and_argument_order():
    # prediction "the cat sat" against the 6-token reference: precision 3/3, recall 3/6, F1 2/3
    (doc,) = rouge_per_document(["the cat sat"], ["the cat sat on the mat"])
    assert doc["rouge1"]["p"] == pytest.approx(1.0)
    assert doc["rouge1"]["r"] == pytest.approx(0.5)
    assert doc["rouge1"]["f"] == pytest.approx(2 / 3)
    assert doc["rouge2"]["f"] == pytest.approx(2 * 1.0 * 0.4 / 1.4)  # 2 of 2 predicted bigrams, 2 of 5 reference


def test_means_equal_rouge_score_called_directly():
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeLsum"], use_stemmer=True)
    direct = [scorer.score(r, p) for p, r in zip(PREDICTIONS, REFERENCES)]
    ours = rouge(PREDICTIONS, REFERENCES)
    assert ours["n"] == 3
    for kind in ("rouge1", "rouge2", "rougeLsum"):
        assert ours[kind] == pytest.approx(100 * sum(d[kind].fmeasure for d in direct) / 3)
        assert ours[kind + "_r"] == pytest.approx(100 * sum(d[kind].recall for d in direct) / 3)


def test_rougelsum_uses_sentence_lines():
    # Summary-level LCS: each reference sentence is matched on its own, so order across sentences is free.
    assert rouge(["a b c d"], ["c d\na b"])["rougeLsum"] == pytest.approx(100.0)
    assert rouge(["a b c d"], ["c d a b"])["rougeLsum"] == pytest.approx(50.0)


def test_stemming_is_on():
    assert rouge(["the dogs running"], ["the dog runs"])["rouge1"] == pytest.approx(100.0)


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="2 predictions for 1 references"):
        rouge(["a", "b"], ["a"])
