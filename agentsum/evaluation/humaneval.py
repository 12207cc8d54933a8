"""``agentsum humaneval make | score``: blinded human evaluation sheets and their scoring (DCA §5.2, Table 5).

The paper's protocol: 100 random test documents; four criteria, (1) non-redundancy, (2) coherence,
(3) focus, (4) overall; two tasks:

* **head-to-head**: the two model summaries in random order, *without* the document or reference;
  judges choose, per criterion, summary 1, summary 2 or a tie;
* **Likert**: the document, and the reference and two model summaries in random order; every
  summary is rated 1 (worst) to 5 (best) on every criterion (the reference is blinded and rated too,
  as in the paper, which gives a human ceiling).

``make`` samples ``--n`` documents present in both prediction files (``predictions.jsonl`` as
written by ``agentsum evaluate``: ``id``, ``prediction``, ``reference``), blinds them and writes, in
``--out``:

* ``h2h.html`` / ``likert.html``: printable, self-contained (inline CSS, no scripts, no network);
* ``h2h.csv`` / ``likert.csv``: one row per document (one HIT), the summaries' text and empty
  rating columns: ``non_redundancy, coherence, focus, overall`` (values ``1``, ``2`` or ``tie``) for
  head-to-head, ``s<k>_<criterion>`` (``1``..``5``) for summary ``k`` in Likert; plus ``judge`` and
  ``comment``;
* ``key.json``: which system is behind every blinded slot. Keep it away from the judges.

Blinding is balanced, not merely random: half the head-to-head items show A first, and the six
orders of (reference, A, B) are used equally often in Likert (up to rounding), then shuffled, so
position bias cancels. The two sheets list the documents in independent random orders, with
independent item names (``H001``..., ``L001``...). All three summaries are displayed through the same
light detokenizer (sentence case, punctuation attached) so the lower-cased tokenized model output
cannot be told from the reference by its format (``--raw`` shows them as stored).

``score`` reads any number of filled CSVs (one per judge, or a merged file with a ``judge`` column;
Mechanical Turk batch results with ``Input.``/``Answer.`` columns and ``WorkerId`` work too),
un-blinds them with the key and reports per criterion:

* head-to-head: A wins / B wins / ties counted over judgments (as Table 5), and a **two-sided exact
  sign test** (binomial, p = 1/2) over documents: a document counts for A when more of its judges
  preferred A than B, for B in the opposite case, and is dropped when they balance (ties dropped).
  ``p_sign_judgments``, the same test over individual judgments, is also given; it treats the
  judges of one document as independent, which they are not;
* Likert: the mean score of A, B and the reference over all judgments (as Table 5), and a
  **two-sided Wilcoxon signed-rank test** over documents on the judges' mean A - B difference
  (zero differences dropped; ``scipy.stats.wilcoxon``, exact for small samples without ties,
  normal approximation otherwise).

Invalid or missing cells are reported as ``file:row:column``, rows numbered as a spreadsheet shows
them (the header is row 1). ``--skip-incomplete`` drops rows with empty rating cells instead.
"""

from __future__ import annotations

import csv
import hashlib
import html
import itertools
import json
import math
import os
import random
import re
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from agentsum.data.records import DataError, json_lines

__all__ = ["CRITERIA", "HumanEvalError", "read_predictions", "make_sheets", "read_sheet", "score_sheets",
           "format_table", "display_summary", "add_parser", "run"]

KEY_FORMAT = "agentsum-humaneval/1"

#: (column name, label, question) in the paper's order.
CRITERIA = (
    ("non_redundancy", "Non-redundancy", "Fewer of the same ideas are repeated."),
    ("coherence", "Coherence", "Ideas are expressed clearly."),
    ("focus", "Focus", "The main ideas of the document are shared while avoiding superfluous details."),
    ("overall", "Overall", "The summary effectively communicates the article's content."),
)
CRITERION_NAMES = tuple(c[0] for c in CRITERIA)
TIE_VALUES = {"tie", "t", "=", "0", "same", "equal"}


class HumanEvalError(ValueError):
    pass


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


