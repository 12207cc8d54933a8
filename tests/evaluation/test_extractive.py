"""Extractive baselines (evaluation/extractive.py): Lead-K, and sumy's LexRank and TextRank fed the
project's own sentences and words, offline, scored like a model (agentsum extract / lead3)."""

import json
import socket

import pytest

from agentsum.cli import main
from agentsum.data.language import TextProcessor
from agentsum.evaluation.extractive import Extractor, ProjectTokenizer, extract_summaries

# sentence 2 shares a content word with every other sentence but the last; the others share none
# with each other: it is the centre of the similarity graph
CENTRAL = 2
ARTICLE = ("Harbor traffic resumed on Monday morning. "
           "The old bridge cost the city many millions. "
           "The harbor bridge reopened after storm repairs finished. "
           "A storm closed every school in the region. "
           "Repairs finished three weeks late. "
           "Cats sleep most of the afternoon.")


def sentences(text=ARTICLE):
    return TextProcessor().article_sentences(text)


@pytest.mark.parametrize("method", ["lexrank", "textrank"])
def test_the_central_sentence_is_picked(method):
    extractor = Extractor(method, sentences=1)
    assert extractor.select(sentences()) == [CENTRAL]
    assert extractor(ARTICLE) == "the harbor bridge reopened after storm repairs finished ."


@pytest.mark.parametrize("method", ["lead", "lexrank", "textrank"])
def test_k_sentences_in_document_order(method):
    picked = Extractor(method, sentences=3).select(sentences())
    assert len(picked) == 3 and picked == sorted(picked)
    summary = Extractor(method, sentences=3)(ARTICLE).split("\n")
    assert summary == [" ".join(sentences()[i]) for i in picked]
    if method != "lead":
        assert CENTRAL in picked


def test_lead_is_the_first_sentences():
    assert Extractor("lead", sentences=2).select(sentences()) == [0, 1]
    assert Extractor("lead", sentences=2)(ARTICLE) == TextProcessor().lead(ARTICLE, 2)


@pytest.mark.parametrize("method", ["lexrank", "textrank"])
def test_identical_inputs_give_identical_outputs(method):
    articles = [ARTICLE, "One dog ran. The dog barked at the cat. The cat ran away from the dog."] * 2
    first = extract_summaries(articles, method, sentences=2)
    assert first == extract_summaries(articles, method, sentences=2)
    assert first[0] == first[2] and first[1] == first[3]


@pytest.mark.parametrize("method", ["lexrank", "textrank"])
def test_a_repeated_sentence_is_picked_once_and_short_articles_return_every_sentence(method):
    article = "The storm hit the harbor. The storm hit the harbor. The harbor closed. ... !"
    picked = Extractor(method, sentences=5).select(sentences(article))
    assert picked == [0, 2]  # the copy and the sentence without words are not offered
    assert Extractor(method, sentences=3).select([]) == []


def test_the_tokenizer_adapter_gives_sumy_the_projects_sentences_and_words():
    tokenizer = ProjectTokenizer(TextProcessor())
    assert tokenizer.to_sentences("Mr. Smith paid $1,000 on Jan. 5. He left, didn't he?") == \
        ("mr. smith paid $ 1,000 on jan. 5 .", "he left , did n't he ?")
    assert tokenizer.to_words("he left , did n't he ?") == ("he", "left", "did", "n't", "he")


def test_runs_offline_without_nltk_data(monkeypatch, tmp_path):
    """sumy's own tokenizer needs NLTK's punkt; this one needs no NLTK data and no network."""
    import nltk

    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])  # an empty NLTK data directory

    def refuse(*args, **kwargs):
        raise AssertionError("tried to download or connect")

    monkeypatch.setattr(nltk, "download", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    with pytest.raises(LookupError):
        nltk.data.find("tokenizers/punkt")
    for method in ("lexrank", "textrank"):
        assert Extractor(method, sentences=1).select(sentences()) == [CENTRAL]


def test_chinese_articles_are_read_with_the_projects_chinese_words():
    zh = TextProcessor(language="zh")
    article = "港口交通周一恢复。大桥花费了数百万元。港口大桥在风暴修复后重新开放。风暴关闭了学校。修复工作晚了三周。猫整个下午都在睡觉。"
    picked = Extractor("lexrank", zh, sentences=1).select(zh.article_sentences(article))
    assert picked == [2]
    assert Extractor("textrank", zh, sentences=1)(article) == zh.join_sentences([zh.article_sentences(article)[2]])


@pytest.mark.parametrize("kwargs, message", [
    (dict(method="luhn"), "unknown extractive method 'luhn'"),
    (dict(method="lexrank", sentences=0), "sentences must be at least 1"),
    (dict(method="textrank", chars=20), "chars applies to the lead method only"),
])
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Extractor(**kwargs)


ROWS = [{"id": "a", "article": ARTICLE, "summary": "The harbor bridge reopened after storm repairs."},
        {"id": "b", "article": "Sales rose 12% to $3.5 billion. Costs fell. Sales of cars rose 12% too.",
         "summary": "Sales rose 12% to $3.5 billion."}]


def test_extract_writes_what_lead3_writes_and_is_scored_alike(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    assert main(["lead3", "--data", str(data), "--out", str(tmp_path / "lead3")]) == 0
    assert main(["extract", "--method", "lead", "--data", str(data), "--out", str(tmp_path / "lead")]) == 0
    for name in ("predictions.txt", "predictions.jsonl", "scores.json"):
        assert (tmp_path / "lead3" / name).read_text() == (tmp_path / "lead" / name).read_text()
    capsys.readouterr()
    assert main(["extract", "--method", "lexrank", "--sentences", "1", "--data", str(data),
                 "--out", str(tmp_path / "lexrank")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("LexRank-1: ROUGE-1") and "numbers: supported by the source" in out
    scores = json.loads((tmp_path / "lexrank" / "scores.json").read_text())
    rows = [json.loads(line) for line in (tmp_path / "lexrank" / "predictions.jsonl").read_text().splitlines()]
    assert rows[0]["prediction"] == "the harbor bridge reopened after storm repairs finished ."
    assert scores["method"] == "lexrank" and scores["sentences"] == 1 and scores["n"] == 2
    for key in ("rouge1", "rouge2", "rougeLsum", "doubled", "numbers_supported", "numbers_recall"):
        assert key in scores
    assert rows[1]["numbers_supported"] == 100.0  # an extract's numbers are the article's


def test_extract_refuses_chars_with_a_ranking_method(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps(ROWS[0]) + "\n", encoding="utf-8")
    assert main(["extract", "--method", "textrank", "--chars", "20", "--data", str(data)]) == 2
    assert "--chars" in capsys.readouterr().err
    assert main(["extract", "--method", "lexrank", "--sentences", "0", "--data", str(data)]) == 2
    assert "--sentences must be at least 1" in capsys.readouterr().err
