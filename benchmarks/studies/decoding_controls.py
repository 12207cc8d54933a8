"""The decoding controls on the shipped model: ROUGE and the repetitions a reader notices, per setting.

Decodes SAMSum validation dialogues (all 814 by default) with ``agentsum/pretrained/samsum-en.pt``
under each search setting (trigram blocking, SearchConfig's default; n-gram blocking of other sizes; a
repetition penalty; both), on one thread, and reports for each: ROUGE-1/2/L (rouge-score, stemmed,
rougeLsum), the share of summaries that repeat a content word within three tokens ("doubled"),
and the share that name one person twice as ``X and X``. The references' rates are beside them.
Each setting is a change to one base (``BASE``: beam 5, 15-60 tokens, trigram blocking alone), every
other setting pinned rather than taken from the checkpoint (the shipped model decodes with
``repeat_window`` 3 and a repetition penalty of 1.5), and every row records the settings it was
decoded with.

It also reads the ``X and X`` summaries of the default setting for their cause: whether X is the
dialogue's first speaker, its most frequent speaker, and whether the reference joins two speakers
with "and" there (the model meant two people and wrote one twice).

    python benchmarks/studies/decoding_controls.py [--docs 814] [--out benchmarks/results/samsum]
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agentsum.evaluation.repetition import doubled_rate, x_and_x, x_and_x_rate  # noqa: E402
from search_settings import settings_of  # noqa: E402

from agentsum.data.sources import load_examples  # noqa: E402
from agentsum.decoding.search import SearchConfig  # noqa: E402
from agentsum.evaluation.rouge import rouge_for  # noqa: E402
from agentsum.summarizer import Summarizer  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
VALID = REPO.parent / "shared" / "data" / "samsum" / "valid.jsonl"
#: What every setting changes: the SAMSum presets' search before repeat_window and repetition_penalty,
#: every field given, so that no default of the checkpoint decoded leaks in.
BASE = dict(beam_size=5, min_length=15, max_length=60, block_trigrams=True, no_repeat_ngram_size=None,
            repetition_penalty=1.0, repeat_window=0, length_penalty=1.0, unk_replace=True, numbers_from_source=False)
SETTINGS = {
    "trigram blocking (default)": {},
    "no_repeat_ngram_size 2": {"no_repeat_ngram_size": 2},
    "no_repeat_ngram_size 4": {"no_repeat_ngram_size": 4},
    "repetition_penalty 1.2": {"repetition_penalty": 1.2},
    "repetition_penalty 1.5": {"repetition_penalty": 1.5},
    "no_repeat_ngram_size 2 + repetition_penalty 1.2": {"no_repeat_ngram_size": 2, "repetition_penalty": 1.2},
    "repeat_window 2": {"repeat_window": 2},
    "repeat_window 2 + repetition_penalty 1.5": {"repeat_window": 2, "repetition_penalty": 1.5},
}


def search_for(changes: dict) -> SearchConfig:
    """A setting of :data:`SETTINGS`: ``changes`` on :data:`BASE`."""
    return SearchConfig(**{**BASE, **changes})


def speakers(dialogue: str) -> list[str]:
    """The speaker of every utterance, in order, lower-cased (``Name: text`` lines)."""
    return [line.split(":", 1)[0].strip().lower() for line in dialogue.splitlines() if ":" in line]


def rates(predictions: list[str]) -> tuple[float, float]:
    return doubled_rate(predictions), x_and_x_rate(predictions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=814)
    parser.add_argument("--checkpoint", default=str(REPO / "agentsum" / "pretrained" / "samsum-en.pt"))
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "samsum"))
    parser.add_argument("--only", nargs="*", help="setting names to run (default: all)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    summarizer = Summarizer(args.checkpoint, device="cpu")
    examples = load_examples(str(VALID), end=args.docs)
    docs = summarizer.prepare_examples(examples)
    references = [d.reference for d in docs]
    language = summarizer.language
    rows, by_setting = [], {}
    for name, changes in SETTINGS.items():
        if args.only and name not in args.only:
            continue
        config = search_for(changes)
        started = time.perf_counter()
        tokens = summarizer.summarize_documents(docs, config)
        seconds = time.perf_counter() - started
        predictions = [language.summary_text(t) for t in tokens]
        scores = rouge_for(language, predictions, references)
        doubled, xx = rates(predictions)
        rows.append({"setting": name, **settings_of(config), "rouge1": scores["rouge1"], "rouge2": scores["rouge2"],
                     "rougeL": scores["rougeLsum"], "doubled": doubled, "x_and_x": xx, "seconds": seconds})
        by_setting[name] = predictions
        print(json.dumps(rows[-1]), flush=True)
    out = Path(args.out)
    saved = out / "decoding_controls.json"
    if args.only and saved.exists():  # the settings not run now keep their rows from the last run
        kept = [r for r in json.loads(saved.read_text())["rows"] if r["setting"] not in by_setting]
        rows = sorted(kept + rows, key=lambda r: list(SETTINGS).index(r["setting"]))
    ref_doubled, ref_xx = rates([r.replace("\n", " ") for r in references])  # tokenized, as the predictions
    # cause of X and X, on the default setting (kept from the last full run when it was not run now)
    first = by_setting.get("trigram blocking (default)", [])
    cause = collections.Counter()
    cases = []
    for ex, pred in zip(examples, first):
        x = x_and_x(pred)
        if x is None:
            continue
        who = speakers(ex.article)
        counts = collections.Counter(who)
        others = [s for s in counts if s != x]
        cause["cases"] += 1
        cause["x is a speaker"] += x in counts
        cause["x is the first speaker"] += bool(who) and who[0] == x
        cause["x is the most frequent speaker"] += bool(counts) and counts.most_common(1)[0][0] == x
        ref = ex.summary.lower()
        cause["reference names x with another speaker"] += any(
            re.search(rf"\b{re.escape(x)}\b.*\b{re.escape(o)}\b|\b{re.escape(o)}\b.*\b{re.escape(x)}\b", ref)
            for o in others)
        cause["dialogue has exactly 2 speakers"] += len(counts) == 2
        if len(cases) < 8:
            cases.append({"id": ex.id, "summary": pred, "reference": ex.summary, "speakers": dict(counts)})
    if not first and saved.exists():
        previous = json.loads(saved.read_text())
        cause, cases = collections.Counter(previous["x_and_x_cause"]), previous["examples"]
    out.mkdir(parents=True, exist_ok=True)
    (out / "decoding_controls.json").write_text(json.dumps(
        {"docs": len(docs), "rows": rows, "references": {"doubled": ref_doubled, "x_and_x": ref_xx},
         "x_and_x_cause": dict(cause), "examples": cases}, indent=1) + "\n")
    lines = [f"# Decoding controls on the shipped model ({len(docs)} SAMSum validation dialogues)", "",
             "`python benchmarks/studies/decoding_controls.py`: beam 5, 15-60 tokens, one thread; each setting a change "
             "to trigram blocking alone, every other setting as there (no repeat window, no repetition penalty, "
             "numbers generated as well as copied); ROUGE from rouge-score (stemmed, rougeLsum). doubled: summaries "
             "repeating a content word within three tokens; X and X: summaries naming one word twice around \"and\".",
             "",
             "| setting | R-1 | R-2 | R-L | doubled | X and X | seconds |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['setting']} | {r['rouge1']:.2f} | {r['rouge2']:.2f} | {r['rougeL']:.2f} | "
                     f"{r['doubled']:.1f}% | {r['x_and_x']:.1f}% | {r['seconds']:.0f} |")
    lines.append(f"| references | | | | {ref_doubled:.1f}% | {ref_xx:.1f}% | |")
    lines += ["", f"`X and X` in the summaries of the default setting ({cause['cases']} cases):", ""]
    lines += [f"- {k}: {v}" for k, v in cause.items() if k != "cases"]
    (out / "decoding_controls.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
