"""The HTTP service against a real uvicorn server on a free loopback port (agentsum.serve.app)."""

from __future__ import annotations

import argparse
import itertools
import json
import threading

import httpx
import pytest
import torch
from conftest import synthetic_rows

from agentsum.checkpoint import shipped_path
from agentsum.data.dataset import DataSource

MAX_TEXTS = 8
MAX_BODY = 200_000


@pytest.fixture(scope="module")
def app(tiny_run):
    from agentsum.serve.app import create_app

    return create_app(tiny_run["checkpoint"], max_body_bytes=MAX_BODY, max_batch=16, batch_wait_ms=50,
                      max_texts=MAX_TEXTS, device="cpu")


@pytest.fixture(scope="module")
def client(app):
    from agentsum.serve.app import background_server

    with background_server(app) as url, httpx.Client(base_url=url, timeout=60) as c:
        yield c


def articles(n: int, seed: int = 7) -> list[str]:
    return [r["article"] for r in synthetic_rows(n, seed=seed)]


# ------------------------------------------------------------------------------------------
# Summaries
# ------------------------------------------------------------------------------------------


def test_summarize_one_text(client):
    r = client.post("/v1/summarize", json={"text": articles(1)[0], "min_length": 6})
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"summaries", "model", "elapsed_ms"}
    assert body["model"]["checkpoint"] == "best.pt" and body["model"]["step"] == 30
    assert body["elapsed_ms"] > 0
    (s,) = body["summaries"]
    assert len(s["tokens"]) >= 6
    assert s["attention"] is None
    assert s["summary"] == "\n".join(s["sentences"])
    assert len(s["words"]) == len(s["tokens"])
    assert [w.lower() for w in s["words"]] == s["tokens"]  # the same tokens, cased for display
    assert s["sentences"][0][0] == s["sentences"][0][0].upper()  # sentences start with a capital or digit
    from agentsum.data.readable import detokenize

    assert " ".join(s["sentences"]) == detokenize(s["words"])


def test_summarize_list_keeps_order_and_equals_single_requests(client):
    texts = articles(3, seed=21)
    settings = {"min_length": 5, "beam_size": 2}
    r = client.post("/v1/summarize", json={"texts": texts, **settings})
    assert r.status_code == 200, r.text
    batched = [s["tokens"] for s in r.json()["summaries"]]
    single = [client.post("/v1/summarize", json={"text": t, **settings}).json()["summaries"][0]["tokens"]
              for t in texts]
    assert batched == single


def test_decoding_settings_apply(client):
    text = articles(1, seed=3)[0]
    r = client.post("/v1/summarize", json={"text": text, "beam_size": 1, "min_length": 4, "max_length": 4,
                                           "block_trigrams": False})
    assert r.status_code == 200, r.text
    assert len(r.json()["summaries"][0]["tokens"]) == 4


def test_repeat_controls_apply(client):
    """no_repeat_ngram_size=1 leaves no word twice in a summary; a repetition penalty changes what a
    model that repeats itself writes; both are refused out of range."""
    texts = articles(3, seed=8)
    base = {"texts": texts, "beam_size": 2, "min_length": 12, "max_length": 12}
    free = [s["tokens"] for s in client.post("/v1/summarize", json={**base, "no_repeat_ngram_size": 0}).json()["summaries"]]
    assert any(len(set(t)) < len(t) for t in free)  # the tiny model repeats words
    r = client.post("/v1/summarize", json={**base, "no_repeat_ngram_size": 1})
    assert r.status_code == 200, r.text
    assert all(len(set(s["tokens"])) == len(s["tokens"]) for s in r.json()["summaries"])
    penalized = client.post("/v1/summarize", json={**base, "no_repeat_ngram_size": 0, "repetition_penalty": 3.0})
    assert penalized.status_code == 200, penalized.text
    assert [s["tokens"] for s in penalized.json()["summaries"]] != free
    for bad in ({"no_repeat_ngram_size": -1}, {"repetition_penalty": 0}, {"repetition_penalty": 11}):
        r = client.post("/v1/summarize", json={"text": texts[0], **bad})
        assert r.status_code == 422 and next(iter(bad)) in r.text


