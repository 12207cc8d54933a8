"""agentsum.training.rewards against Google's rouge-score (no stemming, same tokens) and plain DP."""

from __future__ import annotations

import json
import random

import pytest
import torch
from rouge_score import rouge_scorer

from agentsum.training.rewards import (
    Score,
    lcs_length,
    lcs_prefix_lengths,
    prefix_fmeasures,
    rouge_l,
    rouge_n,
    score,
    sentence_reward_matrix,
    sentence_rewards,
    sequence_rewards,
    strip_ids,
)
from conftest import SHARED_DATA

KINDS = ("rouge1", "rouge2", "rougeL")
ROUGE_CHECK = SHARED_DATA / "rouge_check" / "cnndm_test_simcls.jsonl"
EOS, PAD = 3, 0


class WhitespaceTokenizer:
    """rouge-score tokenizer that keeps tokens as they are: ids written as strings stay ids."""

    def tokenize(self, text):
        return text.split()


@pytest.fixture(scope="module")
def scorer():
    return rouge_scorer.RougeScorer(list(KINDS), use_stemmer=False, tokenizer=WhitespaceTokenizer())


def as_text(ids):
    return " ".join(map(str, ids))


def ours(candidate, reference):
    return {"rouge1": rouge_n(candidate, reference, 1), "rouge2": rouge_n(candidate, reference, 2),
            "rougeL": rouge_l(candidate, reference)}


def assert_same(got: Score, want, where):
    for field in ("precision", "recall", "fmeasure"):
        a, b = getattr(got, field), getattr(want, field)
        assert abs(a - b) <= 1e-12, f"{where}: {field} {a} != rouge-score {b}"


def random_pair(rng):
    alphabet = rng.randint(3, 50)
    # lengths 0..120, with extra weight on the short and empty cases
    lengths = [rng.choice([rng.randint(0, 3), rng.randint(0, 120), rng.randint(0, 120)]) for _ in range(2)]
    return [[rng.randint(4, 3 + alphabet) for _ in range(k)] for k in lengths]


def dp_lcs(a, b):
    row = [0] * (len(b) + 1)
    for x in a:
        prev_diag = 0
        for j, y in enumerate(b):
            cur = row[j + 1]
            row[j + 1] = prev_diag + 1 if x == y else max(row[j + 1], row[j])
            prev_diag = cur
    return row[-1]


# ---------------------------------------------------------------------------------------------
# Equality with rouge-score


def test_random_id_pairs_equal_rouge_score(scorer):
    rng = random.Random(20180601)
    exact = 0
    n_pairs = 5000
    for k in range(n_pairs):
        cand, ref = random_pair(rng)
        want = scorer.score(as_text(ref), as_text(cand))  # (target, prediction)
        got = ours(cand, ref)
        for kind in KINDS:
            assert_same(got[kind], want[kind], f"pair {k} {kind} cand={cand} ref={ref}")
            exact += got[kind].fmeasure == want[kind].fmeasure
    assert exact == 3 * n_pairs  # same float operations in the same order: bit-identical


ENGLISH = [
    ("police arrested two men on monday . both were charged with theft .",
     "two men were arrested by police . they were charged on monday with theft and fraud ."),
    ("the cat sat on the mat . the cat sat on the mat .", "the cat sat on the mat ."),
    ("the the the the", "the cat is on the mat"),
    ("a storm hit the coast , killing three people and leaving thousands without power .",
     "three people died as a storm hit the coast . thousands of homes lost power ."),
    ("", "nothing to see here ."),
    ("something was said .", ""),
    ("completely different words", "nothing in common at all"),
]


def test_english_fixture_equals_rouge_score(scorer):
    vocab: dict[str, int] = {}
    for cand_text, ref_text in ENGLISH:
        cand = [vocab.setdefault(w, len(vocab) + 4) for w in cand_text.split()]
        ref = [vocab.setdefault(w, len(vocab) + 4) for w in ref_text.split()]
        want = scorer.score(ref_text, cand_text)
        got = ours(cand, ref)
        for kind in KINDS:
            assert got[kind].fmeasure == want[kind].fmeasure, (cand_text, ref_text, kind)
            assert_same(got[kind], want[kind], f"{cand_text!r} vs {ref_text!r} {kind}")


@pytest.mark.skipif(not ROUGE_CHECK.exists(), reason=f"shared ROUGE check data not present ({ROUGE_CHECK})")
def test_real_cnndm_pairs_equal_rouge_score(scorer):
    vocab: dict[str, int] = {}
    ids = lambda text: [vocab.setdefault(w, len(vocab) + 4) for w in text.split()]  # noqa: E731
    sentence_end = {vocab.setdefault(w, len(vocab) + 4) for w in (".", "!", "?")}
    exact = checked = prefixes = 0
    with ROUGE_CHECK.open() as f:
        for k, line in enumerate(f):
            if k == 2000:
                break
            pair = json.loads(line)
            cand_text, ref_text = pair["candidate"], pair["reference"]
            cand, ref = ids(cand_text), ids(ref_text)
            want = scorer.score(ref_text, cand_text)
            got = ours(cand, ref)
            for kind in KINDS:
                assert_same(got[kind], want[kind], f"line {k} {kind}")
                exact += got[kind].fmeasure == want[kind].fmeasure
            checked += 1
            if k < 100:  # every sentence prefix of the first 100 candidates, scored by rouge-score itself
                words = cand_text.split()
                for kind in KINDS:
                    ends, _ = sentence_rewards(cand, ref, sentence_end, kind)
                    fs = prefix_fmeasures(cand, ref, ends, kind)
                    for e, f1 in zip(ends, fs):
                        assert f1 == scorer.score(ref_text, " ".join(words[:e]))[kind].fmeasure
                        prefixes += 1
    assert checked == 2000
    assert exact == 3 * checked
    assert prefixes > 300


