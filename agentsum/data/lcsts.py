"""Reading LCSTS (Hu et al., 2015) in its original PART_I/II/III format and as TSV.

The original release ships ``PART_I.txt`` (2.4M pairs), ``PART_II.txt`` (10,666) and
``PART_III.txt`` (1,106) as a sequence of blocks::

    <doc id=0>
        <human_label>5</human_label>
        <summary>
            修改后的立法法全文公布
        </summary>
        <short_text>
            新华社受权于18日全文播发修改后的《中华人民共和国立法法》，...
        </short_text>
    </doc>

``<human_label>`` (1-5, how well the summary fits the text) appears in PART II and III only. The
standard test set is PART III filtered to ``human_label >= 3`` (725 of 1,106 pairs):
``read_lcsts_part(".../PART_III.txt", min_human_label=3)``. Content may sit on the lines between the
tags (the release's layout) or on the tag's own line (``<summary>...</summary>``); it is
whitespace-stripped, and several content lines are joined with newlines.

TSV: one pair per line, ``summary<TAB>article`` (the order of the common CLGE / bert4keras LCSTS
files), or any column order with a header line that names the columns: ``summary`` and ``article``
(or ``short_text`` / ``text`` / ``content``), optionally ``id`` and ``human_label`` (or ``label``).
Fields are split at tabs with no quoting: quotes are literal, and a field cannot hold a tab or a
line break.

JSON Lines (fields ``article``, ``summary``) is read by :func:`agentsum.data.corpus.read_jsonl`;
:func:`load_lcsts` picks the reader by extension and content. All readers yield
:class:`agentsum.data.corpus.Example` records and raise :class:`agentsum.data.records.DataError`
naming file:line; ``skip_bad`` / ``stats`` work as in :mod:`agentsum.data.records`. Pairs removed by
``min_human_label`` are not errors and are not counted as skipped.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path

from agentsum.data.corpus import Example, read_jsonl
from agentsum.data.records import DataError, ReadStats, keep_good, open_binary, require_file, text_lines, tsv_lines

#: The usual LCSTS test filter: PART III pairs whose human score is at least 3.
TEST_MIN_HUMAN_LABEL = 3

_FIELDS = ("human_label", "summary", "short_text")
_DOC_RE = re.compile(r"""<doc(?:\s+id\s*=\s*["']?([^"'\s>]*)["']?)?\s*>""")
_OPEN_RE = re.compile(r"<(human_label|summary|short_text)>(.*)", re.DOTALL)
_SNIFF_BYTES = 1 << 16

_TSV_ARTICLE = ("article", "short_text", "text", "content")
_TSV_LABEL = ("human_label", "label")


def sniff_lcsts(path: str | Path) -> bool:
    """True when the file (``.gz`` allowed) starts, after blank lines, with a ``<doc`` block."""
    path = Path(path)
    if not path.is_file():
        return False
    try:
        with open_binary(path) as handle:
            head = handle.read(_SNIFF_BYTES)
    except (DataError, OSError, EOFError):
        return False
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<doc")


class _Doc:
    """A ``<doc>`` block being read."""

    def __init__(self, doc_id: str, line_no: int):
        self.id = doc_id
        self.line_no = line_no
        self.fields: dict[str, str] = {}
        self.open_field: str | None = None  # a tag whose closing tag has not been seen yet
        self.open_line = 0
        self.content: list[str] = []


def read_lcsts_part(
    path: str | Path,
    min_human_label: int | None = None,
    skip_bad: bool = False,
    require_summary: bool = True,
    stats: ReadStats | None = None,
) -> Iterator[Example]:
    """Examples (article = short_text, summary = summary, id = the doc id) of an LCSTS PART file.

    ``min_human_label=3`` keeps the pairs with ``<human_label>`` >= 3 (the standard PART III test
    set); a block without a label is then an error (PART I has none). A missing file raises here,
    not at the first ``next()``.
    """
    path = Path(path)
    require_file(path)
    return _iter_part(path, min_human_label, skip_bad, require_summary,
                      stats if stats is not None else ReadStats())


def _iter_part(
    path: Path, min_label: int | None, skip_bad: bool, require_summary: bool, stats: ReadStats
) -> Iterator[Example]:
    doc: _Doc | None = None
    resync = False  # after a skipped bad block: ignore lines until the next <doc> or </doc>
    for line_no, line in text_lines(path):
        where = f"{path}:{line_no}"
        stripped = line.strip()
        try:
            if resync:
                if stripped.startswith("<doc"):
                    resync = False
                elif stripped == "</doc>":
                    resync = False
                    continue
                else:
                    continue
            if doc is None:
                if not stripped:
                    continue
                match = _DOC_RE.fullmatch(stripped)
                if match is None:
                    raise DataError(f"{where}: expected <doc id=N>, got {_clip(stripped)!r}")
                doc = _Doc(match.group(1) or f"{path.name}:{line_no}", line_no)
                continue
            finished = _doc_line(doc, stripped, where, line_no)
            if finished:
                example = _finish(doc, path, where, min_label, require_summary)
                doc = None
                if example is not None:
                    stats.read += 1
                    yield example
        except DataError as exc:
            if not skip_bad:
                raise
            stats.skip(exc)
            # Drop the block; the bad line may itself open the next one ("<doc>" where "</doc>" was
            # missing), otherwise ignore lines up to the next <doc> or </doc>.
            match = _DOC_RE.fullmatch(stripped)
            doc = _Doc(match.group(1) or f"{path.name}:{line_no}", line_no) if match else None
            resync = match is None and stripped != "</doc>"
    if doc is not None:
        exc = DataError(f"{path}:{doc.line_no}: the file ends inside this <doc> (no </doc>)")
        if not skip_bad:
            raise exc
        stats.skip(exc)


def _doc_line(doc: _Doc, stripped: str, where: str, line_no: int) -> bool:
    """Consume one line inside a <doc>; True when it was the closing </doc>."""
    if doc.open_field is not None:
        name = doc.open_field
        close = f"</{name}>"
        if close in stripped:
            before, after = stripped.split(close, 1)
            if after.strip():
                raise DataError(f"{where}: text after {close}: {_clip(after.strip())!r}")
            if before.strip():
                doc.content.append(before.strip())
            _close_field(doc, where)
        elif stripped.startswith("<doc") or stripped == "</doc>" or _OPEN_RE.match(stripped):
            raise DataError(f"{where}: <{name}> opened at line {doc.open_line} is not closed (no {close})")
        elif stripped:
            doc.content.append(stripped)
        return False
    if not stripped:
        return False
    if stripped == "</doc>":
        return True
    if stripped.startswith("<doc"):
        raise DataError(f"{where}: <doc> inside the <doc> opened at line {doc.line_no} (missing </doc>)")
    match = _OPEN_RE.match(stripped)
    if match is None:
        raise DataError(
            f"{where}: unexpected text in the <doc> opened at line {doc.line_no}: {_clip(stripped)!r} "
            "(expected <human_label>, <summary>, <short_text> or </doc>)"
        )
    name, rest = match.group(1), match.group(2)
    if name in doc.fields:
        raise DataError(f"{where}: second <{name}> in the <doc> opened at line {doc.line_no}")
    doc.open_field, doc.open_line, doc.content = name, line_no, []
    if rest.strip():
        return _doc_line(doc, rest.strip(), where, line_no)
    return False


def _close_field(doc: _Doc, where: str) -> None:
    name = doc.open_field
    assert name is not None
    text = "\n".join(doc.content)
    if name == "human_label":
        try:
            int(text)
        except ValueError:
            raise DataError(f"{where}: <human_label> is {_clip(text)!r}, expected an integer") from None
    doc.fields[name] = text
    doc.open_field, doc.content = None, []


def _finish(doc: _Doc, path: Path, where: str, min_label: int | None, require_summary: bool) -> Example | None:
    """The block's Example, None when the label filter drops it, DataError when incomplete."""
    origin = f"{path}:{doc.line_no}"
    article = doc.fields.get("short_text", "")
    summary = doc.fields.get("summary", "")
    if not article.strip():
        raise DataError(f"{origin}: <doc id={doc.id}> has no <short_text> (or an empty one); block ends at {where}")
    if require_summary and not summary.strip():
        raise DataError(f"{origin}: <doc id={doc.id}> has no <summary> (or an empty one); block ends at {where}")
    if min_label is not None:
        if "human_label" not in doc.fields:
            raise DataError(
                f"{origin}: <doc id={doc.id}> has no <human_label>, but min_human_label={min_label} was "
                "asked for (only PART II and III files carry labels)"
            )
        if int(doc.fields["human_label"]) < min_label:
            return None
    return Example(id=doc.id, article=article, summary=summary, origin=origin)


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def read_lcsts_tsv(
    path: str | Path,
    min_human_label: int | None = None,
    skip_bad: bool = False,
    require_summary: bool = True,
    stats: ReadStats | None = None,
) -> Iterator[Example]:
    """Examples of a TSV file: ``summary<TAB>article`` lines, or columns named by a header line
    (see the module docstring). Ids are the header's ``id`` column or ``"{file name}:{line}"``.
    ``min_human_label`` needs a ``human_label`` column."""
    path = Path(path)
    require_file(path)
    return _iter_tsv(path, min_human_label, skip_bad, require_summary,
                     stats if stats is not None else ReadStats())


