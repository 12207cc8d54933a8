"""Bad input everywhere: through the command line (``agentsum.cli.main``) and through ``POST /v1/summarize``.

Every case must give either a correct result or a clear error that names what is wrong (for corpora:
``file:line`` and the field), with exit status 0 or 2 and never a Python traceback; the API answers 2xx or
4xx with a message, never 5xx. The CLI runs in-process (fast: no interpreter start per case); an escaping
exception is turned into the traceback text a user would have seen, so a failure shows it.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import traceback
from pathlib import Path

import httpx
import pytest
import torch
from conftest import synthetic_rows, write_jsonl

torch.set_num_threads(1)

BIG_ARTICLE = "The cat saw a dog near the park. " * 31_000  # about 1 MB
MIXED_SCRIPTS = "Hello мир مرحبا 世界 こんにちは 안녕 😀🎉 the cat saw a dog near the river. Ελληνικά עברית हिन्दी."
CONTROL = ("the\x00 cat\x07 saw\x1b[31m a\x08 dog\x0c near\x7f the\x85 park\u200b.\r\n"
           "the owl\x1f met a fox .")
WRONG_FIELD = ["wrong_field.jsonl:1", "'article' missing", "fields present: id, text, summary"]
PUNCTUATION = "!!! ... ??? ,,, ;;; --- !!! (( )) [[ ]] ''' \"\" ... !?"


# ------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------


def run_cli(argv: list[str], stdin: bytes | None = None) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``agentsum ARGV`` run in-process, as a shell would see them."""
    from agentsum.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_stdin = sys.stdin
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(["--threads", "1", *argv])
            except SystemExit as e:  # what the interpreter does with SystemExit(code)
                if e.code is None or isinstance(e.code, int):
                    rc = e.code or 0
                else:
                    print(e.code, file=sys.stderr)
                    rc = 1
            except BaseException:  # noqa: BLE001 - an uncaught exception: the user sees a traceback, status 1
                traceback.print_exc()
                rc = 1
    finally:
        sys.stdin = saved_stdin
    return rc, out.getvalue(), err.getvalue()


def assert_clean_error(rc: int, err: str, *needles: str) -> None:
    """Exit status 2, no traceback, and every needle in the message."""
    assert "Traceback" not in err, err
    assert rc == 2, f"exit status {rc} (expected 2); stderr:\n{err}"
    for needle in needles:
        assert needle in err, f"{needle!r} not in the error message:\n{err}"


def assert_ok(rc: int, out: str, err: str) -> None:
    assert "Traceback" not in err, err
    assert rc == 0, f"exit status {rc}; stderr:\n{err}"


