"""The per-document source cache and candidate words the sentence rewards share (agentsum.training.source_reading)."""

from agentsum.data.batch import make_batch
from agentsum.data.vocab import SPECIALS, Vocabulary
from agentsum.training.source_reading import SourceCache, candidate_words

VOCAB = Vocabulary(list(SPECIALS) + ["a", "b"])


def test_a_source_is_read_once_per_id_none_included_and_the_oldest_id_goes_first():
    reads = []

    def read(tokens):
        reads.append(tuple(tokens))
        return None if tokens[0] == "a" else len(tokens)

    batch = make_batch([[["A", "b"]], [["b"]], [["b", "b", "b"]]], VOCAB, ids=["x", "y", "z"])
    cache = SourceCache(read, size=2)
    assert cache(batch, 0) is None and cache(batch, 0) is None  # lower-cased, and a None is kept
    assert cache(batch, 1) == 1 and reads == [("a", "b"), ("b",)]
    assert cache(batch, 2) == 3  # a third id: x, the oldest, goes
    cache(batch, 0)
    assert reads == [("a", "b"), ("b",), ("b", "b", "b"), ("a", "b")]
    unnamed = make_batch([[["b"]]], VOCAB, ids=[""])
    cache(unnamed, 0), cache(unnamed, 0)
    assert reads[-2:] == [("b",), ("b",)]  # no id: read each time


def test_candidate_ids_read_as_words_with_the_documents_oov_words():
    batch = make_batch([[["a", "paris"]]], VOCAB)
    V = len(VOCAB)
    assert candidate_words([VOCAB.id("a"), V, V + 5], batch, 0, VOCAB) == ["a", "paris", ""]