def _tsv_header(fields: list[str]) -> dict[str, int] | None:
    """Column indexes when ``fields`` is a header line naming summary and article, else None."""
    names = [f.strip().lower() for f in fields]
    if "summary" not in names or not any(a in names for a in _TSV_ARTICLE):
        return None
    columns = {"summary": names.index("summary"),
               "article": names.index(next(a for a in _TSV_ARTICLE if a in names))}
    if "id" in names:
        columns["id"] = names.index("id")
    label = next((a for a in _TSV_LABEL if a in names), None)
    if label is not None:
        columns["human_label"] = names.index(label)
    return columns


def _iter_tsv(
    path: Path, min_label: int | None, skip_bad: bool, require_summary: bool, stats: ReadStats
) -> Iterator[Example]:
    lines = tsv_lines(path)
    columns, width = {"summary": 0, "article": 1}, 2
    first = next(lines, None)
    if first is None:
        return
    line_no, fields = first
    header = _tsv_header(fields)
    if header is not None:
        columns, width = header, len(fields)
        if min_label is not None and "human_label" not in columns:
            raise DataError(f"{path}:{line_no}: min_human_label={min_label} needs a human_label column")
        rows = lines
    else:
        if min_label is not None:
            raise DataError(f"{path}:{line_no}: min_human_label={min_label} needs a header line with a "
                            "human_label column")
        rows = itertools.chain([first], lines)

    def example(where: str, fields: list[str]) -> Example | None:
        if len(fields) != width:
            layout = "summary<TAB>article" if width == 2 and "id" not in columns else f"{width} header columns"
            raise DataError(f"{where}: expected {width} tab-separated fields ({layout}), got {len(fields)}")
        summary = fields[columns["summary"]].strip()
        article = fields[columns["article"]].strip()
        if not article:
            raise DataError(f"{where}: field 'article' is empty")
        if require_summary and not summary:
            raise DataError(f"{where}: field 'summary' is empty")
        if "human_label" in columns and min_label is not None:
            raw = fields[columns["human_label"]].strip()
            try:
                label = int(raw)
            except ValueError:
                raise DataError(f"{where}: field 'human_label' is {_clip(raw)!r}, expected an integer") from None
            if label < min_label:
                return None
        doc_id = fields[columns["id"]].strip() if "id" in columns else ""
        return Example(id=doc_id or f"{path.name}:{where.rsplit(':', 1)[1]}", article=article, summary=summary,
                       origin=where)

    yield from keep_good(((f"{path}:{n}", f) for n, f in rows), example, skip_bad, stats)