@pytest.fixture(scope="module")
def files(tiny_run, tmp_path_factory) -> dict[str, str]:
    """Bad inputs next to each other in one directory: name -> path."""
    d = tmp_path_factory.mktemp("bad_input")
    rows = [json.loads(line) for line in Path(tiny_run["test"]).read_text(encoding="utf-8").splitlines()]
    lines = [json.dumps(r) for r in rows]
    f: dict[str, str] = {}

    def put(name: str, data: bytes | str) -> None:
        p = d / name
        p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
        f[name] = str(p)

    # article files for `summarize`
    put("empty.txt", b"")
    put("whitespace.txt", "  \n\t \r\n   \n")
    put("big.txt", BIG_ARTICLE)
    put("invalid_utf8.txt", b"The cat saw a dog.\nThe owl \xff\xfe met a fox.\n")
    put("punctuation.txt", PUNCTUATION)
    put("mixed_scripts.txt", MIXED_SCRIPTS)
    put("control.txt", CONTROL)
    put("zero_width.txt", "\u200b\u200b\ufeff\u2060")
    # corpora
    put("binary_line.jsonl", ("\n".join(lines[:2]) + "\n").encode()
        + b'{"article": "the cat \xff\xfe\x00\x01 saw", "summary": "the cat ."}\n'
        + ("\n".join(lines[2:]) + "\n").encode())
    put("broken.jsonl", "\n".join(lines[:3]) + '\n{"article": "the cat saw", "summ\n' + "\n".join(lines[3:]) + "\n")
    put("wrong_field.jsonl", "".join(json.dumps({"id": r["id"], "text": r["article"], "summary": r["summary"]}) + "\n"
                                     for r in rows))
    put("summary_not_string.jsonl", "\n".join(lines[:1]) + '\n{"article": "the cat saw a dog .", "summary": 42}\n')
    put("empty.jsonl", b"")
    put("blank_lines.jsonl", "\n\n   \n")
    put("no_words_row.jsonl", "\n".join(lines[:1]) + '\n{"article": "\u200b\u200b", "summary": "x"}\n')
    long_summary = [{"id": f"long{i}", "article": "The cat saw a dog.",
                     "summary": ("the cat saw a dog near the big old park by the river .\n"
                                 "then the owl met a fox and the hen chased a pig near the school .\n") * 4}
                    for i in range(6)]
    f["long_summary.jsonl"] = write_jsonl(d / "long_summary.jsonl", long_summary)
    f["train.jsonl"] = write_jsonl(d / "train.jsonl", synthetic_rows(8, seed=3))
    f["missing.jsonl"] = str(d / "does_not_exist.jsonl")
    f["missing.txt"] = str(d / "does_not_exist.txt")
    # configs
    put("typo_data.yaml", "data:\n  agents: 3\n  max_artcle_tokens: 60\ntrain:\n  max_steps: 2\n")
    put("typo_train.yaml", "train:\n  max_step: 2\n")
    put("typo_section.yaml", "dta:\n  agents: 3\n")
    put("typo_model.yaml", f"data:\n  train: {f['train.jsonl']}\n  vocab_size: 50\nmodel:\n  hiden_size: 16\n"
                           "train:\n  max_steps: 1\n")
    put("not_yaml.yaml", "data: [unclosed\n  - : :\n")
    # checkpoints
    good = Path(tiny_run["checkpoint"]).read_bytes()
    put("truncated.pt", good[:1000])
    put("text.pt", "this is a text file, not a checkpoint\n")
    put("empty.pt", b"")
    state = lambda: torch.load(tiny_run["checkpoint"], map_location="cpu", weights_only=True)  # noqa: E731
    for name, change in {
        "vocab_tail_dropped.pt": lambda s: s.__setitem__("vocab", s["vocab"][:-10]),
        "vocab_head_dropped.pt": lambda s: s.__setitem__("vocab", s["vocab"][4:]),
        "vocab_duplicate.pt": lambda s: s.__setitem__("vocab", s["vocab"][:-1] + [s["vocab"][5]]),
        "no_vocab.pt": lambda s: s.pop("vocab"),
        "model_type.pt": lambda s: s["config"]["model"].__setitem__("type", "no_such_model"),
    }.items():
        s = state()
        change(s)
        torch.save(s, d / name)
        f[name] = str(d / name)
    f["checkpoint"] = str(tiny_run["checkpoint"])
    f["dir"] = str(d)
    return f


# ------------------------------------------------------------------------------------------
# summarize: article files and stdin
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["empty.txt", "whitespace.txt", "zero_width.txt"])
def test_summarize_article_without_words_is_a_clean_error(files, name):
    """A clean error like every other input error: ``agentsum summarize: error: FILE: ...``, exit status 2."""
    rc, out, err = run_cli(["summarize", "--checkpoint", files["checkpoint"], files[name]])
    assert_clean_error(rc, err, name, "no words to summarize")
    assert out == ""


def test_summarize_empty_stdin_is_a_clean_error(files):
    rc, out, err = run_cli(["summarize", "--checkpoint", files["checkpoint"], "-"], stdin=b"")
    assert_clean_error(rc, err, "no words to summarize")


def test_summarize_one_megabyte_article(files):
    """A 1 MB article, far beyond the model's input budget, is summarized like any other: one line, exit 0."""
    rc, out, err = run_cli(["summarize", "--checkpoint", files["checkpoint"], files["big.txt"]])
    assert_ok(rc, out, err)
    assert out.strip() and len(out.splitlines()) == 1


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_summarize_invalid_utf8_names_file_and_line(files, source):
    if source == "file":
        rc, out, err = run_cli(["summarize", "--checkpoint", files["checkpoint"], files["invalid_utf8.txt"]])
        assert_clean_error(rc, err, "invalid_utf8.txt:2", "invalid UTF-8")
    else:
        data = Path(files["invalid_utf8.txt"]).read_bytes()
        rc, out, err = run_cli(["summarize", "--checkpoint", files["checkpoint"], "-"], stdin=data)
        assert_clean_error(rc, err, "<stdin>:2", "invalid UTF-8")


