import argparse
import csv
import json
import random
from collections import Counter

import pytest
from conftest import synthetic_rows, write_jsonl

from agentsum.evaluation.humaneval import (
    CRITERION_NAMES,
    HumanEvalError,
    add_parser,
    display_summary,
    load_key,
    make_sheets,
    read_sheet,
    run,
    score_sheets,
)

N = 20


@pytest.fixture()
def study(tmp_path):
    """A corpus of 30 documents, predictions of two systems on 25 of them (22 shared), sheets for N."""
    rows = synthetic_rows(30, seed=3)
    data = write_jsonl(tmp_path / "test.jsonl", rows)

    def preds(name, ids, text):
        path = tmp_path / f"{name}.jsonl"
        write_jsonl(path, [{"id": r["id"], "prediction": text(r), "reference": r["summary"]}
                           for r in rows if r["id"] in ids])
        return path

    ids = [r["id"] for r in rows]
    a = preds("a", set(ids[:22]), lambda r: r["summary"].split("\n")[0])
    b = preds("b", set(ids[:22] + ids[25:28]), lambda r: "the the " + r["summary"].split("\n")[-1])
    out = tmp_path / "sheets"
    key = make_sheets(a, b, data, out, n=N, seed=7, name_a="MA", name_b="SA")
    return {"dir": out, "key": key, "data": data, "a": a, "b": b, "tmp": tmp_path}


