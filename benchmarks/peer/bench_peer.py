"""agentsum against OpenNMT-py 3.5.1 on the same workloads, measured in the same run.

The peer is installed and driven by the scripts in ``../shared/peers/opennmt/`` (its own virtual
environment, patched for its copy-attention bugs; see that folder's README); this script only calls
them, then runs the same workloads through agentsum's own command line, and reports every figure as a
ratio agentsum / OpenNMT-py.

Workloads (the peer's configs, matched here in ``benchmarks/peer/configs/``):

* en: CNN/DailyMail ``train_stories.jsonl``, 400 article / 100 summary tokens, vocabulary capped at
  50k, batch 16 documents, Adam. Peer: 1-layer BRNN (128 per direction) + input-feeding LSTM decoder
  (256) with Bahdanau attention and copy attention. agentsum: DCA at embeddings 128 / hidden 256 with
  1 agent and no contextual layer (the peer's size), and the paper's encoders with 1, 3 and 5 agents
  (K = 2 contextual layers). Decoding: the first N validation articles, beam 5, trigram blocking,
  UNK replacement, max 110 tokens, 30 documents per batch.
* zh: LCSTS characters, 150 / 25 tokens, batch 32. Peer: Transformer 2 + 2 layers, d 256, 4 heads,
  ff 1024, copy attention. agentsum: the Transformer pointer-generator of the same size, with input
  feeding (paper 003) and without (the peer's architecture). Decoding: beam 4, max 25 tokens.

Every agentsum variant trains in fp32 like the peer, except the ``-bf16`` rows (bf16 autocast,
``train.precision=bf16``; decoding stays fp32), shown separately because the peer has no CPU bf16
mode.

Measured per system: training tokens/s (real source + target tokens, steady state: steps after
--warmup) and seconds per step; decoding documents/s (model loading excluded on both sides) at each
model's own output lengths after the same training steps, and, with beam search and with greedy
search, with every summary forced to the maximum length (``min_length = max_length``) so both
decoders do the same number of steps; peak resident memory of each process (``/usr/bin/time -v`` on
both sides).

    python benchmarks/peer/bench_peer.py                       # everything (about 40 minutes on 2 cores)
    python benchmarks/peer/bench_peer.py --tasks zh --steps 50
    python benchmarks/peer/bench_peer.py --tasks en --variants dca-1agent-k0 dca-3agents

Results: a table on stdout, one JSON object per run appended to benchmarks/results/bench_peer.jsonl,
work files (checkpoints, predictions, logs) under --work.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PEER_DIR = ROOT.parent / "shared" / "peers" / "opennmt"
DATA = ROOT.parent / "shared" / "data"
CONFIGS = Path(__file__).resolve().parent / "configs"

sys.path.insert(0, str(ROOT))
from agentsum.data.vocab import SPECIALS

TASKS = {
    "en": {
        "config": CONFIGS / "peer_en_dca.yaml",
        "decode_data": DATA / "cnndm" / "validation_1000.jsonl",
        "beam": 5, "max_length": 110, "block_trigrams": True,
        "variants": {
            "dca-1agent-k0": [],  # the peer's size
            "dca-1agent": ["model.contextual_layers=2"],
            "dca-3agents": ["data.agents=3", "model.contextual_layers=2", "model.communication=true",
                            "model.pointer=multi"],
            "dca-5agents": ["data.agents=5", "model.contextual_layers=2", "model.communication=true",
                            "model.pointer=multi"],
            "dca-1agent-k0-bf16": ["train.precision=bf16"],  # bf16 autocast (AMX on this CPU)
        },
    },
    "zh": {
        "config": CONFIGS / "peer_zh_transformer.yaml",
        "decode_data": DATA / "lcsts" / "test.jsonl",
        "beam": 4, "max_length": 25, "block_trigrams": False,
        "variants": {
            "tpg": ["model.input_feeding=false"],  # the peer's architecture
            "tpg-input-feeding": [],  # paper 003
            "tpg-bf16": ["model.input_feeding=false", "train.precision=bf16"],
        },
    },
}
PEER_TASK = {"en": "en_rnn", "zh": "zh_tf"}


def peak_rss_mib(timev: Path) -> float | None:
    for line in timev.read_text().splitlines():
        if "Maximum resident set size (kbytes):" in line:
            return round(int(line.rsplit(":", 1)[1]) / 1024, 1)
    return None


def last_json(text: str) -> dict:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"no JSON record in:\n{text[-2000:]}")


def run(cmd: list[str], env: dict | None = None, log: Path | None = None) -> str:
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, env={**os.environ, **(env or {})}, capture_output=True, text=True)
    if log is not None:
        log.write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout


# ------------------------------------------------------------------------------------------ peer
def peer_env(args) -> dict:
    return {"PEER_ROOT": str(args.peer_root), "THREADS": str(args.threads), "WARMUP": str(args.warmup),
            "MEASURE": str(args.steps), "REPORT": str(args.report_every)}


def peer_train(task: str, args) -> dict:
    out = run(["bash", str(PEER_DIR / "bench_train.sh"), task], peer_env(args))
    return last_json(out)


def peer_decode(task: str, args, forced: bool, greedy: bool = False) -> dict:
    spec = TASKS[task]
    env = peer_env(args) | {"BATCH": str(args.decode_batch), f"N_{task.upper()}": str(args.decode_docs[task])}
    extra = (f"-min_length {spec['max_length']}" if forced else "") + (" -beam_size 1" if greedy else "")
    env[f"EXTRA_{task.upper()}"] = extra  # options after the script's own: the last one wins
    return last_json(run(["bash", str(PEER_DIR / "bench_decode.sh"), task], env))


# -------------------------------------------------------------------------------------- agentsum
def ours_train(task: str, variant: str, args, vocab_size: int) -> dict:
    spec = TASKS[task]
    run_dir = args.work / f"{task}-{variant}"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    sets = spec["variants"][variant] + [f"data.vocab_size={vocab_size}", f"train.max_steps={args.warmup + args.steps}",
                                        f"train.log_every={args.report_every}", f"train.run_dir={run_dir}"]
    cmd = ["/usr/bin/time", "-v", "-o", str(run_dir / "train.timev"), sys.executable, "-m", "agentsum.cli",
           "--threads", str(args.threads), "train", "--config", str(spec["config"])]
    cmd += [x for s in sets for x in ("--set", s)]
    run(cmd, log=run_dir / "train.log")
    log = (run_dir / "train.log").read_text()
    params = float(re.search(r"with ([\d.]+)M parameters", log).group(1)) * 1e6
    windows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    steady = [w for w in windows if "tokens" in w and w["step"] > args.warmup]
    tokens, seconds, steps = (sum(w[k] for w in steady) for k in ("tokens", "seconds", "steps"))
    vocab = sum(1 for _ in (run_dir / "vocab.txt").open(encoding="utf-8"))
    return {"system": "agentsum", "task": task, "variant": variant, "params": params, "vocab_size": vocab,
            "train_tokens_per_s": tokens / seconds, "train_s_per_step": seconds / steps,
            "train_tokens_per_step": tokens / steps, "train_peak_rss_mib": peak_rss_mib(run_dir / "train.timev"),
            "checkpoint": str(run_dir / "checkpoints" / "last.pt")}


def decode_input(task: str, args) -> Path:
    """The first N rows of the task's decoding corpus, as the peer's bench_decode.sh takes them."""
    path = args.work / f"{task}-decode-{args.decode_docs[task]}.jsonl"
    with open(TASKS[task]["decode_data"], encoding="utf-8") as f:
        rows = [next(f) for _ in range(args.decode_docs[task])]
    path.write_text("".join(rows), encoding="utf-8")
    return path


def ours_decode(task: str, checkpoint: str, args, forced: bool, greedy: bool = False) -> dict:
    spec = TASKS[task]
    source = decode_input(task, args)
    tag = f"{Path(checkpoint).parent.parent.name}-{'forced' if forced else 'natural'}{'-greedy' if greedy else ''}"
    timev = args.work / f"decode-{tag}.timev"
    beam = 1 if greedy else spec["beam"]
    cmd = ["/usr/bin/time", "-v", "-o", str(timev), sys.executable, "-m", "agentsum.cli", "--threads",
           str(args.threads), "summarize", "--checkpoint", checkpoint, str(source), "--beam", str(beam),
           "--max-length", str(spec["max_length"]), "--batch-size", str(args.decode_batch)]
    cmd += ["--min-length", str(spec["max_length"])] if forced else []
    cmd += [] if spec["block_trigrams"] else ["--no-block-trigrams"]
    run(cmd, log=args.work / f"decode-{tag}.log")
    err = (args.work / f"decode-{tag}.log").read_text()
    m = re.search(r"summarized (\d+) document\(s\) in ([\d.]+)s .* ([\d.]+) tokens per summary", err)
    n, seconds, length = int(m.group(1)), float(m.group(2)), float(m.group(3))
    return {"docs_per_s": n / seconds, "avg_tokens": length, "peak_rss_mib": peak_rss_mib(timev)}


# ----------------------------------------------------------------------------------------- table
def ratio(a, b) -> str:
    return f"{a / b:.2f}x" if a and b else "n/a"


def report(task: str, peer: dict, ours: list[dict], args) -> str:
    lines = [f"\n## {task}: agentsum / OpenNMT-py 3.5.1 ({args.threads} threads, steps {args.warmup + 1}-"
             f"{args.warmup + args.steps}, {args.decode_docs[task]} documents decoded)", ""]
    head = ("| system | params (vocab) | train tok/s | s/step | train peak MiB | decode docs/s (own length) | "
            "avg tokens | beam docs/s (forced length) | greedy docs/s (forced length) | decode peak MiB |")
    lines += [head, "|" + "---|" * (head.count("|") - 1)]
    lines.append(f"| OpenNMT-py | {peer['params'] / 1e6:.1f}M ({peer['vocab_size']:,}) | {peer['train_tokens_per_s']:,.0f} | "
                 f"{peer['train_s_per_step']:.2f} | {peer['train_peak_rss_mib']:,.0f} | "
                 f"{peer['decode_docs_per_s']:.2f} | {peer['decode_avg_tokens']:.1f} | "
                 f"{peer['forced_docs_per_s']:.2f} | {peer['greedy_docs_per_s']:.2f} | "
                 f"{peer['decode_peak_rss_mib']:,.0f} |")
    for r in ours:
        lines.append(
            f"| agentsum {r['variant']} | {r['params'] / 1e6:.1f}M ({r['vocab_size']:,}) | {r['train_tokens_per_s']:,.0f} "
            f"({ratio(r['train_tokens_per_s'], peer['train_tokens_per_s'])}) | {r['train_s_per_step']:.2f} | "
            f"{r['train_peak_rss_mib']:,.0f} ({ratio(r['train_peak_rss_mib'], peer['train_peak_rss_mib'])}) | "
            f"{r['decode_docs_per_s']:.2f} ({ratio(r['decode_docs_per_s'], peer['decode_docs_per_s'])}) | "
            f"{r['decode_avg_tokens']:.1f} | "
            f"{r['forced_docs_per_s']:.2f} ({ratio(r['forced_docs_per_s'], peer['forced_docs_per_s'])}) | "
            f"{r['greedy_docs_per_s']:.2f} ({ratio(r['greedy_docs_per_s'], peer['greedy_docs_per_s'])}) | "
            f"{r['decode_peak_rss_mib']:,.0f} ({ratio(r['decode_peak_rss_mib'], peer['decode_peak_rss_mib'])}) |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", nargs="+", choices=sorted(TASKS), default=["en", "zh"])
    p.add_argument("--variants", nargs="+", help="agentsum variants to run (default: all of each task's)")
    p.add_argument("--steps", type=int, default=100, help="measured training steps (default 100)")
    p.add_argument("--warmup", type=int, default=10, help="training steps before measuring (default 10)")
    p.add_argument("--report-every", type=int, default=10, help="log interval; must divide --warmup and --steps")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--decode-docs-en", type=int, default=100)
    p.add_argument("--decode-docs-zh", type=int, default=200)
    p.add_argument("--decode-batch", type=int, default=30, help="documents per decoding batch (onmt default 30)")
    p.add_argument("--peer-root", type=Path, default=Path(os.environ.get("PEER_ROOT", "/tmp/peer_onmt")))
    p.add_argument("--work", type=Path, default=ROOT / "runs" / "bench-peer")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "bench_peer.jsonl")
    args = p.parse_args()
    if args.warmup % args.report_every or args.steps % args.report_every:
        p.error("--report-every must divide --warmup and --steps")
    if not PEER_DIR.is_dir():
        p.error(f"{PEER_DIR} not found: the OpenNMT-py driver scripts live in ../shared/peers/opennmt")
    args.decode_docs = {"en": args.decode_docs_en, "zh": args.decode_docs_zh}
    args.work.mkdir(parents=True, exist_ok=True)
    run(["bash", str(PEER_DIR / "setup.sh")], {"PEER_ROOT": str(args.peer_root)})

    tables = []
    for task in args.tasks:
        variants = [v for v in TASKS[task]["variants"] if not args.variants or v in args.variants]
        # The peer first, then each agentsum variant, one process at a time: nothing shares the cores.
        t = peer_train(task, args)
        natural = peer_decode(task, args, forced=False)
        forced = peer_decode(task, args, forced=True)
        greedy = peer_decode(task, args, forced=True, greedy=True)
        peer = {"system": "opennmt-py", "task": task, "params": t["params"], "vocab_size": t["vocab_size"],
                "train_tokens_per_s": t["src_plus_tgt_tok_per_s"], "train_s_per_step": t["sec_per_step"],
                "train_tokens_per_step": t["avg_src_tok_per_batch"] + t["avg_tgt_tok_per_batch"],
                "train_peak_rss_mib": t["peak_rss_mib"], "decode_docs_per_s": natural["docs_per_s"],
                "decode_avg_tokens": natural["avg_pred_tokens"], "decode_peak_rss_mib": natural["peak_rss_mib"],
                "forced_docs_per_s": forced["docs_per_s"], "forced_avg_tokens": forced["avg_pred_tokens"],
                "greedy_docs_per_s": greedy["docs_per_s"], "greedy_avg_tokens": greedy["avg_pred_tokens"],
                "raw": {"train": t, "decode": natural, "decode_forced": forced, "decode_greedy": greedy}}
        ours = []
        for variant in variants:
            # the peer's vocabulary size: its count includes its 4 special tokens; ours adds SPECIALS
            r = ours_train(task, variant, args, vocab_size=t["vocab_size"] - len(SPECIALS))
            d = ours_decode(task, r["checkpoint"], args, forced=False)
            f = ours_decode(task, r["checkpoint"], args, forced=True)
            g = ours_decode(task, r["checkpoint"], args, forced=True, greedy=True)
            r.update(decode_docs_per_s=d["docs_per_s"], decode_avg_tokens=d["avg_tokens"],
                     decode_peak_rss_mib=max(d["peak_rss_mib"], f["peak_rss_mib"]),
                     forced_docs_per_s=f["docs_per_s"], forced_avg_tokens=f["avg_tokens"],
                     greedy_docs_per_s=g["docs_per_s"], greedy_avg_tokens=g["avg_tokens"])
            ours.append(r)
            print(f"measured {task} {variant}", file=sys.stderr, flush=True)
        table = report(task, peer, ours, args)
        print(table, flush=True)
        tables.append(table)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("a") as f:
            stamp = {"time": time.time(), "threads": args.threads, "steps": args.steps, "warmup": args.warmup,
                     "loadavg": os.getloadavg()}
            for r in [peer] + ours:
                f.write(json.dumps({**r, **stamp}) + "\n")
    print("\nratios are agentsum / OpenNMT-py, measured one after the other in this run; "
          "peak memory: lower is better", flush=True)


if __name__ == "__main__":
    main()
