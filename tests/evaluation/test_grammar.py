"""The grammar figure (agentsum.evaluation.grammar): link-parser's output read back sentence by sentence,
the counts and figures, `agentsum evaluate --grammar`, and, where link-grammar is installed, the real
parser on sentences from the labelled summaries."""

from __future__ import annotations

import os
import stat
import sys

import pytest

from agentsum.evaluation import grammar
from agentsum.evaluation.grammar import GrammarCounts, GrammarUnavailable, document_grammar, grammar_figures, null_counts

# Stands in for link-parser: echoes each line, then a linkage whose null count is the number of
# times "XX" occurs in it; a line holding "NOPARSE" gets no linkage at all; output lines that equal a
# later sentence are printed first, to check that the reading matches sentences in order.
FAKE = """#!{python}
import sys
print("verbosity set to 1")
for line in sys.stdin:
    line = line.rstrip("\\n")
    print(line)
    if "NOPARSE" in line:
        continue
    n = line.count("XX")
    if n:
        print("No complete linkages found.")
    print(f"Found 3 linkages (3 had no P.P. violations)" + (f" at null count {{n}}" if n else ""))
    print(f"\\tLinkage 1, cost vector = (UNUSED={{n}} DIS= 0.00 LEN=4)")
    print(f"\\tLinkage 2, cost vector = (UNUSED=9 DIS= 1.00 LEN=4)")
print("Bye.")
"""


@pytest.fixture
def fake_parser(tmp_path, monkeypatch):
    path = tmp_path / "link-parser"
    path.write_text(FAKE.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    return path


def test_each_sentence_gets_its_own_best_linkage(fake_parser):
    sentences = ["Lisa XX to clean.", "?", "She is   fine.", "!XX XX twice.", "verbosity set to 1"]
    assert null_counts(sentences) == [1, 0, 0, 2, 0]  # "?" is not parsed; "!" is not a command
    assert null_counts([]) == [] and null_counts([".", "? ."]) == [0, 0]


def test_a_sentence_without_a_linkage_is_an_error_not_a_silent_zero(fake_parser):
    with pytest.raises(RuntimeError, match="no linkage for 1 sentence.*NOPARSE"):
        null_counts(["fine.", "NOPARSE here.", "also fine."])


def test_summaries_are_flagged_by_their_unparsed_sentences(fake_parser):
    read = document_grammar([["Lisa XX to clean.", "She is tired."], ["Ok."], []])
    assert [row["unparsed_sentences"] for _, row in read] == [["Lisa XX to clean."], [], []]
    total = GrammarCounts()
    for counts, _ in read:
        total.add(counts)
    assert total == GrammarCounts(summaries=3, flagged=1, sentences=3, unparsed=1)
    figures = grammar_figures(total)
    assert figures["grammar_unparsed"] == pytest.approx(100 / 3) and figures["grammar_flagged"] == pytest.approx(100 / 3)


def test_without_link_parser_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(grammar.shutil, "which", lambda name: None)
    with pytest.raises(GrammarUnavailable, match="apt-get install link-grammar"):
        null_counts(["Lisa has to clean."])


def test_evaluate_reports_the_grammar_figure(fake_parser, tiny_run, tmp_path, capsys):
    import json

    from agentsum.cli import main

    out = tmp_path / "eval"
    assert main(["evaluate", "--checkpoint", str(tiny_run["checkpoint"]), "--data", str(tiny_run["test"]),
                 "--out", str(out), "--grammar", "--max-length", "12"]) == 0
    scores = json.loads((out / "scores.json").read_text())
    assert scores["grammar_sentences"] > 0 and 0.0 <= scores["grammar_unparsed"] <= 100.0
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert all("unparsed_sentences" in row for row in rows)
    assert "not parsed whole by link grammar" in capsys.readouterr().out


@pytest.mark.skipif(not grammar.shutil.which("link-parser") and os.environ.get("CI", "").lower() not in ("1", "true"),
                    reason="link-grammar is not installed (apt-get install link-grammar link-grammar-dictionaries-en)")
def test_link_grammar_rejects_the_broken_verbs_of_the_labelled_summaries():
    broken = ["Lisa have to clean the house.", "They will met at 5."]
    fine = ["Lisa has to clean the house.", "They will meet at 5.", "Jerry will see Amanda at the cafe."]
    assert [n > 0 for n in null_counts(broken + fine)] == [True, True, False, False, False]
