"""Command line: ``agentsum train | summarize | evaluate | lead3 | serve | plot | analyze | humaneval``."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from agentsum.config import ConfigError, load_config, preset_names

CHECKPOINT_HELP = ("a .pt checkpoint written by `agentsum train` or `agentsum export` (default: the English "
                   "dialogue model shipped with agentsum, see docs/model_card.md)")
EPILOG_DATA = ("DATA is a JSONL file (one {article, summary} object per line), a CNN/DailyMail .story file or a "
               "directory of them, an LCSTS PART file or TSV, or hf:cnn_dailymail:3.0.0:test (needs "
               "`pip install agentsum[hf]` and a network).")


def _add_data_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", required=True, metavar="DATA")
    p.add_argument("--start", type=int, help="first row (0-based)")
    p.add_argument("--end", type=int, help="row after the last")
    p.add_argument("--min-human-label", type=int,
                   help="LCSTS PART II/III: keep pairs scored at least this (3 = the standard test set)")
    p.add_argument("--skip-bad", action="store_true",
                   help="skip malformed lines (counted and reported) instead of stopping at the first")


def _load_examples(args, d):
    from agentsum.data.corpus import ReadStats, load_examples

    label = args.min_human_label if args.min_human_label is not None else d.min_human_label
    stats = ReadStats()
    examples = load_examples(args.data, start=args.start, end=args.end, article_field=d.article_field,
                             summary_field=d.summary_field, id_field=d.id_field,
                             skip_bad=d.skip_bad or args.skip_bad, min_human_label=label, stats=stats)
    report_skipped(args.data, stats)
    return examples


def report_skipped(source: str, stats) -> None:
    if stats.skipped:
        print(f"{source}: skipped {stats.skipped} bad line(s); first: {'; '.join(stats.errors[:3])}", file=sys.stderr)


def _add_search_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("search (defaults: the checkpoint's config)")
    g.add_argument("--beam", type=int, help="beam width; 1 = greedy (paper: 5)")
    g.add_argument("--min-length", type=int, help="no end-of-summary before this many tokens")
    g.add_argument("--max-length", type=int, help="at most this many tokens (paper: 110)")
    g.add_argument("--no-block-trigrams", action="store_true", help="allow a trigram to be generated twice")
    g.add_argument("--no-unk-replace", action="store_true", help="keep <unk> instead of copying the most attended word")
    g.add_argument("--batch-size", type=int, default=16, help="documents decoded together (default 16)")


def search_overrides(args) -> dict:
    """The SearchConfig fields set by the search options of :func:`_add_search_options`."""
    changes = {}
    if args.beam is not None:
        changes["beam_size"] = args.beam
    if args.min_length is not None:
        changes["min_length"] = args.min_length
    if args.max_length is not None:
        changes["max_length"] = args.max_length
    if args.no_block_trigrams:
        changes["block_trigrams"] = False
    if args.no_unk_replace:
        changes["unk_replace"] = False
    return changes


def _search_config(args, config):
    return dataclasses.replace(config.search, **search_overrides(args))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentsum", description="Deep Communicating Agents summarization toolkit.")
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train a model from a YAML config or preset",
                       description="Train a summarizer. Checkpoints go to RUN_DIR/checkpoints/{best,last}.pt.",
                       epilog=f"Presets: {', '.join(preset_names())}.")
    p.add_argument("--config", required=True, help="preset name (e.g. m5, demo) or path to a YAML file")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override one config key, e.g. --set train.max_minutes=10 (repeatable)")
    p.add_argument("--run-dir", help="output directory (overrides train.run_dir)")
    p.add_argument("--resume", metavar="CKPT", help="continue a run from its checkpoint (model, optimizer, step, RNG)")
    p.add_argument("--init-from", metavar="CKPT", help="start from these weights and vocabulary, fresh optimizer")

    p = sub.add_parser("summarize", help="summarize a text file or stdin",
                       description="Summarize one article (a text file, or - for stdin), or every row of a "
                                   ".jsonl file (one summary per output line).")
    p.add_argument("--checkpoint", help=CHECKPOINT_HELP)
    p.add_argument("input", nargs="?", default="-", help="FILE or - (default: stdin)")
    p.add_argument("--field", default="article", help="article field for .jsonl input (default: article)")
    p.add_argument("--raw", action="store_true",
                   help="print the model's tokens (lower-cased, space-separated, as ROUGE scores them) instead of "
                        "text cased from the article and detokenized")
    _add_search_options(p)

    p = sub.add_parser("evaluate", help="summarize a corpus and score it with ROUGE", epilog=EPILOG_DATA,
                       description="Decode every document of DATA and report ROUGE-1/2/L F1 (rouge-score, stemming, "
                                   "rougeLsum), writing predictions.txt, predictions.jsonl and scores.json to --out.")
    p.add_argument("--checkpoint", help=CHECKPOINT_HELP)
    _add_data_options(p)
    p.add_argument("--out", help="output directory (default: next to the checkpoint, eval-<data name>)")
    _add_search_options(p)

    p = sub.add_parser("lead3", help="score the Lead-3 baseline with ROUGE", epilog=EPILOG_DATA,
                       description="The first three sentences of each article (or its first N characters, the "
                                   "usual Chinese lead baseline) as its summary, tokenized and scored exactly like "
                                   "model outputs.")
    _add_data_options(p)
    p.add_argument("--config", default=None,
                   help="preset or YAML whose data section gives language, fields and casing (default: English)")
    p.add_argument("--sentences", type=int, default=3, help="lead sentences (default 3)")
    p.add_argument("--chars", type=int, help="instead, the first N characters (e.g. for LCSTS)")
    p.add_argument("--out", help="output directory for predictions and scores.json")
    p = sub.add_parser("export", help="write an inference-only copy of a checkpoint (16-bit weights)",
                       description="Copy a checkpoint's weights (in 16 bits), configuration and vocabulary, without "
                                   "the optimizer and RNG state: a file for summarize/serve about a sixth of the "
                                   "training checkpoint's size. The shipped model was written this way.")
    p.add_argument("--checkpoint", required=True, help="a .pt checkpoint written by `agentsum train`")
    p.add_argument("--out", required=True, help="the file to write")
    p.add_argument("--dtype", choices=("float16", "bfloat16"), default="float16",
                   help="weight precision (default float16)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="search.KEY=VALUE",
                   help="change a decoding default, e.g. --set search.min_length=15 (repeatable)")
    from agentsum.evaluation import analyze, humaneval, plot
    from agentsum.serve import options as serve_options

    for module in (serve_options, plot, analyze, humaneval):
        module.add_parser(sub).set_defaults(func=module.run)
    return parser


def cmd_train(args) -> int:
    from agentsum.training.trainer import train

    overrides = list(args.overrides)
    if args.run_dir:
        overrides.append(f"train.run_dir={args.run_dir}")
    if args.threads:
        overrides.append(f"train.threads={args.threads}")
    config = load_config(args.config, overrides)
    best = train(config, resume=args.resume, init_from=args.init_from)
    print(best)
    return 0


def _progress(total: int, label: str):
    started, done = time.perf_counter(), [0]

    live = sys.stderr.isatty()

    def update(n: int) -> None:
        done[0] += n
        rate = done[0] / max(time.perf_counter() - started, 1e-9)
        line = f"{label}: {done[0]}/{total} documents, {rate:.2f} docs/s"
        if live:  # one line, rewritten in place
            print("\r" + line, end="\n" if done[0] >= total else "", file=sys.stderr, flush=True)
        else:
            print(line, file=sys.stderr, flush=True)

    return update


def cmd_summarize(args) -> int:
    from agentsum.data.corpus import Example, load_examples, read_text_file
    from agentsum.summarizer import Summarizer

    summarizer = Summarizer(args.checkpoint)
    if args.input.endswith(".jsonl"):
        examples = load_examples(args.input, article_field=args.field, require_summary=False)
    else:
        examples = [Example(id=args.input, article=read_text_file(args.input), summary="", origin=args.input)]
    search_config = _search_config(args, summarizer.config)
    started = time.perf_counter()
    texts, summaries = summarizer.summarize_examples(
        examples, search_config, raw=args.raw, batch_size=args.batch_size,
        progress=_progress(len(examples), "summarizing") if len(examples) > args.batch_size else None)
    seconds = time.perf_counter() - started
    for text in texts:
        print(text)
    n, words = len(examples), sum(len(t) for t in summaries)
    print(f"summarized {n} document(s) in {seconds:.2f}s ({n / max(seconds, 1e-9):.2f} documents/s, "
          f"beam {search_config.beam_size}, {words / max(n, 1):.1f} tokens per summary; model loading "
          f"excluded)", file=sys.stderr)
    return 0


def cmd_evaluate(args) -> int:
    from agentsum.training.checkpoint import default_checkpoint, load_model
    from agentsum.data.dataset import prepare_all
    from agentsum.evaluation.evaluate import evaluate_model, write_results
    from agentsum.data.language import text_processor
    from agentsum.evaluation.rouge import format_rouge

    checkpoint = Path(args.checkpoint) if args.checkpoint else default_checkpoint()
    model, vocab, config, _ = load_model(checkpoint)
    docs = prepare_all(_load_examples(args, config.data), config.data)
    search_config = _search_config(args, config)
    predictions, scores = evaluate_model(model, vocab, docs, search_config, text_processor(config.data),
                                         args.batch_size, _progress(len(docs), "decoding"))
    default_out = (checkpoint.parent.parent if args.checkpoint else Path("runs/shipped")) / f"eval-{Path(args.data).stem}"
    out = Path(args.out) if args.out else default_out
    write_results(out, predictions, [x.reference for x in docs], [x.id for x in docs], scores)
    print(format_rouge(scores))
    print(f"{scores['documents_per_s']:.2f} documents/s (beam {search_config.beam_size}); results in {out}")
    return 0


def cmd_lead3(args) -> int:
    from agentsum.config import Config
    from agentsum.evaluation.evaluate import write_results
    from agentsum.data.language import text_processor
    from agentsum.evaluation.rouge import format_rouge

    d = load_config(args.config).data if args.config else Config().data
    language = text_processor(d)
    examples = _load_examples(args, d)
    predictions = [language.lead(e.article, args.sentences, args.chars) for e in examples]
    references = [language.join_sentences(language.summary_sentences(e.summary)) for e in examples]
    scores = language.rouge(predictions, references)
    if args.out:
        write_results(args.out, predictions, references, [e.id for e in examples], scores)
    name = f"Lead-{args.chars} characters" if args.chars else f"Lead-{args.sentences}"
    print(f"{name}: " + format_rouge(scores))
    return 0


def cmd_export(args) -> int:
    import torch

    from agentsum.training.checkpoint import export_inference

    export_inference(args.checkpoint, args.out, getattr(torch, args.dtype), args.overrides)
    size = Path(args.out).stat().st_size
    print(f"wrote {args.out} ({size / 2**20:.1f} MiB, {args.dtype} weights, no optimizer state)")
    return 0


COMMANDS = {"train": cmd_train, "summarize": cmd_summarize, "evaluate": cmd_evaluate, "lead3": cmd_lead3,
            "export": cmd_export}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from agentsum.runtime import tune_allocator

    tune_allocator()  # fewer page faults on large tensors (see agentsum.runtime)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    from agentsum.training.checkpoint import CheckpointError
    from agentsum.data.corpus import DataError

    try:
        handler = COMMANDS.get(args.command) or args.func
        return handler(args)
    except (ConfigError, DataError, CheckpointError) as e:
        print(f"agentsum {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"agentsum {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
