"""The studies decode every run they compare with one set of search settings, pinned by their scripts.

The presets decode differently (``ectsum-m1-long`` 20-120 tokens with no repeat window, ``ectsum-m6``
30-120 with a window of 3), so a study that took each checkpoint's own settings would compare search as
much as training. These tests fail where a study's script stops pinning a setting, where what it pins
misses a setting ``agentsum evaluate`` can set, or where two runs of a pair come out decoded differently.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks" / "studies"))
import claim_table  # noqa: E402
import decoding_controls  # noqa: E402
import levers  # noqa: E402
import quality_curve  # noqa: E402
import search_settings  # noqa: E402

from agentsum.checkpoint import save_checkpoint  # noqa: E402
from agentsum.cli import build_parser  # noqa: E402
from agentsum.config import load_config  # noqa: E402
from agentsum.options import add_search_options, search_overrides  # noqa: E402

STUDIES = REPO / "benchmarks" / "studies"
#: Every script that decodes runs to compare them.
SCRIPTS = sorted(STUDIES.glob("*.sh")) + [REPO / "benchmarks" / "peer" / "time_to_quality.sh"]


def settable_on_the_cli() -> set[str]:
    """The search settings an option of `agentsum evaluate` sets to a value it is given. A flag that can
    only turn a setting off (--no-unk-replace) pins nothing, and a setting without an option
    (length_penalty) cannot be pinned on a command line."""
    parser = argparse.ArgumentParser()
    add_search_options(parser)
    settable = set()
    for action in parser._actions:  # argparse lists its options nowhere public
        if not action.option_strings or action.nargs == 0:
            continue
        value = action.choices[0] if action.choices else "1"
        args, _ = build_parser().parse_known_args(["evaluate", "--data", "x", action.option_strings[0], value])
        settable |= set(search_overrides(args))
    return settable & set(search_settings.FIELDS)


#: What every decoding command of a study gives: each setting the CLI can pin. A setting given an
#: option later is asked for here at once.
MUST_PIN = settable_on_the_cli()


def commands(script) -> list[list[str]]:
    """The script's commands as words, continuation lines joined, comments and heredocs left out."""
    text = re.sub(r"<<'(\w+)'\n.*?\n\1\n", "\n", script.read_text(), flags=re.S)
    return [words for line in text.replace("\\\n", " ").splitlines() if (words := shlex.split(line, comments=True))]


def search_arrays(script) -> list[list[str]]:
    """Every ``SEARCH=(...)`` of the script, as words."""
    return [shlex.split(body, comments=True) for body in re.findall(r"\bSEARCH=\(([^)]*)\)", script.read_text())]


def decoding_commands(script) -> list[list[str]]:
    """The words after ``agentsum ... evaluate`` or ``quality_curve.py`` of every command that decodes."""
    found = []
    for words in commands(script):
        if "agentsum" in words and "evaluate" in words:
            found.append(words[words.index("evaluate") + 1:])
        elif any(w.endswith("quality_curve.py") for w in words):
            found.append(words[next(i for i, w in enumerate(words) if w.endswith("quality_curve.py")) + 1:])
    return found


def pinned(words: list[str]) -> dict:
    """The search settings these words set, read by agentsum evaluate's own parser."""
    args, _ = build_parser().parse_known_args(["evaluate", "--data", "x", *words])
    return search_overrides(args)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_decoding_command_of_a_study_gives_every_search_setting(script):
    arrays = search_arrays(script)
    decoding = decoding_commands(script)
    if script.name == "levers.sh":  # levers.py pins its own (test below); the shipped model's row is here
        assert len(decoding) == 1
    for words in decoding:
        variants = [[w for w in words if w != "${SEARCH[@]}"] + array for array in arrays] \
            if "${SEARCH[@]}" in words else [words]
        for variant in variants:
            missing = MUST_PIN - set(pinned(variant))
            assert not missing, f"{script.name}: `{' '.join(words)}` leaves {sorted(missing)} to each checkpoint"


def test_the_scripts_that_compare_runs_decode_them_with_one_search_array():
    for name in ("claim_study.sh", "long_input_study.sh", "samsum_study.sh", "lcsts_study.sh", "rl_control.sh"):
        script = STUDIES / name
        decoding = decoding_commands(script)
        assert decoding and all("${SEARCH[@]}" in words for words in decoding), name
    assert len(search_arrays(STUDIES / "claim_study.sh")) == 3  # one per corpus: cnndm, samsum, ectsum


