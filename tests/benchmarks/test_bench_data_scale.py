"""benchmarks/data/bench_data_scale.py: runs of one corpus each put together, and what the report says of them."""

import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks" / "data"))
import bench_data_scale  # noqa: E402


def corpus(name, prepare_seconds):
    prepare = {"seconds": prepare_seconds, "docs_per_s": 10.0, "cpu_seconds": 1.0, "docs_per_cpu_s": 10.0,
               "store_mb": 1.0, "types": 5, "documents": 10, "peak_rss_mb": 1.0}
    ddp = {"first_step_s": 2.0, "peak_rss_mb_per_rank": [3.0, 3.0], "anon_mb_per_rank": [2.0, 2.0]}
    return {"corpus": name, "preset": "m6", "vocab_size": 100,
            "rows": {"10": {"prepare_w2": prepare, "train_store": {"first_step_s": 1.0, "peak_rss_mb": 4.0},
                            "ddp_store": ddp}}}


def run(date, commit, *corpora, **extra):
    return {"date": date, "machine": "2 cores", "load": 0.5, "commit": commit, "corpora": list(corpora), **extra}


def test_merge_takes_each_corpus_from_the_last_run_that_measured_it():
    first = run("2026-01-01 10:00", "aaa", corpus("CNN/DailyMail-like", 11.0), corpus("LCSTS-like", 22.0),
                step_preset="m6", step_ms=5.0)
    second = run("2026-01-02 10:00", "bbb", corpus("LCSTS-like", 33.0))
    merged = bench_data_scale.merge([first, second], "out")
    by_name = {c["corpus"]: c["rows"]["10"]["prepare_w2"]["seconds"] for c in merged["corpora"]}
    assert by_name == {"CNN/DailyMail-like": 11.0, "LCSTS-like": 33.0}
    assert merged["runs"]["CNN/DailyMail-like"]["commit"] == "aaa"
    assert merged["runs"]["LCSTS-like"] == {"date": "2026-01-02 10:00", "load": 0.5, "commit": "bbb",
                                            "machine": "2 cores"}
    assert merged["step_ms"] == 5.0  # only the first run measured it


def test_the_report_names_each_corpus_run_and_never_claims_one_run_for_a_merge():
    merged = bench_data_scale.merge([run("2026-01-01 10:00", "aaa", corpus("CNN/DailyMail-like", 11.0)),
                                     run("2026-01-02 10:00", "bbb", corpus("LCSTS-like", 33.0))], "out")
    text = bench_data_scale.report(merged)
    assert "CNN/DailyMail-like measured 2026-01-01 10:00 at commit aaa" in text
    assert "LCSTS-like measured 2026-01-02 10:00 at commit bbb" in text
    assert "this one run" not in text
    single = bench_data_scale.report(run("2026-01-01 10:00", "aaa", corpus("CNN/DailyMail-like", 11.0)))
    assert "Measured 2026-01-01 10:00 at commit aaa" in single and "this one run" in single


def test_the_sections_measured_once_keep_the_run_that_measured_them():
    fmt = {"documents": 10, "arrow_fetch_ms_per_batch": 1.0, "memmap_fetch_ms_per_batch": 1.0,
           "pyarrow_rows_fetch_ms_per_batch": 1.0, "open_arrow_s": 0.1, "open_arrow_verified_s": 0.2,
           "open_memmap_s": 0.0, "arrow_mb": 1.0, "memmap_mb": 1.0}
    first = run("2026-01-01 10:00", "aaa", corpus("CNN/DailyMail-like", 11.0), format=fmt, step_ms=5.0,
                step_preset="m6", evaluate={"1000": {"seconds": 1.0, "peak_rss_mb": 2.0}})
    second = run("2026-01-02 10:00", "bbb", corpus("CNN/DailyMail-like", 9.0), format=fmt, step_ms=4.0,
                 step_preset="m6")  # --no-evaluate
    merged = bench_data_scale.merge([first, second], "out")
    assert merged["corpora"][0]["rows"]["10"]["prepare_w2"]["seconds"] == 9.0 and merged["step_ms"] == 4.0
    text = bench_data_scale.report(merged)
    assert "evaluate measured 2026-01-01 10:00 at commit aaa" in text
    assert "the storage format and step time measured 2026-01-02 10:00 at commit bbb" in text


def test_a_merged_result_merged_again_keeps_each_part_its_run_and_machine():
    fmt = {"documents": 10}
    old = bench_data_scale.merge([run("2026-01-01 10:00", "aaa", corpus("CNN/DailyMail-like", 11.0),
                                      evaluate={"1000": {"seconds": 1.0, "peak_rss_mb": 2.0}}, format=fmt),
                                  run("2026-01-02 10:00", "bbb", corpus("LCSTS-like", 33.0))], "out")
    new = dict(run("2026-02-01 10:00", "ccc", corpus("LCSTS-like", 30.0)), machine="2 cores (AMD EPYC)")
    merged = bench_data_scale.merge([old, new], "out")
    assert merged["runs"]["evaluate"]["commit"] == "aaa"  # not the date or commit of the merged file
    assert merged["runs"]["CNN/DailyMail-like"]["commit"] == "aaa"
    assert merged["runs"]["LCSTS-like"]["machine"] == "2 cores (AMD EPYC)"
    text = bench_data_scale.provenance(merged)
    assert "LCSTS-like measured 2026-02-01 10:00 at commit ccc on 2 cores (AMD EPYC)" in text
    assert "CNN/DailyMail-like measured 2026-01-01 10:00 at commit aaa on 2 cores," in text
    assert "rates differ between machines" in text
