"""Command line: ``agentsum train | prepare | summarize | evaluate | lead3 | extract | export | average | models |
serve | plot | analyze | humaneval``.

This module builds the parser and runs the commands; the options several commands share, and what
they turn into, are in :mod:`agentsum.options`. ``serve``, ``plot``, ``analyze`` and ``humaneval``
register their own parsers (``add_parser``) and run functions (``run``).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
import time
from pathlib import Path

from agentsum.config import ConfigError, load_config, preset_names
from agentsum.options import (EPILOG_DATA, add_data_options, add_device_option, add_job_options, add_model_options,
                              add_quantize_option, add_search_options, chosen_checkpoint, data_settings, data_source,
                              progress, search_overrides, warn)

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
    p.add_argument("--resume", metavar="CKPT|auto",
                   help="continue a run from its checkpoint (model, optimizer, step, RNG); auto: from "
                        "RUN_DIR/checkpoints/last.pt where it exists, else start fresh (what a torchrun restart "
                        "or a requeued cluster job needs; also train.resume: auto)")
    p.add_argument("--init-from", metavar="CKPT", help="start from these weights and vocabulary, fresh optimizer: "
                   "a checkpoint file, or a shipped model's name (calls, dialogue)")

    p = sub.add_parser("prepare", help="tokenize a config's corpora once into memory-mapped stores",
                       description="Read the configuration's data.train and data.valid corpora once, in worker "
                                   "processes, into corpus stores (STORE_DIR/train, STORE_DIR/valid) that `agentsum "
                                   "train` memory-maps instead of preparing the text at every start. train prepares "
                                   "a missing store itself; prepare does it ahead, e.g. once for several runs or "
                                   "before launching torchrun. A store is reused only for the corpus and data "
                                   "settings it was prepared from (data.vocab_size may change freely).",
                       epilog=f"Presets: {', '.join(preset_names())}.")
    p.add_argument("--config", required=True, help="preset name or path to a YAML file")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override one config key, e.g. --set data.max_article_tokens=400 (repeatable)")
    p.add_argument("--store-dir", help="where the stores go (overrides data.store_dir; default RUN_DIR/data)")
    p.add_argument("--run-dir", help="overrides train.run_dir (the default store directory is RUN_DIR/data)")
    p.add_argument("--split", choices=("train", "valid", "all"), default="all",
                   help="which corpora to prepare (default: all that the configuration names)")
    p.add_argument("--workers", type=int, help="worker processes (default: data.prepare_workers, else the cores)")
    p.add_argument("--force", action="store_true", help="prepare again even where a matching store exists")

    p = sub.add_parser("summarize", help="summarize a text file or stdin",
                       description="Summarize one article (a text file, or - for stdin), or every row of a "
                                   ".jsonl file (one summary per output line).")
    add_model_options(p)
    p.add_argument("input", nargs="?", default="-", help="FILE or - (default: stdin)")
    p.add_argument("--field", default="article", help="article field for .jsonl input (default: article)")
    p.add_argument("--raw", action="store_true",
                   help="print the model's tokens (lower-cased, space-separated, as ROUGE scores them) instead of "
                        "text cased from the article and detokenized")
    p.add_argument("--provenance", action="store_true",
                   help="print one JSON object per document instead (JSON Lines): the summary, and for every word "
                        "whether it was copied from the source or generated (p_gen, copy mass), the source token it "
                        "drew most from and its agent, and for a number where the source states it; for every sentence "
                        "the source sentences it rests on (docs/provenance.md; the service's record). Needs a model "
                        "with a copy mechanism")
    p.add_argument("--out", metavar="DIR",
                   help="write the summaries to DIR/summaries.txt (DIR/provenance.jsonl with --provenance) as a job in "
                        "parts: resumable (--resume), shardable (--shard, torchrun); without it they go to stdout")
    p.add_argument("--skip-bad", action="store_true",
                   help="skip malformed .jsonl rows (counted and reported) instead of stopping at the first")
    add_device_option(p)
    add_quantize_option(p)
    add_search_options(p)
    add_job_options(p)

    p = sub.add_parser("evaluate", help="summarize a corpus and score it with ROUGE", epilog=EPILOG_DATA,
                       description="Decode every document of DATA and report ROUGE-1/2/L F1 (rouge-score, stemming, "
                                   "rougeLsum) and, for English, the share of summaries that repeat a content word "
                                   "within three tokens or name one person twice (X and X), and the numbers figures: "
                                   "the share of the summaries' numbers that the source article holds (supported) and "
                                   "of the reference's numbers found in the source that the summary states (recall), "
                                   "one-digit numbers apart, and the claim figures: period agreement (the summary's "
                                   "periods against the quarter the source reports), numbers in context (one source "
                                   "sentence states the number beside the metric the summary gives it), numbers "
                                   "stated so (its strict test: that metric at the number, its own value, the period, "
                                   "basis and kind), direction "
                                   "agreement and malformed figures, and for dialogues the attribution figure "
                                   "(whether each sentence's subject is the speaker whose side of the dialogue "
                                   "holds its words), and with --grammar the share of sentences link grammar cannot "
                                   "parse whole (docs/analysis.md). Writes predictions.txt, "
                                   "predictions.jsonl (with each document's numbers and claim figures) and scores.json "
                                   "to --out.")
    add_model_options(p)
    add_data_options(p)
    p.add_argument("--out", help="output directory (default: next to the checkpoint, eval-<data name>)")
    p.add_argument("--grammar", action="store_true",
                   help="English: parse every summary sentence with link grammar (Debian's link-grammar package) "
                        "and report the share it cannot parse whole (grammar_unparsed) and of summaries with such a "
                        "sentence (grammar_flagged); it sees broken syntax, not broken sense")
    add_device_option(p)
    add_quantize_option(p)
    add_search_options(p)
    add_job_options(p)

    p = sub.add_parser("lead3", help="score the Lead-3 baseline with ROUGE", epilog=EPILOG_DATA,
                       description="The first K sentences of each article (--sentences, default 3; or its first N "
                                   "characters, the usual Chinese lead baseline) as its summary, tokenized and scored exactly like "
                                   "model outputs (ROUGE, and for English the doubled-word rates and the numbers "
                                   "figures of `agentsum evaluate`).")
    _add_extractive_options(p, "lead sentences (default 3)")

    p = sub.add_parser("extract", help="score an extractive baseline: Lead-K, LexRank or TextRank",
                       epilog=EPILOG_DATA,
                       description="Extract K sentences of each article as its summary, by --method: lead (the "
                                   "first K; `agentsum lead3` is this), lexrank or textrank (the K most central "
                                   "sentences by the sumy library's LexRank / TextRank, in document order). The "
                                   "article is split and tokenized by the project's own sentence splitter and "
                                   "tokenizer (no NLTK data needed) and the summaries are scored exactly like model "
                                   "outputs (ROUGE, and for English the doubled-word rates and the numbers figures "
                                   "of `agentsum evaluate`).")
    p.add_argument("--method", choices=("lead", "lexrank", "textrank"), default="lead",
                   help="how sentences are chosen (default lead)")
    _add_extractive_options(p, "sentences per summary, K (default 3)")
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
    p.add_argument("--quantize", choices=("none", "int8"), default="none",
                   help="int8: the file asks to be run in dynamic int8 on the CPU (its LSTM and linear layers are "
                        "quantized as it loads, from the 16-bit weights it holds; on a GPU it runs in float)")
    p = sub.add_parser("fit-lm", help="fit a model's summary language model (for --lm-weight) on training data",
                       description="Fit an n-gram (default 4) Kneser-Ney language model of a corpus's reference "
                                   "summaries, read as the checkpoint's data settings prepare them (lower-cased "
                                   "tokens, a dialogue's participants as one <name> class), and write it beside the "
                                   "checkpoint as NAME.lm.json.gz, where --lm-weight looks for it (about 25 s for "
                                   "SAMSum's 14k summaries). A shipped model's LM is not replaced: give --out.")
    p.add_argument("--checkpoint", required=True, help="the model (a .pt file, or a shipped model's name) whose data "
                                                       "settings read the corpus; the LM goes beside it unless --out "
                                                       "is given")
    add_data_options(p)
    p.add_argument("--order", type=int, default=4, help="n-gram order (default 4)")
    p.add_argument("--out", help="the file to write (default: NAME.lm.json.gz beside the checkpoint)")
    p = sub.add_parser("nll", help="validation NLL of checkpoints on a corpus (to choose a checkpoint or an average)",
                       description="Teacher-forced negative log-likelihood per reference-summary token (eq 17) of each "
                                   "checkpoint on DATA, computed as training's validation computes valid_nll, with "
                                   "each checkpoint's own data settings and coverage: for choosing among a run's "
                                   "checkpoints, or between them and their mean (agentsum average), on data held "
                                   "apart from what you report.",
                       epilog=EPILOG_DATA)
    p.add_argument("checkpoints", nargs="+", metavar="CKPT", help=".pt checkpoints (or shipped models' names)")
    add_data_options(p)
    p.add_argument("--batch-size", type=int, default=16, help="documents per batch (default 16; any size gives the "
                                                              "same value)")
    add_device_option(p)
    sub.add_parser("models", help="list the models shipped with agentsum (--model NAME)",
                   description="List the models shipped with agentsum, by the name --model and Summarizer(NAME) "
                               "take: whether this installation holds the file, its size, what the model is for "
                               "and, when it is here, what its checkpoint records (training step, the validation "
                               "score it was selected by, agents and tokens read).")
    p = sub.add_parser("average", help="average the weights of several checkpoints of one run",
                       description="Write the mean of the checkpoints' weights (as OpenNMT-py's onmt_average_models "
                                   "and fairseq's average_checkpoints.py do), with the first one's configuration and "
                                   "vocabulary and no optimizer state: for summarize, evaluate, serve, export or "
                                   "--init-from. The checkpoints must hold the same model and vocabulary, e.g. "
                                   "RUN_DIR/checkpoints/step-*.pt of one run.")
    p.add_argument("checkpoints", nargs="+", metavar="CKPT", help="two or more .pt checkpoints")
    p.add_argument("--out", required=True, help="the file to write")
    from agentsum.evaluation import analyze, humaneval, plot
    from agentsum.serve import options as serve_options

    for module in (serve_options, plot, analyze, humaneval):
        module.add_parser(sub).set_defaults(func=module.run)
    return parser


def _add_extractive_options(p, sentences_help: str) -> None:
    """The options of lead3 and extract."""
    add_data_options(p)
    p.add_argument("--config", default=None,
                   help="preset or YAML whose data section gives language, fields and casing (default: English)")
    p.add_argument("--sentences", type=int, default=3, metavar="K", help=sentences_help)
    p.add_argument("--chars", type=int, metavar="N", help="instead, the first N characters (e.g. for LCSTS; lead only)")
    p.add_argument("--out", help="output directory for predictions.txt, predictions.jsonl and scores.json")


def _run_config(args, **keys):
    """``--config`` with ``--set`` overrides, then ``--run-dir`` and the given ``section.key`` values
    (those that are set)."""
    overrides = list(args.overrides)
    keys = {"train.run_dir": args.run_dir, **keys}
    overrides += [f"{key}={value}" for key, value in keys.items() if value]
    return load_config(args.config, overrides)


def cmd_train(args) -> int:
    from agentsum.training.trainer import train

    config = _run_config(args, **{"train.threads": args.threads})
    best = train(config, resume=args.resume or config.train.resume, init_from=args.init_from)
    print(best)
    return 0


def cmd_prepare(args) -> int:
    from agentsum.data.store import open_or_prepare, store_root
    from agentsum.training.monitor import log

    config = _run_config(args, **{"data.store_dir": args.store_dir})
    d = config.data
    root = store_root(d, config.train.run_dir)
    splits = [s for s in ("train", "valid") if args.split in (s, "all") and getattr(d, s) is not None]
    if not splits:
        raise ConfigError(f"{args.config}: no data.{args.split if args.split != 'all' else 'train or data.valid'} "
                          f"corpus to prepare")
    for split in splits:
        store = open_or_prepare(getattr(d, split), d, root / split, workers=args.workers or d.prepare_workers,
                                force=args.force, warn=log)
        m = store.manifest
        print(f"{split}: {store.path} ({m['documents']:,} documents, {m['types']:,} token types, "
              f"{sum(f['bytes'] for f in m['files'].values()) / 2**20:,.1f} MiB)")
    return 0


def _search_config(args, config, vocab=None):
    """The checkpoint's search settings with the command line's; a claim constraint that ``vocab``
    cannot honour is a ConfigError naming the option."""
    from agentsum.decoding.constraints import ConstraintError, check_vocabulary

    try:
        search = dataclasses.replace(config.search, **search_overrides(args))
    except ValueError as e:
        raise ConfigError(f"search settings: {e}") from None
    if vocab is not None:
        try:
            check_vocabulary(vocab, figure_grammar=search.figure_grammar, source_periods=search.source_periods,
                             numbers_in_context=search.numbers_in_context)
        except ConstraintError as e:
            raise ConfigError(f"--{e.option.replace('_', '-')}: {e}") from None
    return search


def loaded_summarizer(args):
    """The Summarizer of --checkpoint on --device (--quantize where given), with the device's
    settings (TF32 on CUDA)."""
    from agentsum.devices import choose_device, use_tf32
    from agentsum.summarizer import Summarizer

    quantize = getattr(args, "quantize", None)
    device = choose_device("cpu" if quantize == "int8" and args.device == "auto" else args.device, setting="--device")
    use_tf32(device)
    try:
        return Summarizer(chosen_checkpoint(args), device=device, quantize=quantize)
    except ValueError as e:
        if quantize is None or "quantize" not in str(e):
            raise
        raise ConfigError(f"--quantize {quantize}: {str(e).split(': ', 1)[-1]}") from None


def _shard(args):
    """--shard K/N as a Shard (checked before the model loads), and whether the command runs as a
    job in parts (--out given); --shard, --resume or torchrun without --out is refused."""
    import os

    from agentsum.jobs import Shard

    shard = Shard.parse(args.shard) if args.shard else None
    if args.out is None:
        wanted = [o for o, given in (("--shard", args.shard), ("--resume", args.resume),
                                     ("torchrun", int(os.environ.get("WORLD_SIZE", "1")) > 1)) if given]
        if wanted:
            raise ConfigError(f"{wanted[0]} needs --out DIR: the shards write their parts there and the last one "
                              "merges them into one output")
    return shard


def _ranks_threads(args) -> None:
    """Under torchrun, each rank takes its share of the machine's cores (unless --threads says)."""
    import os

    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    if local_world > 1 and not args.threads:
        import torch

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // local_world))


