"""The demo's closing text (scripts/demo_report.py) follows the numbers the demo measured."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from conftest import REPO

spec = importlib.util.spec_from_file_location("demo_report", REPO / "scripts" / "demo_report.py")
demo_report = importlib.util.module_from_spec(spec)
sys.modules["demo_report"] = demo_report  # dataclasses look their module up there
spec.loader.exec_module(demo_report)
Rouge = demo_report.Rouge

LEAD3 = Rouge(32.33, 9.96, 30.42)


def scores(rouge: Rouge) -> dict:
    return {"rouge1": rouge.r1, "rouge2": rouge.r2, "rougeLsum": rouge.rl, "n": 100}


def write_lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_model_above_lead3_on_every_measure_is_called_above_with_the_margins():
    text = demo_report.versus(Rouge(34.48, 10.82, 30.85), LEAD3, "Lead-3")
    assert text == "above Lead-3 by 2.15 / 0.86 / 0.43"


def test_a_model_below_lead3_on_every_measure_is_called_below_with_the_margins():
    assert demo_report.versus(Rouge(30.0, 9.0, 29.42), LEAD3, "Lead-3") == "below Lead-3 by 2.33 / 0.96 / 1.00"


def test_a_mixed_result_gives_each_measure_its_sign():
    text = demo_report.versus(Rouge(32.83, 9.76, 30.42), LEAD3, "Lead-3")
    assert text == "against Lead-3: ROUGE-1 +0.50, ROUGE-2 -0.20, ROUGE-L level"


def windows(last: int, every: int, seconds: float, started: float) -> list[dict]:
    """The trainer's logging records: every ``every`` steps, each window ``seconds`` long."""
    return [{"step": s, "time": started + s // every * seconds, "seconds": seconds, "steps": every, "loss": 4.0}
            for s in range(every, last + 1, every)]


def test_training_progress_reads_the_last_run_of_an_appended_metrics_file(tmp_path):
    earlier = windows(2000, 100, 60.0, started=1_000.0) + [{"step": 2000, "time": 2_300.0, "valid_nll": 2.0}]
    latest = windows(840, 10, 3.5, started=10_000.0)  # 84 windows of 3.5 s: the last ends at 10,294 s
    latest += [{"step": 400, "time": 10_140.5, "valid_nll": 3.1}, {"step": 800, "time": 10_281.0, "valid_nll": 2.9}]
    latest.sort(key=lambda r: r["step"])
    latest.append({"step": 845, "time": 10_300.0, "valid_nll": 2.95})  # 5 steps after the last window
    progress = demo_report.training_progress(write_lines(tmp_path / "metrics.jsonl", earlier + latest))
    assert progress.steps == 845
    assert progress.minutes == pytest.approx(300 / 60)
    assert progress.best_step == 800


def test_the_study_is_compared_at_the_steps_this_run_made(tmp_path):
    curve = write_lines(tmp_path / "curve.jsonl", [
        {"run": "samsum-m1", "step": 500, "data": "x/valid.jsonl[:200]", "minutes": 11.8,
         "rouge1": 32.75, "rouge2": 8.92, "rougeLsum": 29.77},
        {"run": "samsum-m1", "step": 1000, "data": "x/valid.jsonl[:200]", "minutes": 24.1,
         "rouge1": 34.53, "rouge2": 11.51, "rougeLsum": 31.54},
        {"run": "samsum-m1", "step": 1000, "data": "x/valid.jsonl[:None]", "minutes": 24.1,  # other rows
         "rouge1": 1.0, "rouge2": 1.0, "rougeLsum": 1.0},
        {"run": "samsum-m6", "step": 1000, "data": "x/valid.jsonl[:200]", "minutes": 30.2,  # other model
         "rouge1": 2.0, "rouge2": 2.0, "rougeLsum": 2.0},
        {"run": "samsum-m1", "step": 3955, "data": "x/valid.jsonl[:200]", "minutes": 80.94,
         "rouge1": 37.81, "rouge2": 14.80, "rougeLsum": 35.44},
    ])
    checkpoints = demo_report.study_checkpoints(curve)
    assert [c["step"] for c in checkpoints] == [500, 1000, 3955]
    line = demo_report.study_line(840, checkpoints)
    assert "34.53 / 11.51 / 31.54 at step 1,000 (24.1 minutes there)" in line
    assert "37.81 / 14.80 / 35.44 at step 3,955 (80.9 minutes there)" in line
    assert "32.75" not in line
    assert demo_report.study_line(5000, checkpoints).count(" at step ") == 1  # past the study: its last only
    assert demo_report.study_line(840, []) is None


def test_the_closing_text_is_computed_from_the_run_directory(tmp_path, capsys):
    run = tmp_path / "demo"
    for name, rouge in (("eval", Rouge(34.48, 10.82, 30.85)), ("eval-shipped", Rouge(42.61, 16.9, 38.71)),
                        ("lead3", LEAD3)):
        (run / name).mkdir(parents=True)
        (run / name / "scores.json").write_text(json.dumps(scores(rouge)), encoding="utf-8")
    write_lines(run / "metrics.jsonl", windows(840, 10, 3.5, started=0.0) + [{"step": 840, "time": 300.0,
                                                                              "valid_nll": 2.9}])
    assert demo_report.main([str(run), "--rows", "400-500", "--curve", str(tmp_path / "none.jsonl")]) == 0
    out = " ".join(capsys.readouterr().out.split())  # as read, whatever the line wrapping
    assert "validation dialogues 400-500" in out
    assert "made 840 steps in 5.0 minutes on this machine; best.pt, the lowest validation NLL, is step 840" in out
    assert "It scores 34.48 / 10.82 / 30.85: above Lead-3 by 2.15 / 0.86 / 0.43 (32.33 / 9.96 / 30.42)" in out
    assert "shipped model scores 42.61 / 16.90 / 38.71: above the model trained here by 8.13 / 6.08 / 7.86" in out
    assert "below" not in out


def test_training_progress_reads_what_the_trainer_writes(tiny_run):
    """The records of a real run (30 steps, validated every 10): its steps, a positive time, and the
    step of best.pt."""
    import torch

    progress = demo_report.training_progress(tiny_run["run_dir"] / "metrics.jsonl")
    best = torch.load(tiny_run["checkpoint"], map_location="cpu", weights_only=True)
    assert progress.steps == 30
    assert progress.minutes > 0
    assert progress.best_step == best["step"]
