"""search.numbers_from_source: numerals are copied from the source, never generated, and a numeral's
scale word follows the source. Scripted filters first, then beam and greedy search with tiny
DCA and Transformer pointer-generators whose generator is pushed towards numbers."""

from __future__ import annotations

import pytest
import torch

from agentsum.data.batch import make_batch
from agentsum.data.numerals import SCALES, is_numeral
from agentsum.data.vocab import SPECIALS, Vocabulary
from agentsum.decoding.copying import to_words
from agentsum.decoding.search import (NEG_INF, SearchConfig, SourceNumbers, beam_search, greedy_search,
                                      numeral_mask, sample_and_greedy, search)
from agentsum.models import build_model

WORDS = ["revenue", "rose", "fell", "to", "$", "million", "billion", "in", "q3", "eps", "was", "and", ".",
         "12", "30.8", "2021", "45", "7", "1,000", "2.5", "99"]
VOCAB = Vocabulary([*SPECIALS, *WORDS])
V = len(VOCAB)
# the sources hold 12 (bare and as "12 million"), 30.8 only as "30.8 million", 45 as "45 billion",
# and 17.25, which is out of the vocabulary (copy-only anyway)
DOCS = [
    [["revenue", "rose", "to", "$", "12", "million", "in", "q3", "."], ["eps", "was", "12", "and", "17.25", "."]],
    [["revenue", "fell", "to", "$", "30.8", "million", "."], ["eps", "was", "$", "45", "billion", "."]],
]
TINY_MODELS = {
    "dca": dict(type="dca", embedding_size=16, hidden_size=16, contextual_layers=1, communication=True,
                pointer="multi"),
    "transformer_pg": dict(type="transformer_pg", d_model=16, heads=2, d_ff=32, encoder_layers=1,
                           decoder_layers=1, dropout=0.0, pointer=True),
}


def w(token: str) -> int:
    return VOCAB.id(token)


def cfg(**kw) -> SearchConfig:
    return SearchConfig(**{"beam_size": 3, "max_length": 12, "block_trigrams": False, **kw})


# ------------------------------------------------------------------------------------------
# Which ids, and the scale rule
# ------------------------------------------------------------------------------------------


def test_numeral_mask_marks_the_vocabularys_numerals_once():
    mask = numeral_mask(VOCAB)
    assert mask.tolist() == [is_numeral(t) for t in VOCAB.itos]
    assert {VOCAB.itos[i] for i in mask.nonzero().squeeze(1).tolist()} == {"12", "30.8", "2021", "45", "7", "1,000",
                                                                           "2.5", "99"}
    assert numeral_mask(VOCAB) is mask  # cached per vocabulary
    assert numeral_mask(Vocabulary(list(VOCAB.itos))) is not mask


def test_a_scale_word_after_a_numeral_follows_the_source():
    batch = make_batch(DOCS, VOCAB)
    numbers = SourceNumbers(VOCAB, batch, torch.device("cpu"))
    width = V + batch.max_oov
    # rows: doc 0 after "12" (bare and "12 million" in its source); doc 1 after "30.8" (only
    # "30.8 million"); doc 1 after "45" (only "45 billion"); doc 0 after "q3" (not a numeral)
    history = torch.tensor([[w("$"), w("12")], [w("$"), w("30.8")], [w("$"), w("45")], [w("in"), w("q3")]])
    row_doc = torch.tensor([0, 1, 1, 0])
    log_probs, needs_scale = numbers.filter(torch.zeros(4, width), history, 2, row_doc)
    allowed = [set(torch.isfinite(row).nonzero().squeeze(1).tolist()) for row in log_probs]
    every = set(range(width))
    assert allowed[0] == every - {w("billion")}  # "12 million" or "12" and anything
    assert allowed[1] == {w("million")}  # "30.8" needs its "million"
    assert allowed[2] == {w("billion")}
    assert allowed[3] == every
    assert needs_scale.tolist() == [False, True, True, False]
    # at the first step nothing precedes
    untouched, none = numbers.filter(torch.zeros(4, width), history, 0, row_doc)
    assert torch.isfinite(untouched).all() and none is None


