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


def test_the_changed_table_pairs_each_systems_differing_summaries_with_the_baselines_labels():
    def row(system, id_, summary, wrong, grammar=False):
        return {"id": id_, "system": system, "summary": summary, "wrong_person": wrong, "unsupported": False,
                "ungrammatical": grammar, "signable": not (wrong or grammar)}

    by_system = {"v1": [row("v1", "a", "Mike will call Mike.", True), row("v1", "b", "Dale is ok.", False)],
                 "lever": [row("lever", "a", "Mike will call Dale.", False),   # changed, fixed
                           row("lever", "b", "Dale is ok.", False),            # the same text: left out
                           row("lever", "c", "Lisa have to go.", False, True)]}  # v1 has no label of c
    table = label_counts.changed_table(by_system, "v1").splitlines()
    assert len(table) == 3 and table[2].startswith("| lever | 1 of 2 |")
    assert table[2].split(" | ")[2:] == ["1 -> 0", "0 -> 0", "0 -> 0", "0 -> 1 |"]


def test_the_plot_draws_one_panel_per_label(tmp_path):
    rows = {"v1": [{"wrong_person": True, "unsupported": False, "ungrammatical": True, "signable": False}],
            "lever": [{"wrong_person": False, "unsupported": False, "ungrammatical": False, "signable": True}]}
    out = tmp_path / "labels.png"
    label_counts.plot_counts(rows, str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000
