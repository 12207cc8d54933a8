"""HTTP service: ``agentsum serve --checkpoint CKPT`` (FastAPI + uvicorn) and the web page at ``/``.

Endpoints (JSON; errors are ``{"error": message}``, validation errors add ``errors``: one entry per problem):

* ``POST /v1/summarize``: ``{"text": str}`` or ``{"texts": [str, ...]}`` plus optional ``beam_size``,
  ``max_length``, ``min_length``, ``block_trigrams`` and ``attention``; returns one summary per text.
* ``GET /v1/model``: configuration, vocabulary size, training step, validation selection, parameter
  count, limits and batching counters.
* ``GET /health``: ``{"status": "ok"}``.
* ``GET /openapi.json``: the OpenAPI schema. ``/docs`` is a plain offline page listing the endpoints
  (FastAPI's Swagger page loads its scripts from a CDN, which does not work offline).
* ``GET /``: the web page (``agentsum/web``: plain HTML, CSS and JavaScript, no CDN, no build step).

Design:

* The model is loaded once, in :func:`create_app`; a bad checkpoint fails at startup, not at the first request.
* **Dynamic batching.** Every text becomes one job in a queue served by a single asyncio worker task. The
  worker waits up to ``batch_wait_ms`` after the oldest waiting job to gather up to ``max_batch`` documents
  that share the same search settings, runs them as one batch in a one-thread executor (torch in a worker
  thread, under ``torch.no_grad()``), and resolves each job's future. While a batch runs, new jobs pile up and
  go into the next batch, so a busy server batches without waiting. Requests announce their documents before
  preprocessing them, and the worker also waits (at most 0.25 s more) for announced documents, so a burst that
  reaches an idle server lands in one batch. Counters (batches, documents, largest batch) are reported by
  ``/v1/model`` under ``batching``.
* **Attention.** With ``"attention": true`` each output token carries the agent attention ``g^t`` (A floats
  summing to 1, eq 10) and its ``k = 5`` source words with the largest cascaded attention ``l^t_{a,i} g^t_a``
  (eq 8, 10: what UNK replacement picks from; the multi-agent pointer copies with g_a (1 - p_a) l_{a,i}).
  They are computed by a teacher-forced forward pass over the generated summary, which reproduces the
  decoding-time attention because step-by-step decoding and teacher forcing compute the same thing (a test
  checks this against the attention search records).
* **Limits.** Request bodies larger than ``max_body_bytes`` are refused with 413 by an ASGI middleware that
  checks both the Content-Length header and the bytes actually received (chunked uploads). Pending documents
  are capped (503 when the queue is full) so a flood cannot exhaust memory.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import html
import logging
import math
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, model_validator
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from agentsum.training.checkpoint import load_model
from agentsum.serve.options import add_arguments as _add_arguments
from agentsum.serve.options import add_parser  # noqa: F401 - part of this module's API
from agentsum.data.corpus import Example
from agentsum.data.dataset import NO_WORDS, Document, has_words, prepare_all, shown_agents, to_batch
from agentsum.data.language import text_processor
from agentsum.decoding.copying import cascaded_attention, padded_ids, source_word, teacher_forced, to_words
from agentsum.decoding.search import SearchConfig, search

__all__ = ["TOP_K", "Batcher", "Summarizer", "add_parser", "background_server", "create_app", "main", "run"]

log = logging.getLogger("agentsum.serve")

WEB_DIR = Path(__file__).parent.parent / "web"
#: Source words reported per output token in the attention payload.
TOP_K = 5
MAX_BEAM = 16
MAX_LENGTH = 500
#: Digits kept for attention weights in responses (enough for display, keeps payloads small).
WEIGHT_DIGITS = 5

#: Headers added to every response: the page may load only its own scripts and styles (no CDN),
#: and may not be framed.
SECURITY_HEADERS = [
    (b"content-security-policy",
     b"default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


# --------------------------------------------------------------------------------------------
# Request and response schemas
# --------------------------------------------------------------------------------------------


class SummarizeRequest(BaseModel):
    """One text or a list of texts, and optional decoding settings (defaults: the checkpoint's config)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "examples": [{"text": "The cat chased a dog near the park. The owl met a fox near the river."},
                     {"texts": ["First article ...", "Second article ..."], "beam_size": 5, "attention": True}]})

    text: StrictStr | None = Field(None, description="one article (give either text or texts)")
    texts: list[StrictStr] | None = Field(None, min_length=1, description="several articles, summarized in order")
    beam_size: StrictInt | None = Field(None, ge=1, le=MAX_BEAM, description="beam width; 1 = greedy")
    max_length: StrictInt | None = Field(None, ge=1, le=MAX_LENGTH, description="at most this many summary tokens")
    min_length: StrictInt | None = Field(None, ge=0, le=MAX_LENGTH,
                                         description="no end of summary before this many tokens")
    block_trigrams: StrictBool | None = Field(None, description="forbid repeating a trigram")
    attention: StrictBool = Field(False, description="include per-token agent and source attention")

    @model_validator(mode="after")
    def _one_input(self) -> SummarizeRequest:
        if (self.text is None) == (self.texts is None):
            raise ValueError("give exactly one of 'text' (a string) or 'texts' (a list of strings)")
        if self.text is not None and not self.text.strip():
            raise ValueError("'text' is empty or only whitespace")
        for i, t in enumerate(self.texts or []):
            if not t.strip():
                raise ValueError(f"texts[{i}] is empty or only whitespace")
        if self.min_length is not None and self.max_length is not None and self.min_length > self.max_length:
            raise ValueError(f"min_length ({self.min_length}) is larger than max_length ({self.max_length})")
        return self

    def documents(self) -> list[str]:
        return [self.text] if self.text is not None else list(self.texts or [])


