"""Shared fixtures: a tiny trained checkpoint on a synthetic corpus (seconds to build)."""

import json
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # lets test modules share helpers (from conftest import ...)

#: The repository root; the test folders mirror the package's (tests/data for agentsum/data, ...).
REPO = Path(__file__).resolve().parents[1]
#: Corpora shared between projects on this machine (tests that need one skip where it is missing).
SHARED_DATA = REPO.parent / "shared" / "data"
#: Files written for the tests (not from any corpus).
FIXTURES = Path(__file__).resolve().parent / "fixtures"
#: Skip reasons of the browser tests start with this; the end of the run reports them.
BROWSER_SKIP = "web page not tested in a browser: "

ANIMALS = "cat dog fox owl bee cow pig hen ant elk".split()
PLACES = "park river house field forest garden market school bridge tower".split()
VERBS = "saw chased found followed met heard".split()


def synthetic_rows(n: int, seed: int = 0) -> list[dict]:
    """Articles of five sentences whose summary restates the first and fourth."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        facts = [(rng.choice(ANIMALS), rng.choice(VERBS), rng.choice(ANIMALS), rng.choice(PLACES)) for _ in range(5)]
        article = " ".join(f"The {a} {v} a {b} near the {p}." for a, v, b, p in facts)
        summary = "\n".join(f"the {a} {v} a {b} ." for a, v, b, _ in (facts[0], facts[3]))
        rows.append({"id": f"doc{i}", "article": article, "summary": summary})
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> dict:
    """Train the `tiny` preset for 30 steps; returns paths: checkpoint, run_dir, train, test."""
    from agentsum.config import load_config
    from agentsum.training.trainer import Trainer

    root = tmp_path_factory.mktemp("tiny_run")
    train = write_jsonl(root / "train.jsonl", synthetic_rows(24))
    test = write_jsonl(root / "test.jsonl", synthetic_rows(6, seed=1))
    run_dir = root / "run"
    config = load_config("tiny", [f"data.train={train}", f"data.valid={test}", f"train.run_dir={run_dir}",
                                  "train.max_steps=30", "train.valid_every=10"])
    Trainer(config).run()
    return {"checkpoint": run_dir / "checkpoints" / "best.pt", "run_dir": run_dir, "train": train, "test": test}


def pytest_terminal_summary(terminalreporter):
    """Say at the end of the run, not only in the skip list, that the web page went untested."""
    reasons = {str(report.longrepr[-1]) for report in terminalreporter.stats.get("skipped", [])
               if isinstance(report.longrepr, tuple) and BROWSER_SKIP in str(report.longrepr[-1])}
    if reasons:
        terminalreporter.write_sep("!", "NOT TESTED", yellow=True, bold=True)
        for reason in sorted(reasons):
            terminalreporter.write_line(reason.removeprefix("Skipped: "), yellow=True)