def _job(args, command: str, summarizer, search_config, spec: str, shard, **settings):
    """The :class:`agentsum.jobs.Job` of this process: its shard of --shard under torchrun, and the
    identity a resume must match (the input's bytes, the model, the settings)."""
    from agentsum.data.store import source_digest
    from agentsum.evaluation.evaluate import search_fields
    from agentsum.jobs import Job, launched_shard, restarted

    mine, rank = launched_shard(shard)
    model = summarizer.checkpoint.resolve()
    identity = {"command": command, "input": spec if spec.startswith("hf:") else str(Path(spec).resolve()),
                "digest": source_digest(spec), "model": str(model), "model_bytes": model.stat().st_size,
                "quantize": summarizer.quantize, "search": search_fields(search_config),
                "batch_size": args.batch_size, **settings}
    return Job(args.out, identity, mine, resume=args.resume or restarted(), part_rows=args.part_rows,
               input_name=spec), rank


def _run_job(job, rank: int, examples, decode, estimate, label: str):
    """Begin ``job`` (None when it had finished before: said on stderr), decode this shard's parts,
    release the lock; (parts decoded here, rows read), or None for a finished job."""
    from agentsum.jobs import JobProgress, run_job

    done = job.finished() if job.resume else None
    if done is not None:
        print(f"nothing to do: {job.out} holds this job, finished {done['finished']} ({done['rows']:,} rows of "
              f"{job.input_name}; {', '.join(done['outputs'])})", file=sys.stderr)
        return None
    written = job.begin()
    try:
        shown = JobProgress(job, label, estimate, enabled=rank == 0)
        result = run_job(job, examples, decode, written, shown)
        shown.update(final=True)
    except BaseException:
        job.release()
        raise
    job.release()
    if result[1] == 0:
        job.abandon()
    return result


