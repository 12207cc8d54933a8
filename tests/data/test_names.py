"""agentsum.data.names: participants renamed consistently in a dialogue and its summary."""

import json
import random
import sys

import pytest
from conftest import REPO

from agentsum.data.names import ambiguous_names, name_pool, participants, rename, substitute

sys.path.insert(0, str(REPO / "benchmarks" / "studies"))
import name_copies  # noqa: E402

DIALOGUE = "Amanda: I baked cookies. Do you want some?\njerry: Sure! Amanda's are the best\nAmanda: I'll bring you tomorrow"
SUMMARY = "Amanda baked cookies and will bring Jerry some tomorrow."


def test_participants_in_order_of_first_turn_one_per_person_whatever_the_case():
    assert participants(DIALOGUE) == ["Amanda", "jerry"]
    assert participants("Tom: hi\ntom: yo\nAnn: x") == ["Tom", "Ann"]


def test_participants_refuses_names_of_more_than_one_word_and_texts_that_are_no_dialogue():
    assert participants("Mary Ann: hi\nTom: yo") is None
    assert participants("#Person1#: hi\n#Person2#: yo") is None
    assert participants("Tom: only one turn") is None
    assert participants("no turns at all") is None


def test_rename_matches_whole_words_in_any_case_and_writes_the_case_found():
    out = rename("Tom met TOM and tom's dog; Tomas and atom stay. Tom's", {"Tom": "Ann"})
    assert out == "Ann met ANN and ann's dog; Tomas and atom stay. Ann's"


def test_rename_swaps_two_names_at_once_without_chaining():
    assert rename("Ann called Bob", {"Ann": "Bob", "Bob": "Ann"}) == "Bob called Ann"


def test_substitute_renames_every_participant_consistently_in_dialogue_and_summary():
    pool = ["Zoe", "Quinn", "Amanda", "Jerry", "Cookies"]
    out = substitute(DIALOGUE, SUMMARY, pool, ambiguous=set(), rng=random.Random(0))
    assert out is not None
    dialogue, summary = out
    new = participants(dialogue)
    assert len(new) == 2 and set(n.capitalize() for n in new) <= {"Zoe", "Quinn"}
    first, second = new[0], new[1].capitalize()
    assert dialogue.count(first) == 3  # two turns and the possessive
    assert new[1].islower()  # "jerry:" stays lower case
    assert summary == f"{first} baked cookies and will bring {second} some tomorrow."
    assert "Amanda" not in dialogue + summary and "jerry" not in dialogue.lower() + summary.lower()


def test_substitute_never_draws_a_word_of_the_texts_and_needs_enough_names():
    # "Cookies" is a word of the dialogue, the old names are taken: only one name is left for two people
    assert substitute(DIALOGUE, SUMMARY, ["Amanda", "Jerry", "Cookies", "Zoe"], set(), random.Random(0)) is None


def test_a_participant_with_an_ambiguous_name_leaves_the_dialogue_as_it_is():
    dialogue, summary = "Will: I will call\nAnn: ok", "Will will call Ann."
    ambiguous = ambiguous_names(["Ann will call later.", "They will go."])
    assert "will" in ambiguous and "ann" not in ambiguous
    assert substitute(dialogue, summary, ["Zoe", "Quinn"], ambiguous, random.Random(0)) is None


def test_name_pool_holds_distinct_unambiguous_participants():
    texts = ["Tom: a\nWill: b", "tom: c\nAnn: d", "Mary Ann: e\nBob: f"]
    assert name_pool(texts, {"will"}) == ["Ann", "Tom"]


def test_name_copies_writes_the_originals_then_renamed_copies(tmp_path, capsys):
    rows = [{"id": "a", "article": DIALOGUE, "summary": SUMMARY},
            {"id": "b", "article": "Zoe: hi\nQuinn: hello there", "summary": "Zoe and Quinn greet."},
            {"id": "c", "article": "Mary Ann: hi\nBob: yo", "summary": "Mary Ann greets Bob."}]
    src, out = tmp_path / "train.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert name_copies.main([str(src), str(out), "--seed", "3"]) == 0
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert written[:3] == rows
    assert [r["id"] for r in written[3:]] == ["a/names-1", "b/names-1"]  # "Mary Ann" is left out
    for old, new in zip(rows, written[3:]):
        assert participants(new["article"]) != participants(old["article"])
        assert new["summary"] != old["summary"]
    assert "2 dialogues renamed x1, 1 left as they were" in capsys.readouterr().out


def test_name_copies_names_the_line_of_a_record_without_a_summary(tmp_path, capsys):
    src = tmp_path / "train.jsonl"
    src.write_text('{"article": "A: x\\nB: y", "summary": "s"}\n\n{"article": "A: x"}\n', encoding="utf-8")
    with pytest.raises(SystemExit) as e:
        name_copies.main([str(src), str(tmp_path / "o.jsonl")])
    assert e.value.code == 2
    assert f"{src}:3: field 'summary'" in capsys.readouterr().err  # the file's line, blank lines counted
