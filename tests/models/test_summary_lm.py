"""The summary language model (interpolated Kneser-Ney) used to rescore n-best lists."""

import math

import pytest

from agentsum.models.summary_lm import EOS, NAME, UNK, NgramLM, with_name_class

SUMMARIES = [
    [NAME, "has", "to", "clean", "the", "house", "."],
    [NAME, "has", "to", "go", "to", "work", "."],
    [NAME, "and", NAME, "have", "to", "clean", "the", "car", "."],
    [NAME, "will", "meet", NAME, "at", "noon", "."],
    [NAME, "will", "meet", NAME, "tomorrow", "."],
    [NAME, "is", "late", "."],
]


@pytest.mark.parametrize("order", [1, 2, 3])
@pytest.mark.parametrize("context", [[], [NAME], [NAME, "has"], ["never", "seen"], [NAME, "will", "meet"]])
def test_every_distribution_sums_to_one_over_the_vocabulary(order, context):
    lm = NgramLM.fit(SUMMARIES, order=order, min_count=1)
    assert math.isclose(sum(lm.prob(w, context) for w in lm.vocab), 1.0, rel_tol=1e-9)


def test_agreement_errors_score_below_what_the_summaries_say():
    lm = NgramLM.fit(SUMMARIES, order=3, min_count=1)
    assert lm.logprob([NAME, "has", "to", "clean", "the", "house", "."]) > \
        lm.logprob([NAME, "have", "to", "clean", "the", "house", "."])
    assert lm.logprob([NAME, "will", "meet", NAME, "."]) > lm.logprob([NAME, "will", "met", NAME, "."])


def test_rare_words_are_unk_and_names_a_class():
    lm = NgramLM.fit(SUMMARIES, order=2, min_count=2)
    assert "noon" not in lm.vocab and UNK in lm.vocab and EOS in lm.vocab
    assert lm.prob("noon", [NAME]) == lm.prob("zebra", [NAME])
    assert with_name_class(["amanda", "will", "call", "jerry"], {"amanda", "jerry"}) == [NAME, "will", "call", NAME]


def test_the_first_order_with_counts_is_the_discounted_relative_frequency_plus_uniform():
    lm = NgramLM.fit([["a", "b"], ["a", "a"]], order=1, min_count=1)
    # tokens a a a b </s> </s>: counts a 3, b 1, </s> 2; vocabulary a b </s> <unk>; D = 0.75, 3 types
    uniform = 1 / 4
    assert math.isclose(lm.prob("a", []), (3 - 0.75) / 6 + 0.75 * 3 / 6 * uniform)
    assert math.isclose(lm.prob(UNK, []), 0.75 * 3 / 6 * uniform)


def test_it_saves_and_loads_the_same_model(tmp_path):
    lm = NgramLM.fit(SUMMARIES, order=3, min_count=1)
    lm.save(tmp_path / "lm.json")
    again = NgramLM.load(tmp_path / "lm.json")
    for s in SUMMARIES:
        assert again.logprob(s) == lm.logprob(s)


def test_a_gzip_file_loads_the_same_model_and_the_same_model_writes_the_same_bytes(tmp_path):
    lm = NgramLM.fit(SUMMARIES, order=3, min_count=1)
    a, b = tmp_path / "a.lm.json.gz", tmp_path / "sub" / "b.lm.json.gz"
    b.parent.mkdir()
    lm.save(a)
    lm.save(b)
    assert a.read_bytes()[:2] == b"\x1f\x8b" and a.read_bytes() == b.read_bytes()  # no name, no time stamp
    back = NgramLM.load(a)
    sentence = [NAME, "will", "meet", NAME, "at", "noon", "."]
    assert back.logprob(sentence) == pytest.approx(lm.logprob(sentence), rel=1e-12)


def test_a_checkpoints_lm_lives_beside_it_and_documents_give_their_summaries_with_names_as_a_class():
    from agentsum.data.dataset import Document
    from agentsum.models.summary_lm import document_summaries, lm_path

    assert lm_path("runs/x/checkpoints/best.pt").as_posix() == "runs/x/checkpoints/best.lm.json.gz"
    chat = "Lisa : I have to clean the house Tom : ok".split()
    docs = [Document("a", [chat[:8], chat[8:]], ["Lisa", "has", "to", "clean", "."], ""),
            Document("b", [["no", "dialogue", "here", "."]], ["lisa", "is", "here", "."], ""),
            Document("c", [chat], [], "")]
    assert document_summaries(docs) == [[NAME, "has", "to", "clean", "."], ["lisa", "is", "here", "."]]
    assert NgramLM.of_documents(docs, order=2).order == 2


def test_each_tokens_log_probability_reads_only_the_last_order_minus_one_tokens():
    lm = NgramLM.fit(SUMMARIES, order=3, min_count=1)
    tokens = [NAME, "will", "meet", NAME, "at", "noon", ".", NAME, "is", "late", "."]
    full = [math.log(lm.prob(w, tokens[:i])) for i, w in enumerate(tokens)]  # the whole prefix as context
    assert lm.token_logprobs(tokens) == pytest.approx(full, rel=1e-12)
    assert lm.logprob(tokens) == pytest.approx(sum(full) + math.log(lm.prob(EOS, tokens)), rel=1e-12)
