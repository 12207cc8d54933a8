"""The attribution rerank of a dialogue's n-best list (agentsum.decoding.rerank, search.attribution_rerank)."""

import pytest
import torch

from agentsum.data.batch import make_batch
from agentsum.data.vocab import SPECIALS, UNK_ID, Vocabulary
from agentsum.decoding.rerank import attribution_rerank, dialogue_of, misattributed_sentences, rerank
from agentsum.decoding.search import Hypotheses, Hypothesis, SearchConfig, search

DIALOGUE = "mike : i will call you in 2 hours . dale : sorry , i can't talk now , i am driving".split()
NEWS = "the council will vote on the budget in two hours , the mayor said .".split()
WORDS = sorted(set(DIALOGUE + NEWS + "dale mike will call talk in 2 hours can't now .".split()))
VOCAB = Vocabulary(list(SPECIALS) + WORDS)


def hyp(text: str, score: float, finished: bool = True) -> Hypothesis:
    tokens = [VOCAB.id(w) for w in text.split()]
    return Hypothesis(tokens=tokens, score=score, copy_positions=[0] * len(tokens),
                      agent_attention=torch.ones(len(tokens), 1), finished=finished)


WRONG = "dale will call mike in 2 hours . mike can't talk now ."   # both sentences misattributed
HALF = "mike will call dale in 2 hours . mike can't talk now ."    # the second one
RIGHT = "mike will call dale in 2 hours . dale can't talk now ."


def test_the_misattributed_sentences_of_a_summary_are_counted():
    dialogue = dialogue_of(make_batch([[DIALOGUE]], VOCAB), 0)
    assert dialogue is not None and set(dialogue.speakers) == {"mike", "dale"}
    assert [misattributed_sentences(s.split(), dialogue) for s in (WRONG, HALF, RIGHT)] == [2, 1, 0]
    assert misattributed_sentences("Dale will call Mike in 2 hours".split(), dialogue) == 1  # no final period
    assert dialogue_of(make_batch([[NEWS]], VOCAB), 0) is None


def test_the_best_scored_of_the_fewest_misattributed_wins_and_the_rest_keep_their_order():
    batch = make_batch([[DIALOGUE]], VOCAB)
    beam = [hyp(WRONG, -1.0), hyp(HALF, -2.0), hyp(RIGHT, -3.0), hyp(RIGHT + " now", -4.0)]
    out = attribution_rerank(Hypotheses.from_n_best([beam]), batch, VOCAB)
    assert [h.score for h in out.n_best[0]] == [-3.0, -4.0, -2.0, -1.0]
    assert out.tokens[0] == beam[2].tokens and out.scores[0] == -3.0
    assert out.copy_positions[0] == beam[2].copy_positions


def test_a_beam_whose_hypotheses_are_equally_attributed_or_a_source_that_is_no_dialogue_is_unchanged():
    batch = make_batch([[DIALOGUE], [NEWS]], VOCAB)
    beams = [[hyp(HALF, -1.0), hyp(HALF + " now", -2.0)], [hyp(WRONG, -1.0), hyp(RIGHT, -2.0)]]
    out = attribution_rerank(Hypotheses.from_n_best(beams), batch, VOCAB)
    assert [[h.score for h in beam] for beam in out.n_best] == [[-1.0, -2.0], [-1.0, -2.0]]


def test_a_summary_cut_at_max_length_never_displaces_a_finished_one():
    batch = make_batch([[DIALOGUE], [DIALOGUE]], VOCAB)
    beams = [[hyp(WRONG, -1.0), hyp(RIGHT, -2.0, finished=False)],
             [hyp(WRONG, -1.0, finished=False), hyp(HALF, -2.0, finished=False), hyp(RIGHT, -3.0)]]
    out = attribution_rerank(Hypotheses.from_n_best(beams), batch, VOCAB)
    assert [h.score for h in out.n_best[0]] == [-1.0, -2.0]
    # the best was cut, so the other cut one is a candidate; the finished one is not
    assert [h.score for h in out.n_best[1]] == [-2.0, -1.0, -3.0]


def test_unk_is_read_as_the_word_the_summary_will_show():
    # the best hypothesis, "<unk> can't talk now .", copies "mike" (source position 0): misattributed once
    # the UNK is replaced, not checked (no subject) when it is kept
    batch = make_batch([[DIALOGUE]], VOCAB)
    assert batch.src_tokens[0][0][0] == "mike"
    unk = hyp("mike can't talk now .", -0.5)
    unk.tokens[0] = UNK_ID
    beam = [unk, hyp("dale can't talk now .", -1.0)]
    out = attribution_rerank(Hypotheses.from_n_best([beam]), batch, VOCAB, unk_replace=True)
    assert [h.score for h in out.n_best[0]] == [-1.0, -0.5]
    kept = attribution_rerank(Hypotheses.from_n_best([beam]), batch, VOCAB, unk_replace=False)
    assert [h.score for h in kept.n_best[0]] == [-0.5, -1.0]