def cmd_summarize(args) -> int:
    from agentsum.data.corpus import Example, read_text_file
    from agentsum.data.records import DataError, ReadStats
    from agentsum.data.sources import iter_examples, no_examples

    if args.provenance and args.raw:
        raise ConfigError("--provenance and --raw: choose one (--provenance gives each word's token and shown form)")
    shard = _shard(args)
    _ranks_threads(args)
    summarizer = loaded_summarizer(args)
    stats = ReadStats()
    if args.input.endswith(".jsonl"):
        # read and decoded 1,000 rows at a time (a part), each printed when done: memory holds one part
        from agentsum.data.store import estimate_rows

        examples = iter_examples(args.input, article_field=args.field, require_summary=False,
                                 skip_bad=args.skip_bad, stats=stats)
        total = estimate_rows(args.input) or 0
    else:
        examples = iter([Example(id=args.input, article=read_text_file(args.input), summary="", origin=args.input)])
        total = 1
    search_config = _search_config(args, summarizer.config, summarizer.vocab)

    def decode(chunk, step) -> list[dict]:
        """One record per example: the line printed (text, or its provenance as JSON) and its tokens."""
        for example in chunk:  # a text far longer than the model reads: said on stderr, summarized anyway
            notice = summarizer.length_warning(example.article, "<stdin>" if example.origin == "-" else example.origin)
            if notice is not None:
                warn(f"agentsum summarize: warning: {notice}")
        if args.provenance:
            results = _explained(summarizer, chunk, search_config, args.batch_size, step)
            return [{"id": e.id, "line": json.dumps({"id": e.id, **r}, ensure_ascii=False), "tokens": len(r["words"])}
                    for e, r in zip(chunk, results)]
        texts, summaries = summarizer.summarize_examples(chunk, search_config, raw=args.raw,
                                                         batch_size=args.batch_size, progress=step)
        return [{"id": e.id, "line": t, "tokens": len(w)} for e, t, w in zip(chunk, texts, summaries)]

    started = time.perf_counter()
    if args.out is not None:
        return _summarize_job(args, summarizer, search_config, examples, total, stats, shard, decode)
    shown = progress(total, "summarizing") if total > args.batch_size else None
    n = words = 0
    while chunk := list(itertools.islice(examples, args.part_rows)):
        for record in decode(chunk, shown or (lambda n: None)):
            print(record["line"], flush=True)
            words += record["tokens"]
        n += len(chunk)
    _skipped(stats, args.input)
    if n == 0:
        raise DataError(no_examples(args.input, None, None, stats))
    seconds = time.perf_counter() - started
    print(f"summarized {n} document(s) in {seconds:.2f}s ({n / max(seconds, 1e-9):.2f} documents/s, "
          f"beam {search_config.beam_size}, {words / max(n, 1):.1f} tokens per summary; model loading "
          f"excluded)", file=sys.stderr)
    return 0


