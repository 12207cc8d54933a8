"""Command-line options shared by the ``agentsum`` commands, and what they turn into.

``agentsum.cli`` and the command modules it registers (``agentsum.evaluation.analyze``, ...) add
these options to their parsers and read them back with the functions here, so a corpus, a search
setting or a progress line means the same in every command.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable
from pathlib import Path

CHECKPOINT_HELP = ("a .pt checkpoint written by `agentsum train` or `agentsum export` (default: the English "
                   "dialogue model shipped with agentsum, see docs/model_card.md)")
MODEL_HELP = ("a model shipped with agentsum, by name: {names} (default: dialogue; `agentsum models` lists them and "
              "says which this installation holds); not with --checkpoint")


def add_model_options(p: argparse.ArgumentParser, checkpoint_help: str = CHECKPOINT_HELP) -> None:
    """--checkpoint CKPT and --model NAME (a shipped model), read back by :func:`chosen_checkpoint`."""
    from agentsum.checkpoint import SHIPPED_MODELS

    p.add_argument("--checkpoint", help=checkpoint_help)
    p.add_argument("--model", choices=list(SHIPPED_MODELS), metavar="NAME",
                   help=MODEL_HELP.format(names=", ".join(SHIPPED_MODELS)))


def chosen_checkpoint(args):
    """The checkpoint file that --checkpoint or --model names (the default shipped model when neither
    is given); both together is a :class:`~agentsum.config.ConfigError`, a shipped model this
    installation lacks a :class:`~agentsum.checkpoint.CheckpointError` naming the missing file."""
    from agentsum.checkpoint import default_checkpoint, shipped_checkpoint
    from agentsum.config import ConfigError

    checkpoint, model = getattr(args, "checkpoint", None), getattr(args, "model", None)
    if checkpoint is not None and model is not None:
        raise ConfigError(f"--model {model} and --checkpoint {checkpoint}: choose one (--model picks a model "
                          "shipped with agentsum, --checkpoint any checkpoint file)")
    if checkpoint is not None:
        return Path(checkpoint)  # a path, never a shipped model's name
    return shipped_checkpoint(model) if model is not None else default_checkpoint()
EPILOG_DATA = ("DATA is a JSONL file (one {article, summary} object per line), a CNN/DailyMail .story file or a "
               "directory of them, an LCSTS PART file or TSV, or hf:cnn_dailymail:3.0.0:test (needs "
               "`pip install agentsum[hf]` and a network).")


def add_data_options(p: argparse.ArgumentParser) -> None:
    """--data, --start, --end, --min-human-label, --skip-bad (read by :func:`data_source` and :func:`data_settings`)."""
    p.add_argument("--data", required=True, metavar="DATA")
    p.add_argument("--start", type=int, help="first row (0-based)")
    p.add_argument("--end", type=int, help="row after the last")
    p.add_argument("--min-human-label", type=int,
                   help="LCSTS PART II/III: keep pairs scored at least this (3 = the standard test set)")
    p.add_argument("--skip-bad", action="store_true",
                   help="skip malformed lines (counted and reported) instead of stopping at the first")


def data_source(args):
    """The corpus named by --data, --start and --end."""
    from agentsum.data.dataset import DataSource

    return DataSource(args.data, args.start, args.end)


def data_settings(args, data_config):
    """``data_config`` with --min-human-label and --skip-bad applied (when given)."""
    label = args.min_human_label if args.min_human_label is not None else data_config.min_human_label
    return dataclasses.replace(data_config, min_human_label=label,
                               skip_bad=data_config.skip_bad or getattr(args, "skip_bad", False))


DEVICE_HELP = "where the model runs: auto (a GPU where one is present, else the CPU; default), cpu or cuda"


def add_device_option(p: argparse.ArgumentParser) -> None:
    """--device auto|cpu|cuda (default auto), resolved by :func:`agentsum.devices.choose_device`."""
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help=DEVICE_HELP)


QUANTIZE_HELP = ("int8: run the LSTM and linear layers in dynamic int8 on the CPU (PyTorch's quantize_dynamic; "
                 "docs/distributed.md has its speed and ROUGE against float32 per model); none: float32. "
                 "Default: what the checkpoint asks for (agentsum export --quantize int8), else none")


def add_quantize_option(p: argparse.ArgumentParser) -> None:
    """--quantize int8|none (default: the checkpoint's), for :class:`agentsum.summarizer.Summarizer`."""
    p.add_argument("--quantize", choices=("none", "int8"), help=QUANTIZE_HELP)


def add_job_options(p: argparse.ArgumentParser) -> None:
    """--shard K/N, --resume and --part-rows: a corpus decoded in parts (:mod:`agentsum.jobs`)."""
    g = p.add_argument_group("corpus jobs (with --out; docs/distributed.md)")
    g.add_argument("--shard", metavar="K/N",
                   help="decode only shard K of N (1 <= K <= N) of the input's parts, e.g. a SLURM array task "
                        "--shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT with --array=1-N; under torchrun every "
                        "rank takes its share of it. The last shard to finish merges the parts")
    g.add_argument("--resume", action="store_true",
                   help="continue the job in --out: the parts already written are kept and the rest decoded (the "
                        "input and settings must be those the job began with)")
    g.add_argument("--part-rows", type=int, default=1000, metavar="R",
                   help="rows per part, the unit written atomically and lost at most to a kill (default 1000)")


def add_search_options(p: argparse.ArgumentParser) -> None:
    """--beam, --min-length, --max-length, --min-length-ratio, --no-block-trigrams,
    --no-repeat-ngram-size, --repetition-penalty, --repeat-window, --numbers-from-source,
    --figure-grammar, --source-periods, --numbers-in-context, --attribution-rerank, --role-names,
    --lm-weight, --no-unk-replace, --batch-size."""
    g = p.add_argument_group("search (defaults: the checkpoint's config)")
    g.add_argument("--beam", type=int, help="beam width; 1 = greedy (paper: 5)")
    g.add_argument("--min-length", type=int, help="no end-of-summary before this many tokens")
    g.add_argument("--max-length", type=int, help="at most this many tokens (paper: 110)")
    g.add_argument("--min-length-ratio", metavar="R",
                   help="a document's minimum length is at most R times its source tokens, so a short input is not "
                        "padded to --min-length (default 0.5; 'off' to force --min-length on every input)")
    g.add_argument("--no-block-trigrams", action="store_true", help="allow a trigram to be generated twice")
    g.add_argument("--no-repeat-ngram-size", type=int, metavar="N",
                   help="forbid repeating any n-gram of this size (0: off; default 3 with trigram blocking)")
    g.add_argument("--repetition-penalty", type=float, metavar="X",
                   help="multiply the log-probability of a word already in the summary by X (> 1 discourages "
                        "repeats; default 1: off)")
    g.add_argument("--repeat-window", type=int, metavar="K",
                   help="forbid a word that is one of the last K words (2 forbids 'X and X'; default 0: off)")
    g.add_argument("--numbers-from-source", choices=("on", "off"),
                   help="on: a number may be copied from the source but never generated from the vocabulary, so "
                        "every number of a summary is in its source (default: the checkpoint's; on in the ECTSum "
                        "presets, off elsewhere)")
    g.add_argument("--figure-grammar", choices=("on", "off"),
                   help="on: a currency sign only before a number, scale words and percent only after one, never two "
                        "units on one number ('$ per share' and '5%% million' cannot be written; docs/model.md)")
    g.add_argument("--source-periods", choices=("on", "off"),
                   help="on: a period (q3, fy, first quarter) only where the source states it and it agrees with the "
                        "quarter the call reports (a later period in guidance)")
    g.add_argument("--numbers-in-context", choices=("on", "off"),
                   help="on: a number in a summary sentence that has named a metric is copied only from source "
                        "sentences stating that metric, for the sentence's period (numerals become copy-only)")
    g.add_argument("--attribution-rerank", choices=("on", "off"),
                   help="on: of a dialogue's beam, the best summary with the fewest sentences that give a statement to "
                        "someone who wrote none of its words wins (docs/model.md, 'Search')")
    g.add_argument("--role-names", choices=("on", "off"),
                   help="on: as --attribution-rerank, and such a sentence's subject is also tried as the person who "
                        "wrote its words, scored as the search would score it, where the beam could have kept it "
                        "(docs/model.md, 'Search')")
    g.add_argument("--lm-weight", type=float, metavar="W",
                   help="W > 0: rescore the beam with the model's summary language model (NAME.lm.json.gz beside "
                        "the checkpoint, `agentsum fit-lm`): search score + W x its log-probability per token; 0.1 "
                        "suits the shipped dialogue model (off by default); 0: off")
    g.add_argument("--no-unk-replace", action="store_true", help="keep <unk> instead of copying the most attended word")
    g.add_argument("--batch-size", type=int, default=16, help="documents decoded together (default 16)")


def search_overrides(args) -> dict:
    """The SearchConfig fields set by the options of :func:`add_search_options`."""
    changes = {}
    if args.beam is not None:
        changes["beam_size"] = args.beam
    if args.min_length is not None:
        changes["min_length"] = args.min_length
    if args.max_length is not None:
        changes["max_length"] = args.max_length
    if args.no_block_trigrams:
        changes["block_trigrams"] = False
    if getattr(args, "no_repeat_ngram_size", None) is not None:
        changes["no_repeat_ngram_size"] = args.no_repeat_ngram_size
    if getattr(args, "repetition_penalty", None) is not None:
        changes["repetition_penalty"] = args.repetition_penalty
    if getattr(args, "repeat_window", None) is not None:
        changes["repeat_window"] = args.repeat_window
    for name in ("numbers_from_source", "figure_grammar", "source_periods", "numbers_in_context",
                 "attribution_rerank", "role_names"):
        if getattr(args, name, None) is not None:
            changes[name] = getattr(args, name) == "on"
    if getattr(args, "lm_weight", None) is not None:
        changes["lm_weight"] = args.lm_weight
    ratio = getattr(args, "min_length_ratio", None)
    if ratio is not None:
        changes["min_length_ratio"] = None if ratio == "off" else _ratio(ratio)
    if args.no_unk_replace:
        changes["unk_replace"] = False
    return changes


def _ratio(text: str) -> float:
    from agentsum.config import ConfigError

    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value != float("inf")):
        raise ConfigError(f"--min-length-ratio: expected a positive number or 'off', got {text!r}")
    return value


def progress(total: int, label: str) -> Callable[[int], None]:
    """A callback counting decoded documents on stderr: one line rewritten in place on a terminal,
    one line per call otherwise."""
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


def warn(message: str) -> None:
    """A warning for the user (e.g. bad corpus lines skipped), on stderr."""
    print(message, file=sys.stderr)
