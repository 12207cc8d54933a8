"""Long and bad transcripts through ``agentsum summarize`` with the shipped dialogue model: an empty
transcript, a 100,000-word text (file, stdin, JSON Lines, provenance) and binary junk each get a
clear message or a bounded summary, never a traceback; a text far longer than the model reads gets
a warning on stderr that names ``--model calls`` (a dialogue model) or only says what was read."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from agentsum.cli import main
from agentsum.data.dataset import kept_tokens, prepare
from agentsum.data.corpus import Example

torch.set_num_threads(1)

SENTENCES = ["Revenue grew 12% to $4.3 billion in the quarter.", "We raised our guidance for the full year.",
             "Analyst: Could you talk about margins?", "Operating margin was 21.5%, up 150 basis points."]
DIALOGUE = "Amanda: I baked cookies. Do you want some?\nJerry: Sure!\nAmanda: I'll bring you some tomorrow :-)\n"


def long_text(words: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    out, n = [], 0
    while n < words:
        sentence = rng.choice(SENTENCES)
        out.append(sentence)
        n += len(sentence.split())
    return " ".join(out)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("long_input")
    f = {}

    def put(name: str, data: bytes | str) -> None:
        (d / name).write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
        f[name] = str(d / name)

    put("empty.txt", b"")
    put("dialogue.txt", DIALOGUE)
    put("100k.txt", long_text(100_000))
    put("junk.bin", random.Random(0).randbytes(4000))  # not UTF-8
    put("junk_replaced.txt", random.Random(1).randbytes(4000).decode("utf-8", errors="replace"))
    put("rows.jsonl", "".join(json.dumps({"article": a}) + "\n" for a in (DIALOGUE, long_text(5_000))))
    return f


def run(argv: list[str], capsys, stdin: str | None = None, monkeypatch=None) -> tuple[int, str, str]:
    if stdin is not None:
        import io

        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8"))
    rc = main(["--threads", "1", *argv])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err, captured.err
    return rc, captured.out, captured.err


def test_an_empty_transcript_is_a_clean_error(files, capsys):
    rc, out, err = run(["summarize", files["empty.txt"]], capsys)
    assert rc == 2 and out == "" and "empty.txt: no words to summarize" in err, err


def test_a_100000_word_file_gives_one_summary_and_a_warning_naming_model_calls(files, capsys):
    rc, out, err = run(["summarize", files["100k.txt"]], capsys)
    assert rc == 0 and len(out.strip().splitlines()) == 1, (out, err)
    [warning] = [line for line in err.splitlines() if "warning" in line]
    assert warning.startswith("agentsum summarize: warning: ") and "100k.txt: 100,0" in warning
    assert "its first 500 tokens" in warning and "--model calls" in warning


def test_a_100000_word_text_on_stdin(files, capsys, monkeypatch):
    rc, out, err = run(["summarize", "-"], capsys, stdin=Path(files["100k.txt"]).read_text(), monkeypatch=monkeypatch)
    assert rc == 0 and out.strip(), err
    assert "<stdin>: 100,0" in err and "--model calls" in err


def test_provenance_of_a_100000_word_text_is_bounded(files, capsys):
    rc, out, err = run(["summarize", "--provenance", files["100k.txt"]], capsys)
    assert rc == 0, err
    [line] = out.splitlines()
    result = json.loads(line)
    assert all(0 <= w["source"] < 500 for w in result["words"])
    assert len(line) < 50_000  # the words of one summary, whatever the text's length


def test_only_the_long_row_of_a_jsonl_is_warned_about(files, capsys):
    rc, out, err = run(["summarize", files["rows.jsonl"]], capsys)
    assert rc == 0 and len(out.strip().splitlines()) == 2, err
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "rows.jsonl:2" in warnings[0], err


def test_a_dialogue_gets_no_warning(files, capsys):
    rc, out, err = run(["summarize", files["dialogue.txt"]], capsys)
    assert rc == 0 and out.strip() and "warning" not in err


def test_a_binary_file_names_the_file_and_line(files, capsys):
    rc, out, err = run(["summarize", files["junk.bin"]], capsys)
    assert rc == 2 and out == "" and "junk.bin:" in err and "invalid UTF-8" in err, err


def test_binary_junk_read_as_text_gives_a_summary_or_a_message(files, capsys):
    rc, out, err = run(["summarize", files["junk_replaced.txt"], "--provenance"], capsys)
    assert (rc == 0 and out.strip()) or (rc == 2 and "no words to summarize" in err), (rc, out, err)


def test_a_long_text_to_a_model_that_is_not_for_dialogues_does_not_name_model_calls(tiny_run, capsys):
    from agentsum import Summarizer

    summarizer = Summarizer(tiny_run["checkpoint"], device="cpu")
    read = kept_tokens(summarizer.config.data)  # 60
    assert not summarizer.config.data.dialogue
    assert summarizer.length_warning(long_text(4 * read - 10)) is None
    warning = summarizer.length_warning(long_text(10 * read), "a.txt")
    assert warning.startswith("a.txt: ") and f"its first {read} tokens" in warning and "--model" not in warning


def test_tokenization_stops_at_what_the_model_reads():
    """A 100,000-word article is split into the agents' tokens without tokenizing the rest of it."""
    from agentsum.checkpoint import read_checkpoint, default_checkpoint
    from agentsum.config import Config

    data = Config.from_dict(read_checkpoint(default_checkpoint(), mmap=True)["config"]).data
    doc = prepare(Example(id="x", article=long_text(100_000), summary="", origin="x"), data)
    assert 0 < sum(len(agent) for agent in doc.agents) <= kept_tokens(data) == 500


def peak_rss_mib(argv: list[str]) -> float:
    """The peak resident memory of ``agentsum ARGV`` run in a child process, in MiB."""
    code = ("import resource, sys; from agentsum.cli import main; rc = main(sys.argv[1:]); "
            "print('RSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code, "--threads", "1", *argv], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return int(done.stderr.rsplit("RSS ", 1)[1].split()[0]) / 1024  # ru_maxrss is in KiB on Linux


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB is Linux's")
def test_a_100000_word_text_costs_little_more_memory_than_a_dialogue(files):
    """Memory, not time: what a text far beyond the model's budget adds is the text and its words, not
    attention or tokens over all of it (measured: about 18 MiB for a 0.6 MB text)."""
    short = peak_rss_mib(["summarize", "--provenance", files["dialogue.txt"]])
    long = peak_rss_mib(["summarize", "--provenance", files["100k.txt"]])
    assert long - short < 64, (short, long)


def test_a_text_shorter_than_the_summaries_a_model_writes_is_warned_of(tiny_run):
    from agentsum import Summarizer

    summarizer = Summarizer(tiny_run["checkpoint"], device="cpu")
    summarizer.config.search.min_length = 12
    assert summarizer.length_warning(" ".join(["word"] * 12)) is None
    warning = summarizer.length_warning("Revenue rose 5% to $10 million.", "call.txt")
    assert warning.startswith("call.txt: 6 words, fewer than the 12 tokens") and "min_length_ratio" in warning
