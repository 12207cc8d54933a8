"""Reading article/summary corpora: JSON Lines, JSON arrays (SAMSum), CNN/DailyMail ``.story`` files,
Hugging Face. LCSTS has its own readers (:mod:`agentsum.data.lcsts`); :mod:`agentsum.data.sources`
picks the reader for a corpus name.

Every reader yields :class:`Example` records carrying their ``origin`` ("file:line") and every
problem is a :class:`~agentsum.data.records.DataError` naming the file, the line and the field, so
a bad row in a corpus of 300k can be found without a debugger. ``skip_bad=True`` turns those errors
into skipped rows counted in a :class:`~agentsum.data.records.ReadStats` the caller passes in (the
one skip loop is :func:`agentsum.data.records.keep_good`).

Rows whose article is empty (or, with ``require_summary``, whose summary is empty) count as bad:
CNN/DailyMail has a few hundred empty articles and training on them only teaches hallucination.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentsum.data.records import (DataError, ReadStats, decode_utf8, json_object, jsonl_rows, keep_good, open_binary,
                                   require_file)

__all__ = ["Example", "FIELD_ALIASES", "parse_hf_spec", "read_hf", "read_json_array", "read_jsonl", "read_stories",
           "read_story", "read_text_file"]

@dataclass(frozen=True)
class Example:
    """One document with its reference summary ("" when none is required)."""

    id: str
    article: str
    summary: str
    origin: str


def _check_text(value: Any, name: str, where: str, *, required: bool) -> str:
    """The field's text; "" for a missing optional field; DataError when unusable."""
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise DataError(f"{where}: field {name!r} is {type(value).__name__}, expected a string")
    if required and not value.strip():
        raise DataError(f"{where}: field {name!r} is empty")
    return value


#: Field names other public corpora use for what a default field name means: SAMSum (Gliwa et al.,
#: 2019) and DialogSum name the article ``dialogue`` (DialogSum's id is ``fname``); CNN/DailyMail on
#: Hugging Face names the summary ``highlights``. Used only when the configured name is the default
#: and the row lacks it, so an explicit ``data.article_field`` always wins.
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "article": ("dialogue",),
    "summary": ("highlights",),
    "highlights": ("summary",),
    "id": ("fname",),
}


def _field_in(row: dict[str, Any], name: str) -> str:
    """``name``, or the alias the row has instead (see :data:`FIELD_ALIASES`)."""
    if name in row:
        return name
    return next((alias for alias in FIELD_ALIASES.get(name, ()) if alias in row), name)


def _example_from_row(
    row: dict[str, Any],
    where: str,
    default_id: str,
    fields: tuple[str, str, str],
    require_summary: bool,
) -> Example:
    """Validate a JSONL object or HF row; ``fields`` = (article, summary, id) field names."""
    article_field, summary_field, id_field = (_field_in(row, name) for name in fields)
    for name, required in ((article_field, True), (summary_field, require_summary)):
        if required and name not in row:
            present = ", ".join(row) or "none"
            raise DataError(f"{where}: field {name!r} missing (fields present: {present})")
    article = _check_text(row[article_field], article_field, where, required=True)
    summary = _check_text(row.get(summary_field), summary_field, where, required=require_summary)
    raw_id = row.get(id_field)
    if raw_id is None:
        doc_id = default_id
    elif isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool):
        doc_id = str(raw_id)
    else:
        raise DataError(f"{where}: field {id_field!r} is {type(raw_id).__name__}, expected a string")
    return Example(id=doc_id, article=article, summary=summary, origin=where)


def read_jsonl(
    path: str | Path,
    article_field: str = "article",
    summary_field: str = "summary",
    id_field: str = "id",
    skip_bad: bool = False,
    require_summary: bool = True,
    stats: ReadStats | None = None,
) -> Iterator[Example]:
    """Examples from a JSON Lines file (``.gz`` is decompressed), one object per non-blank line.

    Lines are decoded one by one so an invalid byte is reported with its line number. A missing
    id becomes ``"{file name}:{line}"``, which is unique and points back at the row. A missing
    file raises here, not at the first ``next()``.
    """
    path = Path(path)
    require_file(path)
    fields = (article_field, summary_field, id_field)

    def example(where: str, raw: bytes) -> Example:
        line_no = where.rsplit(":", 1)[1]
        return _example_from_row(json_object(raw, where), where, f"{path.name}:{line_no}", fields, require_summary)

    return keep_good(jsonl_rows(path), example, skip_bad, stats if stats is not None else ReadStats())


def read_json_array(
    path: str | Path,
    article_field: str = "article",
    summary_field: str = "summary",
    id_field: str = "id",
    skip_bad: bool = False,
    require_summary: bool = True,
    stats: ReadStats | None = None,
) -> Iterator[Example]:
    """Examples from a ``.json`` file holding one JSON array of objects: the layout of the original
    SAMSum release (``train.json``, ``val.json``, ``test.json`` with ``id``, ``dialogue``,
    ``summary``). Errors name the line on which the bad object starts."""
    path = Path(path)
    require_file(path)
    with open_binary(path) as handle:
        text = decode_utf8(handle.read(), str(path))
    fields = (article_field, summary_field, id_field)

    def example(where: str, item: tuple[int, Any]) -> Example:
        index, row = item
        if not isinstance(row, dict):
            raise DataError(f"{where}: expected a JSON object, got {type(row).__name__}")
        return _example_from_row(row, where, f"{path.name}:{index}", fields, require_summary)

    return keep_good(_json_array_rows(path, text), example, skip_bad, stats if stats is not None else ReadStats())


