import pytest
from rouge_score import rouge_scorer

from agentsum.evaluation.rouge import rouge, rouge_per_document

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


# --- Chinese ROUGE -------------------------------------------------------------------------------

from agentsum.evaluation.rouge import CharTokenizer, WhitespaceTokenizer, rouge_for_language  # noqa: E402

# Chinese only (no ASCII words, which CharTokenizer keeps whole), with punctuation and two-line texts.
ZH_PREDICTIONS = ["我爱北京", "林志颖公司涉嫌虚假营销\n无厂房无研发", "女子用板车拉母亲环游中国，走了两万里", "完全不同"]
ZH_REFERENCES = ["我爱上海", "林志颖公司疑涉虚假营销无厂房无研发", "女子用板车拉九旬老母环游中国\n1年走2万4千里", "毫无关系"]


class _PerCharacter:
    """The obvious per-character tokenizer, written independently of agentsum.data.chinese."""

    def tokenize(self, text):
        return [c.lower() for c in text if not c.isspace()]


def test_chinese_char_rouge_equals_rouge_score_with_a_per_character_tokenizer():
    predictions, references = ZH_PREDICTIONS, ZH_REFERENCES
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeLsum"], tokenizer=_PerCharacter())
    direct = [scorer.score(r, p) for p, r in zip(predictions, references)]
    ours = rouge(predictions, references, tokenizer=CharTokenizer())
    assert rouge_for_language(predictions, references, language="zh") == ours
    for kind in ("rouge1", "rouge2", "rougeLsum"):
        assert ours[kind] == pytest.approx(100 * sum(d[kind].fmeasure for d in direct) / len(direct))
        assert ours[kind + "_p"] == pytest.approx(100 * sum(d[kind].precision for d in direct) / len(direct))
    assert 0 < ours["rouge1"] < 100 and 0 < ours["rougeLsum"] < 100


def test_hand_computed_chinese_example():
    # 我爱北京 vs 我爱上海: 2 of 4 characters match both ways -> ROUGE-1 F1 0.5; bigram 我爱 1 of 3 -> 1/3
    (doc,) = rouge_for_language(["我爱北京"], ["我爱上海"], language="zh", per_document=True)
    assert doc["rouge1"]["f"] == pytest.approx(0.5)
    assert doc["rouge2"]["f"] == pytest.approx(1 / 3)
    assert doc["rougeLsum"]["f"] == pytest.approx(0.5)
    # ASCII words count as one unit each, case-folded: "iphone" and "6" match, "plus" does not
    (doc,) = rouge_per_document(["发布iPhone 6"], ["发布iphone 6 plus"], tokenizer=CharTokenizer())
    assert doc["rouge1"]["p"] == pytest.approx(1.0) and doc["rouge1"]["r"] == pytest.approx(4 / 5)


def test_chinese_word_rouge_uses_jieba_words():
    pytest.importorskip("jieba")
    # jieba: 我/爱/北京 vs 我/爱/上海 -> 2 of 3 words
    (doc,) = rouge_for_language(["我爱北京"], ["我爱上海"], language="zh", zh_unit="word", per_document=True)
    assert doc["rouge1"]["f"] == pytest.approx(2 / 3)
    # the same as WhitespaceTokenizer over pre-segmented text
    assert rouge(["我 爱 北京"], ["我 爱 上海"], tokenizer=WhitespaceTokenizer())["rouge1"] == pytest.approx(200 / 3)


def test_default_english_tokenizer_scores_chinese_zero():
    # rouge-score's default tokenizer keeps only [a-z0-9] runs: every Chinese character is dropped,
    # so even an exact copy scores 0. This is why Chinese needs tokenizer= / rouge_for_language.
    assert rouge(["我爱北京"], ["我爱北京"])["rouge1"] == 0.0
    assert rouge_for_language(["我爱北京"], ["我爱北京"], language="en")["rouge1"] == 0.0
    assert rouge_for_language(["我爱北京"], ["我爱北京"], language="zh")["rouge1"] == pytest.approx(100.0)


def test_rouge_for_language_rejects_unknown_settings():
    with pytest.raises(ValueError, match="unknown ROUGE language 'fr'"):
        rouge_for_language(["a"], ["a"], language="fr")
    with pytest.raises(ValueError, match="unknown Chinese ROUGE unit 'phrase'"):
        rouge_for_language(["a"], ["a"], language="zh", zh_unit="phrase")
