"""benchmarks/studies/label_batches.py: blind batches of new summaries, and of labelled ones shown again."""

import json
import sys

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks" / "studies"))
import label_batches  # noqa: E402


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _read(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def labelled(tmp_path):
    dialogues = _jsonl(tmp_path / "d.jsonl", [{"id": "a", "article": "A: hi"}, {"id": "b", "article": "B: yo"}])
    labels = _jsonl(tmp_path / "l.jsonl", [
        {"id": "a", "system": "v1", "summary": "A says hi.", "wrong_person": False},
        {"id": "b", "system": "v1", "summary": "A says yo.", "wrong_person": True}])
    new = tmp_path / "new.txt"
    new.write_text("A says hi.\nB says yo.\n", encoding="utf-8")
    return tmp_path, dialogues, labels, str(new)


def test_a_new_text_identical_to_a_labelled_one_inherits_its_labels(labelled):
    tmp, dialogues, labels, new = labelled
    out = tmp / "out"
    assert label_batches.main(["--dialogues", dialogues, "--labelled", labels, "--system", f"new={new}",
                               "--batches", "1", "--out", str(out)]) == 0
    (key,) = _read(out / "key.jsonl")
    assert (key["id"], key["1"], key["summary1"]) == ("b", "new", "B says yo.")
    (inherited,) = _read(out / "inherited.jsonl")
    assert (inherited["id"], inherited["system"], inherited["wrong_person"]) == ("a", "new", False)


def test_relabel_shows_a_labelled_system_again_beside_the_new_one_and_nothing_inherits(labelled):
    tmp, dialogues, labels, new = labelled
    out = tmp / "out"
    assert label_batches.main(["--dialogues", dialogues, "--labelled", labels, "--system", f"new={new}",
                               "--relabel", "v1-again=v1", "--batches", "2", "--seed", "3", "--out", str(out)]) == 0
    keys = {k["id"]: k for k in _read(out / "key.jsonl")}
    # row a: the two systems wrote the same text, shown once, labelled for both
    assert {keys["a"]["1"]} == {"v1-again+new"} and "2" not in keys["a"]
    assert sorted([keys["b"]["1"], keys["b"]["2"]]) == ["new", "v1-again"]
    assert _read(out / "inherited.jsonl") == []
    items = _read(out / "batch-1.jsonl") + _read(out / "batch-2.jsonl")
    assert sorted(i["id"] for i in items) == ["a", "b"] and all("system" not in json.dumps(i) for i in items)


def test_relabel_of_a_system_without_labels_for_every_dialogue_is_refused(labelled):
    tmp, dialogues, labels, new = labelled
    with pytest.raises(SystemExit, match="other has no label for 2 dialogue"):
        label_batches.main(["--dialogues", dialogues, "--labelled", labels, "--system", f"new={new}",
                            "--relabel", "x=other", "--out", str(tmp / "out")])


@pytest.mark.parametrize("spec, message", [("--relabel=v1=v1", "v1 is already labelled"),
                                           ("--relabel=a+b=v1", "a NAME without '\\+'"),
                                           ("--system=nofile", "give NAME=FILE")])
def test_names_that_would_mix_with_labelled_ones_or_split_wrongly_are_refused(labelled, spec, message):
    tmp, dialogues, labels, new = labelled
    with pytest.raises(SystemExit, match=message):
        label_batches.main(["--dialogues", dialogues, "--labelled", labels, "--system", f"new={new}", spec,
                            "--out", str(tmp / "out")])


def test_labels_are_read_from_every_labelled_file(labelled):
    tmp, dialogues, labels, new = labelled
    more = _jsonl(tmp / "more.jsonl", [{"id": "b", "system": "big", "summary": "B says yo.", "wrong_person": False}])
    out = tmp / "out"
    assert label_batches.main(["--dialogues", dialogues, "--labelled", labels, "--labelled", more,
                               "--system", f"new={new}", "--batches", "1", "--out", str(out)]) == 0
    assert _read(out / "key.jsonl") == []  # row a from the first file, row b from the second
    assert sorted(r["id"] for r in _read(out / "inherited.jsonl")) == ["a", "b"]