def read_rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def write_rows(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def slot(order, system):
    return str(order.index(system) + 1)


def fill_h2h(study, judge, path, shuffle_seed=None):
    """Known pattern: focus -> A always; coherence -> tie; non-redundancy -> judge 1 picks A, judge 2 B;
    overall -> A on the first three documents (by id order of the key's items H001..H003), else B."""
    key = study["key"]["h2h"]
    rows = read_rows(study["dir"] / "h2h.csv")
    for row in rows:
        order = key[row["item"]]["order"]
        row["focus"] = slot(order, "A")
        row["coherence"] = "tie"
        row["non_redundancy"] = slot(order, "A" if judge == 1 else "B")
        row["overall"] = slot(order, "A" if row["item"] in ("H001", "H002", "H003") else "B")
        row["judge"] = f"judge{judge}"
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(rows)
    return write_rows(path, rows)


def fill_likert(study, judge, path):
    """A = 4, B = 3, reference = 5 on every criterion, except coherence where A = B = 3."""
    key = study["key"]["likert"]
    rows = read_rows(study["dir"] / "likert.csv")
    score = {"A": 4, "B": 3, "reference": 5}
    for row in rows:
        for k, system in enumerate(key[row["item"]]["order"], 1):
            for c in CRITERION_NAMES:
                row[f"s{k}_{c}"] = str(3 if c == "coherence" and system != "reference" else score[system])
        row["judge"] = f"judge{judge}"
    return write_rows(path, rows)


def test_make_writes_blinded_balanced_sheets(study):
    out, key = study["dir"], study["key"]
    for name in ("h2h.html", "h2h.csv", "likert.html", "likert.csv", "key.json"):
        assert (out / name).stat().st_size > 0
    assert load_key(out / "key.json") == key
    assert key["n"] == N and len(key["h2h"]) == N and len(key["likert"]) == N
    ids = {v["id"] for v in key["h2h"].values()}
    assert ids == {v["id"] for v in key["likert"].values()} and len(ids) == N
    assert ids <= {f"doc{i}" for i in range(22)}  # only documents present in both prediction files
    # balanced blinding: A first in half of the head-to-head items; each Likert order 3 or 4 times
    assert Counter(v["order"][0] for v in key["h2h"].values()) == {"A": N // 2, "B": N // 2}
    counts = Counter(tuple(v["order"]) for v in key["likert"].values())
    assert len(counts) == 6 and set(counts.values()) <= {3, 4}
    # the sheets reveal nothing: no system names, no ids, no key
    h2h = read_rows(out / "h2h.csv")
    assert list(h2h[0]) == ["item", "summary_1", "summary_2", *CRITERION_NAMES, "judge", "comment"]
    likert = read_rows(out / "likert.csv")
    assert {"document", "summary_3", "s3_overall"} <= set(likert[0])
    for name in ("h2h.csv", "likert.csv", "h2h.html", "likert.html"):
        text = (out / name).read_text(encoding="utf-8")
        assert "MA" not in text and "SA" not in text and "doc1" not in text
    # head-to-head shows no article (as the paper); Likert shows it
    row = next(r for r in likert if r["item"] == "L001")
    article = next(r for r in synthetic_rows(30, seed=3) if r["id"] == key["likert"]["L001"]["id"])["article"]
    assert row["document"] == article
    html = (out / "likert.html").read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "<style>" in html
    assert "http" not in html and "<script" not in html and "src=" not in html  # offline, self-contained
    assert html.count('class="item"') == N and "Focus" in html


def test_score_known_pattern(study, tmp_path):
    sheets = [fill_h2h(study, 1, tmp_path / "h1.csv"), fill_h2h(study, 2, tmp_path / "h2.csv"),
              fill_likert(study, 1, tmp_path / "l1.csv"), fill_likert(study, 2, tmp_path / "l2.csv")]
    r = score_sheets(study["key"], sheets)
    h = r["head_to_head"]
    assert h["judgments"] == 2 * N and h["documents"] == N and h["judges"] == ["judge1", "judge2"]
    assert (h["focus"]["A_wins"], h["focus"]["B_wins"], h["focus"]["ties"]) == (2 * N, 0, 0)
    assert h["focus"]["p_sign"] == pytest.approx(2 * 0.5**N)
    assert (h["coherence"]["A_wins"], h["coherence"]["B_wins"], h["coherence"]["ties"]) == (0, 0, 2 * N)
    assert h["coherence"]["p_sign"] == 1.0
    nr = h["non_redundancy"]  # judges disagree on every document: no document-level preference
    assert (nr["A_wins"], nr["B_wins"], nr["ties"], nr["documents_even"]) == (N, N, 0, N)
    assert nr["p_sign"] == 1.0 and nr["p_sign_judgments"] == 1.0
    ov = h["overall"]
    assert (ov["A_wins"], ov["B_wins"], ov["documents_A"], ov["documents_B"]) == (6, 2 * N - 6, 3, N - 3)
    assert ov["p_sign"] < 0.01
    lk = r["likert"]
    assert lk["judgments"] == 2 * N and lk["systems"] == ["A", "B", "reference"]
    for c in ("non_redundancy", "focus", "overall"):
        assert lk[c]["mean"] == {"A": 4.0, "B": 3.0, "reference": 5.0}
        assert lk[c]["mean_difference"] == 1.0 and lk[c]["p_wilcoxon"] < 0.001
    assert lk["coherence"]["mean"] == {"A": 3.0, "B": 3.0, "reference": 5.0}
    assert lk["coherence"]["p_wilcoxon"] == 1.0

    # the same judgments in one merged file with a judge column, rows shuffled: the same result
    merged = read_rows(fill_h2h(study, 1, tmp_path / "m1.csv", shuffle_seed=1))
    merged += read_rows(fill_h2h(study, 2, tmp_path / "m2.csv", shuffle_seed=2))
    random.Random(0).shuffle(merged)
    r2 = score_sheets(study["key"], [write_rows(tmp_path / "merged.csv", merged), *sheets[2:]])
    assert r2["head_to_head"] == h and r2["likert"] == lk


def test_roundtrip_with_another_blinding(study, tmp_path):
    """Sheets made with another seed blind differently, yet un-blind to the same scores."""
    other_dir = tmp_path / "other"
    key2 = make_sheets(study["a"], study["b"], study["data"], other_dir, n=N, seed=8)
    assert [v["order"] for v in key2["h2h"].values()] != [v["order"] for v in study["key"]["h2h"].values()]
    study2 = {"dir": other_dir, "key": key2}
    fill_h2h(study2, 1, tmp_path / "o1.csv")
    fill_likert(study2, 1, tmp_path / "o2.csv")
    r = score_sheets(key2, [tmp_path / "o1.csv", tmp_path / "o2.csv"])
    assert r["head_to_head"]["focus"]["A_wins"] == N and r["likert"]["focus"]["mean"]["A"] == 4.0
    # a sheet scored with the wrong key: its texts do not match
    with pytest.raises(HumanEvalError, match=r"o1\.csv:\d+:summary_1: the text differs"):
        score_sheets(study["key"], [tmp_path / "o1.csv"])


def test_invalid_cells_are_named(study, tmp_path):
    rows = read_rows(fill_h2h(study, 1, tmp_path / "h.csv"))
    rows[2]["focus"] = "maybe"
    write_rows(tmp_path / "bad.csv", rows)
    with pytest.raises(HumanEvalError, match=r"bad\.csv:4:focus: expected 1, 2 or tie, got 'maybe'"):
        score_sheets(study["key"], [tmp_path / "bad.csv"])
    rows[2]["focus"] = ""
    write_rows(tmp_path / "bad.csv", rows)
    with pytest.raises(HumanEvalError, match=r"bad\.csv:4:focus: missing value"):
        score_sheets(study["key"], [tmp_path / "bad.csv"])
    kind, judgments, skipped = read_sheet(tmp_path / "bad.csv", study["key"], skip_incomplete=True)
    assert kind == "h2h" and len(judgments) == N - 1 and skipped == 1

    lrows = read_rows(fill_likert(study, 1, tmp_path / "l.csv"))
    lrows[0]["s2_overall"] = "6"
    write_rows(tmp_path / "lbad.csv", lrows)
    with pytest.raises(HumanEvalError, match=r"lbad\.csv:2:s2_overall: expected an integer from 1 to 5, got '6'"):
        score_sheets(study["key"], [tmp_path / "lbad.csv"])
    lrows[0]["s2_overall"] = "4.5"
    write_rows(tmp_path / "lbad.csv", lrows)
    with pytest.raises(HumanEvalError, match=r"lbad\.csv:2:s2_overall"):
        score_sheets(study["key"], [tmp_path / "lbad.csv"])

    rows = read_rows(tmp_path / "h.csv")
    rows[0]["item"] = "H999"
    write_rows(tmp_path / "unknown.csv", rows)
    with pytest.raises(HumanEvalError, match=r"unknown\.csv:2:item: unknown item 'H999'"):
        score_sheets(study["key"], [tmp_path / "unknown.csv"])
    with pytest.raises(HumanEvalError, match="rated twice"):  # the same file given twice
        score_sheets(study["key"], [tmp_path / "h.csv", tmp_path / "h.csv"])


def test_display_is_uniform():
    assert display_summary("the cat 's owner said it was n't ( really ) fine .\nhe left !") == \
        "The cat's owner said it wasn't (really) fine. He left!"
    assert display_summary('she said " no " .') == 'She said "no".'
    assert display_summary("the cat .\nit ran .", raw=True) == "the cat . it ran ."
    assert display_summary("猫 在 公园 。") == "猫在公园。"


def test_command_line(study, tmp_path, capsys):
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    out = tmp_path / "cli"
    args = parser.parse_args(["humaneval", "make", "--a", str(study["a"]), "--b", str(study["b"]),
                              "--data", study["data"], "--n", "5", "--out", str(out)])
    assert run(args) == 0
    assert "key (do not give it to the judges)" in capsys.readouterr().out
    h = fill_h2h({"dir": out, "key": json.loads((out / "key.json").read_text())}, 1, tmp_path / "f.csv")
    args = parser.parse_args(["humaneval", "score", "--key", str(out / "key.json"), "--sheets", str(h)])
    assert run(args) == 0
    printed = capsys.readouterr().out
    assert "focus" in printed and "non-redundancy" in printed and "p sign" in printed
    scores = json.loads((out / "humaneval_scores.json").read_text())
    assert scores["head_to_head"]["focus"]["A_wins"] == 5 and scores["likert"] is None
    args = parser.parse_args(["humaneval", "make", "--a", str(tmp_path / "nope.jsonl"), "--b", str(study["b"]),
                              "--data", study["data"], "--out", str(out)])
    assert run(args) == 2
    assert "nope.jsonl: not found" in capsys.readouterr().err


def test_mechanical_turk_results(study, tmp_path):
    """Batch results of a HIT built from h2h.csv: Input./Answer. columns, WorkerId as the judge."""
    key = study["key"]["h2h"]
    rows = []
    for worker in ("W1", "W2"):
        for row in read_rows(study["dir"] / "h2h.csv"):
            order = key[row["item"]]["order"]
            out = {"HITId": "x", "WorkerId": worker, "Input.item": row["item"], "Input.summary_1": row["summary_1"],
                   "Input.summary_2": row["summary_2"]}
            out.update({f"Answer.{c}": slot(order, "B") for c in CRITERION_NAMES})
            rows.append(out)
    r = score_sheets(study["key"], [write_rows(tmp_path / "Batch_results.csv", rows)])
    assert r["head_to_head"]["judges"] == ["W1", "W2"]
    assert r["head_to_head"]["overall"]["B_wins"] == 2 * N and r["head_to_head"]["overall"]["p_sign"] < 1e-5