def test_attention_payload(client):
    r = client.post("/v1/summarize", json={"texts": articles(2, seed=5), "min_length": 8, "attention": True})
    assert r.status_code == 200, r.text
    for s in r.json()["summaries"]:
        attn = s["attention"]
        A = attn["agents"]
        assert A == 3 and len(attn["source_tokens"]) == A
        # the source as written: the same tokens in their original casing, agent by agent
        assert [[w.lower() for w in agent] for agent in attn["source_words"]] == attn["source_tokens"]
        assert len(attn["per_token"]) == len(s["tokens"]) >= 8
        for step in attn["per_token"]:
            assert len(step["agent"]) == A
            assert sum(step["agent"]) == pytest.approx(1.0, abs=1e-3)
            assert 1 <= len(step["source"]) <= 5
            weights = [e["weight"] for e in step["source"]]
            assert weights == sorted(weights, reverse=True)
            for e in step["source"]:
                assert 0 <= e["agent"] < A
                assert 0 <= e["index"] < len(attn["source_tokens"][e["agent"]])
                assert e["word"] == attn["source_tokens"][e["agent"]][e["index"]]
                assert 0 < e["weight"] <= step["agent"][e["agent"]] + 1e-4  # l * g <= g
        spans = attn["sentences"]
        assert len(spans) == len(s["sentences"])
        assert spans[0]["start"] == 0 and spans[-1]["end"] == len(s["tokens"])
        for a, b in itertools.pairwise(spans):
            assert a["end"] == b["start"]
        for span in spans:
            rows = [attn["per_token"][j]["agent"] for j in range(span["start"], span["end"])]
            expected = [sum(r[a] for r in rows) / len(rows) for a in range(A)]
            assert span["agent"] == pytest.approx(expected, abs=1e-4)


def test_attention_equals_decoding_time_attention(app, client):
    """The teacher-forced re-run gives the attention search saw while decoding."""
    from agentsum.data.dataset import to_batch
    from agentsum.decoding.search import search

    text = articles(1, seed=9)[0]
    r = client.post("/v1/summarize", json={"text": text, "min_length": 8, "attention": True})
    attn = r.json()["summaries"][0]["attention"]
    summarizer = app.state.summarizer
    docs = summarizer.prepare([text])
    batch = to_batch(docs, summarizer.vocab, with_targets=False)
    config = summarizer.config.search
    config = type(config)(**{**config.__dict__, "min_length": 8})
    with torch.no_grad():
        hyps = search(summarizer.model, batch, config)
    assert len(hyps.tokens[0]) == len(attn["per_token"])
    decoded = hyps.agent_attention[0].tolist()
    S = batch.src_ids.size(2)
    for t, step in enumerate(attn["per_token"]):
        assert step["agent"] == pytest.approx(decoded[t], abs=1e-4)
        a, i = divmod(hyps.copy_positions[0][t], S)  # search's argmax of l * g is our top-1 weight
        top = step["source"][0]
        assert (top["agent"], top["index"]) == (a, i) or top["weight"] == pytest.approx(
            next((e["weight"] for e in step["source"] if (e["agent"], e["index"]) == (a, i)), -1), abs=1e-4)


# ------------------------------------------------------------------------------------------
# Bad requests: 4xx with a message, never a crash
# ------------------------------------------------------------------------------------------

BAD_JSON = [
    ({"text": ""}, 422, "empty"),
    ({"text": "   \n\t "}, 422, "whitespace"),
    ({"text": 42}, 422, "text: Input should be a valid string"),
    ({"texts": "one string"}, 422, "texts: Input should be a valid list"),
    ({"texts": ["fine", 3]}, 422, "texts[1]"),
    ({"texts": ["the cat saw a dog .", "  "]}, 422, "texts[1] is empty"),
    ({"texts": []}, 422, "texts"),
    ({}, 422, "exactly one of 'text'"),
    ({"text": "a", "texts": ["b"]}, 422, "exactly one of 'text'"),
    ({"article": "the cat"}, 422, "article: Extra inputs are not permitted"),
    ({"texts": ["the cat ."] * (MAX_TEXTS + 1)}, 422, f"too many texts: {MAX_TEXTS + 1}"),
    ({"text": "the cat .", "beam_size": 0}, 422, "beam_size"),
    ({"text": "the cat .", "beam_size": 17}, 422, "beam_size"),
    ({"text": "the cat .", "beam_size": "3"}, 422, "beam_size: Input should be a valid integer"),
    ({"text": "the cat .", "max_length": 0}, 422, "max_length"),
    ({"text": "the cat .", "max_length": 501}, 422, "max_length"),
    ({"text": "the cat .", "min_length": -1}, 422, "min_length"),
    ({"text": "the cat .", "min_length": 9, "max_length": 5}, 422, "min_length (9) is larger than max_length (5)"),
    ({"text": "the cat .", "min_length": 100}, 422, "default max_length"),
    ({"text": "the cat .", "block_trigrams": "yes"}, 422, "block_trigrams"),
    ({"text": "the cat .", "attention": 1}, 422, "attention"),
    ({"text": "\u200b\u200b\ufeff"}, 422, "text: no words to summarize"),
    ({"texts": ["the cat saw a dog .", "\u200b"]}, 422, "texts[1]: no words to summarize"),
    ([1, 2], 422, "dictionary"),
    ("just a string", 422, "dictionary"),
    (None, 422, "dictionary"),
]


