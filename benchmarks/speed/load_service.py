"""A bounded load test of ``agentsum serve``: many concurrent clients, a fixed number of mixed requests.

    python benchmarks/speed/load_service.py CKPT                                  # 50 clients, 300 requests
    python benchmarks/speed/load_service.py CKPT --clients 100 --requests 2000 --threads 2
    python benchmarks/speed/load_service.py CKPT --in-process                     # server in this process
    python benchmarks/speed/load_service.py --url http://127.0.0.1:8000 [--pid PID]   # a server already running

``--clients`` threads (one keep-alive httpx connection each) share a fixed plan of ``--requests`` requests and
send them as fast as the server answers: single texts, lists of 2 to 4 texts, some with ``"attention": true``,
and about ``--invalid`` of them invalid on purpose (empty or whitespace text, no words, out-of-range or
unknown fields, both ``text`` and ``texts``, broken JSON, wrong content type, min_length > max_length, too
many texts). The plan is deterministic (``--seed``).

Reported: requests answered (no connection error or timeout), 2xx / 4xx / 5xx counts, requests whose status
was not the expected one (valid -> 200 with one summary per text; invalid -> its 4xx), requests/s, p50 / p95 /
max latency, the server's batching counters and its memory (VmRSS) before and after the load. By default the
server runs in its own process (``python -m agentsum.serve`` on a free loopback port) so the clients do not
share its interpreter lock and its RSS is its own; ``--in-process`` runs it in a thread here (RSS then
includes the clients). Exit status 1 when any request went unanswered, got a 5xx or an unexpected status.

The test suite runs the same plan (``tests/serve/test_service_load.py`` imports :func:`make_plan` and
:func:`run_load`).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
SENTENCES = [
    "The {a} {v} a {b} near the {p}.",
    "Officials said the {a} and the {b} were seen by the {p} on Tuesday.",
    "A {a} from the {p} {v} the {b} twice.",
]
ANIMALS = "cat dog fox owl bee cow pig hen ant elk".split()
PLACES = "park river house field forest garden market school bridge tower".split()
VERBS = "saw chased found followed met heard".split()


@dataclass
class Planned:
    """One request of the plan: what to send and what must come back."""

    kind: str  # e.g. "single", "list", "single+attention", "invalid:empty"
    body: bytes
    content_type: str = "application/json"
    expect: int = 200  # expected status
    texts: int = 1  # summaries expected in a 200 answer


@dataclass
class Outcome:
    index: int
    kind: str
    status: int | None  # None: no answer (connection error or timeout)
    latency_s: float
    problem: str = ""  # why the answer is not the expected one ("" when it is)


@dataclass
class LoadResult:
    outcomes: list[Outcome]
    wall_s: float
    clients: int
    unfinished: int = 0  # planned requests never sent (the deadline passed)
    stats: dict = field(default_factory=dict)

    @property
    def answered(self) -> int:
        return sum(o.status is not None for o in self.outcomes)

    def count(self, lo: int, hi: int) -> int:
        return sum(o.status is not None and lo <= o.status < hi for o in self.outcomes)

    @property
    def problems(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.problem]

    def latency(self, q: float) -> float:
        values = sorted(o.latency_s for o in self.outcomes if o.status is not None)
        if not values:
            return float("nan")
        return values[min(len(values) - 1, int(q * len(values)))]

    def summary(self) -> dict:
        return {
            "requests": len(self.outcomes) + self.unfinished, "clients": self.clients, "answered": self.answered,
            "2xx": self.count(200, 300), "4xx": self.count(400, 500), "5xx": self.count(500, 600),
            "unanswered": len(self.outcomes) - self.answered + self.unfinished, "unexpected": len(self.problems),
            "wall_s": round(self.wall_s, 2), "req_per_s": round(len(self.outcomes) / max(self.wall_s, 1e-9), 2),
            "p50_ms": round(self.latency(0.5) * 1000, 1), "p95_ms": round(self.latency(0.95) * 1000, 1),
            "max_ms": round(self.latency(1.0) * 1000, 1),
            "mean_ms": round(statistics.fmean(o.latency_s for o in self.outcomes) * 1000, 1) if self.outcomes else 0,
        }


def article(rng: random.Random, sentences: int) -> str:
    return " ".join(rng.choice(SENTENCES).format(a=rng.choice(ANIMALS), b=rng.choice(ANIMALS), v=rng.choice(VERBS),
                                                 p=rng.choice(PLACES)) for _ in range(sentences))


def _json(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def invalid_requests(max_texts: int) -> list[Planned]:
    """Requests the server must refuse with a 4xx (and a message)."""
    ok = "The cat saw a dog near the park."
    return [
        Planned("invalid:empty", _json({"text": ""}), expect=422),
        Planned("invalid:whitespace", _json({"text": " \n\t "}), expect=422),
        Planned("invalid:no-words", _json({"text": "\u200b\u200b"}), expect=422),
        Planned("invalid:list-no-words", _json({"texts": [ok, "\u200b"]}), expect=422),
        Planned("invalid:beam", _json({"text": ok, "beam_size": 0}), expect=422),
        Planned("invalid:max-length", _json({"text": ok, "max_length": 10_000}), expect=422),
        Planned("invalid:min>max", _json({"text": ok, "min_length": 9, "max_length": 3}), expect=422),
        Planned("invalid:both", _json({"text": ok, "texts": [ok]}), expect=422),
        Planned("invalid:neither", _json({"beam_size": 2}), expect=422),
        Planned("invalid:unknown-field", _json({"article": ok}), expect=422),
        Planned("invalid:type", _json({"text": 42}), expect=422),
        Planned("invalid:too-many", _json({"texts": [ok] * (max_texts + 1)}), expect=422),
        Planned("invalid:broken-json", b'{"text": "the cat', expect=400),
        Planned("invalid:content-type", b"text=the+cat", content_type="application/x-www-form-urlencoded", expect=422),
    ]


def make_plan(n: int, *, seed: int = 0, invalid: float = 0.2, attention: float = 0.15, max_texts: int = 64,
              sentences: tuple[int, int] = (3, 8)) -> list[Planned]:
    """A deterministic mix of ``n`` requests: single and list bodies, some with attention, some invalid."""
    rng = random.Random(seed)
    bad = invalid_requests(max_texts)
    plan = []
    for i in range(n):
        if rng.random() < invalid:
            plan.append(bad[i % len(bad)])
            continue
        k = 1 if rng.random() < 0.6 else rng.randint(2, min(4, max_texts))
        texts = [article(rng, rng.randint(*sentences)) for _ in range(k)]
        body: dict = {"text": texts[0]} if k == 1 else {"texts": texts}
        with_attention = rng.random() < attention
        if with_attention:
            body["attention"] = True
        if rng.random() < 0.2:  # a second decoding setting: its documents batch separately
            body["beam_size"] = 1
        kind = ("single" if k == 1 else "list") + ("+attention" if with_attention else "")
        plan.append(Planned(kind, _json(body), texts=k))
    return plan


def check(planned: Planned, response: httpx.Response) -> str:
    """"" when the response is the expected one, else what is wrong."""
    if response.status_code != planned.expect:
        return f"status {response.status_code}, expected {planned.expect}: {response.text[:200]}"
    try:
        body = response.json()
    except ValueError:
        return f"not JSON: {response.text[:200]}"
    if planned.expect == 200:
        summaries = body.get("summaries") or []
        if len(summaries) != planned.texts or not all(s.get("tokens") for s in summaries):
            return f"{len(summaries)} summaries for {planned.texts} texts"
        if ("attention" in planned.kind) != all(s.get("attention") for s in summaries):
            return "attention payload missing or unexpected"
    elif not isinstance(body.get("error"), str) or not body["error"]:
        return f"no error message: {response.text[:200]}"
    return ""


def run_load(url: str, plan: list[Planned], clients: int = 50, *, timeout_s: float = 60.0,
             deadline_s: float = 300.0) -> LoadResult:
    """Send ``plan`` from ``clients`` threads (each takes the next request when its previous one is answered).

    Every request has ``timeout_s``; no request starts after ``deadline_s`` (those count as unfinished), so the
    run always ends within about ``deadline_s + timeout_s``.
    """
    outcomes: list[Outcome | None] = [None] * len(plan)
    next_index = itertools.count()
    lock = threading.Lock()
    barrier = threading.Barrier(clients + 1)
    stop_at = [0.0]

    def client() -> None:
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        with httpx.Client(base_url=url, timeout=timeout_s, limits=limits) as c:
            barrier.wait()
            while True:
                with lock:
                    i = next(next_index)
                if i >= len(plan) or time.monotonic() > stop_at[0]:
                    return
                p = plan[i]
                started = time.perf_counter()
                try:
                    r = c.post("/v1/summarize", content=p.body, headers={"content-type": p.content_type})
                except httpx.HTTPError as e:
                    outcomes[i] = Outcome(i, p.kind, None, time.perf_counter() - started,
                                          f"no answer: {type(e).__name__}: {e}")
                    continue
                outcomes[i] = Outcome(i, p.kind, r.status_code, time.perf_counter() - started, check(p, r))

    threads = [threading.Thread(target=client, name=f"load-client-{k}", daemon=True) for k in range(clients)]
    for t in threads:
        t.start()
    stop_at[0] = time.monotonic() + deadline_s
    barrier.wait()
    started = time.perf_counter()
    for t in threads:
        t.join(max(0.0, stop_at[0] - time.monotonic()) + timeout_s + 5)
    wall = time.perf_counter() - started
    done = [o for o in outcomes if o is not None]
    return LoadResult(done, wall, clients, unfinished=len(plan) - len(done))


def rss_mb(pid: int | str = "self") -> float:
    """Resident memory (VmRSS) of a process in MB, from /proc (Linux)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS line")


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_subprocess(args, max_texts: int) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    cmd = [sys.executable, "-m", "agentsum.serve", "--checkpoint", str(args.checkpoint), "--port", str(port),
           "--max-batch", str(args.max_batch), "--batch-wait-ms", str(args.batch_wait_ms),
           "--max-texts", str(max_texts), "--log-level", "warning"]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(cmd, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with code {proc.returncode}")
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not start within 120 s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint", nargs="?", help="a .pt checkpoint (not needed with --url)")
    p.add_argument("--url", help="load an already running server instead of starting one")
    p.add_argument("--pid", type=int, help="with --url: the server's process id, to report its memory")
    p.add_argument("--in-process", action="store_true", help="run the server in a thread of this process")
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--requests", type=int, default=300)
    p.add_argument("--invalid", type=float, default=0.2, help="share of invalid requests (default 0.2)")
    p.add_argument("--attention", type=float, default=0.15, help="share of valid requests with attention")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-batch", type=int, default=16)
    p.add_argument("--batch-wait-ms", type=float, default=10)
    p.add_argument("--max-texts", type=int, default=8, help="server limit; the plan sends one more as invalid")
    p.add_argument("--threads", type=int, help="torch threads of the server")
    p.add_argument("--timeout", type=float, default=60, help="per-request timeout in seconds")
    p.add_argument("--deadline", type=float, default=600, help="no request starts after this many seconds")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON line")
    args = p.parse_args(argv)
    if not args.url and not args.checkpoint:
        p.error("give a checkpoint or --url")

    plan = make_plan(args.requests, seed=args.seed, invalid=args.invalid, attention=args.attention,
                     max_texts=args.max_texts)
    proc, server_ctx, pid = None, None, args.pid
    if args.url:
        url = args.url.rstrip("/")
    elif args.in_process:
        import torch

        from agentsum.serve.app import background_server, create_app

        if args.threads:
            torch.set_num_threads(args.threads)
        app = create_app(args.checkpoint, max_batch=args.max_batch, batch_wait_ms=args.batch_wait_ms,
                         max_texts=args.max_texts, threads=args.threads)
        server_ctx = background_server(app)
        url, pid = server_ctx.__enter__(), os.getpid()
    else:
        proc, url = _start_subprocess(args, args.max_texts)
        pid = proc.pid
    try:
        warm = make_plan(8, seed=args.seed + 1, invalid=0, attention=0.5, max_texts=args.max_texts)
        run_load(url, warm, min(4, args.clients), timeout_s=args.timeout)  # first-call costs out of the numbers
        gc.collect()
        before = rss_mb(pid) if pid else None
        result = run_load(url, plan, args.clients, timeout_s=args.timeout, deadline_s=args.deadline)
        gc.collect()
        after = rss_mb(pid) if pid else None
        try:
            result.stats = httpx.get(url + "/v1/model", timeout=args.timeout).json().get("batching", {})
        except httpx.HTTPError:
            result.stats = {}
    finally:
        if server_ctx is not None:
            server_ctx.__exit__(None, None, None)
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()

    s = result.summary()
    s["rss_before_mb"] = round(before, 1) if before is not None else None
    s["rss_after_mb"] = round(after, 1) if after is not None else None
    s["rss_growth_mb"] = round(after - before, 1) if before is not None and after is not None else None
    s["batching"] = result.stats
    if args.json:
        print(json.dumps(s))
    else:
        print(f"{s['requests']} requests from {s['clients']} clients in {s['wall_s']} s: {s['req_per_s']} req/s")
        print(f"answered {s['answered']}  2xx {s['2xx']}  4xx {s['4xx']}  5xx {s['5xx']}  "
              f"unanswered {s['unanswered']}  unexpected {s['unexpected']}")
        print(f"latency p50 {s['p50_ms']} ms  p95 {s['p95_ms']} ms  max {s['max_ms']} ms")
        if s["rss_growth_mb"] is not None:
            where = "this process (server + clients)" if args.in_process else f"server pid {pid}"
            print(f"memory ({where}): {s['rss_before_mb']} -> {s['rss_after_mb']} MB "
                  f"({s['rss_growth_mb']:+} MB)")
        if result.stats:
            b = result.stats
            print(f"server: {b.get('batches')} model calls, {b.get('documents')} documents, mean batch "
                  f"{b.get('mean_batch')}, largest {b.get('largest_batch')}, failed {b.get('failed_batches')}, "
                  f"rejected busy {b.get('rejected_busy')}")
        for o in result.problems[:10]:
            print(f"  request {o.index} ({o.kind}): {o.problem}")
    return 0 if s["unanswered"] == 0 and s["5xx"] == 0 and s["unexpected"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