def test_a_numeral_whose_every_scale_would_be_blocked_next_is_forbidden_now():
    """Look-ahead: doc 1 writes 30.8 only as "30.8 million" and 45 only as "45 billion". Once a row
    has written "$ 30.8 million", trigram blocking would forbid "million" after another "$ 30.8",
    so "30.8" is forbidden after "$" (45 is not); a window holding "million" forbids it too."""
    batch = make_batch(DOCS, VOCAB)
    numbers = SourceNumbers(VOCAB, batch, torch.device("cpu"))
    width = V + batch.max_oov

    def forbidden(history, doc, n, window):
        log_probs = numbers.forbid_dead_ends(torch.zeros(1, width), torch.tensor([[w(t) for t in history]]),
                                             len(history), torch.tensor([doc]), n=n, window=window)
        return {VOCAB.itos[i] for i in torch.isinf(log_probs[0]).nonzero().squeeze(1).tolist()}

    stated = ["revenue", "$", "30.8", "million", "and", "$"]
    assert forbidden(stated, 1, n=3, window=0) == {"30.8"}
    assert forbidden(stated, 1, n=0, window=0) == set()  # no blocking: no dead end
    assert forbidden(stated[:-1] + ["to"], 1, n=3, window=0) == set()  # "to 30.8 million" is new
    assert forbidden(stated, 1, n=2, window=0) == {"30.8"}  # "30.8 million" is a bigram already
    assert forbidden(stated, 0, n=3, window=0) == set()  # doc 0 writes 12 bare too; 30.8 is not its own
    # "million" two tokens back: inside a window of 3 after the numeral, outside a window of 2
    assert forbidden(["revenue", "million", "$"], 1, n=0, window=3) == {"30.8"}
    assert forbidden(["revenue", "million", "$"], 1, n=0, window=2) == set()
    assert forbidden(["million", "and", "$"], 1, n=0, window=3) == set()
    # the last step before max_length: no scale word can follow, so neither can such a numeral
    last = numbers.forbid_dead_ends(torch.zeros(1, width), torch.tensor([[w("was")]]), 1, torch.tensor([1]),
                                    n=0, window=0, last_step=True)
    assert {VOCAB.itos[i] for i in torch.isinf(last[0]).nonzero().squeeze(1).tolist()} == {"30.8", "45"}


def test_an_unk_that_would_be_replaced_by_a_numeral_is_forbidden():
    """UNK replacement puts in the source word at the copy position: where that is a numeral, UNK is
    forbidden (the numeral can be copied, under the scale rule); elsewhere UNK stays allowed."""
    batch = make_batch(DOCS, VOCAB)
    numbers = SourceNumbers(VOCAB, batch, torch.device("cpu"))
    S = batch.src_ext_ids.size(2)
    # doc 0, agent 0: revenue rose to $ 12 million ...; agent 1: eps was 12 and 17.25 .
    positions = torch.tensor([4, 0, S + 2, S + 4, S + 5])  # "12", "revenue", "12", "17.25", "."
    log_probs = numbers.forbid_numeral_unks(torch.zeros(5, V + batch.max_oov), positions, torch.zeros(5, dtype=torch.long))
    assert torch.isinf(log_probs[:, 1]).tolist() == [True, False, True, True, False]  # UNK is id 1
    assert torch.isfinite(log_probs[:, 2:]).all()


# ------------------------------------------------------------------------------------------
# Search with tiny real models
# ------------------------------------------------------------------------------------------


def number_loving(kind: str, seed: int = 0):
    """A tiny untrained model whose generator prefers the vocabulary's numerals by far."""
    torch.manual_seed(seed)
    model = build_model(TINY_MODELS[kind], V).eval()
    with torch.no_grad():
        layers = [m for m in model.modules() if isinstance(m, torch.nn.Linear) and m.out_features == V]
        assert layers, "the model has an output layer over the vocabulary"
        for layer in layers:
            layer.bias[numeral_mask(VOCAB)] += 8.0
    return model


def numerals_of(words: list[str]) -> list[str]:
    return [t for t in words if is_numeral(t)]


