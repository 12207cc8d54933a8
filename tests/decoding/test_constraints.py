"""Claims in search (agentsum.decoding.constraints): figure grammar, the source's periods, numbers in
context, the minimum length a short source supports, and the errors for a vocabulary that cannot
honour a constraint."""

from __future__ import annotations

import pytest
import torch

from agentsum.config import Config
from agentsum.data.batch import make_batch
from agentsum.data.text import tokenize
from agentsum.data.vocab import Vocabulary
from agentsum.decoding.constraints import ClaimConstraints, ConstraintError
from agentsum.decoding.search import SearchConfig, SourceNumbers, beam_search, filtered_step
from agentsum.models.base import Attention
from agentsum.models.pointer import CopyDistribution
from agentsum.data.claims import malformed_figures
from agentsum.models import build_model

CALL = tokenize(
    "Third quarter sales decreased 28% to $403.6 million. Adjusted EPS was $0.31, compared to $0.64 a year ago. "
    "Net debt was $112.1 million at the end of Q2. For the full year, we expect sales of $1.7 billion. "
    "Q3 gross margin was 12.1%.")
WORDS = sorted(set(CALL) | set(tokenize("Q1 Q2 Q3 Q4 FY sees revenue per share common , percent first quarter "
                                        "fourth full year rose fell up to")))
VOCAB = Vocabulary.build([WORDS])


def batch_of(*documents):
    return make_batch([[list(d)] for d in documents], VOCAB)


def constraints(batch, **options):
    return ClaimConstraints(VOCAB, batch, torch.device("cpu"), **options)


def allowed_after(c, prefix, doc=0):
    """The words the constraints leave allowed after ``prefix`` (words) in document ``doc``."""
    history = torch.tensor([[VOCAB.id(w) for w in prefix]], dtype=torch.long)
    log_probs = torch.zeros((1, len(c.words[doc])))
    c.filter(log_probs, history, len(prefix), torch.tensor([doc]))
    return {c.words[doc][i] for i in torch.isfinite(log_probs[0]).nonzero().squeeze(1).tolist()}


# ------------------------------------------------------------------------------------ figure grammar

def test_a_currency_sign_is_followed_by_a_numeral_only():
    c = constraints(batch_of(CALL), figure_grammar=True)
    after = allowed_after(c, ["sales", "$"])
    assert after and all(w.replace(".", "").replace(",", "").isdigit() or w == "(" for w in after)
    assert "per" not in after and "common" not in after and "," not in after


def test_units_only_after_a_numeral_and_never_two():
    c = constraints(batch_of(CALL), figure_grammar=True)
    assert "million" not in allowed_after(c, ["sales", "of"])
    assert "%" not in allowed_after(c, [])  # not at the start either
    assert "million" in allowed_after(c, ["sales", "403.6"]) and "%" in allowed_after(c, ["sales", "28"])
    assert "million" not in allowed_after(c, ["sales", "28", "%"])  # 5 % million
    assert "%" not in allowed_after(c, ["sales", "403.6", "million"])  # 5 million %


def test_units_follow_what_the_source_writes_around_the_numeral():
    c = constraints(batch_of(CALL), figure_grammar=True)
    after_sign = allowed_after(c, ["sales", "$"])
    assert "403.6" in after_sign and "0.31" in after_sign
    assert "28" not in after_sign and "12.1" not in after_sign  # the call writes 28% and 12.1%, never $28
    assert "%" not in allowed_after(c, ["sales", "403.6"])  # never 403.6%
    # the call writes $403.6 million and never $403.6 alone: the scale must follow
    assert allowed_after(c, ["sales", "$", "403.6"]) == {"million"}
    assert "million" not in allowed_after(c, ["eps", "$", "0.31"])  # $0.31 stands alone


def test_a_random_model_writes_no_malformed_figure_under_figure_grammar():
    """A model with random weights writes figure words anywhere; the constraint leaves none malformed
    (and without it some are)."""
    torch.manual_seed(0)
    config = Config(model={"type": "dca", "embedding_size": 8, "hidden_size": 8})
    model = build_model(config.model, len(VOCAB)).eval()
    batch = batch_of(CALL, CALL[:20])
    found = {}
    for on in (False, True):
        search = SearchConfig(beam_size=3, max_length=40, min_length=30, figure_grammar=on, block_trigrams=False)
        hyps = beam_search(model, batch, search, vocab=VOCAB)
        words = [[VOCAB.itos[t] if t < len(VOCAB) else batch.oov_words[b][t - len(VOCAB)] for t in tokens]
                 for b, tokens in enumerate(hyps.tokens)]
        found[on] = [malformed_figures(w) for w in words]
    assert any(found[False]) and not any(found[True])


