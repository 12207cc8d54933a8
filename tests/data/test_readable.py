"""Readable output: casing restored from the source, PTB tokens detokenized, sentences capitalized."""

from agentsum.data.readable import Casing, capitalize_first, detokenize, readable
from agentsum.data.text import tokenize

DIALOGUE = (
    "Amanda: I baked cookies. Do you want some?\n"
    "Jerry: Sure! I can't wait, it's my favourite. See you at McDonald's\n"
    "Amanda: Tomorrow then :-) I'll bring them to New York"
)


def test_detokenize_undoes_the_tokenizer_on_clitics_punctuation_brackets_and_quotes():
    sentence = 'Jerry can\'t come, won\'t he? It\'s 5% off (the "big" sale) at McDonald\'s.'
    assert detokenize(tokenize(sentence, lower=False)) == sentence


def test_a_currency_sign_joins_an_amount_but_not_a_word():
    assert detokenize(["eps", "$", "1.10", "versus", "$", "(", "0.03", ")"]) == "eps $1.10 versus $(0.03)"
    assert detokenize(["revenue", "$", "1.5", "billion", "to", "$", "per", "share", "."]) == \
        "revenue $1.5 billion to $ per share."
    assert detokenize(["$", ".5"]) == "$.5"
    assert detokenize(["(", "per", "share", ")", "#", "tag"]) == "(per share) #tag"


def test_detokenize_keeps_spaces_between_words_and_around_dashes():
    assert detokenize(["a", "--", "b", "c"]) == "a -- b c"
    assert detokenize([]) == ""


def test_casing_takes_the_most_frequent_form_and_ignores_sentence_starts():
    casing = Casing.from_text("Tomorrow we go. We meet Anna tomorrow in Paris. paris is nice, says ANNA and Anna.")
    assert casing("anna") == "Anna"  # Anna 2 : ANNA 1
    assert casing("paris") == "Paris"  # tie 1 : 1 goes to the capitalized form
    assert casing("tomorrow") == "tomorrow"  # "Tomorrow" only starts a sentence
    assert casing("we") == "we"
    assert casing("i") == "I"
    assert casing("unseen") == "unseen"


def test_dialogue_speaker_names_are_names_even_at_the_start_of_a_line():
    casing = Casing.from_text(DIALOGUE, dialogue=True)
    assert casing("amanda") == "Amanda" and casing("jerry") == "Jerry"
    assert casing("tomorrow") == "tomorrow"  # starts an utterance's text, not a speaker
    assert casing("do") == "do"  # "Do" follows "cookies ." inside one utterance
    prose = Casing.from_text(DIALOGUE, dialogue=False)
    assert prose("amanda") == "amanda"  # as prose, "Amanda" only ever starts a sentence


def test_readable_summary_from_lower_cased_tokens():
    tokens = "amanda baked cookies and will bring jerry some tomorrow . jerry ca n't wait to go to new york .".split()
    assert readable(tokens, DIALOGUE, dialogue=True) == (
        "Amanda baked cookies and will bring Jerry some tomorrow. Jerry can't wait to go to New York."
    )


def test_capitalize_first_skips_opening_punctuation_and_leaves_digits():
    assert capitalize_first('"hello" she said') == '"Hello" she said'
    assert capitalize_first("5 people came") == "5 people came"
    assert capitalize_first("") == ""


def test_function_words_stay_lower_case_whatever_the_chat_wrote():
    casing = Casing.from_text("Suzie: ok :) And then WE go\nOlga: yes And THE Cinema is great", dialogue=True)
    assert [casing(t) for t in ("and", "we", "the", "cinema", "suzie")] == ["and", "we", "the", "Cinema", "Suzie"]


SPOKEN = "#Person1#: Hi, I'm calling about #Person2#'s order.\n#Person2#: Thanks. #Person1#, it's late."


def test_speaker_tags_stay_one_token_and_print_as_written():
    assert tokenize("#Person1#: it's #Person2#'s turn.") == ["#person1#", ":", "it", "'s", "#person2#", "'s", "turn", "."]
    assert tokenize("#Person1#'ll go", lower=False) == ["#Person1#", "'ll", "go"]
    assert tokenize("#love C# #1") == ["#", "love", "c", "#", "#", "1"]  # a hashtag is not a tag
    tokens = "#person1# is calling about #person2# 's order . #person2# 's order is late .".split()
    assert readable(tokens, SPOKEN, dialogue=True) == (
        "#Person1# is calling about #Person2#'s order. #Person2#'s order is late."
    )


def test_detokenize_writes_placeholders_as_one_word_and_keeps_comparisons_apart():
    assert detokenize(["amanda", "sent", "<", "file_gif", ">", "."]) == "amanda sent <file_gif>."
    assert detokenize(["<", "file", ":", "photo", ">", "and", "<", "file_other", ">"]) == "<file:photo> and <file_other>"
    # a bracket that closes no short name-like run stays a word of its own
    assert detokenize(["2", "<", "3", "and", "a", "<", "b", "c", "d", "e", ">"]) == "2 < 3 and a < b c d e >"
    assert detokenize(["x", "<", ">", "y"]) == "x < > y"


def test_a_second_end_mark_is_not_written():
    from agentsum.data.readable import detokenize, readable
    assert detokenize(["a", "psycho", "!", "."]) == "a psycho!"
    assert detokenize(["why", "?", ".", "wait", "..."]) == "why? wait..."
    assert readable("jerry will see amanda at the cafe ? . he is ok .".split(), "Jerry: x\nAmanda: y", True) \
        == "Jerry will see Amanda at the cafe? He is ok."
