import builtins
import gzip
import io
import json
import sys

import pytest

from agentsum.data.corpus import Example, read_jsonl, read_stories, read_story, read_text_file
from agentsum.data.records import DataError, ReadStats
from agentsum.data.sources import load_examples


def write_jsonl(path, rows):
    """Rows are dicts (dumped) or raw bytes/str (written as-is), one per line."""
    with open(path, "wb") as f:
        for row in rows:
            if isinstance(row, dict):
                row = json.dumps(row)
            if isinstance(row, str):
                row = row.encode("utf-8")
            f.write(row + b"\n")
    return path


GOOD = {"id": "a1", "article": "Some article.", "summary": "A summary."}


def test_read_jsonl_reads_examples_and_skips_blank_lines(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [GOOD, "", "   ", {"article": "Two.", "summary": "S2"}])
    examples = list(read_jsonl(path))
    assert examples == [
        Example(id="a1", article="Some article.", summary="A summary.", origin=f"{path}:1"),
        Example(id="d.jsonl:4", article="Two.", summary="S2", origin=f"{path}:4"),
    ]


def test_read_jsonl_custom_fields(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [{"key": 7, "text": "T.", "abstract": "A."}])
    [example] = read_jsonl(path, article_field="text", summary_field="abstract", id_field="key")
    assert (example.id, example.article, example.summary) == ("7", "T.", "A.")


@pytest.mark.parametrize(
    "bad_line, message",
    [
        ({"id": "x", "article": "A."}, "d.jsonl:2: field 'summary' missing (fields present: id, article)"),
        ({"id": "x", "summary": "S."}, "d.jsonl:2: field 'article' missing"),
        ({"article": 3, "summary": "S."}, "d.jsonl:2: field 'article' is int, expected a string"),
        ({"article": "A.", "summary": None}, "d.jsonl:2: field 'summary' is NoneType"),
        ({"article": "  ", "summary": "S."}, "d.jsonl:2: field 'article' is empty"),
        ({"id": ["x"], "article": "A.", "summary": "S."}, "d.jsonl:2: field 'id' is list"),
        ("{not json", "d.jsonl:2: invalid JSON"),
        ("[1, 2]", "d.jsonl:2: expected a JSON object, got list"),
        (b'{"article": "caf\xe9", "summary": "s"}', "d.jsonl:2: invalid UTF-8"),
    ],
)
def test_read_jsonl_errors_name_file_line_and_field(tmp_path, bad_line, message):
    path = write_jsonl(tmp_path / "d.jsonl", [GOOD, bad_line, GOOD])
    with pytest.raises(DataError) as err:
        list(read_jsonl(path))
    assert message in str(err.value)
    assert str(err.value).startswith(str(path))


def test_read_jsonl_skip_bad_counts_skipped_lines(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [GOOD, "{oops", {"article": "A."}, b"\xff\xfe", GOOD])
    stats = ReadStats()
    examples = list(read_jsonl(path, skip_bad=True, stats=stats))
    assert [e.origin for e in examples] == [f"{path}:1", f"{path}:5"]
    assert (stats.read, stats.skipped) == (2, 3)
    assert f"{path}:3: field 'summary' missing" in stats.errors[1]


def test_read_jsonl_without_required_summary(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [{"article": "Only text."}])
    [example] = read_jsonl(path, require_summary=False)
    assert example.summary == ""


def test_read_jsonl_gzip(tmp_path):
    path = tmp_path / "d.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(json.dumps(GOOD) + "\n")
    assert [e.id for e in load_examples(str(path))] == ["a1"]


STORY = """(CNN) -- First paragraph.

Second paragraph.

@highlight

First highlight

@highlight

Second highlight .
"""


def test_read_story_splits_article_and_highlights(tmp_path):
    path = tmp_path / "0abc.story"
    path.write_text(STORY, encoding="utf-8")
    example = read_story(path)
    assert example.id == "0abc"
    assert example.article == "(CNN) -- First paragraph.\n\nSecond paragraph."
    assert example.summary == "First highlight\nSecond highlight ."
    assert example.origin == str(path)


