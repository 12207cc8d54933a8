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
