"""benchmarks/studies/claim_reward_table.py: the claim reward study's curves and its choice of checkpoint."""

import json
import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks" / "studies"))
import claim_reward_table  # noqa: E402


def write_run(root, name, validations, selection, cpu=((0.0, 0.0), (100.0, 600.0))):
    run = root / name
    run.mkdir()
    records = [{"step": 20, "time": 50.0, "loss": 1.0, "reward_sample": 0.3, "reward_greedy": 0.32,
                "claims_right_share": 0.5}]
    records += [{"step": step, "time": time, "valid_nll": 2.6, "valid_rougeL": rl,
                 "valid_numbers_in_metric_context": context} for step, time, rl, context in validations]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (root / f"{name}.cpu.jsonl").write_text("".join(json.dumps({"time": t, "cpu_s": c}) + "\n" for t, c in cpu))
    for step, scores in selection.items():
        (run / f"sel-step-{step:08d}").mkdir()
        (run / f"sel-step-{step:08d}" / "scores.json").write_text(json.dumps(scores))
    return run


START = {"rouge1": 42.5, "numbers_in_metric_context": 95.0, "period_agreement": 99.0, "direction_agreement": 99.0}


def test_validations_are_placed_on_the_cpu_clock_beside_the_run(tmp_path):
    run = claim_reward_table.load_run(write_run(tmp_path, "rl-0.1", [(25, 50.0, 34.0, 90.0)], {}))
    assert [v["step"] for v in run.validations] == [25]
    assert run.validations[0]["cpu_min"] == 5.0  # halfway between the samples at t=0 and t=100: 300 CPU s
    assert run.cpu_minutes == 10.0
    table = "\n".join(claim_reward_table.curve_table([run], {"valid_nll": 2.5, "valid_rougeL": 35.0}))
    assert "| start (shipped calls model) | 0 | 0 | 2.500 | 35.0 |" in table
    assert "| rl-0.1 | 25 | 5.0 | 2.600 | 34.0 | 90.0 |" in table
    assert "right share of the sample's claims 0.50" in claim_reward_table.training_notes([run])[0]


def test_the_choice_is_the_best_rouge_that_keeps_the_claims_of_the_start(tmp_path):
    better_rouge_worse_claims = dict(START, rouge1=44.0, numbers_in_metric_context=90.0)
    kept = dict(START, rouge1=43.0)
    rl = claim_reward_table.load_run(write_run(tmp_path, "rl-0.1", [], {25: better_rouge_worse_claims}))
    mle = claim_reward_table.load_run(write_run(tmp_path, "mle", [], {50: kept}))
    assert claim_reward_table.choose([rl, mle], START) == ("mle", 50)
    assert claim_reward_table.choose([rl, mle], None) == ("rl-0.1", 25)  # no start to keep: ROUGE-1 alone
    worse = claim_reward_table.load_run(write_run(tmp_path, "rl-0.3", [], {25: dict(START, period_agreement=50.0)}))
    assert claim_reward_table.choose([worse], START) == ("rl-0.3", 25)  # none keeps them: the best there is
    assert "| mle (chosen) | 50 |" in "\n".join(claim_reward_table.selection_table([rl, mle], START))