# ---------------------------------------------------------------------------------------------
# LCS


def test_lcs_prefix_lengths_equal_plain_dp():
    rng = random.Random(7)
    for _ in range(300):
        cand, ref = random_pair(rng)
        cand, ref = cand[:60], ref[:90]  # keep the O(n^2)-per-prefix reference DP cheap
        prefix = lcs_prefix_lengths(cand, ref)
        assert len(prefix) == len(cand)
        for i in range(0, len(cand), 7):
            assert prefix[i] == dp_lcs(cand[: i + 1], ref)
        assert lcs_length(cand, ref) == dp_lcs(cand, ref) == (prefix[-1] if prefix else 0)


def test_lcs_long_sequences_beyond_machine_words():
    rng = random.Random(11)
    ref = [rng.randint(0, 9) for _ in range(300)]
    cand = [rng.randint(0, 9) for _ in range(200)]
    assert lcs_length(cand, ref) == dp_lcs(cand, ref)
    assert lcs_prefix_lengths(ref, ref) == list(range(1, 301))
    assert lcs_prefix_lengths([], ref) == [] and lcs_length(cand, []) == 0


def test_lcs_prefix_small_example():
    # reference a b c b d a b; candidate b d c a b a: prefixes b, bd, bdc->(b,c or b,d)=2, ...
    ref = [1, 2, 3, 2, 4, 1, 2]
    cand = [2, 4, 3, 1, 2, 1]
    assert lcs_prefix_lengths(cand, ref) == [1, 2, 2, 3, 4, 4]


# ---------------------------------------------------------------------------------------------
# Sentence rewards (eq 22)


def test_sentence_rewards_sum_to_whole_f1():
    rng = random.Random(3)
    for _ in range(400):
        cand, ref = random_pair(rng)
        for kind in KINDS:
            ends, rewards = sentence_rewards(cand, ref, {4, 5}, kind)
            assert len(ends) == len(rewards)
            assert ends == sorted(ends) and (not cand or ends[-1] == len(cand))
            assert sum(rewards) == pytest.approx(score(cand, ref, kind).fmeasure, abs=1e-12)
            for e, f1 in zip(ends, prefix_fmeasures(cand, ref, ends, kind)):
                assert f1 == score(cand[:e], ref, kind).fmeasure


def test_sentence_rewards_hand_computed():
    # reference: "the cat sat . it slept ." ; candidate: "the cat sat . the dog ran" (no final period)
    the, cat, sat, dot, it, slept, dog, ran = range(10, 18)
    ref = [the, cat, sat, dot, it, slept, dot]
    cand = [the, cat, sat, dot, the, dog, ran]
    ends, rewards = sentence_rewards(cand, ref, {dot}, "rougeL")
    assert ends == [4, 7]
    # prefix 1: LCS 4, P 4/4, R 4/7 -> F 8/11 ; prefix 2: LCS 4, P 4/7, R 4/7 -> F 4/7
    assert rewards[0] == pytest.approx(8 / 11)
    assert rewards[1] == pytest.approx(4 / 7 - 8 / 11)
    ends1, rewards1 = sentence_rewards(cand, ref, {dot}, "rouge1")
    # unigrams: prefix 1 hits 4 of 4 (R 4/7); prefix 2 adds "the" again (ref has one "the"): 4 of 7
    assert ends1 == [4, 7] and rewards1[0] == pytest.approx(8 / 11) and rewards1[1] == pytest.approx(4 / 7 - 8 / 11)
    _, rewards2 = sentence_rewards(cand, ref, {dot}, "rouge2")
    # bigrams: ref has 6; prefix 1 hits 3 of 3 -> P 1, R 1/2, F 2/3; prefix 2 adds (. the) (the dog) (dog ran): 3/6, 3/6
    assert rewards2 == pytest.approx([2 / 3, 0.5 - 2 / 3])


