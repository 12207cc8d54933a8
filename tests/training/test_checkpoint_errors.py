"""Every way a --checkpoint can be wrong gets a message in our words: the path, what is wrong, exit 2,
and never torch's advice to re-run with weights_only=False."""

import pickle

import pytest
import torch

from agentsum.cli import main
from agentsum.checkpoint import CHECKPOINT_FORMAT, read_checkpoint, save_checkpoint


class Foreign:  # a pickled Python object: weights_only=True refuses it
    pass


def summarize_error(checkpoint, tmp_path, capsys):
    article = tmp_path / "a.txt"
    article.write_text("The cat sat on the mat.", encoding="utf-8")
    rc = main(["summarize", "--checkpoint", str(checkpoint), str(article)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "weights_only" not in err and "Traceback" not in err, err
    assert str(checkpoint) in err
    return err


def test_missing_file(tmp_path, capsys):
    assert "not found" in summarize_error(tmp_path / "absent.pt", tmp_path, capsys)


def test_directory_points_at_the_checkpoint_inside(tiny_run, tmp_path, capsys):
    run_dir = tiny_run["run_dir"]
    err = summarize_error(run_dir, tmp_path, capsys)
    assert "is a directory" in err and f"did you mean {run_dir / 'checkpoints' / 'best.pt'}" in err
    err = summarize_error(tmp_path, tmp_path, capsys)
    assert "is a directory" in err and "RUN_DIR/checkpoints/best.pt" in err


@pytest.mark.parametrize("content", [b"Amanda: hi\nJerry: hello\n", b"\x00\x01\x02\x03random bytes", b"<pad>\n<unk>\n"],
                         ids=["text", "random", "vocab.txt"])
def test_files_that_are_not_pytorch_files(tmp_path, capsys, content):
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    assert "not an agentsum checkpoint: not a PyTorch file" in summarize_error(path, tmp_path, capsys)


def test_empty_file(tmp_path, capsys):
    path = tmp_path / "empty.pt"
    path.write_bytes(b"")
    assert "is empty (0 bytes)" in summarize_error(path, tmp_path, capsys)


def test_truncated_file(tiny_run, tmp_path, capsys):
    data = tiny_run["checkpoint"].read_bytes()
    for cut in (len(data) // 2, len(data) - 100):
        path = tmp_path / f"cut{cut}.pt"
        path.write_bytes(data[:cut])
        assert "is truncated or damaged" in summarize_error(path, tmp_path, capsys)


def test_pickled_python_objects_are_refused_without_torch_advice(tmp_path, capsys):
    path = tmp_path / "pickled.pt"
    torch.save({"model": Foreign(), "config": {}, "vocab": []}, path)
    err = summarize_error(path, tmp_path, capsys)
    assert "holds Python objects" in err
    legacy = tmp_path / "legacy_pickle.pt"
    legacy.write_bytes(pickle.dumps({"model": Foreign()}, protocol=2))
    assert "holds Python objects" in summarize_error(legacy, tmp_path, capsys)


def test_a_torch_file_that_is_not_ours(tmp_path, capsys):
    path = tmp_path / "weights.pt"
    torch.save({"weights": torch.zeros(2)}, path)
    assert "is not an agentsum checkpoint (missing" in summarize_error(path, tmp_path, capsys)


def test_newer_checkpoint_format(tiny_run, tmp_path, capsys):
    state = read_checkpoint(tiny_run["checkpoint"])
    assert state["format"] == CHECKPOINT_FORMAT  # written by this version
    state["format"] = CHECKPOINT_FORMAT + 1
    path = tmp_path / "future.pt"
    save_checkpoint(state, path)
    err = summarize_error(path, tmp_path, capsys)
    assert f"checkpoint format {CHECKPOINT_FORMAT + 1}" in err and "upgrade agentsum" in err
