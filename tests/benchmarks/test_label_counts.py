"""benchmarks/studies/label_counts.py: how far an automatic flag agrees with the hand labels."""

import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks" / "studies"))
import label_counts  # noqa: E402

CHAT = "Mike: I can't talk right now, I'm in a meeting\nDale: ok, call me later\nMike: I'll call you in 2 hrs"


def test_labelled_summaries_split_into_their_sentences():
    assert label_counts.sentences("Lisa have to go. Is she? Yes! ") == ["Lisa have to go.", "Is she?", "Yes!"]


def test_precision_and_recall_of_a_flag_against_a_label():
    rows = [{"ungrammatical": True}, {"ungrammatical": True}, {"ungrammatical": False}, {"ungrammatical": False}]
    a = label_counts.agreement(rows, label="ungrammatical", flags=[True, False, True, False])
    assert (a["tp"], a["fp"], a["fn"], a["tn"]) == (1, 1, 1, 1) and a["precision"] == a["recall"] == 50.0
    assert label_counts.agreement(rows[2:], label="ungrammatical", flags=[False, False])["precision"] is None


def test_the_attribution_flag_is_read_from_the_dialogue():
    rows = [{"id": "a", "summary": "Mike wants to call Mike in 2 hrs.", "wrong_person": True},
            {"id": "a", "summary": "Mike will call Dale in 2 hrs.", "wrong_person": False}]
    a = label_counts.agreement(rows, {"a": CHAT})
    assert (a["tp"], a["fp"], a["fn"], a["tn"]) == (1, 0, 0, 1)