def test_read_story_without_highlights_is_an_error(tmp_path):
    path = tmp_path / "x.story"
    path.write_text("Just an article.\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"x\.story: no @highlight summary"):
        read_story(path)
    assert read_story(path, require_summary=False).summary == ""


def test_read_stories_directory_sorted_and_recursive(tmp_path):
    (tmp_path / "cnn").mkdir()
    for name in ["b", "a", "cnn/c"]:
        (tmp_path / f"{name}.story").write_text(f"Article {name}.\n@highlight\nHi {name}\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("ignored", encoding="utf-8")
    assert [e.id for e in read_stories(tmp_path)] == ["a", "b", "c"]
    assert [e.id for e in load_examples(str(tmp_path))] == ["a", "b", "c"]


def test_read_stories_skip_bad(tmp_path):
    (tmp_path / "a.story").write_text("Article.\n@highlight\nHi\n", encoding="utf-8")
    (tmp_path / "b.story").write_bytes(b"Bad \xff byte.\n@highlight\nHi\n")
    with pytest.raises(DataError, match=r"b\.story:1: invalid UTF-8"):
        list(read_stories(tmp_path))
    stats = ReadStats()
    assert [e.id for e in read_stories(tmp_path, skip_bad=True, stats=stats)] == ["a"]
    assert stats.skipped == 1


def test_load_examples_dispatches_single_story(tmp_path):
    path = tmp_path / "s.story"
    path.write_text(STORY, encoding="utf-8")
    [example] = load_examples(str(path))
    assert example.summary.startswith("First highlight")


def test_load_examples_slicing(tmp_path):
    rows = [{"id": str(i), "article": f"A{i}.", "summary": "S."} for i in range(10)]
    path = str(write_jsonl(tmp_path / "d.jsonl", rows))
    assert [e.id for e in load_examples(path, start=2, end=5)] == ["2", "3", "4"]
    assert [e.id for e in load_examples(path, end=2)] == ["0", "1"]
    assert [e.id for e in load_examples(path, start=8)] == ["8", "9"]
    assert [e.id for e in load_examples(path, start=-2)] == ["8", "9"]


def test_load_examples_empty_corpus_is_an_error(tmp_path):
    path = write_jsonl(tmp_path / "empty.jsonl", ["", ""])
    with pytest.raises(DataError, match="no examples in .*empty.jsonl"):
        load_examples(str(path))
    rows = [{"article": "A.", "summary": "S."}]
    path = write_jsonl(tmp_path / "one.jsonl", rows)
    with pytest.raises(DataError, match=r"no examples in .*one\.jsonl slice \[5:None\]"):
        load_examples(str(path), start=5)


def test_load_examples_missing_file(tmp_path):
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(DataError, match="nope.jsonl: no such file"):
        load_examples(str(missing))
    with pytest.raises(DataError, match="nope.jsonl: no such file"):
        read_jsonl(missing)  # eager, before iteration


def test_hf_spec_without_datasets_gives_data_error(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "datasets":
            raise ImportError("No module named 'datasets'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "datasets", raising=False)
    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(DataError) as err:
        load_examples("hf:cnn_dailymail:3.0.0:validation")
    message = str(err.value)
    assert "hf:cnn_dailymail:3.0.0:validation" in message
    assert "pip install agentsum[hf]" in message
    assert "online" in message


def test_hf_spec_maps_fields_with_fake_datasets(monkeypatch):
    calls = []

    class FakeDatasets:
        @staticmethod
        def load_dataset(name, config, split):
            calls.append((name, config, split))
            return [{"id": "h1", "article": "Art.", "highlights": "Hi."}, {"id": "h2", "article": "", "highlights": "x"}]

    monkeypatch.setitem(sys.modules, "datasets", FakeDatasets)
    stats = ReadStats()
    [example] = load_examples("hf:cnn_dailymail", skip_bad=True, stats=stats)
    assert calls == [("cnn_dailymail", "3.0.0", "train")]
    assert (example.id, example.article, example.summary) == ("h1", "Art.", "Hi.")
    assert example.origin == "hf:cnn_dailymail:3.0.0:train:0"
    assert stats.skipped == 1


def test_read_text_file_utf8_and_stdin(tmp_path, monkeypatch):
    path = tmp_path / "in.txt"
    path.write_bytes("\ufeffCafé news.".encode("utf-8"))
    assert read_text_file(path) == "Café news."
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok\nbad \xff\n")
    with pytest.raises(DataError, match=r"bad\.txt:2: invalid UTF-8"):
        read_text_file(bad)
    with pytest.raises(DataError, match="missing.txt: no such file"):
        read_text_file(tmp_path / "missing.txt")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("From stdin.".encode())))
    assert read_text_file("-") == "From stdin."


# ---- SAMSum's original layout: a JSON array with dialogue / summary ---------------------------

SAMSUM_JSON = """[
  {
    "id": "13818513",
    "summary": "Amanda baked cookies and will bring Jerry some tomorrow.",
    "dialogue": "Amanda: I baked  cookies. Do you want some?\\r\\nJerry: Sure!\\r\\nAmanda: I'll bring you tomorrow :-)"
  },
  {"id": "13728867", "summary": "Olivia and Olivier are voting for liberals.",
   "dialogue": "Olivia: Who are you voting for?\\r\\nOliver: Liberals as always."}
]
"""


def test_samsum_json_array_is_read_with_the_dialogue_field(tmp_path):
    path = tmp_path / "val.json"
    path.write_text(SAMSUM_JSON, encoding="utf-8")
    examples = load_examples(str(path))
    assert [e.id for e in examples] == ["13818513", "13728867"]
    assert examples[0].article.startswith("Amanda: I baked")
    assert examples[1].summary == "Olivia and Olivier are voting for liberals."
    assert examples[1].origin == f"{path}:7"  # the line on which the second object starts


def test_json_array_errors_name_the_line_of_the_bad_object(tmp_path):
    path = tmp_path / "train.json"
    path.write_text('[\n {"dialogue": "A: hi", "summary": "x"},\n {"dialogue": "B: yo"}\n]', encoding="utf-8")
    with pytest.raises(DataError, match=r"train\.json:3: field 'summary' missing"):
        load_examples(str(path))
    stats = ReadStats()
    assert len(load_examples(str(path), skip_bad=True, stats=stats)) == 1 and stats.skipped == 1
    path.write_text('{"dialogue": "A: hi"}', encoding="utf-8")
    with pytest.raises(DataError, match=r"train\.json:1: expected a JSON array"):
        load_examples(str(path))
    path.write_text('[\n {"dialogue": "A: hi", "summary": "x"}\n {"dialogue": "B", "summary": "y"}]', encoding="utf-8")
    with pytest.raises(DataError, match=r"train\.json:3: invalid JSON \(expected ','"):
        load_examples(str(path))


def test_field_aliases_apply_only_to_default_names(tmp_path):
    path = tmp_path / "dialogsum.jsonl"
    path.write_text('{"fname": "train_0", "dialogue": "#Person1#: Hi.", "summary": "They greet."}\n', encoding="utf-8")
    (example,) = load_examples(str(path))
    assert (example.id, example.article) == ("train_0", "#Person1#: Hi.")
    with pytest.raises(DataError, match="field 'text' missing"):
        load_examples(str(path), article_field="text")