def test_cli_and_api_refuse_a_text_with_no_words_with_one_message(files, api):
    from agentsum.data.dataset import NO_WORDS

    rc, out, err = run_cli(["summarize", "--checkpoint", files["checkpoint"], files["punctuation.txt"]])
    assert_clean_error(rc, err, f"punctuation.txt: {NO_WORDS}")
    r = api.post("/v1/summarize", json={"text": PUNCTUATION})
    assert r.status_code == 422 and r.json()["error"] == f"text: {NO_WORDS}", r.text


@pytest.mark.parametrize("name", ["mixed_scripts.txt", "control.txt"])
def test_summarize_odd_text_gives_a_summary(files, name):
    rc, out, err = run_cli(["summarize", "--checkpoint", files["checkpoint"], files[name],
                            "--beam", "2", "--max-length", "12"])
    assert_ok(rc, out, err)
    assert len(out.splitlines()) == 1 and out.strip()
    assert "\x00" not in out and "\x1b" not in out  # control characters never reach the output


def test_summarize_jsonl_rows(files):
    rc, out, err = run_cli(["summarize", "--checkpoint", files["checkpoint"], files["long_summary.jsonl"],
                            "--beam", "1", "--max-length", "8"])
    assert_ok(rc, out, err)
    assert len(out.splitlines()) == 6


@pytest.mark.parametrize("name,needles", [
    pytest.param("binary_line.jsonl", ["binary_line.jsonl:3", "invalid UTF-8"], id="binary_line.jsonl"),
    pytest.param("broken.jsonl", ["broken.jsonl:4", "invalid JSON"], id="broken.jsonl"),
    pytest.param("wrong_field.jsonl", WRONG_FIELD, id="wrong_field.jsonl"),
    pytest.param("empty.jsonl", ["no examples in", "empty.jsonl"], id="empty.jsonl"),
    pytest.param("blank_lines.jsonl", ["no examples in", "blank_lines.jsonl"], id="blank_lines.jsonl"),
    pytest.param("missing.jsonl", ["does_not_exist.jsonl", "no such file"], id="missing.jsonl"),
    pytest.param("missing.txt", ["does_not_exist.txt", "no such file"], id="missing.txt"),
    pytest.param("no_words_row.jsonl", ["no_words_row.jsonl", "no words to summarize"], id="no_words_row.jsonl"),
])
def test_summarize_bad_input_files(files, name, needles):
    rc, out, err = run_cli(["summarize", "--checkpoint", files["checkpoint"], files[name]])
    assert_clean_error(rc, err, *needles)


# ------------------------------------------------------------------------------------------
# Corpora: evaluate and lead3
# ------------------------------------------------------------------------------------------

CORPUS_ERRORS = [
    pytest.param("binary_line.jsonl", ["binary_line.jsonl:3", "invalid UTF-8"], id="binary_line.jsonl"),
    pytest.param("broken.jsonl", ["broken.jsonl:4", "invalid JSON"], id="broken.jsonl"),
    pytest.param("wrong_field.jsonl", WRONG_FIELD, id="wrong_field.jsonl"),
    pytest.param("summary_not_string.jsonl", ["summary_not_string.jsonl:2", "'summary' is int"],
                 id="summary_not_string.jsonl"),
    pytest.param("empty.jsonl", ["no examples in", "empty.jsonl"], id="empty.jsonl"),
    pytest.param("missing.jsonl", ["does_not_exist.jsonl", "no such file"], id="missing.jsonl"),
]


@pytest.mark.parametrize("command", ["lead3", "evaluate"])
@pytest.mark.parametrize("name,needles", CORPUS_ERRORS)
def test_corpus_errors_name_file_line_and_field(files, command, name, needles):
    extra = ["--checkpoint", files["checkpoint"], "--out", files["dir"] + "/eval"] if command == "evaluate" else []
    rc, out, err = run_cli([command, "--data", files[name], *extra])
    assert_clean_error(rc, err, *needles)


