"""HTTP service: ``agentsum serve --checkpoint CKPT`` (FastAPI + uvicorn) and the web page at ``/``.

Endpoints (JSON; errors are ``{"error": message}``, validation errors add ``errors``: one entry per problem):

* ``POST /v1/summarize``: ``{"text": str}`` or ``{"texts": [str, ...]}`` plus optional ``beam_size``,
  ``max_length``, ``min_length``, ``block_trigrams`` and ``attention``; returns one summary per text.
* ``GET /v1/model``: configuration, vocabulary size, training step, the validation score the checkpoint
  was selected by (named for what it is: :func:`describe_selection`), parameter count, the device the
  model runs on, limits and batching counters.
* ``GET /v1/example``: the example text the page's "Try an example" loads, of the kind the model was
  trained on (a news story, a chat or an earnings call: :func:`agentsum.serve.page.example_kind`).
* ``GET /health``: ``{"status": "ok"}``.
* ``GET /openapi.json``: the OpenAPI schema. ``/docs`` is a plain offline page listing the endpoints
  (:mod:`agentsum.serve.page`).
* ``GET /``: the web page (``agentsum/web``, :mod:`agentsum.serve.page`).

Design:

* The model is loaded once, in :func:`create_app` (:class:`agentsum.serve.model.ServedModel`); a bad
  checkpoint fails at startup, not at the first request.
* **Dynamic batching** (:mod:`agentsum.serve.batcher`): documents of concurrent requests are decoded
  together in one model thread.
* **Attention** (:mod:`agentsum.serve.model`): per output token, the agent attention and the source
  words with the largest cascaded attention, from a teacher-forced re-run.
* **Limits.** Request bodies larger than ``max_body_bytes`` are refused with 413 by an ASGI middleware that
  checks both the Content-Length header and the bytes actually received (chunked uploads). Pending documents
  are capped (503 when the queue is full) so a flood cannot exhaust memory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from agentsum.data.dataset import NO_WORDS, has_words
from agentsum.serve.batcher import Batcher, Busy
from agentsum.serve.model import ServedModel
from agentsum.serve.page import add_page, example_kind, example_text
from agentsum.serve.schemas import (ERROR_RESPONSES, MAX_BEAM, MAX_LENGTH, RequestError, SummarizeRequest,
                                    SummarizeResponse)
from agentsum.devices import use_tf32
from agentsum.options import chosen_checkpoint

__all__ = ["background_server", "create_app", "run"]

log = logging.getLogger("agentsum.serve")

#: Headers added to every response: the page may load only its own scripts and styles (no CDN),
#: and may not be framed.
SECURITY_HEADERS = [
    (b"content-security-policy",
     b"default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


def error_response(status: int, message: str, errors: list | None = None, headers: dict | None = None) -> JSONResponse:
    body: dict[str, Any] = {"error": message}
    if errors is not None:
        body["errors"] = errors
    return JSONResponse(body, status_code=status, headers=headers)


# --------------------------------------------------------------------------------------------
# ASGI middleware: body size limit and security headers
# --------------------------------------------------------------------------------------------


class BodyLimitMiddleware:
    """Refuse request bodies over ``max_bytes`` with 413: by Content-Length before reading, and by the bytes
    actually received (a chunked or lying client). Accepted bodies are buffered and replayed to the app
    (at most ``max_bytes`` are held). Also adds :data:`SECURITY_HEADERS` to every response."""

    def __init__(self, app, max_bytes: int):
        self.app = app
        self.max_bytes = int(max_bytes)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        extra = SECURITY_HEADERS
        if scope.get("path", "").startswith("/static/"):  # revalidate page assets (ETag) after an upgrade
            extra = extra + [(b"cache-control", b"no-cache")]

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message = {**message, "headers": list(message.get("headers", []))
                           + [(k, v) for k, v in extra if k not in names]}
            await send(message)

        too_large = f"request body is larger than the limit of {self.max_bytes:,} bytes"
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                length = int(declared)
                if length < 0:
                    raise ValueError
            except ValueError:
                await error_response(400, "invalid Content-Length header")(scope, receive, send_with_headers)
                return
            if length > self.max_bytes:
                await error_response(413, too_large)(scope, receive, send_with_headers)
                return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                await error_response(413, too_large)(scope, receive, send_with_headers)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send_with_headers)


# --------------------------------------------------------------------------------------------
# The application
# --------------------------------------------------------------------------------------------


def _finite(x):
    return x if isinstance(x, (int, float)) and math.isfinite(x) else None


def describe_selection(selection: dict, config, averaged: dict | None = None) -> dict:
    """The checkpoint's model-selection score, named for what it is: ``metric`` and ``value`` as the
    trainer recorded them (the best validation value of the run), a short ``label`` for the page's
    header and a ``description`` saying how it was measured. It is not a test score: ROUGE-L here is
    rougeLsum of greedy summaries of the first ``train.valid_rouge_docs`` validation documents, where
    ``agentsum evaluate`` decodes with the checkpoint's search (beam) on the data it is given."""
    metric, value = selection.get("metric"), _finite(selection.get("best"))
    out = {"metric": metric, "value": value, "label": None, "description": None}
    if metric is None or value is None:
        return out
    unit = "dialogues" if config.data.dialogue else "documents"
    if metric == "valid_rougeL":
        valid = config.data.valid
        start = getattr(valid, "start", None) or 0
        end = getattr(valid, "end", None)
        count = config.train.valid_rouge_docs if end is None else min(config.train.valid_rouge_docs, end - start)
        out["label"] = f"selection: greedy ROUGE-L {value:.1f} on {count} validation {unit} during training"
        description = (f"The checkpoint's model-selection score: ROUGE-L F1 (rougeLsum) of greedy summaries of the "
                       f"first {count} validation {unit} (rows {start}-{start + count - 1}, or all of a smaller "
                       f"validation set), the best value the training run reached. Not a test score: "
                       f"`agentsum evaluate` decodes with the model's beam search on the data it is given.")
    elif metric == "valid_nll":
        out["label"] = f"selection: validation NLL {value:.3f} per token during training"
        description = (f"The checkpoint's model-selection score: the lowest negative log-likelihood per summary "
                       f"token on the validation {unit} that the training run reached (lower is better).")
    else:
        out["label"] = f"selection: {metric} {value:.3f} during training"
        description = f"The checkpoint's model-selection score ({metric}), the best the training run reached."
    if averaged and averaged.get("steps"):
        # `agentsum average` keeps the first file's metadata: its best value so far
        steps = averaged["steps"]
        description += (f" These weights are the mean of the checkpoints at steps {', '.join(map(str, steps))}: "
                        f"the score is the one recorded in the first of them (the run's best up to step "
                        f"{steps[0]}), not measured on the mean.")
    out["description"] = description
    return out