def test_repeated_sentence_gets_nonpositive_reward():
    rng = random.Random(5)
    checked = 0
    for trial in range(200):
        if trial % 2:
            ref = rng.sample(range(6, 60), rng.randint(5, 40))  # each word once
        else:
            ref = [rng.randint(6, 40) for _ in range(rng.randint(5, 40))]  # repeats likely
        first = ref[: rng.randint(2, 10)] + [4]
        other = [rng.randint(6, 40) for _ in range(rng.randint(1, 8))] + [4]
        cand = first + other + first  # the third sentence repeats the first
        lcs = lcs_prefix_lengths(cand, ref)
        for kind in KINDS:
            ends, rewards = sentence_rewards(cand, ref, {4}, kind)
            assert len(ends) == 3
            if kind == "rougeL" and lcs[ends[2] - 1] != lcs[ends[1] - 1]:
                continue  # the repeat did extend the LCS: it added something
            if kind != "rougeL" and len(set(ref)) != len(ref):
                continue  # the reference may hold the repeated n-grams twice
            assert rewards[2] <= 0.0, (kind, cand, ref, rewards)
            checked += 1
    assert checked > 300
    # the plain case: the reference says it once, the candidate twice
    ref = [10, 11, 12, 4, 13, 14, 4]
    for kind in KINDS:
        _, rewards = sentence_rewards([10, 11, 12, 4, 10, 11, 12, 4], ref, {4}, kind)
        assert rewards[0] > 0 and rewards[1] < 0


def test_sentence_rewards_empty_and_unknown_kind():
    assert sentence_rewards([], [1, 2], {4}) == ([], [])
    assert sentence_rewards([5, 4, 6], [], {4}) == ([2, 3], [0.0, 0.0])
    assert sentence_rewards([5, 6], [5, 6], [4]) == ([2], [1.0])
    with pytest.raises(ValueError):
        score([1], [1], "rougeLsum")


# ---------------------------------------------------------------------------------------------
# Tensor plumbing


def test_strip_ids():
    assert strip_ids(torch.tensor([5, 6, EOS, 7, PAD]), EOS, PAD) == [5, 6]
    assert strip_ids(torch.tensor([5, 6, PAD, PAD]), EOS, PAD) == [5, 6]
    assert strip_ids(torch.tensor([EOS, 5]), EOS, PAD) == []
    assert strip_ids([5, 6, 7], EOS, PAD) == [5, 6, 7]


def test_sequence_rewards_eos_pad_and_empty():
    refs = torch.tensor([[5, 6, 7, 8, EOS, PAD],
                         [5, 6, 7, 8, EOS, PAD],
                         [5, 6, 7, 8, EOS, PAD],
                         [9, EOS, PAD, PAD, PAD, PAD]])
    cands = torch.tensor([[5, 6, 7, 8, EOS, 5],        # exact match; junk after EOS ignored
                          [5, 6, PAD, PAD, PAD, PAD],  # cut at PAD
                          [EOS, 5, 6, 7, 8, PAD],      # empty candidate
                          [9, 9, 9, 9, 9, 9]])         # no EOS: the whole row counts
    for kind in KINDS:
        r = sequence_rewards(cands, refs, eos_id=EOS, pad_id=PAD, kind=kind)
        assert r.shape == (4,) and r.dtype == torch.float32
        expected = [score(c, f, kind).fmeasure for c, f in
                    ([[5, 6, 7, 8], [5, 6, 7, 8]], [[5, 6], [5, 6, 7, 8]], [[], [5, 6, 7, 8]], [[9] * 6, [9]])]
        assert r.tolist() == pytest.approx(expected)
    assert sequence_rewards(cands, refs, kind="rougeL")[:3].tolist() == pytest.approx([1.0, 2 / 3, 0.0])


def test_sentence_reward_matrix():
    dot = 4
    refs = torch.tensor([[10, 11, 12, dot, 13, 14, dot, EOS],
                         [10, 11, EOS, PAD, PAD, PAD, PAD, PAD],
                         [10, EOS, PAD, PAD, PAD, PAD, PAD, PAD]])
    cands = torch.tensor([[10, 11, 12, dot, 10, 11, 12, dot, EOS, PAD],   # repeat, then EOS
                          [10, 11, dot, 20, 21, 10, 11, 10, 11, 12],      # no EOS: runs to T
                          [EOS, PAD, PAD, PAD, PAD, PAD, PAD, PAD, PAD, PAD]])  # empty
    for kind in KINDS:
        rewards, totals = sentence_reward_matrix(cands, refs, {dot}, eos_id=EOS, pad_id=PAD, kind=kind)
        assert rewards.shape == (3, 10) and totals.shape == (3,)
        _, r0 = sentence_rewards([10, 11, 12, dot, 10, 11, 12, dot], [10, 11, 12, dot, 13, 14, dot], {dot}, kind)
        assert rewards[0].tolist() == pytest.approx([r0[0]] * 4 + [r0[1]] * 4 + [r0[1], 0.0])  # EOS joins sentence 2
        _, r1 = sentence_rewards(cands[1].tolist(), [10, 11], {dot}, kind)
        assert rewards[1].tolist() == pytest.approx([r1[0]] * 3 + [r1[1]] * 7)
        assert rewards[2].tolist() == [0.0] * 10
        assert totals.tolist() == pytest.approx(sequence_rewards(cands, refs, EOS, PAD, kind).tolist())
        assert totals.tolist() == pytest.approx(rewards.new_tensor([sum(r0), sum(r1), 0.0]).tolist(), abs=1e-6)