@pytest.mark.parametrize("command", ["lead3", "evaluate"])
@pytest.mark.parametrize("name", ["broken.jsonl", "binary_line.jsonl"])
def test_skip_bad_counts_the_bad_line(files, command, name):
    extra = (["--checkpoint", files["checkpoint"], "--out", files["dir"] + f"/eval-{name}", "--beam", "1"]
             if command == "evaluate" else [])
    rc, out, err = run_cli([command, "--data", files[name], "--skip-bad", *extra])
    assert_ok(rc, out, err)
    assert f"{Path(files[name])}: skipped 1 bad line(s)" in err
    assert f"{name}:" in err.split("first:")[1]  # the reason names the line
    assert "ROUGE-1" in out and "(F1, 6 documents)" in out


# ------------------------------------------------------------------------------------------
# train: corpora and configs
# ------------------------------------------------------------------------------------------


def _train(files, tmp_path, *sets: str, config: str = "tiny") -> tuple[int, str, str]:
    return run_cli(["train", "--config", config, "--run-dir", str(tmp_path / "run"),
                    "--set", "train.max_steps=2", "--set", "train.valid_every=1", "--set", "train.log_every=1",
                    "--set", "train.tensorboard=false", *[x for s in sets for x in ("--set", s)]])


def test_train_on_summaries_longer_than_their_articles(files, tmp_path):
    rc, out, err = _train(files, tmp_path, f"data.train={files['long_summary.jsonl']}",
                          f"data.valid={files['long_summary.jsonl']}")
    assert_ok(rc, out, err)
    state = torch.load(tmp_path / "run" / "checkpoints" / "best.pt", map_location="cpu", weights_only=True)
    assert state["step"] == 2
    assert all(torch.isfinite(t).all() for t in state["model"].values())


@pytest.mark.parametrize("name,needles", [
    pytest.param("broken.jsonl", ["broken.jsonl:4", "invalid JSON"], id="broken.jsonl"),
    pytest.param("binary_line.jsonl", ["binary_line.jsonl:3", "invalid UTF-8"], id="binary_line.jsonl"),
    pytest.param("wrong_field.jsonl", WRONG_FIELD, id="wrong_field.jsonl"),
    pytest.param("empty.jsonl", ["no examples in", "empty.jsonl"], id="empty.jsonl"),
    pytest.param("missing.jsonl", ["does_not_exist.jsonl", "no such file"], id="missing.jsonl"),
])
def test_train_corpus_errors(files, tmp_path, name, needles):
    rc, out, err = _train(files, tmp_path, f"data.train={files[name]}", f"data.valid={files['train.jsonl']}")
    assert_clean_error(rc, err, *needles)
    assert not (tmp_path / "run" / "checkpoints" / "best.pt").exists()


def test_train_skip_bad_counts_the_bad_line(files, tmp_path):
    rc, out, err = _train(files, tmp_path, f"data.train={files['broken.jsonl']}",
                          f"data.valid={files['train.jsonl']}", "data.skip_bad=true")
    assert_ok(rc, out, err)
    assert "skipped 1 bad line(s)" in out + err and "broken.jsonl:4" in out + err


@pytest.mark.parametrize("name,needles", [
    pytest.param("typo_data.yaml", ["typo_data.yaml", "max_artcle_tokens", "max_article_tokens"], id="typo_data.yaml"),
    pytest.param("typo_train.yaml", ["typo_train.yaml", "max_step", "max_steps"], id="typo_train.yaml"),
    pytest.param("typo_section.yaml", ["typo_section.yaml", "dta", "expected data, model, train, search"],
                 id="typo_section.yaml"),
    pytest.param("typo_model.yaml", ["hiden_size", "hidden_size"], id="typo_model.yaml"),
    pytest.param("not_yaml.yaml", ["not_yaml.yaml", "invalid YAML"], id="not_yaml.yaml"),
])
def test_config_typos_are_named(files, tmp_path, name, needles):
    rc, out, err = run_cli(["train", "--config", files[name], "--run-dir", str(tmp_path / "run")])
    assert_clean_error(rc, err, *needles)


def test_unknown_override_key_is_named(files, tmp_path):
    rc, out, err = _train(files, tmp_path, "train.max_stpes=3")
    assert_clean_error(rc, err, "max_stpes")


