"""Time and memory of getting the papers' corpora into training, as the corpus grows.

Builds two synthetic corpora from the shared data, with distinct ids and made-up words mixed in so
that the type list grows as a real corpus's does:
  * 287,227 CNN/DailyMail-like articles (the DCA paper's training split), from cnndm/train_stories.jsonl;
  * 2.4M LCSTS-like pairs (the Transformer-PG paper's PART I), from lcsts/train.jsonl;
then, in one run, measures for each:
  * ``agentsum prepare``: seconds, documents/s (1 and 2 workers) and store size;
  * ``agentsum train`` from the prepared store: seconds from the process's start to its first step;
  * peak RSS per process under ``torchrun --nproc_per_node 2`` (anonymous and file-backed parts);
  * the same figures for the in-memory path (``data.store: false``) at the sizes where it fits;
  * the storage format: batch fetch time (Arrow, the store's format, against a fairseq-style numpy
    memmap of the same ids and against pyarrow's own row access), open time and size, beside the
    training step's time.

    python benchmarks/data/bench_data_scale.py                  # everything (about an hour on 2 cores)
    python benchmarks/data/bench_data_scale.py --only cnndm     # one corpus
    python benchmarks/data/bench_data_scale.py --only evaluate  # evaluate's memory alone
    python benchmarks/data/bench_data_scale.py --merge A/data_scale.json B/data_scale.json  # runs put together
Results: benchmarks/results/data_scale.{json,md}. Corpora and stores go to --work (not in git).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "studies"))  # cpu_clock, the studies' CPU clock
import cpu_clock  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data"
RESULTS = REPO / "benchmarks" / "results"
SYLLABLES = ("ka ri to mu se na lo vi pe zu an or el ix um ba de fi go hu ja ke li mo nu pa qu ro su ta").split()


# ------------------------------------------------------------------------------------ corpora

def made_up_word(rng: random.Random) -> str:
    """One of ~840k words of 2-4 syllables: uniform draws make most of them new types."""
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))


def build_cnndm(path: Path, n: int, rate: float = 0.02, seed: int = 0) -> None:
    """``n`` articles cycling through train_stories.jsonl, each with ~``rate`` of its words replaced
    by made-up words (names, say: capitalised half the time), under distinct ids."""
    rows = [json.loads(line) for line in (SHARED / "cnndm" / "train_stories.jsonl").open(encoding="utf-8")]
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            row = rows[i % len(rows)]
            words = row["article"].split(" ")
            for k in rng.sample(range(len(words)), max(1, int(len(words) * rate))):
                word = made_up_word(rng)
                words[k] = word.capitalize() if rng.random() < 0.5 else word
            summary = row["summary"].split(" ")
            k = rng.randrange(len(summary))
            summary[k] = made_up_word(rng)
            out.write(json.dumps({"id": f"{row['id']}-{i // len(rows)}", "article": " ".join(words),
                                  "summary": " ".join(summary)}, ensure_ascii=False) + "\n")


def build_lcsts(path: Path, n: int, seed: int = 0) -> None:
    """``n`` pairs cycling through lcsts/train.jsonl, each with two made-up two-character words
    (characters drawn from the CJK block) put into the article and one into the summary."""
    rows = [json.loads(line) for line in (SHARED / "lcsts" / "train.jsonl").open(encoding="utf-8")]
    rng = random.Random(seed)

    def word() -> str:
        return chr(0x4E00 + rng.randrange(20_000)) + chr(0x4E00 + rng.randrange(20_000))

    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            row = rows[i % len(rows)]
            article, summary = row["article"], row["summary"]
            for _ in range(2):
                k = rng.randrange(len(article) + 1)
                article = article[:k] + word() + article[k:]
            k = rng.randrange(len(summary) + 1)
            out.write(json.dumps({"id": f"lcsts-{i}", "article": article, "summary": summary[:k] + word() + summary[k:]},
                                 ensure_ascii=False) + "\n")


# ------------------------------------------------------------------------------------ processes

class Watch:
    """Peak memory of a process tree: VmHWM (peak RSS) of every process under ``pid``, and the
    anonymous / file-backed split of its RSS when the peak was sampled."""

    def __init__(self, pid: int, every: float = 0.1):
        self.root, self.every, self.peaks = pid, every, {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def descendants(self) -> list[int]:
        parents = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    stat = Path(f"/proc/{entry}/stat").read_text()
                    parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    pass
        tree, grew = {self.root}, True
        while grew:
            grew = False
            for pid, parent in parents.items():
                if parent in tree and pid not in tree:
                    tree.add(pid)
                    grew = True
        return sorted(tree)

    def run(self) -> None:
        while not self.stop.is_set():
            for pid in self.descendants():
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
                except OSError:
                    continue
                fields = {line.split(":")[0]: line.split(":")[1].strip() for line in status.splitlines() if ":" in line}
                kb = {k: int(fields.get(k, "0 kB").split()[0]) for k in ("VmHWM", "VmRSS", "RssAnon", "RssFile")}
                peak = self.peaks.setdefault(pid, {"cmd": cmd, "VmHWM": 0, "RssAnon": 0, "RssFile": 0})
                if cmd:  # the latest non-empty one: between fork and exec a child shows its parent's
                    peak["cmd"] = cmd  # (and an exited process, not yet reaped, shows nothing)
                peak["VmHWM"] = max(peak["VmHWM"], kb["VmHWM"])
                if kb["VmRSS"] >= peak.get("VmRSS", 0):
                    peak.update(VmRSS=kb["VmRSS"], RssAnon=kb["RssAnon"], RssFile=kb["RssFile"])
            self.stop.wait(self.every)

    def finish(self) -> dict:
        self.stop.set()
        self.thread.join()
        return self.peaks


def run(cmd: list[str], log: Path, env: dict | None = None) -> dict:
    """Run a command, watching its memory; returns wall seconds, start time and per-process peaks."""
    started_wall, started = time.time(), time.perf_counter()
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=REPO,
                                env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})})
        watch = Watch(proc.pid)
        _, status, usage = os.wait4(proc.pid, 0)  # usage: the process and the children it waited for
        proc.returncode = rc = os.waitstatus_to_exitcode(status)
    peaks = watch.finish()
    if rc != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({rc}); see {log}:\n{log.read_text()[-3000:]}")
    return {"seconds": time.perf_counter() - started, "start": started_wall, "peaks": peaks,
            "cpu_seconds": usage.ru_utime + usage.ru_stime}


def agentsum(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentsum.cli", *args]


def rank_peaks(peaks: dict) -> list[dict]:
    """The training processes (torchrun's workers, or the one process) among a tree's peaks."""
    ranks = [p for p in peaks.values() if "agentsum.cli" in p["cmd"] and "train" in p["cmd"]
             and "torch.distributed.run" not in p["cmd"]]
    return sorted(ranks, key=lambda p: -p["VmHWM"])


def fresh(run_dir: Path) -> Path:
    """``run_dir`` emptied: a run appends to its metrics.jsonl, so a --work reused from an earlier
    benchmark would otherwise give the earlier run's step 1."""
    shutil.rmtree(run_dir, ignore_errors=True)
    return run_dir


def first_step_seconds(run_dir: Path, started: float) -> float:
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row.get("step") == 1 and "loss" in row:
            return row["time"] - started
    raise SystemExit(f"no step 1 in {run_dir / 'metrics.jsonl'}")


# ------------------------------------------------------------------------------------ measurements

def train_args(preset: str, corpus: str, store_dir: Path | None, run_dir: Path, vocab: int, extra=()) -> list[str]:
    args = ["train", "--config", preset, "--set", f"data.train={corpus}", "--set", "data.valid=null",
            "--set", f"data.vocab_size={vocab}", "--set", "train.max_steps=3", "--set", "train.log_every=1",
            "--set", "train.valid_every=1000000", "--set", "train.threads=1", "--set", "train.tensorboard=false",
            "--set", "train.keep_checkpoints=0", "--run-dir", str(run_dir), *extra]
    if store_dir is None:
        return args + ["--set", "data.store=false"]
    return args + ["--set", f"data.store_dir={store_dir}"]


def measure_corpus(name: str, slug: str, preset: str, corpus: Path, sizes: list[int], full: int, vocab: int, work: Path,
                   in_memory_sizes: list[int], single_worker_sizes: list[int]) -> dict:
    out: dict = {"corpus": name, "preset": preset, "vocab_size": vocab, "rows": {}}
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    for n in sizes:
        spec = str(corpus) if n == full else f"{{path: {corpus}, end: {n}}}"
        row: dict = {}
        for workers in (1, 2):
            if workers == 1 and n not in single_worker_sizes:
                continue
            store = work / f"{slug}-{n}-w{workers}"
            r = run(agentsum("prepare", "--config", preset, "--set", f"data.train={spec}", "--set", "data.valid=null",
                             "--store-dir", str(store), "--workers", str(workers), "--force"),
                    logs / f"prepare-{slug}-{n}-w{workers}.log")
            manifest = json.loads((store / "train" / "manifest.json").read_text())
            row[f"prepare_w{workers}"] = {
                "seconds": round(r["seconds"], 1), "docs_per_s": round(n / r["seconds"], 1),
                "cpu_seconds": round(r["cpu_seconds"], 1), "docs_per_cpu_s": round(n / r["cpu_seconds"], 1),
                "store_mb": round(sum(f["bytes"] for f in manifest["files"].values()) / 2**20, 1),
                "types": manifest["types"], "documents": manifest["documents"],
                "peak_rss_mb": round(max(p["VmHWM"] for p in r["peaks"].values()) / 1024, 1)}
            print(name, n, f"prepare {workers} worker(s)", row[f"prepare_w{workers}"], flush=True)
        store = work / f"{slug}-{n}-w2"
        for label, store_dir in (("store", store), ("memory", None)):
            if label == "memory" and n not in in_memory_sizes:
                continue
            run_dir = fresh(work / f"run-{slug}-{n}-{label}")
            r = run(agentsum(*train_args(preset, spec, store_dir, run_dir, vocab)), logs / f"train-{slug}-{n}-{label}.log")
            ranks = rank_peaks(r["peaks"])
            row[f"train_{label}"] = {"first_step_s": round(first_step_seconds(run_dir, r["start"]), 1),
                                     "peak_rss_mb": round(ranks[0]["VmHWM"] / 1024, 1)}
            run_dir = fresh(work / f"run-{slug}-{n}-{label}-ddp")
            cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port",
                   str(29500 + random.randrange(400)), "-m", "agentsum.cli",
                   *train_args(preset, spec, store_dir, run_dir, vocab, ("--set", "train.batch_size=16"))]
            r = run(cmd, logs / f"ddp-{slug}-{n}-{label}.log")
            ranks = rank_peaks(r["peaks"])
            row[f"ddp_{label}"] = {"first_step_s": round(first_step_seconds(run_dir, r["start"]), 1),
                                   "peak_rss_mb_per_rank": [round(p["VmHWM"] / 1024, 1) for p in ranks],
                                   "anon_mb_per_rank": [round(p["RssAnon"] / 1024, 1) for p in ranks],
                                   "file_mb_per_rank": [round(p["RssFile"] / 1024, 1) for p in ranks]}
            print(name, n, label, row[f"train_{label}"], row[f"ddp_{label}"], flush=True)
        out["rows"][n] = row
    return out


