import re

import pytest

from agentsum.data.chinese import (
    CharTokenizer,
    WhitespaceTokenizer,
    article_sentences,
    join_sentences,
    join_tokens,
    normalize,
    split_generated,
    split_sentences,
    summary_sentences,
    tokenize,
)

jieba = pytest.importorskip("jieba")

TEXTS = [
    "林志颖旗下爱碧丽推销假保健品，售价高达1080元，实际成本仅为每瓶4元！",
    "苹果发布iPhone 6 Plus，起售价5288元；3.5英寸屏幕。",
    "Ａ股２０１５年上涨５０％，ＣＰＩ同比增长１．５％。",
    "他说：“妈妈愿意出去走走，我就愿意拉着。”  孝心不能等\n能走多远就走多远……",
    "买了T恤和B超 iPad\u200bAir 2 \u3000 ok",
    "",
    "   \n ",
]


def _no_space(text):
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("mode", ["jieba", "char"])
@pytest.mark.parametrize("text", TEXTS)
def test_tokenization_round_trips(text, mode):
    tokens = tokenize(text, mode)
    assert "".join(tokens) == _no_space(normalize(text))
    assert all(t and not any(c.isspace() for c in t) for t in tokens)


def test_normalize_folds_full_width_lowercases_and_drops_invisible_characters():
    assert normalize("Ａ股２０１５ＣＰＩ，上涨！\u200b\ufeff") == "a股2015cpi,上涨!"
    assert normalize("iPhone") == "iphone"
    assert normalize("中文　空格") == "中文 空格"  # ideographic space -> space


def test_char_mode_keeps_ascii_runs_whole():
    assert tokenize("苹果iPhone 6 Plus售价3.5万，2015年。", "char") == [
        "苹", "果", "iphone", "6", "plus", "售", "价", "3.5", "万", ",", "2015", "年", "。",
    ]
    assert tokenize("ＣＰＩ上涨１．５％", "char") == ["cpi", "上", "涨", "1.5", "%"]


def test_jieba_mode_segments_words_with_hmm_and_lowercases_after_segmenting():
    tokens = tokenize("我买了T恤和iPhone 6 Plus，花了3.5万元。", "jieba")
    assert tokens == ["我", "买", "了", "t恤", "和", "iphone", "6", "plus", ",", "花", "了", "3.5", "万元", "。"]
    # HMM new-word discovery: "杭研" and "爱碧丽" are not in jieba's dictionary (HMM=False splits them)
    assert tokenize("他来到了网易杭研大厦", "jieba") == ["他", "来到", "了", "网易", "杭研", "大厦"]
    assert tokenize("爱碧丽推销假保健品", "jieba") == ["爱碧丽", "推销", "假", "保健品"]
    assert tokenize("", "jieba") == [] and tokenize("  \n", "jieba") == []


def test_unknown_mode_is_an_error():
    with pytest.raises(ValueError, match="mode 'words'"):
        tokenize("中文", "words")


def test_split_sentences_keeps_delimiters_closing_quotes_and_splits_newlines():
    text = "他说：“我走了。”然后离开！真的吗？！是的;还有；分号\n第二行没有句号  \n\n第三行. 小数3.5不切"
    assert split_sentences(text) == [
        "他说：“我走了。”",
        "然后离开！",
        "真的吗？！",
        "是的;还有；分号",
        "第二行没有句号",
        "第三行. 小数3.5不切",
    ]
    assert split_sentences('他说:"好的。"然后走了。"新引语"开始') == ['他说:"好的。"', '然后走了。', '"新引语"开始']
    assert split_sentences("") == []


def test_article_and_summary_sentences():
    sentences = article_sentences("今天天气很好。我们去公园吧！", "char")
    assert sentences == [["今", "天", "天", "气", "很", "好", "。"], ["我", "们", "去", "公", "园", "吧", "!"]]
    # summaries get no end mark appended (LCSTS summaries are headlines)
    assert summary_sentences("林志颖公司疑涉虚假营销", "char") == [list("林志颖公司疑涉虚假营销")]
    words = article_sentences("今天天气很好。我们去公园吧！", "jieba")
    assert len(words) == 2 and words[0][-1] == "。" and words[1][-1] == "!"


def test_split_generated():
    assert split_generated(["我", "走", "了", "。", "”", "你", "呢", "?", "!", "好"]) == [
        ["我", "走", "了", "。", "”"], ["你", "呢", "?", "!"], ["好"],
    ]
    assert split_generated(["好", "。"]) == [["好", "。"]]
    assert split_generated([]) == []
    assert split_generated(['"', "好", "。", '"', "走"]) == [['"', "好", "。", '"'], ["走"]]


def test_join_tokens_spaces_only_between_ascii_words():
    assert join_tokens(["苹", "果", "iphone", "6", "plus", "售", "价", "3.5", "万"], "char") == "苹果iphone 6 plus售价3.5万"
    assert join_tokens(["我", "买", "了", "t恤", "和", "ipad", "air"], "jieba") == "我买了t恤和ipad air"
    assert join_tokens(["2015", "年", "50", "%"], "char") == "2015年50%"
    assert join_sentences([["你", "好", "。"], ["a", "b"]], "char") == "你好。\na b"


def test_rouge_tokenizers():
    assert CharTokenizer().tokenize("我爱ＢＥＩＪＩＮＧ 2015！") == ["我", "爱", "beijing", "2015", "!"]
    assert WhitespaceTokenizer().tokenize("我 爱  北京\n天安门") == ["我", "爱", "北京", "天安门"]