def test_the_search_option_is_a_bool_and_needs_the_vocabulary():
    with pytest.raises(ValueError, match="attribution_rerank must be true or false"):
        SearchConfig(attribution_rerank="yes")
    with pytest.raises(ValueError, match="need the model.s vocabulary"):
        search(None, make_batch([[DIALOGUE]], VOCAB), SearchConfig(beam_size=2, attribution_rerank=True,
                                                                   max_length=1, min_length=0))


def _lm(sentences):
    from agentsum.models.summary_lm import NgramLM

    return NgramLM.fit([s.split() for s in sentences], order=3)


def test_the_summary_lm_rescores_the_beam_by_search_score_plus_weight_times_its_log_probability_per_token():
    lm = _lm(["<name> will call <name> in 2 hours ."] * 5 + ["<name> can't talk now ."] * 5)
    batch = make_batch([[NEWS]], VOCAB)  # any source is rescored; no names here
    beam = [hyp("will call in in 2 hours .", -1.0), hyp("will call in 2 hours .", -1.2)]
    words = [h.split() for h in ("will call in in 2 hours .", "will call in 2 hours .")]
    per_token = [lm.logprob(w) / (len(w) + 1) for w in words]
    assert per_token[1] > per_token[0] + 0.2 / 5  # the LM prefers the second by more than 0.2 / w at w = 5
    out = rerank(Hypotheses.from_n_best([beam]), batch, VOCAB, lm=lm, lm_weight=5.0)
    assert [h.score for h in out.n_best[0]] == [-1.2, -1.0]  # scores are the search's, unchanged
    assert [h.score for h in rerank(Hypotheses.from_n_best([beam]), batch, VOCAB, lm=lm, lm_weight=0.0).n_best[0]] \
        == [-1.0, -1.2]
    # a weight too small to outweigh the search's margin keeps the order
    small = (0.2 / (per_token[1] - per_token[0])) / 2
    assert [h.score for h in rerank(Hypotheses.from_n_best([beam]), batch, VOCAB, lm=lm,
                                    lm_weight=small).n_best[0]] == [-1.0, -1.2]


def test_a_dialogues_participants_are_one_name_class_and_attribution_comes_before_the_lm():
    lm = _lm(["<name> will call <name> in 2 hours . <name> can't talk now ."] * 5)
    batch = make_batch([[DIALOGUE]], VOCAB)
    beam = [hyp(WRONG, -1.0), hyp(RIGHT, -3.0), hyp("mike will call dale in 2 hours . dale can't talk talk .", -2.0)]
    # the LM prefers RIGHT's words to the third's; both are attributed; WRONG is misattributed twice
    out = rerank(Hypotheses.from_n_best([beam]), batch, VOCAB, attribution=True, lm=lm, lm_weight=5.0)
    assert [h.score for h in out.n_best[0]] == [-3.0, -2.0, -1.0]
    only_attribution = rerank(Hypotheses.from_n_best([beam]), batch, VOCAB, attribution=True)
    assert [h.score for h in only_attribution.n_best[0]] == [-2.0, -3.0, -1.0]


def test_the_lm_weight_is_checked_and_search_needs_the_lm():
    for bad in (-0.1, float("nan"), 11, True, "0.1"):
        with pytest.raises(ValueError, match="lm_weight must be a number"):
            SearchConfig(lm_weight=bad)
    with pytest.raises(ValueError, match="needs the model's summary language model"):
        search(None, make_batch([[DIALOGUE]], VOCAB), SearchConfig(beam_size=2, lm_weight=0.1, max_length=1,
                                                                   min_length=0), vocab=VOCAB)


# ----------------------------------------------------------------------------------------------
# Role names (search.role_names)
# ----------------------------------------------------------------------------------------------

from agentsum.data.vocab import EOS_ID  # noqa: E402
from agentsum.decoding.rerank import role_name_edits, speaker_tags  # noqa: E402
from agentsum.decoding.search import beam_search, forced_scores  # noqa: E402
from agentsum.models import build_model  # noqa: E402

THREE = "mike : i will call you in 2 hours . dale : sorry , i can't talk now . ann : call me too".split()


