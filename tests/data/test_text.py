import pytest

from agentsum.data.text import (
    article_sentences,
    join_sentences,
    split_generated,
    split_sentences,
    strip_source_prefix,
    summary_sentences,
    tokenize,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("(CNN) -- The mayor spoke.", "The mayor spoke."),
        ("(CNN)The mayor spoke.", "The mayor spoke."),
        ("LONDON, England (CNN) -- The mayor spoke.", "The mayor spoke."),
        ("WASHINGTON (CNN) --The mayor spoke.", "The mayor spoke."),
        ("Port-au-Prince, Haiti (CNN) -- Aid arrived.", "Aid arrived."),
        ("LONDON, England (Reuters) -- Shares fell.", "Shares fell."),
        ("(Mental Floss) -- A fact.", "A fact."),
        ("GLASGOW, Scotland -- Rangers won.", "Rangers won."),
    ],
)
def test_strip_source_prefix_removes_datelines(text, expected):
    assert strip_source_prefix(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "The mayor (CNN's guest) spoke.",  # not at the start
        "Tom Hanks -- the actor -- spoke.",  # a dash, but no dateline
        "(Right) the mayor spoke.",  # opening parenthetical, unknown source, no dash
        "X" * 130 + " (CNN) -- late",  # ends beyond the first 120 characters
        "(CNN)",  # nothing would be left
    ],
)
def test_strip_source_prefix_leaves_other_text(text):
    assert strip_source_prefix(text) == text


def test_tokenize_splits_clitics_ptb_style():
    assert tokenize("Don't go, he's here and they'll see I'm fine") == [
        "do", "n't", "go", ",", "he", "'s", "here", "and", "they", "'ll", "see", "i", "'m", "fine",
    ]
    assert tokenize("Can't won't") == ["ca", "n't", "wo", "n't"]


def test_tokenize_keeps_numbers_hyphens_abbreviations_together():
    tokens = tokenize("The 18-year-old paid $3.5 million, or 1,000 times more, in the U.S. at 10:30 a.m.")
    assert "18-year-old" in tokens
    assert "3.5" in tokens and "$" in tokens
    assert "1,000" in tokens
    assert "u.s." in tokens and "a.m." in tokens
    assert "10:30" in tokens
    assert tokens[tokens.index("1,000") - 1] == "or"


def test_tokenize_keeps_titles_dates_and_company_abbreviations():
    tokens = tokenize("Cpl. Trent D. Thomas of Acme Co. met Dr. Lee on Jan. 5 at No. 10.")
    assert tokens == [
        "cpl.", "trent", "d.", "thomas", "of", "acme", "co.", "met", "dr.", "lee",
        "on", "jan.", "5", "at", "no.", "10", ".",
    ]
    assert tokenize("Sens. Cornyn and No.1 driver from Erie, Pa., on CNN.com.") == [
        "sens.", "cornyn", "and", "no.", "1", "driver", "from", "erie", ",", "pa.", ",",
        "on", "cnn.com", ".",
    ]
    # Without a following number or word the period is a sentence end, not part of the word.
    assert tokenize("They said no.") == ["they", "said", "no", "."]
    assert tokenize("She joined Acme Co.") == ["she", "joined", "acme", "co", "."]


def test_tokenize_splits_punctuation():
    assert tokenize('He said: "Stop!" (twice); why?') == [
        "he", "said", ":", '"', "stop", "!", '"', "(", "twice", ")", ";", "why", "?",
    ]
    assert tokenize("The end.") == ["the", "end", "."]
    assert tokenize("Wait... no -- yes") == ["wait", "...", "no", "--", "yes"]


def test_tokenize_normalises_curly_quotes():
    assert tokenize("“It’s O’Neill’s,” she said") == [
        '"', "it", "'s", "o'neill", "'s", ",", '"', "she", "said",
    ]
    assert tokenize("He said ``hi'' twice") == ["he", "said", '"', "hi", '"', "twice"]


def test_tokenize_lowercases_only_when_asked():
    assert tokenize("Obama Visits NASA") == ["obama", "visits", "nasa"]
    assert tokenize("Obama Visits NASA", lower=False) == ["Obama", "Visits", "NASA"]