def test_an_unk_that_would_be_replaced_by_a_sign_is_not_written_under_figure_grammar():
    """UNK replacement puts in the source word the UNK attended to most: a `$` put in so would stand
    past the grammar (`$ to be`); the vocabulary's own `$` is placed by the grammar instead."""
    from agentsum.data.vocab import UNK_ID

    batch = batch_of(CALL)
    c = constraints(batch, figure_grammar=True)
    log_probs = torch.zeros((2, len(c.words[0])))
    at_sign, at_word = CALL.index("$"), CALL.index("sales")
    c.forbid_figure_unks(log_probs, torch.tensor([at_sign, at_word]), torch.tensor([0, 0]))
    assert log_probs[0, UNK_ID] == float("-inf") and log_probs[1, UNK_ID] == 0.0
    assert torch.isfinite(log_probs[0, :UNK_ID]).all() and torch.isfinite(log_probs[0, UNK_ID + 1:]).all()


# ------------------------------------------------------------------------------------ periods

def test_only_the_reported_quarter_in_results_and_a_later_stated_period_in_guidance():
    c = constraints(batch_of(CALL), source_periods=True)
    results = allowed_after(c, ["revenue"])
    assert "q3" in results and "q2" not in results and "q1" not in results  # q1 is never stated; q2 is not reported
    assert "fy" not in results  # full-year results only in a fourth-quarter call
    guidance = allowed_after(c, ["sees"])
    assert "fy" in guidance and "q3" not in guidance
    assert "q4" not in guidance  # a later quarter, but the call never states it
    assert "quarter" in allowed_after(c, ["revenue", "third"]) and "quarter" not in allowed_after(c, ["revenue", "first"])
    # a new sentence is not forward-looking because an earlier one was
    assert "q3" in allowed_after(c, ["sees", "fy", "sales", ".", "revenue"])


def test_a_call_without_a_quarter_allows_the_stated_periods():
    c = constraints(batch_of(tokenize("Sales were $5 million in Q4. We see full year sales rising.")),
                    source_periods=True)
    assert c.periods[0] is not None  # "q4" is named: it is the reported quarter
    c = constraints(batch_of(tokenize("Sales were $5 million. For the full year we expect more.")), source_periods=True)
    assert c.periods[0] is None
    assert "q3" not in allowed_after(c, ["revenue"])  # never stated
    assert "year" in allowed_after(c, ["revenue", "full"])


# ------------------------------------------------------------------------------------ numbers in context

def keep_of(c, prefix):
    history = torch.tensor([[VOCAB.id(w) for w in prefix]], dtype=torch.long)
    return c.copy_keep(history, len(prefix), torch.tensor([0]))


def kept_numbers(c, keep):
    tokens = CALL
    return {tokens[i] for i in range(len(tokens)) if keep[0, i] > 0 and tokens[i][0].isdigit()}


def test_a_number_is_copied_only_from_sentences_stating_the_metric_and_period():
    c = constraints(batch_of(CALL), numbers_in_context=True)
    assert keep_of(c, ["net"]) is None  # no metric named yet: no restriction
    assert kept_numbers(c, keep_of(c, ["q3", "sales", "fell"])) == {"28", "403.6"}  # not the full year's 1.7
    assert kept_numbers(c, keep_of(c, ["fy", "sales"])) == {"1.7"}
    # $0.64 is a year-ago comparison: it supplies no number
    assert kept_numbers(c, keep_of(c, ["q3", "adjusted", "eps"])) == {"0.31"}
    assert kept_numbers(c, keep_of(c, ["q3", "revenue", ".", "gross", "margin"])) == {"12.1"}
    # words are not restricted: only numerals lose their copy weight
    keep = keep_of(c, ["sales"])
    assert keep[0, CALL.index("decreased")] == 1.0


def test_after_a_direction_word_only_numbers_stated_with_that_direction_are_copied():
    c = constraints(batch_of(CALL), numbers_in_context=True)
    # the call says sales *decreased* 28% to $403.6 million
    assert kept_numbers(c, keep_of(c, ["q3", "sales", "fell"])) == {"28", "403.6"}
    assert kept_numbers(c, keep_of(c, ["q3", "sales", "rose"])) == set()
    assert kept_numbers(c, keep_of(c, ["q3", "sales", "up", "to"])) == {"28", "403.6"}  # a bound, no direction
    # a number stated with no direction supplies either
    assert kept_numbers(c, keep_of(c, ["q3", "gross", "margin", "rose"])) == {"12.1"}


class CopyingModel:
    """A step model whose copy mass sits on the full year's ``1.7`` (0.6) and on ``403.6`` (0.3); the
    generator (0.1) prefers ``sales``."""

    def __init__(self, batch):
        self.batch, self.vocab_size = batch, len(VOCAB)

    def step_distribution(self, enc, state, input_ids):
        N, (A, S) = input_ids.size(0), self.batch.src_ext_ids.shape[1:]
        logits = torch.zeros((N, 1, len(VOCAB)))
        logits[..., VOCAB.id("sales")] = 5.0
        copy = torch.zeros((N, 1, A * S))
        copy[..., CALL.index("1.7")], copy[..., CALL.index("403.6")] = 0.6, 0.3
        dist = CopyDistribution(logits, torch.full((N, 1), 0.1), copy,
                                self.batch.src_ext_ids.view(1, -1).expand(N, -1), len(VOCAB) + self.batch.max_oov)
        word = torch.zeros((N, 1, A, S))
        word[..., 0, 0] = 1.0
        return dist, state, Attention(word, torch.ones((N, 1, A))), None