def _json_array_rows(path: Path, text: str) -> Iterator[tuple[str, tuple[int, Any]]]:
    """("file:line", (index, value)) of every element of the array; a syntax error stops reading
    (there is no line to resume at)."""
    decoder = json.JSONDecoder()
    counted = [0, 1]  # (position, line there): lines are counted forward only, once over the file

    def line_of(pos: int) -> int:
        counted[1] += text.count("\n", counted[0], pos)
        counted[0] = pos
        return counted[1]

    pos = _skip_space(text, 0)
    if not text.startswith("[", pos):
        raise DataError(f"{path}:{line_of(pos)}: expected a JSON array of objects (a .json corpus), "
                        "or use JSON Lines (.jsonl) with one object per line")
    pos = _skip_space(text, pos + 1)
    index = 0
    while not text.startswith("]", pos):
        where = f"{path}:{line_of(pos)}"
        try:
            row, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg} at column {exc.colno})") from None
        yield where, (index, row)
        index += 1
        pos = _skip_space(text, end)
        if text.startswith(",", pos):
            pos = _skip_space(text, pos + 1)
        elif not text.startswith("]", pos):
            raise DataError(f"{path}:{line_of(pos)}: invalid JSON (expected ',' or ']' after an object)")


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _parse_story(text: str, where: str, doc_id: str, require_summary: bool) -> Example:
    """Split a ``.story`` text at its "@highlight" markers."""
    article_lines: list[str] = []
    highlights: list[list[str]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped == "@highlight":
            highlights.append([])
        elif highlights:
            if stripped:
                highlights[-1].append(stripped)
        else:
            article_lines.append(line.rstrip())
    article = "\n".join(article_lines).strip()
    summary = "\n".join(" ".join(h) for h in highlights if h)
    if not article:
        raise DataError(f"{where}: no article text before the first @highlight")
    if require_summary and not summary:
        raise DataError(f"{where}: no @highlight summary")
    return Example(id=doc_id, article=article, summary=summary, origin=where)


def read_story(path: str | Path, require_summary: bool = True) -> Example:
    """One CNN/DailyMail ``.story`` file: article before the first "@highlight", then highlights.

    The summary joins the highlights with newlines, the same layout as the HF ``highlights`` field.
    """
    path = Path(path)
    with open_binary(path) as handle:
        text = decode_utf8(handle.read(), str(path))
    return _parse_story(text, str(path), path.stem, require_summary)


def read_stories(
    directory_or_files: str | Path | Iterable[str | Path],
    skip_bad: bool = False,
    require_summary: bool = True,
    stats: ReadStats | None = None,
) -> Iterator[Example]:
    """Every ``*.story`` under a directory (recursively, e.g. ``cnn/stories`` and
    ``dailymail/stories`` below one root), or the given files, in sorted path order so that
    runs and slices are reproducible."""
    if isinstance(directory_or_files, (str, Path)):
        root = Path(directory_or_files)
        if not root.is_dir():
            raise DataError(f"{root}: no such directory")
        files = sorted(p for p in root.rglob("*.story") if p.is_file())
    else:
        files = sorted(Path(p) for p in directory_or_files)
    rows = ((str(file), file) for file in files)
    return keep_good(rows, lambda _, file: read_story(file, require_summary=require_summary), skip_bad,
                     stats if stats is not None else ReadStats())


def read_hf(
    name: str = "cnn_dailymail",
    config: str = "3.0.0",
    split: str = "train",
    article_field: str = "article",
    summary_field: str = "highlights",
    id_field: str = "id",
    skip_bad: bool = False,
    require_summary: bool = True,
    stats: ReadStats | None = None,
) -> Iterator[Example]:
    """A Hugging Face dataset split (default: CNN/DailyMail 3.0.0, the non-anonymized version
    DCA uses). ``datasets`` is an optional dependency, imported only here."""
    source = f"hf:{name}:{config}:{split}"
    try:
        import datasets  # noqa: PLC0415 - optional dependency
    except ImportError:
        raise DataError(
            f"{source}: the Hugging Face 'datasets' package is not installed; "
            "install it with `pip install agentsum[hf]` (downloading also needs an online machine), "
            "or pass a local .jsonl file / .story directory instead"
        ) from None
    try:
        dataset = datasets.load_dataset(name, config or None, split=split)
    except Exception as exc:  # network, missing dataset or split: all mean "cannot load"
        raise DataError(
            f"{source}: cannot load the dataset ({type(exc).__name__}: {exc}); "
            "the machine must be online (or have the dataset cached)"
        ) from None
    fields = (article_field, summary_field, id_field)
    rows = ((f"{source}:{index}", (index, row)) for index, row in enumerate(dataset))
    return keep_good(rows, lambda where, item: _example_from_row(item[1], where, str(item[0]), fields, require_summary),
                     skip_bad, stats if stats is not None else ReadStats())


def parse_hf_spec(spec: str) -> tuple[str, str, str]:
    """``hf:NAME[:CONFIG[:SPLIT]]`` -> (name, config, split); defaults cnn_dailymail 3.0.0 train."""
    parts = spec.removeprefix("hf:").split(":")
    if len(parts) > 3 or not parts[0]:
        raise DataError(f"{spec}: expected hf:NAME[:CONFIG[:SPLIT]]")
    name = parts[0]
    config = parts[1] if len(parts) > 1 and parts[1] else ("3.0.0" if name == "cnn_dailymail" else "")
    split = parts[2] if len(parts) > 2 and parts[2] else "train"
    return name, config, split


def read_text_file(path: str | Path) -> str:
    """A whole UTF-8 text file, or standard input for "-" (the ``summarize`` command's input)."""
    name = "<stdin>" if str(path) == "-" else str(path)
    if str(path) == "-":
        data = sys.stdin.buffer.read()
    else:
        require_file(Path(path))
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise DataError(f"{name}: cannot read ({exc.strerror or exc})") from None
    return decode_utf8(data, name)
