"""Summary quality of OpenNMT-py 3.5.1 trained for a fixed number of minutes, scored like agentsum.

The quality counterpart of ``bench_peer.py`` (which compares speed): the peer is installed and driven
through ``../shared/peers/opennmt/`` (its own virtual environment, patched for its copy-attention
bugs), trained on the same corpus as an agentsum preset for the same minutes on the same number of
threads, and every checkpoint it saved is decoded on the same held-out documents and scored with
agentsum's own ROUGE (``agentsum.evaluation.rouge.rouge_for``: rouge-score, stemmed for English,
characters for Chinese) against the references agentsum scores against. The records go to
``OUT/curve.jsonl`` in ``quality_curve.py``'s format, so its plot draws the peer beside agentsum's runs.

Tasks:

* ``samsum``: OpenNMT-py's pointer-generator recipe (``configs/en_rnn_pg.yaml``: 1-layer BRNN encoder
  (128 per direction), input-feeding LSTM decoder (256), Bahdanau attention, copy attention) on SAMSum
  ``train.jsonl`` with samsum-m1's data sizes and regularization: 500 article / 100 summary tokens,
  20k vocabulary, dropout 0.3, batch 16, Adam 1e-3. Decoding as samsum-m1: beam 5, 15 to 60 tokens,
  trigram blocking, UNK replacement.
* ``ectsum``: the same pointer-generator recipe on ECTSum earnings calls, trained on the first 1,522
  training calls (the calls ectsum-m6 trains on; the last 100 select its checkpoints) and scored on all
  247 validation calls: 20k vocabulary, dropout 0.3, 16 calls an update (two batches of 8: at batch 16
  its MLP attention over 2,000 tokens took 13.5 GB), Adam 1e-3, summaries cut at 120 tokens, calls cut
  at ``--src-len`` tokens (default 2,000: OpenNMT-py's tokens/s holds to 4k tokens and falls 5x at 8k
  in ``bench_long.py``, and 2,000 tokens hold 2.5x the words ectsum-m1 reads). Decoding as
  ectsum-m6: beam 5, 20 to 120 tokens, trigram blocking, UNK replacement.
* ``lcsts``: OpenNMT-py's Transformer + copy attention (``configs/zh_transformer_copy.yaml``: 2 + 2
  layers, d 256, 4 heads, ff 1024, characters, 150 / 25 tokens, batch 32, Adam 1e-3). Decoding: beam
  4, at most 25 characters, scored on characters.

The minute of a checkpoint is, by default, the CPU time the training process had received when the
checkpoint was written (``--clock cpu``, sampled every 5 s into ``WORK/cpu.jsonl`` by
``cpu_clock.py``'s reader): with one thread that is the minutes of one core it trained on, which stays
fair when other work shares the machine. ``--clock wall`` counts wall-clock minutes from the time
OpenNMT-py logged the start of its training loop (corpus reading and vocabulary building excluded, as
agentsum's clock excludes data preparation). Both are recorded (``minutes``, ``wall_minutes``); the
training stops when the chosen clock reaches ``--minutes``.

    python benchmarks/peer/peer_quality.py samsum --minutes 60 --out benchmarks/results/samsum
    python benchmarks/peer/peer_quality.py ectsum --minutes 90 --out benchmarks/results/ectsum/claim --docs 50
    python benchmarks/peer/peer_quality.py lcsts --minutes 25 --out benchmarks/results/lcsts --docs 0

``--docs N`` decodes the first N held-out documents for every checkpoint (the curve); the last
checkpoint is also decoded on all of them (``--docs 0``: every checkpoint on all; ``--no-last-on-all``:
not).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PEER_DIR = ROOT.parent / "shared" / "peers" / "opennmt"
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "studies"))  # cpu_clock, the studies' CPU clock

from cpu_clock import cpu_at, cpu_seconds  # noqa: E402

TASKS = {
    "samsum": {
        "lang": "en", "config": "en_rnn_pg.yaml", "preset": "samsum-m1",
        "train": DATA / "samsum" / "train.jsonl", "held_out": DATA / "samsum" / "valid.jsonl",
        "src_len": 500, "tgt_len": 100,
        "config_overrides": {"src_vocab_size": 20000, "tgt_vocab_size": 20000, "dropout": 0.3},
        "decode_args": ["-beam_size", "5", "-min_length", "15", "-max_length", "60", "-block_ngram_repeat", "3",
                        "-replace_unk"],
    },
    "ectsum": {
        "lang": "en", "config": "en_rnn_pg.yaml", "preset": "ectsum-m6",
        "train": DATA / "ectsum" / "train.jsonl", "train_limit": 1522, "held_out": DATA / "ectsum" / "valid.jsonl",
        "src_len": 2000, "tgt_len": 120,
        "config_overrides": {"src_vocab_size": 20000, "tgt_vocab_size": 20000, "dropout": 0.3,
                             "batch_size": 8, "accum_count": [2]},
        "decode_args": ["-beam_size", "5", "-min_length", "20", "-max_length", "120", "-block_ngram_repeat", "3",
                        "-replace_unk"],
    },
    "lcsts": {
        "lang": "zh", "config": "zh_transformer_copy.yaml", "preset": "lcsts-small",
        "train": DATA / "lcsts" / "train.jsonl", "held_out": DATA / "lcsts" / "test.jsonl",
        "src_len": 150, "tgt_len": 25,
        "config_overrides": {},
        "decode_args": ["-beam_size", "4", "-max_length", "25", "-replace_unk"],
    },
}

#: OpenNMT-py's log line format: "[2026-12-01 01:02:03,456 INFO] ..."
_LOG_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) ")


def sh(cmd: list[str], env: dict, log: Path) -> None:
    print("$ " + " ".join(map(str, cmd)), file=sys.stderr, flush=True)
    with log.open("w") as f:
        code = subprocess.call([str(c) for c in cmd], env=env, stdout=f, stderr=subprocess.STDOUT)
    if code:
        raise SystemExit(f"{cmd[0]} failed ({code}); see {log}:\n" + log.read_text()[-2000:])


def loop_start(log: Path) -> float | None:
    """Epoch seconds of OpenNMT-py's "Start training loop" log line, None before it is written."""
    for line in log.read_text(errors="replace").splitlines():
        if "Start training loop" in line:
            m = _LOG_TIME.match(line)
            return datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").timestamp() + int(m.group(2)) / 1000
    return None