class SourceWord(BaseModel):
    agent: int = Field(description="agent index a (0-based)")
    index: int = Field(description="token index i inside the agent's source tokens")
    word: str
    weight: float = Field(description="cascaded attention l^t_{a,i} * g^t_a")


class TokenAttention(BaseModel):
    agent: list[float] = Field(description="agent attention g^t (one weight per agent, sums to 1)")
    source: list[SourceWord] = Field(description=f"the top-{TOP_K} source words by cascaded attention")


class SentenceAttention(BaseModel):
    start: int = Field(description="index of the sentence's first token in tokens")
    end: int = Field(description="index after its last token")
    agent: list[float] = Field(description="mean agent attention over the sentence's tokens")


class AttentionPayload(BaseModel):
    agents: int
    source_tokens: list[list[str]] = Field(description="the (preprocessed, truncated) source tokens of every agent")
    source_words: list[list[str]] = Field(description="the same tokens as written in the text (original casing)")
    per_token: list[TokenAttention] = Field(description="one entry per output token, aligned with tokens")
    sentences: list[SentenceAttention]


class Summary(BaseModel):
    summary: str = Field(description="the summary as text, one sentence per line: cased from the article and "
                                     "detokenized (English)")
    sentences: list[str] = Field(description="the summary's sentences as text")
    tokens: list[str] = Field(description="the model's output tokens (lower-cased, as ROUGE scores them)")
    words: list[str] = Field(description="tokens as shown: cased from the article, sentence starts capitalized; "
                                         "aligned with tokens")
    attention: AttentionPayload | None = None


class ModelRef(BaseModel):
    checkpoint: str
    step: int | None


class SummarizeResponse(BaseModel):
    summaries: list[Summary]
    model: ModelRef
    elapsed_ms: float


class ErrorResponse(BaseModel):
    error: str
    errors: list[dict[str, Any]] | None = None


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorResponse, "description": "the body is not valid JSON"},
    413: {"model": ErrorResponse, "description": "the body is larger than the server's limit"},
    422: {"model": ErrorResponse, "description": "invalid request (the message says which field and why)"},
    500: {"model": ErrorResponse, "description": "unexpected server error"},
    503: {"model": ErrorResponse, "description": "too many documents waiting; retry later"},
}


