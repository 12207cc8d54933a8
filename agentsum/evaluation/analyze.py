"""``agentsum analyze``: ROUGE-L binned by each agent's average attention (DCA section 5.3, Figure 4).

For every test document the model's summary is decoded (batched beam search, as ``evaluate``) and
the agent attention ``g^t`` (eq 10) of every output token is kept. A document's *average attention*
of agent ``a`` is ``mean_t g^t_a`` over the tokens of its summary; the ``A`` averages sum to 1.

Reading of Figure 4 (the text: "bin the document-summary pairs by the attention received by each
agent, and average the ROUGE-L scores for the summaries in each bin"): one panel per agent; in the
panel of agent ``a`` every document falls into exactly one bin of ``a``'s average attention, and
the bar is the mean ROUGE-L F1 of the summaries in that bin. With ``--compare`` a second (single-
agent) model summarizes the same documents and its mean ROUGE-L on the *same bins* (chosen by the
multi-agent model's attention) is drawn beside it, which is the paper's second observation.
One extra panel, not in the paper, bins by the largest agent share ``max_a mean_t g^t_a``
(from 1/A, equal shares, to 1, one agent only), which states the paper's first observation ("more
distributed attention, higher ROUGE-L") in a single axis.

Bins: ``--binning width`` (default) cuts [0, 1] into ``--bins`` equal intervals, the last one
closed (the max-share panel cuts [1/A, 1]); ``--binning quantile`` uses the quantiles of each
panel's values instead, so the bins hold about equally many documents. A summary with no tokens
has no attention and is left out of the bins (counted as ``empty_summaries``).

ROUGE-L is rougeLsum F1 in percent, per document, from :func:`agentsum.evaluation.rouge.rouge_for`,
the numbers ``evaluate`` averages. Both models decode through :class:`agentsum.summarizer.Summarizer`,
as ``evaluate`` does.

Outputs in ``--out`` (default: next to the checkpoint, ``analysis-<data name>``):
``attention_bins.md`` / ``.csv`` / ``.json`` (the table), ``attention_bins.png`` (the figure),
``documents.jsonl`` (per document: attention, ROUGE-L, bins, summaries) and
``model/predictions.jsonl`` (+ ``compare/``), as written by ``evaluate`` (usable by
``agentsum humaneval make``).
"""

from __future__ import annotations

import bisect
import csv
import dataclasses
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

__all__ = ["AnalysisError", "decode_with_attention", "average_attention", "bin_edges", "assign_bins",
           "bin_groups", "analyze", "write_outputs", "plot_bins", "add_parser", "run"]


class AnalysisError(ValueError):
    pass


# --------------------------------------------------------------------------------------------
# Decoding with agent attention
# --------------------------------------------------------------------------------------------


def average_attention(g: torch.Tensor) -> list[float] | None:
    """(len, A) agent attention of a summary's tokens -> A averages (None for an empty summary)."""
    if g.dim() != 2 or g.size(0) == 0:
        return None
    return g.float().mean(dim=0).tolist()


def decode_with_attention(summarizer, docs, search_config, batch_size: int = 16,
                          progress=None) -> tuple[list[list[str]], list[list[float] | None]]:
    """Summary tokens and average agent attention of every document, in the order given."""
    tokens, attention = summarizer.summarize_documents(docs, search_config, batch_size, progress, with_attention=True)
    return tokens, [average_attention(g) for g in attention]


# --------------------------------------------------------------------------------------------
# Binning
# --------------------------------------------------------------------------------------------