def train(task: dict, args, env: dict) -> float:
    """Train for ``args.minutes`` of training loop; returns the loop's start time."""
    import yaml

    work = args.work
    config = yaml.safe_load((PEER_DIR / "configs" / task["config"]).read_text())
    config.update(task["config_overrides"])
    config.update(save_data=str(work / "data"), src_vocab=str(work / "vocab.shared"), save_model=str(work / "model"),
                  data={"train": {"path_src": str(work / "train.src"), "path_tgt": str(work / "train.tgt")}})
    config_path = work / "config.yaml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    sh([args.venv / "bin" / "onmt_build_vocab", "-config", config_path, "-n_sample", "-1"], env, work / "vocab.log")
    log = work / "train.log"
    cmd = [args.venv / "bin" / "onmt_train", "-config", config_path, "-train_steps", "10000000",
           "-save_checkpoint_steps", str(args.save_every), "-keep_checkpoint", "-1", "-report_every", "50"]
    print("$ " + " ".join(map(str, cmd)), file=sys.stderr, flush=True)
    with log.open("w") as f:
        proc = subprocess.Popen([str(c) for c in cmd], env=env, stdout=f, stderr=subprocess.STDOUT)
    start = None
    with (work / "cpu.jsonl").open("w") as clock:
        while proc.poll() is None:
            time.sleep(5)
            cpu = cpu_seconds(proc.pid)
            if cpu is not None:
                clock.write(json.dumps({"time": round(time.time(), 2), "cpu_s": cpu}) + "\n")
                clock.flush()
            start = start or loop_start(log)
            used = (cpu or 0.0) if args.clock == "cpu" else (time.time() - start if start else 0.0)
            if start and used > args.minutes * 60:
                proc.terminate()
                proc.wait()
                break
    if start is None:
        raise SystemExit(f"onmt_train stopped before its training loop; see {log}:\n" + log.read_text()[-2000:])
    print(f"trained {args.minutes} minutes; log: {log}", file=sys.stderr)
    return start


