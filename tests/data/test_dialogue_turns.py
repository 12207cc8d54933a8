"""A dialogue read from its tokens, as a prepared corpus keeps it (agentsum.data.attribution): the turns
and each speaker's side match the reading of the ``Speaker: text`` lines."""

from __future__ import annotations

from agentsum.data.attribution import Dialogue, check_sentence, turns
from agentsum.data.text import tokenize

SCHOOL = ("Monica: How is school, Gaia?\nGaia: I have a lot of exams this term\nMonica: Study hard then\n"
          "Gaia: I will, mum")


def test_turns_split_at_names_followed_by_a_colon():
    tokens = "hi all amanda : lunch at 1 ? jerry : sure , 1 : 30 jerry : bye".split()
    assert list(turns(tokens)) == [("amanda", ["lunch", "at", "1", "?"]),
                                   ("jerry", ["sure", ",", "1", ":", "30"]), ("jerry", ["bye"])]
    # words before the first turn are no one's; a turn with no words is dropped
    assert list(turns("amanda : jerry : ok".split())) == [("jerry", ["ok"])]
    assert list(turns("no turns here".split())) == []


def test_a_dialogue_from_tokens_reads_as_from_its_lines():
    lines = Dialogue.parse(SCHOOL)
    tokens = Dialogue.from_tokens(tokenize(SCHOOL.replace("\n", " ")))
    assert tokens.speakers == lines.speakers == ["monica", "gaia"]
    assert tokens.sides == lines.sides
    assert check_sentence(tokenize("Monica will have a lot of exams this term."), tokens) is False
    assert Dialogue.from_tokens(tokenize("Revenue grew 5%: we raised guidance.")) is None
