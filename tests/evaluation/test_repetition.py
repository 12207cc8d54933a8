"""The reader's-view rates of evaluation/repetition.py: a content word written twice within a few
tokens, and one person named twice as ``X and X``."""

import pytest

from agentsum.config import Config
from agentsum.data.corpus import Example
from agentsum.data.dataset import DataConfig, prepare_all
from agentsum.data.vocab import Vocabulary
from agentsum.decoding.search import SearchConfig
from agentsum.evaluation.evaluate import evaluate
from agentsum.evaluation.repetition import (doubled_rate, doubles_word, repetition_scores, x_and_x,
                                            x_and_x_rate)
from agentsum.models import build_model
from agentsum.summarizer import Summarizer


@pytest.mark.parametrize("text, window, expected", [
    ("laura and laura are a new printer .", 3, True),   # the name comes back two tokens later
    ("jackie 's pregnant is pregnant .", 3, True),
    ("emma will buy milk and then emma will cook .", 3, False),  # five tokens apart
    ("emma will buy milk and then emma will cook .", 6, True),
    ("the dog and the cat are at the park .", 3, False),  # function words do not count
    ("he will see him and he will call .", 3, False),
    ("tom 's 3 3 cats .", 3, False),                    # numbers are not words a reader sees doubled
    ("Laura and laura .", 3, True),                     # cased text too
    ("", 3, False),
])
def test_doubles_word(text, window, expected):
    assert doubles_word(text, window) is expected


def test_x_and_x_finds_the_name_written_twice_around_and():
    assert x_and_x("robert , fred and fred are going to buy it .") == "fred"
    assert x_and_x("Tina and Tina are going .") == "tina"
    assert x_and_x("tina and tom are going .") is None
    assert x_and_x("fredand fred") is None           # word boundaries
    assert x_and_x("fred and freddie") is None
    assert x_and_x("o'neil and o'neil") == "o'neil"


def test_rates_are_percent_of_summaries():
    predictions = ["laura and laura are here .", "tom will come .", "ann will call ann .", "ok ."]
    assert doubled_rate(predictions) == 50.0
    assert x_and_x_rate(predictions) == 25.0
    assert repetition_scores(predictions) == {"doubled": 50.0, "x_and_x": 25.0}
    assert doubled_rate([]) == 0.0 and x_and_x_rate([]) == 0.0


def _summarizer(language):
    articles = ["Ann met Bob at the park. Bob ran home.", "The owl saw a fox near the river."]
    config = Config(data=DataConfig(agents=1, language=language),
                    model={"type": "dca", "embedding_size": 8, "hidden_size": 8})
    docs = prepare_all([Example(str(i), a, a.split(".")[0] + ".", f"x:{i}") for i, a in enumerate(articles)],
                       config.data)
    vocab = Vocabulary.build([t for d in docs for a in d.agents for t in a])
    model = build_model(config.model, len(vocab))
    return Summarizer.from_model(model, vocab, config), docs


def test_evaluate_reports_the_rates_of_its_own_predictions_for_english():
    summarizer, docs = _summarizer("en")
    predictions, scores = evaluate(summarizer, docs, SearchConfig(beam_size=2, max_length=8, block_trigrams=False))
    assert scores["doubled"] == round(doubled_rate(predictions), 2)
    assert scores["x_and_x"] == round(x_and_x_rate(predictions), 2)
