"""benchmarks/speed/bench_long.py: its batches, its reading of OpenNMT's log, its ratios and targets, and
one training-step measurement at a tiny size."""

import argparse
import sys

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks" / "speed"))
import bench_long  # noqa: E402


def sentences(n_sentences: int, length: int, tag: str) -> list[list[str]]:
    return [[f"{tag}{s}w{i}" for i in range(length)] for s in range(n_sentences)]


def test_documents_are_calls_one_after_another_cut_at_exactly_the_length():
    calls = [sentences(2, 5, "a"), sentences(3, 4, "b")]  # 10 + 12 tokens
    doc = bench_long.concatenated(calls, 13)
    assert sum(map(len, doc)) == 13
    assert doc[:2] == calls[0]  # whole sentences while they fit, in order
    assert doc[2] == calls[1][0][:3]  # the last one cut
    assert bench_long.concatenated(calls, 10) == calls[0]


def test_rows_split_the_same_tokens_into_one_agent_or_400_token_agents():
    from agentsum.data.dataset import split_article

    doc = sentences(50, 20, "x")  # 1,000 tokens in sentences of 20
    one = split_article(doc, bench_long.row_config("dca1", 1000, []).data)
    many = split_article(doc, bench_long.row_config("dca400", 1000, []).data)
    assert [len(a) for a in one] == [1000]
    assert len(many) == 3 and all(len(a) <= 400 for a in many) and sum(map(len, many)) == 1000
    assert bench_long.row_config("dca400+ckpt", 1000, []).model["checkpoint_agents"] is True
    assert bench_long.row_config("dca1+ckpt", 1000, []).data == bench_long.row_config("dca1", 1000, []).data
    transformer = bench_long.row_config("transformer", 16000, [])
    assert transformer.model["type"] == "transformer_pg" and transformer.model["max_positions"] >= 16000
    assert [len(a) for a in split_article(doc, transformer.data)] == [1000]


def test_onmt_steps_are_read_from_its_report_lines_after_the_warm_up():
    log = "\n".join([
        "[2026-12-03 12:53:32,248 INFO] Start training loop without validation...",
        "[2026-12-03 12:54:00,000 INFO] Step  1/    4; acc: 1.2; ppl: 2112.0; xent: 7.7; lr: 0.00100; sents:       8; "
        "bsz: 7984/ 251/ 8; 285/  9 tok/s;     28 sec;",
        "[2026-12-03 12:54:02,500 INFO] Step  2/    4; acc: 1.2; bsz: 8000/ 251/ 8; 252/  8 tok/s;     30 sec;",
        "[2026-12-03 12:54:04,000 INFO] Weighted corpora loaded so far:",
        "[2026-12-03 12:54:05,000 INFO] Step  3/    4; acc: 1.2; bsz: 7992/ 250/ 8; 677/ 21 tok/s;     33 sec;",
    ])
    assert bench_long.onmt_steps(log, 1) == [pytest.approx((2.5, 8251)), pytest.approx((2.5, 8242))]
    assert bench_long.onmt_steps(log, 2) == [pytest.approx((2.5, 8242))]


def test_ratios_are_against_the_one_agent_row_and_the_same_row_at_8k():
    results = [{"row": "dca1", "length": 8000, "step_s": 2.0}, {"row": "dca400", "length": 8000, "step_s": 1.0},
               {"row": "dca1", "length": 16000, "step_s": 5.0}, {"row": "dca400", "length": 16000, "step_s": 2.1},
               {"row": "transformer", "length": 16000, "error": "failed (rc 1): can't allocate memory"},
               {"row": "dca400@before", "length": 8000, "step_s": 1.5}]
    bench_long.add_ratios(results)
    by = {(r["row"], r["length"]): r for r in results}
    assert by["dca400", 16000]["time_vs_one_agent"] == pytest.approx(0.42)
    assert by["dca400", 16000]["time_vs_8k"] == pytest.approx(2.1)
    assert by["dca1", 16000]["time_vs_8k"] == pytest.approx(2.5)
    assert by["dca400@before", 8000]["time_vs_one_agent"] == pytest.approx(0.75)
    assert "time_vs_one_agent" not in by["transformer", 16000]
    assert bench_long.is_memory_failure(by["transformer", 16000])

    for r in results:
        r.setdefault("peak_rss_mb", 9000.0 if r["row"] == "dca1" else 3000.0)
        r.setdefault("tokens_per_s", 100.0)
    met = {t["target"]: t["met"] for t in bench_long.targets(results, [], [8000, 16000])}
    assert met["DCA, 400-token agents: step time at 16k <= 2.2x 8k"] is True
    assert met["DCA, 1 agent: step time at 16k <= 2.2x 8k"] is False
    assert met["DCA, 1 agent: peak RSS at 16k tokens, batch 8 <= 8 GB"] is False
    assert met["DCA, 400-token agents: peak RSS at 16k tokens, batch 8 <= 8 GB"] is True
    assert not any("Transformer" in t for t in met)  # not measured at 8k and 16k: no claim either way
    text = bench_long.markdown({"when": "now", "machine": "m", "threads": 2, "loadavg_start": [0], "loadavg_end": [0],
                                "command": "c", "batch": 8, "vocab": 20004, "steps": 3, "warmup": 1,
                                "memory_cap_gb": 12, "train": results, "decode": [], "targets": [], "notes": []})
    assert "not measured: failed (rc 1): can't allocate memory" in text


def test_one_training_step_is_measured_at_a_tiny_size():
    calls = [sentences(10, 6, f"c{i}") for i in range(4)]
    inputs = {"vocab": ["<pad>", "<unk>", "<s>", "</s>", "."] + sorted({t for c in calls for s in c for t in s}),
              "docs": {"40": [bench_long.concatenated(calls[i::2], 40) for i in range(2)]},
              "summaries": [["c0s0w1", "c0s0w2"], ["c1s0w3"]]}
    args = argparse.Namespace(threads=1, warmup=0, steps=2, overrides=["data.agent_tokens=20"])
    out = bench_long.measure_train("dca400", 40, inputs, args)
    assert out["agents"] == [3, 3] and out["source_tokens"] == 80 and out["target_tokens"] == 5
    assert len(out["steps_s"]) == 2 and out["step_s"] > 0 and out["tokens_per_s"] == pytest.approx(85 / out["step_s"])
    assert out["peak_rss_mb"] > 0
