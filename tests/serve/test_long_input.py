"""Long and bad transcripts through ``POST /v1/summarize`` with the shipped dialogue model and the
server's default limits: an empty transcript, a 12,000-word earnings call, a 100,000-word text and
a line of binary junk each get a clear message or a bounded summary, never a 5xx; a text far longer
than the model reads carries a warning that names ``--model calls``."""

from __future__ import annotations

import json
import random

import httpx
import pytest
import torch

from agentsum.data.dataset import kept_tokens
from conftest import SHARED_DATA

torch.set_num_threads(1)

ECTSUM = [SHARED_DATA / "ectsum" / "train.jsonl", SHARED_DATA / "ectsum" / "valid.jsonl"]
DIALOGUE = "Amanda: I baked cookies. Do you want some?\nJerry: Sure!\nAmanda: I'll bring you some tomorrow :-)"
COMPANIES = ["Acme", "Globex", "Initech", "Umbrella", "Stark"]
METRICS = ["revenue", "operating income", "free cash flow", "gross margin", "adjusted EPS", "net sales"]


def call_transcript(words: int, seed: int = 0) -> str:
    """An earnings-call-like transcript of about ``words`` words: prepared remarks and a Q&A,
    with figures in the forms calls write them ($4.3 billion, 12%, 1.25)."""
    rng = random.Random(seed)
    company = rng.choice(COMPANIES)
    lines = [f"Operator: Good day and welcome to the {company} fourth quarter 2021 earnings conference call."]
    count = len(lines[0].split())
    while count < words:
        metric = rng.choice(METRICS)
        line = rng.choice([
            f"Chief Financial Officer: {metric.capitalize()} grew {rng.randint(2, 40)}% year over year to "
            f"${rng.randint(1, 99)}.{rng.randint(0, 9)} billion, driven by strong demand in our cloud and "
            f"services segments and continued pricing discipline across the portfolio.",
            f"Chief Executive Officer: We are raising our full-year guidance for {metric} to a range of "
            f"${rng.randint(1, 9)}.{rng.randint(10, 99)} to ${rng.randint(10, 19)}.{rng.randint(10, 99)} per "
            f"share, reflecting the momentum we saw in the quarter.",
            f"Analyst: Thanks for taking my question. Could you talk about how {metric} trended through "
            f"the quarter and what you expect for the first half of next year?",
            f"Chief Financial Officer: Sure. {metric.capitalize()} was {rng.randint(10, 60)}.{rng.randint(0, 9)}% "
            f"of sales, up {rng.randint(10, 300)} basis points, and we expect it to stay in that range.",
        ])
        lines.append(line)
        count += len(line.split())
    return "\n".join(lines)


def junk_line(seed: int = 0, size: int = 4000) -> str:
    """Random bytes read as text the way a careless client reads a binary file."""
    return random.Random(seed).randbytes(size).decode("utf-8", errors="replace")


@pytest.fixture(scope="module")
def served():
    """The shipped dialogue model behind the server's default limits (as `agentsum serve` starts it)."""
    import argparse

    from agentsum.checkpoint import default_checkpoint
    from agentsum.serve.app import background_server, create_app
    from agentsum.serve.options import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    defaults = parser.parse_args([])
    app = create_app(default_checkpoint(), max_body_bytes=defaults.max_body_bytes, max_texts=defaults.max_texts,
                     batch_wait_ms=0, threads=1)
    with background_server(app) as url, httpx.Client(base_url=url, timeout=120) as client:
        yield client, app, defaults


def post(client: httpx.Client, payload: dict) -> tuple[httpx.Response, int]:
    body = json.dumps(payload).encode()
    return client.post("/v1/summarize", content=body, headers={"content-type": "application/json"}), len(body)


def test_an_empty_transcript_is_refused_with_a_message(served):
    client, _, _ = served
    for text in ("", "   \n\t"):
        r, _ = post(client, {"text": text})
        assert r.status_code == 422 and "'text' is empty or only whitespace" in r.json()["error"], r.text