def test_a_subject_who_wrote_none_of_the_words_becomes_the_one_who_did_trading_places_with_a_later_mention():
    dialogue = dialogue_of(make_batch([[DIALOGUE]], VOCAB), 0)
    # "dale will call mike in 2 hours": mike wrote call and hours, dale neither -> mike calls dale;
    # "mike can't talk now": dale wrote talk and now -> dale
    assert role_name_edits(WRONG.split(), dialogue) == {0: "mike", 3: "dale", 8: "dale"}
    mended = WRONG.split()
    for j, name in role_name_edits(mended, dialogue).items():
        mended[j] = name
    assert " ".join(mended) == RIGHT
    assert role_name_edits(RIGHT.split(), dialogue) == {}
    assert role_name_edits("Dale will call Mike in 2 hours .".split(), dialogue) == {0: "mike", 3: "dale"}


def test_a_subject_named_again_becomes_the_other_person_of_a_two_person_chat_only():
    two = dialogue_of(make_batch([[DIALOGUE]], VOCAB), 0)
    # mike wrote "call", so the subject stays; the second mike is dale
    assert role_name_edits("mike will call mike .".split(), two) == {3: "dale"}
    three = dialogue_of(make_batch([[THREE]], VOCAB), 0)
    assert three is not None and len(three.speakers) == 3
    assert role_name_edits("mike will call mike .".split(), three) == {}  # which of two others: not guessed
    # "mike and dale" as the subject is not edited, nor is a tie between two who wrote the words
    assert role_name_edits("mike and dale can't talk now .".split(), two) == {}
    assert role_name_edits("ann will call in 2 hours .".split(), three) == {}  # ann wrote "call": attributed
    assert role_name_edits("dale will call in 2 hours .".split(), three) == {0: "mike"}  # mike 2, ann 1, dale 0
    tie = dialogue_of(make_batch([["mike : call at 2 hours . dale : call at 2 hours . ann : ok".split()]], VOCAB), 0)
    assert role_name_edits("ann will call in 2 hours .".split(), tie) == {}


class FakeScorer:
    """Scores each edited sequence by a table of texts (the search's score of it, by hand), and
    records what it was asked."""

    def __init__(self, scores: dict[str, float]):
        self.scores, self.asked = scores, []

    def __call__(self, b, sequences, finished):
        texts = [" ".join(VOCAB.decode(s)) for s in sequences]
        self.asked.append((b, texts, list(finished)))
        return [self.scores[t] for t in texts]


def test_an_edit_the_beam_could_have_kept_joins_it_copied_from_the_speaker_tag_and_wins():
    batch = make_batch([[DIALOGUE]], VOCAB)
    scorer = FakeScorer({RIGHT: -1.4, "mike will call dale in 2 hours . dale can't talk now": -9.0})
    beam = [hyp(WRONG, -1.0), hyp(HALF, -1.5)]
    out = rerank(Hypotheses.from_n_best([beam]), batch, VOCAB, scorer=scorer)
    # both hypotheses edit to RIGHT: it is scored once, with its finished flag
    assert scorer.asked == [(0, [RIGHT], [True])]
    best = out.n_best[0][0]
    assert VOCAB.decode(best.tokens) == RIGHT.split() and best.score == -1.4
    flat = batch.src_ext_ids[0].reshape(-1)
    dale_tag = DIALOGUE.index("dale")
    for j in (3, 8):  # each new name copied from the speaker's tag: its position and source id
        assert best.copy_positions[j] == dale_tag and best.tokens[j] == int(flat[dale_tag])
    assert best.copy_positions[0] == 0 and best.tokens[0] == VOCAB.id("mike")
    assert [h.score for h in out.n_best[0]] == [-1.4, -1.5]  # the list keeps its length: WRONG falls off


def test_an_edit_below_the_worst_of_the_whole_n_best_or_forbidden_is_dropped():
    batch = make_batch([[DIALOGUE]], VOCAB)
    # the worst hypothesis is one cut at max_length: it sets the floor though it is no candidate
    beam = [hyp(WRONG, -1.0), hyp(HALF + " now", -2.0, finished=False), hyp(HALF + " talk", -3.0, finished=False)]
    kept = rerank(Hypotheses.from_n_best([beam]), batch, VOCAB, scorer=FakeScorer({RIGHT: -2.9}))
    assert kept.n_best[0][0].score == -2.9 and VOCAB.decode(kept.n_best[0][0].tokens) == RIGHT.split()
    below = rerank(Hypotheses.from_n_best([beam]), batch, VOCAB, scorer=FakeScorer({RIGHT: -3.1}))
    assert [h.score for h in below.n_best[0]] == [-1.0, -2.0, -3.0]
    forbidden = rerank(Hypotheses.from_n_best([beam]), batch, VOCAB, scorer=FakeScorer({RIGHT: float("-inf")}))
    assert [h.score for h in forbidden.n_best[0]] == [-1.0, -2.0, -3.0]


