"""Long inputs: training step time, tokens/s and peak memory from 1k to 16k source tokens, and beam
search over whole earnings calls and meetings.

Rows (each length, each row in its own subprocess, so that its peak RSS is its own):

    dca1         DCA with one agent (one bLSTM encoder) over all the tokens: ectsum-m6 with data.agents=1
    dca400       DCA with 400-token agents, ectsum-m6 as it is (data.agents: auto, agent_tokens 400,
                 no max_agents): 1k tokens are 3 agents, 16k at least 40
    transformer  the Transformer pointer-generator of transformer-cnndm over the same tokens
    onmt         OpenNMT-py 3.5.1's RNN pointer-generator (../shared/peers/opennmt, configs/en_rnn_pg.yaml:
                 bi-LSTM 2 x 128, MLP attention, input feeding, copy attention) on the same token files

Every row reads the same batch of 8 documents per length: ECTSum training calls, tokenized by agentsum,
one call after another until the length is reached, each with the reference bullets of its first call
(at most 120 tokens) as its target; one vocabulary of the 20,000 most frequent tokens of those calls.
A step is forward + backward + gradient clipping + Adam, on the same batch each time; the figure is
the median over the measured steps. Tokens/s counts source and target tokens. Peak RSS is the
child's ``ru_maxrss`` (for OpenNMT, that of its ``onmt_train`` process). Each child runs under an
address-space limit (``--memory-cap-gb``): a row that needs more stops with an allocation error,
is reported as such, and is not run at the longer lengths.

The machine is shared and noisy, so the rows of one length run one after another, and every figure
is also given as a ratio measured in the same run: each row against the one-agent row at the same
length, and each length against the same row at 8k (linearity: 16k should cost about 2x 8k).

Decoding: beam 5 over a few ECTSum validation calls (about 3k words each) and over the longest QMSum
validation meeting, one document at a time, each case in its own subprocess, with the weights of
``--checkpoint`` (an ectsum-m6 model) where that file exists, else random weights of the same size.

``--profile`` profiles the dca400 step at ``--profile-length`` tokens (torch.profiler, CPU) and
writes the top operators to profile.md. ``--before DIR`` (a copy of the ``agentsum`` package of an
earlier commit, ``git archive COMMIT agentsum | tar -x -C DIR``) adds that code's dca400 row and
profile at the profile length, measured in the same run, for a before/after comparison.

    python benchmarks/speed/bench_long.py                                      # the whole table, ~20 minutes
    python benchmarks/speed/bench_long.py --lengths 1000 2000 --rows dca1 dca400 --steps 1 --no-decode
    python benchmarks/speed/bench_long.py --profile --before /tmp/before --rows dca1 dca400
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
ECTSUM = SHARED / "data" / "ectsum"
QMSUM = SHARED / "data" / "qmsum"
PEER = SHARED / "peers" / "opennmt"
CHECKPOINT = ROOT / "agentsum" / "pretrained" / "ectsum-en.pt"  # the shipped calls model (an ectsum-m6 model)
ROWS = ("dca1", "dca400", "transformer", "onmt")
LABELS = {"dca1": "DCA, 1 agent", "dca400": "DCA, 400-token agents", "transformer": "Transformer-PG",
          "onmt": "OpenNMT-py RNN PG", "dca400@before": "DCA, 400-token agents (before)",
          "dca1+ckpt": "DCA, 1 agent, checkpointed encoder", "dca400+ckpt": "DCA, 400-token agents, checkpointed encoder"}
CHECKPOINTED = "+ckpt"  # a DCA row with model.checkpoint_agents: true
BASELINE_ROW = "dca1"
LINEAR_LENGTH = 8000  # each length's time is also given against this one
MAX_SUMMARY_TOKENS = 120  # the ECTSum presets' data.max_summary_tokens


# ------------------------------------------------------------------------------------------ data
def build_inputs(path: Path, calls: int, lengths: list[int], batch: int, vocab_size: int) -> dict:
    """The batch of every length and the vocabulary, as plain lists (written to JSON for the rows).

    Document i of a batch is calls i, i + batch, i + 2 * batch, ... concatenated (sentences kept)
    and cut at exactly ``length`` tokens; its target is call i's reference, cut at 120 tokens."""
    from agentsum.data.dataset import DataConfig
    from agentsum.data.language import text_processor
    from agentsum.data.sources import load_examples
    from agentsum.data.vocab import Vocabulary

    examples = load_examples(str(path), end=calls)
    language = text_processor(DataConfig(agents=1))
    articles = [language.article_sentences(e.article) for e in examples]
    summaries = [[t for s in language.summary_sentences(e.summary) for t in s][:MAX_SUMMARY_TOKENS] for e in examples]
    vocab = Vocabulary.build(([t for s in a for t in s] + y for a, y in zip(articles, summaries)), max_size=vocab_size)
    docs = {}
    for length in lengths:
        docs[str(length)] = [concatenated(articles[i::batch], length) for i in range(batch)]
        if any(sum(map(len, d)) < length for d in docs[str(length)]):
            raise SystemExit(f"--calls {calls} hold too few tokens for {batch} documents of {length} tokens")
    return {"vocab": vocab.itos, "docs": docs, "summaries": summaries[:batch]}


