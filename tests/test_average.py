"""agentsum average: the mean of several checkpoints' weights, loadable like any checkpoint."""

import pytest
import torch

from agentsum.checkpoint import CheckpointError, average_checkpoints, load_model, read_checkpoint, save_checkpoint
from agentsum.cli import main


def step_files(tiny_run):
    files = sorted((tiny_run["run_dir"] / "checkpoints").glob("step-*.pt"))
    assert len(files) >= 2
    return files


def test_average_is_the_mean_of_the_weights_and_loads(tiny_run, tmp_path, capsys):
    files = step_files(tiny_run)
    out = tmp_path / "avg.pt"
    assert main(["average", *map(str, files), "--out", str(out)]) == 0
    assert "the mean of" in capsys.readouterr().out
    states = [read_checkpoint(f)["model"] for f in files]
    averaged = read_checkpoint(out)
    for name, value in averaged["model"].items():
        if value.is_floating_point():
            expected = torch.stack([s[name].double() for s in states]).mean(0).to(value.dtype)
            assert torch.allclose(value, expected, atol=1e-7), name
    assert "optimizer" not in averaged and averaged["averaged"]["from"] == [f.name for f in files]
    model, vocab, config, _ = load_model(out)
    assert len(vocab) == averaged["model"]["embedding.weight"].shape[0]
    # the mean differs from every input (the run's weights moved between checkpoints)
    assert all(not torch.equal(averaged["model"]["embedding.weight"], s["embedding.weight"]) for s in states)


def test_average_refuses_checkpoints_of_different_models(tiny_run, tmp_path):
    files = step_files(tiny_run)
    other = read_checkpoint(files[0])
    other["model"]["embedding.weight"] = other["model"]["embedding.weight"][:-1]
    save_checkpoint(other, tmp_path / "shape.pt")
    with pytest.raises(CheckpointError, match="embedding.weight has shape"):
        average_checkpoints([files[1], tmp_path / "shape.pt"], tmp_path / "out.pt")
    other = read_checkpoint(files[0])
    other["vocab"] = list(other["vocab"])[::-1] if isinstance(other["vocab"], list) else {"changed": True}
    save_checkpoint(other, tmp_path / "vocab.pt")
    with pytest.raises(CheckpointError, match="vocabulary differs"):
        average_checkpoints([files[1], tmp_path / "vocab.pt"], tmp_path / "out.pt")
    with pytest.raises(CheckpointError, match="at least two"):
        average_checkpoints([files[0]], tmp_path / "out.pt")
    assert main(["average", str(files[0]), str(tmp_path / "missing.pt"), "--out", str(tmp_path / "o.pt")]) == 2


def test_nll_gives_each_checkpoint_the_validation_nll_training_logged(tiny_run, tmp_path, capsys):
    """`agentsum nll` on the run's validation file reproduces the valid_nll logged at each checkpoint's
    step, and names the lowest; the mean of the checkpoints gets a value of its own."""
    import json
    import re

    files = step_files(tiny_run)
    logged = {}
    for line in (tiny_run["run_dir"] / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        if "valid_nll" in record:
            logged[record["step"]] = record["valid_nll"]
    avg = tmp_path / "avg.pt"
    assert main(["average", *map(str, files), "--out", str(avg)]) == 0
    capsys.readouterr()
    assert main(["nll", *map(str, files), str(avg), "--data", tiny_run["test"], "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    values = {}
    for f in [*files, avg]:
        (match,) = re.findall(rf"^{re.escape(str(f))}: NLL ([0-9.]+) per summary token on 6 documents", out, re.M)
        values[f] = float(match)
    for f in files:
        step = read_checkpoint(f)["step"]
        assert values[f] == pytest.approx(logged[step], abs=1e-4), f.name
    lowest = min(values, key=values.get)
    assert f"lowest: {lowest} " in out
    assert len(set(values.values())) == len(values)  # every checkpoint, and the mean, scored on its own weights


def test_nll_names_no_lowest_among_checkpoints_of_other_vocabularies(tiny_run, capsys):
    assert main(["nll", str(tiny_run["checkpoint"]), "dialogue", "--data", tiny_run["test"], "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert out.count(" per summary token on 6 documents") == 2
    assert "\nlowest:" not in out and "no lowest: the checkpoints have other vocabularies" in out
