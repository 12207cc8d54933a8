"""Dynamic batching for the service: documents of concurrent requests decoded together.

Every text becomes one job in a queue served by a single asyncio worker task. The worker waits up
to ``batch_wait_ms`` after the oldest waiting job to gather up to ``max_batch`` documents that share
the same search settings, runs them as one batch in a one-thread executor (torch in a worker
thread), and resolves each job's future. While a batch runs, new jobs pile up and go into the next
batch, so a busy server batches without waiting. Requests announce their documents before
preprocessing them, and the worker also waits (at most 0.25 s more) for announced documents, so a
burst that reaches an idle server lands in one batch. Pending documents are capped (:class:`Busy`,
answered 503) so a flood cannot exhaust memory. Counters (batches, documents, largest batch) are
read with :meth:`Batcher.stats_snapshot`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from agentsum.data.dataset import Document
from agentsum.decoding.search import SearchConfig

log = logging.getLogger("agentsum.serve")


@dataclass
class _Job:
    doc: Document
    config: SearchConfig
    key: tuple
    attention: bool
    future: asyncio.Future
    enqueued: float
    provenance: bool = False


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
                     ticket: _Ticket | None = None, provenance: bool = False) -> list[dict]:
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
        jobs = [_Job(d, config, key, attention, loop.create_future(), now, provenance) for d in docs]
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
        want_provenance = any(j.provenance for j in group)
        started = time.perf_counter()
        try:
            results = await loop.run_in_executor(
                self.executor, self.infer, [j.doc for j in group], group[0].config, want_attention, want_provenance)
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
                if not j.provenance:
                    r = {**r, "provenance": None}
                j.future.set_result(r)

    def stats_snapshot(self) -> dict:
        """The batching counters as a dict (read safely while the worker thread updates them)."""
        with self._lock:
            return self.stats.as_dict()

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, RuntimeError):
                await self._task
        for j in self._jobs:
            if not j.future.done():
                j.future.cancel()
        self._jobs = []