def stub_repository(tmp_path):
    """A copy of claim_study.sh in a repository whose `agentsum evaluate` reads the search settings its
    checkpoint and options give, as the real one does, and writes them to scores.json without decoding."""
    root = tmp_path / "repo"
    (root / "benchmarks" / "studies").mkdir(parents=True)
    shutil.copy(STUDIES / "claim_study.sh", root / "benchmarks" / "studies")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "evaluate.jsonl"
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    (bin_dir / "agentsum").write_text(f"""#!{sys.executable}
import dataclasses, json, sys
from pathlib import Path
sys.path.insert(0, {str(STUDIES)!r})
from search_settings import settings_of
from agentsum.checkpoint import read_checkpoint
from agentsum.cli import build_parser
from agentsum.config import Config
from agentsum.options import search_overrides
args = build_parser().parse_args(sys.argv[1:])
own = Config.from_dict(read_checkpoint(args.checkpoint)["config"]).search
search = dataclasses.replace(own, **search_overrides(args))
Path(args.out).mkdir(parents=True, exist_ok=True)
scores = {{"rouge1": 30.0, "rouge2": 10.0, "rougeLsum": 28.0, **settings_of(search)}}
(Path(args.out) / "scores.json").write_text(json.dumps(scores))
with open({str(log)!r}, "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
""")
    for stub in bin_dir.iterdir():
        stub.chmod(0o755)
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "activate").write_text(f'export PATH={shlex.quote(str(bin_dir))}:"$PATH"\n')
    return root, log


def fake_checkpoint(path, preset, step):
    """A checkpoint file holding a preset's configuration (and so its search settings), no weights."""
    save_checkpoint({"model": {}, "vocab": [], "config": load_config(preset).to_dict(), "step": step}, path)