def _skipped(stats, source: str) -> None:
    report = stats.report(source)
    if report is not None:
        warn(report)


def _summarize_job(args, summarizer, search_config, examples, total, stats, shard, decode) -> int:
    """``agentsum summarize --out DIR``: this process's parts; the last shard merges them into
    DIR/summaries.txt (DIR/provenance.jsonl with --provenance), one line per row in input order."""
    from agentsum.data.records import DataError
    from agentsum.data.sources import no_examples

    job, rank = _job(args, "summarize", summarizer, search_config, args.input, shard, field=args.field,
                     raw=args.raw, provenance=args.provenance, skip_bad=args.skip_bad)
    result = _run_job(job, rank, examples, decode, total, "summarizing")
    if result is None:
        return 0
    _skipped(stats, args.input)
    if result[1] == 0:
        raise DataError(no_examples(args.input, None, None, stats) + "; nothing was written to " + args.out)
    if not (job.complete() and job.claim_merge()):
        print(f"shard {job.shard}: {result[0]} part(s) decoded into {job.parts_dir}; the shard that finishes last "
              f"merges them", file=sys.stderr)
        return 0
    name = "provenance.jsonl" if args.provenance else "summaries.txt"
    target = job.out / name
    tmp = job.out / f".tmp-{job.host}-{job.pid}-{name}"
    rows = words = 0
    seconds = 0.0
    with open(tmp, "w", encoding="utf-8") as handle:
        for header, records in job.read_parts():
            seconds += header["seconds"]
            for record in records:
                handle.write(record["line"] + "\n")
                rows, words = rows + 1, words + record["tokens"]
    tmp.replace(target)
    job.finish([str(target)])
    print(f"summarized {rows:,} document(s) into {target} ({rows / max(seconds, 1e-9):.2f} documents/s per process, "
          f"beam {search_config.beam_size}, {words / max(rows, 1):.1f} tokens per summary)", file=sys.stderr)
    return 0