def test_a_12000_word_call_fits_the_default_body_limit(served):
    client, _, defaults = served
    text = call_transcript(12_000)
    assert 12_000 <= len(text.split()) < 12_100
    r, size = post(client, {"text": text, "attention": True, "provenance": True})
    assert 60_000 < size < 100_000 and size * 10 < defaults.max_body_bytes, size  # about 71 KB
    assert r.status_code == 200, r.text
    summary = r.json()["summaries"][0]
    assert summary["summary"].strip()
    [warning] = summary["warnings"]
    assert warning.startswith("text: 12,0") and "--model calls" in warning


def largest_ectsum_call() -> str | None:
    found = None
    for path in ECTSUM:
        if not path.is_file():
            continue
        with path.open(encoding="utf-8") as f:
            for line in f:
                article = json.loads(line)["article"]
                if found is None or len(article.split()) > len(found.split()):
                    found = article
    return found


@pytest.mark.skipif(not any(p.is_file() for p in ECTSUM), reason="ECTSum is not here")
def test_the_largest_ectsum_call_is_summarized(served):
    client, _, defaults = served
    text = largest_ectsum_call()
    r, size = post(client, {"text": text})
    assert size < defaults.max_body_bytes / 10, size
    assert r.status_code == 200 and r.json()["summaries"][0]["summary"].strip(), r.text


def test_a_100000_word_text_gives_a_bounded_summary_with_a_warning(served):
    client, app, _ = served
    text = call_transcript(100_000, seed=1)
    read = kept_tokens(app.state.summarizer.config.data)  # 500 for the shipped dialogue model
    r, size = post(client, {"text": text, "attention": True, "provenance": True})
    assert size < 1_000_000
    assert r.status_code == 200, r.text[:500]
    summary = r.json()["summaries"][0]
    assert summary["summary"].strip() and len(summary["tokens"]) <= app.state.summarizer.config.search.max_length
    attention = summary["attention"]
    assert sum(len(agent) for agent in attention["source_tokens"]) <= read
    assert sum(len(agent) for agent in attention["source_words"]) <= read
    assert len(attention["per_token"]) == len(summary["tokens"])
    assert all(len(t["source"]) <= 5 for t in attention["per_token"])
    assert all(0 <= w["source"] < read for w in summary["provenance"]["words"])
    assert len(r.content) < 200_000, len(r.content)  # the answer does not grow with the text
    [warning] = summary["warnings"]
    assert "100,0" in warning and f"its first {read} tokens" in warning and "--model calls" in warning


def test_only_the_long_text_of_a_list_is_warned_about(served):
    client, _, _ = served
    r, _ = post(client, {"texts": [DIALOGUE, call_transcript(3_000)]})
    assert r.status_code == 200, r.text
    short, long = r.json()["summaries"]
    assert short["warnings"] == []
    assert len(long["warnings"]) == 1 and long["warnings"][0].startswith("texts[1]: ")


def test_a_transcript_under_four_times_what_the_model_reads_has_no_warning(served):
    client, app, _ = served
    read = kept_tokens(app.state.summarizer.config.data)
    r, _ = post(client, {"text": call_transcript(3 * read)})
    assert r.status_code == 200 and r.json()["summaries"][0]["warnings"] == [], r.text


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("options", [{}, {"attention": True, "provenance": True}])
def test_binary_junk_gets_a_summary_or_a_message(served, seed, options):
    client, _, _ = served
    for text in (junk_line(seed), DIALOGUE + "\n" + junk_line(seed, 300) + "\nJerry: See you!"):
        r, _ = post(client, {"text": text, **options})
        assert r.status_code in (200, 422), r.text[:500]
        if r.status_code == 422:
            assert "no words to summarize" in r.json()["error"], r.text
        else:
            assert r.json()["summaries"][0]["summary"].strip()


def test_binary_junk_as_the_body_is_a_400(served):
    client, _, _ = served
    r = client.post("/v1/summarize", content=random.Random(3).randbytes(2000),
                    headers={"content-type": "application/json"})
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"], r.text


def test_the_schema_publishes_the_warnings_and_no_text_length_limit(served):
    client, _, _ = served
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert schemas["Summary"]["properties"]["warnings"]["items"] == {"type": "string"}
    assert "warnings" not in schemas["Summary"].get("required", [])  # a client may ignore it
    text = schemas["SummarizeRequest"]["properties"]["text"]
    assert "maxLength" not in text and "maxLength" not in schemas["SummarizeRequest"]["properties"]["texts"]["items"]
