"""Numbers, measured (evaluation/numbers.py): how numbers are read, when a summary's number is supported
by its source, recall of the reference's numbers, and the fields evaluate and lead3 write."""

import json
from decimal import Decimal

import pytest
import torch

from agentsum.cli import main
from agentsum.config import Config
from agentsum.data.corpus import Example
from agentsum.data.dataset import DataConfig, prepare_all, to_batch
from agentsum.data.language import TextProcessor
from agentsum.data.text import join_sentences, summary_sentences
from agentsum.data.vocab import UNK_ID, Vocabulary
from agentsum.decoding.copying import to_words
from agentsum.decoding.search import SearchConfig
from agentsum.evaluation.evaluate import evaluate_corpus, write_results
from agentsum.data.numbers import matches, read_numbers
from agentsum.evaluation.numbers import NumberCounts, document_numbers, number_scores
from agentsum.models import build_model
from agentsum.summarizer import Summarizer


def values(text):
    """(value, unit) of every number in ``text``, values as plain strings."""
    return [(format(n.value, "f"), n.unit) for n in read_numbers(text)]


def same(a, b):
    """``a`` and ``b`` each hold one number, and they match."""
    (x,), (y,) = read_numbers(a), read_numbers(b)
    return matches(x, y)


# ---------------------------------------------------------------------------------------- reading


@pytest.mark.parametrize("a, b", [
    ("1,000", "1000"),
    ("1 , 000", "1000"),                      # commas split off by a tokenizer
    ("1 , 000 , 000 units", "1,000,000"),
    ("2.5%", "2.5 percent"),
    ("2.5 %", "2.5 pct"),
    ("2.5 per cent", "2.5%"),
    ("452.2", "452.20"),                      # values, not strings
    ("$1.2 billion", "$ 1.2 billion"),        # raw text and the model's tokens
    ("$1.2 billion", "$1,200 million"),       # the scale multiplies
    ("1.5m", "1.5 million"),
    ("$3bn", "$3 billion"),
    ("two million", "2,000,000"),
    ("twenty", "20"),
    ("twenty-five", "25"),
    ("forty two", "42"),
    ("two hundred fifty", "250"),
    ("25 cents", "$0.25"),
    ("1.2 billion dollars", "$1.2 billion"),
    ("400 basis points", "400 bps"),
])
def test_equal_numbers_written_differently_match(a, b):
    assert same(a, b)


@pytest.mark.parametrize("a, b", [
    ("$1.2 billion", "$1.2 million"),         # the scale keeps its unit
    ("$1.2 billion", "$1.2"),
    ("$1.2 billion", "€1.2 billion"),         # currencies differ
    ("2.5%", "$2.5"),
    ("50 bps", "50%"),
    ("452.2", "452.3"),
])
def test_different_numbers_do_not_match(a, b):
    assert not same(a, b)


def test_a_number_without_a_unit_matches_one_with_a_unit():
    """The source often leaves the currency to the context ("revenue of 1.2 billion")."""
    assert same("1.2 billion", "$1.2 billion") and same("7.5", "7.5%")


def test_model_output_reads_as_the_raw_source():
    source = "Q3 revenue rose 2.5% to $452.2 million, from $441.2 million; we hired 1,000 people."
    output = "q3 revenue rose 2.5 percent to $ 452.2 million .\nwe hired 1 , 000 people ."
    assert values(output) == [("2.5", "%"), ("452200000", "$"), ("1000", None)]
    counts, unsupported = document_numbers(output, "", source)
    assert (counts.stated, counts.supported, unsupported) == (3, 3, [])


def test_what_is_not_a_number():
    # ordinals, quarters, times, dates, multiples; "one" alone is a pronoun more often than a number
    assert values("q3 3rd 10x 10:30 9/11 one of the best") == []
    assert values("one million , twenty one") == [("1000000", None), ("21", None)]


def test_ranges_signs_and_accounting_negatives():
    assert values("3-4 %") == [("3", "%"), ("4", "%")]
    assert values("fell - 5 %") == [("5", "%")]
    assert values("loss of $ ( 0.03 )") == [("0.03", "$")]
    assert values("an 18-year-old") == [("18", None)]


