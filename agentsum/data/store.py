"""A prepared corpus on disk: tokenized once, memory-mapped by every process that trains on it.

``agentsum prepare`` (and ``agentsum train`` when a store is missing) reads a corpus once, streaming,
tokenizes and splits it among the agents in worker processes, and writes a *store*: a directory

    manifest.json     what the store was prepared from (the key), its counts, each file's size and CRC-32
    documents.arrow   Arrow IPC file, one row per document: id, article token ids (the agents' tokens
                      in order), agent lengths (a fixed-size list of M; under ``data.agents: auto`` a
                      list as long as the document's own agent count), summary token ids, reference text
    types.arrow       Arrow IPC file: every token type of the corpus with its count, by descending count
                      (ties alphabetical, as :meth:`Vocabulary.build`); a token id is a row of this file

Token ids index the corpus's *full* type list, so any ``data.vocab_size`` applies when a batch is made
(the first V types are the vocabulary, the rest are in-article OOV words for the copy mechanism) and a
new V needs no new prepare. A :class:`CorpusStore` is a ``Sequence[Document]``: documents come back
exactly as :func:`agentsum.data.dataset.prepare` makes them, so batches, losses and resume are those of
the in-memory path. Its files are memory-mapped, so processes on one machine share one copy in the page
cache and a process's memory no longer grows with the corpus.

Trust:
* The key holds the source's identity (resolved path, size, modification time; for a directory of
  ``.story`` files their number, total size and newest time) and every data setting that changes
  tokens. :func:`open_or_prepare` reuses a store whose key matches, prepares a missing one, and refuses
  one that differs, naming the setting.
* The manifest also holds a BLAKE2b digest of the source's bytes. A corpus whose modification time
  changed while its size did not (copied, synced, checked out again, touched) is read once more and
  compared with it: the same bytes keep the store (its manifest takes the new time), other bytes are
  refused as a changed corpus.
* Processes that start together take a file lock: one prepares, the others wait; then they open it
  side by side under a shared lock, which a later prepare of the same path waits for.
* A store is written in a hidden temporary directory renamed into place once complete, so a prepare
  that is killed leaves nothing that could be taken for a store (the next prepare removes the debris).
* Opening checks every file's size; ``verify=True`` (the default) also checks each file's CRC-32, read
  with plain reads so that the check does not fault the mapped pages into the process.

Why Arrow: the measurements and the choice are in docs/architecture.md ("The corpus store").
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import fcntl
import hashlib
import itertools
import json
import mmap
import multiprocessing
import os
import shutil
import sys
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agentsum.data import sources
from agentsum.data.corpus import Example
from agentsum.data.dataset import DataConfig, DataSource, Document, agent_budget, prepare
from agentsum.data.language import text_processor
from agentsum.data.records import DataError, ReadStats
from agentsum.data.vocab import SPECIALS, Vocabulary

#: Bumped when the layout of the files changes.
STORE_FORMAT = 1
#: Bumped when tokenization or the agent split changes what a corpus prepares to: a store written by
#: an older preprocessing is refused (its key differs) instead of silently training on other tokens.
PREPROCESSING_VERSION = 2  # 2: speaker tags (#Person1#) one token

#: Documents per task sent to a worker, and per Arrow record batch.
CHUNK = 512

#: Types a store keeps as Python strings (the most frequent: almost every token of a batch); the
#: rest are read from the mapped file when a document holds one.
HEAD_TYPES = 100_000

MANIFEST = "manifest.json"
DOCUMENTS = "documents.arrow"
TYPES = "types.arrow"

#: The data settings that change what a corpus prepares to (and so belong to a store's key).
KEY_SETTINGS = ("language", "lowercase", "dialogue", "zh_tokenizer", "agents", "max_article_tokens", "agent_tokens",
                "max_summary_tokens", "article_field", "summary_field", "id_field", "min_human_label", "skip_bad")


class StoreError(DataError):
    """A store that cannot be used: damaged, truncated, or prepared from other data or settings."""


def _pyarrow():
    try:
        import pyarrow  # noqa: PLC0415 - a dependency of the store only
        import pyarrow.ipc  # noqa: F401, PLC0415
    except ImportError:
        raise StoreError("the corpus store needs pyarrow: `pip install pyarrow` (or set data.store: false to "
                         "prepare the corpus in memory at every start)") from None
    return pyarrow


# --------------------------------------------------------------------------------------------- key

def source_identity(spec: str) -> dict[str, Any]:
    """What identifies a corpus's content without reading it: path, size and modification time."""
    if spec.startswith("hf:"):
        return {"spec": spec}
    path = Path(spec)
    if not path.exists():
        raise DataError(f"{spec}: no such file or directory")
    if path.is_dir():
        files = [p.stat() for p in path.rglob("*.story") if p.is_file()]
        return {"path": str(path.resolve()), "files": len(files), "bytes": sum(s.st_size for s in files),
                "mtime_ns": max((s.st_mtime_ns for s in files), default=0)}
    stat = path.stat()
    return {"path": str(path.resolve()), "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def source_digest(spec: str) -> str | None:
    """BLAKE2b of the corpus's bytes (for a directory, of each ``.story`` file's relative path and bytes,
    in sorted order); None for a ``hf:`` dataset, whose files are not ours to read."""
    if spec.startswith("hf:"):
        return None
    path = Path(spec)
    digest = hashlib.blake2b(digest_size=16)
    files = sorted(p for p in path.rglob("*.story") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        if path.is_dir():
            digest.update(str(file.relative_to(path)).encode("utf-8") + b"\0")
        with open(file, "rb") as handle:
            while block := handle.read(1 << 22):
                digest.update(block)
    return digest.hexdigest()


def store_key(source: DataSource, cfg: DataConfig) -> dict[str, Any]:
    """The key a store is prepared under: the source (identity and row range) and the token settings."""
    settings = {name: getattr(cfg, name) for name in KEY_SETTINGS}
    settings["agent_tokens"] = agent_budget(cfg)  # the resolved per-agent budget (Table 6 default applied)
    if cfg.auto_agents:  # only then: the keys of stores prepared before max_agents existed stay as they were
        settings["max_agents"] = cfg.max_agents
    if cfg.agent_split == "speakers":  # only then, as above
        settings["agent_split"] = cfg.agent_split
    return {"source": {**source_identity(source.path), "start": source.start or 0, "end": source.end},
            "settings": settings, "preprocessing": PREPROCESSING_VERSION, "format": STORE_FORMAT}


def key_difference(stored: dict[str, Any], wanted: dict[str, Any]) -> str | None:
    """The first difference between two keys, in words; None when they match."""
    for name in ("format", "preprocessing"):
        if stored.get(name) != wanted.get(name):
            return f"{name} version {stored.get(name)} (this agentsum writes {wanted.get(name)})"
    for name, value in wanted["settings"].items():
        if stored.get("settings", {}).get(name, "missing") != value:
            return f"data.{name}: the store has {stored['settings'].get(name)!r}, the configuration {value!r}"
    old, new = stored.get("source", {}), wanted["source"]
    for name in ("spec", "path", "start", "end"):
        if old.get(name) != new.get(name):
            return f"source {name}: the store has {old.get(name)!r}, the configuration {new.get(name)!r}"
    for name in ("files", "bytes", "mtime_ns"):
        if old.get(name) != new.get(name):
            return (f"the corpus {new.get('path')} changed since the store was prepared ({name}: "
                    f"{old.get(name)} then, {new.get(name)} now)")
    return None


# ------------------------------------------------------------------------------------------ reading

@dataclasses.dataclass
class _Chunk:
    """Views into one Arrow record batch (zero-copy over the mapped file)."""

    ids: Any  # pyarrow StringArray
    references: Any
    article_offsets: np.ndarray
    article_tokens: np.ndarray
    agent_offsets: np.ndarray  # (n + 1,): document j's agents are agent_lengths[offsets[j]:offsets[j + 1]]
    agent_lengths: np.ndarray  # tokens per agent, every document's agents in order
    summary_offsets: np.ndarray
    summary_tokens: np.ndarray


class CorpusStore(Sequence[Document]):
    """A prepared corpus, read through memory maps. ``store[i]`` is the i-th :class:`Document`."""

    def __init__(self, path: str | Path, *, verify: bool = True):
        pa = _pyarrow()
        self.path = Path(path)
        self.manifest = read_manifest(self.path)
        check_files(self.path, self.manifest["files"], verify=verify)
        try:
            self._maps = [_map(self.path / DOCUMENTS), _map(self.path / TYPES)]
            self._documents = pa.ipc.open_file(pa.BufferReader(pa.py_buffer(self._maps[0])))
            types = pa.ipc.open_file(pa.BufferReader(pa.py_buffer(self._maps[1]))).read_all()
        except (pa.ArrowInvalid, OSError, ValueError) as e:
            raise StoreError(f"{self.path}: damaged store ({e}); prepare it again") from None
        # Token types by id (descending count), left in the mapped file: documents are decoded with
        # Arrow's take, so a process holds no Python string per type (710k at CNN/DM's size).
        self._type_array = types.column("token").combine_chunks()
        self._pa = pa
        self._head: list[str] = self._type_array[:HEAD_TYPES].to_pylist()
        #: Each type's count in the corpus, by id.
        self.counts: np.ndarray = types.column("count").to_numpy()
        self._chunks: list[_Chunk] = []
        starts = [0]
        for k in range(self._documents.num_record_batches):
            batch = self._documents.get_batch(k)
            article, summary = batch.column("article"), batch.column("summary")
            self._chunks.append(_Chunk(
                ids=batch.column("id"), references=batch.column("reference"),
                article_offsets=article.offsets.to_numpy(), article_tokens=article.values.to_numpy(),
                **_agent_lengths(pa, batch.column("agent_lengths")),
                summary_offsets=summary.offsets.to_numpy(), summary_tokens=summary.values.to_numpy()))
            starts.append(starts[-1] + batch.num_rows)
        self._starts = starts
        if starts[-1] != self.manifest["documents"]:
            raise StoreError(f"{self.path}: {starts[-1]} documents in {DOCUMENTS}, the manifest says "
                             f"{self.manifest['documents']}; prepare the store again")
        #: Tokens per document (article + summary), the length the batcher buckets by.
        self.lengths: np.ndarray = np.concatenate(
            [np.diff(c.article_offsets) + np.diff(c.summary_offsets) for c in self._chunks]) \
            if self._chunks else np.zeros(0, dtype=np.int64)
        # Opening read a few bytes of every record batch, and the kernel maps 64 KB around each page
        # it faults in: 310 MB of the 287k store counted in this process's RSS although it uses
        # none of it. Dropping those page-table entries keeps the pages in the page cache (the file
        # is read-only, nothing is lost); later reads map just the pages they touch.
        for mapped in self._maps:
            _drop_mapped_pages(mapped)

    @property
    def key(self) -> dict[str, Any]:
        return self.manifest["key"]

    def __len__(self) -> int:
        return self._starts[-1]

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"document {index} outside the store's {len(self)}")
        k = bisect.bisect_right(self._starts, index) - 1
        c, j = self._chunks[k], index - self._starts[k]
        words = self._words(c.article_tokens[c.article_offsets[j]:c.article_offsets[j + 1]])
        agents, start = [], 0
        for n in c.agent_lengths[c.agent_offsets[j]:c.agent_offsets[j + 1]].tolist():
            agents.append(words[start:start + n])
            start += n
        summary = self._words(c.summary_tokens[c.summary_offsets[j]:c.summary_offsets[j + 1]])
        return Document(id=c.ids[j].as_py(), agents=agents, summary=summary, reference=c.references[j].as_py())

    def _words(self, ids: np.ndarray) -> list[str]:
        """Token strings of ids: the most frequent types from a list held in memory (the same size at
        any corpus size), the rare rest from the mapped type column."""
        if not len(ids):
            return []
        head = self._head
        rare = ids >= len(head)
        if not rare.any():
            return list(map(head.__getitem__, ids.tolist()))
        words = list(map(head.__getitem__, np.where(rare, 0, ids).tolist()))
        where = np.flatnonzero(rare)
        for k, w in zip(where.tolist(), self._type_array.take(self._pa.array(ids[where])).to_pylist()):
            words[k] = w
        return words

    @property
    def types(self) -> list[str]:
        """Every token type, by id (a new list of the whole type list: for inspection, not per batch)."""
        return self._type_array.to_pylist()

    def vocabulary(self, size: int) -> Vocabulary:
        """The ``size`` most frequent types after the special tokens: what :meth:`Vocabulary.build`
        gives for the same documents, without reading them."""
        specials = set(SPECIALS)
        ranked = [t for t in self._type_array[: size + len(SPECIALS)].to_pylist() if t not in specials][:size]
        return Vocabulary(list(SPECIALS) + ranked)

    def check_key(self, wanted: dict[str, Any]) -> None:
        check_key(self.path, self.manifest, wanted)


def _agent_lengths(pa, column) -> dict[str, np.ndarray]:
    """A record batch's agent lengths as offsets and values: a fixed-size list (a fixed M) or a list
    (``data.agents: auto``, each document its own count)."""
    values = column.values.to_numpy()
    if pa.types.is_fixed_size_list(column.type):
        size = column.type.list_size
        return {"agent_offsets": np.arange(len(column) + 1, dtype=np.int64) * size, "agent_lengths": values}
    return {"agent_offsets": column.offsets.to_numpy(), "agent_lengths": values}


def _map(path: Path) -> mmap.mmap:
    """``path`` mapped read-only (Arrow reads it zero-copy through ``pa.py_buffer``); our own map
    rather than ``pa.memory_map``, so that :func:`_drop_mapped_pages` can advise the kernel on it."""
    with open(path, "rb") as handle:
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


def _drop_mapped_pages(mapped: mmap.mmap) -> None:
    if hasattr(mapped, "madvise") and hasattr(mmap, "MADV_DONTNEED"):  # Linux, macOS; elsewhere RSS stays higher
        mapped.madvise(mmap.MADV_DONTNEED)


def read_manifest(path: Path) -> dict[str, Any]:
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        raise StoreError(f"{path}: not a prepared corpus store (no {MANIFEST}); write one with `agentsum prepare`")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if not isinstance(manifest.get("files"), dict) or not isinstance(manifest.get("key"), dict):
            raise KeyError("files or key")
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise StoreError(f"{manifest_path}: damaged manifest ({type(e).__name__}: {e}); prepare the store again") \
            from None
    return manifest


def only_touched(stored: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """Whether two keys differ in the source's modification time alone."""
    def without_time(key):
        return {**key, "source": {k: v for k, v in key.get("source", {}).items() if k != "mtime_ns"}}
    return stored != wanted and without_time(stored) == without_time(wanted)


def check_key(path: Path, manifest: dict[str, Any], wanted: dict[str, Any],
              warn: Callable[[str], None] | None = None) -> None:
    """A :class:`StoreError` naming the first difference when the store at ``path`` has another key.
    When only the source's modification time differs, its bytes decide: the digest in the manifest
    matches, and the manifest takes the new time (written atomically), or the corpus changed."""
    difference = key_difference(manifest["key"], wanted)
    if difference is not None and only_touched(manifest["key"], wanted) and manifest.get("source_digest"):
        source = wanted["source"]
        if source_digest(source["path"]) == manifest["source_digest"]:
            _write_manifest(path, {**manifest, "key": wanted})
            if warn is not None:
                warn(f"{source['path']}: its modification time changed, its bytes did not; reusing the store at "
                     f"{path}")
            return
        difference += "; its bytes differ from those the store was prepared from"
    if difference is not None:
        raise StoreError(f"{path}: this store was prepared from other data or settings ({difference}); "
                         f"prepare it again with `agentsum prepare --force`, or set data.store_dir to another "
                         f"directory")


def _crc32(path: Path) -> int:
    crc = 0
    with open(path, "rb") as handle:
        while block := handle.read(1 << 22):
            crc = zlib.crc32(block, crc)
    return crc


def check_files(root: Path, files: dict[str, dict[str, int]], *, verify: bool) -> None:
    """Every file of the manifest is there with its size (and, with ``verify``, its CRC-32)."""
    for name, expected in files.items():
        path = root / name
        if not path.is_file():
            raise StoreError(f"{path}: missing from the store; prepare it again")
        size = path.stat().st_size
        if size != expected["bytes"]:
            raise StoreError(f"{path}: {size} bytes, the manifest says {expected['bytes']} (truncated or "
                             f"damaged); prepare the store again")
        if verify and _crc32(path) != expected["crc32"]:
            raise StoreError(f"{path}: checksum mismatch (the file is damaged); prepare the store again")


# ---------------------------------------------------------------------------------------- preparing

_worker_cfg: DataConfig | None = None
_worker_language = None


def _init_worker(cfg: DataConfig) -> None:
    global _worker_cfg, _worker_language
    _worker_cfg, _worker_language = cfg, text_processor(cfg)


def _prepare_chunk(rows: list[tuple[str, str, str]]) -> dict[str, Any]:
    """Tokenize a chunk of (id, article, summary) rows; token ids index the chunk's own type list, so
    the parent maps a few thousand strings, not every token."""
    cfg, language = _worker_cfg, _worker_language
    article: list[str] = []
    summary: list[str] = []
    summary_lengths, agent_lengths, agent_counts, ids, references = [], [], [], [], []
    dropped = 0
    for doc_id, text, target in rows:
        doc = prepare(Example(doc_id, text, target, ""), cfg, language)
        if not any(doc.agents):  # nothing to encode, as prepare_all(drop_empty=True)
            dropped += 1
            continue
        for chunk in doc.agents:
            article.extend(chunk)
        summary.extend(doc.summary)
        summary_lengths.append(len(doc.summary))
        agent_lengths.extend(len(chunk) for chunk in doc.agents)
        agent_counts.append(len(doc.agents))
        ids.append(doc.id)
        references.append(doc.reference)
    # First-seen ids in one pass over the tokens, all of it in C: a missing token takes the next
    # number from the counter (three passes, two of them in Python, took about a quarter of the chunk's time)
    index: collections.defaultdict[str, int] = collections.defaultdict(itertools.count().__next__)
    article_ids = np.fromiter(map(index.__getitem__, article), np.int32, len(article))
    summary_ids = np.fromiter(map(index.__getitem__, summary), np.int32, len(summary))
    return {"types": list(index), "article": article_ids,
            "summary_lengths": np.asarray(summary_lengths, dtype=np.int64),
            "summary": summary_ids,
            "agent_lengths": np.asarray(agent_lengths, dtype=np.int32),
            "agent_counts": np.asarray(agent_counts, dtype=np.int64),
            "ids": ids, "references": references, "dropped": dropped}


def _chunks(examples: Iterator[Example], size: int) -> Iterator[list[tuple[str, str, str]]]:
    chunk: list[tuple[str, str, str]] = []
    for ex in examples:
        chunk.append((ex.id, ex.article, ex.summary))
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def default_workers() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def estimate_rows(spec: str, start: int | None = None, end: int | None = None) -> int | None:
    """Rows [start, end) of a corpus, for a progress line's ETA: ``end - start`` when both bounds say
    it, else from the lines of a plain line-oriented file (a fast byte count); None when that says
    nothing (directories, JSON arrays, compressed files, ``hf:``)."""
    if end is not None and end >= 0 and (start or 0) >= 0:
        return max(end - (start or 0), 0)
    path = Path(spec)
    if spec.startswith("hf:") or not path.is_file() or path.suffix in (".gz", ".json", ".story", ".txt"):
        return None
    lines = 0
    with open(path, "rb") as handle:
        while block := handle.read(1 << 24):
            lines += block.count(b"\n")
    return len(range(lines)[start:end])


def store_root(cfg: DataConfig, run_dir: str | Path) -> Path:
    """The directory that holds a run's stores (``ROOT/train``, ``ROOT/valid``): ``data.store_dir``,
    else ``RUN_DIR/data``."""
    return Path(cfg.store_dir) if cfg.store_dir else Path(run_dir) / "data"


class Progress:
    """Documents/s and ETA on stderr, rewritten in place on a terminal, a line every 10 s otherwise."""

    def __init__(self, label: str, total: int | None, enabled: bool = True, every: float = 10.0):
        self.label, self.total, self.enabled = label, total, enabled
        self.started = self.shown = time.perf_counter()
        self.live = sys.stderr.isatty()
        self.every = 0.5 if self.live else every

    def line(self, done: int) -> str:
        elapsed = time.perf_counter() - self.started
        rate = done / max(elapsed, 1e-9)
        text = f"{self.label}: {done:,}"
        if self.total:
            left = max(self.total - done, 0) / max(rate, 1e-9)
            text += f"/{self.total:,} documents ({100 * done / self.total:.0f}%), {rate:,.0f} docs/s, ETA {left:.0f}s"
        else:
            text += f" documents, {rate:,.0f} docs/s"
        return text

    def update(self, done: int, final: bool = False) -> None:
        now = time.perf_counter()
        if not self.enabled or (not final and now - self.shown < self.every):
            return
        self.shown = now
        print(("\r" if self.live else "") + self.line(done), end="\n" if (final or not self.live) else "",
              file=sys.stderr, flush=True)


def prepare_store(source: DataSource, cfg: DataConfig, path: str | Path, *, workers: int | None = None,
                  warn: Callable[[str], None] | None = None, progress: bool = True) -> CorpusStore:
    """Read ``source`` once and write its store at ``path`` (replacing what is there); see the module
    docstring. Memory stays bounded: chunks stream through the workers and are written as they return."""
    pa = _pyarrow()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    key = store_key(source, cfg)
    digest = source_digest(source.path)  # before reading: a corpus rewritten meanwhile is not taken as this one
    workers = workers or default_workers()
    _remove_debris(path)
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}"
    tmp.mkdir()
    started = time.perf_counter()
    stats = ReadStats()
    examples = sources.iter_examples(source.path, start=source.start, end=source.end, article_field=cfg.article_field,
                                     summary_field=cfg.summary_field, id_field=cfg.id_field, skip_bad=cfg.skip_bad,
                                     min_human_label=cfg.min_human_label, stats=stats)
    total = estimate_rows(source.path, source.start, source.end)
    shown = Progress(f"preparing {source.path}", total, enabled=progress)
    schema = pa.schema([("id", pa.string()), ("article", pa.list_(pa.int32())),
                        # a fixed M keeps the fixed-size list of the stores written before agents: auto
                        ("agent_lengths", pa.list_(pa.int32(), -1 if cfg.auto_agents else cfg.agents)),
                        ("summary", pa.list_(pa.int32())),
                        ("reference", pa.string())])
    # corpus-wide first-seen ids; a missing type takes the next number (one C-level lookup per type,
    # as in the workers' _prepare_chunk)
    type_index: collections.defaultdict[str, int] = collections.defaultdict(itertools.count().__next__)
    counts = np.zeros(1 << 16, dtype=np.int64)
    kept = dropped = 0
    provisional = tmp / "provisional.arrow"
    try:
        with _pool(cfg, workers) as run, pa.OSFile(str(provisional), "wb") as sink, \
                pa.ipc.new_file(sink, schema) as writer:
            for part in run(_chunks(examples, CHUNK)):
                lut = np.fromiter(map(type_index.__getitem__, part["types"]),
                                  dtype=np.int32, count=len(part["types"]))
                if len(type_index) > counts.size:
                    counts = np.concatenate([counts, np.zeros(max(counts.size, len(type_index) - counts.size),
                                                              dtype=np.int64)])
                article, summary = lut[part["article"]], lut[part["summary"]]
                counts[: len(type_index)] += np.bincount(article, minlength=len(type_index))[: len(type_index)]
                counts[: len(type_index)] += np.bincount(summary, minlength=len(type_index))[: len(type_index)]
                writer.write_batch(_record_batch(pa, schema, part, article, summary, cfg))
                kept += len(part["ids"])
                dropped += part["dropped"]
                shown.update(kept + dropped)
        shown.update(kept + dropped, final=True)
        if kept == 0:
            raise DataError(sources.no_examples(source.path, source.start, source.end, stats)
                            + (f"; {dropped} documents had no tokens" if dropped else ""))
        # Final ids: types by descending count, ties alphabetical (Vocabulary.build's order).
        types = list(type_index)
        # (a stable sort by count over the alphabetical order: no Python key per type)
        alphabetical = np.asarray(sorted(range(len(types)), key=types.__getitem__), dtype=np.int64)
        order = alphabetical[np.argsort(-counts[alphabetical], kind="stable")]
        rank = np.empty(len(types), dtype=np.int32)
        rank[order] = np.arange(len(types), dtype=np.int32)
        _renumber(pa, provisional, tmp / DOCUMENTS, rank)
        provisional.unlink()
        type_table = pa.table({"token": pa.array([types[i] for i in order], pa.string()),
                               "count": pa.array(counts[order], pa.int64())})
        with pa.OSFile(str(tmp / TYPES), "wb") as sink, pa.ipc.new_file(sink, type_table.schema) as writer:
            writer.write_table(type_table)
        seconds = time.perf_counter() - started
        manifest = {"key": key, "source_digest": digest, "documents": kept, "dropped_empty": dropped, "skipped_bad": stats.skipped,
                    "types": len(types), "tokens": int(counts.sum()), "agents": cfg.agents,
                    "prepare_seconds": round(seconds, 2), "workers": workers,
                    "files": {name: {"bytes": (tmp / name).stat().st_size, "crc32": _crc32(tmp / name)}
                              for name in (DOCUMENTS, TYPES)}}
        for name in (DOCUMENTS, TYPES):
            _fsync(tmp / name)
        _write_manifest(tmp, manifest)
        _replace_dir(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    report = stats.report(source.path)
    if report is not None and warn is not None:
        warn(report)
    if warn is not None:
        warn(f"prepared {kept:,} documents ({len(types):,} token types) from {source.path} in {seconds:.1f}s "
             f"({(kept + dropped) / max(seconds, 1e-9):,.0f} docs/s, {workers} worker(s)) into {path}")
    return CorpusStore(path, verify=False)


def _record_batch(pa, schema, part: dict[str, Any], article: np.ndarray, summary: np.ndarray, cfg: DataConfig):
    n = len(part["ids"])
    agent_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(part["agent_counts"], out=agent_offsets[1:])
    article_offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.add.reduceat(part["agent_lengths"], agent_offsets[:-1]) if n else [], out=article_offsets[1:])
    lengths = pa.array(part["agent_lengths"], pa.int32())
    if cfg.auto_agents:
        agent_lengths = pa.ListArray.from_arrays(pa.array(agent_offsets.astype(np.int32)), lengths)
    else:
        agent_lengths = pa.FixedSizeListArray.from_arrays(lengths, cfg.agents)
    summary_offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(part["summary_lengths"], out=summary_offsets[1:])
    return pa.record_batch([
        pa.array(part["ids"], pa.string()),
        pa.ListArray.from_arrays(pa.array(article_offsets), pa.array(article, pa.int32())),
        agent_lengths,
        pa.ListArray.from_arrays(pa.array(summary_offsets), pa.array(summary, pa.int32())),
        pa.array(part["references"], pa.string()),
    ], schema=schema)


def _renumber(pa, source: Path, target: Path, rank: np.ndarray) -> None:
    """Rewrite the provisional (first-seen) token ids as final (frequency-ranked) ids, batch by batch."""
    # read, not mapped: mapped pages read once would count as this process's memory (RSS)
    reader = pa.ipc.open_file(pa.OSFile(str(source), "rb"))
    with pa.OSFile(str(target), "wb") as sink, pa.ipc.new_file(sink, reader.schema) as writer:
        for k in range(reader.num_record_batches):
            batch = reader.get_batch(k)
            columns = []
            for name in reader.schema.names:
                column = batch.column(name)
                if name in ("article", "summary"):
                    values = rank[column.values.to_numpy()]
                    column = pa.ListArray.from_arrays(column.offsets, pa.array(values, pa.int32()))
                columns.append(column)
            writer.write_batch(pa.record_batch(columns, schema=reader.schema))


class _pool:
    """``run(chunks)`` yields prepared chunks in order: in worker processes, or in this one for one worker."""

    def __init__(self, cfg: DataConfig, workers: int):
        self.cfg, self.workers, self.pool = cfg, workers, None

    def __enter__(self):
        if self.workers <= 1:
            _init_worker(self.cfg)
            return lambda chunks: map(_prepare_chunk, chunks)
        # fork: workers start at once and inherit the imported modules; they never touch torch.
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        self.pool = context.Pool(self.workers, initializer=_init_worker, initargs=(self.cfg,))
        return self.ordered

    def ordered(self, chunks: Iterator[list]) -> Iterator[dict[str, Any]]:
        """Results in order, with at most two chunks per worker in flight: ``Pool.imap`` would read
        the whole corpus into its task queue whenever reading outpaces the workers."""
        pending: collections.deque = collections.deque()
        for chunk in chunks:
            pending.append(self.pool.apply_async(_prepare_chunk, (chunk,)))
            if len(pending) >= 2 * self.workers:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()

    def __exit__(self, *exc):
        if self.pool is not None:
            if exc[0] is None:
                self.pool.close()
            else:
                self.pool.terminate()
            self.pool.join()
        return False


def _write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    """``directory/manifest.json``, replaced atomically (written beside it, synced, renamed)."""
    tmp = directory / f".{MANIFEST}.tmp-{os.getpid()}"
    tmp.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    _fsync(tmp)
    os.replace(tmp, directory / MANIFEST)


def _fsync(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _replace_dir(tmp: Path, path: Path) -> None:
    """Move the complete store into place (an existing one at ``path`` is replaced)."""
    if path.exists():
        trash = path.parent / f".{path.name}.old-{os.getpid()}"
        os.rename(path, trash)
        os.rename(tmp, path)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        os.rename(tmp, path)
    try:
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


def _remove_debris(path: Path) -> None:
    """Temporary directories left by killed prepares of this store (called under its lock)."""
    for stale in path.parent.glob(f".{path.name}.tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)
    for stale in path.parent.glob(f".{path.name}.old-*"):
        shutil.rmtree(stale, ignore_errors=True)


class _lock:
    """A lock on ``.NAME.lock`` beside the store: exclusive while the store is checked or prepared,
    shared (``shared=True``) while it is opened, so that readers never meet a prepare half-way."""

    def __init__(self, path: Path, shared: bool = False):
        self.file = path.parent / f".{path.name}.lock"
        self.mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX

    def __enter__(self):
        self.file.parent.mkdir(parents=True, exist_ok=True)
        self.handle = open(self.file, "a+")
        fcntl.flock(self.handle.fileno(), self.mode)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.handle.fileno(), fcntl.LOCK_UN)
        self.handle.close()
        return False


def open_or_prepare(source: DataSource, cfg: DataConfig, path: str | Path, *, workers: int | None = None,
                    force: bool = False, warn: Callable[[str], None] | None = None, progress: bool = True,
                    verify: bool = True) -> CorpusStore:
    """The store of ``source`` at ``path``: opened when its key matches, prepared when missing (or with
    ``force``), refused (:class:`StoreError`) when it was prepared from other data or settings.
    Processes calling this together serialise on a file lock: one prepares, the rest open its result.

    A store whose key matches is opened, with its checksums (0.03 CPU s per 100 MB read from the page
    cache; LCSTS's store is 1.4 GB at 2.4M pairs), under a shared lock: the ranks of a run check it side by side instead of one after
    another, and a prepare of the same path (``--force`` from another shell) waits for them. What
    may write (a prepare, a touched corpus's new time in the manifest) takes the lock alone."""
    path = Path(path)
    wanted = store_key(source, cfg)
    if not force:
        with _lock(path, shared=True):
            if (path / MANIFEST).is_file() and key_difference(read_manifest(path)["key"], wanted) is None:
                return CorpusStore(path, verify=verify)
    with _lock(path):
        if force or not (path / MANIFEST).is_file():
            if warn is not None:
                warn(f"preparing a corpus store for {source.path} at {path}")
            return prepare_store(source, cfg, path, workers=workers, warn=warn, progress=progress)
        check_key(path, read_manifest(path), wanted, warn)  # before the checksums: a store of other data is not read
        return CorpusStore(path, verify=verify)
