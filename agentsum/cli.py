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
from agentsum.options import (EPILOG_DATA, add_data_options, add_device_option, add_model_options, add_search_options,
                              chosen_checkpoint, data_settings, data_source, progress, search_overrides, warn)

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
    add_device_option(p)
    add_search_options(p)

    p = sub.add_parser("evaluate", help="summarize a corpus and score it with ROUGE", epilog=EPILOG_DATA,
                       description="Decode every document of DATA and report ROUGE-1/2/L F1 (rouge-score, stemming, "
                                   "rougeLsum) and, for English, the share of summaries that repeat a content word "
                                   "within three tokens or name one person twice (X and X), and the numbers figures: "
                                   "the share of the summaries' numbers that the source article holds (supported) and "
                                   "of the reference's numbers found in the source that the summary states (recall), "
                                   "one-digit numbers apart, and the claim figures: period agreement (the summary's "
                                   "periods against the quarter the source reports), numbers in context (one source "
                                   "sentence states the number beside the metric the summary gives it), direction "
                                   "agreement and malformed figures (docs/analysis.md). Writes predictions.txt, "
                                   "predictions.jsonl (with each document's numbers and claim figures) and scores.json "
                                   "to --out.")
    add_model_options(p)
    add_data_options(p)
    p.add_argument("--out", help="output directory (default: next to the checkpoint, eval-<data name>)")
    add_device_option(p)
    add_search_options(p)

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
    """The Summarizer of --checkpoint on --device, with the device's settings (TF32 on CUDA)."""
    from agentsum.devices import choose_device, use_tf32
    from agentsum.summarizer import Summarizer

    device = choose_device(args.device, setting="--device")
    use_tf32(device)
    return Summarizer(chosen_checkpoint(args), device=device)


def cmd_summarize(args) -> int:
    from agentsum.data.corpus import Example, read_text_file
    from agentsum.data.records import DataError
    from agentsum.data.sources import iter_examples

    summarizer = loaded_summarizer(args)
    if args.input.endswith(".jsonl"):
        # read and decoded 1,000 rows at a time, each chunk printed when done: memory holds one chunk
        from agentsum.data.store import estimate_rows

        examples = iter_examples(args.input, article_field=args.field, require_summary=False)
        total = estimate_rows(args.input) or 0
    else:
        examples = iter([Example(id=args.input, article=read_text_file(args.input), summary="", origin=args.input)])
        total = 1
    search_config = _search_config(args, summarizer.config, summarizer.vocab)
    started = time.perf_counter()
    shown = progress(total, "summarizing") if total > args.batch_size else None
    n = words = 0
    if args.provenance and args.raw:
        raise ConfigError("--provenance and --raw: choose one (--provenance gives each word's token and shown form)")
    while chunk := list(itertools.islice(examples, 1000)):
        for example in chunk:  # a text far longer than the model reads: said on stderr, summarized anyway
            notice = summarizer.length_warning(example.article, "<stdin>" if example.origin == "-" else example.origin)
            if notice is not None:
                warn(f"agentsum summarize: warning: {notice}")
        if args.provenance:
            results = _explained(summarizer, chunk, search_config, args.batch_size, shown)
            for example, result in zip(chunk, results):
                print(json.dumps({"id": example.id, **result}, ensure_ascii=False), flush=True)
            n, words = n + len(chunk), words + sum(len(r["words"]) for r in results)
            continue
        texts, summaries = summarizer.summarize_examples(chunk, search_config, raw=args.raw,
                                                         batch_size=args.batch_size, progress=shown)
        for text in texts:
            print(text, flush=True)
        n, words = n + len(chunk), words + sum(len(t) for t in summaries)
    if n == 0:
        raise DataError(f"no examples in {args.input}")
    seconds = time.perf_counter() - started
    print(f"summarized {n} document(s) in {seconds:.2f}s ({n / max(seconds, 1e-9):.2f} documents/s, "
          f"beam {search_config.beam_size}, {words / max(n, 1):.1f} tokens per summary; model loading "
          f"excluded)", file=sys.stderr)
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
    from agentsum.evaluation.evaluate import NoDocuments, evaluate_corpus, write_results

    summarizer = loaded_summarizer(args)
    d = data_settings(args, summarizer.config.data)
    stats = ReadStats()
    # streamed: a chunk of documents at a time is prepared and decoded (bounded memory on any corpus)
    examples = iter_examples(args.data, start=args.start, end=args.end, article_field=d.article_field,
                             summary_field=d.summary_field, id_field=d.id_field, skip_bad=d.skip_bad,
                             min_human_label=d.min_human_label, stats=stats)
    total = estimate_rows(args.data, args.start, args.end)
    search_config = _search_config(args, summarizer.config, summarizer.vocab)
    try:
        result = evaluate_corpus(summarizer, examples, search_config, args.batch_size, progress(total or 0, "decoding"))
    except NoDocuments:
        if stats.read == 0:
            raise DataError(no_examples(args.data, args.start, args.end, stats)) from None
        raise
    report = stats.report(args.data)
    if report is not None:
        warn(report)
    shipped = Path("runs/shipped" if args.model in (None, "dialogue") else f"runs/shipped-{args.model}")
    default_out = (summarizer.checkpoint.parent.parent if args.checkpoint else shipped) / f"eval-{Path(args.data).stem}"
    out = Path(args.out) if args.out else default_out
    scores = result.scores
    write_results(out, result.predictions, result.references, result.ids, scores, result.per_document)
    print_scores(scores)
    print(f"{scores['documents_per_s']:.2f} documents/s (beam {search_config.beam_size}); results in {out}")
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

    export_inference(args.checkpoint, args.out, getattr(torch, args.dtype), args.overrides)
    size = Path(args.out).stat().st_size
    print(f"wrote {args.out} ({size / 2**20:.1f} MiB, {args.dtype} weights, no optimizer state)")
    return 0


def cmd_average(args) -> int:
    from agentsum.checkpoint import average_checkpoints

    metadata = average_checkpoints(args.checkpoints, args.out)
    size = Path(args.out).stat().st_size
    print(f"wrote {args.out} ({size / 2**20:.1f} MiB): the mean of {len(args.checkpoints)} checkpoints "
          f"(steps {', '.join(str(s) for s in metadata['averaged']['steps'])})")
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
            "extract": cmd_extract, "export": cmd_export, "average": cmd_average, "models": cmd_models}


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
