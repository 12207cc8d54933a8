"""benchmarks/speed/bench_dca.py: the figures of several rounds put together."""

import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks" / "speed"))
import bench_dca  # noqa: E402


def test_each_figure_is_its_median_over_the_rounds_and_the_rest_is_kept():
    rounds = [{"preset": "m6", "agents": 3, "train_tokens_per_cpu_s": 900.0, "peak_rss_mb": 10.0},
              {"preset": "m6", "agents": 3, "train_tokens_per_cpu_s": 100.0, "peak_rss_mb": 30.0},
              {"preset": "m6", "agents": 3, "train_tokens_per_cpu_s": 500.0, "peak_rss_mb": 20.0}]
    out = bench_dca.median_run(rounds)
    assert out == {"preset": "m6", "agents": 3, "train_tokens_per_cpu_s": 500.0, "peak_rss_mb": 20.0}


def test_an_even_number_of_rounds_takes_the_lower_middle_figure():
    rounds = [{"preset": "m1", "x": 4.0}, {"preset": "m1", "x": 1.0}, {"preset": "m1", "x": 3.0}, {"preset": "m1", "x": 2.0}]
    assert bench_dca.median_run(rounds)["x"] == 2.0
    assert bench_dca.median_run(rounds[:1])["x"] == 4.0