def measure_format(store_path: Path, work: Path, batches: int = 200, batch_size: int = 16) -> dict:
    """Batch fetch through the store (Arrow IPC, mapped, numpy views), through a fairseq-style
    indexed numpy memmap of the same ids, and through pyarrow's own row access; open time; size."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.ipc  # noqa: F401

    from agentsum.data.store import CorpusStore

    started = time.perf_counter()
    store = CorpusStore(store_path, verify=False)
    open_arrow = time.perf_counter() - started
    started = time.perf_counter()
    CorpusStore(store_path, verify=True)
    open_verified = time.perf_counter() - started
    rng = random.Random(0)
    picks = [[rng.randrange(len(store)) for _ in range(batch_size)] for _ in range(batches)]

    def per_batch(fetch) -> float:
        started = time.perf_counter()
        for batch in picks:
            for i in batch:
                fetch(i)
        return (time.perf_counter() - started) / batches * 1000

    arrow_ms = per_batch(store.__getitem__)
    # the same ids as a fairseq-style indexed binary: one flat int32 file and an offsets file
    flat = work / "memmap"
    flat.mkdir(exist_ok=True)
    table = pa.ipc.open_file(pa.memory_map(str(store_path / "documents.arrow"))).read_all()
    tokens = np.concatenate([c.values.to_numpy() for c in table.column("article").chunks])
    lengths = np.concatenate([np.diff(c.offsets.to_numpy()) for c in table.column("article").chunks])
    np.save(flat / "tokens.npy", tokens)
    np.save(flat / "offsets.npy", np.concatenate([[0], np.cumsum(lengths)]))
    del tokens
    started = time.perf_counter()
    mm_tokens = np.load(flat / "tokens.npy", mmap_mode="r")
    mm_offsets = np.load(flat / "offsets.npy", mmap_mode="r")
    open_memmap = time.perf_counter() - started
    words = store._words
    memmap_ms = per_batch(lambda i: words(np.asarray(mm_tokens[mm_offsets[i]:mm_offsets[i + 1]])))
    article = table.column("article")
    types = store._type_array
    native_ms = per_batch(lambda i: types.take(article[i].values).to_pylist())
    return {"documents": len(store), "arrow_fetch_ms_per_batch": round(arrow_ms, 3),
            "memmap_fetch_ms_per_batch": round(memmap_ms, 3), "pyarrow_rows_fetch_ms_per_batch": round(native_ms, 3),
            "open_arrow_s": round(open_arrow, 2), "open_arrow_verified_s": round(open_verified, 2),
            "open_memmap_s": round(open_memmap, 3),
            "arrow_mb": round((store_path / "documents.arrow").stat().st_size / 2**20, 1),
            "memmap_mb": round(sum(p.stat().st_size for p in flat.iterdir()) / 2**20, 1),
            "note": "memmap holds the article ids only (no agent lengths, summaries, ids or references)"}


#: Documents that ``agentsum evaluate`` reads: a thousand, and as many as the CNN/DailyMail test split.
EVALUATE_SIZES = [1_000, 11_490]


def measure_evaluate(corpus: Path, sizes: list[int], work: Path) -> dict:
    """Peak RSS of ``agentsum evaluate`` (the shipped model, greedy, 8 tokens: the reading and
    preparing is what grows with the corpus) on the first N documents."""
    out = {}
    for n in sizes:
        r = run(agentsum("evaluate", "--data", str(corpus), "--end", str(n), "--beam", "1", "--min-length", "0", "--max-length", "8",
                         "--batch-size", "32", "--out", str(work / f"eval-{n}")), work / "logs" / f"evaluate-{n}.log")
        out[n] = {"seconds": round(r["seconds"], 1), "peak_rss_mb": round(max(p["VmHWM"] for p in r["peaks"].values())
                                                                          / 1024, 1)}
        print("evaluate", n, out[n], flush=True)
    return out


def train_step_ms(preset: str, corpus: str, store_dir: Path, work: Path, vocab: int) -> float:
    """Median milliseconds of a training step (one thread), from a short run's metrics."""
    run_dir = fresh(work / "run-step-time")
    args = train_args(preset, corpus, store_dir, run_dir, vocab)
    args[args.index("train.max_steps=3")] = "train.max_steps=12"
    run(agentsum(*args), work / "logs" / "step-time.log")
    times = [json.loads(line)["time"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()
             if "loss" in json.loads(line)]
    gaps = sorted(b - a for a, b in zip(times[1:], times[2:]))
    return round(1000 * gaps[len(gaps) // 2], 1)


# ------------------------------------------------------------------------------------ report

def provenance(results: dict) -> str:
    """Which run measured what: one run, or (after --merge) each corpus's and each section's run."""
    def measured(run: dict, machine: bool) -> str:
        at = f" at commit {run['commit']}" if run.get("commit") else ""
        on = f" on {run['machine']}" if machine and run.get("machine") else ""
        return f"measured {run['date']}{at}{on}, load average at start {run['load']}"

    runs = results.get("runs")
    if not runs:
        return f"M{measured(results, False)[1:]}, on {results['machine']}. Every figure below comes from this one run"
    named = {"format": "the storage format and step time", "evaluate": "evaluate"}
    machines = {run.get("machine") for run in runs.values()}
    parts = "; ".join(f"{named.get(name, name)} {measured(run, len(machines) > 1)}" for name, run in runs.items())
    if len(machines) > 1:
        return f"{parts}. Each corpus's figures, and each section's, come from one run; rates differ between machines"
    return f"{parts}, on {results['machine']}. Each corpus's figures, and each section's, come from one run"


def report(results: dict) -> str:
    when = provenance(results)
    lines = ["# Corpora at the papers' sizes: prepare, start, memory", "",
             f"{when}. Synthetic corpora built from the shared data with made-up words mixed in "
             "(`benchmarks/data/bench_data_scale.py`).", ""]
    for corpus in results["corpora"]:
        lines += [f"## {corpus['corpus']} (`{corpus['preset']}` preset, vocabulary {corpus['vocab_size']:,})", "",
                  "| documents | prepare, 1 worker | prepare, 2 workers | store | types | first step (store) | "
                  "first step (in memory) | peak RSS, 1 process (store / memory) | peak RSS per rank, torchrun x2 "
                  "(store) | same, in memory |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for n, row in corpus["rows"].items():
            def prep(w):
                p = row.get(f"prepare_w{w}")
                return (f"{p['seconds']} s ({p['docs_per_s']:,.0f}/s; {p['docs_per_cpu_s']:,.0f} per CPU-s)"
                        if p else "-")
            p2 = row["prepare_w2"]
            ts, tm = row.get("train_store"), row.get("train_memory")
            ds, dm = row.get("ddp_store"), row.get("ddp_memory")
            lines.append(
                f"| {int(n):,} | {prep(1)} | {prep(2)} | {p2['store_mb']:,} MB | {p2['types']:,} | "
                f"{ts['first_step_s']} s | {tm['first_step_s'] if tm else '-'} s | "
                f"{ts['peak_rss_mb']:,} / {tm['peak_rss_mb'] if tm else '-'} MB | "
                f"{', '.join(f'{x:,}' for x in ds['peak_rss_mb_per_rank'])} MB (anon "
                f"{', '.join(f'{x:,}' for x in ds['anon_mb_per_rank'])}) | "
                f"{', '.join(f'{x:,}' for x in dm['peak_rss_mb_per_rank']) + ' MB' if dm else '-'} |")
        lines.append("")
    if "format" in results:
        f = results["format"]
        lines += ["## Storage format", "",
                  f"On the {f['documents']:,}-document store; a batch is 16 random documents, decoded to tokens.", "",
                  "| | fetch per batch | open | size |", "|---|---|---|---|",
                  f"| Arrow IPC, mapped, numpy views (the store) | {f['arrow_fetch_ms_per_batch']} ms | "
                  f"{f['open_arrow_s']} s ({f['open_arrow_verified_s']} s with CRC-32) | {f['arrow_mb']} MB |",
                  f"| numpy memmap, fairseq-style (article ids only) | {f['memmap_fetch_ms_per_batch']} ms | "
                  f"{f['open_memmap_s']} s | {f['memmap_mb']} MB |",
                  f"| pyarrow row access (`array[i].as_py()`) | {f['pyarrow_rows_fetch_ms_per_batch']} ms | | |",
                  f"| one training step ({results.get('step_preset')}, 1 thread) | {results.get('step_ms')} ms | | |", ""]
    if "evaluate" in results:
        lines += ["## evaluate in bounded memory", "",
                  "`agentsum evaluate` with the shipped model (greedy, 8 tokens) on the first N CNN/DailyMail-like "
                  "articles: the corpus is read and prepared 1,000 documents at a time.", "",
                  "| documents | seconds | peak RSS |", "|---|---|---|"]
        lines += [f"| {int(n):,} | {e['seconds']} | {e['peak_rss_mb']:,} MB |" for n, e in results["evaluate"].items()]
        lines.append("")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default="/tmp/agentsum-scale", help="corpora, stores and runs (not in git)")
    parser.add_argument("--only", choices=("cnndm", "lcsts", "evaluate"),
                        help="one corpus, or only evaluate's memory (on the first 11,490 CNN/DailyMail-like articles)")
    parser.add_argument("--cnndm", type=int, default=287_227)
    parser.add_argument("--lcsts", type=int, default=2_400_000)
    parser.add_argument("--no-evaluate", action="store_true", help="skip evaluate's memory (11,490 decodes)")
    parser.add_argument("--results", default=str(RESULTS), help="where data_scale.{json,md} go")
    parser.add_argument("--merge", nargs="+", metavar="JSON",
                        help="measure nothing: put the corpora of earlier runs' data_scale.json together "
                             "(a later file's corpus replaces an earlier one's), each with its run's date")
    args = parser.parse_args()
    if args.merge:
        save(merge([json.loads(Path(f).read_text(encoding="utf-8")) for f in args.merge], args.results))
        return
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    results = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": machine(),
               "load": round(os.getloadavg()[0], 2), "commit": commit(), "corpora": [], "out": args.results}
    if args.only == "evaluate":
        corpus = work / f"cnndm-{EVALUATE_SIZES[-1]}.jsonl"
        if not corpus.exists():
            build_cnndm(corpus, EVALUATE_SIZES[-1])
        results["evaluate"] = measure_evaluate(corpus, EVALUATE_SIZES, work)
        save(results)
    if args.only in (None, "cnndm"):
        corpus = work / f"cnndm-{args.cnndm}.jsonl"
        if not corpus.exists():
            started = time.perf_counter()
            build_cnndm(corpus, args.cnndm)
            print(f"built {corpus} in {time.perf_counter() - started:.0f}s", flush=True)
        small = min(20_000, args.cnndm)
        results["corpora"].append(measure_corpus("CNN/DailyMail-like", "cnndm", "m6", corpus,
                                                 sorted({small, args.cnndm}), args.cnndm, 50_000, work,
                                                 in_memory_sizes=[small], single_worker_sizes=[small]))
        save(results)
        store = work / f"cnndm-{args.cnndm}-w2"
        results["format"] = measure_format(store / "train", work)
        results["step_preset"] = "m6"
        results["step_ms"] = train_step_ms("m6", str(corpus), store, work, 50_000)
        save(results)
        if not args.no_evaluate:
            results["evaluate"] = measure_evaluate(corpus, EVALUATE_SIZES, work)
            save(results)
    if args.only in (None, "lcsts"):
        corpus = work / f"lcsts-{args.lcsts}.jsonl"
        if not corpus.exists():
            started = time.perf_counter()
            build_lcsts(corpus, args.lcsts)
            print(f"built {corpus} in {time.perf_counter() - started:.0f}s", flush=True)
        small = min(100_000, args.lcsts)
        results["corpora"].append(measure_corpus("LCSTS-like", "lcsts", "lcsts-small", corpus, sorted({small, args.lcsts}),
                                                 args.lcsts, 6_000, work, in_memory_sizes=[small],
                                                 single_worker_sizes=[small]))
        save(results)


def machine() -> str:
    """Cores, CPU model, AVX-512 and boot id: the same code prepares and trains at other rates on
    other machines, and a CPU model name alone ("AMD EPYC") does not tell them apart."""
    info = cpu_clock.machine()
    traits = [info["cpu"]]
    if info.get("avx512") is not None:
        traits.append("AVX-512" if info["avx512"] else "no AVX-512")
    if info.get("boot_id"):
        traits.append(f"boot {info['boot_id'][:8]}")
    return f"{info['cores']} cores ({', '.join(traits)})"


def commit() -> str | None:
    """The checkout's commit, short (None outside git)."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def merge(runs: list[dict], out: str) -> dict:
    """One result from several runs (``--only``): each corpus from the last run that measured it,
    the run-wide figures (storage format, step time, evaluate) from the last run that has them, and
    each corpus's run date and load kept so that the report says which run measured what."""
    merged: dict = {"machine": runs[-1]["machine"], "out": out, "corpora": [], "runs": {}}
    corpora: dict[str, dict] = {}

    def source(run: dict, name: str) -> dict:  # a merged input keeps the provenance of its parts
        return run.get("runs", {}).get(name) or {"date": run["date"], "load": run["load"], "commit": run.get("commit"),
                                                  "machine": run.get("machine")}
    for run in runs:
        for corpus in run["corpora"]:
            corpora[corpus["corpus"]] = corpus
            merged["runs"][corpus["corpus"]] = source(run, corpus["corpus"])
        merged.update({key: run[key] for key in ("format", "step_preset", "step_ms", "evaluate") if key in run})
        for key in ("format", "evaluate"):
            if key in run:
                merged["runs"][key] = source(run, key)
    merged["corpora"] = list(corpora.values())
    merged["date"], merged["load"] = runs[-1]["date"], runs[-1]["load"]
    return merged


def save(results: dict) -> None:
    out = Path(results["out"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "data_scale.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    (out / "data_scale.md").write_text(report(results), encoding="utf-8")
    print(report(results), flush=True)


if __name__ == "__main__":
    main()