def _explained(summarizer, examples, search_config, batch_size: int, shown) -> list[dict]:
    """:meth:`Summarizer.explain_documents` of corpus examples, each number word with the record the
    service gives it; a model that cannot say where its words came from is an error naming --provenance."""
    from agentsum.data.dataset import NO_WORDS, has_words
    from agentsum.data.records import DataError
    from agentsum.decoding.provenance import ProvenanceError

    docs = summarizer.prepare_examples(examples)
    empty = ["<stdin>" if e.origin == "-" else e.origin for e, d in zip(examples, docs) if not has_words(d)]
    if empty:
        raise DataError(f"{', '.join(empty)}: {NO_WORDS}")
    try:
        results = summarizer.explain_documents(docs, search_config, batch_size)
    except ProvenanceError as e:
        raise ConfigError(f"--provenance: {e}") from None
    if shown is not None:
        shown(len(docs))
    return results


def cmd_evaluate(args) -> int:
    from agentsum.data.records import DataError, ReadStats
    from agentsum.data.sources import iter_examples, no_examples
    from agentsum.data.store import estimate_rows
    from agentsum.evaluation.evaluate import Decoded, decode_examples, score_decoded, write_results

    shipped = Path("runs/shipped" if args.model in (None, "dialogue") else f"runs/shipped-{args.model}")
    if args.out is None:
        checkpoint = chosen_checkpoint(args)
        args.out = str((checkpoint.parent.parent if args.checkpoint else shipped) / f"eval-{Path(args.data).stem}")
    shard = _shard(args)
    _ranks_threads(args)
    if args.grammar:
        from agentsum.evaluation.grammar import link_parser

        link_parser()  # before any decoding: says how to install it where it is missing
    summarizer = loaded_summarizer(args)
    d = data_settings(args, summarizer.config.data)
    stats = ReadStats()
    # streamed: a part of documents at a time is prepared and decoded (bounded memory on any corpus)
    examples = iter_examples(args.data, start=args.start, end=args.end, article_field=d.article_field,
                             summary_field=d.summary_field, id_field=d.id_field, skip_bad=d.skip_bad,
                             min_human_label=d.min_human_label, stats=stats)
    total = estimate_rows(args.data, args.start, args.end)
    search_config = _search_config(args, summarizer.config, summarizer.vocab)

    def decode(chunk, step) -> list[dict]:
        return [{"id": e.id, "empty": True} if r is None else r.to_json()
                for e, r in zip(chunk, decode_examples(summarizer, chunk, search_config, args.batch_size, step,
                                                       grammar=args.grammar))]

    job, rank = _job(args, "evaluate", summarizer, search_config, args.data, shard, start=args.start, end=args.end,
                     fields=[d.article_field, d.summary_field, d.id_field], skip_bad=d.skip_bad,
                     min_human_label=d.min_human_label, grammar=args.grammar)
    result = _run_job(job, rank, examples, decode, total, "decoding")
    if result is None:
        return 0
    _skipped(stats, args.data)
    if result[1] == 0:
        raise DataError(no_examples(args.data, args.start, args.end, stats))
    if not (job.complete() and job.claim_merge()):
        print(f"shard {job.shard}: {result[0]} part(s) decoded into {job.parts_dir}; the shard that finishes last "
              f"merges and scores them", file=sys.stderr)
        return 0
    decoded, seconds = [], 0.0
    for header, records in job.read_parts():
        seconds += header["seconds"]
        decoded += [Decoded.from_json(r) for r in records if not r.get("empty")]
    if not decoded:
        raise DataError(f"{args.data}: no document with tokens to evaluate")
    evaluation = score_decoded(summarizer.language, decoded, search_config, seconds)
    scores = evaluation.scores
    out = job.out
    write_results(out, evaluation.predictions, evaluation.references, evaluation.ids, scores, evaluation.per_document)
    job.finish([str(out / name) for name in ("predictions.txt", "predictions.jsonl", "scores.json")])
    print_scores(scores)
    print(f"{scores['documents_per_s']:.2f} documents/s per process (beam {search_config.beam_size}); results in {out}")
    return 0