def score(task: dict, args, env: dict, start: float) -> list[dict]:
    from agentsum.config import load_config
    from agentsum.data.language import text_processor
    from agentsum.data.sources import load_examples
    from agentsum.evaluation.rouge import rouge_for
    from agentsum.evaluation.repetition import doubled_rate

    language = text_processor(load_config(task["preset"]).data)
    examples = load_examples(str(task["held_out"]))
    references = [language.join_sentences(language.summary_sentences(e.summary)) for e in examples]
    sh([args.venv / "bin" / "python", PEER_DIR / "prep.py", "--lang", task["lang"], "--in", task["held_out"],
        "--out-prefix", args.work / "held_out", "--src-len", str(task["src_len"]), "--tgt-len", str(task["tgt_len"])],
       env, args.work / "prep_held_out.log")
    if sum(1 for _ in (args.work / "held_out.src").open()) != len(examples):
        raise SystemExit("prep.py dropped held-out rows: the predictions would not line up with the references")
    checkpoints = sorted(args.work.glob("model_step_*.pt"), key=lambda p: int(re.search(r"(\d+)\.pt$", p.name)[1]))
    cpu_log = args.work / "cpu.jsonl"
    samples = [json.loads(line) for line in cpu_log.read_text().splitlines()] if cpu_log.exists() else []
    if args.clock == "cpu" and not samples:
        raise SystemExit(f"--clock cpu needs {cpu_log} (written while training); use --clock wall")
    # CPU spent before the training loop (corpus reading, model building) is not training time; when the
    # samples begin later than the loop, those few seconds of start-up count
    cpu_start = cpu_at(samples, start) if samples and samples[0]["time"] <= start else 0.0
    log_path = args.out / "curve.jsonl"
    done = [json.loads(line) for line in log_path.read_text().splitlines()] if log_path.exists() else []
    records = []
    for path in checkpoints:
        step = int(re.search(r"(\d+)\.pt$", path.name)[1])
        sizes = [args.docs or len(examples)]
        if path == checkpoints[-1] and args.docs and not args.no_last_on_all:
            sizes.append(len(examples))
        for n in sizes:
            # quality_curve.py's key: the path as given from the project root, then [:N] ([:None] for all)
            data_key = f"../{task['held_out'].relative_to(ROOT.parent).as_posix()}[:{n if n < len(examples) else None}]"
            key = dict(run=args.name, checkpoint=path.name, step=step, data=data_key)
            if any(all(r.get(k) == v for k, v in key.items()) for r in done):
                continue
            src = args.work / f"held_out_{n}.src"
            src.write_text("".join(line for _, line in zip(range(n), (args.work / "held_out.src").open())))
            pred = args.work / f"pred_{path.stem}_{n}.txt"
            began = time.perf_counter()
            sh([args.venv / "bin" / "onmt_translate", "-model", path, "-src", src, "-output", pred,
                "-batch_size", "30", *task["decode_args"]], env, args.work / f"translate_{path.stem}_{n}.log")
            predictions = [split_sentences(line, task["lang"]) for line in pred.read_text().splitlines()]
            scores = rouge_for(language, predictions, references[:n])
            saved = path.stat().st_mtime
            wall = (saved - start) / 60
            minutes = (cpu_at(samples, saved) - cpu_start) / 60 if args.clock == "cpu" else wall
            record = {**key, "beam": int(task["decode_args"][1]), "minutes": round(minutes, 2),
                      "clock": args.clock, "wall_minutes": round(wall, 2),
                      "rouge1": scores["rouge1"], "rouge2": scores["rouge2"], "rougeLsum": scores["rougeLsum"],
                      "doubled": round(doubled_rate(predictions), 2) if task["lang"] == "en" else None,
                      "decode_s": round(time.perf_counter() - began, 1)}
            records.append(record)
            with log_path.open("a") as f:
                f.write(json.dumps(record) + "\n")
            print(f"{args.name:<16} {path.name:<22} step {step:>6} {record['minutes']:6.1f} min  n {n:>4}  "
                  f"R-1 {record['rouge1']:.2f}  R-2 {record['rouge2']:.2f}  R-Lsum {record['rougeLsum']:.2f}", flush=True)
    return records