def bin_edges(values: Sequence[float], n_bins: int, lo: float = 0.0, hi: float = 1.0,
              binning: str = "width") -> list[float]:
    """``n_bins + 1`` increasing edges: equal widths on [lo, hi], or the quantiles of ``values``."""
    if n_bins < 1:
        raise AnalysisError(f"need at least one bin, got {n_bins}")
    if binning not in ("width", "quantile"):
        raise AnalysisError(f"binning must be 'width' or 'quantile', got {binning!r}")
    if binning == "width" or not values:
        return [lo + (hi - lo) * k / n_bins for k in range(n_bins + 1)]
    s = sorted(values)
    edges = []
    for k in range(n_bins + 1):
        pos = (len(s) - 1) * k / n_bins
        j = int(math.floor(pos))
        edges.append(s[j] + (s[min(j + 1, len(s) - 1)] - s[j]) * (pos - j))
    return edges


def assign_bins(values: Sequence[float], edges: Sequence[float]) -> list[int]:
    """Bin index of every value: bin k holds edges[k] <= v < edges[k+1], the last bin is closed.

    Values outside the edges (rounding: an average attention of 1.0000001) go to the nearest end bin,
    so every value falls into exactly one bin.
    """
    last = len(edges) - 2
    return [min(max(bisect.bisect_right(edges, v) - 1, 0), last) for v in values]


def _mean_sem(xs: list[float]) -> tuple[float | None, float | None]:
    if not xs:
        return None, None
    m = sum(xs) / len(xs)
    if len(xs) < 2:
        return m, None
    var = sum((x - m) ** 2 for x in xs) / (len(xs) - 1)
    return m, math.sqrt(var / len(xs))


def bin_groups(attention: Sequence[Sequence[float]], rouge_l: Sequence[float],
               compare_rouge_l: Sequence[float] | None = None, n_bins: int = 5,
               binning: str = "width") -> list[dict]:
    """The table: per panel (agent 1..A, then max share when A > 1) and bin, the document count and
    mean ROUGE-L (and standard error) of the model and of the comparison model.

    ``attention`` holds the average attention of the binned documents (no None), aligned with
    ``rouge_l`` (and ``compare_rouge_l``).
    """
    if not attention:
        raise AnalysisError("no summaries to bin (every summary is empty)")
    A = len(attention[0])
    panels = [(f"agent{a + 1}", f"agent {a + 1}", [v[a] for v in attention], 0.0) for a in range(A)]
    if A > 1:
        panels.append(("max_share", "max agent share", [max(v) for v in attention], 1.0 / A))
    groups = []
    for key, label, values, lo in panels:
        edges = bin_edges(values, n_bins, lo, 1.0, binning)
        index = assign_bins(values, edges)
        rows = []
        for k in range(n_bins):
            members = [i for i, b in enumerate(index) if b == k]
            mean, sem = _mean_sem([rouge_l[i] for i in members])
            row = {"bin": k, "lo": edges[k], "hi": edges[k + 1], "n": len(members), "rougeL": mean, "rougeL_sem": sem}
            if compare_rouge_l is not None:
                c_mean, c_sem = _mean_sem([compare_rouge_l[i] for i in members])
                row.update(compare_rougeL=c_mean, compare_rougeL_sem=c_sem,
                           delta=None if mean is None else mean - c_mean)
            rows.append(row)
        groups.append({"key": key, "label": label, "edges": edges, "bins": rows, "index": index})
    return groups


# --------------------------------------------------------------------------------------------
# The analysis
# --------------------------------------------------------------------------------------------


def _rouge_l(language, predictions: Sequence[str], references: Sequence[str]) -> tuple[list[float], dict]:
    """Per-document rougeLsum F1 (percent) and the corpus means in ``rouge()``'s format, scored with
    the model's language settings (as ``evaluate`` scores it)."""
    from agentsum.evaluation.rouge import rouge_for

    per_doc = rouge_for(language, predictions, references, per_document=True)
    n = len(per_doc)
    scores: dict = {"n": n}
    for kind in per_doc[0] if per_doc else ():
        for part, suffix in (("f", ""), ("p", "_p"), ("r", "_r")):
            scores[kind + suffix] = 100.0 * sum(d[kind][part] for d in per_doc) / max(n, 1)
    return [100.0 * d["rougeLsum"]["f"] for d in per_doc], scores


