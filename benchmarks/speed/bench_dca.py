"""Training and decoding speed of DCA presets on real CNN/DailyMail documents.

Each preset is measured in its own subprocess (so peak memory is its own), in the same run, and
every figure is also reported as a ratio to the first preset, the baseline: these machines are
noisy, ratios measured side by side are what to compare.

    python benchmarks/speed/bench_dca.py                         # m1 (1 agent) vs m5 (3 agents)
    python benchmarks/speed/bench_dca.py --presets m1 m4 m5 m6 --steps 10 --decode-docs 32
    python benchmarks/speed/bench_dca.py --set data.vocab_size=20000 --threads 2
    python benchmarks/speed/bench_dca.py --presets demo "demo:train.objective=mixed+sem" --checkpoint runs/demo/checkpoints/best.pt

A preset may carry overrides after a colon (``m6:data.agents=5,model.hidden_size=256``).

Training tokens/s counts real (unpadded) source and target tokens per second of
forward + backward + Adam step; tokens per CPU second counts the process's CPU clock instead, which
other work on the machine disturbs less (with --threads 1). --rounds N measures the presets N times,
in turn (A B A B ...), and reports each figure's median: a load that comes and goes then falls on
every preset alike. Decoding documents/s is measured with untrained weights unless
--checkpoint is given; an untrained model never emits </s>, so every summary runs to max_length
(110): a worst case for decoding speed.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "cnndm" / "train_stories.jsonl"


def measure(preset: str, args) -> dict:
    import torch

    from agentsum.config import load_config
    from agentsum.data.dataset import iterate_global_batches, prepare_all, sorted_batches, to_batch
    from agentsum.data.sources import load_examples
    from agentsum.decoding.search import SearchConfig, search
    from agentsum.models import build_model
    from agentsum.training.objectives import build_objective
    from agentsum.training.trainer import build_vocab

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    name, _, extra = preset.partition(":")
    config = load_config(name, args.overrides + [x for x in extra.split(",") if x])
    examples = load_examples(str(args.data), end=args.docs)
    docs = prepare_all(examples, config.data)
    vocab = build_vocab(docs, config.data.vocab_size)
    model = build_model(config.model, len(vocab))
    if args.checkpoint:
        from agentsum.checkpoint import load_model

        model, vocab, _, _ = load_model(args.checkpoint)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.train.lr)
    objective = build_objective(config.train, vocab)
    batches = iterate_global_batches([d.num_tokens for d in docs], config.train.batch_size, seed=0)

    model.train()
    tokens = 0
    seconds = cpu_seconds = 0.0
    for i in range(args.warmup + args.steps):
        batch = to_batch([docs[i] for i in next(batches)], vocab)
        start, cpu_start = time.perf_counter(), time.process_time()
        loss, _ = objective(model, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if i >= args.warmup:
            seconds += time.perf_counter() - start
            cpu_seconds += time.process_time() - cpu_start
            tokens += batch.num_source_tokens() + batch.num_target_tokens()

    model.eval()
    decode = {}
    test_docs = docs[: args.decode_docs]
    for name, beam in (("greedy", 1), ("beam5", 5)):
        cfg = SearchConfig(beam_size=beam, max_length=110, block_trigrams=True)
        start = time.perf_counter()
        with torch.no_grad():
            for _, batch in sorted_batches(test_docs, vocab, args.decode_batch, with_targets=False):
                search(model, batch, cfg)
        decode[name] = len(test_docs) / (time.perf_counter() - start)

    return {
        "preset": preset,
        "agents": config.data.agents,
        "vocab": len(vocab),
        "parameters": sum(p.numel() for p in model.parameters()),
        "train_tokens_per_s": tokens / seconds,
        "train_tokens_per_cpu_s": tokens / cpu_seconds,
        "train_s_per_step": seconds / args.steps,
        "decode_greedy_docs_per_s": decode["greedy"],
        "decode_beam5_docs_per_s": decode["beam5"],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def median_run(rounds: list[dict]) -> dict:
    """One preset's figures over its rounds: the median of each number (the lower middle one for an
    even count), the rest as measured in the first round."""
    out = dict(rounds[0])
    for key, value in rounds[0].items():
        if isinstance(value, float):
            out[key] = sorted(r[key] for r in rounds)[(len(rounds) - 1) // 2]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--presets", nargs="+", default=["m1", "m5"], help="the first one is the baseline")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--docs", type=int, default=400, help="documents loaded (vocabulary and batches)")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--decode-docs", type=int, default=32)
    p.add_argument("--decode-batch", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=1, help="measure the presets this many times, in turn; medians")
    p.add_argument("--checkpoint", help="decode (and train) with these weights instead of random ones")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE")
    p.add_argument("--out", type=Path, help="append the JSON results here")
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args()

    if args.one:
        print(json.dumps(measure(args.one, args)))
        return

    runs: dict[str, list[dict]] = {preset: [] for preset in args.presets}
    for round_ in range(args.rounds):
        for preset in args.presets:
            cmd = [sys.executable, __file__, "--one", preset, "--data", str(args.data), "--docs", str(args.docs),
                   "--steps", str(args.steps), "--warmup", str(args.warmup), "--decode-docs", str(args.decode_docs),
                   "--decode-batch", str(args.decode_batch), "--threads", str(args.threads)]
            cmd += ["--checkpoint", args.checkpoint] if args.checkpoint else []
            cmd += [arg for o in args.overrides for arg in ("--set", o)]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            runs[preset].append(json.loads(out.strip().splitlines()[-1]))
            print(f"measured {preset} (round {round_ + 1} of {args.rounds})", file=sys.stderr)
    results = [median_run(runs[preset]) for preset in args.presets]
    base = results[0]
    keys = ["train_tokens_per_s", "train_tokens_per_cpu_s", "train_s_per_step", "decode_greedy_docs_per_s", "decode_beam5_docs_per_s", "peak_rss_mb"]
    width = max(8, *(len(r["preset"]) for r in results))
    print(f"{'preset':{width}} {'agents':>6} {'params':>8} " + " ".join(f"{k:>26}" for k in keys))
    for r in results:
        cells = [f"{r[k]:>12.2f} ({r[k] / base[k]:>5.2f}x)".rjust(26) for k in keys]
        print(f"{r['preset']:{width}} {r['agents']:>6} {r['parameters'] / 1e6:>7.2f}M " + " ".join(cells))
    print(f"ratios are against {base['preset']}, measured in the same run; {args.threads} threads; "
          f"median of {args.rounds} round(s), the presets in turn")
    if args.out:
        with args.out.open("a") as f:
            for r in results:
                f.write(json.dumps({**r, "baseline": base["preset"], "rounds": args.rounds, "time": time.time()}) + "\n")


if __name__ == "__main__":
    main()
