"""docs/serving.md's table of `agentsum serve` options says what the parser and the server do."""

from __future__ import annotations

import argparse
import re

from conftest import REPO

TABLE_ROW = re.compile(r"^\| (`--[^|]+) \| ([^|]+) \| ([^|]+) \|$")


def documented_options() -> dict[str, str]:
    """Option -> its default column, from docs/serving.md (a row may name several options,
    ``--host``, ``--port``, with one default each)."""
    rows = {}
    for line in (REPO / "docs" / "serving.md").read_text(encoding="utf-8").splitlines():
        match = TABLE_ROW.match(line)
        if not match:
            continue
        names = re.findall(r"`(--[a-z-]+)`", match.group(1))
        defaults = [d.strip() for d in match.group(2).split(",")] if len(names) > 1 else [match.group(2).strip()]
        assert len(defaults) == len(names), line
        rows.update(zip(names, defaults))
    return rows


def serve_parser() -> argparse.ArgumentParser:
    from agentsum.serve.options import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser


def test_the_documented_options_and_defaults_are_the_parsers():
    documented = documented_options()
    actions = {a.option_strings[0]: a for a in serve_parser()._actions if a.option_strings[0] != "-h"}
    assert set(documented) == set(actions)
    for name, action in actions.items():
        assert not action.required, name
        shown = documented[name]
        assert "required" not in shown, f"{name} is optional"
        if action.default is not None:
            assert shown == f"`{action.default}`", (name, action.default, shown)
    assert "shipped" in documented["--checkpoint"]


def test_serve_without_a_checkpoint_serves_the_shipped_model(monkeypatch):
    import uvicorn

    from agentsum import checkpoint
    from agentsum.serve import app

    served = []
    monkeypatch.setattr(app, "create_app", lambda path, **kwargs: served.append(path) or object())
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: None)
    assert app.run(serve_parser().parse_args([])) == 0
    assert served == [checkpoint.default_checkpoint()]