def concatenated(articles: list[list[list[str]]], length: int) -> list[list[str]]:
    """The sentences of ``articles`` one after another, the last one cut so that they hold ``length`` tokens."""
    out, room = [], length
    for article in articles:
        for sentence in article:
            if room <= 0:
                return out
            out.append(sentence[:room])
            room -= len(out[-1])
    return out


# ------------------------------------------------------------------------------------- one row
def row_config(row: str, length: int, overrides: list[str]):
    """The run configuration of a row at ``length`` source tokens."""
    from agentsum.config import load_config

    if row.endswith(CHECKPOINTED):
        return row_config(row[: -len(CHECKPOINTED)], length, ["model.checkpoint_agents=true", *overrides])

    if row.startswith("dca1"):
        return load_config("ectsum-m6", [f"data.max_article_tokens={length}", "data.agents=1",
                                          f"data.agent_tokens={length}", *overrides])
    if row.startswith("dca400"):
        return load_config("ectsum-m6", [f"data.max_article_tokens={length}", *overrides])
    if row.startswith("transformer"):
        return load_config("transformer-cnndm", [f"data.max_article_tokens={length}", "data.agents=1",
                                                 f"data.max_summary_tokens={MAX_SUMMARY_TOKENS}",
                                                 f"model.max_positions={max(length, MAX_SUMMARY_TOKENS) + 2}",
                                                 *overrides])
    raise ValueError(f"unknown row {row!r}")


def training_setup(row: str, length: int, inputs: dict, args):
    """(config, docs, batch, model, optimizer, objective) of one row at ``length`` tokens, the model in
    training mode, with the allocator and threads `agentsum train` uses."""
    import torch

    from agentsum.data.dataset import Document, split_article, to_batch
    from agentsum.data.vocab import Vocabulary
    from agentsum.models import build_model
    from agentsum.runtime import tune_allocator
    from agentsum.training.objectives import build_objective

    tune_allocator()  # as `agentsum train` runs
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    config = row_config(row, length, args.overrides)
    vocab = Vocabulary(inputs["vocab"])
    docs = [Document(f"doc{i}", split_article(sentences, config.data), summary, "")
            for i, (sentences, summary) in enumerate(zip(inputs["docs"][str(length)], inputs["summaries"]))]
    batch = to_batch(docs, vocab)
    model = build_model(config.model, len(vocab))
    optimizer = torch.optim.Adam(model.parameters(), lr=config.train.lr)
    objective = build_objective(config.train, vocab)
    model.train()
    return config, docs, batch, model, optimizer, objective


def measure_train(row: str, length: int, inputs: dict, args) -> dict:
    import torch

    config, docs, batch, model, optimizer, objective = training_setup(row, length, inputs, args)
    times = []
    for i in range(args.warmup + args.steps):
        start = time.perf_counter()
        loss, _ = objective(model, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.train.max_grad_norm)
        optimizer.step()
        if i >= args.warmup:
            times.append(time.perf_counter() - start)
    step = sorted(times)[(len(times) - 1) // 2]
    tokens = batch.num_source_tokens() + batch.num_target_tokens()
    return {"agents": [sum(1 for a in d.agents if a) for d in docs], "source_tokens": batch.num_source_tokens(),
            "target_tokens": batch.num_target_tokens(), "parameters": sum(p.numel() for p in model.parameters()),
            "step_s": step, "steps_s": times, "tokens_per_s": tokens / step, "loss": loss.item(),
            "peak_rss_mb": peak_rss_mb(), "code": str(Path(sys.modules["agentsum"].__file__).parent)}


def peak_rss_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


# ------------------------------------------------------------------------------------ OpenNMT
STEP_LOG = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO\] Step\s+(\d+)/.*?bsz:\s*(\d+)/\s*(\d+)/")


