"""benchmarks/studies/claim_figures.py: the claim figures of runs read from their predictions, the
references as a row, rows of a corpus slice, and the period detector against ECTSum's file names."""

import json
import sys

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks" / "studies"))
import claim_figures  # noqa: E402

CALLS = [
    {"id": "ectsum/AAA_q2_2021", "article": "Second quarter sales decreased 28% to $403.6 million.\nNet debt was "
                                           "$112.1 million.", "summary": "q2 sales fell 28% to $403.6 million."},
    {"id": "ectsum/BBB_q4_2020", "article": "Fourth quarter revenue rose 5% to $20 million.\nThank you.",
     "summary": "q4 revenue rose 5% to $20 million."},
    {"id": "ectsum/CCC_q1_2021", "article": "Revenue rose.\nThank you.", "summary": "revenue rose."},
]


def run_dir(tmp_path, name, predictions):
    out = tmp_path / name
    out.mkdir()
    out.joinpath("predictions.jsonl").write_text("".join(
        json.dumps({"id": c["id"], "prediction": p}) + "\n" for c, p in zip(CALLS, predictions)), encoding="utf-8")
    out.joinpath("scores.json").write_text(json.dumps({"rouge1": 40.0, "numbers_supported": 100.0}))
    return out


def test_the_table_scores_each_run_and_the_references(tmp_path, capsys):
    data = tmp_path / "valid.jsonl"
    data.write_text("".join(json.dumps(c) + "\n" for c in CALLS), encoding="utf-8")
    good = run_dir(tmp_path, "good", ["q2 sales fell 28% to $403.6 million.", "q4 revenue $20 million.", "revenue."])
    bad = run_dir(tmp_path, "bad", ["q3 sales $112.1 million.", "q1 revenue $ per share.", "revenue."])
    out = tmp_path / "claims.md"
    assert claim_figures.main(["--data", str(data), "--run", f"good={good}", "--run", f"bad={bad}",
                               "--out", str(out)]) == 0
    rows = json.loads(out.with_suffix(".json").read_text())
    assert rows["good"]["numbers_in_metric_context"] == 100.0 and rows["good"]["period_agreement"] == 100.0
    assert rows["bad"]["numbers_in_metric_context"] == 0.0 and rows["bad"]["period_agreement"] == 0.0
    assert rows["bad"]["malformed_figures"] == pytest.approx(100 / 3, abs=0.01)
    assert rows["references (ceiling)"]["numbers_in_metric_context"] == 100.0
    assert rows["good"]["period_undetected"] == 1  # the third call names no quarter
    assert "the detected quarter agrees for 2, none detected for 1" in out.read_text()
    # a slice: the second call only
    assert claim_figures.main(["--data", str(data), "--start", "1", "--end", "2", "--run", f"bad={bad}"]) == 0
    assert "rows 1-1 of valid.jsonl (1 documents)" in capsys.readouterr().out


def test_a_run_missing_an_id_is_refused_naming_the_file(tmp_path):
    data = tmp_path / "valid.jsonl"
    data.write_text("".join(json.dumps(c) + "\n" for c in CALLS), encoding="utf-8")
    short = run_dir(tmp_path, "short", ["q2 sales."])
    with pytest.raises(SystemExit):
        claim_figures.main(["--data", str(data), "--run", f"short={short}"])
