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

from agentsum.decoding import rerank as rerank_module  # noqa: E402
from agentsum.decoding.rerank import role_name_edits, role_name_variants, sequence_logprobs  # noqa: E402

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


def _beam_for_edits(monkeypatch, edited_logp: float, original_logp: float, scores=(-1.0, -1.5)):
    """A beam of WRONG (misattributed twice) and HALF, with the model's log-probabilities of the
    originals and of their edits set by hand."""
    def fake_logprobs(model, batch, sequences):
        half = len(sequences) // 2
        return [original_logp] * half + [edited_logp] * half
    monkeypatch.setattr(rerank_module, "sequence_logprobs", fake_logprobs)
    return [hyp(WRONG, scores[0]), hyp(HALF, scores[1])]


def test_an_edit_the_beam_could_have_kept_joins_it_copied_from_the_speaker_tag_and_wins(monkeypatch):
    batch = make_batch([[DIALOGUE]], VOCAB)
    beam = _beam_for_edits(monkeypatch, edited_logp=-12.0, original_logp=-10.0)
    out = rerank(Hypotheses.from_n_best([beam]), batch, VOCAB, role_names=True, model=object(), length_penalty=1.0)
    best = out.n_best[0][0]
    assert VOCAB.decode(best.tokens) == RIGHT.split()
    # each new name is copied from the first source token naming that person: its position and source id
    flat = batch.src_ext_ids[0].reshape(-1)
    dale_tag = DIALOGUE.index("dale")
    for j in (3, 8):
        assert best.copy_positions[j] == dale_tag and best.tokens[j] == int(flat[dale_tag])
    assert best.copy_positions[0] == 0 and best.tokens[0] == VOCAB.id("mike")
    # its score: the original's plus the log-probability it lost, per step (13 tokens + EOS)
    assert best.score == pytest.approx(-1.0 + (-12.0 + 10.0) / 14)
    assert len(out.n_best[0]) == len(beam)  # the list keeps its length: the worst falls off


def test_an_edit_below_the_beams_worst_score_is_dropped_and_off_means_off(monkeypatch):
    batch = make_batch([[DIALOGUE]], VOCAB)
    beam = _beam_for_edits(monkeypatch, edited_logp=-30.0, original_logp=-10.0)  # -1 - 20/14 < -1.5
    out = rerank(Hypotheses.from_n_best([beam]), batch, VOCAB, role_names=True, model=object())
    assert [h.score for h in out.n_best[0]] == [-1.5, -1.0]  # the attribution rerank alone: HALF first
    assert all(VOCAB.decode(h.tokens) != RIGHT.split() for h in out.n_best[0])
    plain = rerank(Hypotheses.from_n_best([beam]), batch, VOCAB)
    assert [h.score for h in plain.n_best[0]] == [-1.0, -1.5]
    with pytest.raises(ValueError, match="role names need the model"):
        rerank(Hypotheses.from_n_best([beam]), batch, VOCAB, role_names=True)


def test_role_names_leave_a_source_that_is_no_dialogue_alone_and_the_option_is_a_bool(monkeypatch):
    batch = make_batch([[NEWS]], VOCAB)
    beam = _beam_for_edits(monkeypatch, edited_logp=0.0, original_logp=-10.0)
    out = rerank(Hypotheses.from_n_best([beam]), batch, VOCAB, role_names=True, model=object())
    assert [h.score for h in out.n_best[0]] == [-1.0, -1.5]
    with pytest.raises(ValueError, match="role_names must be true or false"):
        SearchConfig(role_names=1)


def test_the_models_log_probability_of_a_sequence_is_the_beams_score_without_filters():
    from agentsum.decoding.search import beam_search
    from agentsum.models import build_model

    torch.manual_seed(0)
    model = build_model({"type": "dca", "embedding_size": 8, "hidden_size": 12, "pointer": "single"},
                        len(VOCAB)).eval()
    batch = make_batch([[DIALOGUE], [NEWS]], VOCAB)
    config = SearchConfig(beam_size=3, min_length=0, max_length=6, block_trigrams=False, length_penalty=0.0,
                          min_length_ratio=None)
    hyps = beam_search(model, batch, config)
    for b, beam in enumerate(hyps.n_best):
        sequences = [h.tokens + ([rerank_module.EOS_ID] if h.finished else []) for h in beam]
        logp = sequence_logprobs(model, batch.select([b] * len(beam)), sequences)
        assert logp == pytest.approx([h.score for h in beam], abs=1e-4)


def test_role_name_variants_read_by_a_real_model_keep_the_score_rule():
    from agentsum.models import build_model

    torch.manual_seed(0)
    model = build_model({"type": "dca", "embedding_size": 8, "hidden_size": 12, "pointer": "single"},
                        len(VOCAB)).eval()
    batch = make_batch([[DIALOGUE]], VOCAB)
    dialogue = dialogue_of(batch, 0)
    beam = [hyp(WRONG, -1.0), hyp(HALF, -9.0)]
    words = [VOCAB.decode(h.tokens) for h in beam]
    variants = role_name_variants(model, beam, words, batch, 0, dialogue, length_penalty=1.0)
    logp = sequence_logprobs(model, batch.select([0, 0]), [beam[0].tokens + [rerank_module.EOS_ID],
                                                           variants[0].tokens + [rerank_module.EOS_ID]])
    assert VOCAB.decode(variants[0].tokens) == RIGHT.split()
    assert variants[0].score == pytest.approx(-1.0 + (logp[1] - logp[0]) / 14, abs=1e-5)