# ------------------------------------------------------------------------------------------
# Broken checkpoints
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,needles", [
    pytest.param("truncated.pt", ["truncated.pt", "is truncated or damaged"], id="truncated.pt"),
    pytest.param("text.pt", ["text.pt", "not an agentsum checkpoint: not a PyTorch file"], id="text.pt"),
    pytest.param("empty.pt", ["empty.pt", "is empty (0 bytes)"], id="empty.pt"),
    pytest.param("missing.pt", ["missing.pt", "not found"], id="missing.pt"),
    pytest.param("no_vocab.pt", ["no_vocab.pt", "missing ['vocab']"], id="no_vocab.pt"),
    pytest.param("vocab_tail_dropped.pt", ["vocab_tail_dropped.pt", "do not match"], id="vocab_tail_dropped"),
    # The vocabulary itself is malformed (specials gone, a duplicate) or the model type unknown: the
    # ValueError of Vocabulary() / build_model() must become a CheckpointError naming the file.
    pytest.param("vocab_head_dropped.pt", ["vocab_head_dropped.pt", "vocabulary"], id="vocab_head_dropped.pt"),
    pytest.param("vocab_duplicate.pt", ["vocab_duplicate.pt", "duplicate"], id="vocab_duplicate.pt"),
    pytest.param("model_type.pt", ["model_type.pt", "no_such_model"], id="model_type.pt"),
])
def test_bad_checkpoint_is_a_clean_error(files, name, needles):
    path = files.get(name, files["dir"] + "/" + name)
    article = files["mixed_scripts.txt"]
    rc, out, err = run_cli(["summarize", "--checkpoint", path, article])
    assert_clean_error(rc, err, *needles)
    assert out == ""


# ------------------------------------------------------------------------------------------
# The same texts through the API
# ------------------------------------------------------------------------------------------

API_TEXTS = {
    "empty": "",
    "whitespace": "  \n\t \r\n ",
    "one_megabyte": BIG_ARTICLE,
    "punctuation": PUNCTUATION,
    "mixed_scripts": MIXED_SCRIPTS,
    "control": CONTROL,
    "control_only": "\x00\x01\x02\x07\x1b",
    "zero_width": "\u200b\u200b\ufeff\u2060",
    "lone_surrogates": "the cat \ud800 saw \udfff a dog .",
    "only_lone_surrogates": "\udc00 \ud800",
    "emoji_only": "😀😀😀 🎉",
    "combining_marks": "e\u0301\u0301\u0301 \u0300\u0300 a\u20dd",
    "bidi_controls": "\u202e\u2066 the cat saw a dog \u2069\u202c",
    "one_huge_word": "x" * 200_000,
    "many_sentences": ". " * 100_000,
}


@pytest.fixture(scope="module")
def api(tiny_run):
    from agentsum.serve.app import background_server, create_app

    app = create_app(tiny_run["checkpoint"], max_body_bytes=3_000_000, max_texts=8, batch_wait_ms=0, threads=1)
    with background_server(app) as url, httpx.Client(base_url=url, timeout=60) as c:
        yield c


def _post_raw(client: httpx.Client, body: bytes) -> httpx.Response:
    return client.post("/v1/summarize", content=body, headers={"content-type": "application/json"})


def _assert_answered(r: httpx.Response) -> None:
    assert r.status_code < 500, r.text[:1000]
    if r.status_code >= 400:
        message = r.json()["error"]
        assert isinstance(message, str) and len(message) > 10, r.text
    else:
        assert r.status_code == 200
        for s in r.json()["summaries"]:
            assert s["tokens"] and s["summary"] == "\n".join(s["sentences"])


@pytest.mark.parametrize("attention", [False, True])
@pytest.mark.parametrize("name", list(API_TEXTS))
def test_api_bad_texts_never_5xx(api, name, attention):
    # json.dumps escapes lone surrogates (\ud800), as a browser's JSON.stringify does
    body = json.dumps({"text": API_TEXTS[name], "attention": attention, "max_length": 12}).encode()
    r = _post_raw(api, body)
    _assert_answered(r)
    if name in ("empty", "whitespace", "control_only", "zero_width", "only_lone_surrogates", "punctuation"):
        assert r.status_code == 422, r.text
        assert "text" in r.json()["error"]
    if name in ("one_megabyte", "mixed_scripts", "control", "lone_surrogates"):
        assert r.status_code == 200, r.text


