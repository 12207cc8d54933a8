"""Throughput and latency of ``agentsum serve`` with 1 and with 16 concurrent clients.

    python benchmarks/speed/bench_serve.py runs/demo/checkpoints/best.pt
    python benchmarks/speed/bench_serve.py CKPT --requests 64 --concurrency 1 4 16 --beam 1 --threads 2
    python benchmarks/speed/bench_serve.py CKPT --max-batch 1          # batching off, for comparison

The server runs in its own process (``python -m agentsum.serve``, uvicorn on a free loopback port), so
the clients (threads, one keep-alive httpx connection each) do not share its interpreter lock. Every
level of concurrency sends the same ``--requests`` requests, one article each (CNN/DailyMail articles from
``--data`` when the file exists, else a built-in news-style text), after ``--warmup`` unmeasured ones.

Reported per level: requests/s (requests / wall time), p50 / p95 latency, and the model calls the
server made (from ``/v1/model`` batching counters: documents per call shows the batching). The last line
is the ratio of the highest-concurrency throughput to the single-client one; with batching it should
exceed 1 (how much depends on the model: batching pays where one document leaves the CPU idle).
Measurements on a shared machine are noisy: compare ratios from one run.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "cnndm" / "validation_1000.jsonl"
SAMPLE = (
    "The city council voted on Tuesday to turn the old railway bridge into a park for walkers and cyclists. "
    "The bridge, built in 1901, has been closed to trains for more than twenty years. Supporters said the park "
    "would bring visitors to the river and help local shops, which have struggled since the factory closed. "
    "Opponents worried about the cost, which the council puts at 12 million dollars, and about parking in the "
    "narrow streets near the river. Work is expected to start next spring and to take about two years. The "
    "mayor said the project would be paid for partly by a state grant and partly by private donors, and that "
    "no money would be taken from the school budget. A public meeting on the design will be held next month. "
)


def load_texts(args) -> list[str]:
    if args.data and Path(args.data).exists():
        texts = []
        with open(args.data, encoding="utf-8") as f:
            for line in f:
                texts.append(json.loads(line)["article"])
                if len(texts) >= args.requests:
                    break
        if texts:
            return texts
    return [SAMPLE * 3] * args.requests


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(args, port: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "agentsum.serve", "--checkpoint", str(args.checkpoint), "--port", str(port),
           "--max-batch", str(args.max_batch), "--batch-wait-ms", str(args.batch_wait_ms),
           "--max-texts", "64", "--log-level", "warning"]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(cmd, env=env)
    deadline = time.monotonic() + args.start_timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with code {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.terminate()
    raise SystemExit(f"the server did not answer /health within {args.start_timeout} s")


def run_level(url: str, texts: list[str], clients: int, body_extra: dict) -> dict:
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    next_index = [0]
    barrier = threading.Barrier(clients)

    def worker() -> None:
        with httpx.Client(base_url=url, timeout=600) as c:
            barrier.wait()
            while True:
                with lock:
                    i = next_index[0]
                    next_index[0] += 1
                if i >= len(texts):
                    return
                started = time.perf_counter()
                r = c.post("/v1/summarize", json={"text": texts[i], **body_extra})
                elapsed = time.perf_counter() - started
                with lock:
                    if r.status_code == 200:
                        latencies.append(elapsed)
                    else:
                        failures.append(f"{r.status_code}: {r.text[:200]}")

    before = httpx.get(url + "/v1/model").json()["batching"]
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    after = httpx.get(url + "/v1/model").json()["batching"]
    if failures:
        raise SystemExit(f"{len(failures)} requests failed, e.g. {failures[0]}")
    calls = after["batches"] - before["batches"]
    docs = after["documents"] - before["documents"]
    q = statistics.quantiles(latencies, n=20, method="inclusive") if len(latencies) > 1 else latencies * 19
    return {"clients": clients, "requests": len(latencies), "seconds": round(wall, 3),
            "requests_per_s": round(len(latencies) / wall, 3),
            "p50_ms": round(statistics.median(latencies) * 1000, 1), "p95_ms": round(q[18] * 1000, 1),
            "model_calls": calls, "docs_per_call": round(docs / calls, 2) if calls else 0.0}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint", type=Path)
    p.add_argument("--requests", type=int, default=64, help="requests per concurrency level (default 64)")
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 16], help="client counts (default 1 16)")
    p.add_argument("--warmup", type=int, default=4)
    p.add_argument("--data", default=str(DEFAULT_DATA),
                   help="JSONL with an 'article' field (default: CNN/DM validation, if present)")
    p.add_argument("--beam", type=int, help="beam size (default: the checkpoint's)")
    p.add_argument("--max-length", type=int, help="summary length cap (default: the checkpoint's)")
    p.add_argument("--attention", action="store_true", help="ask for the attention payload too")
    p.add_argument("--max-batch", type=int, default=16)
    p.add_argument("--batch-wait-ms", type=float, default=10)
    p.add_argument("--threads", type=int, help="torch threads in the server")
    p.add_argument("--start-timeout", type=float, default=180)
    p.add_argument("--json", type=Path, help="also write the results here")
    args = p.parse_args()

    texts = load_texts(args)
    while len(texts) < args.requests:
        texts += texts[: args.requests - len(texts)]
    extra: dict = {}
    if args.beam:
        extra["beam_size"] = args.beam
    if args.max_length:
        extra["max_length"] = args.max_length
    if args.attention:
        extra["attention"] = True

    port = free_port()
    server = start_server(args, port)
    url = f"http://127.0.0.1:{port}"
    try:
        info = httpx.get(url + "/v1/model").json()
        print(f"model {info['checkpoint']} (step {info['step']}, {info['parameters']:,} parameters, "
              f"vocabulary {info['vocab_size']:,}); search {info['search_defaults']} {extra or ''}")
        print(f"server: max_batch {args.max_batch}, batch_wait_ms {args.batch_wait_ms}, "
              f"torch threads {info['limits']['threads']}; {len(texts)} requests per level")
        run_level(url, texts[: args.warmup], 1, extra) if args.warmup else None
        results = []
        print(f"{'clients':>7} {'req/s':>8} {'p50 ms':>9} {'p95 ms':>9} {'model calls':>12} {'docs/call':>10}")
        for clients in args.concurrency:
            r = run_level(url, texts, clients, extra)
            results.append(r)
            print(f"{r['clients']:>7} {r['requests_per_s']:>8.2f} {r['p50_ms']:>9.1f} {r['p95_ms']:>9.1f} "
                  f"{r['model_calls']:>12} {r['docs_per_call']:>10.2f}")
        base = results[0]["requests_per_s"]
        top = results[-1]
        ratio = top["requests_per_s"] / base if base else float("nan")
        print(f"throughput ratio {top['clients']} clients / {results[0]['clients']} client: {ratio:.2f}x")
        if args.json:
            args.json.write_text(json.dumps({"model": info["checkpoint"], "step": info["step"], "extra": extra,
                                             "max_batch": args.max_batch, "batch_wait_ms": args.batch_wait_ms,
                                             "levels": results, "ratio": ratio}, indent=2) + "\n")
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
