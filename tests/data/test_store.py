"""The corpus store: the same documents and vocabulary as the in-memory path, its key, its lock, and
what a killed, truncated or damaged store does."""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from agentsum.cli import main
from agentsum.config import load_config
from agentsum.data.dataset import DataConfig, DataSource, load_documents
from agentsum.data.store import DOCUMENTS, MANIFEST, CorpusStore, StoreError, open_or_prepare, prepare_store
from agentsum.training.trainer import Trainer, build_vocab
from conftest import FIXTURES, REPO, write_jsonl

SYLLABLES = "ka lo mi ne ru sa to vi ze po".split()


def varied_rows(n: int, seed: int = 0) -> list[dict]:
    """News-like articles over common words and made-up names (so the type list outgrows a small
    vocabulary and copying has OOV words), with paragraphs, quotes and clitics."""
    rng = random.Random(seed)
    common = "the a of to in and said was for on that with he she it his her they at by from".split()
    rows = []
    for i in range(n):
        names = ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))).capitalize() for _ in range(3)]
        paragraphs = []
        for _ in range(rng.randint(2, 5)):
            sentences = []
            for _ in range(rng.randint(1, 4)):
                words = [rng.choice(common + names) for _ in range(rng.randint(4, 18))]
                sentences.append(" ".join(words).capitalize() + rng.choice([".", "!", "?", ", he said.",
                                                                             "'s end.", " -- \"don't\"."]))
            paragraphs.append(" ".join(sentences))
        summary = "\n".join(f"{names[k]} said it was {rng.choice(common)} {names[(k + 1) % 3]}" for k in range(2))
        rows.append({"id": f"n{i}", "article": "\n\n".join(paragraphs), "summary": summary})
    return rows


def assert_same_documents(store, docs):
    assert len(store) == len(docs)
    for i, d in enumerate(docs):
        s = store[i]
        assert (s.id, s.agents, s.summary, s.reference) == (d.id, d.agents, d.summary, d.reference), i


@pytest.mark.parametrize("settings", [
    {},  # three agents, the paper's split
    {"agents": 1, "max_article_tokens": 30},
    {"agents": 2, "max_article_tokens": 50, "agent_tokens": 20, "lowercase": False},
    {"agents": "auto", "agent_tokens": 25},  # each document its own number of agents
    {"agents": "auto", "agent_tokens": 20, "max_agents": 3},
])
def test_store_holds_the_documents_and_vocabulary_of_the_in_memory_path(tmp_path, settings, monkeypatch):
    from agentsum.data import store as store_module

    monkeypatch.setattr(store_module, "HEAD_TYPES", 7)  # most words come from the mapped type column
    corpus = write_jsonl(tmp_path / "c.jsonl", varied_rows(300))
    cfg = DataConfig(**{"max_article_tokens": 120, "max_summary_tokens": 15, **settings})
    source = DataSource(corpus)
    docs = load_documents(source, cfg)
    store = prepare_store(source, cfg, tmp_path / "store", workers=1, progress=False)
    assert_same_documents(store, docs)
    assert list(store.lengths) == [d.num_tokens for d in docs]
    for size in (5, 40, 100_000):  # any V from the same store: ids >= V are in-article OOVs
        assert store.vocabulary(size) == build_vocab(docs, size)
    assert store.vocabulary(40).itos != store.vocabulary(41).itos


def test_a_store_of_documents_with_their_own_agent_counts_reads_back_as_prepared_in_memory(tmp_path):
    """data.agents: auto: agent counts vary from document to document, in the store as in memory
    (data.store: false), through worker processes too; the key holds max_agents, so a store prepared
    under another cap is refused."""
    corpus = write_jsonl(tmp_path / "c.jsonl", varied_rows(200, seed=3))
    cfg = DataConfig(agents="auto", agent_tokens=15, max_article_tokens=200, max_summary_tokens=15)
    source = DataSource(corpus)
    docs = load_documents(source, cfg)
    counts = [len(d.agents) for d in docs]
    assert len(set(counts)) >= 4  # from a few agents to many
    assert all(a for d in docs for a in d.agents)  # no empty agent under auto (nothing is padding yet)
    store = open_or_prepare(source, cfg, tmp_path / "store", workers=2, progress=False)
    assert_same_documents(store, docs)
    assert json.loads((tmp_path / "store" / MANIFEST).read_text())["agents"] == "auto"
    with pytest.raises(StoreError, match="data.max_agents"):
        open_or_prepare(source, DataConfig(agents="auto", agent_tokens=15, max_article_tokens=200,
                                           max_summary_tokens=15, max_agents=4), tmp_path / "store", progress=False)


