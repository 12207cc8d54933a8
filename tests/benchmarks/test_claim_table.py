"""benchmarks/studies/claim_table.py: the claim study's tables from each run's committed files."""

import json
import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks" / "studies"))
import claim_table  # noqa: E402


def write_run(root, name, valid, rouge=None, cpu_s=None, tokens=(1000, 2.0), machine=None):
    run = root / name
    run.mkdir()
    records = [{"step": 20, "time": 1.0, "tokens": tokens[0], "seconds": tokens[1], "tokens_per_s": 1.0}]
    if machine is not None:
        (run / "machine.json").write_text(json.dumps({"boot_id": machine, "cpu": "AMD EPYC"}))
    records += [{"step": step, "valid_nll": nll} for step, nll in valid.items()]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    if cpu_s is not None:
        (run / "cpu.jsonl").write_text(json.dumps({"time": 1.0, "cpu_s": cpu_s}) + "\n")
    if rouge is not None:
        score = {"run": name, "step": max(valid), "data": "valid.jsonl[500:None]", "rouge1": rouge[0],
                 "rouge2": rouge[1], "rougeLsum": rouge[2], "doubled": 10.0}
        other_rows = dict(score, data="valid.jsonl[0:200]", rouge1=99.0)  # not the reported rows
        (run / "curve.jsonl").write_text(json.dumps(other_rows) + "\n" + json.dumps(score) + "\n")
    return run


def test_a_run_is_read_from_its_name_and_files(tmp_path):
    directory = write_run(tmp_path, "cnndm-m6-if-whole-s2", {100: 5.5, 200: 5.4}, rouge=(24.0, 5.0, 22.0),
                          cpu_s=3900.0, tokens=(3000, 2.0))
    run = claim_table.load_run(directory)
    assert (run.model, run.changes, run.seed) == ("m6", frozenset({"if", "whole"}), 2)
    assert run.reading == "m6-if-whole" and run.cpu_minutes == 65.0 and run.tokens == 3000
    assert run.rouge == (24.0, 5.0, 22.0) and run.steps == 200  # rows 500-999, not rows 0-199
    assert claim_table.load_run(tmp_path / "notes") is None


