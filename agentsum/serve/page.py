"""The web page at ``/`` (``agentsum/web``: plain HTML, CSS and JavaScript, no CDN, no build step)
and ``/docs``, a plain offline list of the endpoints (FastAPI's Swagger page loads its scripts from
a CDN, which does not work offline); and the example text the page's "Try an example" loads, chosen
for the kind of text the served model was trained on (:func:`example_kind`)."""

from __future__ import annotations

import html
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles

from agentsum.checkpoint import SHIPPED_MODELS, shipped_path

WEB_DIR = Path(__file__).parent.parent / "web"
#: The example text of each kind, in ``agentsum/web`` (written for the page: the call is an invented
#: company's quarter, not a transcript from a corpus).
EXAMPLES = {"news": "example-news.txt", "dialogue": "example-dialogue.txt", "call": "example-call.txt"}


def example_kind(config, checkpoint: Path) -> str:
    """What kind of text suits the model: ``dialogue`` for a dialogue model (``data.dialogue``);
    ``call`` for the shipped calls model, or any model trained on its corpus (ECTSum: the training
    data's path names it); ``news`` for any other."""
    if config.data.dialogue:
        return "dialogue"
    calls = SHIPPED_MODELS["calls"]
    train = config.data.train
    trained_on_calls = train is not None and calls.corpus.lower() in str(train.path).lower()
    if trained_on_calls or Path(checkpoint).resolve() == shipped_path(calls.name).resolve():
        return "call"
    return "news"


def example_text(kind: str) -> str:
    """The example text of ``kind`` (:data:`EXAMPLES`), as the page puts it in the text box."""
    return (WEB_DIR / EXAMPLES[kind]).read_text(encoding="utf-8").strip()


def add_page(app: FastAPI) -> None:
    """Serve the page at ``/`` (its scripts and styles under ``/static``) and ``/docs``."""

    @app.get("/docs", include_in_schema=False, response_class=HTMLResponse)
    async def docs_page() -> HTMLResponse:
        return HTMLResponse(docs_html(app.openapi()))

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(WEB_DIR / "index.html", media_type="text/html; charset=utf-8",
                            headers={"Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=WEB_DIR), name="static")


def docs_html(schema: dict) -> str:
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
