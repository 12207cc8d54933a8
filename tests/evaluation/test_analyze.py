import argparse
import csv
import json

import pytest

from agentsum.evaluation.analyze import AnalysisError, add_parser, analyze, assign_bins, bin_edges, run, write_outputs

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_bins_cover_every_value_once():
    values = [0.0, 0.19999, 0.2, 0.5, 0.999, 1.0, 1.0000001, -1e-9]
    edges = bin_edges(values, 5)
    assert edges == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    assert assign_bins(values, edges) == [0, 0, 1, 2, 4, 4, 4, 0]
    q = bin_edges([i / 99 for i in range(100)], 4, binning="quantile")
    counts = [assign_bins([i / 99 for i in range(100)], q).count(k) for k in range(4)]
    assert sum(counts) == 100 and max(counts) - min(counts) <= 1
    with pytest.raises(AnalysisError):
        bin_edges(values, 0)
    with pytest.raises(AnalysisError):
        bin_edges(values, 3, binning="log")


def test_analyze_tiny_run_with_compare(tiny_run, tmp_path):
    ckpt = str(tiny_run["checkpoint"])
    # The same checkpoint as its own comparison: the comparison columns must equal the model's.
    result = analyze(ckpt, tiny_run["test"], compare=ckpt, n_bins=4, batch_size=4)
    n = result["documents"]
    assert n == 6 and result["agents"] == 3
    assert result["binned"] + result["empty_summaries"] == n
    binned = [d for d in result["per_document"] if d["attention"] is not None]
    assert len(binned) == result["binned"]
    for d in binned:
        assert len(d["attention"]) == 3
        assert sum(d["attention"]) == pytest.approx(1.0, abs=1e-4)
        assert set(d["bins"]) == {"agent1", "agent2", "agent3", "max_share"}
    assert [g["key"] for g in result["groups"]] == ["agent1", "agent2", "agent3", "max_share"]
    for g in result["groups"]:
        assert len(g["bins"]) == 4
        assert sum(b["n"] for b in g["bins"]) == result["binned"]  # every document in exactly one bin
        for k, b in enumerate(g["bins"]):
            members = [d for d in binned if d["bins"][g["key"]] == k]
            assert len(members) == b["n"]
            if members:
                assert b["rougeL"] == pytest.approx(sum(d["rougeL"] for d in members) / len(members))
                assert b["compare_rougeL"] == pytest.approx(b["rougeL"])
                assert b["delta"] == pytest.approx(0.0, abs=1e-9)
            else:
                assert b["rougeL"] is None
    assert result["compare"]["rougeL"] == pytest.approx(result["model"]["rougeL"])
    assert sum(result["mean_attention"]) == pytest.approx(1.0, abs=1e-4)

    out = tmp_path / "analysis"
    write_outputs(out, result)
    png = (out / "attention_bins.png").read_bytes()
    assert png[:8] == PNG_MAGIC and len(png) > 10_000
    with (out / "attention_bins.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 * 4 and "compare_rougeL" in rows[0] and "delta" in rows[0]
    md = (out / "attention_bins.md").read_text()
    assert "## agent 1" in md and "## max agent share" in md and "difference" in md
    summary = json.loads((out / "attention_bins.json").read_text())
    assert "per_document" not in summary and summary["binned"] == result["binned"]
    assert len((out / "documents.jsonl").read_text().splitlines()) == n
    preds = [json.loads(x) for x in (out / "compare" / "predictions.jsonl").read_text().splitlines()]
    assert len(preds) == n and {"id", "prediction", "reference"} <= set(preds[0])


def test_command_without_compare(tiny_run, tmp_path, capsys):
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    out = tmp_path / "a"
    args = parser.parse_args(["analyze", "--checkpoint", str(tiny_run["checkpoint"]), "--data", tiny_run["test"],
                              "--bins", "3", "--beam", "1", "--binning", "quantile", "--out", str(out)])
    assert run(args) == 0
    assert "## agent 3" in capsys.readouterr().out
    with (out / "attention_bins.csv").open() as f:
        header = next(csv.reader(f))
    assert "rougeL" in header and "compare_rougeL" not in header
    assert (out / "attention_bins.png").read_bytes()[:8] == PNG_MAGIC
    args = parser.parse_args(["analyze", "--checkpoint", str(tmp_path / "none.pt"), "--data", tiny_run["test"]])
    assert run(args) == 2
    assert "none.pt" in capsys.readouterr().err