def test_tokenize_drops_control_characters_and_never_returns_empty_tokens():
    tokens = tokenize("bad\x00word\u200b here\x07 soft\xadhyphen \ufeffbom\x85 \t\r\n")
    assert tokens == ["badword", "here", "softhyphen", "bom"]
    assert tokenize("  \x00 \u200b ") == []
    assert all(tokens for tokens in tokenize("a , . '' `` -- ..."))


def test_split_sentences_uses_line_breaks_and_blingfire():
    text = "First one. Second one!\n\nA caption without period\nMr. Smith went to Washington."
    assert split_sentences(text) == [
        "First one.",
        "Second one!",
        "A caption without period",
        "Mr. Smith went to Washington.",
    ]


def test_article_sentences_strip_prefix_and_drop_empty():
    sentences = article_sentences("(CNN) -- Rain fell. \x00\n\n\u200b\n It stopped.")
    assert sentences == [["rain", "fell", "."], ["it", "stopped", "."]]


def test_summary_sentences_end_with_sentence_punctuation():
    summary = 'Judge says most are there for "avoidable felonies"\nRadcliffe turns 18 .\n\nHe left the U.S.\nReally?'
    assert summary_sentences(summary) == [
        ["judge", "says", "most", "are", "there", "for", '"', "avoidable", "felonies", '"', "."],
        ["radcliffe", "turns", "18", "."],
        ["he", "left", "the", "u.s.", "."],
        ["really", "?"],
    ]


def test_summary_sentence_ending_inside_quotes_gets_no_extra_period():
    assert summary_sentences('He says: "We are never listened to."') == [
        ["he", "says", ":", '"', "we", "are", "never", "listened", "to", ".", '"'],
    ]


def test_join_sentences_is_rougelsum_format():
    assert join_sentences([["a", "b", "."], ["c", "!"]]) == "a b .\nc !"
    assert join_sentences([]) == ""


def test_split_generated_splits_after_end_tokens():
    tokens = ["a", "b", ".", "c", "!", "d", "?", "u.s.", "e"]
    assert split_generated(tokens) == [["a", "b", "."], ["c", "!"], ["d", "?"], ["u.s.", "e"]]
    assert split_generated([]) == []
    # an end mark right after another ends the same sentence: "psycho ! ." is one sentence
    assert split_generated([".", "."]) == [[".", "."]]
    assert split_generated(["stop", "a", "psycho", "!", ".", "ok", "."]) == [["stop", "a", "psycho", "!", "."], ["ok", "."]]


def test_dialogue_articles_keep_one_sentence_per_utterance_with_the_speaker():
    from agentsum.data.text import article_sentences

    dialogue = "Amanda: I baked cookies. Do you want some?\r\n\r\nJerry: Sure!\nAmanda: (CNN) -- ok"
    assert article_sentences(dialogue, dialogue=True) == [
        ["amanda", ":", "i", "baked", "cookies", ".", "do", "you", "want", "some", "?"],
        ["jerry", ":", "sure", "!"],
        ["amanda", ":", "(", "cnn", ")", "--", "ok"],
    ]
    # As prose the first utterance is two sentences.
    assert len(article_sentences(dialogue)) == 4


def test_dialogue_preset_splits_agents_along_utterances():
    from agentsum.config import load_config
    from agentsum.data.corpus import Example
    from agentsum.data.dataset import prepare

    config = load_config("samsum-m6")
    lines = [f"Speaker{i}: " + " ".join(["word"] * 8) for i in range(6)]  # 6 utterances of 10 tokens
    doc = prepare(Example("d", "\n".join(lines), "A summary.", "x"), config.data)
    assert [len(a) for a in doc.agents] == [20, 20, 20]
    assert all(agent[0].startswith("speaker") for agent in doc.agents)


def test_cnn_update_marker_is_removed_from_highlights():
    from agentsum.data.text import summary_sentences

    assert summary_sentences("NEW: Bush says he is saddened .\nTwo die in the crash") == [
        ["bush", "says", "he", "is", "saddened", "."], ["two", "die", "in", "the", "crash", "."]]
    assert summary_sentences("The NEW: label stays inside a sentence")[0][:3] == ["the", "new", ":"]
    assert summary_sentences("new: lower case is text")[0][:2] == ["new", ":"]