def test_one_digit_numbers_are_counted_apart():
    numbers = {n.text: n.one_digit for n in read_numbers("1 . five stores , $ 5 , 5 % , 5 million , 12 , 0.5")}
    assert numbers == {"1": True, "five": True, "$ 5": False, "5 %": False, "5 million": False, "12": False,
                       "0.5": False}


# --------------------------------------------------------------------------- supported and recall


def test_supported_and_recall_of_one_document():
    source = "Revenue was $1.5 billion, up 7.5%. We opened 3 stores and 120 offices in 2021."
    reference = "revenue $1.5 billion , up 7.5 % .\nanalysts expected $1.6 billion .\nopened 3 stores ."
    summary = "revenue was $ 1.5 million , up 7.5 percent .\nwe opened 3 stores and 120 offices ."
    counts, unsupported = document_numbers(summary, reference, source)
    # $1.5 million is not $1.5 billion; 7.5% and 120 are in the source; "3" is a one-digit number
    assert (counts.stated, counts.supported, unsupported) == (3, 2, ["$ 1.5 million"])
    # the reference's $1.6 billion is not in the source: no summary of it could state it
    assert (counts.recallable, counts.recalled) == (2, 1)
    assert (counts.stated_1digit, counts.supported_1digit, counts.recallable_1digit, counts.recalled_1digit) == \
        (1, 1, 1, 1)
    assert counts.supported_percent == pytest.approx(200 / 3, abs=0.01) and counts.recall_percent == 50.0


def test_a_number_stated_twice_counts_once():
    counts, _ = document_numbers("up 12 % , yes 12 % .", "", "up 12%")
    assert (counts.stated, counts.supported) == (1, 1)


def test_corpus_figures_are_micro_averages_and_a_document_without_numbers_is_null():
    summaries = ["sales 10 , 20 , 30 , 40 .", "sales 99 .", "no numbers here ."]
    references = ["sales 10 .", "sales 50 .", "none ."]
    sources = ["sales 10 20 30 40", "sales 50", "nothing"]
    scores, rows = number_scores(summaries, references, sources)
    assert scores["numbers_supported"] == 80.0          # 4 of 5, not the mean of 100% and 0%
    assert scores["numbers_recall"] == 50.0             # 1 of 2
    assert scores["numbers_stated"] == 5 and scores["numbers_recallable"] == 2
    assert scores["numbers_supported_1digit"] is None   # no one-digit number anywhere
    assert [r["numbers_supported"] for r in rows] == [100.0, 0.0, None]
    assert [r["numbers_recall"] for r in rows] == [100.0, 0.0, None]
    assert rows[1]["numbers_unsupported"] == ["99"]
    with pytest.raises(ValueError, match="2 summaries, 1 references"):
        number_scores(summaries[:2], references[:1], sources[:2])


def test_counts_add_up():
    a, b = NumberCounts(stated=2, supported=1), NumberCounts(stated=3, recalled=1, recallable=2)
    total = a + b
    a.add(b)
    assert a == total == NumberCounts(stated=5, supported=1, recallable=2, recalled=1)


def test_a_copied_oov_number_is_read_from_the_source_word():
    """The model copies a number its vocabulary lacks through its extended id (or an UNK replaced
    by the source word it attended to): the summary holds the source's token, and it is supported."""
    article = "Revenue rose to $452.2 million in the quarter."
    config = DataConfig(agents=1)
    (doc,) = prepare_all([Example("a", article, "Revenue rose to $452.2 million.", "x")], config)
    vocab = Vocabulary.build([[t for t in doc.agents[0] if t != "452.2"]])
    batch = to_batch([doc], vocab, with_targets=False)
    assert batch.oov_words[0] == ["452.2"]
    extended = len(vocab) + batch.oov_words[0].index("452.2")
    words = ["revenue", "rose", "to", "$", None, "million", "."]
    position = doc.agents[0].index("452.2")
    for number_id, unk_replace in ((extended, False), (UNK_ID, True)):  # UNK, replaced by the source word
        ids = [vocab.id(w) if w else number_id for w in words]
        (tokens,) = to_words([ids], [[position] * len(ids)], batch, vocab, unk_replace=unk_replace)
        summary = TextProcessor().summary_text(tokens)
        assert summary == "revenue rose to $ 452.2 million ."
        counts, _ = document_numbers(summary, doc.reference, article)
        assert (counts.stated, counts.supported, counts.recallable, counts.recalled) == (1, 1, 1, 1)