def _public_config(config) -> dict:
    """The run configuration without file-system paths (data sources, run directory, init weights)."""
    d = config.to_dict()
    for key in ("train", "valid", "test"):
        d["data"].pop(key, None)
    for key in ("run_dir", "init_from"):
        d["train"].pop(key, None)
    return d


def _error_location(loc: Sequence[Any]) -> str:
    parts = [str(p) for p in loc if p != "body"]
    out = ""
    for p in parts:
        out += f"[{p}]" if p.isdigit() else (f".{p}" if out else p)
    return out or "body"


def _validation_errors(exc: RequestValidationError, content_type: str) -> tuple[int, str, list[dict]]:
    errors = []
    for e in exc.errors():
        msg = str(e.get("msg", "invalid value")).removeprefix("Value error, ")
        ctx = e.get("ctx") or {}
        if e.get("type") == "json_invalid" and ctx.get("error"):
            msg = f"{msg}: {ctx['error']} at character {e.get('loc', ('', '?'))[-1]}"
        errors.append({"loc": _error_location(e.get("loc", ())), "message": msg, "type": e.get("type", "")})
    if any(e["type"] == "json_invalid" for e in errors):
        detail = next(e for e in errors if e["type"] == "json_invalid")
        return 400, f"request body is not valid JSON ({detail['message']})", errors
    if any(e["type"] == "missing" and e["loc"] == "body" for e in errors):
        return 422, "request body is missing: send a JSON object such as {\"text\": \"...\"}", errors
    if "json" not in content_type and any(e["loc"] == "body" and e["type"] == "model_attributes_type" for e in errors):
        got = content_type or "none"
        return 422, (f"send the request as a JSON object with Content-Type: application/json "
                     f"(got Content-Type: {got})"), errors
    parts = [e["message"] if e["loc"] == "body" else f"{e['loc']}: {e['message']}" for e in errors[:5]]
    summary = "; ".join(parts) + (f"; and {len(errors) - 5} more" if len(errors) > 5 else "")
    return 422, f"invalid request: {summary}", errors