@pytest.mark.parametrize("kind", sorted(TINY_MODELS))
@pytest.mark.parametrize("strategy", [beam_search, greedy_search])
def test_search_writes_no_number_that_its_source_lacks(kind, strategy):
    model, batch = number_loving(kind), make_batch(DOCS, VOCAB)
    sources = [{t for agent in doc for t in agent} for doc in DOCS]
    free = to_words(strategy(model, batch, cfg()).tokens, [[0] * 12] * 2, batch, VOCAB, unk_replace=False)
    assert any(set(numerals_of(words)) - source for words, source in zip(free, sources)), \
        "without the option the model writes numbers its source lacks (else this test shows nothing)"

    hyps = strategy(model, batch, cfg(numbers_from_source=True), vocab=VOCAB)
    constrained = to_words(hyps.tokens, hyps.copy_positions, batch, VOCAB)
    for words, doc, source in zip(constrained, DOCS, sources):
        assert set(numerals_of(words)) <= source
        tokens = [t for agent in doc for t in agent]
        pairs = set(zip(tokens, tokens[1:]))
        for numeral, after in zip(words, words[1:]):
            if is_numeral(numeral) and after in SCALES:
                assert (numeral, after) in pairs, f"{numeral} {after} is not how the source writes it"


@pytest.mark.parametrize("seed", range(6))
def test_with_trigram_blocking_the_best_summary_is_never_a_dead_end(seed):
    """A number-loving model writes "$ 30.8 million" and wants it again: with trigram blocking the
    second "million" is forbidden, so without look-ahead every beam can end in a dead "$ 30.8" and
    search goes on from forbidden tokens; and a numeral at the last step is cut from its scale. The
    best summary must have a finite score and state every number as the source does."""
    model, batch = number_loving("dca", seed=seed), make_batch([DOCS[1]], VOCAB)
    tokens = [t for agent in DOCS[1] for t in agent]
    pairs = set(zip(tokens, tokens[1:]))
    hyps = beam_search(model, batch, cfg(numbers_from_source=True, block_trigrams=True, max_length=20, beam_size=2),
                       vocab=VOCAB)
    best = hyps.n_best[0][0]
    words = to_words([best.tokens], [best.copy_positions], batch, VOCAB)[0]
    assert best.score > NEG_INF, words
    for numeral, after in zip(words, words[1:] + ["<end>"]):
        if numeral in ("30.8", "45"):
            assert (numeral, after) in pairs, f"{numeral} {after} in {words}"


@pytest.mark.parametrize("seed", range(3))
def test_no_number_comes_from_unk_replacement(seed):
    """A model that generates UNK far more than anything else: its UNKs are replaced by the source
    words they attend to, numerals among them, without the option; with it, every numeral of the
    summary is a numeral token (copied), none an UNK put in, and the summary is still written."""
    from agentsum.data.vocab import UNK_ID

    torch.manual_seed(seed)
    model = build_model(TINY_MODELS["dca"], V).eval()
    with torch.no_grad():
        for layer in [m for m in model.modules() if isinstance(m, torch.nn.Linear) and m.out_features == V]:
            layer.bias[UNK_ID] += 8.0
    # sources that are mostly numerals, so that an UNK's copy position is one by chance
    batch = make_batch([[["12", "million", "30.8", "2.5", "45", "billion", "7", "99", "."]],
                        [["revenue", "2021", "1,000", "$", "2.5", "million", "12", "."]]], VOCAB)

    def unk_numerals(config, **kw):
        hyps = beam_search(model, batch, config, **kw)
        words = to_words(hyps.tokens, hyps.copy_positions, batch, VOCAB)
        return sum(1 for ids, ws in zip(hyps.tokens, words) for i, w_ in zip(ids, ws) if i == UNK_ID and is_numeral(w_))

    assert unk_numerals(cfg(max_length=12, min_length=12)) > 0, "without the option UNKs become numerals"
    assert unk_numerals(cfg(max_length=12, min_length=12, numbers_from_source=True), vocab=VOCAB) == 0
    hyps = beam_search(model, batch, cfg(max_length=12, min_length=12, numbers_from_source=True), vocab=VOCAB)
    assert all(len(ids) == 12 and score > NEG_INF for ids, score in zip(hyps.tokens, hyps.scores))