def test_claim_study_decodes_both_runs_of_a_pair_with_the_settings_it_pins(tmp_path):
    # `CORPUS=ectsum claim_study.sh 3 m1-long m6`: the presets' own settings differ (the other corpora's
    # SEARCH arrays are read above; this runs the script, each process a few seconds)
    corpus, readings, presets = "ectsum", ("m1-long", "m6"), ("ectsum-m1-long", "ectsum-m6")
    own = [search_settings.settings_of(load_config(p).search) for p in presets]
    assert search_settings.differences(*own) == ["min_length 20 / 30", "repeat_window 0 / 3"]
    root, log = stub_repository(tmp_path)
    names = [f"{corpus}-{reading}-s3" for reading in readings]
    for name, preset, step in zip(names, presets, (605, 579)):
        fake_checkpoint(root / "runs" / name / "checkpoints" / "last.pt", preset, step)
        fake_checkpoint(root / "runs" / name / "checkpoints" / "step-00000400.pt", preset, 400)
    env = dict(os.environ, SCORE_ONLY="1", CORPUS=corpus, MORE_CHECKPOINTS="step-00000400")
    done = subprocess.run(["bash", str(root / "benchmarks" / "studies" / "claim_study.sh"), "3", *readings],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(calls) == 4  # step 400 and last of each run
    settings = [pinned(call[call.index("evaluate") + 1:]) for call in calls]
    assert all(s == settings[0] for s in settings) and MUST_PIN <= set(settings[0])
    runs = []
    for name, step in zip(names, (605, 579)):
        scores = json.loads((root / "benchmarks" / "results" / corpus / "claim" / name / "scores.json").read_text())
        assert (scores["checkpoint"], scores["step"]) == ("last.pt", step)
        runs.append(claim_table.load_run(root / "benchmarks" / "results" / corpus / "claim" / name))
    assert runs[0].search == runs[1].search and MUST_PIN <= set(runs[0].search)
    assert not search_settings.differences(runs[0].search, runs[1].search)
    assert not any("Warning" in line for line in claim_table.search_notes(runs))


def test_quality_curve_refuses_runs_whose_settings_differ_until_every_setting_is_given(tmp_path):
    one, agents = tmp_path / "one.pt", tmp_path / "agents.pt"
    fake_checkpoint(one, "ectsum-m1-long", 605)
    fake_checkpoint(agents, "ectsum-m6", 579)
    with pytest.raises(SystemExit, match=r"decode differently \(min_length 20 / 30, repeat_window 0 / 3\)"):
        quality_curve.pinned_search([one, agents], {})
    with pytest.raises(SystemExit, match=r"repeat_window 0 / 3"):  # one setting given is not enough
        quality_curve.pinned_search([one, agents], {"min_length": 20})
    search = quality_curve.pinned_search([one, agents], {"min_length": 20, "repeat_window": 0})
    assert (search.min_length, search.repeat_window, search.max_length) == (20, 0, 120)
    assert quality_curve.pinned_search([agents, agents], {}).repeat_window == 3  # one preset: its own settings


def test_quality_curve_writes_every_setting_beside_each_score_and_decodes_a_checkpoint_once_per_setting(
        tiny_run, tmp_path):
    run_dir, out = tiny_run["run_dir"], tmp_path / "out"
    options = ["--beam", "2", "--min-length", "3", "--max-length", "12", "--no-repeat-ngram-size", "3",
               "--repetition-penalty", "1", "--repeat-window", "0", "--numbers-from-source", "off"]
    argv = [str(run_dir), "--data", tiny_run["test"], "--only", "best", "--out", str(out), "--threads", "1"]
    assert quality_curve.main(argv + options) == 0
    assert quality_curve.main(argv + options) == 0  # already there: not decoded again
    records = [json.loads(line) for line in (out / "curve.jsonl").read_text().splitlines()]
    assert len(records) == 1
    settings = search_settings.recorded(records[0])
    assert set(settings) == set(search_settings.FIELDS)  # every setting, the ones not given too
    given = {"beam_size": 2, "min_length": 3, "max_length": 12, "no_repeat_ngram_size": 3, "repetition_penalty": 1.0,
             "repeat_window": 0, "numbers_from_source": False}
    assert {k: settings[k] for k in given} == given
    assert quality_curve.main(argv + options[:-6] + ["--repeat-window", "2", "--numbers-from-source", "off"]) == 0
    records = [json.loads(line) for line in (out / "curve.jsonl").read_text().splitlines()]
    assert [r["repeat_window"] for r in records] == [0, 2]


def test_levers_and_the_decoding_controls_give_every_setting_and_record_it():
    # the shipped dialogue model decodes with a repeat window of 3; the controls' base has none
    assert decoding_controls.search_for({}).repeat_window == 0
    for name, changes in decoding_controls.SETTINGS.items():
        search = search_settings.settings_of(decoding_controls.search_for(changes))
        base = search_settings.settings_of(decoding_controls.search_for({}))
        changed = {k for k in search if search[k] != base[k]}
        assert changed <= {"no_repeat_ngram_size", "repetition_penalty", "repeat_window"}, name
    trigram, pair = (search_settings.settings_of(s) for s in levers.SEARCHES.values())
    assert search_settings.differences(trigram, pair) == ["repetition_penalty 1 / 1.5", "repeat_window 0 / 2"]
    assert (trigram["beam_size"], trigram["min_length"], trigram["max_length"]) == (5, 15, 60)


def test_the_levers_table_flags_rows_of_one_column_decoded_differently():
    scores = {"rouge1": 40.0, "rouge2": 15.0, "rougeL": 36.0, "doubled": 5.0, "x_and_x": 0.0}
    pinned_here = {name: search_settings.settings_of(s) for name, s in levers.SEARCHES.items()}
    row = {f"samsum {name}": dict(scores, **pinned_here[name]) for name in levers.SEARCHES}
    other = dict(row, **{"samsum trigram": {**scores, **pinned_here["trigram"], "min_length": 10}})
    old = {f"samsum {name}": dict(scores) for name in levers.SEARCHES}  # scored before the settings were kept
    lines = levers.search_lines({"base": row, "feeding": row})
    assert lines[0].startswith("trigram: beam 5, min 15, max 60, ") and "repeat window 0" in lines[0]
    assert not any("Warning" in line for line in lines)
    lines = levers.search_lines({"base": row, "feeding": other, "glove": old})
    assert lines[0].startswith("**Warning: trigram rows decoded differently**: base (samsum): beam 5, min 15")
    assert "feeding (samsum): beam 5, min 10" in lines[0]
    assert "trigram: settings not recorded for glove (samsum) (scored before they were written beside the scores)." \
        in lines