def onmt_steps(log: str, warmup: int) -> list[tuple[float, int]]:
    """(seconds, source + target tokens) of every step after the first ``warmup`` ones, from
    onmt_train's report lines (report_every 1: one line per step, stamped when the step ends, with
    the batch's non-padding source and target tokens)."""
    stamps, tokens = {}, {}
    for line in log.splitlines():
        m = STEP_LOG.match(line)
        if m:
            step = int(m.group(2))
            stamps[step] = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            tokens[step] = int(m.group(3)) + int(m.group(4))
    return [(stamps[k] - stamps[k - 1], tokens[k]) for k in sorted(stamps) if k > warmup and k - 1 in stamps]


def measure_onmt(length: int, inputs: dict, args) -> dict:
    venv = Path(args.peer_root) / "venv"
    if not (venv / "bin" / "onmt_train").exists():
        return {"error": f"OpenNMT-py is not installed: no {venv}/bin/onmt_train (run {PEER}/setup.sh)"}
    import yaml

    work = Path(args.work) / f"onmt-{length}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    # the same tokens as agentsum's rows, one document a line (OpenNMT adds its own <s> </s>), once per
    # step. OpenNMT sorts a bucket by (source, target) length before cutting it into batches, and never
    # puts one source twice into a batch: copy r of every document ends r tokens early, so each batch
    # is the 8 documents of one copy, as the other rows' batch
    warmup = max(args.warmup, 1)  # its first step includes the start: always a warm-up step
    steps = warmup + args.steps
    batch = len(inputs["summaries"])
    docs = [[t for s in d for t in s] for d in inputs["docs"][str(length)]]
    (work / "train.src").write_text("".join(" ".join(d[: length - r]) + "\n" for r in range(steps + 1) for d in docs))
    (work / "train.tgt").write_text("".join(" ".join(y) + "\n" for _ in range(steps + 1) for y in inputs["summaries"]))
    # agentsum's vocabulary, so both sides share one of 20k words (OpenNMT adds its own specials)
    (work / "vocab.shared").write_text("".join(f"{t}\t1\n" for t in inputs["vocab"][4:]))
    config = yaml.safe_load((PEER / "configs" / "en_rnn_pg.yaml").read_text())
    config.update({
        "save_data": str(work), "src_vocab": str(work / "vocab.shared"), "src_vocab_size": len(inputs["vocab"]),
        "tgt_vocab_size": len(inputs["vocab"]),
        "data": {"train": {"path_src": str(work / "train.src"), "path_tgt": str(work / "train.tgt")}},
        "batch_size": batch, "train_steps": steps, "report_every": 1,  # one bucket holds every step's batch
        "save_checkpoint_steps": steps, "save_model": str(work / "model"), "bucket_size": batch * (steps + 1),
    })
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads),
               TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1", PYTHONWARNINGS="ignore::FutureWarning")
    cmd = [str(venv / "bin" / "onmt_train"), "-config", str(work / "config.yaml")]
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout,
                              preexec_fn=lambda: limit_memory(args.memory_cap_gb))
    except subprocess.TimeoutExpired:
        return {"error": f"onmt_train ran past {args.timeout} s", "peak_rss_mb": peak_rss_mb(resource.RUSAGE_CHILDREN)}
    log = done.stdout + done.stderr
    (work / "train.log").write_text(log)
    if done.returncode != 0:
        return {"error": f"onmt_train failed (rc {done.returncode}): {failure_line(log)}",
                "peak_rss_mb": peak_rss_mb(resource.RUSAGE_CHILDREN)}
    measured = onmt_steps(log, warmup)
    if not measured:
        return {"error": "onmt_train reported no steps", "peak_rss_mb": peak_rss_mb(resource.RUSAGE_CHILDREN)}
    times = [seconds for seconds, _ in measured]
    step = sorted(times)[(len(times) - 1) // 2]
    tokens = sum(n for _, n in measured) / len(measured)
    for path in work.glob("model_step_*.pt"):
        path.unlink()
    return {"agents": [1] * batch, "source_tokens": batch * length, "tokens_per_step": tokens,
            "step_s": step, "steps_s": times, "tokens_per_s": tokens / step,
            "peak_rss_mb": peak_rss_mb(resource.RUSAGE_CHILDREN)}


def failure_line(log: str) -> str:
    """The line of a failed run's log that says why (an allocation failure or the last error)."""
    lines = [x.strip() for x in log.splitlines() if x.strip()]
    for line in reversed(lines):
        if "allocate" in line or "MemoryError" in line or "Error" in line:
            return line[:300]
    return lines[-1][:300] if lines else "no output"


def limit_memory(gigabytes: float) -> None:
    """Cap this process's address space, so a row that needs too much fails at once, alone."""
    if gigabytes > 0:
        cap = int(gigabytes * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


# ----------------------------------------------------------------------------------- decoding
def measure_decode(case: str, args) -> dict:
    """Beam-5 decoding, one document at a time: a few ECTSum calls or the longest QMSum meeting."""
    import dataclasses

    import torch

    from agentsum.config import load_config
    from agentsum.data.dataset import prepare_all, to_batch
    from agentsum.data.sources import load_examples
    from agentsum.decoding.search import search
    from agentsum.runtime import tune_allocator

    tune_allocator()  # as `agentsum summarize` runs
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    checkpoint = Path(args.checkpoint) if args.checkpoint else None
    if checkpoint is not None and checkpoint.exists():
        from agentsum.checkpoint import load_model

        model, vocab, config, meta = load_model(checkpoint)
        weights = f"trained ({checkpoint}, step {meta.get('step')})"
    else:
        from agentsum.data.vocab import Vocabulary
        from agentsum.models import build_model

        config = load_config("ectsum-m6", args.overrides)
        vocab = Vocabulary(json.loads(Path(args.inputs).read_text())["vocab"])
        model = build_model(config.model, len(vocab)).eval()
        weights = "random (untrained: every summary runs to max_length)"
    if case == "ectsum":
        examples = load_examples(str(args.ectsum_valid), end=args.decode_calls)
        data = dataclasses.replace(config.data, max_article_tokens=10**6)  # whole calls
        search_config = load_config("ectsum-m6", []).search
    else:
        examples = load_examples(str(args.qmsum_valid))
        examples = [max(examples, key=lambda e: len(e.article.split()))]
        data = dataclasses.replace(load_config("qmsum-m6", []).data, max_article_tokens=10**6)
        search_config = load_config("qmsum-m6", []).search
        search_config = dataclasses.replace(search_config, numbers_from_source=False)
    docs = prepare_all(examples, data)
    rss_before = peak_rss_mb()
    per_doc = []
    with torch.no_grad():
        for doc, example in zip(docs, examples):
            batch = to_batch([doc], vocab, with_targets=False)
            start = time.perf_counter()
            hyps = search(model, batch, search_config, vocab=vocab)
            seconds = time.perf_counter() - start
            per_doc.append({"id": doc.id, "words": len(example.article.split()),
                            "tokens": sum(map(len, doc.agents)), "agents": len(doc.agents), "seconds": seconds,
                            "output_tokens": len(hyps.tokens[0])})
    return {"case": case, "weights": weights, "beam": search_config.beam_size,
            "max_length": search_config.max_length, "min_length": search_config.min_length, "docs": per_doc,
            "seconds_per_doc": sum(d["seconds"] for d in per_doc) / len(per_doc),
            "peak_rss_mb": peak_rss_mb(), "rss_before_decoding_mb": rss_before}


# ------------------------------------------------------------------------------------ profile
#: Parts of a DCA training step, by the profiler events that hold them (inclusive CPU time).
PROFILE_GROUPS = {
    "LSTMs forward (oneDNN; 3 bLSTM layers = 6 LSTMs, and the decoder)": ["aten::mkldnn_rnn_layer"],
    "LSTMs backward": ["aten::mkldnn_rnn_layer_backward"],
    "word attention blocks forward (models/additive.py)": ["_AdditiveScores"],
    "word attention blocks backward": ["_AdditiveScoresBackward"],
    "Adam step": ["Optimizer.step#Adam.step"],
}


def profile_step(length: int, inputs: dict, args) -> dict:
    """The dca400 training step at ``length`` tokens under torch.profiler: top operators by self CPU time."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    config, _, batch, model, optimizer, objective = training_setup("dca400", length, inputs, args)

    def step():
        loss, _ = objective(model, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.train.max_grad_norm)
        optimizer.step()

    step()  # warm-up
    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(args.profile_steps):
            step()
    wall = (time.perf_counter() - start) / args.profile_steps
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events)
    top = [{"name": e.key, "self_s": e.self_cpu_time_total / 1e6 / args.profile_steps,
            "share": e.self_cpu_time_total / total, "calls": e.count // args.profile_steps}
           for e in events[: args.profile_top]]
    inclusive = {e.key: e.cpu_time_total / 1e6 / args.profile_steps for e in events}
    groups = {label: sum(inclusive.get(name, 0.0) for name in names) for label, names in PROFILE_GROUPS.items()}
    return {"length": length, "step_s_profiled": wall, "top": top, "groups": groups,
            "code": str(Path(sys.modules["agentsum"].__file__).parent)}


# ---------------------------------------------------------------------------------- the parent
def run_child(job: dict, args, code: str | None = None) -> dict:
    """One measurement in its own process under the memory cap; a failure becomes {"error": ...}."""
    cmd = [sys.executable, __file__, "--one", json.dumps(job), "--inputs", str(args.inputs), "--work", str(args.work),
           "--threads", str(args.threads), "--steps", str(args.steps), "--warmup", str(args.warmup),
           "--memory-cap-gb", str(args.memory_cap_gb), "--timeout", str(args.timeout),
           "--peer-root", str(args.peer_root), "--checkpoint", str(args.checkpoint or ""),
           "--decode-calls", str(args.decode_calls), "--ectsum-valid", str(args.ectsum_valid),
           "--qmsum-valid", str(args.qmsum_valid), "--profile-steps", str(args.profile_steps),
           "--profile-top", str(args.profile_top)]
    cmd += [arg for o in args.overrides for arg in ("--set", o)]
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    if code:  # an earlier copy of the package comes first on the path
        env["PYTHONPATH"] = code + os.pathsep + env.get("PYTHONPATH", "")
    cap = 0 if job["kind"] == "onmt" else args.memory_cap_gb  # onmt_train gets the cap itself
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout + 60,
                              preexec_fn=lambda: limit_memory(cap))
    except subprocess.TimeoutExpired:
        return {"error": f"ran past {args.timeout + 60} s"}
    if done.returncode != 0:
        return {"error": f"failed (rc {done.returncode}): {failure_line(done.stderr)}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def child_main(args) -> None:
    job = json.loads(args.one)
    inputs = json.loads(Path(args.inputs).read_text()) if job["kind"] in ("train", "onmt", "profile") else None
    if job["kind"] == "train":
        out = measure_train(job["row"], job["length"], inputs, args)
    elif job["kind"] == "onmt":
        out = measure_onmt(job["length"], inputs, args)
    elif job["kind"] == "decode":
        out = measure_decode(job["case"], args)
    else:
        out = profile_step(job["length"], inputs, args)
    print(json.dumps(out))


def is_memory_failure(result: dict) -> bool:
    error = result.get("error", "")
    return any(word in error for word in ("allocate", "MemoryError", "memory", "rc -9", "rc 137"))


def add_ratios(results: list[dict]) -> None:
    """Each row's step time against the baseline row at the same length, and against itself at 8k."""
    by = {(r["row"], r["length"]): r for r in results if "step_s" in r}
    for r in results:
        if "step_s" not in r:
            continue
        base = by.get((BASELINE_ROW, r["length"]))
        r["time_vs_one_agent"] = r["step_s"] / base["step_s"] if base else None
        ref = by.get((r["row"].split("@")[0] if r["row"].endswith("@before") else r["row"], LINEAR_LENGTH))
        r["time_vs_8k"] = r["step_s"] / ref["step_s"] if ref and not r["row"].endswith("@before") else None


def targets(results: list[dict], decode: list[dict], lengths: list[int]) -> list[dict]:
    """The issue's targets, each met or not, with the numbers."""
    out = []
    by = {(r["row"], r["length"]): r for r in results}
    for row in ROWS:
        a, b = by.get((row, 8000), {}), by.get((row, 16000), {})
        if "step_s" in a and "step_s" in b:
            ratio = b["step_s"] / a["step_s"]
            out.append({"target": f"{LABELS[row]}: step time at 16k <= 2.2x 8k", "met": ratio <= 2.2,
                        "value": f"{ratio:.2f}x ({b['step_s']:.2f} s vs {a['step_s']:.2f} s)"})
    if 4000 in lengths:
        dca = by.get(("dca400", 4000), {})
        others = {row: by.get((row, 4000), {}) for row in ROWS if row != "dca400"}
        if "tokens_per_s" in dca:
            beaten = [f"{LABELS[row]} {o['tokens_per_s']:.0f}" if "tokens_per_s" in o else f"{LABELS[row]} (not measured)"
                      for row, o in others.items()]
            met = all(dca["tokens_per_s"] > o.get("tokens_per_s", 0) for o in others.values())
            out.append({"target": "DCA (400-token agents) at 4k tokens ahead of every other row in tokens/s",
                        "met": met, "value": f"{dca['tokens_per_s']:.0f} tok/s vs " + ", ".join(beaten)})
    for row in ("dca1", "dca400", "dca1" + CHECKPOINTED, "dca400" + CHECKPOINTED):
        r = by.get((row, 16000), {})
        if "peak_rss_mb" in r and "step_s" in r:
            out.append({"target": f"{LABELS[row]}: peak RSS at 16k tokens, batch 8 <= 8 GB", "met": r["peak_rss_mb"] <= 8192,
                        "value": f"{r['peak_rss_mb'] / 1024:.2f} GB"})
        elif "error" in r:
            out.append({"target": f"{LABELS[row]}: peak RSS at 16k tokens, batch 8 <= 8 GB", "met": False,
                        "value": r["error"]})
    for d in decode:
        if d.get("case") == "qmsum" and "peak_rss_mb" in d:
            out.append({"target": "the longest QMSum meeting decoded (beam 5) within 4 GB", "met": d["peak_rss_mb"] <= 4096,
                        "value": f"{d['peak_rss_mb'] / 1024:.2f} GB, {d['docs'][0]['words']} words, "
                                 f"{d['docs'][0]['seconds']:.1f} s"})
    return out


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem = int(Path("/proc/meminfo").read_text().split()[1]) / 2**20
    except (OSError, ValueError, IndexError):
        mem = float("nan")
    import torch

    return (f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}, torch {torch.__version__}")


def fmt(value, spec: str, missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


def markdown(report: dict) -> str:
    lines = [f"# Long inputs: training step and decoding ({report['when']})", "",
             f"Machine: {report['machine']}; {report['threads']} threads; load average at the start "
             f"{report['loadavg_start']}, at the end {report['loadavg_end']}.", "",
             f"Command: `{report['command']}`", "",
             f"Batch {report['batch']}, vocabulary {report['vocab']}, ECTSum training calls concatenated to each "
             f"length, targets the first call's bullets (at most {MAX_SUMMARY_TOKENS} tokens); forward + backward + "
             f"clipping + Adam, median of {report['steps']} steps after {report['warmup']} warm-up; every row of a length "
             f"in its own process, one after another, under a {report['memory_cap_gb']} GB address-space cap.", "",
             "| row | tokens | agents | step s | tokens/s | peak RSS GB | x one agent | x 8k |",
             "|---|---:|---|---:|---:|---:|---:|---:|"]
    for r in report["train"]:
        label = LABELS.get(r["row"], r["row"])
        if "step_s" not in r:
            lines.append(f"| {label} | {r['length']} | | not measured: {r.get('error', '?')} | | "
                         f"{fmt(r.get('peak_rss_mb') and r['peak_rss_mb'] / 1024, '.2f')} | | |")
            continue
        agents = sorted(set(r.get("agents", [])))
        agents = "" if not agents else str(agents[0]) if len(agents) == 1 else f"{agents[0]}-{agents[-1]}"
        lines.append(f"| {label} | {r['length']} | {agents} | {r['step_s']:.2f} | {r['tokens_per_s']:.0f} | "
                     f"{r['peak_rss_mb'] / 1024:.2f} | {fmt(r.get('time_vs_one_agent'), '.2f')} | "
                     f"{fmt(r.get('time_vs_8k'), '.2f')} |")
    if report["decode"]:
        lines += ["", "## Decoding (beam 5, one document at a time)", "",
                  "| case | documents | words | tokens | agents | s per document | output tokens | peak RSS GB | weights |",
                  "|---|---:|---|---|---|---:|---|---:|---|"]
        for d in report["decode"]:
            if "docs" not in d:
                lines.append(f"| {d.get('case')} | | | | | not measured: {d.get('error')} | | | |")
                continue
            span = lambda key: "/".join(str(x[key]) for x in d["docs"])  # noqa: E731
            lines.append(f"| {d['case']} | {len(d['docs'])} | {span('words')} | {span('tokens')} | {span('agents')} | "
                         f"{d['seconds_per_doc']:.1f} | {span('output_tokens')} | {d['peak_rss_mb'] / 1024:.2f} | "
                         f"{d['weights']} |")
    if report["targets"]:
        lines += ["", "## Targets", "", "| target | met | measured |", "|---|---|---|"]
        lines += [f"| {t['target']} | {'yes' if t['met'] else 'no'} | {t['value']} |" for t in report["targets"]]
    if report.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {n}" for n in report["notes"]]
    return "\n".join(lines) + "\n"


def profile_markdown(profiles: list[dict], command: str) -> str:
    lines = ["# Where the time of a DCA training step goes", "", f"Command: `{command}`", ""]
    for p in profiles:
        if "top" not in p:
            lines += [f"## {p.get('label')}: not measured: {p.get('error')}", ""]
            continue
        lines += [f"## {p['label']}: {p['length']} tokens, batch 8, 400-token agents; {p['step_s_profiled']:.2f} s per "
                  f"profiled step (code: {p['code']})", "",
                  "| part of the step | CPU s per step (inclusive) | share of the step |", "|---|---:|---:|"]
        lines += [f"| {label} | {seconds:.3f} | {100 * seconds / p['step_s_profiled']:.1f}% |"
                  for label, seconds in p.get("groups", {}).items()]
        lines += ["", "| operator | self CPU s per step | share | calls per step |", "|---|---:|---:|---:|"]
        lines += [f"| `{t['name']}` | {t['self_s']:.3f} | {100 * t['share']:.1f}% | {t['calls']} |" for t in p["top"]]
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lengths", type=int, nargs="+", default=[1000, 2000, 4000, 8000, 16000])
    p.add_argument("--rows", nargs="+", default=list(ROWS), choices=ROWS)
    p.add_argument("--checkpointed-lengths", type=int, nargs="*", default=[8000, 16000],
                   help="lengths at which the DCA rows also run with model.checkpoint_agents: true")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--vocab", type=int, default=20000)
    p.add_argument("--calls", type=int, default=600, help="ECTSum training calls read (text and vocabulary)")
    p.add_argument("--data", type=Path, default=ECTSUM / "train.jsonl")
    p.add_argument("--steps", type=int, default=3, help="measured steps per row (the median is reported)")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--memory-cap-gb", type=float, default=12.0, help="address-space limit of each row (0: none)")
    p.add_argument("--timeout", type=int, default=600, help="seconds one row may run")
    p.add_argument("--decode", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--decode-calls", type=int, default=3)
    p.add_argument("--ectsum-valid", type=Path, default=ECTSUM / "valid.jsonl")
    p.add_argument("--qmsum-valid", type=Path, default=QMSUM / "valid.jsonl")
    p.add_argument("--checkpoint", type=Path, default=CHECKPOINT,
                   help="ectsum-m6 weights to decode with (default: the shipped calls model; random weights where the file "
                        "does not exist)")
    p.add_argument("--profile", action="store_true", help="profile the dca400 step at --profile-length")
    p.add_argument("--profile-length", type=int, default=4000)
    p.add_argument("--profile-steps", type=int, default=2)
    p.add_argument("--profile-top", type=int, default=20)
    p.add_argument("--before", help="an earlier copy of the agentsum package: its dca400 row (and profile) at "
                                    "--profile-length, for before/after")
    p.add_argument("--peer-root", default=os.environ.get("PEER_ROOT", "/tmp/peer_onmt"),
                   help="where ../shared/peers/opennmt/setup.sh built OpenNMT-py (PEER_ROOT)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="applied to the agentsum rows' configurations")
    p.add_argument("--work", type=Path, default=Path("/tmp/bench_long"), help="scratch files")
    p.add_argument("--out-dir", type=Path, default=ROOT / "benchmarks" / "results" / "long")
    p.add_argument("--note", action="append", default=[], help="a line for the report's notes (repeatable)")
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--inputs", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        child_main(args)
        return

    command = "python benchmarks/speed/bench_long.py " + " ".join(sys.argv[1:])
    args.work.mkdir(parents=True, exist_ok=True)
    args.inputs = args.work / "inputs.json"
    loadavg_start = os.getloadavg()
    lengths = sorted(set(args.lengths) | ({args.profile_length} if args.before or args.profile else set()))
    inputs = build_inputs(args.data, args.calls, lengths, args.batch, args.vocab)
    args.inputs.write_text(json.dumps(inputs))
    notes = list(args.note)
    if len(inputs["vocab"]) < args.vocab + 4:
        notes.append(f"the {args.calls} calls hold {len(inputs['vocab']) - 4} distinct tokens: the vocabulary is that")

    results, too_big, decode, profiles = [], {}, [], []

    def write(final: bool = False) -> dict:
        """The report so far (after every measurement, so that a run cut short leaves what it measured)."""
        add_ratios(results)
        report = {"when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "machine": machine(),
                  "command": command, "threads": args.threads, "batch": args.batch, "vocab": len(inputs["vocab"]),
                  "steps": args.steps, "warmup": args.warmup, "memory_cap_gb": args.memory_cap_gb,
                  "loadavg_start": [round(x, 2) for x in loadavg_start],
                  "loadavg_end": [round(x, 2) for x in os.getloadavg()], "complete": final,
                  "train": results, "decode": decode, "targets": targets(results, decode, args.lengths),
                  "profiles": profiles, "notes": notes + ([] if final else ["incomplete: the run was still going"])}
        args.out_dir.mkdir(parents=True, exist_ok=True)
        (args.out_dir / "bench_long.json").write_text(json.dumps(report, indent=1) + "\n")
        (args.out_dir / "bench_long.md").write_text(markdown(report))
        if profiles:
            (args.out_dir / "profile_4k.md").write_text(profile_markdown(profiles, command))
        return report

    # decoding and the profile first: minutes, where the long rows take most of the run
    if args.decode:
        for case in ("ectsum", "qmsum"):
            d = {"case": case, **run_child({"kind": "decode", "case": case}, args)}
            decode.append(d)
            print(f"decode {case}: " + (f"{d['seconds_per_doc']:.1f} s/doc {d['peak_rss_mb'] / 1024:.2f} GB"
                                        if "docs" in d else d["error"]), file=sys.stderr)
            write()

    if args.profile:
        for label, code in [("after", None)] + ([("before", args.before)] if args.before else []):
            prof = {"label": label, **run_child({"kind": "profile", "length": args.profile_length}, args, code)}
            profiles.append(prof)
            print(f"profile {label}: " + (f"{prof['step_s_profiled']:.2f} s/step" if "top" in prof else prof["error"]),
                  file=sys.stderr)
            write()
    jobs = []
    for length in sorted(args.lengths):
        jobs += [(row, length, None) for row in args.rows]
        if length in args.checkpointed_lengths:
            jobs += [(row + CHECKPOINTED, length, None) for row in args.rows if row.startswith("dca")]
        if args.before and length == args.profile_length:  # beside the rows it is compared with
            jobs.append(("dca400@before", length, args.before))
    for row, length, code in jobs:
        if row in too_big:
            results.append({"row": row, "length": length, "error": f"skipped: needed more than the cap at {too_big[row]}"})
            continue
        job = {"kind": "onmt", "length": length} if row == "onmt" else {"kind": "train", "row": row, "length": length}
        started = time.perf_counter()
        result = {"row": row, "length": length, **run_child(job, args, code)}
        result["wall_s"] = time.perf_counter() - started
        if is_memory_failure(result):
            too_big[row] = length
        results.append(result)
        print(f"{row:14} {length:6} " + (f"{result['step_s']:7.2f} s/step {result['tokens_per_s']:8.0f} tok/s "
                                          f"{result['peak_rss_mb'] / 1024:6.2f} GB" if "step_s" in result
                                          else result["error"]), file=sys.stderr)
        write()

    print(markdown(write(final=True)))

if __name__ == "__main__":
    main()