def test_sampling_obeys_the_option_too():
    model, batch = number_loving("dca"), make_batch(DOCS, VOCAB)
    sample, greedy = sample_and_greedy(model, batch, cfg(beam_size=1, numbers_from_source=True), vocab=VOCAB,
                                       generator=torch.Generator().manual_seed(0))
    allowed = [{w(t) for agent in doc for t in agent} for doc in DOCS]
    for rows in (sample, greedy):
        for b, ids in enumerate(rows.tolist()):
            numerals = {i for i in ids if i < V and numeral_mask(VOCAB)[i]}
            assert numerals <= allowed[b]


def test_a_number_whose_scale_is_blocked_is_a_dead_end_not_a_summary():
    """Repeat blocking may forbid the scale word a numeral needs: the hypothesis is dropped rather
    than ended after a number cut from its scale."""
    model, batch = number_loving("dca", seed=1), make_batch([DOCS[1]], VOCAB)
    hyps = beam_search(model, batch, cfg(numbers_from_source=True, repeat_window=12, beam_size=4), vocab=VOCAB)
    for h in hyps.n_best[0]:
        words = to_words([h.tokens], [h.copy_positions], batch, VOCAB)[0]
        if words and words[-1] in ("30.8", "45"):
            assert h.score == NEG_INF


def test_the_option_needs_the_vocabulary_and_a_copy_distribution():
    model, batch = number_loving("dca"), make_batch(DOCS, VOCAB)
    with pytest.raises(ValueError, match="numbers_from_source needs the vocabulary"):
        search(model, batch, cfg(numbers_from_source=True))
    with pytest.raises(ValueError, match="the vocabulary has 5 words but the model scores"):
        search(model, batch, cfg(numbers_from_source=True), vocab=Vocabulary(list(SPECIALS) + ["x"]))

    class StepOnly:  # a model offering only step(): no copy distribution to constrain
        vocab_size = V
        encode = init_state = step = model.step

    with pytest.raises(TypeError, match="needs a model with step_distribution"):
        search(StepOnly(), batch, cfg(numbers_from_source=True), vocab=VOCAB)
    with pytest.raises(ValueError, match="numbers_from_source must be true or false, got 'yes'"):
        SearchConfig(numbers_from_source="yes")


# ------------------------------------------------------------------------------------------
# The command line
# ------------------------------------------------------------------------------------------


def recording_search(monkeypatch) -> list[tuple[bool, Vocabulary | None]]:
    """Record (config.numbers_from_source, vocab) of every search the Summarizer runs."""
    import agentsum.summarizer

    calls, real = [], agentsum.summarizer.search

    def spy(model, batch, config, **kw):
        calls.append((config.numbers_from_source, kw.get("vocab")))
        return real(model, batch, config, **kw)

    monkeypatch.setattr(agentsum.summarizer, "search", spy)
    return calls


def test_the_cli_option_reaches_the_search(tiny_run, tmp_path, monkeypatch, capsys):
    from agentsum.cli import main

    calls = recording_search(monkeypatch)
    article = tmp_path / "a.txt"
    article.write_text("The cat saw 12 dogs near the park. The owl met 3,000 foxes near the river.", encoding="utf-8")
    base = ["--threads", "1", "summarize", "--checkpoint", str(tiny_run["checkpoint"]), str(article)]
    assert main([*base, "--numbers-from-source", "on"]) == 0
    assert main([*base, "--numbers-from-source", "off"]) == 0
    assert main(base) == 0
    (on, vocab), (off, _), (default, _) = calls
    assert (on, off, default) == (True, False, False)  # the tiny preset leaves it off
    assert vocab is not None and len(vocab) > 4
    with pytest.raises(SystemExit):
        main([*base, "--numbers-from-source", "yes"])
    err = capsys.readouterr().err
    assert "--numbers-from-source: invalid choice: 'yes' (choose from 'on', 'off')" in err.replace('"', "'")


def test_the_ectsum_presets_turn_it_on_and_the_others_do_not():
    from agentsum.config import load_config

    for name in ("ectsum-m1", "ectsum-m6", "ectsum-m1-long"):
        assert load_config(name).search.numbers_from_source, name
    for name in ("samsum-m1", "cnndm-m1", "tiny"):
        assert not load_config(name).search.numbers_from_source, name