def _model_label(config, given: str | None) -> str:
    if given:
        return given
    a = config.data.agents
    if a == "auto":  # data.agents: auto, each document its own count
        from agentsum.data.dataset import agent_budget

        cap = f", at most {config.data.max_agents}" if config.data.max_agents else ""
        if config.data.agent_split == "speakers":
            return f"multi-agent (one per participant{cap})"
        return f"multi-agent (auto: an agent per {agent_budget(config.data)} tokens{cap})"
    return "single-agent" if a == 1 else f"multi-agent ({a} agents)"


def analyze(checkpoint: str | Path, data: str, *, start: int | None = None, end: int | None = None,
            min_human_label: int | None = None, compare: str | Path | None = None, n_bins: int = 5, binning: str = "width",
            search_overrides: dict | None = None, batch_size: int = 16, name: str | None = None,
            compare_name: str | None = None, progress_factory=None) -> dict:
    """Decode, score and bin; returns the result dict that :func:`write_outputs` writes.

    ``search_overrides`` (e.g. ``{"beam_size": 5}``) change each checkpoint's own search config.
    """
    from agentsum.data.dataset import DataSource, read_examples
    from agentsum.summarizer import Summarizer

    overrides = search_overrides or {}
    summarizer = Summarizer(checkpoint)
    config = summarizer.config
    d = config.data
    if d.agents == "auto":
        # Figure 4 bins every document by the attention of agent 1..A: under data.agents: auto agent k is
        # a different share of each document (and absent from the short ones), so its panels compare
        # nothing alike. A model of auto agents can still be the --compare model (its ROUGE-L only).
        raise AnalysisError(f"{checkpoint}: data.agents is auto (each document its own number of agents); the "
                            f"per-agent bins of Figure 4 need a fixed number of agents")
    label = min_human_label if min_human_label is not None else d.min_human_label
    examples = read_examples(DataSource(str(data), start, end), dataclasses.replace(d, min_human_label=label))
    docs = summarizer.prepare_examples(examples, keep_text=False)
    keep = [i for i, doc in enumerate(docs) if any(doc.agents)]
    other = None
    if compare is not None:
        other = Summarizer(compare)
        c_docs = other.prepare_examples(examples, keep_text=False)
        keep = [i for i in keep if any(c_docs[i].agents)]
        c_docs = [c_docs[i] for i in keep]
    docs = [docs[i] for i in keep]
    if not docs:
        raise AnalysisError(f"no document of {data} has words to summarize")

    try:
        search_config = dataclasses.replace(config.search, **overrides)
    except ValueError as e:
        raise AnalysisError(f"search settings: {e}") from None
    progress = progress_factory(len(docs), "decoding") if progress_factory else None
    tokens, attention = decode_with_attention(summarizer, docs, search_config, batch_size, progress)
    language = summarizer.language
    predictions = [language.summary_text(t) for t in tokens]
    rouge_l, scores = _rouge_l(language, predictions, [x.reference for x in docs])

    result: dict = {
        "checkpoint": str(checkpoint), "data": str(data), "start": start, "end": end,
        "agents": d.agents, "documents": len(docs), "binning": binning, "bins": n_bins,
        "model": {"name": _model_label(config, name), "checkpoint": str(checkpoint), "agents": d.agents,
                  "search": dataclasses.asdict(search_config), "rougeL": scores["rougeLsum"], "scores": scores},
        "compare": None,
    }
    compare_rouge_l = None
    per_doc = [{"id": doc.id, "attention": att, "tokens": len(t), "rougeL": r, "prediction": p,
                "reference": doc.reference} for doc, att, t, r, p in zip(docs, attention, tokens, rouge_l, predictions)]
    if other is not None:
        c_config = other.config
        c_search = dataclasses.replace(c_config.search, **overrides)
        progress = progress_factory(len(c_docs), "decoding (compare)") if progress_factory else None
        c_tokens = other.summarize_documents(c_docs, c_search, batch_size, progress)
        c_language = other.language
        c_predictions = [c_language.summary_text(t) for t in c_tokens]
        compare_rouge_l, c_scores = _rouge_l(c_language, c_predictions, [x.reference for x in c_docs])
        result["compare"] = {"name": _model_label(c_config, compare_name), "checkpoint": str(compare),
                             "agents": c_config.data.agents, "search": dataclasses.asdict(c_search),
                             "rougeL": c_scores["rougeLsum"], "scores": c_scores}
        for row, p, r, doc in zip(per_doc, c_predictions, compare_rouge_l, c_docs):
            row.update(compare_rougeL=r, compare_prediction=p, compare_reference=doc.reference)

    binned = [i for i, a in enumerate(attention) if a is not None]
    result["empty_summaries"] = len(docs) - len(binned)
    result["binned"] = len(binned)
    b_att = [attention[i] for i in binned]
    groups = bin_groups(b_att, [rouge_l[i] for i in binned],
                        None if compare_rouge_l is None else [compare_rouge_l[i] for i in binned], n_bins, binning)
    result["mean_attention"] = [sum(v[a] for v in b_att) / len(b_att) for a in range(len(b_att[0]))]
    for g in groups:
        for j, k in zip(binned, g.pop("index")):
            per_doc[j].setdefault("bins", {})[g["key"]] = k
    result["groups"] = groups
    result["per_document"] = per_doc
    return result


