"""Reading line-oriented files: JSON Lines and TSV, with ``file:line`` errors and skip-bad counting.

Every file of records the package reads goes through here: corpora (``agentsum.data.corpus``,
``agentsum.data.lcsts``), prediction files (``agentsum.evaluation.humaneval``) and training
metrics (``agentsum.evaluation.plot``). A problem is a :class:`DataError` naming the file and the
line. Readers that may skip bad rows run them through :func:`keep_good`, the one place where a
bad row either stops reading or, with ``skip_bad``, is counted in a :class:`ReadStats` (a plain
counter the caller passes in, so readers stay generators).
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

#: How many skipped-row messages :class:`ReadStats` keeps for reporting.
MAX_KEPT_ERRORS = 20

_BOM = b"\xef\xbb\xbf"

Row = TypeVar("Row")
Record = TypeVar("Record")


class DataError(ValueError):
    """A corpus or input file cannot be read; the message names the file (and line, field)."""


@dataclass
class ReadStats:
    """Counts filled in by a reader: rows yielded, bad rows skipped, first few skip reasons."""

    read: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)

    def skip(self, error: DataError) -> None:
        self.skipped += 1
        if len(self.errors) < MAX_KEPT_ERRORS:
            self.errors.append(str(error))

    def report(self, source: str) -> str | None:
        """The line telling a user what was skipped in ``source``; None when nothing was."""
        if not self.skipped:
            return None
        return f"{source}: skipped {self.skipped} bad line(s); first: {'; '.join(self.errors[:3])}"


def keep_good(rows: Iterable[tuple[str, Row]], build: Callable[[str, Row], Record | None], skip_bad: bool,
              stats: ReadStats) -> Iterator[Record]:
    """``build(where, row)`` for every row. A :class:`DataError` stops reading or, with
    ``skip_bad``, is counted in ``stats`` and the row dropped; a row ``build`` turns into None (left
    out on purpose, e.g. by a label filter) is neither read nor skipped."""
    for where, row in rows:
        try:
            record = build(where, row)
        except DataError as exc:
            if not skip_bad:
                raise
            stats.skip(exc)
            continue
        if record is not None:
            stats.read += 1
            yield record


def require_file(path: Path) -> None:
    """DataError unless ``path`` is an existing file (so a reader fails when called, not at its first row)."""
    if not path.exists():
        raise DataError(f"{path}: no such file")
    if path.is_dir():
        raise DataError(f"{path}: is a directory, expected a file")


def open_binary(path: Path) -> io.BufferedIOBase:
    """Open a file for byte reading (gunzipping ``*.gz``); DataError when it cannot be opened."""
    try:
        if path.suffix == ".gz":
            return gzip.open(path, "rb")  # type: ignore[return-value]
        return path.open("rb")
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DataError(f"{path}: is a directory, expected a file") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot open ({exc.strerror or exc})") from None


def decode_utf8(data: bytes, name: str) -> str:
    """A whole file's text (a leading BOM dropped); DataError naming the line of a bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line_no = data.count(b"\n", 0, exc.start) + 1
        raise DataError(f"{name}:{line_no}: invalid UTF-8 at byte {exc.start} of the file") from None


def decode_line(raw: bytes, where: str) -> str:
    """One line's text; DataError naming ``where`` (file:line) for bad UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{where}: invalid UTF-8 at byte {exc.start} of the line") from None


def raw_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of every line, the line break kept and a leading BOM dropped; a
    truncated or corrupt ``.gz`` is a DataError."""
    with open_binary(path) as handle:
        try:
            for line_no, raw in enumerate(handle, start=1):
                if line_no == 1 and raw.startswith(_BOM):
                    raw = raw[len(_BOM):]
                yield line_no, raw
        except (OSError, EOFError) as exc:
            raise DataError(f"{path}: cannot read ({exc})") from None


def text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text without its line break) of every line; bad UTF-8 is a DataError with file:line."""
    for line_no, raw in raw_lines(path):
        yield line_no, decode_line(raw, f"{path}:{line_no}").rstrip("\r\n")


def tsv_lines(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, tab-separated fields) of every non-blank line. No quoting: quotes are literal,
    and a field cannot hold a tab or a line break."""
    for line_no, line in text_lines(path):
        if line.strip():
            yield line_no, line.split("\t")


def json_object(raw: bytes, where: str) -> dict[str, Any]:
    """One JSON Lines line -> its object; DataError for bad UTF-8, bad JSON or a non-object."""
    line = decode_line(raw, where)
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(f"{where}: invalid JSON ({exc.msg.removesuffix(' at')} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    return obj


def jsonl_rows(path: Path) -> Iterator[tuple[str, bytes]]:
    """("file:line", bytes) of every non-blank line of a JSON Lines file, for :func:`keep_good`."""
    for line_no, raw in raw_lines(path):
        if raw.strip():
            yield f"{path}:{line_no}", raw


def json_lines(path: Path, *, on_partial_tail: Callable[[str], None] | None = None) -> Iterator[tuple[str, dict]]:
    """("file:line", object) of every non-blank line; the first bad line is a DataError.

    With ``on_partial_tail``, a last line without its line break that does not parse (a record
    another process is still writing) is passed over: ``on_partial_tail(where)`` is called instead.
    """
    for where, raw in jsonl_rows(path):
        try:
            obj = json_object(raw, where)
        except DataError:
            if on_partial_tail is None or raw.endswith(b"\n"):
                raise
            on_partial_tail(where)
            continue
        yield where, obj
