"""Numbers a summary writes, linked to where the source states them (agentsum.evaluation.number_links)."""

from agentsum.data.text import tokenize
from agentsum.evaluation.number_links import number_links

SOURCE = tokenize("Revenue rose 2.5% to $452.2 million, and 1,000 stores opened. EPS was $1.01. "
                  "Margins were 3-4% and we hired 2.5 thousand people.")


def _links(summary: str) -> dict[str, dict]:
    tokens = tokenize(summary)
    return {tokens[j]: link | {"words": [SOURCE[p] for p in link["occurrences"]]}
            for j, link in number_links(tokens, SOURCE).items()}


def test_numbers_written_otherwise_link_to_where_the_source_states_them():
    links = _links("Q3 revenue rose 2.5 percent to $452.2 million; 1000 stores opened.")
    assert set(links) == {"2.5", "452.2", "1000"}  # q3 is a word, not a number
    assert links["1000"]["supported"] and links["1000"]["words"] == ["1,000"]
    assert links["452.2"]["supported"] and links["452.2"]["occurrences"] == [SOURCE.index("452.2")]
    # 2.5% and 2.5 thousand are both in the source; "2.5 percent" matches the first only
    assert links["2.5"]["supported"] and links["2.5"]["occurrences"] == [SOURCE.index("2.5")]


def test_a_number_the_source_does_not_state_is_unsupported():
    links = _links("EPS was $1.10, and revenue $452.2 billion.")
    assert links["1.10"] == {"supported": False, "occurrences": [], "words": []}
    assert not links["452.2"]["supported"]  # the source says million: the scale is part of the number


def test_a_range_is_supported_when_both_ends_are():
    assert _links("Margins of 3-4%.")["3-4"]["supported"]
    assert not _links("Margins of 3-5%.")["3-5"]["supported"]
    assert _links("Margins of 3-5%.")["3-5"]["occurrences"] == [SOURCE.index("3-4")]  # where the 3 is


def test_words_without_numerals_are_not_marked():
    assert number_links(tokenize("Revenue rose in the third quarter, twenty stores."), SOURCE) == {}