def read_predictions(path: str | Path) -> dict[str, dict]:
    """``predictions.jsonl`` (id, prediction, reference) -> {id: record}; errors name file:line."""
    path = Path(path)
    if not path.is_file():
        raise HumanEvalError(f"{path}: not found (expected the predictions.jsonl that `agentsum evaluate` writes)")
    out: dict[str, dict] = {}
    try:
        rows = list(json_lines(path))
    except DataError as e:
        raise HumanEvalError(str(e)) from None
    for where, obj in rows:
        for field in ("id", "prediction"):
            if field not in obj:
                raise HumanEvalError(f"{where}: field {field!r} missing")
        if not isinstance(obj["prediction"], str):
            raise HumanEvalError(f"{where}: 'prediction' is not a string")
        doc_id = str(obj["id"])
        if doc_id in out:
            raise HumanEvalError(f"{where}: id {doc_id!r} appears twice")
        out[doc_id] = {"prediction": obj["prediction"], "reference": obj.get("reference")}
    if not out:
        raise HumanEvalError(f"{path}: no predictions (empty file)")
    return out


_SPACE_BEFORE = re.compile(r" ([.,!?;:%)\]}]|'s\b|'re\b|'ve\b|'ll\b|'d\b|'m\b|n't\b)", re.IGNORECASE)
_SPACE_AFTER = re.compile(r"([(\[{$£]) ")


def _detokenize_line(line: str) -> str:
    tokens = line.split()
    out, open_quote = [], False
    for tok in tokens:
        if tok == '"':
            if open_quote:
                out[-1:] = [out[-1] + '"'] if out else ['"']
            else:
                out.append('"\u0000')  # glue to the next token
            open_quote = not open_quote
            continue
        if out and out[-1].endswith("\u0000"):
            out[-1] = out[-1][:-1] + tok
        else:
            out.append(tok)
    text = " ".join(t.replace("\u0000", "") for t in out)
    text = _SPACE_BEFORE.sub(r"\1", text)
    text = _SPACE_AFTER.sub(r"\1", text)
    for i, ch in enumerate(text):
        if ch.isalpha():
            return text[:i] + ch.upper() + text[i + 1:]
        if ch not in "\"'([{":
            break
    return text


def display_summary(text: str, raw: bool = False) -> str:
    """A summary as judges see it: one sentence per line in, one paragraph out.

    Unless ``raw``, tokenized English is detokenized (punctuation and clitics attached, sentence
    case); text without ASCII letters (Chinese) only loses the spaces between CJK characters.
    """
    lines = [ln.strip() for ln in (text or "").split("\n") if ln.strip()]
    if raw:
        return " ".join(lines)
    if not any("a" <= ch.lower() <= "z" for ch in text or ""):
        return "".join("".join(ln.split()) for ln in lines)
    return " ".join(_detokenize_line(ln) for ln in lines)


def _fingerprint(text: str) -> str:
    """Whitespace-insensitive hash of a displayed summary (spreadsheets rewrite line breaks)."""
    return hashlib.sha1(" ".join(text.split()).encode("utf-8")).hexdigest()[:12]


# --------------------------------------------------------------------------------------------
# make
# --------------------------------------------------------------------------------------------


def _balanced_orders(items: Sequence, n: int, rng: random.Random) -> list[tuple]:
    """``n`` permutations of ``items``, each permutation used equally often (up to rounding), shuffled."""
    perms = list(itertools.permutations(items))
    rng.shuffle(perms)  # which permutations get the extra copies when n is not a multiple
    orders = [perms[i % len(perms)] for i in range(n)]
    rng.shuffle(orders)
    return orders


