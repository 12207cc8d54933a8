"""A bounded, self-stopping load test of the HTTP service on loopback (the plan of benchmarks/speed/load_service.py).

50 concurrent clients send a fixed plan of mixed requests (single texts, lists, some with attention, about a
fifth invalid) to a real uvicorn server running the tiny checkpoint in this process. Every request must be
answered (no connection error, no timeout), never with a 5xx; valid ones get 200 with one summary per text,
invalid ones their 4xx with a message. The server's memory (VmRSS of this process) must stay bounded and the
whole run must finish in bounded time (timeouts on every request and a deadline on the run).
"""

from __future__ import annotations

import collections
import gc
import importlib.util
import sys
import time

import httpx
import pytest
import torch
from conftest import REPO

CLIENTS = 50
REQUESTS = 400
MAX_TEXTS = 8
REQUEST_TIMEOUT_S = 30.0
DEADLINE_S = 60.0  # no request starts later than this; the run ends within DEADLINE_S + REQUEST_TIMEOUT_S
MAX_RSS_GROWTH_MB = 300

_spec = importlib.util.spec_from_file_location(
    "load_service", REPO / "benchmarks" / "speed" / "load_service.py")
load_service = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("load_service", load_service)  # dataclasses look their module up there
_spec.loader.exec_module(load_service)


@pytest.fixture(scope="module")
def server(tiny_run):
    from agentsum.serve.app import background_server, create_app

    torch.set_num_threads(1)
    app = create_app(tiny_run["checkpoint"], max_batch=16, batch_wait_ms=10, max_texts=MAX_TEXTS, threads=1)
    with background_server(app) as url:
        yield url


def test_plan_is_mixed_and_deterministic():
    plan = load_service.make_plan(REQUESTS, seed=0, max_texts=MAX_TEXTS)
    assert [p.body for p in plan] == [p.body for p in load_service.make_plan(REQUESTS, seed=0, max_texts=MAX_TEXTS)]
    kinds = collections.Counter(p.kind.split(":")[0] for p in plan)
    assert {"single", "list", "single+attention", "list+attention", "invalid"} <= set(kinds), kinds
    assert 0.1 < kinds["invalid"] / len(plan) < 0.3
    assert {p.expect for p in plan} == {200, 400, 422}


def test_load_every_request_answered_no_5xx_bounded_memory(server):
    plan = load_service.make_plan(REQUESTS, seed=0, max_texts=MAX_TEXTS)
    warm = load_service.make_plan(16, seed=1, invalid=0, attention=0.5, max_texts=MAX_TEXTS)
    load_service.run_load(server, warm, 8, timeout_s=REQUEST_TIMEOUT_S, deadline_s=DEADLINE_S)
    gc.collect()
    rss_before = load_service.rss_mb()

    started = time.monotonic()
    result = load_service.run_load(server, plan, CLIENTS, timeout_s=REQUEST_TIMEOUT_S, deadline_s=DEADLINE_S)
    elapsed = time.monotonic() - started
    gc.collect()
    rss_after = load_service.rss_mb()
    summary = result.summary()
    print(f"\nload: {summary}; RSS {rss_before:.0f} -> {rss_after:.0f} MB")

    assert result.unfinished == 0, summary
    assert result.answered == len(plan), [o.problem for o in result.outcomes if o.status is None][:5]
    assert summary["5xx"] == 0, [o.problem for o in result.problems if (o.status or 0) >= 500][:5]
    assert not result.problems, [(o.index, o.kind, o.problem) for o in result.problems[:10]]
    expected_ok = sum(p.expect == 200 for p in plan)
    assert summary["2xx"] == expected_ok and summary["4xx"] == len(plan) - expected_ok
    assert elapsed < DEADLINE_S + REQUEST_TIMEOUT_S
    assert rss_after - rss_before < MAX_RSS_GROWTH_MB, f"RSS grew {rss_after - rss_before:.0f} MB"

    with httpx.Client(base_url=server, timeout=REQUEST_TIMEOUT_S) as c:
        assert c.get("/health").json() == {"status": "ok"}  # still serving
        stats = c.get("/v1/model").json()["batching"]
    assert stats["failed_batches"] == 0 and stats["rejected_busy"] == 0, stats
    assert stats["largest_batch"] > 1, stats  # concurrent requests were batched