# --------------------------------------------------------------------------------------------
# Outputs
# --------------------------------------------------------------------------------------------


def _fmt(x, digits: int = 2) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def edge_digits(edges: Sequence[float]) -> int:
    """Decimals (2 to 5) needed to tell adjacent distinct edges apart."""
    for digits in range(2, 6):
        if all(f"{a:.{digits}f}" != f"{b:.{digits}f}" for a, b in zip(edges, edges[1:]) if a != b):
            return digits
    return 5


def _bin_label(row: dict, last: bool, digits: int = 2) -> str:
    return f"[{row['lo']:.{digits}f}, {row['hi']:.{digits}f}{']' if last else ')'}"


CSV_FIELDS = ["group", "bin", "lo", "hi", "n", "rougeL", "rougeL_sem", "compare_rougeL", "compare_rougeL_sem", "delta"]


def markdown_table(result: dict) -> str:
    has_c = result["compare"] is not None
    m, c = result["model"], result["compare"]
    lines = ["# ROUGE-L by average agent attention", "",
             f"- model: {m['name']} `{m['checkpoint']}` (ROUGE-L {m['rougeL']:.2f} on all {result['documents']} documents)"]
    if has_c:
        lines.append(f"- compare: {c['name']} `{c['checkpoint']}` (ROUGE-L {c['rougeL']:.2f} on the same documents)")
    span = "" if result["start"] is None and result["end"] is None else f" [{result['start']}:{result['end']}]"
    lines += [f"- data: `{result['data']}`{span}; {result['binned']} summaries binned, "
              f"{result['empty_summaries']} empty summaries left out",
              f"- bins: {result['bins']} ({result['binning']}); ROUGE-L = rougeLsum F1 (%), mean ± standard error",
              "- mean attention per agent: " + ", ".join(f"agent {a + 1} {v:.3f}" for a, v in enumerate(result["mean_attention"])),
              ""]
    for g in result["groups"]:
        lines.append(f"## {g['label']}")
        lines.append("")
        head = ["bin", "documents", f"ROUGE-L {m['name']}"]
        if has_c:
            head += [f"ROUGE-L {c['name']}", "difference"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
        for i, row in enumerate(g["bins"]):
            cells = [_bin_label(row, i == len(g["bins"]) - 1, edge_digits(g["edges"])), str(row["n"]),
                     _fmt(row["rougeL"]) + (f" ± {row['rougeL_sem']:.2f}" if row["rougeL_sem"] is not None else "")]
            if has_c:
                cells += [_fmt(row["compare_rougeL"]) + (f" ± {row['compare_rougeL_sem']:.2f}"
                                                         if row["compare_rougeL_sem"] is not None else ""),
                          "" if row["delta"] is None else f"{row['delta']:+.2f}"]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def write_outputs(out_dir: str | Path, result: dict, dpi: int = 120) -> list[Path]:
    from agentsum.evaluation.evaluate import write_results

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    per_doc = result["per_document"]
    summary = {k: v for k, v in result.items() if k != "per_document"}
    files = [out / "attention_bins.json", out / "attention_bins.csv", out / "attention_bins.md",
             out / "documents.jsonl", out / "attention_bins.png"]
    files[0].write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    with files[1].open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS if result["compare"] else CSV_FIELDS[:7], extrasaction="ignore")
        w.writeheader()
        for g in result["groups"]:
            for row in g["bins"]:
                w.writerow({k: ("" if v is None else round(v, 6) if isinstance(v, float) else v)
                            for k, v in {"group": g["key"], **row}.items()})
    files[2].write_text(markdown_table(result), encoding="utf-8")
    with files[3].open("w", encoding="utf-8") as f:
        for row in per_doc:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    plot_bins(result, files[4], dpi)
    ids = [r["id"] for r in per_doc]
    write_results(out / "model", [r["prediction"] for r in per_doc], [r["reference"] for r in per_doc], ids,
                  result["model"]["scores"])
    if result["compare"] is not None:
        write_results(out / "compare", [r["compare_prediction"] for r in per_doc],
                      [r["compare_reference"] for r in per_doc], ids, result["compare"]["scores"])
    return files


