"""The options of ``agentsum serve``, apart from the server so that the ``agentsum`` command does not
import FastAPI, pydantic and uvicorn (tens of MB of memory at start-up) unless it serves."""

from __future__ import annotations

import argparse

from agentsum.options import add_device_option, add_model_options, add_quantize_option


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_options(p, "a .pt checkpoint written by `agentsum train` or `agentsum export` (default: the "
                         "English dialogue model shipped with agentsum)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0 for all)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--max-body-bytes", type=int, default=1_000_000, help="largest request body (default 1000000)")
    p.add_argument("--max-batch", type=int, default=16, help="documents decoded together at most (default 16)")
    p.add_argument("--batch-wait-ms", type=float, default=10,
                   help="how long a document waits for others to batch with (default 10; 0 = no wait)")
    p.add_argument("--max-texts", type=int, default=64, help="texts per request at most (default 64)")
    add_device_option(p)
    add_quantize_option(p)
    p.add_argument("--threads", dest="serve_threads", type=int, metavar="N",
                   help="torch CPU threads for the model (default: torch's choice)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"],
                   help="uvicorn and agentsum log level (default info)")


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``serve`` on an argparse subparsers object; returns the new parser."""
    p = subparsers.add_parser(
        "serve", help="serve a checkpoint over HTTP (JSON API and web page)",
        description="Serve a checkpoint: POST /v1/summarize, GET /v1/model, GET /health, /openapi.json, and a "
                    "web page at / that shows the summary, the source split among agents and the attention.")
    add_arguments(p)
    return p


def run(args) -> int:
    from agentsum.serve.app import run as serve

    return serve(args)