def test_each_change_is_compared_on_and_off_in_the_same_seed_and_agents_against_one(tmp_path):
    runs = [claim_table.load_run(write_run(tmp_path, name, valid, rouge=rouge, cpu_s=cpu))
            for name, valid, rouge, cpu in [
                ("cnndm-m1-s1", {100: 5.6, 200: 5.50, 300: 5.30}, (24.0, 5.0, 22.0), 3900.0),
                ("cnndm-m6-s1", {100: 5.6, 200: 5.45, 300: 5.28}, (23.0, 4.5, 21.0), 3900.0),
                ("cnndm-m6-if-s1", {100: 5.6, 200: 5.40}, (23.5, 4.0, 21.5), None),
                ("cnndm-m6-if-s2", {100: 5.6, 200: 5.30}, (20.0, 4.0, 21.5), 3900.0),  # no m6-s2: no on/off
            ]]
    rows = [line for line in claim_table.comparisons(runs) if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == 2
    agents = next(r for r in rows if r.startswith("| three agents against one | 1 |"))
    assert "| m1 | m6 |" in agents and "-0.050 to -0.020 (2 validations, to step 300)" in agents and "-1.00 / -0.50 / -1.00 |" in agents
    feeding = next(r for r in rows if r.startswith("| input feeding (m6) | 1 |"))
    # equal steps: only step 200 is common (from step 200); equal time is not claimed without a CPU clock
    assert "-0.050 to -0.050 (1 validation, to step 200)" in feeding and "(wall clock)" in feeding


def test_the_seed_summary_gives_mean_and_spread_of_readings_with_two_seeds(tmp_path):
    runs = [claim_table.load_run(write_run(tmp_path, f"cnndm-m1-s{seed}", {200: 5.0}, rouge=rouge))
            for seed, rouge in [(1, (24.0, 5.0, 22.0)), (2, (25.0, 6.0, 22.5))]]
    runs.append(claim_table.load_run(write_run(tmp_path, "cnndm-m6-s1", {200: 5.0}, rouge=(1.0, 1.0, 1.0))))
    lines = claim_table.seed_summary(runs)
    assert lines[2:] == ["| `cnndm-m1` | random.shuffle | s1 | 1, 2 | 24.50 (1.00) | 5.50 (1.00) | 22.25 (0.50) |"]


def test_the_seed_summary_keeps_runs_of_other_batch_orders_apart(tmp_path):
    # the same reading run again under the newer order is its own row, not pooled with the old runs
    runs = []
    for name, order, r1 in [("cnndm-m6-s1", None, 24.0), ("cnndm-m6-s2", None, 26.0),
                            ("cnndm-m6-s1-r2", "pcg64-sort", 27.0), ("cnndm-m6-s2-r2", "pcg64-sort", 28.0)]:
        run = write_run(tmp_path, name, {200: 5.0}, rouge=(r1, 5.0, 20.0))
        if order:
            (run / "order.json").write_text(json.dumps({"epoch_order": order}))
        runs.append(claim_table.load_run(run))
    assert claim_table.seed_summary(runs)[2:] == [
        "| `cnndm-m6` | pcg64-sort | s1 | 1, 2 | 27.50 (1.00) | 5.00 (0.00) | 20.00 (0.00) |",
        "| `cnndm-m6` | random.shuffle | s1 | 1, 2 | 25.00 (2.00) | 5.00 (0.00) | 20.00 (0.00) |"]


def test_samsum_runs_are_read_on_all_their_rows_and_tabled_at_their_validation_interval(tmp_path):
    directory = write_run(tmp_path, "samsum-m6-ends-s1", {250: 4.0, 500: 3.8, 750: 3.7, 767: 3.69})
    score = {"run": "samsum-m6-ends-s1", "step": 767, "data": "valid.jsonl[:None]", "rouge1": 38.0,
             "rouge2": 14.0, "rougeLsum": 35.0}
    (directory / "curve.jsonl").write_text(json.dumps(score) + "\n")
    run = claim_table.load_run(directory)
    assert (run.corpus, run.model, run.changes, run.rouge) == ("samsum", "m6", frozenset({"ends"}), (38.0, 14.0, 35.0))
    header, _, row = claim_table.runs_table([run])
    assert "valid NLL at step 250 / 500 / 750 |" in header and "| 4.000 / 3.800 / 3.700 |" in row
    assert row.startswith("| `samsum-m6` + agent_state: ends | 1 |")


def test_two_changes_at_once_are_compared_with_neither_and_speed_is_per_cpu_second(tmp_path):
    runs = [claim_table.load_run(write_run(tmp_path, name, {200: nll}, rouge=(r1, 5.0, 20.0), cpu_s=600.0,
                                           tokens=(tokens, 1.0)))
            for name, nll, r1, tokens in [("cnndm-m6-s1", 5.0, 24.0, 1200), ("cnndm-m6-if-whole-s1", 4.9, 23.0, 900)]]
    assert runs[0].tokens_per_cpu_s == 2.0  # 1,200 tokens in 10 CPU minutes, whatever the wall clock said
    rows = [line for line in claim_table.comparisons(runs) if line.startswith("| input")]
    assert rows == ["| input feeding + whole-article split (m6) | 1 | m6 | m6-if-whole | -0.100 to -0.100 "
                    "(1 validation, to step 200) | -1.00 / +0.00 / +0.00 | 0.75x |"]


def test_runs_of_other_machines_are_compared_at_equal_steps_only(tmp_path):
    # equal CPU minutes are not equal work on another machine (15 against 32 steps a CPU minute here)
    runs = [claim_table.load_run(write_run(tmp_path, name, {200: nll, steps: nll - 0.1}, rouge=(r1, 5.0, 20.0),
                                           cpu_s=3900.0, tokens=(tokens, 1.0), machine=machine))
            for name, nll, r1, tokens, steps, machine in [
                ("cnndm-m6-s1", 5.0, 24.0, 1200, 961, "boot-a"),
                ("cnndm-m6-ends-s1", 4.9, 25.0, 2400, 961, "boot-b"),  # same steps, faster machine
                ("cnndm-m6-whole-s1", 4.8, 26.0, 2400, 1900, "boot-b"),  # stopped on the CPU clock there
                ("cnndm-m6-s1-r2", 5.1, 23.0, 2500, 1900, "boot-b"),  # m6 again, beside it
            ]]
    assert [r.repeat for r in runs] == [1, 1, 1, 2] and runs[3].reading == "m6"
    rows = {line.split(" | ")[2] + " / " + line.split(" | ")[3]: line
            for line in claim_table.comparisons(runs) if line.startswith("| agent_state") or line.startswith("| whole")}
    assert rows["m6 / m6-ends"].endswith("| +1.00 / +0.00 / +0.00 (equal steps, other machines) | – |")
    assert rows["m6 / m6-whole"].endswith("| – (961 and 1,900 steps, other machines) | – |")
    assert rows["m6 (run 2) / m6-whole"].endswith("| +3.00 / +0.00 / +0.00 | 0.96x |")  # one machine, equal time
    assert claim_table.machine_labels(runs) == {"cnndm-m6-s1": "A", "cnndm-m6-ends-s1": "B",
                                                "cnndm-m6-whole-s1": "B", "cnndm-m6-s1-r2": "B"}


def test_runs_of_other_batch_orders_say_so(tmp_path):
    # one seed fixes the batches only under one epoch order; runs without order.json are the old one
    runs = []
    for name, order, nll, r1 in [("cnndm-m6-s1", None, 5.0, 24.0), ("cnndm-m6-if-s1", "pcg64-sort", 4.9, 25.0),
                                 ("cnndm-m6-whole-s1", None, 4.8, 26.0)]:
        run = write_run(tmp_path, name, {200: nll, 961: nll - 0.1}, rouge=(r1, 5.0, 20.0), cpu_s=3900.0,
                        machine="boot-" + name)
        if order:
            (run / "order.json").write_text(json.dumps({"epoch_order": order}))
        runs.append(claim_table.load_run(run))
    assert [r.order for r in runs] == ["random.shuffle", "pcg64-sort", "random.shuffle"]
    rows = {line.split(" | ")[3]: line for line in claim_table.comparisons(runs) if line.startswith("| input")
            or line.startswith("| whole")}
    assert rows["m6-if"].endswith("| -0.100 to -0.100 (2 validations, to step 961; other batch orders) "
                                  "| +1.00 / +0.00 / +0.00 (equal steps, other machines, other batch orders) | – |")
    assert rows["m6-whole"].endswith("| -0.200 to -0.200 (2 validations, to step 961) "
                                     "| +2.00 / +0.00 / +0.00 (equal steps, other machines) | – |")


def test_an_ectsum_pair_compares_agents_with_one_agent_over_the_same_tokens_and_reads_the_numbers(tmp_path):
    def ectsum_run(name, valid, rouge, numbers=None):
        run = write_run(tmp_path, name, valid, cpu_s=5400.0, machine="boot-1")
        score = {"run": name, "step": max(valid), "data": "valid.jsonl[:None]", "rouge1": rouge[0],
                 "rouge2": rouge[1], "rougeLsum": rouge[2], "doubled": 5.0}
        (run / "curve.jsonl").write_text(json.dumps(score) + "\n")
        if numbers is not None:  # evaluate's scores of the same checkpoint, decoded otherwise: they win
            (run / "scores.json").write_text(json.dumps({"numbers_supported": numbers[0], "numbers_recall": numbers[1],
                                                         "rouge1": rouge[0] + 1, "rouge2": rouge[1], "rougeLsum": rouge[2],
                                                         "doubled": 1.0}))
        return claim_table.load_run(run)

    one = ectsum_run("ectsum-m1-long-s1", {100: 4.4, 200: 3.6}, (33.0, 19.0, 32.0), numbers=(90.0, 28.0))
    agents = ectsum_run("ectsum-m6-s1", {100: 4.2, 200: 3.5}, (35.0, 20.0, 34.0))
    assert one.model == "m1" and one.changes == {"long"} and one.numbers == (90.0, 28.0) and agents.numbers is None
    assert one.rouge == (34.0, 19.0, 32.0) and one.doubled == 1.0 and agents.rouge == (35.0, 20.0, 34.0)
    table = claim_table.runs_table([one, agents])
    assert "| `ectsum-m1-long` | 1 |" in table[2] and table[2].endswith("| 90.0% / 28.0% |")
    assert table[3].endswith("| – |")
    rows = [line for line in claim_table.comparisons([one, agents]) if line.startswith("| agents")]
    assert len(rows) == 1 and "| m1-long | m6 |" in rows[0] and "+1.00 / +1.00 / +2.00" in rows[0]


def test_a_validation_is_placed_at_the_cpu_minutes_the_run_had_then(tmp_path):
    run_dir = tmp_path / "ectsum-m6-s1"
    run_dir.mkdir()
    records = [{"step": 20, "time": 10.0, "tokens": 100, "seconds": 1.0, "tokens_per_s": 100.0},
               {"step": 100, "time": 150.0, "valid_nll": 4.2},   # halfway between two samples
               {"step": 200, "time": 500.0, "valid_nll": 3.6}]   # after the last sample: clamped
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    samples = [{"time": 0.0, "cpu_s": 0.0}, {"time": 100.0, "cpu_s": 60.0}, {"time": 200.0, "cpu_s": 180.0}]
    (run_dir / "cpu.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    run = claim_table.load_run(run_dir)
    assert run.valid_cpu == {100: 2.0, 200: 3.0}  # (60 + 0.5 * 120) s = 2 min; 180 s = 3 min


def test_the_plot_draws_one_line_per_run_on_each_axis(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = []
    for name in ("ectsum-m1-long-s1", "ectsum-m6-s1", "ectsum-m6-s2"):
        run = claim_table.load_run(write_run(tmp_path, name, {100: 4.0, 200: 3.5}, cpu_s=600.0))
        run.valid_cpu = {100: 5.0, 200: 10.0}
        runs.append(run)
    runs.append(claim_table.load_run(write_run(tmp_path, "ectsum-m1-s1", {100: 4.5, 200: 4.4})))  # no CPU clock
    shown = {}
    save = plt.Figure.savefig

    def capture(fig, path, **kwargs):
        shown["lines"] = [len(ax.get_lines()) for ax in fig.axes]
        shown["labels"] = [line.get_label() for line in fig.axes[1].get_lines()]
        save(fig, path, **kwargs)

    monkeypatch.setattr(plt.Figure, "savefig", capture)
    claim_table.plot(runs, tmp_path / "out" / "nll.png")
    assert (tmp_path / "out" / "nll.png").stat().st_size > 0
    assert shown["lines"] == [3, 4]  # the run without a CPU clock is only on the steps axis
    assert "ectsum-m6 seed 2" in shown["labels"] and "ectsum-m1-long seed 1" in shown["labels"]


#: What agentsum evaluate writes to scores.json about its search (agentsum.evaluation.evaluate).
ECTSUM_M1_LONG = {"beam_size": 5, "block_trigrams": True, "no_repeat_ngram_size": 3, "repetition_penalty": 1.0,
                  "repeat_window": 0, "numbers_from_source": True, "min_length": 20, "max_length": 120}
ECTSUM_M6 = dict(ECTSUM_M1_LONG, min_length=30, repeat_window=3)  # the preset's own since 83c389d


def scored_run(root, name, rouge, search, valid=None, step=None):
    """A run scored by claim_study.sh: agentsum evaluate's scores.json, with the settings it decoded with."""
    run = write_run(root, name, valid or {100: 4.4, 200: 3.6}, cpu_s=5400.0, machine="boot-1")
    scores = {"rouge1": rouge[0], "rouge2": rouge[1], "rougeLsum": rouge[2], "doubled": 1.0, **search}
    if step is not None:
        scores.update(checkpoint="last.pt", step=step)
    (run / "scores.json").write_text(json.dumps(scores))
    return claim_table.load_run(run)


def test_rows_decoded_with_different_search_settings_are_not_compared_and_the_table_says_so(tmp_path, capsys,
                                                                                            monkeypatch):
    # each checkpoint's own settings: what `claim_study.sh 3 m1-long m6 60` gave before it pinned them
    one = scored_run(tmp_path, "ectsum-m1-long-s1", (33.0, 19.0, 32.0), ECTSUM_M1_LONG)
    agents = scored_run(tmp_path, "ectsum-m6-s1", (35.0, 20.0, 34.0), ECTSUM_M6)
    assert one.search["min_length"] == 20 and agents.search["repeat_window"] == 3 and "block_trigrams" not in one.search
    rows = [line for line in claim_table.comparisons([one, agents]) if line.startswith("| agents")]
    assert len(rows) == 1 and "+2.00" not in rows[0]
    assert rows[0].endswith("| – (decoded differently: min_length 20 / 30, repeat_window 0 / 3) | 1.00x |")
    table = claim_table.runs_table([one, agents])
    assert "| search | R-1 / R-2 / R-L |" in table[0]
    assert "| s1 | 33.00 / 19.00 / 32.00 |" in table[2] and "| s2 | 35.00 / 20.00 / 34.00 |" in table[3]
    notes = claim_table.search_notes([one, agents])
    assert "Search s1: beam 5, min 20, max 120, ngram block 3, repetition penalty 1, repeat window 0, " \
           "numbers from source on." in notes
    assert any(line.startswith("Search s2: ") and "min 30" in line and "repeat window 3" in line for line in notes)
    assert any(line.startswith("**Warning: these rows were decoded with different search settings.**")
               for line in notes)
    # the script's output carries the warning, and says so on stderr too
    monkeypatch.setattr(sys, "argv", ["claim_table.py", "--corpus", "ectsum", "--dir", str(tmp_path)])
    claim_table.main()
    out, err = capsys.readouterr()
    assert "**Warning: these rows were decoded with different search settings.**" in out
    assert "decoded differently" in out and "different search settings" in err


def test_rows_decoded_alike_are_compared_and_their_settings_written_under_the_table(tmp_path, capsys, monkeypatch):
    pinned = dict(ECTSUM_M1_LONG, numbers_from_source=False)  # claim_study.sh's ECTSum settings
    one = scored_run(tmp_path, "ectsum-m1-long-s1", (33.0, 19.0, 32.0), pinned, step=605)
    agents = scored_run(tmp_path, "ectsum-m6-s1", (35.0, 20.0, 34.0), pinned, step=579)
    assert (one.steps, agents.steps) == (605, 579)  # the scored checkpoint's step, past the last logged one
    rows = [line for line in claim_table.comparisons([one, agents]) if line.startswith("| agents")]
    assert rows[0].endswith("| +2.00 / +1.00 / +2.00 | 1.00x |")
    notes = claim_table.search_notes([one, agents])
    assert notes[0] == ("Search s1: beam 5, min 20, max 120, ngram block 3, repetition penalty 1, repeat window 0, "
                        "numbers from source off.")
    assert not any("Warning" in line for line in notes)
    monkeypatch.setattr(sys, "argv", ["claim_table.py", "--corpus", "ectsum", "--dir", str(tmp_path)])
    claim_table.main()
    out, err = capsys.readouterr()
    assert "Warning" not in out and err == ""


def test_seeds_decoded_differently_are_not_pooled(tmp_path):
    runs = [scored_run(tmp_path, "ectsum-m6-s1", (34.0, 20.0, 33.0), ECTSUM_M6),
            scored_run(tmp_path, "ectsum-m6-s2", (36.0, 21.0, 35.0), ECTSUM_M6),
            scored_run(tmp_path, "ectsum-m6-s3", (30.0, 18.0, 29.0), ECTSUM_M1_LONG)]
    assert claim_table.seed_summary(runs)[2:] == [
        "| `ectsum-m6` | random.shuffle | s1 | 1, 2 | 35.00 (2.00) | 20.50 (1.00) | 34.00 (2.00) |"]


def test_settings_some_rows_do_not_record_are_named_under_the_table(tmp_path):
    # an older run scored by quality_curve.py records beam and lengths only; its settings count as unknown
    run = write_run(tmp_path, "cnndm-m1-s1", {100: 4.4, 200: 3.6}, cpu_s=5400.0, machine="boot-1")
    (run / "curve.jsonl").write_text(json.dumps(
        {"run": "cnndm-m1-s1", "step": 200, "data": "valid.jsonl[500:None]", "rouge1": 24.0, "rouge2": 5.0,
         "rougeLsum": 22.0, "beam": 5, "min_length": 35, "max_length": 100}) + "\n")
    old = claim_table.load_run(run)
    assert old.search == {"beam_size": 5, "min_length": 35, "max_length": 100}
    new = scored_run(tmp_path, "cnndm-m6-s1", (23.0, 4.0, 21.0),
                     dict(ECTSUM_M1_LONG, min_length=35, max_length=100, numbers_from_source=False))
    notes = claim_table.search_notes([old, new])
    assert "Not recorded for cnndm-m1-s1: no_repeat_ngram_size." in notes
    assert "Not recorded for cnndm-m1-s1: repeat_window." in notes
    assert any(line.startswith("Not recorded for any row: ") and "length_penalty" in line for line in notes)
    # what both record agrees, so they are compared, and the unknowns are listed rather than assumed equal
    rows = [line for line in claim_table.comparisons([old, new]) if line.startswith("| three agents")]
    assert "-1.00 / -1.00 / -1.00" in rows[0]