def print_scores(scores: dict, name: str = "") -> None:
    """ROUGE, and where scored (English) the doubled-word rates, the numbers figures and the claim
    figures, one line each."""
    from agentsum.evaluation.claims import format_claims
    from agentsum.evaluation.numbers import format_numbers
    from agentsum.evaluation.rouge import format_rouge

    print(name + format_rouge(scores))
    if "doubled" in scores:
        print(f"summaries repeating a content word within 3 tokens: {scores['doubled']:.1f}%; "
              f"naming one person twice (X and X): {scores['x_and_x']:.1f}%")
    if "numbers_supported" in scores:
        print(format_numbers(scores))
    if "period_agreement" in scores:
        print(format_claims(scores))
    if scores.get("attribution") is not None:
        print(f"attribution: {scores['attribution']:.1f}% of {scores['attribution_checked']:,} checked sentences "
              f"given to the speaker whose words they hold; wrong person suspected in "
              f"{scores['wrong_person_suspected']:.1f}% of summaries")
    if "grammar_unparsed" in scores:
        print(f"grammar: {scores['grammar_unparsed']:.1f}% of {scores['grammar_sentences']:,} sentences not parsed "
              f"whole by link grammar; {scores['grammar_flagged']:.1f}% of summaries hold one")


def cmd_lead3(args) -> int:
    return cmd_extract(args, method="lead")