def split_sentences(line: str, lang: str) -> str:
    """One sentence per line (rougeLsum reads lines), as agentsum writes its summaries: OpenNMT-py writes
    each summary on one line of space-separated tokens."""
    tokens = line.split()
    if lang == "zh":
        return "".join(tokens)
    out, sentence = [], []
    for token in tokens:
        sentence.append(token)
        if token in {".", "!", "?"}:
            out.append(" ".join(sentence))
            sentence = []
    if sentence:
        out.append(" ".join(sentence))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("task", choices=sorted(TASKS))
    p.add_argument("--minutes", type=float, required=True, help="minutes of training (see --clock)")
    p.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                   help="cpu: CPU minutes of the training process (default); wall: wall-clock minutes of its loop")
    p.add_argument("--out", type=Path, required=True, help="folder of curve.jsonl (shared with quality_curve.py)")
    p.add_argument("--work", type=Path, default=None, help="checkpoints, logs, predictions (default runs/peer-TASK)")
    p.add_argument("--name", default=None, help="run name in curve.jsonl (default opennmt-TASK)")
    p.add_argument("--docs", type=int, default=200, help="held-out documents per checkpoint (0: all)")
    p.add_argument("--no-last-on-all", action="store_true", help="do not decode the last checkpoint on all documents")
    p.add_argument("--save-every", type=int, default=500, help="steps between checkpoints")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--src-len", type=int, default=None,
                   help="article tokens kept, training and decoding (default: the task's, e.g. 2000 for ectsum)")
    p.add_argument("--peer-root", type=Path, default=Path(os.environ.get("PEER_ROOT", "/tmp/peer_onmt")))
    p.add_argument("--score-only", action="store_true", help="decode the checkpoints already in --work")
    args = p.parse_args(argv)
    task = dict(TASKS[args.task])
    if args.src_len:
        task["src_len"] = args.src_len
    args.work = (args.work or ROOT / "runs" / f"peer-{args.task}").resolve()
    args.name = args.name or f"opennmt-{args.task}"
    args.venv = args.peer_root / "venv"
    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PEER_ROOT": str(args.peer_root), "OMP_NUM_THREADS": str(args.threads),
           "MKL_NUM_THREADS": str(args.threads), "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1",
           "PYTHONWARNINGS": "ignore::FutureWarning"}
    if not (args.venv / "bin" / "onmt_train").exists():
        sh(["bash", PEER_DIR / "setup.sh"], env, args.work / "setup.log")
    start_file = args.work / "loop_start.txt"
    if not args.score_only:
        sh([args.venv / "bin" / "python", PEER_DIR / "prep.py", "--lang", task["lang"], "--in", task["train"],
            "--out-prefix", args.work / "train", "--src-len", str(task["src_len"]), "--tgt-len", str(task["tgt_len"]),
            *(["--limit", str(task["train_limit"])] if task.get("train_limit") else [])],
           env, args.work / "prep_train.log")
        start_file.write_text(str(train(task, args, env)))
    score(task, args, env, float(start_file.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