def test_an_edit_a_hypothesis_already_holds_is_not_added_twice_and_no_scorer_is_the_attribution_rerank():
    batch = make_batch([[DIALOGUE]], VOCAB)
    beam = [hyp(WRONG, -1.0), hyp(RIGHT, -2.5), hyp(HALF, -3.0)]
    scorer = FakeScorer({})
    out = rerank(Hypotheses.from_n_best([beam]), batch, VOCAB, scorer=scorer)
    assert scorer.asked == []  # WRONG and HALF both edit to RIGHT, which the beam holds
    assert [h.score for h in out.n_best[0]] == [-2.5, -3.0, -1.0]
    assert [h.score for h in out.n_best[0]] == [h.score for h in attribution_rerank(Hypotheses.from_n_best([beam]),
                                                                                    batch, VOCAB).n_best[0]]


def test_the_name_is_copied_from_the_speakers_tag_not_an_earlier_mention():
    tokens = "mike : dale , i will call you in 2 hours . dale : sorry , i can't talk now".split()
    batch = make_batch([[tokens]], VOCAB)
    tags = speaker_tags(batch, 0, ["mike", "dale"])
    assert tags["mike"][0] == 0 and tags["dale"][0] == tokens.index("dale", 3)
    assert tags["dale"][1] == VOCAB.id("dale")


def test_role_names_leave_a_source_that_is_no_dialogue_alone_and_the_option_is_a_bool():
    batch = make_batch([[NEWS]], VOCAB)
    scorer = FakeScorer({})
    out = rerank(Hypotheses.from_n_best([[hyp(WRONG, -1.0), hyp(HALF, -1.5)]]), batch, VOCAB, scorer=scorer)
    assert [h.score for h in out.n_best[0]] == [-1.0, -1.5] and scorer.asked == []
    with pytest.raises(ValueError, match="role_names must be true or false"):
        SearchConfig(role_names=1)


def _tiny_model(eos_bias: float = 0.0):
    torch.manual_seed(0)
    model = build_model({"type": "dca", "embedding_size": 8, "hidden_size": 12, "pointer": "single"},
                        len(VOCAB)).eval()
    with torch.no_grad():
        for layer in [m for m in model.modules() if isinstance(m, torch.nn.Linear) and m.out_features == len(VOCAB)]:
            layer.bias[EOS_ID] += eos_bias
    return model


@pytest.mark.parametrize("eos_bias, settings", [
    (1.25, dict(length_penalty=0.0, block_trigrams=False)),
    (1.0, dict(length_penalty=1.0, repetition_penalty=1.5, repeat_window=2, min_length=3, min_length_ratio=0.5)),
])
def test_forced_scores_give_the_beams_own_scores_under_its_filters(eos_bias, settings):
    # an EOS bias that has some hypotheses end and others cut at max_length
    model = _tiny_model(eos_bias=eos_bias)
    batch = make_batch([[DIALOGUE], [NEWS]], VOCAB)
    config = SearchConfig(beam_size=3, max_length=8, **{"min_length": 0, **settings})
    hyps = beam_search(model, batch, config)
    flat = [(b, h) for b, beam in enumerate(hyps.n_best) for h in beam]
    assert any(h.finished for _, h in flat) and not all(h.finished for _, h in flat)
    scores = forced_scores(model, batch, [b for b, _ in flat], [h.tokens for _, h in flat],
                           [h.finished for _, h in flat], config)
    assert scores == pytest.approx([h.score for _, h in flat], abs=1e-5)


def test_forced_scores_forbid_what_the_search_forbids():
    model = _tiny_model()
    batch = make_batch([[DIALOGUE]], VOCAB)
    ids = lambda text: [VOCAB.id(w) for w in text.split()]  # noqa: E731
    window = SearchConfig(beam_size=3, repeat_window=2, min_length=0, block_trigrams=False)
    trigram = SearchConfig(beam_size=3, min_length=0)
    repeated, fine = ids("mike will mike ."), ids("mike will call .")
    assert forced_scores(model, batch, [0, 0], [repeated, fine], [True, True], window)[0] == float("-inf")
    assert forced_scores(model, batch, [0, 0], [repeated, fine], [True, True], window)[1] > float("-inf")
    twice = ids("mike will call . mike will call .")
    assert forced_scores(model, batch, [0], [twice], [True], trigram) == [float("-inf")]
    early = SearchConfig(beam_size=3, min_length=6, min_length_ratio=None)
    assert forced_scores(model, batch, [0], [fine], [True], early) == [float("-inf")]  # EOS before min_length