@pytest.mark.parametrize("payload,status,message", BAD_JSON, ids=[f"json{i}" for i in range(len(BAD_JSON))])
def test_bad_json_requests(client, payload, status, message):
    r = client.post("/v1/summarize", content=json.dumps(payload), headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    assert message in r.json()["error"]


@pytest.mark.parametrize("content,headers,status,message", [
    (b'{"text": "the cat', {"content-type": "application/json"}, 400, "not valid JSON"),
    (b"text=the+cat", {"content-type": "application/x-www-form-urlencoded"}, 422, "Content-Type: application/json"),
    (b'{"text": "the cat ."}', {"content-type": "text/plain"}, 422, "Content-Type: application/json"),
    (b"", {"content-type": "application/json"}, 422, "body is missing"),
    (b"\xff\xfe{}", {"content-type": "application/json"}, 400, "not valid JSON"),
])
def test_non_json_bodies(client, content, headers, status, message):
    r = client.post("/v1/summarize", content=content, headers=headers)
    assert r.status_code == status, r.text
    assert message in r.json()["error"]


def test_oversized_body_is_413(client):
    text = "The cat saw a dog near the park. " * (MAX_BODY // 30)
    r = client.post("/v1/summarize", json={"text": text})
    assert r.status_code == 413
    assert f"{MAX_BODY:,} bytes" in r.json()["error"]


def test_oversized_streamed_body_is_413(client):
    """No Content-Length (chunked): the middleware counts the bytes it receives."""
    def chunks():
        yield b'{"text": "'
        for _ in range(MAX_BODY // 10_000 + 5):
            yield b"the cat . " * 1000
        yield b'"}'

    r = client.post("/v1/summarize", content=chunks(), headers={"content-type": "application/json"})
    assert "content-length" not in r.request.headers
    assert r.status_code == 413
    assert "larger than the limit" in r.json()["error"]


def test_wrong_method_and_unknown_path(client):
    r = client.get("/v1/summarize")
    assert r.status_code == 405 and r.json()["error"]
    r = client.get("/v2/nothing")
    assert r.status_code == 404 and r.json()["error"]


def test_unexpected_error_is_500_and_the_service_survives(app, client, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("simulated failure")

    monkeypatch.setattr(app.state.batcher, "infer", broken)
    r = client.post("/v1/summarize", json={"text": articles(1)[0]})
    assert r.status_code == 500
    assert "simulated failure" in r.json()["error"]
    monkeypatch.undo()
    r = client.post("/v1/summarize", json={"text": articles(1)[0]})
    assert r.status_code == 200
    assert client.get("/health").json() == {"status": "ok"}


# ------------------------------------------------------------------------------------------
# Other endpoints
# ------------------------------------------------------------------------------------------


def test_health(client):
    r = client.get("/health")
    assert r.status_code == 200 and r.json() == {"status": "ok"}


def test_model_info(client, tiny_run):
    info = client.get("/v1/model").json()
    state = torch.load(tiny_run["checkpoint"], map_location="cpu", weights_only=True)
    assert info["step"] == state["step"] == 30
    selection = info["selection"]
    assert (selection["metric"], selection["value"]) == (state["selection"]["metric"], state["selection"]["best"])
    assert selection["label"] == f"selection: validation NLL {state['selection']['best']:.3f} per token during training"
    assert "lowest negative log-likelihood per summary token" in selection["description"]
    assert info["vocab_size"] == len(state["vocab"])
    assert info["parameters"] == sum(t.numel() for t in state["model"].values())
    assert info["device"] == "cpu"  # the client fixture asks for the CPU
    assert info["agents"] == 3 and info["model_type"] == "dca" and info["language"] == "en"
    assert info["config"]["model"]["hidden_size"] == 16
    assert "train" not in info["config"]["data"] and "run_dir" not in info["config"]["train"]  # no server paths
    assert info["search_defaults"]["beam_size"] == 3
    assert info["limits"]["max_texts"] == MAX_TEXTS and info["limits"]["max_body_bytes"] == MAX_BODY
    assert {"batches", "documents", "requests", "largest_batch"} <= set(info["batching"])


def _selection_config(dialogue: bool, valid: dict | None, valid_rouge_docs: int = 100):
    from agentsum.config import Config

    config = Config()
    config.data.dialogue = dialogue
    config.data.valid = None if valid is None else DataSource(**valid)
    config.train.valid_rouge_docs = valid_rouge_docs
    return config


def test_the_selection_score_is_named_for_what_it_measures():
    """A ROUGE-L selection score is greedy rougeLsum on a validation sample during training, not the
    beam-search ROUGE of `agentsum evaluate`: the label and description say so, with the sample's size."""
    from agentsum.serve.app import describe_selection

    rouge = {"metric": "valid_rougeL", "best": 36.117228}
    shipped_like = describe_selection(rouge, _selection_config(True, {"path": "valid.jsonl"}, 200),
                                      {"steps": [200, 300, 400]})
    assert shipped_like["value"] == 36.117228 and shipped_like["metric"] == "valid_rougeL"
    assert shipped_like["label"] == "selection: greedy ROUGE-L 36.1 on 200 validation dialogues during training"
    assert "(rougeLsum) of greedy summaries of the first 200 validation dialogues (rows 0-199" in \
        shipped_like["description"]
    assert "mean of the checkpoints at steps 200, 300, 400: the score is the one recorded in the first of them" \
        in shipped_like["description"]
    # a validation range smaller than train.valid_rouge_docs: only its rows were decoded
    ranged = describe_selection(rouge, _selection_config(False, {"path": "v.jsonl", "start": 50, "end": 80}))
    assert ranged["label"] == "selection: greedy ROUGE-L 36.1 on 30 validation documents during training"
    assert "(rows 50-79" in ranged["description"] and "mean of" not in ranged["description"]
    nll = describe_selection({"metric": "valid_nll", "best": 2.71828}, _selection_config(False, None))
    assert nll["label"] == "selection: validation NLL 2.718 per token during training"
    for missing in ({}, {"metric": "valid_nll", "best": None}, {"metric": "valid_nll", "best": float("nan")}):
        assert describe_selection(missing, _selection_config(False, None))["label"] is None


def test_openapi_schema_and_offline_docs(client):
    schema = client.get("/openapi.json").json()
    assert {"/v1/summarize", "/v1/model", "/health"} <= set(schema["paths"])
    post = schema["paths"]["/v1/summarize"]["post"]
    assert {"200", "413", "422"} <= set(post["responses"])
    assert "SummarizeRequest" in schema["components"]["schemas"]
    docs = client.get("/docs")
    assert docs.status_code == 200 and "/openapi.json" in docs.text
    assert "<script" not in docs.text and "http://" not in docs.text and "https://" not in docs.text
    assert client.get("/redoc").status_code == 404


def test_web_page_is_served_and_self_contained(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    for needle in ('id="article"', 'id="summarize"', 'id="summary"', 'id="source"', 'id="file"'):
        assert needle in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    for asset in ("/static/app.js", "/static/style.css", "/static/favicon.svg"):
        r = client.get(asset)
        assert r.status_code == 200, asset
        text = r.text.replace('xmlns="http://www.w3.org/2000/svg"', "")  # a namespace name, not a fetch
        assert "http://" not in text and "https://" not in text, f"{asset} refers to another site"
    assert "http://" not in page.text and "https://" not in page.text


# ------------------------------------------------------------------------------------------
# Concurrency and batching
# ------------------------------------------------------------------------------------------


def test_concurrent_requests_are_batched(app, client):
    n = 16
    texts = articles(n, seed=33)
    before = client.get("/v1/model").json()["batching"]
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def worker(i: int) -> None:
        with httpx.Client(base_url=str(client.base_url), timeout=60) as c:
            barrier.wait()
            results[i] = c.post("/v1/summarize", json={"text": texts[i], "min_length": 3})

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert all(r is not None and r.status_code == 200 for r in results), [getattr(r, "text", r) for r in results]
    assert all(len(r.json()["summaries"][0]["tokens"]) >= 3 for r in results)
    after = client.get("/v1/model").json()["batching"]
    documents = after["documents"] - before["documents"]
    batches = after["batches"] - before["batches"]
    assert documents == n
    assert batches < n, f"{n} concurrent requests ran as {batches} model calls"
    assert after["largest_batch"] >= 2


def test_create_app_rejects_a_bad_checkpoint(tmp_path):
    from agentsum.serve.app import create_app
    from agentsum.checkpoint import CheckpointError

    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError):
        create_app(bad)


def test_cli_parser():
    from agentsum.serve.options import add_parser

    parser = argparse.ArgumentParser(prog="agentsum")
    parser.add_argument("--threads", type=int)
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["serve", "--checkpoint", "x.pt", "--port", "9000", "--max-batch", "8",
                              "--batch-wait-ms", "5", "--max-body-bytes", "1000", "--threads", "2"])
    assert (args.command, args.checkpoint, args.host, args.port) == ("serve", "x.pt", "127.0.0.1", 9000)
    assert (args.max_batch, args.batch_wait_ms, args.max_body_bytes, args.serve_threads) == (8, 5, 1000, 2)


def test_requests_with_different_settings_are_not_mixed(client):
    """Concurrent requests with different decoding settings each get their own settings."""
    texts = articles(6, seed=44)
    lengths = [3, 5, 3, 5, 3, 5]
    barrier = threading.Barrier(len(texts))
    results: list = [None] * len(texts)

    def worker(i: int) -> None:
        with httpx.Client(base_url=str(client.base_url), timeout=60) as c:
            barrier.wait()
            results[i] = c.post("/v1/summarize", json={"text": texts[i], "min_length": lengths[i],
                                                       "max_length": lengths[i]})

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert [len(r.json()["summaries"][0]["tokens"]) for r in results] == lengths


def test_full_queue_answers_503(tiny_run):
    from agentsum.serve.app import background_server, create_app

    app = create_app(tiny_run["checkpoint"], max_texts=1, max_pending=1, batch_wait_ms=400)
    n = 4
    barrier = threading.Barrier(n)
    results: list = [None] * n
    with background_server(app) as url:
        def worker(i: int) -> None:
            with httpx.Client(base_url=url, timeout=60) as c:
                barrier.wait()
                results[i] = c.post("/v1/summarize", json={"text": articles(1)[0]})

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        codes = sorted(r.status_code for r in results)
        assert 200 in codes and 503 in codes and set(codes) <= {200, 503}
        busy = next(r for r in results if r.status_code == 503)
        assert "busy" in busy.json()["error"] and busy.headers["retry-after"] == "1"
        assert httpx.get(url + "/v1/model").json()["batching"]["rejected_busy"] >= 1


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU (scripts/gpu_check.sh serves on one too)")
def test_attention_on_a_gpu_matches_the_cpu(tiny_run):
    """Search and the attention re-run read one batch on the model's device."""
    from agentsum.serve.model import ServedModel

    texts = articles(2, seed=5)
    results = {}
    for device in ("cpu", "cuda"):
        served = ServedModel(tiny_run["checkpoint"], device)
        config = served.summarizer.search_config(min_length=8)
        results[device] = served.infer(served.prepare(texts), config, attention=True)
    for cpu, gpu in zip(results["cpu"], results["cuda"]):
        assert gpu["tokens"] == cpu["tokens"]
        for a, b in zip(cpu["attention"]["per_token"], gpu["attention"]["per_token"]):
            assert b["agent"] == pytest.approx(a["agent"], abs=1e-3)


def test_blank_is_what_a_json_schema_pattern_calls_whitespace():
    """The schema's \\S is ECMA-262's: U+001F is not whitespace to it, so it is not blank here either
    (such a text is refused later, for having no words)."""
    import re

    from agentsum.serve.schemas import ECMA_SPACE, blank

    assert blank("") and blank(" \t\n\u00a0\u3000\ufeff") and not blank("\x1f") and not blank(" a ")
    # every ECMA space but the byte-order mark is a space to Python too
    assert {ch for ch in ECMA_SPACE if not re.fullmatch(r"\s", ch)} == {"\ufeff"}


def test_auto_agents_attention_covers_each_documents_own_agents(tiny_run, tmp_path):
    """With data.agents: auto, a short and a long text decoded in one batch each get attention over
    their own agents only: the batch's padding agents are not shown."""
    from agentsum.checkpoint import read_checkpoint, save_checkpoint
    from agentsum.serve.model import ServedModel

    state = read_checkpoint(tiny_run["checkpoint"])
    state["config"]["data"].update(agents="auto", agent_tokens=10, max_article_tokens=60)
    path = tmp_path / "auto.pt"
    save_checkpoint(state, path)
    served = ServedModel(path, "cpu")
    short, long = articles(1, seed=3)[0].split(". ")[0] + ".", " ".join(articles(3, seed=4))
    docs = served.prepare([short, long])
    results = served.infer(docs, served.summarizer.search_config(min_length=4), attention=True)  # one batch
    counts = [len(doc.agents) for doc in docs]
    assert counts[0] < counts[1]  # the long text needs more agents of 10 tokens
    for result, n in zip(results, counts):
        attn = result["attention"]
        assert attn["agents"] == n and len(attn["source_tokens"]) == n
        for step in attn["per_token"]:
            assert len(step["agent"]) == n
            assert sum(step["agent"]) == pytest.approx(1.0, abs=1e-3)


def test_numbers_from_source_applies_and_is_checked(client, monkeypatch):
    """The request field reaches the search with the model's vocabulary (the default: the model's,
    off for the tiny preset); a value that is not a boolean is refused naming the field."""
    import agentsum.summarizer

    seen, real = [], agentsum.summarizer.search

    def spy(model, batch, config, **kw):
        seen.append((config.numbers_from_source, kw.get("vocab") is not None))
        return real(model, batch, config, **kw)

    monkeypatch.setattr(agentsum.summarizer, "search", spy)
    text = "The cat saw 12 dogs near the park. The owl met 3,000 foxes near the river."
    for value in (True, False, None):
        body = {"text": text} if value is None else {"text": text, "numbers_from_source": value}
        r = client.post("/v1/summarize", json=body)
        assert r.status_code == 200, r.text
    assert seen == [(True, True), (False, True), (False, True)]
    for bad in ("yes", 1, "on"):
        r = client.post("/v1/summarize", json={"text": text, "numbers_from_source": bad})
        assert r.status_code == 422 and "numbers_from_source" in r.text, (bad, r.text)


def test_provenance_payload(client):
    r = client.post("/v1/summarize", json={"texts": articles(2, seed=5), "min_length": 6, "provenance": True})
    assert r.status_code == 200, r.text
    for s in r.json()["summaries"]:
        origin = s["provenance"]
        assert s["attention"] is None and origin is not None
        assert [w["word"] for w in origin["words"]] == s["words"]  # one entry per summary word, aligned
        assert [w["token"] for w in origin["words"]] == s["tokens"]
        for w in origin["words"]:
            assert 0 <= w["p_gen"] <= 1 and 0 <= w["copy_mass"] <= 1 and w["agent"] >= 0
            if w["copied"]:
                assert w["source_word"].lower() == w["token"]
        assert [x["text"] for x in origin["sentences"]] == s["sentences"]
        assert origin["sentences"][0]["start"] == 0 and origin["sentences"][-1]["end"] == len(s["words"])
    plain = client.post("/v1/summarize", json={"text": articles(1)[0]}).json()["summaries"][0]
    assert plain["provenance"] is None


def test_provenance_for_a_hundred_texts_within_the_limit_and_a_clear_refusal_beyond(tiny_run):
    from agentsum.serve.app import background_server, create_app

    texts = [r["article"].split(". ")[0] + "." for r in synthetic_rows(100, seed=9)]
    app = create_app(tiny_run["checkpoint"], max_texts=100, max_batch=32, device="cpu")
    with background_server(app) as url, httpx.Client(base_url=url, timeout=300) as c:
        r = c.post("/v1/summarize", json={"texts": texts, "provenance": True, "beam_size": 2})
        assert r.status_code == 200, r.text
        summaries = r.json()["summaries"]
        assert len(summaries) == 100 and all(len(s["provenance"]["words"]) == len(s["words"]) for s in summaries)
        r = c.post("/v1/summarize", json={"texts": texts + texts[:1], "provenance": True})
        assert r.status_code == 422 and "too many texts: 101 (at most 100 per request)" in r.json()["error"]


def test_provenance_from_a_model_without_a_copy_mechanism_is_a_422_naming_the_option(tiny_run, tmp_path):
    from agentsum.checkpoint import read_checkpoint, save_checkpoint
    from agentsum.serve.app import background_server, create_app

    state = read_checkpoint(tiny_run["checkpoint"])
    state["config"]["model"]["pointer"] = "none"
    state["model"] = {k: v for k, v in state["model"].items() if not k.startswith("gen_")}
    save_checkpoint(state, tmp_path / "no_pointer.pt")
    with background_server(create_app(tmp_path / "no_pointer.pt", device="cpu")) as url, \
            httpx.Client(base_url=url, timeout=60) as c:
        r = c.post("/v1/summarize", json={"text": articles(1)[0], "provenance": True})
        assert r.status_code == 422 and r.json()["error"].startswith("provenance: this checkpoint writes every word")
        assert c.post("/v1/summarize", json={"text": articles(1)[0]}).status_code == 200


# ------------------------------------------------------------------------------------------
# The page's example
# ------------------------------------------------------------------------------------------


def test_the_example_is_a_call_for_the_calls_model_a_chat_for_the_dialogue_model_else_news(tiny_run):
    """GET /v1/example (what "Try an example" loads) gives a text of the kind the served model was
    trained on: the shipped calls model gets an earnings call with revenue, EPS, margin and guidance."""
    from fastapi.testclient import TestClient

    from agentsum.checkpoint import default_checkpoint
    from agentsum.serve.app import create_app
    from agentsum.serve.page import WEB_DIR

    with TestClient(create_app(tiny_run["checkpoint"], batch_wait_ms=0, device="cpu")) as c:
        news = c.get("/v1/example").json()
    assert news == {"kind": "news", "text": (WEB_DIR / "example-news.txt").read_text().strip()}
    with TestClient(create_app(default_checkpoint(), batch_wait_ms=0, device="cpu")) as c:
        chat = c.get("/v1/example").json()
    assert chat["kind"] == "dialogue" and all(": " in line for line in chat["text"].split("\n"))
    if not shipped_path("calls").exists():
        pytest.skip("the calls model is not in this installation")
    with TestClient(create_app(shipped_path("calls"), batch_wait_ms=0, device="cpu")) as c:
        call = c.get("/v1/example").json()
        assert c.get("/v1/model").json()["checkpoint"] == "ectsum-en.pt"
        r = c.post("/v1/summarize", json={"text": call["text"], "beam_size": 1, "min_length": 5, "max_length": 25})
    assert call["kind"] == "call" and call != news
    lines = call["text"].split("\n")
    assert len(lines) >= 15 and not any(line.startswith(("Amanda", "The city")) for line in lines)
    text = call["text"].lower()
    for figure in ("revenue", "earnings per share", "margin", "expect", "quarter", "$", "%"):
        assert figure in text, figure
    assert r.status_code == 200 and r.json()["summaries"][0]["tokens"]


def test_a_model_trained_on_the_calls_corpus_gets_the_call_wherever_its_file_lies(tiny_run, tmp_path):
    import dataclasses

    from agentsum.checkpoint import read_checkpoint
    from agentsum.config import Config
    from agentsum.serve.page import example_kind

    config = Config.from_dict(read_checkpoint(tiny_run["checkpoint"])["config"])
    assert example_kind(config, tiny_run["checkpoint"]) == "news"
    ectsum = dataclasses.replace(config, data=dataclasses.replace(config.data, train=DataSource("data/ECTSum/train.jsonl")))
    assert example_kind(ectsum, tmp_path / "runs" / "best.pt") == "call"
    dialogue = dataclasses.replace(ectsum, data=dataclasses.replace(ectsum.data, dialogue=True))
    assert example_kind(dialogue, tmp_path / "best.pt") == "dialogue"


@pytest.mark.skipif(not shipped_path("calls").exists(), reason="the calls model is not in this installation")
def test_the_calls_models_numbers_come_back_with_their_claims(tiny_run):
    """Summarizing the page's example call with the calls model: the API keeps every field of each
    number's record (claim, metric, context_occurrences; the response model used to drop them), and
    the record is number_links' for the summary and the source."""
    from fastapi.testclient import TestClient

    from agentsum.data.number_links import number_links
    from agentsum.serve.app import create_app
    from agentsum.serve.page import example_text

    text = example_text("call")
    with TestClient(create_app(shipped_path("calls"), batch_wait_ms=0, device="cpu")) as c:
        r = c.post("/v1/summarize", json={"text": text, "beam_size": 2, "min_length": 10, "max_length": 40,
                                          "provenance": True, "attention": True})
    assert r.status_code == 200, r.text
    (summary,) = r.json()["summaries"]
    source = [t for agent in summary["attention"]["source_tokens"] for t in agent]
    expected = number_links(summary["tokens"], source)
    records = {j: w["number"] for j, w in enumerate(summary["provenance"]["words"]) if w["number"] is not None}
    assert records == expected and records, summary["summary"]
    for record in records.values():
        assert record["claim"] in ("in_context", "elsewhere", "absent")
        assert set(record) == {"supported", "occurrences", "claim", "metric", "context_occurrences"}


def test_claim_constraints_apply_and_are_checked(client, monkeypatch):
    """figure_grammar, source_periods and numbers_in_context reach the search; a vocabulary that cannot
    honour one is a 422 naming it (the tiny model's words are animals, places and verbs: no numeral,
    no period); a value that is not a boolean is refused naming the field."""
    import agentsum.decoding.search
    import agentsum.serve.model
    import agentsum.summarizer

    text = "The cat saw 12 dogs near the park in the third quarter. The owl met 3,000 foxes near the river."
    for name in ("figure_grammar", "source_periods", "numbers_in_context"):
        r = client.post("/v1/summarize", json={"text": text, name: True})
        assert r.status_code == 422 and f"search.{name}" in r.text, (name, r.text)
        r = client.post("/v1/summarize", json={"text": text, name: "yes"})
        assert r.status_code == 422 and name in r.text, (name, r.text)
    # with the vocabulary check and the constraints themselves stubbed, the request's values reach search
    seen, real = [], agentsum.summarizer.search

    def spy(model, batch, config, **kw):
        seen.append((config.figure_grammar, config.source_periods, config.numbers_in_context))
        return real(model, batch, config, **kw)

    monkeypatch.setattr(agentsum.summarizer, "search", spy)
    monkeypatch.setattr(agentsum.serve.model, "check_vocabulary", lambda vocab, **options: None)
    monkeypatch.setattr(agentsum.decoding.search, "_constraints", lambda *args: None)
    r = client.post("/v1/summarize", json={"text": text, "figure_grammar": True, "numbers_in_context": False})
    assert r.status_code == 200, r.text
    assert seen[-1] == (True, False, False)


def test_attribution_rerank_reaches_the_search_and_a_chat_is_summarized_with_it(client, monkeypatch):
    """attribution_rerank: true reaches the search config (and the rerank runs on a chat's beam);
    left out, the model's setting (off) holds; a value that is not a boolean is a 422 naming it."""
    import agentsum.decoding.search
    import agentsum.summarizer

    chat = "Amanda: I baked cookies. Do you want some?\nJerry: Sure!\nAmanda: I'll bring you tomorrow :-)"
    seen, reranked, real, real_rerank = [], [], agentsum.summarizer.search, agentsum.decoding.search.rerank

    def spy(model, batch, config, **kw):
        seen.append(config.attribution_rerank)
        return real(model, batch, config, **kw)

    def spy_rerank(hyps, batch, vocab, **kw):
        reranked.append((len(hyps), kw["attribution"]))
        return real_rerank(hyps, batch, vocab, **kw)

    monkeypatch.setattr(agentsum.summarizer, "search", spy)
    monkeypatch.setattr(agentsum.decoding.search, "rerank", spy_rerank)
    r = client.post("/v1/summarize", json={"text": chat, "attribution_rerank": True, "beam_size": 3})
    assert r.status_code == 200 and r.json()["summaries"][0]["tokens"], r.text
    assert seen == [True] and reranked == [(1, True)]
    r = client.post("/v1/summarize", json={"text": chat, "beam_size": 3})
    assert r.status_code == 200 and seen[-1] is False and reranked == [(1, True)]
    r = client.post("/v1/summarize", json={"text": chat, "attribution_rerank": "yes"})
    assert r.status_code == 422 and "attribution_rerank" in r.text


def test_role_names_reach_the_rerank_with_a_scorer_of_the_edits(client, monkeypatch):
    """role_names: true reaches the rerank with a scorer of edits (the search's forced scores);
    left out, the model's setting (off) holds and no rerank runs; a non-boolean is a 422."""
    import agentsum.decoding.search

    chat = "Amanda: I baked cookies. Do you want some?\nJerry: Sure!\nAmanda: I'll bring you tomorrow :-)"
    reranked, real_rerank = [], agentsum.decoding.search.rerank

    def spy_rerank(hyps, batch, vocab, **kw):
        reranked.append(callable(kw["scorer"]))
        return real_rerank(hyps, batch, vocab, **kw)

    monkeypatch.setattr(agentsum.decoding.search, "rerank", spy_rerank)
    r = client.post("/v1/summarize", json={"text": chat, "role_names": True, "beam_size": 3})
    assert r.status_code == 200 and r.json()["summaries"][0]["tokens"], r.text
    assert reranked == [True]
    r = client.post("/v1/summarize", json={"text": chat, "beam_size": 3})
    assert r.status_code == 200 and reranked == [True]  # off: no rerank at all
    r = client.post("/v1/summarize", json={"text": chat, "role_names": 1})
    assert r.status_code == 422 and "role_names" in r.text


def test_lm_weight_needs_a_summary_language_model_and_rescores_with_one(tiny_run, tmp_path):
    """/v1/model says whether the model has a summary LM; lm_weight > 0 with a beam and without one is
    a 422 naming it and `agentsum fit-lm`; with one written beside the checkpoint, the request is summarized;
    lm_weight out of range or not a number is a 422."""
    import shutil

    from agentsum.cli import main
    from agentsum.serve.app import background_server, create_app

    checkpoint = tmp_path / "model.pt"
    shutil.copy(tiny_run["checkpoint"], checkpoint)
    text = articles(1)[0]
    with background_server(create_app(checkpoint, batch_wait_ms=0)) as url, httpx.Client(base_url=url, timeout=60) as c:
        assert c.get("/v1/model").json()["summary_lm"] is False
        r = c.post("/v1/summarize", json={"text": text, "lm_weight": 0.1, "beam_size": 3})
        assert r.status_code == 422 and "lm_weight" in r.text and "agentsum fit-lm" in r.text, r.text
        assert c.post("/v1/summarize", json={"text": text, "lm_weight": 0}).status_code == 200
        # greedy search has no n-best to rescore: as on the CLI, the weight is not refused there
        assert c.post("/v1/summarize", json={"text": text, "lm_weight": 0.1, "beam_size": 1}).status_code == 200
        for bad in (-1, 11, "0.1", True):
            r = c.post("/v1/summarize", json={"text": text, "lm_weight": bad})
            assert r.status_code == 422 and "lm_weight" in r.text, (bad, r.text)
    assert main(["fit-lm", "--checkpoint", str(checkpoint), "--data", tiny_run["train"]]) == 0
    with background_server(create_app(checkpoint, batch_wait_ms=0)) as url, httpx.Client(base_url=url, timeout=60) as c:
        assert c.get("/v1/model").json()["summary_lm"] is True
        r = c.post("/v1/summarize", json={"text": text, "lm_weight": 0.1, "beam_size": 3})
        assert r.status_code == 200 and r.json()["summaries"][0]["tokens"], r.text
