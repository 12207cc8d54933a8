"""Schema-driven fuzzing of the served OpenAPI schema with schemathesis, against a live loopback server.

schemathesis reads ``/openapi.json`` from a real uvicorn server running the tiny checkpoint and generates
requests for every operation with Hypothesis (``APIOperation.as_strategy``), derandomized (the same inputs on
every run) and without an example database:

* ``positive``: bodies valid under the schema;
* ``negative``: bodies that violate the schema (wrong types, unknown fields, non-JSON bytes);
* ``accepted``: positive bodies normalized to what the server accepts (exactly one of text / texts, integer
  literals), so the fuzzed *texts* (arbitrary Unicode from Hypothesis) reach tokenization, the model and the
  attention payload.

Every answer must be documented by the schema (status code, content type, response body schema) and never a
5xx. Each run checks its own reach (accepted bodies answered 200, negative ones refused with 422), so any
one of them can run alone. Runtime is bounded by small limits on the server, ``max_examples`` per run and a
timeout per request.

(schemathesis' own ``schema.parametrize()`` / ``pytest.from_fixture`` runner needs a pytest internal that
pytest 9 removed (``Function._nodeid``), so the strategies are driven by Hypothesis directly.)
"""

from __future__ import annotations

import collections
import threading

import pytest

schemathesis = pytest.importorskip("schemathesis", reason="pip install schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import (  # noqa: E402
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

MAX_EXAMPLES = 100  # generated requests per POST /v1/summarize run
REQUEST_TIMEOUT = 30.0
MAX_TEXTS = 4

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]

#: 422 answers an "accepted" body may still get: the text holds nothing to summarize, or limits the schema
#: does not express.
ACCEPTED_REFUSALS = ("empty or only whitespace", "no words to summarize", "too many texts", "is larger than",
                     "so it writes no figure to constrain", "so it writes no period to constrain",  # UNSTATABLE
                     "needs a summary language model")  # lm_weight > 0: the tiny model has none

_lock = threading.Lock()


@pytest.fixture(scope="module")
def fuzz_url(tiny_run):
    import torch

    from agentsum.serve.app import background_server, create_app

    torch.set_num_threads(1)
    app = create_app(tiny_run["checkpoint"], max_body_bytes=200_000, max_batch=8, batch_wait_ms=0,
                     max_texts=MAX_TEXTS, threads=1)
    with background_server(app) as url:
        yield url


@pytest.fixture(scope="module")
def api_schema(fuzz_url):
    return schemathesis.openapi.from_url(fuzz_url + "/openapi.json", timeout=REQUEST_TIMEOUT)


def accepted(case):
    """Make a positive /v1/summarize body one the server accepts: exactly one of text / texts, int literals."""
    if isinstance(case.body, dict):
        body = dict(case.body)
        for key in ("beam_size", "max_length", "min_length", "no_repeat_ngram_size"):
            if isinstance(body.get(key), float):
                body[key] = int(body[key])
        if body.get("text") is not None and body.get("texts") is not None:
            del body["texts"]
        if body.get("text") is None and body.get("texts") is None:
            body["text"] = "the cat saw a dog near the park ."
        case.body = body
    return case


#: (method, path, run, examples). The GET operations take no parameters: no negative mode (an empty schema
#: cannot be violated) and few distinct requests.
RUNS = [
    ("POST", "/v1/summarize", "positive", MAX_EXAMPLES),
    ("POST", "/v1/summarize", "negative", MAX_EXAMPLES),
    ("POST", "/v1/summarize", "accepted", MAX_EXAMPLES),
    ("GET", "/v1/model", "positive", 5),
    ("GET", "/health", "positive", 5),
]


@pytest.mark.parametrize("method,path,run,examples", RUNS, ids=[f"{m} {p} {r}" for m, p, r, _ in RUNS])
def test_fuzz_openapi(api_schema, method, path, run, examples):
    """Generated requests: never a 5xx, always a response the schema documents; each run reaches the
    model (accepted bodies answered 200) or its refusals (negative bodies answered 422)."""
    calls: collections.Counter = collections.Counter()  # status -> requests sent
    operation = api_schema[path][method]
    label = f"{method} {path}"
    strategy = operation.as_strategy(generation_mode=GenerationMode.NEGATIVE if run == "negative"
                                     else GenerationMode.POSITIVE)
    if run == "accepted":
        strategy = strategy.map(accepted)

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
    @given(case=strategy)
    def fuzz(case):
        response = case.call(timeout=REQUEST_TIMEOUT)
        with _lock:
            calls[response.status_code] += 1
        assert response.status_code < 500, (f"{label}: {response.status_code} {response.text[:500]}\n"
                                            f"{case.as_curl_command()}")
        case.validate_response(response, checks=CHECKS)
        if run == "accepted":
            body = case.body
            if response.status_code == 422:
                message = response.json()["error"]
                assert any(reason in message for reason in ACCEPTED_REFUSALS), (message, body)
            else:
                assert response.status_code == 200, response.text[:500]
                n = 1 if body.get("text") is not None else len(body["texts"])
                summaries = response.json()["summaries"]
                assert len(summaries) == n
                assert all((s["attention"] is not None) == bool(body.get("attention")) for s in summaries)

    fuzz()
    print(f"\n{label} {run}: requests by status {dict(sorted(calls.items()))}")
    assert sum(calls.values()) >= 1
    assert not [status for status in calls if status >= 500], calls
    if run == "accepted":
        assert calls[200] >= examples // 2, calls  # the model ran on fuzzed text
    if run == "negative":
        assert calls[422] > 0, calls


#: The refusals of schema-valid bodies that no JSON Schema can state: a text without a letter or digit
#: (Unicode categories), min_length above max_length (a relation between two fields), and a claim
#: constraint the served model's vocabulary cannot honour, and an lm_weight for a model without a summary
#: language model (properties of the model, not the request).
UNSTATABLE = ("no words to summarize", "is larger than", "so it writes no figure to constrain",
              "so it writes no period to constrain", "needs a summary language model")


@pytest.mark.parametrize("mode", ["positive", "negative"])
def test_fuzz_openapi_with_every_check(api_schema, mode):
    """schemathesis with all its checks (positive data acceptance and negative data rejection included):
    the schema says what the server enforces (exactly one of text / texts as oneOf, no blank text,
    at most max_texts texts, 5.0 as an integer), so a schema-valid body is refused only for a reason
    in UNSTATABLE, with that reason in the answer."""
    from schemathesis.core.failures import FailureGroup
    from schemathesis.openapi.checks import RejectedPositiveData

    operation = api_schema["/v1/summarize"]["POST"]
    strategy = operation.as_strategy(generation_mode=GenerationMode.POSITIVE if mode == "positive"
                                     else GenerationMode.NEGATIVE)
    calls: collections.Counter = collections.Counter()

    @settings(max_examples=MAX_EXAMPLES, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
    @given(case=strategy)
    def fuzz(case):
        response = case.call(timeout=REQUEST_TIMEOUT)
        calls[response.status_code] += 1
        try:
            case.validate_response(response)  # every check schemathesis has
        except FailureGroup as group:
            for failure in group.exceptions:
                stated = isinstance(failure, RejectedPositiveData) and any(
                    reason in response.json()["error"] for reason in UNSTATABLE)
                assert stated, f"{failure}\n{case.as_curl_command()}"

    fuzz()
    assert calls[200] > 0 if mode == "positive" else calls[422] > 0, calls
