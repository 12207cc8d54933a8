"""A corpus summarized and evaluated as a job in parts (agentsum.jobs): shards (``--shard K/N``,
torchrun ranks) give the bytes of one process, a SIGKILLed job resumes to the same output, and bad
input, bad options and a second writer are refused with messages that name what is wrong."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from agentsum.cli import main
from agentsum.config import ConfigError
from agentsum.jobs import Shard
from conftest import REPO, synthetic_rows, write_jsonl

torch.set_num_threads(1)


def agentsum(*args: str, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "agentsum", "--threads", "1", *args], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=600, **kwargs)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> str:
    return write_jsonl(tmp_path_factory.mktemp("jobs") / "corpus.jsonl", synthetic_rows(37, seed=3))


@pytest.fixture(scope="module")
def one_process(tiny_run, corpus, capsys_module=None) -> str:
    """The summaries of one process printing to stdout: what every job must reproduce."""
    done = agentsum("summarize", corpus, "--checkpoint", str(tiny_run["checkpoint"]), "--part-rows", "5")
    assert done.returncode == 0, done.stderr
    return done.stdout


# ------------------------------------------------------------------------------------------ shards
def test_a_shard_is_parsed_one_based_and_bad_ones_are_refused_naming_the_option():
    assert Shard.parse("1/1") == Shard(0, 1) and Shard.parse("3/4") == Shard(2, 4)
    for bad in ("3/2", "0/2", "x", "2", "1/0", "a/b"):
        with pytest.raises(ConfigError, match="--shard"):
            Shard.parse(bad)


def test_shards_own_every_part_once_and_overlap_only_where_they_share_parts():
    for n in (1, 2, 3, 5):
        owners = [[k for k in range(n) if Shard(k, n).owns(p)] for p in range(20)]
        assert all(len(o) == 1 for o in owners)
    assert Shard(0, 2).overlaps(Shard(0, 4)) and not Shard(0, 2).overlaps(Shard(1, 4))
    assert Shard(1, 2).overlaps(Shard(0, 3))  # part 3 is 1 mod 2 and 0 mod 3
    assert Shard(0, 1).overlaps(Shard(2, 5))
    assert Shard(1, 2).within(1, 2) == Shard(3, 4)  # rank 1 of 2 in shard 2/2: every part p = 3 mod 4


@pytest.mark.parametrize("shard", ["3/2", "x", "0/1"])
def test_bad_shards_are_refused_through_the_cli(tiny_run, corpus, tmp_path, shard):
    done = agentsum("summarize", corpus, "--checkpoint", str(tiny_run["checkpoint"]), "--out", str(tmp_path / "o"),
                    "--shard", shard)
    assert done.returncode == 2 and f"--shard {shard}" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "o").exists()


def test_shards_merged_give_the_bytes_of_one_process(tiny_run, corpus, one_process, tmp_path, capsys):
    out = tmp_path / "job"
    common = ["summarize", corpus, "--checkpoint", str(tiny_run["checkpoint"]), "--part-rows", "5", "--out", str(out)]
    assert main(common + ["--shard", "2/3"]) == 0
    assert main(common + ["--shard", "1/3"]) == 0
    assert not (out / "summaries.txt").exists()  # shard 3/3 still owns parts 2, 5
    assert "the shard that finishes last merges" in capsys.readouterr().err
    assert main(common + ["--shard", "3/3"]) == 0
    assert (out / "summaries.txt").read_text(encoding="utf-8") == one_process
    assert not (out / "parts").exists()
    assert json.loads((out / "done.json").read_text())["rows"] == 37
    assert main(common + ["--resume"]) == 0
    assert "nothing to do" in capsys.readouterr().err


def test_torchrun_ranks_give_the_bytes_of_one_process(tiny_run, corpus, one_process, tmp_path):
    out = tmp_path / "ranks"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                           "--master-port", "29517", "-m", "agentsum", "summarize", corpus, "--checkpoint",
                           str(tiny_run["checkpoint"]), "--part-rows", "5", "--out", str(out)],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert (out / "summaries.txt").read_text(encoding="utf-8") == one_process
    assert "across all shards" in done.stderr


def test_evaluate_sharded_scores_once_what_one_process_scores(tiny_run, corpus, tmp_path, capsys):
    common = ["evaluate", "--checkpoint", str(tiny_run["checkpoint"]), "--data", corpus, "--part-rows", "4"]
    assert main(common + ["--out", str(tmp_path / "one")]) == 0
    assert main(common + ["--out", str(tmp_path / "two"), "--shard", "1/2"]) == 0
    assert not (tmp_path / "two" / "scores.json").exists()
    assert main(common + ["--out", str(tmp_path / "two"), "--shard", "2/2"]) == 0
    one, two = (json.loads((tmp_path / d / "scores.json").read_text()) for d in ("one", "two"))
    for timing in ("seconds", "documents_per_s"):
        one.pop(timing), two.pop(timing)
    assert one == two and one["n"] == 37
    assert (tmp_path / "one" / "predictions.jsonl").read_bytes() == (tmp_path / "two" / "predictions.jsonl").read_bytes()


# ------------------------------------------------------------------------------------------ faults
def wait_for(condition, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def big_corpus(tmp_path_factory) -> str:
    return write_jsonl(tmp_path_factory.mktemp("jobs-big") / "big.jsonl", synthetic_rows(1200, seed=5))


def start_job(checkpoint, corpus: str, out: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-m", "agentsum", "--threads", "1", "summarize", corpus, "--checkpoint",
                             str(checkpoint), "--part-rows", "20", "--out", str(out), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env)


def test_a_job_sigkilled_mid_way_resumes_to_the_bytes_of_an_uninterrupted_run(tiny_run, big_corpus, tmp_path):
    whole = agentsum("summarize", big_corpus, "--checkpoint", str(tiny_run["checkpoint"]), "--part-rows", "20",
                     "--out", str(tmp_path / "whole"))
    assert whole.returncode == 0, whole.stderr
    out = tmp_path / "killed"
    job = start_job(tiny_run["checkpoint"], big_corpus, out)
    wait_for(lambda: len(list((out / "parts").glob("part-*.jsonl"))) >= 3 if (out / "parts").is_dir() else False)
    job.send_signal(signal.SIGKILL)
    job.wait()
    written = sorted(p.name for p in (out / "parts").glob("part-*.jsonl"))
    assert 3 <= len(written) < 60 and not (out / "summaries.txt").exists()
    again = agentsum("summarize", big_corpus, "--checkpoint", str(tiny_run["checkpoint"]), "--part-rows", "20",
                     "--out", str(out))
    assert again.returncode == 2 and "--resume continues it" in again.stderr  # the parts are not thrown away
    resumed = agentsum("summarize", big_corpus, "--checkpoint", str(tiny_run["checkpoint"]), "--part-rows", "20",
                       "--out", str(out), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    lines = (out / "summaries.txt").read_text(encoding="utf-8")
    assert lines == (tmp_path / "whole" / "summaries.txt").read_text(encoding="utf-8")
    assert len(lines.splitlines()) == 1200
    print(f"killed after {len(written)} of 60 parts; resumed: {resumed.stderr.strip().splitlines()[-1]}")


def test_a_second_job_in_one_directory_is_refused_naming_the_first_ones_host_and_pid(tiny_run, tmp_path):
    big_corpus = write_jsonl(tmp_path / "long.jsonl", synthetic_rows(40000, seed=6))  # the first job outlives the test
    out = tmp_path / "shared"
    first = start_job(tiny_run["checkpoint"], big_corpus, out)
    try:
        wait_for(lambda: (out / "locks" / "1-of-1.json").is_file())
        second = agentsum("summarize", big_corpus, "--checkpoint", str(tiny_run["checkpoint"]), "--part-rows", "20",
                          "--out", str(out), "--resume")
        assert second.returncode == 2
        assert f"host {socket.gethostname()}, pid {first.pid}" in second.stderr
        other = agentsum("summarize", big_corpus, "--checkpoint", str(tiny_run["checkpoint"]), "--part-rows", "20",
                         "--out", str(out), "--resume", "--shard", "2/2")  # shares the parts 1, 3, ...
        assert other.returncode == 2 and f"pid {first.pid}" in other.stderr
    finally:
        first.kill()
        first.wait()


def test_an_input_changed_under_a_resume_is_refused_naming_the_file(tiny_run, tmp_path):
    data = write_jsonl(tmp_path / "calls.jsonl", synthetic_rows(12))
    common = ["summarize", data, "--checkpoint", str(tiny_run["checkpoint"]), "--part-rows", "5",
              "--out", str(tmp_path / "o")]
    assert agentsum(*common, "--shard", "1/2").returncode == 0
    write_jsonl(tmp_path / "calls.jsonl", synthetic_rows(12, seed=9))
    done = agentsum(*common, "--shard", "2/2", "--resume")
    assert done.returncode == 2 and f"{data}: changed since the job" in done.stderr
    write_jsonl(tmp_path / "calls.jsonl", synthetic_rows(12))  # as it was: now the settings differ
    changed = agentsum(*common, "--shard", "2/2", "--resume", "--beam", "2")
    assert changed.returncode == 2 and "other settings" in changed.stderr


def test_a_malformed_row_is_named_and_skip_bad_goes_on_and_counts_it(tiny_run, tmp_path):
    rows = synthetic_rows(9)
    path = tmp_path / "bad.jsonl"
    lines = [json.dumps(r) for r in rows]
    lines[4] = '{"id": "doc4", "article": '  # cut off
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    common = ["summarize", str(path), "--checkpoint", str(tiny_run["checkpoint"]), "--part-rows", "3"]
    done = agentsum(*common, "--out", str(tmp_path / "stop"))
    assert done.returncode == 2 and f"{path}:5" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "stop" / "summaries.txt").exists()
    done = agentsum(*common, "--out", str(tmp_path / "go"), "--skip-bad")
    assert done.returncode == 0, done.stderr
    assert "skipped 1 bad line" in done.stderr
    assert len((tmp_path / "go" / "summaries.txt").read_text().splitlines()) == 8


def test_an_empty_input_gets_a_clear_message_not_an_empty_file(tiny_run, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    for command in (["summarize", str(empty), "--out", str(tmp_path / "s")],
                    ["evaluate", "--data", str(empty), "--out", str(tmp_path / "e")]):
        done = agentsum(*command, "--checkpoint", str(tiny_run["checkpoint"]))
        assert done.returncode == 2 and f"no examples in {empty}" in done.stderr, done.stderr
        out = Path(command[command.index("--out") + 1])
        assert not any(out.glob("*.txt")) and not (out / "done.json").exists() and not (out / "job.json").exists()


def test_job_options_without_out_are_refused(tiny_run, corpus, capsys):
    assert main(["summarize", corpus, "--checkpoint", str(tiny_run["checkpoint"]), "--shard", "1/2"]) == 2
    assert "--shard needs --out DIR" in capsys.readouterr().err