def cmd_extract(args, method: str | None = None) -> int:
    from agentsum.config import Config
    from agentsum.data.dataset import read_examples
    from agentsum.data.language import text_processor
    from agentsum.evaluation.evaluate import score_summaries, write_results
    from agentsum.evaluation.extractive import Extractor

    method = method or args.method
    if args.sentences < 1:
        raise ConfigError(f"--sentences must be at least 1, got {args.sentences}")
    if args.chars is not None and (method != "lead" or args.chars < 1):
        raise ConfigError(f"--chars N (N >= 1) takes the first N characters: lead only, got --chars {args.chars}"
                          + ("" if method == "lead" else f" with --method {method}"))
    d = data_settings(args, load_config(args.config).data if args.config else Config().data)
    language = text_processor(d)
    extractor = Extractor(method, language, args.sentences, args.chars)
    examples = read_examples(data_source(args), d, warn=warn)
    predictions = [extractor(e.article) for e in examples]
    references = [language.join_sentences(language.summary_sentences(e.summary)) for e in examples]
    scores, per_document = score_summaries(language, predictions, references, [e.article for e in examples])
    scores.update(method=method, sentences=args.sentences, chars=args.chars)
    if args.out:
        write_results(args.out, predictions, references, [e.id for e in examples], scores, per_document)
    print_scores(scores, f"{extractor.name}: ")
    return 0


def cmd_export(args) -> int:
    import torch

    from agentsum.checkpoint import export_inference

    export_inference(args.checkpoint, args.out, getattr(torch, args.dtype), args.overrides, quantize=args.quantize)
    size = Path(args.out).stat().st_size
    runs = ", runs in int8 on the CPU" if args.quantize == "int8" else ""
    print(f"wrote {args.out} ({size / 2**20:.1f} MiB, {args.dtype} weights{runs}, no optimizer state)")
    return 0


def cmd_fit_lm(args) -> int:
    import time

    from agentsum.checkpoint import SHIPPED_MODELS, shipped_path
    from agentsum.data.dataset import load_documents
    from agentsum.models.summary_lm import NgramLM
    from agentsum.summarizer import Summarizer
    from agentsum.training.monitor import log

    if args.order < 1:
        raise ConfigError(f"--order must be at least 1, got {args.order}")
    summarizer = Summarizer(args.checkpoint, device="cpu")
    shipped = {shipped_path(name).resolve() for name in SHIPPED_MODELS}
    if args.out is None and summarizer.checkpoint.resolve() in shipped:
        raise ConfigError(f"{summarizer.checkpoint} is a shipped model: writing beside it would replace its summary "
                          "language model; give --out (and copy your checkpoint beside that file to use it)")
    out = Path(args.out) if args.out else summarizer.summary_lm_path
    started = time.perf_counter()
    docs = load_documents(data_source(args), data_settings(args, summarizer.config.data), warn=log)
    if not any(d.summary for d in docs):
        raise ConfigError(f"{args.data}: no reference summaries to fit a summary language model on")
    lm = NgramLM.of_documents(docs, order=args.order)
    lm.save(out)
    print(f"wrote {out} ({out.stat().st_size / 2**20:.1f} MiB): a {args.order}-gram summary language model of "
          f"{sum(bool(d.summary) for d in docs):,} summaries, {len(lm.vocab):,} words, in "
          f"{time.perf_counter() - started:.0f}s; use it with --lm-weight (0.1 for the shipped dialogue model)")
    return 0


def cmd_average(args) -> int:
    from agentsum.checkpoint import average_checkpoints

    metadata = average_checkpoints(args.checkpoints, args.out)
    size = Path(args.out).stat().st_size
    print(f"wrote {args.out} ({size / 2**20:.1f} MiB): the mean of {len(args.checkpoints)} checkpoints "
          f"(steps {', '.join(str(s) for s in metadata['averaged']['steps'])})")
    return 0


