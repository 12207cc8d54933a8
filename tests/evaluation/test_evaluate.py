"""Decoding a corpus and scoring it (agentsum.evaluation.evaluate), through a Summarizer."""

import json

import pytest
import torch

from agentsum.config import Config
from agentsum.data.corpus import Example
from agentsum.data.dataset import DataConfig, prepare_all, to_batch
from agentsum.data.vocab import Vocabulary
from agentsum.decoding.search import SearchConfig
from agentsum.evaluation.evaluate import evaluate, write_results
from agentsum.evaluation.rouge import rouge_for
from agentsum.models import build_model
from agentsum.summarizer import Summarizer

ARTICLES = ["The cat sat on the mat. The dog ran.", "A fox saw an owl near the old river bank at night.",
            "Owls fly.", "The dog and the cat met a fox. The owl slept. The river ran by the park."]
SUMMARIES = ["The cat sat.", "A fox saw an owl.", "Owls fly.", "The dog met a fox."]


@pytest.fixture(scope="module")
def setup():
    config = Config(data=DataConfig(agents=2), model={"type": "dca", "embedding_size": 8, "hidden_size": 8})
    docs = prepare_all([Example(str(i), a, s, f"x:{i}") for i, (a, s) in enumerate(zip(ARTICLES, SUMMARIES))],
                       config.data)
    vocab = Vocabulary.build([t for d in docs for a in d.agents for t in a][:20])  # small: some words are OOV
    torch.manual_seed(0)
    model = build_model(config.model, len(vocab))
    return Summarizer.from_model(model, vocab, config), docs


def test_predictions_follow_the_documents_order_and_are_scored_with_rouge(setup):
    summarizer, docs = setup
    search = SearchConfig(beam_size=2, max_length=6)
    predictions, scores = evaluate(summarizer, docs, search, batch_size=3)
    one_by_one = []
    for doc in docs:  # each document alone: batching and length sorting must not change its summary
        _, words = summarizer.decode_batch(to_batch([doc], summarizer.vocab, with_targets=False), search)
        one_by_one.append(summarizer.language.summary_text(words[0]))
    assert predictions == one_by_one
    expected = rouge_for(summarizer.language, predictions, [d.reference for d in docs])
    assert {k: scores[k] for k in expected} == pytest.approx(expected)
    assert scores["n"] == len(docs) and scores["beam_size"] == 2 and scores["block_trigrams"] is True
    assert scores["documents_per_s"] > 0


def test_decoding_leaves_a_training_model_in_training_mode(setup):
    summarizer, docs = setup
    summarizer.model.train()
    evaluate(summarizer, docs[:1], SearchConfig(beam_size=1, max_length=3))
    assert summarizer.model.training
    summarizer.model.eval()
    evaluate(summarizer, docs[:1], SearchConfig(beam_size=1, max_length=3))
    assert not summarizer.model.training


def test_progress_is_called_per_batch_with_its_size(setup):
    summarizer, docs = setup
    calls = []
    summarizer.summarize_documents(docs, SearchConfig(beam_size=1, max_length=3), batch_size=3, progress=calls.append)
    assert calls == [3, 1]


def test_write_results_writes_predictions_and_scores(tmp_path):
    scores = {"rouge1": 12.5, "n": 2}
    write_results(tmp_path / "out", ["first line\nsecond line", "other"], ["ref one", "ref two"], ["a", "b"], scores)
    out = tmp_path / "out"
    assert (out / "predictions.txt").read_text(encoding="utf-8") == "first line second line\nother\n"
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert rows == [{"id": "a", "prediction": "first line\nsecond line", "reference": "ref one"},
                    {"id": "b", "prediction": "other", "reference": "ref two"}]
    assert json.loads((out / "scores.json").read_text(encoding="utf-8")) == scores


def test_a_corpus_read_in_chunks_scores_as_the_whole_corpus_at_once(setup):
    from agentsum.evaluation.evaluate import NoDocuments, evaluate_examples

    summarizer, docs = setup
    search = SearchConfig(beam_size=2, max_length=6)
    examples = [Example(str(i), a, s, f"x:{i}") for i, (a, s) in enumerate(zip(ARTICLES, SUMMARIES))]
    examples.insert(2, Example("empty", "\u200b", "Nothing.", "x:empty"))  # no tokens: left out, as in training
    whole, scores = evaluate(summarizer, docs, search, batch_size=3)
    consumed = []

    def stream():
        for e in examples:
            consumed.append(e.id)
            yield e

    predictions, references, ids, chunked = evaluate_examples(summarizer, stream(), search, batch_size=3, chunk=2)
    assert predictions == whole
    assert ids == [d.id for d in docs] and references == [d.reference for d in docs]
    assert {k: chunked[k] for k in ("rouge1", "rouge2", "rougeLsum")} == \
        {k: scores[k] for k in ("rouge1", "rouge2", "rougeLsum")}
    assert consumed == [e.id for e in examples]
    with pytest.raises(NoDocuments):
        evaluate_examples(summarizer, iter([]), search)