def test_search_under_numbers_in_context_copies_only_numbers_stated_for_the_metric_and_period():
    batch = batch_of(CALL)
    prefix = ["q3", "sales", "fell", "to", "$"]
    history = torch.tensor([[VOCAB.id(w) for w in prefix]])
    picked = {}
    for on in (False, True):
        config = SearchConfig(beam_size=1, numbers_from_source=True, numbers_in_context=on)
        numbers = SourceNumbers(VOCAB, batch, torch.device("cpu"))
        c = constraints(batch, numbers_in_context=True) if on else None
        log_probs, _, _ = filtered_step(CopyingModel(batch), None, None, history[:, -1], history, len(prefix), config,
                                        len(VOCAB) + batch.max_oov, torch.tensor([batch.max_oov]), numbers,
                                        torch.tensor([0]), c)
        picked[on] = VOCAB.itos[int(log_probs.argmax())]
    # the full year's $1.7 billion is the likelier copy, but this sentence is about q3 sales
    assert picked == {False: "1.7", True: "403.6"}


# ------------------------------------------------------------------------------------ short inputs and errors

def test_a_short_source_lowers_the_minimum_length():
    from agentsum.decoding.search import _doc_min_lengths  # noqa: PLC2701 (the rule itself)

    short = tokenize("Sales rose 5%.")  # 5 tokens: at most ceil(2.5) = 3 forced
    cpu = torch.device("cpu")
    assert _doc_min_lengths(batch_of(short, CALL + CALL), SearchConfig(min_length=30), cpu).tolist() == [3, 30]
    assert _doc_min_lengths(batch_of(CALL + CALL), SearchConfig(min_length=30), cpu) is None  # nothing lowered
    assert _doc_min_lengths(batch_of(short), SearchConfig(min_length=30, min_length_ratio=None), cpu) is None


def test_a_vocabulary_without_numerals_or_periods_is_refused_naming_the_option():
    chinese = Vocabulary.build([list("公司收入增长百分之五")])
    batch = make_batch([[list("公司收入增长")]], chinese)
    for option in ("figure_grammar", "numbers_in_context", "source_periods"):
        with pytest.raises(ConstraintError, match=f"search.{option}"):
            ClaimConstraints(chinese, batch, torch.device("cpu"), **{option: True})


def test_search_config_rejects_non_boolean_options():
    with pytest.raises(ValueError, match="figure_grammar"):
        SearchConfig(figure_grammar="yes")
    with pytest.raises(ValueError, match="min_length_ratio"):
        SearchConfig(min_length_ratio=0)


@pytest.mark.parametrize("sentence, number, comparison", [
    ("q3 eps was $ 0.31 versus $ 0.64 a year ago .", "0.31", False),
    ("q3 eps was $ 0.31 versus $ 0.64 a year ago .", "0.64", True),
    ("eps rose from $ 0.64 to $ 0.31 .", "0.64", True),
    ("eps rose from $ 0.64 to $ 0.31 .", "0.31", False),
    ("sales rose 12 % over the prior year .", "12", False),
    ("sales were up 10 % from last year .", "10", False),
    ("sales of more than $ 1 billion .", "1", False),
    ("sales compared to $ 5 million .", "5", True),
])
def test_a_comparison_value_is_read_within_its_sentence(sentence, number, comparison):
    from agentsum.data.figures import comparison_value

    words = sentence.split()
    assert comparison_value(words, words.index(number)) is comparison


def test_a_call_without_a_quarter_still_supplies_numbers_to_a_sentence_naming_one():
    call = tokenize("Net income was $45 million. Diluted earnings per share were $0.31.")
    vocab = Vocabulary.build([call + tokenize("q3 earnings of per share eps")])
    batch = make_batch([[call]], vocab)
    c = ClaimConstraints(vocab, batch, torch.device("cpu"), numbers_in_context=True)
    assert c.periods[0] is None
    history = torch.tensor([[vocab.id(w) for w in ["q3", "eps", "$"]]])
    keep = c.copy_keep(history, 3, torch.tensor([0]))
    assert keep[0, call.index("0.31")] == 1.0 and keep[0, call.index("45")] == 0.0
    # "earnings" is read as net income before a number, EPS when "per share" follows: both supply
    history = torch.tensor([[vocab.id(w) for w in ["q3", "earnings", "of", "$"]]])
    keep = c.copy_keep(history, 4, torch.tensor([0]))
    assert keep[0, call.index("0.31")] == 1.0 and keep[0, call.index("45")] == 1.0
