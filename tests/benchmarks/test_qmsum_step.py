"""benchmarks/speed/qmsum_step.py: the documents of its cases and its report."""

import sys
from types import SimpleNamespace

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks" / "speed"))
import qmsum_step  # noqa: E402

from agentsum.data.dataset import Document  # noqa: E402


def meeting(name: str, agents: int, summary: int) -> Document:
    return Document(name, [[f"{name}a{a}w{i}" for i in range(10)] for a in range(agents)],
                    [f"{name}s{i}" for i in range(summary)], "")


DOCS = [meeting("short", 2, 30), meeting("long", 6, 40), meeting("mid", 4, 120)]
CONFIG = SimpleNamespace(train=SimpleNamespace(batch_size=2, seed=1, bucket_batches=50))


def test_agent_and_summary_cases_cut_the_longest_meeting():
    agents, = qmsum_step.case_batch("agents", 3, DOCS, CONFIG)
    assert agents.agents == DOCS[1].agents[:3] and agents.summary == DOCS[1].summary
    short, = qmsum_step.case_batch("summary", 25, DOCS, CONFIG)
    assert short.agents == DOCS[1].agents and short.summary == DOCS[1].summary[:25]
    long, = qmsum_step.case_batch("summary", 100, DOCS, CONFIG)
    assert len(long.summary) == 100 and long.summary[40:80] == DOCS[1].summary  # repeated, then cut


def test_longest_case_pairs_the_longest_meetings_with_the_longest_summaries():
    docs = qmsum_step.case_batch("longest", 2, DOCS, CONFIG)
    assert [d.id for d in docs] == ["long", "mid"]
    assert [len(d.summary) for d in docs] == [120, 40]


def test_first_case_is_the_first_batch_of_the_epoch_order():
    first = qmsum_step.case_batch("first", 0, DOCS, CONFIG)
    batches = qmsum_step.epoch_batches(DOCS, CONFIG)
    assert [d.id for d in first] == [DOCS[i].id for i in batches[0]]
    assert [d.id for d in qmsum_step.case_batch("batch", 1, DOCS, CONFIG)] == [DOCS[i].id for i in batches[1]]
    assert sorted(i for b in batches for i in b) == [0, 1, 2]


def test_report_gives_cpu_per_thousand_tokens_and_steps_in_two_hours():
    results = [{"case": "agents", "size": 4, "shape": [1, 4, 400], "target": 101, "source_tokens": 1600,
                "cpu_s": 0.8, "wall_s": 2.0, "sys_s": 0.1, "page_faults": 12345, "peak_rss_gb": 0.5},
               {"case": "longest", "error": "over 600 s"},
               {"case": "epoch", "steps": [{"cpu_s": 4.0}, {"cpu_s": 8.0}], "cpu_s": 6.0, "wall_s": 15.0,
                "peak_rss_gb": 5.0},
               {"case": "lstm", "size": 8000, "threads": 2, "cpu_s": 5.9, "wall_s": 11.5, "loadavg": [3.6, 3.9, 3.1]}]
    text = qmsum_step.report(results, "python benchmarks/speed/qmsum_step.py", (1.0, 1.0, 1.0))
    assert "| longest meeting, 4 agents | (1, 4, 400) | 101 | 1600 | 0.80 | 0.10 | 12,345 | 2.00 | 500 | 0.50 |" in text
    assert "over 600 s" in text
    assert "mean 6.00 CPU s a step (min 4.00, max 8.00)" in text and "1200 steps in 120 CPU minutes" in text
    assert "| 8000 | 2 | 5.90 | 11.50 |" in text
