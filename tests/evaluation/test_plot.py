import argparse
import json
import math

import pytest

from agentsum.evaluation.plot import MetricsError, add_parser, plot_run, read_metrics, run, series, smooth

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def write_metrics(path, steps=120, rl_from=None, valid_every=20, rouge=True):
    lines = []
    for s in range(5, steps + 1, 5):
        rec = {"step": s, "time": 1000.0 + s, "loss": 3 + 5 * math.exp(-s / 30) + 0.1 * math.sin(s),
               "tokens_per_s": 2000 + 10 * (s % 7), "grad_norm": 0.5 + 0.01 * (s % 5), "lr": 1e-3}
        if rl_from is not None and s >= rl_from:
            rec.update(reward_sample=0.3 + s / 1000, reward_greedy=0.32 + s / 1200, rl=0.01, nll=3.1)
        lines.append(json.dumps(rec))
        if s % valid_every == 0:
            v = {"step": s, "time": 1000.0 + s, "valid_nll": 3.5 + 4 * math.exp(-s / 30)}
            if rouge:
                v["valid_rougeL"] = 20 + s / 10
            lines.append(json.dumps(v))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def is_png(path, min_bytes=5000):
    data = path.read_bytes()
    return data[:8] == PNG_MAGIC and len(data) > min_bytes


def test_plots_every_quantity(tmp_path):
    run_dir = tmp_path / "my-run"
    run_dir.mkdir()
    write_metrics(run_dir / "metrics.jsonl", rl_from=60)
    files = plot_run(run_dir)
    names = {f.name for f in files}
    assert names == {"loss.png", "validation.png", "rewards.png", "throughput.png", "lr.png", "grad_norm.png",
                     "overview.png"}
    for f in files:
        assert f.parent == run_dir / "plots"
        assert is_png(f), f


def test_without_rl_or_rouge_and_custom_out(tmp_path):
    path = write_metrics(tmp_path / "metrics.jsonl", rouge=False)
    files = plot_run(path, tmp_path / "out", smoothing=0.5)  # a metrics file may be given directly
    names = {f.name for f in files}
    assert "rewards.png" not in names and "validation.png" in names and "overview.png" in names
    assert all(f.parent == tmp_path / "out" and is_png(f) for f in files)


def test_missing_empty_and_malformed(tmp_path):
    with pytest.raises(MetricsError, match="metrics.jsonl: not found"):
        read_metrics(tmp_path / "metrics.jsonl")
    empty = tmp_path / "metrics.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(MetricsError, match=r"metrics\.jsonl: no metric records"):
        plot_run(tmp_path)
    good = json.dumps({"step": 1, "loss": 2.0})
    empty.write_text(f"{good}\n{good}\n{{not json\n{good}\n", encoding="utf-8")
    with pytest.raises(MetricsError, match=r"metrics\.jsonl:3: invalid JSON"):
        read_metrics(empty)
    empty.write_text(f"{good}\n{json.dumps({'step': 2, 'loss': 'x'})}\n", encoding="utf-8")
    with pytest.raises(MetricsError, match=r"metrics\.jsonl:2: 'loss'"):
        read_metrics(empty)
    empty.write_text(f"{json.dumps({'loss': 1.0})}\n", encoding="utf-8")
    with pytest.raises(MetricsError, match=r"metrics\.jsonl:1: 'step'"):
        read_metrics(empty)


def test_partial_last_line_and_resumed_steps(tmp_path):
    path = tmp_path / "metrics.jsonl"
    rows = [{"step": 1, "loss": 5.0}, {"step": 2, "loss": 4.0}, {"step": 2, "loss": 3.5}, {"step": 3, "loss": 3.0}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"step": 4, "lo', encoding="utf-8")
    records = read_metrics(path)  # a line still being written by a running job is skipped
    assert len(records) == 4
    assert series(records, "loss") == ([1, 2, 3], [5.0, 3.5, 3.0])  # a resumed run's repeat: later wins


def test_smooth():
    assert smooth([2.0, 2.0, 2.0], 0.9) == pytest.approx([2.0, 2.0, 2.0])
    out = smooth([1.0, float("nan"), 3.0], 0.5)
    assert out[0] == 1.0 and out[1] == 1.0 and 1.0 < out[2] < 3.0


def test_command(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["plot", str(tmp_path / "nowhere")])
    assert run(args) == 2
    assert "nowhere/metrics.jsonl: not found" in capsys.readouterr().err
    write_metrics(tmp_path / "metrics.jsonl")
    args = parser.parse_args(["plot", str(tmp_path), "--out", str(tmp_path / "png")])
    assert run(args) == 0
    assert (tmp_path / "png" / "loss.png").is_file()


def test_loss_panel_draws_the_nll_only_where_it_differs_from_the_loss():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from agentsum.evaluation.plot import panel_loss

    mle = [{"step": s, "time": float(s), "loss": 3.0 - s / 100, "nll": 3.0 - s / 100} for s in range(1, 40)]
    mixed = [{**r, "loss": r["loss"] + 0.5, "rl": 0.1} for r in mle]
    labels = {}
    for name, records in (("mle", mle), ("mixed", mixed)):
        fig, ax = plt.subplots()
        assert panel_loss(ax, records, None)
        labels[name] = ax.get_legend_handles_labels()[1]
        plt.close(fig)
    assert not any("NLL" in label for label in labels["mle"])
    assert any("training NLL" in label for label in labels["mixed"])