def cmd_nll(args) -> int:
    import torch

    from agentsum.data.dataset import load_documents
    from agentsum.summarizer import Summarizer
    from agentsum.training.monitor import log
    from agentsum.training.trainer import validation_nll

    results, vocabularies, prepared = [], set(), {}  # prepared: documents by data settings (a run's share them)
    for name in args.checkpoints:
        summarizer = Summarizer(name, device=args.device, quantize="none")  # as training scores: in float
        data = data_settings(args, summarizer.config.data)
        vocabularies.add(tuple(summarizer.vocab.itos))
        if repr(data) not in prepared:
            prepared[repr(data)] = load_documents(data_source(args), data, warn=log)
            if not any(d.summary for d in prepared[repr(data)]):
                raise ConfigError(f"{args.data}: no reference summaries to score")
        docs = prepared[repr(data)]
        with torch.no_grad():
            nll = validation_nll(summarizer.model, docs, summarizer.vocab, args.batch_size)
        step = summarizer.metadata.get("step")
        print(f"{name}: NLL {nll:.4f} per summary token on {len(docs):,} documents"
              + (f" (step {step:,})" if isinstance(step, int) else ""), flush=True)
        results.append((nll, name))
    if len(results) > 1 and len(vocabularies) == len(prepared) == 1:
        best, name = min(results)
        print(f"lowest: {name} ({best:.4f})")
    elif len(results) > 1:
        print("no lowest: the checkpoints have other vocabularies or data settings, so their values per token "
              "are not comparable")
    return 0


def cmd_models(args) -> int:
    from agentsum.checkpoint import DEFAULT_NAME, SHIPPED_MODELS, CheckpointError, read_checkpoint, shipped_path

    for name, model in SHIPPED_MODELS.items():
        path = shipped_path(name)
        default = " (default)" if name == DEFAULT_NAME else ""
        if path.is_file():
            print(f"{name}{default}: installed, {path.stat().st_size / 2**20:.1f} MiB, agentsum/{model.file}")
        else:
            print(f"{name}{default}: not installed (agentsum/{model.file} is not in this installation; "
                  "use --checkpoint with a model of your own)")
        print(f"  for: {model.purpose}; trained on {model.corpus}")
        if path.is_file():
            try:  # weights mapped, not read: the metadata is all this needs
                print(f"  checkpoint: {_checkpoint_facts(read_checkpoint(path, mmap=True))}")
            except CheckpointError as e:
                print(f"  checkpoint: unreadable: {e}")
    return 0


def _checkpoint_facts(state: dict) -> str:
    """One line of what a checkpoint records: step, selection score, agents and tokens read, vocabulary."""
    from agentsum.data.dataset import kept_tokens
    from agentsum.config import Config

    facts = []
    if state.get("step") is not None:
        facts.append(f"step {state['step']:,}")
    selection = state.get("selection") or {}
    if isinstance(selection.get("best"), (int, float)):
        facts.append(f"selected by {selection.get('metric')} {selection['best']:.2f}")
    if state.get("averaged"):
        facts.append(f"mean of steps {', '.join(str(s) for s in state['averaged'].get('steps', []))}")
    try:
        data = Config.from_dict(state["config"], "checkpoint config").data
        agents = "auto" if data.auto_agents else data.agents
        facts.append(f"agents {agents}" + (f" of {data.agent_tokens} tokens" if data.agent_tokens else "")
                     + f", reads the first {kept_tokens(data):,} tokens (max_article_tokens {data.max_article_tokens:,})")
        facts.append("dialogue" if data.dialogue else "documents")
    except (TypeError, ValueError, KeyError):
        facts.append("configuration unreadable")
    facts.append(f"vocabulary {len(state['vocab']):,}")
    return "; ".join(facts)


COMMANDS = {"train": cmd_train, "prepare": cmd_prepare, "summarize": cmd_summarize, "evaluate": cmd_evaluate, "lead3": cmd_lead3,
            "extract": cmd_extract, "export": cmd_export, "average": cmd_average, "nll": cmd_nll, "models": cmd_models,
            "fit-lm": cmd_fit_lm}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from agentsum.runtime import tune_allocator

    tune_allocator()  # fewer page faults on large tensors (see agentsum.runtime)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    from agentsum.data.records import DataError
    from agentsum.checkpoint import CheckpointError

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