def test_worker_processes_write_the_same_store_as_one_process(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", varied_rows(1300, seed=3))  # several chunks of 512
    cfg = DataConfig(max_article_tokens=100)
    one = prepare_store(DataSource(corpus), cfg, tmp_path / "one", workers=1, progress=False)
    two = prepare_store(DataSource(corpus), cfg, tmp_path / "two", workers=2, progress=False)
    assert one.types == two.types and list(one.counts) == list(two.counts)
    assert [one[i] for i in range(len(one))] == [two[i] for i in range(len(two))]
    assert two.manifest["workers"] == 2 and len(two) == 1300


def test_chinese_dialogue_and_row_ranges_are_prepared_like_the_in_memory_path(tmp_path):
    zh = write_jsonl(tmp_path / "zh.jsonl", [{"article": "今天北京天气很好。我们去公园散步吧！" * (i % 3 + 1),
                                              "summary": f"北京天气{i}"} for i in range(40)])
    for cfg, source in [(DataConfig(language="zh", zh_tokenizer="char", agents=1, max_article_tokens=30),
                         DataSource(zh, 5, 30)),
                        (DataConfig(language="zh", zh_tokenizer="jieba", agents=1, max_article_tokens=30),
                         DataSource(zh)),
                        (DataConfig(dialogue=True, agents=2, max_article_tokens=60), DataSource(str(FIXTURES / "chats.jsonl")))]:
        store = prepare_store(source, cfg, tmp_path / f"s-{cfg.zh_tokenizer}-{cfg.dialogue}", workers=1, progress=False)
        assert_same_documents(store, load_documents(source, cfg))


def test_a_matching_store_is_reused_and_one_prepared_otherwise_is_refused(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", varied_rows(50))
    cfg, source, path = DataConfig(max_article_tokens=100), DataSource(corpus), tmp_path / "store"
    messages = []
    first = open_or_prepare(source, cfg, path, workers=1, warn=messages.append, progress=False)
    assert any("preparing" in m for m in messages)
    messages.clear()
    again = open_or_prepare(source, DataConfig(max_article_tokens=100, vocab_size=7), path, warn=messages.append)
    assert messages == [] and len(again) == len(first)  # vocab_size is not part of the key

    with pytest.raises(StoreError, match=r"data\.max_article_tokens: the store has 100, the configuration 80"):
        open_or_prepare(source, DataConfig(max_article_tokens=80), path)
    with pytest.raises(StoreError, match=r"data\.lowercase"):
        open_or_prepare(source, DataConfig(max_article_tokens=100, lowercase=False), path)
    with pytest.raises(StoreError, match=r"source end: the store has None, the configuration 10"):
        open_or_prepare(DataSource(corpus, 0, 10), cfg, path)
    write_jsonl(tmp_path / "c.jsonl", varied_rows(51))  # the corpus changed on disk
    with pytest.raises(StoreError, match=r"changed since the store was prepared"):
        open_or_prepare(source, cfg, path)
    assert len(open_or_prepare(source, cfg, path, force=True, progress=False)) == 51


def test_a_touched_corpus_keeps_its_store_and_a_rewritten_one_of_the_same_size_does_not(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", varied_rows(30))
    cfg, source, path = DataConfig(max_article_tokens=100), DataSource(corpus), tmp_path / "store"
    first = open_or_prepare(source, cfg, path, workers=1, progress=False)
    mtime = os.stat(corpus).st_mtime_ns
    os.utime(corpus, ns=(mtime + 10**9, mtime + 10**9))  # copied or synced: new time, same bytes
    messages = []
    again = open_or_prepare(source, cfg, path, warn=messages.append)
    assert len(again) == len(first) and [m for m in messages if "preparing" in m] == []
    assert any("bytes did not" in m for m in messages)
    manifest = json.loads((path / MANIFEST).read_text())
    assert manifest["key"]["source"]["mtime_ns"] == mtime + 10**9  # the next start does not read it again
    messages.clear()
    open_or_prepare(source, cfg, path, warn=messages.append)
    assert messages == []

    text = Path(corpus).read_text(encoding="utf-8")
    swapped = text.replace("n1", "n9", 1)  # other bytes, the same size
    assert len(swapped) == len(text) and swapped != text
    Path(corpus).write_text(swapped, encoding="utf-8")
    os.utime(corpus, ns=(mtime + 2 * 10**9, mtime + 2 * 10**9))
    with pytest.raises(StoreError, match=r"changed since the store was prepared .*its bytes differ"):
        open_or_prepare(source, cfg, path)


def test_truncated_damaged_and_missing_stores_are_named(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", varied_rows(60))
    path = tmp_path / "store"
    prepare_store(DataSource(corpus), DataConfig(), path, workers=1, progress=False)
    documents = path / DOCUMENTS
    data = documents.read_bytes()

    documents.write_bytes(data[: len(data) // 2])
    with pytest.raises(StoreError, match=r"documents\.arrow: \d+ bytes, the manifest says \d+ \(truncated"):
        CorpusStore(path)
    damaged = bytearray(data)
    damaged[len(data) // 2] ^= 0xFF
    documents.write_bytes(bytes(damaged))
    with pytest.raises(StoreError, match=r"documents\.arrow: checksum mismatch"):
        CorpusStore(path)
    CorpusStore(path, verify=False)  # sizes only: the flipped byte goes unseen, by choice
    (path / MANIFEST).write_text("{not json", encoding="utf-8")
    with pytest.raises(StoreError, match=r"damaged manifest"):
        CorpusStore(path)
    (path / MANIFEST).unlink()
    with pytest.raises(StoreError, match=r"not a prepared corpus store"):
        CorpusStore(path)


def test_train_exits_2_naming_a_damaged_store(tmp_path, capsys):
    corpus = write_jsonl(tmp_path / "c.jsonl", varied_rows(40))
    args = ["--config", "tiny", "--set", f"data.train={corpus}", "--set", f"data.store_dir={tmp_path / 'stores'}",
            "--set", "train.max_steps=1", "--run-dir", str(tmp_path / "run")]
    assert main(["prepare", *args]) == 0
    assert "train:" in capsys.readouterr().out
    store = tmp_path / "stores" / "train" / DOCUMENTS
    store.write_bytes(store.read_bytes()[:-10])
    assert main(["train", *args]) == 2
    err = capsys.readouterr().err
    assert "stores/train/documents.arrow" in err and "truncated" in err and "Traceback" not in err
    assert main(["train", *args[:-2], "--set", "data.max_article_tokens=30", "--run-dir", str(tmp_path / "run")]) == 2
    assert "data.max_article_tokens: the store has 60, the configuration 30" in capsys.readouterr().err


KILLED_PREPARE = """
import os, signal, sys
from agentsum.data import store
from agentsum.data.dataset import DataConfig, DataSource
written = store._record_batch
def record_batch(*args):
    if record_batch.calls == 1:  # the first chunk is on disk: die as a killed process does
        os.kill(os.getpid(), signal.SIGKILL)
    record_batch.calls += 1
    return written(*args)
record_batch.calls = 0
store._record_batch = record_batch
store.prepare_store(DataSource(sys.argv[1]), DataConfig(), sys.argv[2], workers=1, progress=False)
"""


def test_a_killed_prepare_leaves_nothing_taken_for_a_store(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", varied_rows(1200))
    path = tmp_path / "store"
    run = subprocess.run([sys.executable, "-c", KILLED_PREPARE, corpus, str(path)], cwd=REPO)
    assert run.returncode == -9
    assert not path.exists()
    debris = list(tmp_path.glob(".store.tmp-*"))
    assert debris and (debris[0] / "provisional.arrow").stat().st_size > 0  # it had begun writing
    messages = []
    store = open_or_prepare(DataSource(corpus), DataConfig(), path, workers=1, warn=messages.append, progress=False)
    assert len(store) == 1200 and not list(tmp_path.glob(".store.tmp-*"))
    assert any("preparing" in m for m in messages)


def test_a_bad_row_stops_prepare_without_leaving_a_store(tmp_path):
    rows = varied_rows(700)
    path = tmp_path / "c.jsonl"
    write_jsonl(path, rows)
    with path.open("a", encoding="utf-8") as f:
        f.write('{"id": "x", "article": 3, "summary": "s"}\n')
    with pytest.raises(Exception, match=r"c\.jsonl:701: field 'article' is int"):
        prepare_store(DataSource(str(path)), DataConfig(), tmp_path / "store", workers=2, progress=False)
    assert not (tmp_path / "store").exists() and not list(tmp_path.glob(".store.*"))


CONCURRENT_OPEN = """
import sys
from agentsum.data.store import open_or_prepare
from agentsum.data.dataset import DataConfig, DataSource
messages = []
store = open_or_prepare(DataSource(sys.argv[1]), DataConfig(), sys.argv[2], workers=1, warn=messages.append,
                        progress=False)
print(len(store), any("preparing" in m for m in messages))
"""


def test_processes_starting_together_prepare_once(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", varied_rows(1500))
    path = tmp_path / "store"
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT_OPEN, corpus, str(path)], cwd=REPO,
                              stdout=subprocess.PIPE, text=True) for _ in range(3)]
    outputs = sorted(p.communicate()[0].split() for p in procs)
    assert all(p.returncode == 0 for p in procs)
    assert outputs == [["1500", "False"], ["1500", "False"], ["1500", "True"]]


def test_ranks_open_a_matching_store_side_by_side_and_a_prepare_waits_for_them(tmp_path):
    from agentsum.data.store import _lock

    corpus = write_jsonl(tmp_path / "c.jsonl", varied_rows(40))
    path = tmp_path / "store"
    open_or_prepare(DataSource(corpus), DataConfig(), path, workers=1, progress=False)
    with _lock(path, shared=True):  # another rank opening the store (reading its checksums)
        opened = subprocess.run([sys.executable, "-c", CONCURRENT_OPEN, corpus, str(path)], cwd=REPO,
                                capture_output=True, text=True, timeout=60)
        assert opened.stdout.split() == ["40", "False"]  # opened beside it, not after it
        prepare = subprocess.Popen([sys.executable, "-c", CONCURRENT_PREPARE, corpus, str(path)], cwd=REPO,
                                   stdout=subprocess.PIPE, text=True)
        with pytest.raises(subprocess.TimeoutExpired):
            prepare.wait(timeout=3)  # a prepare of the same path waits for the reader
    assert prepare.communicate(timeout=60)[0].split() == ["40"]


CONCURRENT_PREPARE = """
import sys
from agentsum.data.dataset import DataConfig, DataSource
from agentsum.data.store import open_or_prepare
print(len(open_or_prepare(DataSource(sys.argv[1]), DataConfig(), sys.argv[2], workers=1, force=True, progress=False)))
"""


def test_training_from_the_store_matches_training_in_memory(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", varied_rows(40))
    losses = {}
    for store in (True, False):
        run = tmp_path / f"run-{store}"
        config = load_config("tiny", [f"data.train={corpus}", f"data.valid={{path: {corpus}, start: 0, end: 8}}",
                                      f"train.run_dir={run}", "train.max_steps=12", "train.valid_every=6",
                                      f"data.store={str(store).lower()}", "data.vocab_size=60"])
        trainer = Trainer(config)
        assert isinstance(trainer.train_docs, CorpusStore) == store
        trainer.run()
        rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        losses[store] = [(r.get("step"), r.get("loss"), r.get("valid_nll")) for r in rows]
        losses[store, "vocab"] = (run / "vocab.txt").read_text()
    assert losses[True] == losses[False]
    assert losses[True, "vocab"] == losses[False, "vocab"]
    assert (tmp_path / "run-True" / "data" / "train" / MANIFEST).is_file()
    assert not (tmp_path / "run-False" / "data").exists()


def test_workers_get_a_bounded_number_of_chunks_ahead_of_the_writer(tmp_path):
    from agentsum.data.store import _pool

    pulled = []

    def chunks():
        for k in range(40):
            pulled.append(k)
            yield [(f"d{k}", "Some words here.", "Words.")]

    with _pool(DataConfig(), 2) as run:
        results = run(chunks())
        first = next(results)
        ahead = len(pulled)
        rest = list(results)
    assert first["ids"] == ["d0"] and [r["ids"][0] for r in rest] == [f"d{k}" for k in range(1, 40)]
    assert ahead <= 2 * 2 + 1  # Pool.imap would have read all 40 by now if the workers lagged


def test_the_progress_total_comes_from_the_bounds_or_the_file_lines(tmp_path):
    from agentsum.data.store import estimate_rows

    corpus = write_jsonl(tmp_path / "c.jsonl", varied_rows(40))
    assert estimate_rows(corpus) == 40
    assert estimate_rows(corpus, 10) == 30 and estimate_rows(corpus, None, -5) == 35
    assert estimate_rows(str(tmp_path / "absent.jsonl"), 5, 30) == 25  # the bounds say it: no read
    assert estimate_rows(str(tmp_path)) is None


def _mapped_rss_kb(path: Path) -> int:
    """This process's resident KB of its mappings of ``path`` (/proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and len(fields) >= 5:  # a mapping's header line
            inside = len(fields) >= 6 and fields[-1] == str(path)
        elif inside and fields[0] == "Rss:":
            total += int(fields[1])
    return total


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="reads /proc/self/smaps (Linux)")
def test_opening_a_store_leaves_none_of_its_pages_in_the_process_memory(tmp_path, monkeypatch):
    from agentsum.data import store as store_module

    monkeypatch.setattr(store_module, "CHUNK", 16)  # many record batches, each touched once on opening
    corpus = write_jsonl(tmp_path / "c.jsonl", varied_rows(600))
    cfg = DataConfig(train=corpus, valid=None, max_article_tokens=200)
    prepare_store(DataSource(corpus), cfg, tmp_path / "store", workers=1, progress=False)
    store = CorpusStore(tmp_path / "store")
    documents = (tmp_path / "store" / DOCUMENTS).resolve()
    assert _mapped_rss_kb(documents) == 0  # the batches' few bytes read on opening were dropped
    store[len(store) // 2]
    assert _mapped_rss_kb(documents) > 0  # and a document read maps its pages (the measure sees them)