class RequestError(Exception):
    """An error answered with ``status`` and ``{"error": message}``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def error_response(status: int, message: str, errors: list | None = None, headers: dict | None = None) -> JSONResponse:
    body: dict[str, Any] = {"error": message}
    if errors is not None:
        body["errors"] = errors
    return JSONResponse(body, status_code=status, headers=headers)


# --------------------------------------------------------------------------------------------
# The model side: preprocessing, batched search, attention
# --------------------------------------------------------------------------------------------


class Summarizer:
    """A loaded checkpoint and the code that runs it; :meth:`infer` is called in one worker thread."""

    def __init__(self, checkpoint_path: str | Path):
        started = time.perf_counter()
        self.path = Path(checkpoint_path)
        self.model, self.vocab, self.config, state = load_model(self.path)
        self.step: int | None = state.get("step")
        self.selection: dict = dict(state.get("selection") or {})
        self.parameters = sum(p.numel() for p in self.model.parameters())
        self.language = text_processor(self.config.data)  # tokenization, sentences, display (en / zh)
        self.load_seconds = time.perf_counter() - started

    def prepare(self, texts: Sequence[str]) -> list[Document]:
        examples = [Example(id=str(i), article=t, summary="", origin=f"request[{i}]") for i, t in enumerate(texts)]
        return prepare_all(examples, self.config.data, drop_empty=False, keep_text=True)

    def search_config(self, req: SummarizeRequest) -> SearchConfig:
        changes = {k: v for k, v in (("beam_size", req.beam_size), ("max_length", req.max_length),
                                     ("min_length", req.min_length), ("block_trigrams", req.block_trigrams))
                   if v is not None}
        if req.max_length is not None and req.min_length is None:
            changes["min_length"] = min(self.config.search.min_length, req.max_length)
        try:
            return dataclasses.replace(self.config.search, **changes)
        except ValueError as e:  # e.g. min_length > the checkpoint's default max_length
            if "min_length" in changes and "max_length" not in changes:
                raise RequestError(422, f"invalid request: min_length ({changes['min_length']}) is larger than "
                                        f"the model's default max_length ({self.config.search.max_length}); "
                                        "give max_length too") from None
            raise RequestError(422, f"invalid request: {e}") from None

    @torch.no_grad()
    def infer(self, docs: Sequence[Document], config: SearchConfig, attention: bool) -> list[dict]:
        """Summaries of ``docs`` decoded as one batch; with ``attention``, the attention payloads too."""
        batch = to_batch(docs, self.vocab, with_targets=False)
        hyps = search(self.model, batch, config)
        words = to_words(hyps.tokens, hyps.copy_positions, batch, self.vocab, unk_replace=config.unk_replace)
        payloads = self.attention(batch, hyps.tokens, docs) if attention else [None] * len(docs)
        results = []
        for doc, tokens, payload in zip(docs, words, payloads):
            sentences = self.language.split_generated(tokens)
            if payload is not None:
                payload["sentences"] = _sentence_attention(payload, sentences)
            shown = self.language.display_words(tokens, doc.article)  # casing read from the article once
            readable = self.language.sentence_texts(shown)
            results.append({
                "summary": "\n".join(readable),  # one sentence per line
                "sentences": readable,
                "tokens": tokens,
                "words": [w for sentence in shown for w in sentence],
                "attention": payload,
            })
        return results

    def attention(self, batch, token_ids: list[list[int]], docs: Sequence[Document], k: int = TOP_K) -> list[dict]:
        """Per output token: g^t and the top-k source words by l^t_{a,i} g^t_a (teacher-forced re-run)."""
        B, A, S = batch.src_ids.shape
        out = self.model(teacher_forced(batch, padded_ids(token_ids)))
        agent = out.attention.agent.float()  # (B, T, A)
        top_w, top_i = cascaded_attention(out.attention.word, agent).topk(min(k, A * S), dim=-1)  # (B, T, k)
        agent_l, top_w_l, top_i_l = agent.tolist(), top_w.tolist(), top_i.tolist()
        payloads = []
        for b, ids in enumerate(token_ids):
            per_token = []
            for t in range(len(ids)):
                entries = []
                for w, pos in zip(top_w_l[b][t], top_i_l[b][t]):
                    found = source_word(batch, b, pos)
                    if w <= 0 or found is None:
                        continue  # padding (zero weight)
                    a, i, word = found
                    entries.append({"agent": a, "index": i, "word": word, "weight": round(w, WEIGHT_DIGITS)})
                per_token.append({"agent": [round(g, WEIGHT_DIGITS) for g in agent_l[b][t]], "source": entries})
            payloads.append({"agents": A, "source_tokens": [list(x) for x in batch.src_tokens[b]],
                             "per_token": per_token, "source_words": shown_agents(docs[b], self.config.data)})
        return payloads


def _sentence_attention(payload: dict, sentences: list[list[str]]) -> list[dict]:
    """Token span and mean agent attention g^t of every summary sentence."""
    rows = [p["agent"] for p in payload["per_token"]]
    out, start = [], 0
    for sentence in sentences:
        end = start + len(sentence)
        chunk = rows[start:end]
        out.append({"start": start, "end": end,
                    "agent": [round(sum(r[a] for r in chunk) / max(len(chunk), 1), WEIGHT_DIGITS)
                              for a in range(payload["agents"])]})
        start = end
    return out


# --------------------------------------------------------------------------------------------
# Dynamic batching
# --------------------------------------------------------------------------------------------


@dataclass
class _Job:
    doc: Document
    config: SearchConfig
    key: tuple
    attention: bool
    future: asyncio.Future
    enqueued: float


@dataclass
class BatchStats:
    requests: int = 0
    documents: int = 0
    batches: int = 0
    largest_batch: int = 0
    failed_batches: int = 0
    rejected_busy: int = 0
    model_seconds: float = 0.0

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["model_seconds"] = round(d["model_seconds"], 3)
        d["mean_batch"] = round(self.documents / self.batches, 3) if self.batches else 0.0
        return d


class Busy(Exception):
    pass


class _Ticket:
    """Documents announced to a :class:`Batcher`; released once (when submitted, or when the request fails)."""

    def __init__(self, batcher: Batcher, key: tuple, n: int):
        self.batcher, self.key, self.n, self.open = batcher, key, n, True

    def release(self) -> None:
        if self.open:
            self.open = False
            left = self.batcher._incoming.get(self.key, 0) - self.n
            if left > 0:
                self.batcher._incoming[self.key] = left
            else:
                self.batcher._incoming.pop(self.key, None)
            self.batcher._poke()


class Batcher:
    """Gathers documents from concurrent requests into batches run by one worker task.

    Jobs wait in a FIFO list. The worker takes the oldest job's search settings as the batch key and waits until
    ``wait_s`` after that job arrived, or until ``max_batch`` jobs with that key are waiting, then runs them
    together in ``executor``. Jobs with other settings stay for a later batch (oldest first).

    Requests announce their documents (:meth:`expect`) before preprocessing them in a thread, so when a burst
    arrives at an idle server the worker also waits, at most ``grace_s`` longer, for documents that are already
    inside the server and about to be queued (otherwise the tail of a burst misses the batch and waits a whole
    model call). With ``wait_s == 0`` nothing waits.

    The worker is bound to the event loop it was started on and restarted on a new loop when needed
    (a test client may run each request on its own loop).
    """

    def __init__(self, infer, max_batch: int, wait_s: float, executor: ThreadPoolExecutor, max_pending: int,
                 grace_s: float = 0.25):
        self.infer = infer
        self.max_batch = max(1, int(max_batch))
        self.wait_s = max(0.0, float(wait_s))
        self.grace_s = grace_s if self.wait_s > 0 else 0.0
        self.executor = executor
        self.max_pending = max_pending
        self.stats = BatchStats()
        self._lock = threading.Lock()  # stats are read from other threads
        self._jobs: list[_Job] = []
        self._incoming: dict[tuple, int] = {}  # announced documents not queued yet, per search key
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @staticmethod
    def key(config: SearchConfig) -> tuple:
        return dataclasses.astuple(config)

    def _ensure_worker(self) -> None:
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done() or self._loop is not loop:
            old_task, old_loop = self._task, self._loop
            if old_task is not None and not old_task.done() and old_loop is not None and not old_loop.is_closed():
                old_loop.call_soon_threadsafe(old_task.cancel)
            self._loop = loop
            self._wakeup = asyncio.Event()
            self._jobs = [j for j in self._jobs if j.future.get_loop() is loop]
            self._incoming = {}
            self._task = loop.create_task(self._worker(), name="agentsum-batcher")

    def _poke(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    @contextlib.contextmanager
    def expect(self, config: SearchConfig, n: int) -> Iterator[_Ticket]:
        """Announce ``n`` documents that will be submitted with ``config``; withdrawn on exit if not submitted."""
        self._ensure_worker()
        ticket = _Ticket(self, self.key(config), n)
        self._incoming[ticket.key] = self._incoming.get(ticket.key, 0) + n
        try:
            yield ticket
        finally:
            ticket.release()

    async def submit(self, docs: Sequence[Document], config: SearchConfig, attention: bool,
                     ticket: _Ticket | None = None) -> list[dict]:
        self._ensure_worker()
        if ticket is not None:
            ticket.release()
        if len(self._jobs) + len(docs) > self.max_pending:
            with self._lock:
                self.stats.rejected_busy += 1
            raise Busy(f"{len(self._jobs)} documents are waiting (limit {self.max_pending}); retry later")
        loop = asyncio.get_running_loop()
        key = self.key(config)
        now = loop.time()
        jobs = [_Job(d, config, key, attention, loop.create_future(), now) for d in docs]
        self._jobs.extend(jobs)
        with self._lock:
            self.stats.requests += 1
        self._poke()
        try:
            return list(await asyncio.gather(*(j.future for j in jobs)))
        finally:
            for j in jobs:  # a cancelled request leaves no job behind
                if not j.future.done():
                    j.future.cancel()

    def _matching(self, key: tuple) -> list[_Job]:
        return [j for j in self._jobs if j.key == key and not j.future.done()][: self.max_batch]

    async def _worker(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._wakeup is not None
        wakeup = self._wakeup
        while True:
            try:
                self._jobs = [j for j in self._jobs if not j.future.done()]
                if not self._jobs:
                    wakeup.clear()
                    await wakeup.wait()
                    continue
                first = self._jobs[0]
                deadline = first.enqueued + self.wait_s
                while len(self._matching(first.key)) < self.max_batch:
                    limit = deadline + (self.grace_s if self._incoming.get(first.key) else 0.0)
                    remaining = limit - loop.time()
                    if remaining <= 0:
                        break
                    wakeup.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(wakeup.wait(), remaining)
                group = self._matching(first.key)
                taken = {id(j) for j in group}
                self._jobs = [j for j in self._jobs if id(j) not in taken]
                if group:
                    await self._run(group)
            except asyncio.CancelledError:
                raise
            except Exception:  # never let the worker die
                log.exception("batch worker error")

    async def _run(self, group: list[_Job]) -> None:
        loop = asyncio.get_running_loop()
        want_attention = any(j.attention for j in group)
        started = time.perf_counter()
        try:
            results = await loop.run_in_executor(
                self.executor, self.infer, [j.doc for j in group], group[0].config, want_attention)
        except Exception as e:
            log.exception("model call failed on a batch of %d documents", len(group))
            with self._lock:
                self.stats.failed_batches += 1
            for j in group:
                if not j.future.done():
                    j.future.set_exception(e)
            return
        with self._lock:
            self.stats.batches += 1
            self.stats.documents += len(group)
            self.stats.largest_batch = max(self.stats.largest_batch, len(group))
            self.stats.model_seconds += time.perf_counter() - started
        for j, r in zip(group, results):
            if not j.future.done():
                if not j.attention:
                    r = {**r, "attention": None}
                j.future.set_result(r)

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, RuntimeError):
                await self._task
        for j in self._jobs:
            if not j.future.done():
                j.future.cancel()
        self._jobs = []


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
               max_pending: int = 1024) -> FastAPI:
    """A FastAPI app serving the checkpoint (loaded here, once).

    max_body_bytes: larger request bodies get 413.      max_batch: documents decoded together at most.
    batch_wait_ms:  how long a document waits for companions before its batch runs.
    max_texts:      texts per request at most.          threads: torch CPU threads for the model thread.
    max_pending:    documents waiting at most (beyond: 503).
    """
    if max_batch < 1 or max_texts < 1 or max_body_bytes < 1 or batch_wait_ms < 0 or max_pending < 1:
        raise ValueError("max_batch, max_texts, max_body_bytes, max_pending must be >= 1 and batch_wait_ms >= 0")
    summarizer = Summarizer(checkpoint_path)
    if threads:
        torch.set_num_threads(threads)

    def _init_thread() -> None:
        if threads:
            torch.set_num_threads(threads)

    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentsum-model", initializer=_init_thread)
    batcher = Batcher(summarizer.infer, max_batch, batch_wait_ms / 1000, executor, max(max_pending, max_texts))
    log.info("loaded %s (step %s, %s parameters) in %.1f s", summarizer.path, summarizer.step,
             f"{summarizer.parameters:,}", summarizer.load_seconds)

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
    app.state.summarizer = summarizer
    app.state.batcher = batcher
    app.state.limits = {"max_body_bytes": max_body_bytes, "max_batch": max_batch, "batch_wait_ms": batch_wait_ms,
                        "max_texts": max_texts, "max_pending": batcher.max_pending, "max_beam_size": MAX_BEAM,
                        "max_length": MAX_LENGTH, "threads": torch.get_num_threads()}
    app.add_middleware(BodyLimitMiddleware, max_bytes=max_body_bytes)
    model_ref = {"checkpoint": summarizer.path.name, "step": summarizer.step}

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
        config = summarizer.search_config(req)
        with batcher.expect(config, len(texts)) as ticket:
            docs = await run_in_threadpool(summarizer.prepare, texts)
            empty = [i for i, d in enumerate(docs) if not has_words(d)]
            if empty:
                names = ", ".join("text" if req.text is not None else f"texts[{i}]" for i in empty)
                raise RequestError(422, f"{names}: {NO_WORDS}")
            try:
                results = await batcher.submit(docs, config, req.attention, ticket)
            except Busy as e:
                return error_response(503, f"server busy: {e}", headers={"Retry-After": "1"})
            except Exception as e:  # noqa: BLE001 - answered as a 500 JSON error, never a crash
                log.error("summarize failed: %s: %s", type(e).__name__, e)
                return error_response(500, f"summarization failed ({type(e).__name__}: {e}); it has been logged")
        return {"summaries": results, "model": model_ref,
                "elapsed_ms": round((time.perf_counter() - started) * 1000, 2)}

    @app.get("/health", summary="Liveness check")
    async def health() -> dict:
        return {"status": "ok"}

    @app.get("/v1/model", summary="The loaded model, limits and batching counters")
    async def model_info() -> dict:
        with batcher._lock:
            stats = batcher.stats.as_dict()
        return {
            "checkpoint": summarizer.path.name,
            "model_type": summarizer.config.model.get("type", "dca"),
            "agents": summarizer.config.data.agents,
            "language": summarizer.language.language,
            "vocab_size": len(summarizer.vocab),
            "step": summarizer.step,
            "selection": {"metric": summarizer.selection.get("metric"),
                          "value": _finite(summarizer.selection.get("best"))},
            "parameters": summarizer.parameters,
            "search_defaults": dataclasses.asdict(summarizer.config.search),
            "config": _public_config(summarizer.config),
            "limits": app.state.limits,
            "batching": stats,
        }

    @app.get("/docs", include_in_schema=False, response_class=HTMLResponse)
    async def docs_page() -> HTMLResponse:
        return HTMLResponse(_docs_html(app.openapi()))

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(WEB_DIR / "index.html", media_type="text/html; charset=utf-8",
                            headers={"Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=WEB_DIR), name="static")
    return app


def _docs_html(schema: dict) -> str:
    """A plain, offline list of the endpoints (instead of Swagger UI, which loads from a CDN)."""
    rows = []
    for path, methods in schema.get("paths", {}).items():
        for method, op in methods.items():
            summary = html.escape(op.get("summary", ""))
            rows.append(f"<li><code>{method.upper()} {html.escape(path)}</code> — {summary}</li>")
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>agentsum API</title>"
            "<link rel=\"stylesheet\" href=\"/static/style.css\"></head><body class=\"docs\"><main class=\"card\">"
            "<h1>agentsum API</h1><p>The interactive Swagger page needs a CDN, so this server does not offer it. "
            "The machine-readable schema is at <a href=\"/openapi.json\">/openapi.json</a> (load it into any "
            "OpenAPI viewer); the web page is at <a href=\"/\">/</a>.</p>"
            f"<ul>{''.join(rows)}</ul></main></body></html>")


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
    from agentsum.training.checkpoint import default_checkpoint

    app = create_app(args.checkpoint or default_checkpoint(), max_body_bytes=args.max_body_bytes, max_batch=args.max_batch,
                     batch_wait_ms=args.batch_wait_ms, max_texts=args.max_texts, threads=threads)
    log.info("web page and API on http://%s:%d/ (schema: /openapi.json)", args.host, args.port)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m agentsum.serve --checkpoint CKPT ...`` (the same options as ``agentsum serve``)."""
    from agentsum.training.checkpoint import CheckpointError

    parser = argparse.ArgumentParser(prog="python -m agentsum.serve", description="Serve a checkpoint over HTTP.")
    _add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except CheckpointError as e:
        print(f"agentsum serve: error: {e}")
        return 2