def load_lcsts(
    spec: str | Path,
    min_human_label: int | None = None,
    skip_bad: bool = False,
    require_summary: bool = True,
    stats: ReadStats | None = None,
) -> Iterator[Example]:
    """LCSTS examples from a PART file, a TSV or a JSON Lines file (``.gz`` allowed for all).

    By extension: ``.jsonl`` / ``.json`` -> :func:`agentsum.data.corpus.read_jsonl`; ``.tsv`` ->
    :func:`read_lcsts_tsv`; ``.txt`` -> :func:`read_lcsts_part` (must start with ``<doc``). Other
    names are sniffed: ``<doc`` -> PART, ``{`` -> JSON Lines, a tab in the first line -> TSV.
    ``min_human_label`` applies to PART files and to TSVs with a ``human_label`` column.
    """
    path = Path(spec)
    require_file(path)
    name = path.name.lower().removesuffix(".gz")
    suffix = Path(name).suffix
    if suffix in (".jsonl", ".json"):
        kind = "jsonl"
    elif suffix == ".tsv":
        kind = "tsv"
    elif sniff_lcsts(path):
        kind = "part"
    elif suffix == ".txt":
        raise DataError(f"{path}: a .txt file is read as an LCSTS PART file, but it does not start with <doc")
    else:
        kind = _sniff_other(path)
    if kind == "part":
        return read_lcsts_part(path, min_human_label, skip_bad, require_summary, stats)
    if kind == "tsv":
        return read_lcsts_tsv(path, min_human_label, skip_bad, require_summary, stats)
    if min_human_label is not None:
        raise DataError(f"{path}: min_human_label needs an LCSTS PART file or a TSV with a human_label column")
    return read_jsonl(path, skip_bad=skip_bad, require_summary=require_summary, stats=stats)


def _sniff_other(path: Path) -> str:
    with open_binary(path) as handle:
        head = handle.read(_SNIFF_BYTES).lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"{"):
        return "jsonl"
    if b"\t" in head.split(b"\n", 1)[0]:
        return "tsv"
    raise DataError(f"{path}: not an LCSTS PART file (<doc ...>), JSON Lines or TSV file")