def plot_bins(result: dict, path: str | Path, dpi: int = 120) -> Path:
    """One panel per agent (and max share): bars of mean ROUGE-L per bin, model vs comparison."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = result["groups"]
    has_c = result["compare"] is not None
    n_panels = len(groups)
    ncols = min(n_panels, 3 if n_panels != 4 else 2)
    nrows = math.ceil(n_panels / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 3.9 * nrows), squeeze=False, sharey=True)
    flat = list(axes.flat)
    colors = ("#1f77b4", "#ff7f0e")
    top = max([r[k] + (r.get(k + "_sem") or 0) for g in groups for r in g["bins"]
               for k in ("rougeL", "compare_rougeL") if r.get(k) is not None] + [1.0])
    A = result["agents"]
    for ax, g in zip(flat, groups):
        rows = g["bins"]
        x = list(range(len(rows)))
        width = 0.38 if has_c else 0.7
        series = [("rougeL", result["model"]["name"], colors[0])]
        if has_c:
            series.append(("compare_rougeL", result["compare"]["name"], colors[1]))
        for j, (key, label, color) in enumerate(series):
            offset = (j - (len(series) - 1) / 2) * width
            xs = [i + offset for i, r in zip(x, rows) if r[key] is not None]
            ys = [r[key] for r in rows if r[key] is not None]
            errs = [r[key + "_sem"] or 0.0 for r in rows if r[key] is not None]
            ax.bar(xs, ys, width=width * 0.95, color=color, label=label, yerr=errs, capsize=2,
                   error_kw={"elinewidth": 0.8, "ecolor": "#333333"})
        for i, r in zip(x, rows):
            ax.text(i, top * 1.02, f"n={r['n']}", ha="center", va="bottom", fontsize=7.5,
                    color="#444444" if r["n"] else "#aaaaaa")
        ax.set_xlim(-0.6, len(rows) - 0.4)
        ax.set_xticks(x)
        digits = edge_digits(g["edges"])
        ax.set_xticklabels([f"{r['lo']:.{digits}f}–{r['hi']:.{digits}f}" for r in rows], rotation=30, ha="right",
                           fontsize=8)
        ax.set_ylim(0, top * 1.12)
        if g["key"] == "max_share":
            ax.set_title("Largest agent share", fontsize=11)
            ax.set_xlabel(f"max over agents of average attention\n(1/{A} = equal shares)", fontsize=9)
        else:
            ax.set_title(g["label"].capitalize(), fontsize=11)
            ax.set_xlabel(f"average attention of {g['label']}" + (f" (equal share {1 / A:.2f})" if A > 1 else ""),
                          fontsize=9)
        ax.grid(True, axis="y", alpha=0.3, linewidth=0.6)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    for row in axes:
        row[0].set_ylabel("mean ROUGE-L F1 (%)")
    for ax in flat[n_panels:]:
        ax.set_visible(False)
    handles, labels = flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False, fontsize=9,
               bbox_to_anchor=(0.5, -0.01))
    title = f"ROUGE-L of summaries binned by agent attention — {result['model']['name']}"
    if has_c:
        title += f" vs {result['compare']['name']}"
    fig.suptitle(f"{title}\n{Path(result['data']).name}: {result['binned']} documents, "
                 f"{result['bins']} " + ("equal-width" if result["binning"] == "width" else "equal-count") + " bins", fontsize=11)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=dpi, bbox_inches="tight", facecolor="white")
    plt.close(fig)
    return Path(path)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def add_parser(subparsers):
    from agentsum.options import EPILOG_DATA, add_search_options

    p = subparsers.add_parser(
        "analyze", help="ROUGE-L binned by each agent's average attention (paper Figure 4)", epilog=EPILOG_DATA,
        description="Decode DATA, average every agent's attention g over the tokens of each summary, bin the "
                    "documents by it (one panel per agent) and report the mean ROUGE-L per bin; with --compare, "
                    "the mean ROUGE-L of a second (single-agent) model on the same bins. Writes attention_bins."
                    "{md,csv,json,png}, documents.jsonl and predictions to --out.")
    p.add_argument("--checkpoint", required=True, help="the multi-agent model")
    p.add_argument("--data", required=True, metavar="DATA")
    p.add_argument("--start", type=int, help="first row (0-based)")
    p.add_argument("--end", type=int, help="row after the last")
    p.add_argument("--min-human-label", type=int,
                   help="LCSTS PART II/III: keep pairs scored at least this (default: the checkpoint's data config)")
    p.add_argument("--compare", metavar="CKPT", help="a second model (e.g. single-agent) scored on the same bins")
    p.add_argument("--bins", type=int, default=5, help="bins per panel (default 5)")
    p.add_argument("--binning", choices=("width", "quantile"), default="width",
                   help="equal-width bins on [0, 1] (default) or equal-count bins (quantiles)")
    p.add_argument("--name", help="label of the model (default: multi-agent (N agents))")
    p.add_argument("--compare-name", help="label of the comparison model (default: single-agent)")
    p.add_argument("--out", help="output directory (default: next to the checkpoint, analysis-<data name>)")
    add_search_options(p)
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from agentsum.data.records import DataError
    from agentsum.options import progress, search_overrides
    from agentsum.checkpoint import CheckpointError

    try:
        if args.bins < 1:
            raise AnalysisError(f"--bins must be at least 1, got {args.bins}")
        overrides = search_overrides(args)
        result = analyze(args.checkpoint, args.data, start=args.start, end=args.end,
                         min_human_label=args.min_human_label, compare=args.compare,
                         n_bins=args.bins, binning=args.binning, search_overrides=overrides,
                         batch_size=args.batch_size, name=args.name, compare_name=args.compare_name,
                         progress_factory=progress)
        out = Path(args.out) if args.out else Path(args.checkpoint).parent.parent / f"analysis-{Path(args.data).stem}"
        write_outputs(out, result)
    except (AnalysisError, DataError, CheckpointError) as e:
        print(f"agentsum analyze: error: {e}", file=sys.stderr)
        return 2
    print(markdown_table(result))
    print(f"results in {out}")
    return 0
