"""Numbers a summary writes, linked to where the source states them (agentsum.data.number_links)."""

from agentsum.data.text import tokenize
from agentsum.data.number_links import number_links

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
    assert links["1.10"] == {"supported": False, "occurrences": [], "words": [], "claim": "absent", "metric": "eps",
                             "context_occurrences": []}
    assert not links["452.2"]["supported"]  # the source says million: the scale is part of the number


def test_a_range_is_supported_when_both_ends_are():
    assert _links("Margins of 3-4%.")["3-4"]["supported"]
    assert not _links("Margins of 3-5%.")["3-5"]["supported"]
    assert _links("Margins of 3-5%.")["3-5"]["occurrences"] == [SOURCE.index("3-4")]  # where the 3 is


def test_words_without_numerals_are_not_marked():
    assert number_links(tokenize("Revenue rose in the third quarter, twenty stores."), SOURCE) == {}


CALL = tokenize("Sales decreased 28% to $403.6 million in the second quarter. Net debt was $112.1 million. "
                "Analysts had expected $409.4 million. We expect 2022 sales of $1.9 billion.")


def _claims(summary: str) -> dict[str, dict]:
    tokens = tokenize(summary)
    return {tokens[j]: link for j, link in number_links(tokens, CALL).items()}


def test_each_number_is_marked_in_context_elsewhere_or_absent():
    links = _claims("Q2 sales fell 28% to $403.6 million. Sees fy sales $112.1 million. Q2 eps $0.31.")
    assert links["403.6"]["claim"] == "in_context" and links["403.6"]["metric"] == "revenue"
    assert links["403.6"]["context_occurrences"] == [CALL.index("403.6")]  # the sales sentence
    assert links["112.1"]["claim"] == "elsewhere" and links["112.1"]["metric"] == "revenue"  # net debt
    assert links["112.1"]["occurrences"] == [CALL.index("112.1")] and links["112.1"]["context_occurrences"] == []
    assert links["0.31"]["claim"] == "absent" and links["0.31"]["metric"] == "eps"


def test_a_number_without_metric_in_the_source_is_in_context_and_an_estimate_is_elsewhere():
    tokens = tokenize("The company has $112.1 million. Q2 sales $403.6 million versus refinitiv ibes estimate of "
                      "$403.6 million.")
    marks = number_links(tokens, CALL)
    bare = marks[tokens.index("112.1")]
    assert (bare["claim"], bare["metric"]) == ("in_context", None)
    sales, estimate = (marks[j] for j, t in enumerate(tokens) if t == "403.6")
    assert (sales["claim"], estimate["claim"]) == ("in_context", "elsewhere")
    # a year is not a claim: it keeps the mark its support gives it
    years = _claims("Sees 2022 sales $1.9 billion.")
    assert years["2022"]["claim"] == "in_context" and years["2022"]["metric"] is None


def test_a_range_keeps_the_worse_mark_of_its_two_ends():
    source = tokenize("We see 3% churn. Sales rose 5% in the quarter.")
    summary = tokenize("Sales rose 3-5%.")
    (link,) = number_links(summary, source).values()
    assert link["claim"] == "elsewhere"  # 5% is stated for sales, 3% is not


def test_a_number_stated_for_the_other_metric_of_its_sentence_is_marked_elsewhere():
    """The mark reads the metric stated at the number, not every metric of its sentence; and a number
    stated as last year's value is not this quarter's: both are "in the call, stated for something else"."""
    source = tokenize("In the fourth quarter, revenue was $3.7 billion and adjusted EBITDA was $830 million. "
                      "Adjusted EBITDA was $830 million again in the plan. EPS fell from $0.64 to $0.31.")
    summary = tokenize("Q4 revenue $830 million. Q4 adjusted ebitda $830 million. Q4 eps $0.64. Q4 eps $0.31.")
    marks = [link for _, link in sorted(number_links(summary, source).items())]
    assert [m["claim"] for m in marks] == ["elsewhere", "in_context", "elsewhere", "in_context"]
    first = [j for j, t in enumerate(source) if t == "830"][0]
    # EBITDA's $830 million: both statements are for EBITDA, and the context lists them
    assert marks[1]["context_occurrences"] == [j for j, t in enumerate(source) if t == "830"]
    assert marks[0]["context_occurrences"] == [] and first in marks[0]["occurrences"]