# --------------------------------------------------------------------------- what evaluate writes

ARTICLES = ["Sales rose 12% to $3.5 billion. The firm hired 1,500 people.",
            "The cat sat on the mat. The dog ran.",
            "Profit fell to $45 million from $50 million in 2020."]
SUMMARIES = ["Sales rose 12% to $3.5 billion.", "The cat sat.", "Profit fell to $45 million, analysts said $44 million."]


@pytest.fixture(scope="module")
def summarizer():
    config = Config(data=DataConfig(agents=2), model={"type": "dca", "embedding_size": 8, "hidden_size": 8})
    docs = prepare_all([Example(str(i), a, s, "x") for i, (a, s) in enumerate(zip(ARTICLES, SUMMARIES))], config.data)
    vocab = Vocabulary.build([t for d in docs for a in d.agents for t in a])
    torch.manual_seed(0)
    return Summarizer.from_model(build_model(config.model, len(vocab)), vocab, config)


def test_evaluate_writes_the_numbers_figures_to_scores_and_predictions(summarizer, tmp_path):
    examples = [Example(str(i), a, s, "x") for i, (a, s) in enumerate(zip(ARTICLES, SUMMARIES))]
    result = evaluate_corpus(summarizer, iter(examples), SearchConfig(beam_size=2, max_length=10), chunk=2)
    # the figures are those of the whole articles, as written, whatever the model said
    expected_scores, expected_rows = number_scores(result.predictions, result.references, ARTICLES)
    assert {k: result.scores[k] for k in expected_scores} == expected_scores
    assert [{k: row[k] for k in expected} for row, expected in zip(result.per_document, expected_rows)] == expected_rows
    write_results(tmp_path, result.predictions, result.references, result.ids, result.scores, result.per_document)
    scores = json.loads((tmp_path / "scores.json").read_text(encoding="utf-8"))
    rows = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    for key in ("numbers_supported", "numbers_recall", "numbers_supported_1digit", "numbers_recall_1digit",
                "numbers_stated", "numbers_recallable"):
        assert key in scores
    assert scores["numbers_recallable"] == 3  # 12%, $3.5 billion, $45 million; not $44 million, which the source lacks
    # the claim figures sit beside the search settings, neither hiding the other
    assert scores["numbers_in_context"] is False  # the search setting
    assert scores["numbers_in_metric_context"] is None or 0 <= scores["numbers_in_metric_context"] <= 100
    assert {"period_agreement", "direction_agreement", "malformed_figures"} <= set(scores)
    assert [r["id"] for r in rows] == ["0", "1", "2"]
    assert all({"numbers_supported", "numbers_recall", "numbers_unsupported"} <= set(r) for r in rows)


def test_lead3_writes_the_numbers_figures(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": str(i), "article": a, "summary": s}) + "\n"
                            for i, (a, s) in enumerate(zip(ARTICLES, SUMMARIES))), encoding="utf-8")
    assert main(["lead3", "--data", str(data), "--sentences", "1", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "numbers: supported by the source 100.0% of 5" in out
    scores = json.loads((tmp_path / "out" / "scores.json").read_text(encoding="utf-8"))
    # the lead copies the article, so its numbers are all supported: 12%, $3.5 billion, $45 million, $50 million, 2020
    assert scores["numbers_supported"] == 100.0 and scores["numbers_stated"] == 5 and scores["numbers_recall"] == 100.0
    references = [join_sentences(summary_sentences(s)) for s in SUMMARIES]
    leads = [TextProcessor().lead(a, 1) for a in ARTICLES]
    expected, _ = number_scores(leads, references, ARTICLES)
    assert scores["numbers_recall"] == expected["numbers_recall"]
    rows = [json.loads(line) for line in (tmp_path / "out" / "predictions.jsonl").read_text().splitlines()]
    assert [r["numbers_supported"] for r in rows] == [100.0, None, 100.0]
    assert [r["numbers_unsupported"] for r in rows] == [[], [], []]
