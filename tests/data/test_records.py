"""The one line reader (agentsum.data.records): JSON Lines and TSV with file:line errors, and the
skip-and-count loop every corpus reader runs."""

import gzip

import pytest

from agentsum.data.records import (DataError, ReadStats, json_lines, keep_good, raw_lines, require_file, text_lines,
                                   tsv_lines)


def test_json_lines_name_file_and_line_of_every_problem(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}\n\n{"a": 2}\n')
    assert [(w.rsplit(":", 1)[1], o) for w, o in json_lines(path)] == [("1", {"a": 1}), ("3", {"a": 2})]
    for body, message in ((b'{"a": 1}\n{"a": \n', r"m\.jsonl:2: invalid JSON"),
                          (b'{"a": 1}\n[1, 2]\n', r"m\.jsonl:2: expected a JSON object, got list"),
                          (b'{"a": "\xff"}\n', r"m\.jsonl:1: invalid UTF-8 at byte 7 of the line")):
        path.write_bytes(body)
        with pytest.raises(DataError, match=message):
            list(json_lines(path))


def test_a_partial_last_line_is_passed_over_only_when_asked(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(b'{"step": 1}\n{"step": 2, "lo')  # a record another process is still writing
    with pytest.raises(DataError, match=r"metrics\.jsonl:2"):
        list(json_lines(path))
    seen = []
    assert [o for _, o in json_lines(path, on_partial_tail=seen.append)] == [{"step": 1}]
    assert seen == [f"{path}:2"]
    path.write_bytes(b'{"step": 1}\n{"step": 2, "lo\n')  # a complete bad line is still an error
    with pytest.raises(DataError):
        list(json_lines(path, on_partial_tail=seen.append))


def test_lines_of_gzip_and_tsv_files(tmp_path):
    gz = tmp_path / "t.tsv.gz"
    with gzip.open(gz, "wb") as f:
        f.write("摘要\t正文\n\nb\tc\td\n".encode())
    assert list(text_lines(gz)) == [(1, "摘要\t正文"), (2, ""), (3, "b\tc\td")]
    assert list(tsv_lines(gz)) == [(1, ["摘要", "正文"]), (3, ["b", "c", "d"])]
    truncated = tmp_path / "cut.jsonl.gz"
    truncated.write_bytes(gz.read_bytes()[:-6])
    with pytest.raises(DataError, match="cannot read"):
        list(raw_lines(truncated))


def test_keep_good_stops_or_skips_and_counts():
    def build(where, row):
        if row == "bad":
            raise DataError(f"{where}: bad row")
        return None if row == "filtered" else row.upper()

    rows = [("f:1", "a"), ("f:2", "bad"), ("f:3", "filtered"), ("f:4", "b")]
    with pytest.raises(DataError, match="f:2: bad row"):
        list(keep_good(rows, build, skip_bad=False, stats=ReadStats()))
    stats = ReadStats()
    assert list(keep_good(rows, build, skip_bad=True, stats=stats)) == ["A", "B"]
    assert (stats.read, stats.skipped, stats.errors) == (2, 1, ["f:2: bad row"])
    assert stats.report("f") == "f: skipped 1 bad line(s); first: f:2: bad row"
    assert ReadStats().report("f") is None


def test_require_file(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        require_file(tmp_path / "missing.jsonl")
    with pytest.raises(DataError, match="is a directory"):
        require_file(tmp_path)
