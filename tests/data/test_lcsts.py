import gzip
import json

import pytest

from agentsum.data.lcsts import TEST_MIN_HUMAN_LABEL, load_lcsts, read_lcsts_part, read_lcsts_tsv, sniff_lcsts
from agentsum.data.records import DataError, ReadStats

PART_III = """\
<doc id=0>
    <human_label>5</human_label>
    <summary>
        修改后的立法法全文公布
    </summary>
    <short_text>
        新华社受权于18日全文播发修改后的《中华人民共和国立法法》，修改后的立法法分为“总则”“法律”“附则”等七章。
    </short_text>
</doc>
<doc id=1>
    <human_label>1</human_label>
    <summary>
        深圳机场9死24伤续：司机全责赔偿或超千万
    </summary>
    <short_text>
        2015年12月20日，深圳机场发生一起交通事故。
    </short_text>
</doc>
<doc id=2>
    <human_label>3</human_label>
    <summary>
        孙杨：我会游下去
    </summary>
    <short_text>
        孙杨在比赛后表示，他会继续游下去。
    </short_text>
</doc>

<doc id=3>
    <human_label>2</human_label>
    <summary>
        东莞市长：东莞不会“断崖式”下跌
    </summary>
    <short_text>
        东莞市长表示，东莞经济不会出现断崖式下跌。
    </short_text>
</doc>
"""


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_part_file_is_parsed(tmp_path):
    path = _write(tmp_path / "PART_III.txt", PART_III)
    examples = list(read_lcsts_part(path))
    assert [e.id for e in examples] == ["0", "1", "2", "3"]
    first = examples[0]
    assert first.summary == "修改后的立法法全文公布"
    assert first.article.startswith("新华社受权于18日") and first.article.endswith("七章。")
    assert first.origin == f"{path}:1"
    assert examples[2].origin == f"{path}:19"


def test_human_label_filter_gives_the_standard_test_set(tmp_path):
    path = _write(tmp_path / "PART_III.txt", PART_III)
    stats = ReadStats()
    kept = list(read_lcsts_part(path, min_human_label=TEST_MIN_HUMAN_LABEL, stats=stats))
    assert [e.id for e in kept] == ["0", "2"]  # labels 5 and 3; 1 and 2 are dropped
    assert stats.read == 2 and stats.skipped == 0


def test_part_i_without_labels_and_one_line_tags(tmp_path):
    path = _write(tmp_path / "PART_I.txt", "<doc id=7>\n<summary>标题</summary>\n<short_text>\n正文一\n正文二\n</short_text>\n</doc>\n")
    (example,) = read_lcsts_part(path)
    assert (example.id, example.summary, example.article) == ("7", "标题", "正文一\n正文二")
    with pytest.raises(DataError, match=r"PART_I.txt:1: .*no <human_label>.*min_human_label=3"):
        list(read_lcsts_part(path, min_human_label=3))


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("<doc id=0>\n<summary>\n标题\n<short_text>\n正文\n</short_text>\n</doc>\n", 4, "<summary> opened at line 2 is not closed"),
        ("<doc id=0>\n<summary>\n标题\n</summary>\n</doc>\n", 1, "has no <short_text>"),
        ("<doc id=0>\n<summary>标题</summary>\n<short_text>正文</short_text>\n<doc id=1>\n", 4, "missing </doc>"),
        ("<doc id=0>\n<human_label>high</human_label>\n</doc>\n", 2, "expected an integer"),
        ("<doc id=0>\n<summary>标题</summary>\nstray text\n</doc>\n", 3, "unexpected text"),
        ("stray text\n", 1, "expected <doc id=N>"),
        ("<doc id=0>\n<summary>标题</summary>\n<short_text>正文</short_text>\n", 1, "ends inside this <doc>"),
    ],
)
def test_malformed_blocks_name_file_and_line(tmp_path, text, line, message):
    path = _write(tmp_path / "bad.txt", text)
    with pytest.raises(DataError) as info:
        list(read_lcsts_part(path))
    assert str(info.value).startswith(f"{path}:{line}: ")
    assert message in str(info.value)


def test_skip_bad_skips_only_the_bad_block(tmp_path):
    bad = PART_III.replace("    </summary>\n    <short_text>\n        2015", "    <short_text>\n        2015", 1)
    path = _write(tmp_path / "PART_III.txt", bad)
    with pytest.raises(DataError, match=r"PART_III.txt:14: <summary> opened at line 12 is not closed"):
        list(read_lcsts_part(path))
    stats = ReadStats()
    assert [e.id for e in read_lcsts_part(path, skip_bad=True, stats=stats)] == ["0", "2", "3"]
    assert stats.skipped == 1 and stats.read == 3


def test_tsv_without_and_with_header(tmp_path):
    plain = _write(tmp_path / "train.tsv", "标题一\t正文一。\n\n标题二\t正文二。\n")
    examples = list(read_lcsts_tsv(plain))
    assert [(e.summary, e.article, e.id) for e in examples] == [
        ("标题一", "正文一。", "train.tsv:1"), ("标题二", "正文二。", "train.tsv:3"),
    ]
    headed = _write(tmp_path / "test.tsv", "id\thuman_label\tshort_text\tsummary\n9\t4\t正文\t标题\n10\t2\t正文b\t标题b\n")
    assert [(e.id, e.article, e.summary) for e in read_lcsts_tsv(headed)] == [("9", "正文", "标题"), ("10", "正文b", "标题b")]
    assert [e.id for e in read_lcsts_tsv(headed, min_human_label=3)] == ["9"]
    with pytest.raises(DataError, match="needs a header line with a human_label column"):
        list(read_lcsts_tsv(plain, min_human_label=3))


def test_tsv_bad_row_names_file_and_line(tmp_path):
    path = _write(tmp_path / "bad.tsv", "标题\t正文\n只有一列\n")
    with pytest.raises(DataError, match=r"bad.tsv:2: expected 2 tab-separated fields \(summary<TAB>article\), got 1"):
        list(read_lcsts_tsv(path))


def test_load_lcsts_dispatches_and_sniffs(tmp_path):
    part = _write(tmp_path / "PART_III.txt", PART_III)
    renamed = _write(tmp_path / "PART_III.data", PART_III)
    gz = tmp_path / "PART_III.txt.gz"
    gz.write_bytes(gzip.compress(PART_III.encode("utf-8")))
    jsonl = _write(tmp_path / "train.jsonl", json.dumps({"article": "正文", "summary": "标题"}, ensure_ascii=False) + "\n")
    tsv = _write(tmp_path / "train.tsv", "标题\t正文\n")
    assert sniff_lcsts(part) and sniff_lcsts(renamed) and sniff_lcsts(gz)
    assert not sniff_lcsts(jsonl) and not sniff_lcsts(tsv) and not sniff_lcsts(tmp_path / "missing.txt")
    assert len(list(load_lcsts(part, min_human_label=3))) == 2
    assert len(list(load_lcsts(renamed))) == 4
    assert len(list(load_lcsts(gz, min_human_label=3))) == 2
    assert [e.summary for e in load_lcsts(jsonl)] == ["标题"]
    assert [e.article for e in load_lcsts(tsv)] == ["正文"]
    with pytest.raises(DataError, match="min_human_label needs"):
        load_lcsts(jsonl, min_human_label=3)
    with pytest.raises(DataError, match="does not start with <doc"):
        load_lcsts(_write(tmp_path / "notes.txt", "hello\n"))
    with pytest.raises(DataError, match="no such file"):
        load_lcsts(tmp_path / "missing.txt")