def test_api_bad_texts_in_one_list_name_the_bad_index(api):
    texts = [API_TEXTS["mixed_scripts"], API_TEXTS["control"], API_TEXTS["zero_width"]]
    r = api.post("/v1/summarize", json={"texts": texts})
    assert r.status_code == 422 and "texts[2]" in r.json()["error"], r.text
    r = api.post("/v1/summarize", json={"texts": texts[:2] + [API_TEXTS["punctuation"]], "attention": True})
    assert r.status_code == 422 and r.json()["error"].startswith("texts[2]: no words to summarize"), r.text
    r = api.post("/v1/summarize", json={"texts": texts[:2], "attention": True})
    assert r.status_code == 200 and len(r.json()["summaries"]) == 2, r.text


@pytest.mark.parametrize("body", [
    b'{"text": "the cat \xff\xfe saw a dog ."}',
    b'{"text": "\xc0\xaf the cat"}',
    b"\x00",
    b"\xf5{\x01e\x1bk\xdd\x8d<",  # a body from the schemathesis negative run (test_api_fuzz.py)
], ids=["ff_fe", "overlong", "nul_byte", "fuzzed_bytes"])
def test_api_undecodable_body_names_the_problem(api, body):
    """docs/serving.md: 400 when the body "is not valid JSON (or not UTF-8)"; the message must say which."""
    r = _post_raw(api, body)
    assert r.status_code == 400, r.text
    message = r.json()["error"]
    assert "UTF-8" in message or "not valid JSON" in message, message


@pytest.mark.parametrize("body", [
    b'{"text": "the cat", "beam_size": NaN}',
    b'{"text": "the cat", "beam_size": 1e400}',
    b'{"text": "the cat", "beam_size": 100000000000000000000000000000000000}',
    b'{"text": "the cat", "max_length": -Infinity}',
    b'{"text": ' + b"[" * 3000 + b"]" * 3000 + b"}",
    b'{"text": "the cat"} trailing',
    b'{"text": "the \\u0000 cat \\ud800 saw \\udfff"}',
    b"\xef\xbb\xbf" + b'{"text": "the cat saw a dog ."}',
    b'{"text": "the cat \xed\xa0\x80 saw"}',  # a UTF-8-encoded surrogate (json.loads lets it pass)
], ids=["nan", "inf", "huge_int", "neg_infinity", "deep_nesting", "trailing", "escaped_nul_surrogate", "bom",
        "encoded_surrogate"])
def test_api_odd_json_never_5xx(api, body):
    _assert_answered(_post_raw(api, body))


def test_train_without_a_corpus_or_with_an_odd_batch_is_a_clean_error(tmp_path):
    rc, _, err = run_cli(["train", "--config", "tiny", "--run-dir", str(tmp_path / "run")])
    assert_clean_error(rc, err, "no data.train corpus", "--set data.train=PATH")
    rc, _, err = run_cli(["train", "--config", "tiny", "--run-dir", str(tmp_path / "run"),
                          "--set", f"data.train={tmp_path / 'x.jsonl'}", "--set", "train.batch_size=3",
                          "--set", "train.accumulate=2"])
    assert_clean_error(rc, err, "train.batch_size 3 must be divisible")


def test_a_claim_constraint_the_vocabulary_cannot_honour_names_the_option(tiny_run, tmp_path, capsys):
    """--figure-grammar for a model whose vocabulary holds no numeral (the tiny model's words are
    animals, places and verbs; a Chinese model's are characters): a clear error naming the option, not
    a summary. A bad --min-length-ratio names its option too."""
    from agentsum.cli import main

    text = tmp_path / "call.txt"
    text.write_text("Revenue rose 5% to $10 million in the third quarter.\n", encoding="utf-8")
    assert main(["summarize", "--checkpoint", str(tiny_run["checkpoint"]), "--figure-grammar", "on", str(text)]) == 2
    assert "--figure-grammar: search.figure_grammar: the model's vocabulary holds no numeral" in capsys.readouterr().err
    assert main(["summarize", "--checkpoint", str(tiny_run["checkpoint"]), "--min-length-ratio", "x", str(text)]) == 2
    assert "--min-length-ratio" in capsys.readouterr().err