def create_app(checkpoint_path: str | Path, *, max_body_bytes: int = 1_000_000, max_batch: int = 16,
               batch_wait_ms: float = 10, max_texts: int = 64, threads: int | None = None,
               max_pending: int = 1024, device: str = "auto", quantize: str | None = None) -> FastAPI:
    """A FastAPI app serving the checkpoint (loaded here, once).

    max_body_bytes: larger request bodies get 413.      max_batch: documents decoded together at most.
    batch_wait_ms:  how long a document waits for companions before its batch runs.
    max_texts:      texts per request at most.          threads: torch CPU threads for the model thread.
    max_pending:    documents waiting at most (beyond: 503).
    device:         where the model runs: auto (a GPU where one is present), cpu or cuda.
    quantize:       int8 (dynamic int8 on the CPU), none, or None: what the checkpoint asks for.
    """
    if max_batch < 1 or max_texts < 1 or max_body_bytes < 1 or batch_wait_ms < 0 or max_pending < 1:
        raise ValueError("max_batch, max_texts, max_body_bytes, max_pending must be >= 1 and batch_wait_ms >= 0")
    served = ServedModel(checkpoint_path, device, quantize)
    use_tf32(served.summarizer.device)
    if threads:
        torch.set_num_threads(threads)

    def _init_thread() -> None:
        if threads:
            torch.set_num_threads(threads)

    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentsum-model", initializer=_init_thread)
    batcher = Batcher(served.infer, max_batch, batch_wait_ms / 1000, executor, max(max_pending, max_texts))
    log.info("loaded %s (step %s, %s parameters) on %s in %.1f s", served.path, served.step,
             f"{served.parameters:,}", served.summarizer.device, served.load_seconds)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        await batcher.close()

    app = FastAPI(
        title="agentsum",
        version="0.1.0",
        summary="Deep Communicating Agents (DCA) abstractive summarizer",
        description=("Summarize articles with a DCA checkpoint. Send `{\"text\": ...}` or `{\"texts\": [...]}` to "
                     "`POST /v1/summarize`; add `\"attention\": true` for per-token agent and source attention. "
                     "Errors are `{\"error\": message}`."),
        docs_url=None, redoc_url=None, lifespan=lifespan,
    )
    default_openapi = app.openapi

    def openapi() -> dict:
        """FastAPI's schema, with the one limit set here rather than in the model: texts per request."""
        if app.openapi_schema is None:
            schema = default_openapi()
            schema["components"]["schemas"]["SummarizeRequest"]["properties"]["texts"]["maxItems"] = max_texts
        return app.openapi_schema

    app.openapi = openapi
    app.state.served = served
    app.state.summarizer = served.summarizer
    app.state.batcher = batcher
    app.state.limits = {"max_body_bytes": max_body_bytes, "max_batch": max_batch, "batch_wait_ms": batch_wait_ms,
                        "max_texts": max_texts, "max_pending": batcher.max_pending, "max_beam_size": MAX_BEAM,
                        "max_length": MAX_LENGTH, "threads": torch.get_num_threads()}
    app.add_middleware(BodyLimitMiddleware, max_bytes=max_body_bytes)
    model_ref = {"checkpoint": served.path.name, "step": served.step}

    @app.exception_handler(RequestValidationError)
    async def _on_validation_error(request: Request, exc: RequestValidationError):
        status, message, errors = _validation_errors(exc, request.headers.get("content-type", ""))
        return error_response(status, message, errors)

    @app.exception_handler(StarletteHTTPException)
    async def _on_http_error(request: Request, exc: StarletteHTTPException):
        detail = str(exc.detail)
        if exc.status_code == 400 and detail == "There was an error parsing the body":  # FastAPI's generic text
            detail = "request body is not valid JSON (not UTF-8 text, or nested too deeply)"
        return error_response(exc.status_code, detail, headers=getattr(exc, "headers", None))

    @app.exception_handler(RequestError)
    async def _on_request_error(request: Request, exc: RequestError):
        return error_response(exc.status, exc.message)

    @app.exception_handler(Exception)
    async def _on_unexpected(request: Request, exc: Exception):
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return error_response(500, f"internal server error ({type(exc).__name__}); it has been logged")

    @app.post("/v1/summarize", response_model=SummarizeResponse, responses=ERROR_RESPONSES,
              summary="Summarize one or more articles")
    async def summarize(req: SummarizeRequest) -> Any:
        started = time.perf_counter()
        texts = req.documents()
        if len(texts) > max_texts:
            raise RequestError(422, f"too many texts: {len(texts)} (at most {max_texts} per request)")
        config = served.search_config(req)
        if req.provenance and not served.can_explain:
            raise RequestError(422, "provenance: this checkpoint writes every word from its vocabulary (no copy "
                                    "mechanism, model.pointer), so it cannot say which words came from the text")
        with batcher.expect(config, len(texts)) as ticket:
            docs = await run_in_threadpool(served.prepare, texts)
            empty = [i for i, d in enumerate(docs) if not has_words(d)]
            if empty:
                names = ", ".join("text" if req.text is not None else f"texts[{i}]" for i in empty)
                raise RequestError(422, f"{names}: {NO_WORDS}")
            names = ["text"] if req.text is not None else [f"texts[{i}]" for i in range(len(texts))]
            # one pass over each text, off the event loop like preparing it
            notices = await run_in_threadpool(lambda: [served.summarizer.length_warning(t, name)
                                                       for t, name in zip(texts, names)])
            try:
                results = await batcher.submit(docs, config, req.attention, ticket, provenance=req.provenance)
            except Busy as e:
                return error_response(503, f"server busy: {e}", headers={"Retry-After": "1"})
            except Exception as e:  # noqa: BLE001 - answered as a 500 JSON error, never a crash
                log.error("summarize failed: %s: %s", type(e).__name__, e)
                return error_response(500, f"summarization failed ({type(e).__name__}: {e}); it has been logged")
        for result, notice in zip(results, notices):
            result["warnings"] = [notice] if notice is not None else []
        return {"summaries": results, "model": model_ref,
                "elapsed_ms": round((time.perf_counter() - started) * 1000, 2)}

    kind = example_kind(served.config, served.path)
    example = {"kind": kind, "text": example_text(kind)}

    @app.get("/v1/example", summary="An example text of the kind the model summarizes (news, dialogue or call)")
    async def example_for_the_model() -> dict:
        return example

    @app.get("/health", summary="Liveness check")
    async def health() -> dict:
        return {"status": "ok"}

    @app.get("/v1/model", summary="The loaded model, limits and batching counters")
    async def model_info() -> dict:
        config = served.config
        return {
            "checkpoint": served.path.name,
            "model_type": config.model.get("type", "dca"),
            "agents": config.data.agents,
            "provenance": served.can_explain,  # whether "provenance": true can be asked for
            "summary_lm": served.summarizer.summary_lm is not None,  # whether lm_weight > 0 can be asked for
            "language": served.language.language,
            "dialogue": config.data.dialogue,
            "vocab_size": len(served.summarizer.vocab),
            "step": served.step,
            "selection": describe_selection(served.selection, config, served.summarizer.metadata.get("averaged")),
            "parameters": served.parameters,
            "device": str(served.summarizer.device),
            "quantize": served.summarizer.quantize,
            "search_defaults": dataclasses.asdict(config.search),
            "config": _public_config(config),
            "limits": app.state.limits,
            "batching": batcher.stats_snapshot(),
        }

    add_page(app)
    return app


# --------------------------------------------------------------------------------------------
# Running: uvicorn from the command line, or in a background thread (tests, benchmarks)
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def background_server(app, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning",
                      timeout: float = 30.0) -> Iterator[str]:
    """Run ``app`` with uvicorn in a daemon thread; yields its base URL (port 0 = a free port)."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="on"))
    thread = threading.Thread(target=server.run, name="agentsum-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"uvicorn did not start on {host}:{port}")
        time.sleep(0.02)
    bound = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{bound}"
    finally:
        server.should_exit = True
        thread.join(timeout)


def run(args) -> int:
    import uvicorn

    logging.basicConfig(level=getattr(logging, args.log_level.upper()), format="%(levelname)s: %(message)s")
    threads = getattr(args, "serve_threads", None) or getattr(args, "threads", None)
    app = create_app(chosen_checkpoint(args), max_body_bytes=args.max_body_bytes, max_batch=args.max_batch,
                     batch_wait_ms=args.batch_wait_ms, max_texts=args.max_texts, threads=threads,
                     device=getattr(args, "device", "auto"), quantize=getattr(args, "quantize", None))
    log.info("web page and API on http://%s:%d/ (schema: /openapi.json)", args.host, args.port)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0