def make_sheets(a_path: str | Path, b_path: str | Path, data: str, out_dir: str | Path, *, n: int = 100,
                seed: int = 0, name_a: str = "A", name_b: str = "B", raw: bool = False,
                article_field: str = "article", summary_field: str = "summary", id_field: str = "id",
                start: int | None = None, end: int | None = None) -> dict:
    """Write the sheets and ``key.json``; returns the key."""
    from agentsum.data.sources import load_examples

    if n < 1:
        raise HumanEvalError(f"--n must be at least 1, got {n}")
    preds = {"A": read_predictions(a_path), "B": read_predictions(b_path)}
    examples = load_examples(data, start=start, end=end, article_field=article_field, summary_field=summary_field,
                             id_field=id_field, require_summary=False)
    articles: dict[str, str] = {}
    for e in examples:
        articles.setdefault(e.id, e.article)
    common = [i for i in preds["A"] if i in preds["B"]]
    if not common:
        raise HumanEvalError(f"{a_path} and {b_path} have no document id in common")
    usable = [i for i in common if i in articles]
    if not usable:
        raise HumanEvalError(f"none of the {len(common)} documents of both prediction files is in {data} "
                             f"(ids such as {common[0]!r}); pass the corpus they were decoded from")
    for i in usable:
        ref_a, ref_b = preds["A"][i]["reference"], preds["B"][i]["reference"]
        if not ref_a and not ref_b:
            raise HumanEvalError(f"{a_path}: document {i!r} has no reference")
    rng = random.Random(seed)
    chosen = rng.sample(usable, min(n, len(usable)))
    if len(chosen) < n:
        print(f"agentsum humaneval: warning: only {len(chosen)} documents are in both prediction files and "
              f"{data}; using all of them", file=sys.stderr)

    def text_of(doc_id: str, system: str) -> str:
        if system == "reference":
            return display_summary(preds["A"][doc_id]["reference"] or preds["B"][doc_id]["reference"], raw)
        return display_summary(preds[system][doc_id]["prediction"], raw)

    h2h_docs = list(chosen)
    rng.shuffle(h2h_docs)
    h2h_orders = _balanced_orders(("A", "B"), len(h2h_docs), rng)
    likert_docs = list(chosen)
    rng.shuffle(likert_docs)
    likert_orders = _balanced_orders(("reference", "A", "B"), len(likert_docs), rng)
    width = max(3, len(str(len(chosen))))

    key: dict = {
        "format": KEY_FORMAT, "seed": seed, "n": len(chosen), "data": str(data), "raw": raw,
        "systems": {"A": {"name": name_a, "predictions": str(a_path)}, "B": {"name": name_b, "predictions": str(b_path)}},
        "criteria": list(CRITERION_NAMES),
        "h2h": {}, "likert": {},
    }
    h2h_rows, likert_rows = [], []
    for k, (doc_id, order) in enumerate(zip(h2h_docs, h2h_orders), 1):
        item = f"H{k:0{width}d}"
        texts = [text_of(doc_id, s) for s in order]
        key["h2h"][item] = {"id": doc_id, "order": list(order), "fingerprints": [_fingerprint(t) for t in texts]}
        h2h_rows.append({"item": item, "texts": texts})
    for k, (doc_id, order) in enumerate(zip(likert_docs, likert_orders), 1):
        item = f"L{k:0{width}d}"
        texts = [text_of(doc_id, s) for s in order]
        key["likert"][item] = {"id": doc_id, "order": list(order), "fingerprints": [_fingerprint(t) for t in texts]}
        likert_rows.append({"item": item, "document": articles[doc_id].strip(), "texts": texts})

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _write_h2h_csv(out / "h2h.csv", h2h_rows)
    _write_likert_csv(out / "likert.csv", likert_rows)
    (out / "h2h.html").write_text(_h2h_html(h2h_rows), encoding="utf-8")
    (out / "likert.html").write_text(_likert_html(likert_rows), encoding="utf-8")
    key_path = out / "key.json"
    key_path.write_text(json.dumps(key, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    try:
        os.chmod(key_path, 0o600)
    except OSError:
        pass
    return key


def h2h_columns() -> list[str]:
    return ["item", "summary_1", "summary_2", *CRITERION_NAMES, "judge", "comment"]


def likert_columns(slots: int = 3) -> list[str]:
    ratings = [f"s{k}_{c}" for k in range(1, slots + 1) for c in CRITERION_NAMES]
    return ["item", "document", *[f"summary_{k}" for k in range(1, slots + 1)], *ratings, "judge", "comment"]


def _write_h2h_csv(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(h2h_columns())
        for r in rows:
            w.writerow([r["item"], *r["texts"], *[""] * len(CRITERIA), "", ""])


def _write_likert_csv(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(likert_columns(3))
        for r in rows:
            w.writerow([r["item"], r["document"], *r["texts"], *[""] * (3 * len(CRITERIA)), "", ""])


# --------------------------------------------------------------------------------------------
# HTML sheets
# --------------------------------------------------------------------------------------------

_CSS = """
body { font-family: Georgia, 'Times New Roman', serif; max-width: 58rem; margin: 2rem auto; padding: 0 1rem;
       color: #222; line-height: 1.45; }
h1 { font-size: 1.5rem; margin-bottom: .2rem; }
.meta { color: #555; font-size: .9rem; }
.instructions { background: #f5f5f0; border: 1px solid #ddd; padding: .8rem 1.2rem; margin: 1rem 0 2rem; }
.instructions dt { font-weight: bold; }
.instructions dd { margin: 0 0 .4rem 1rem; }
.item { border-top: 3px solid #444; padding-top: .6rem; margin-top: 2.5rem; }
.item h2 { font-size: 1.1rem; margin: 0 0 .6rem; font-family: Helvetica, Arial, sans-serif; }
.document { border: 1px solid #ccc; background: #fafafa; padding: .6rem .9rem; font-size: .92rem;
            white-space: pre-wrap; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; }
.summary { border: 1px solid #999; border-radius: 4px; padding: .5rem .8rem; margin: .6rem 0; }
.summary h3 { font-size: .95rem; margin: 0 0 .3rem; font-family: Helvetica, Arial, sans-serif; }
table.rate { border-collapse: collapse; margin: .5rem 0 0; font-family: Helvetica, Arial, sans-serif;
             font-size: .88rem; }
table.rate th, table.rate td { border: 1px solid #bbb; padding: .25rem .6rem; text-align: center; }
table.rate th:first-child, table.rate td:first-child { text-align: left; }
.box { display: inline-block; width: .9em; height: .9em; border: 1.5px solid #333; vertical-align: middle;
       margin-right: .25em; }
.judge { font-family: Helvetica, Arial, sans-serif; margin: 1rem 0; }
@media print {
  body { margin: 0; max-width: none; font-size: 11pt; }
  .item { page-break-before: always; break-before: page; border-top: none; }
  .document { background: none; }
}
"""


def _page(title: str, intro: str, body: str) -> str:
    criteria = "".join(f"<dt>{html.escape(label)}</dt><dd>{html.escape(q)}</dd>" for _, label, q in CRITERIA)
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>\n"
            f"<h1>{html.escape(title)}</h1>\n"
            f"<div class=\"judge\">Judge: ____________________________ &nbsp; Date: ______________</div>\n"
            f"<div class=\"instructions\">{intro}<dl>{criteria}</dl></div>\n{body}</body></html>\n")


def _box(label: str) -> str:
    return f"<span class=\"box\"></span>{html.escape(label)}"


def _h2h_html(rows: list[dict]) -> str:
    intro = ("<p>Each item shows two summaries of the same news article, in random order. For each criterion, "
             "tick the better summary, or <em>tie</em> when neither is better. Judge the summaries on their own; "
             "the article is not shown. Enter your answers in <code>h2h.csv</code> (1, 2 or tie).</p>")
    parts = []
    for r in rows:
        cards = "".join(f"<div class=\"summary\"><h3>Summary {k}</h3><p>{html.escape(t)}</p></div>"
                        for k, t in enumerate(r["texts"], 1))
        rates = "".join(f"<tr><td>{html.escape(label)}</td><td>{_box('1')}</td><td>{_box('2')}</td>"
                        f"<td>{_box('tie')}</td></tr>" for _, label, _ in CRITERIA)
        parts.append(f"<section class=\"item\" id=\"{r['item']}\"><h2>Item {r['item']}</h2>"
                     f"<div class=\"pair\">{cards}</div>"
                     f"<table class=\"rate\"><tr><th>Criterion</th><th>Summary 1</th><th>Summary 2</th>"
                     f"<th>Tie</th></tr>{rates}</table></section>\n")
    return _page(f"Summary comparison: {len(rows)} items", intro, "".join(parts))


def _likert_html(rows: list[dict]) -> str:
    intro = ("<p>Each item shows a news article and several summaries of it, in random order. Read the article, "
             "then rate every summary on each criterion from 1 (worst) to 5 (best). Enter your ratings in "
             "<code>likert.csv</code> (column s<em>k</em>_<em>criterion</em> for summary <em>k</em>).</p>")
    parts = []
    for r in rows:
        cards = []
        for k, t in enumerate(r["texts"], 1):
            rates = "".join(f"<tr><td>{html.escape(label)}</td>"
                            + "".join(f"<td>{_box(str(v))}</td>" for v in range(1, 6)) + "</tr>"
                            for _, label, _ in CRITERIA)
            cards.append(f"<div class=\"summary\"><h3>Summary {k}</h3><p>{html.escape(t)}</p>"
                         f"<table class=\"rate\"><tr><th>Criterion</th><th>1 (worst)</th><th>2</th><th>3</th>"
                         f"<th>4</th><th>5 (best)</th></tr>{rates}</table></div>")
        parts.append(f"<section class=\"item\" id=\"{r['item']}\"><h2>Item {r['item']}</h2>"
                     f"<h3>Article</h3><div class=\"document\">{html.escape(r['document'])}</div>"
                     f"{''.join(cards)}</section>\n")
    return _page(f"Summary rating: {len(rows)} items", intro, "".join(parts))


# --------------------------------------------------------------------------------------------
# score
# --------------------------------------------------------------------------------------------


def load_key(path: str | Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise HumanEvalError(f"{path}: key not found (written by `agentsum humaneval make`)")
    try:
        key = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise HumanEvalError(f"{path}: invalid JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(key, dict) or key.get("format") != KEY_FORMAT:
        raise HumanEvalError(f"{path}: not a humaneval key (format {KEY_FORMAT!r} expected)")
    return key


def _normalise_header(name: str) -> str:
    name = (name or "").strip().lstrip("\ufeff")
    for prefix in ("Input.", "Answer."):  # Mechanical Turk batch results
        if name.startswith(prefix):
            name = name[len(prefix):]
    return "judge" if name == "WorkerId" else name


def read_sheet(path: str | Path, key: dict, skip_incomplete: bool = False) -> tuple[str, list[dict], int]:
    """A filled CSV -> (kind 'h2h' | 'likert', judgments, rows skipped as incomplete).

    A judgment: {"item", "id", "judge", "where", "ratings": {criterion: value}} where value is the
    system preferred ('A', 'B' or 'tie') for head-to-head and {system: score} for Likert.
    """
    path = Path(path)
    if not path.is_file():
        raise HumanEvalError(f"{path}: not found")
    with path.open(newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f)
        try:
            header = [_normalise_header(h) for h in next(reader)]
        except StopIteration:
            raise HumanEvalError(f"{path}: empty file") from None
        except csv.Error as e:
            raise HumanEvalError(f"{path}:1: unreadable CSV ({e})") from None
        cols = {h: i for i, h in enumerate(header) if h}
        if "item" not in cols:
            raise HumanEvalError(f"{path}:1: no 'item' column (header: {', '.join(header)})")
        if all(f"s1_{c}" in cols for c in CRITERION_NAMES):
            kind = "likert"
        elif all(c in cols for c in CRITERION_NAMES):
            kind = "h2h"
        else:
            raise HumanEvalError(f"{path}:1: neither a head-to-head sheet (columns {', '.join(CRITERION_NAMES)}) "
                                 f"nor a Likert sheet (columns s1_{CRITERION_NAMES[0]}, ...)")
        table = key[kind]
        slots = len(next(iter(table.values()))["order"]) if table else (2 if kind == "h2h" else 3)
        if kind == "likert":
            missing = [f"s{k}_{c}" for k in range(1, slots + 1) for c in CRITERION_NAMES if f"s{k}_{c}" not in cols]
            if missing:
                raise HumanEvalError(f"{path}:1: Likert columns missing: {', '.join(missing)}")
        judgments, skipped = [], 0
        default_judge = path.stem
        try:
            for row_no, row in enumerate(reader, 2):
                if not any(cell.strip() for cell in row):
                    continue

                def cell(name: str) -> str:
                    i = cols[name]
                    return row[i].strip() if i < len(row) else ""

                item = cell("item")
                where = f"{path}:{row_no}"
                if item not in table:
                    other = "likert" if kind == "h2h" else "h2h"
                    hint = (f" (a {other} item: is this the other sheet?)" if item in key[other]
                            else " (a sheet from another `humaneval make`?)")
                    raise HumanEvalError(f"{where}:item: unknown item {item!r}{hint}")
                entry = table[item]
                for k in range(1, slots + 1):
                    name = f"summary_{k}"
                    if name in cols and cell(name) and _fingerprint(cell(name)) != entry["fingerprints"][k - 1]:
                        raise HumanEvalError(f"{where}:{name}: the text differs from item {item} of the sheet this "
                                             f"key was made with (wrong key, or the row was edited)")
                rating_cols = (list(CRITERION_NAMES) if kind == "h2h"
                               else [f"s{k}_{c}" for k in range(1, slots + 1) for c in CRITERION_NAMES])
                empty = [c for c in rating_cols if not cell(c)]
                if empty and skip_incomplete:
                    skipped += 1
                    continue
                if empty:
                    raise HumanEvalError(f"{where}:{empty[0]}: missing value for item {item}"
                                         + (f" ({len(empty)} empty cells in this row)" if len(empty) > 1 else ""))
                judge = cell("judge") if "judge" in cols and cell("judge") else default_judge
                order = entry["order"]
                ratings: dict = {}
                if kind == "h2h":
                    for c in CRITERION_NAMES:
                        v = cell(c).lower()
                        if v in TIE_VALUES:
                            ratings[c] = "tie"
                        elif v in ("1", "2", "1.0", "2.0"):
                            ratings[c] = order[int(float(v)) - 1]
                        else:
                            raise HumanEvalError(f"{where}:{c}: expected 1, 2 or tie, got {cell(c)!r}")
                else:
                    for c in CRITERION_NAMES:
                        ratings[c] = {}
                        for k in range(1, slots + 1):
                            name = f"s{k}_{c}"
                            v = cell(name)
                            try:
                                x = float(v)
                            except ValueError:
                                x = math.nan
                            if not (math.isfinite(x) and x == int(x) and 1 <= x <= 5):
                                raise HumanEvalError(f"{where}:{name}: expected an integer from 1 to 5, got {v!r}")
                            ratings[c][order[k - 1]] = int(x)
                judgments.append({"item": item, "id": entry["id"], "judge": judge, "where": where,
                                  "ratings": ratings})
        except csv.Error as e:
            raise HumanEvalError(f"{path}:{reader.line_num}: unreadable CSV ({e})") from None
    return kind, judgments, skipped


def _sign_test(k: int, n: int) -> float:
    """Two-sided exact binomial test of k successes in n trials against p = 1/2 (1.0 when n = 0)."""
    if n == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(k, n, 0.5, alternative="two-sided").pvalue)


def _wilcoxon(differences: Sequence[float]) -> float:
    """Two-sided Wilcoxon signed-rank test of paired differences (zeros dropped; 1.0 when all are 0)."""
    nonzero = [d for d in differences if d != 0]
    if not nonzero:
        return 1.0
    from scipy.stats import wilcoxon

    return float(wilcoxon(nonzero, zero_method="wilcox", alternative="two-sided").pvalue)


def score_sheets(key: dict, sheets: Sequence[str | Path], skip_incomplete: bool = False) -> dict:
    """Un-blind and aggregate the filled sheets (see the module docstring for the statistics)."""
    if not sheets:
        raise HumanEvalError("no sheets given")
    by_kind: dict[str, list[dict]] = {"h2h": [], "likert": []}
    seen: dict[tuple, str] = {}
    skipped = 0
    for path in sheets:
        kind, judgments, n_skipped = read_sheet(path, key, skip_incomplete)
        skipped += n_skipped
        for j in judgments:
            k = (kind, j["judge"], j["item"])
            if k in seen:
                raise HumanEvalError(f"{j['where']}: item {j['item']} rated twice by judge {j['judge']!r} "
                                     f"(also at {seen[k]}); give each judge a 'judge' value or their own file")
            seen[k] = j["where"]
        by_kind[kind].extend(judgments)

    result: dict = {
        "systems": key["systems"], "criteria": list(CRITERION_NAMES), "skipped_incomplete_rows": skipped,
        "tests": {
            "head_to_head": "two-sided exact sign test (binomial, p=1/2) over documents; a document counts for the "
                            "system more of its judges preferred, documents where they balance are dropped",
            "likert": "two-sided Wilcoxon signed-rank test over documents on the judges' mean A-B score difference, "
                      "zero differences dropped (scipy.stats.wilcoxon)",
        },
        "head_to_head": None, "likert": None,
    }
    h2h = by_kind["h2h"]
    if h2h:
        res = {"judgments": len(h2h), "documents": len({j["id"] for j in h2h}),
               "judges": sorted({j["judge"] for j in h2h})}
        for c in CRITERION_NAMES:
            votes = [j["ratings"][c] for j in h2h]
            net: dict[str, int] = defaultdict(int)
            for j in h2h:
                net[j["id"]] += {"A": 1, "B": -1, "tie": 0}[j["ratings"][c]]
            a_docs = sum(1 for v in net.values() if v > 0)
            b_docs = sum(1 for v in net.values() if v < 0)
            a, b, t = votes.count("A"), votes.count("B"), votes.count("tie")
            res[c] = {"A_wins": a, "B_wins": b, "ties": t,
                      "documents_A": a_docs, "documents_B": b_docs, "documents_even": len(net) - a_docs - b_docs,
                      "p_sign": _sign_test(a_docs, a_docs + b_docs),
                      "p_sign_judgments": _sign_test(a, a + b)}
        result["head_to_head"] = res
    likert = by_kind["likert"]
    if likert:
        systems = sorted({s for j in likert for s in j["ratings"][CRITERION_NAMES[0]]},
                         key=lambda s: ("A", "B", "reference").index(s) if s in ("A", "B", "reference") else 9)
        res = {"judgments": len(likert), "documents": len({j["id"] for j in likert}),
               "judges": sorted({j["judge"] for j in likert}), "systems": systems}
        for c in CRITERION_NAMES:
            means = {s: sum(j["ratings"][c][s] for j in likert) / len(likert) for s in systems}
            per_doc: dict[str, list[float]] = defaultdict(list)
            for j in likert:
                per_doc[j["id"]].append(j["ratings"][c]["A"] - j["ratings"][c]["B"])
            diffs = [sum(v) / len(v) for v in per_doc.values()]
            res[c] = {"mean": means, "mean_difference": sum(diffs) / len(diffs),
                      "documents_A_higher": sum(1 for d in diffs if d > 0),
                      "documents_B_higher": sum(1 for d in diffs if d < 0),
                      "p_wilcoxon": _wilcoxon(diffs)}
        result["likert"] = res
    return result


def _p(p: float) -> str:
    return f"{p:.2g}" if p < 0.001 else f"{p:.3f}"


def format_table(result: dict, alpha: float = 0.05) -> str:
    """A plain-text table in the layout of the paper's Table 5 (* marks p < alpha)."""
    sys_a, sys_b = result["systems"]["A"]["name"], result["systems"]["B"]["name"]
    lines = [f"A = {sys_a} ({result['systems']['A']['predictions']})",
             f"B = {sys_b} ({result['systems']['B']['predictions']})"]
    h2h, lik = result["head_to_head"], result["likert"]
    def judges(n: int) -> str:
        return f"{n} judge" + ("" if n == 1 else "s")

    if h2h:
        lines.append(f"head-to-head: {h2h['judgments']} judgments of {h2h['documents']} documents by "
                     f"{judges(len(h2h['judges']))}")
    if lik:
        lines.append(f"Likert: {lik['judgments']} rated items ({lik['documents']} documents) by "
                     f"{judges(len(lik['judges']))}")
    if result.get("skipped_incomplete_rows"):
        lines.append(f"({result['skipped_incomplete_rows']} incomplete rows skipped)")
    lines.append("")
    short = {"A": sys_a if len(sys_a) <= 6 else "A", "B": sys_b if len(sys_b) <= 6 else "B", "reference": "ref"}
    head1, head2 = f"{'':16}", f"{'criterion':16}"
    if h2h:
        head1 += f"{'Head-to-head':^36}"
        head2 += f"{short['A']:>7}{short['B']:>7}{'=':>7}{'p sign':>13}  "
    likert_systems = lik["systems"] if lik else []
    if lik:
        head1 += f"{'Score based (1-5)':^{8 * len(likert_systems) + 14}}"
        head2 += "".join(f"{short.get(s, s):>8}" for s in likert_systems) + f"{'p Wilcoxon':>14}"
    lines += [head1.rstrip(), head2.rstrip(), "-" * len(head2.rstrip())]
    for c, label, _ in CRITERIA:
        line = f"{label.lower():16}"
        if h2h:
            r = h2h[c]
            star = "*" if r["p_sign"] < alpha else " "
            line += f"{r['A_wins']:>7}{r['B_wins']:>7}{r['ties']:>7}{_p(r['p_sign']):>12}{star}  "
        if lik:
            r = lik[c]
            star = "*" if r["p_wilcoxon"] < alpha else " "
            line += "".join(f"{r['mean'][s]:>8.3f}" for s in likert_systems) + f"{_p(r['p_wilcoxon']):>13}{star}"
        lines.append(line.rstrip())
    lines.append("")
    if h2h:
        lines.append("p sign: " + result["tests"]["head_to_head"] + ".")
    if lik:
        lines.append("p Wilcoxon: " + result["tests"]["likert"] + ".")
    lines.append(f"* p < {alpha}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def add_parser(subparsers):
    p = subparsers.add_parser(
        "humaneval", help="blinded human evaluation sheets and their scoring (paper Table 5)",
        description="`make` writes blinded head-to-head and Likert sheets (HTML and CSV) and a private key; "
                    "`score` un-blinds filled CSVs and prints wins/ties/losses, mean scores and significance.")
    sub = p.add_subparsers(dest="humaneval_command", required=True)
    m = sub.add_parser("make", help="write blinded sheets and key.json",
                       description="Sample documents decoded by both systems and write h2h.{html,csv}, "
                                   "likert.{html,csv} and key.json to --out.")
    m.add_argument("--a", required=True, metavar="PRED_A", help="predictions.jsonl of system A")
    m.add_argument("--b", required=True, metavar="PRED_B", help="predictions.jsonl of system B")
    m.add_argument("--data", required=True, metavar="DATA", help="the corpus both were decoded from (for the articles)")
    m.add_argument("--start", type=int, help="first row of DATA to read (0-based)")
    m.add_argument("--end", type=int, help="row after the last")
    m.add_argument("--n", type=int, default=100, help="documents to sample (default 100, as the paper)")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--name-a", default="A", help="label of system A in the scores (default A)")
    m.add_argument("--name-b", default="B", help="label of system B in the scores (default B)")
    m.add_argument("--article-field", default="article")
    m.add_argument("--summary-field", default="summary")
    m.add_argument("--id-field", default="id")
    m.add_argument("--raw", action="store_true", help="show summaries as stored (no detokenization)")
    m.add_argument("--out", required=True, metavar="DIR")
    s = sub.add_parser("score", help="un-blind filled sheets and test significance",
                       description="Read filled h2h/likert CSVs (any number, any mix; one per judge or with a "
                                   "'judge' column) and report the Table 5 numbers with sign / Wilcoxon tests.")
    s.add_argument("--key", required=True, help="key.json written by `make`")
    s.add_argument("--sheets", required=True, nargs="+", metavar="CSV")
    s.add_argument("--skip-incomplete", action="store_true", help="skip rows with empty rating cells")
    s.add_argument("--alpha", type=float, default=0.05, help="significance level marked with * (default 0.05)")
    s.add_argument("--out", help="JSON results (default: humaneval_scores.json next to the key)")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    try:
        if args.humaneval_command == "make":
            key = make_sheets(args.a, args.b, args.data, args.out, n=args.n, seed=args.seed, name_a=args.name_a,
                              name_b=args.name_b, raw=args.raw, article_field=args.article_field,
                              summary_field=args.summary_field, id_field=args.id_field,
                              start=args.start, end=args.end)
            out = Path(args.out)
            print(f"{key['n']} documents: {out / 'h2h.html'}, {out / 'h2h.csv'}, {out / 'likert.html'}, "
                  f"{out / 'likert.csv'}")
            print(f"key (do not give it to the judges): {out / 'key.json'}")
            return 0
        key = load_key(args.key)
        result = score_sheets(key, args.sheets, args.skip_incomplete)
        out = Path(args.out) if args.out else Path(args.key).parent / "humaneval_scores.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(format_table(result, args.alpha))
        print(f"results in {out}")
        return 0
    except (HumanEvalError, DataError) as e:
        print(f"agentsum humaneval {args.humaneval_command}: error: {e}", file=sys.stderr)
        return 2
