"""Claims, measured (evaluation/claims.py): the period a call reports and whether a summary's period
mentions agree with it, the metric a summary states a number for and whether one source sentence
holds both, directions, malformed figures, and the fields evaluate and lead3 write."""

import json

import pytest

from agentsum.cli import main
from agentsum.data.text import tokenize
from agentsum.data.figures import Lexicon, Period, document_period, lexicon, mention_agrees, period_mentions
from agentsum.data.claims import SourceClaims, malformed_figures, sentence_claims
from agentsum.evaluation.claims import ClaimCounts, claim_scores, document_claims

# A call that reports its second quarter: it names the first quarter only as a comparison.
CALL = "\n".join([
    "Thank you for joining us to discuss our second quarter fiscal 2021 results.",
    "Sales decreased 28% to $403.6 million, compared with the second quarter of last year.",
    "Our aviation segment grew 6% sequentially from our first quarter.",
    "Adjusted diluted earnings per share from continuing operations were $0.31, compared to $0.64 a year ago.",
    "Our net debt at quarter end was $112.1 million, down from $149.3 million at the end of Q1.",
    "Gross margin improved to 12.1% in the quarter.",
    "We declared a quarterly dividend of $0.25 per share.",
])


def tokens(text):
    return tokenize(text)


def source():
    return SourceClaims.from_text(CALL)


def claims_of(sentence):
    return sentence_claims(tokens(sentence), source())


# ------------------------------------------------------------------------------------ periods

@pytest.mark.parametrize("text, expected", [
    ("q3 revenue", [("quarter", 3, None)]),
    ("3q revenue", [("quarter", 3, None)]),
    ("fourth-quarter sales", [("quarter", 4, None)]),
    ("the first quarter of 2021", [("quarter", 1, 2021)]),
    ("q1 2021 eps", [("quarter", 1, 2021)]),
    ("sees fy21 revenue", [("fy", None, 2021)]),
    ("fiscal 2022 guidance", [("fy", None, 2022)]),
    ("full year sales", [("fy", None, None)]),
    ("full-year sales", [("fy", None, None)]),
    ("h1 sales and the second half", [("half", 1, None), ("half", 2, None)]),
    ("expects 2022 adjusted eps", [("year", None, 2022)]),
    ("qtrly revenue $5 million", []),
])
def test_period_mentions_are_read_with_their_year(text, expected):
    assert [(m.kind, m.value, m.year) for m in period_mentions(tokens(text))] == expected


def test_the_document_period_leaves_out_compared_quarters():
    # "first quarter" and "q1" appear as often as "second quarter", but as comparisons
    assert source().period == Period(2)  # the year is not read (document_period says why)


def test_the_document_period_skips_guidance_and_is_none_without_a_quarter():
    sentences = [tokens("We expect fourth quarter revenue of $5 million."), tokens("Third quarter sales rose."),
                 tokens("We expect fourth quarter margins to improve.")]
    assert document_period(sentences) == Period(3, None)
    assert document_period([tokens("Revenue rose 5%."), tokens("Thank you.")]) is None


@pytest.mark.parametrize("sentence, period, agrees", [
    ("q2 sales $403.6 million", Period(2, 2021), True),
    ("q3 sales $403.6 million", Period(2, 2021), False),
    ("sees q3 sales", Period(2, 2021), True),       # guidance for a later quarter
    ("sees q2 sales", Period(2, 2021), False),      # the reported quarter is not guided
    ("sees q1 sales", Period(2, 2021), False),      # nor an earlier one
    ("sees q1 sales", Period(4, 2021), True),       # after a fourth quarter: next year's
    ("fy sales $1.6 billion", Period(2, 2021), False),   # full-year results only in a q4 call
    ("fy sales $1.6 billion", Period(4, 2021), True),
    ("sees fy sales", Period(2, 2021), True),
    ("q2 2020 sales", Period(2, 2021), False),      # the right quarter of the wrong year
    ("expects 2022 eps", Period(4, 2021), True),
    ("2022 eps was $3", Period(4, 2021), False),    # a later year's results cannot be reported
    ("h1 sales", Period(2, 2021), True),
    ("h2 sales", Period(2, 2021), False),
])
def test_a_mention_agrees_with_the_period_as_documented(sentence, period, agrees):
    text = tokens(sentence)
    (mention,) = period_mentions(text)
    forward = any(w in text for w in ("sees", "expects"))
    assert mention_agrees(mention, period, forward) is agrees


def test_a_year_against_an_unknown_year_is_not_judged():
    (mention,) = period_mentions(tokens("2021 sales were strong"))
    assert mention_agrees(mention, Period(2, None), False) is None


# ------------------------------------------------------------------------------------ metrics and numbers

def test_the_lexicon_matches_the_longest_phrase_and_combined_entries():
    lex = lexicon()
    assert [m for _, _, m in lex.find(tokens("same-store sales and gross margin and sales"))] == \
        ["same_store_sales", "margin", "revenue"]
    assert "eps" in lex.metrics_of(tokens("We earned $0.31 per share in earnings."))
    assert "eps" not in lex.metrics_of(tokens("We declared a dividend of $0.25 per share."))


def test_a_lexicon_from_data_is_honoured():
    lex = Lexicon.from_mapping({"metrics": {"widgets": ["widgets shipped"]}, "estimate_words": []})
    assert lex.metrics_of(tokens("We had 300 widgets shipped.")) == {"widgets"}


def test_a_number_for_its_own_metric_is_in_context():
    (claim,) = claims_of("q2 adjusted earnings per share $0.31.")
    assert (claim.metric, claim.status, claim.sentences) == ("eps", "in_context", [3])


def test_a_number_for_another_metric_is_elsewhere():
    (claim,) = claims_of("Sees fy sales $112.1 million.")  # net debt stated as sales
    assert (claim.metric, claim.status, claim.in_source) == ("revenue", "elsewhere", True)


def test_a_number_the_source_lacks_is_absent():
    (claim,) = claims_of("q2 sales $500 million.")
    assert (claim.status, claim.in_source) == ("absent", False)


def test_per_share_after_the_number_makes_it_eps():
    (claim,) = claims_of("q2 earnings of $0.31 per share.")  # "earnings" before is generic: eps by "per share"
    assert (claim.metric, claim.status) == ("eps", "in_context")
    (dividend,) = claims_of("Quarterly dividend of $0.25 per share.")
    assert (dividend.metric, dividend.status) == ("dividend", "in_context")


def test_estimates_and_numbers_without_metric_are_apart():
    estimate, = claims_of("versus refinitiv ibes estimate of $0.64.")
    assert estimate.status == "estimate"
    sales, estimate = claims_of("q2 sales $403.6 million versus refinitiv ibes estimate of $409.4 million.")
    assert (sales.status, estimate.status) == ("in_context", "estimate")
    (bare,) = claims_of("The company has $112.1 million.")
    assert (bare.status, bare.in_source) == ("no_metric", True)


def test_years_and_one_digit_numbers_are_not_claims():
    assert claims_of("q2 2021 sales rose in 5 regions.") == []


# ------------------------------------------------------------------------------------ directions

def test_a_direction_is_compared_with_the_source_sentence_holding_the_number():
    rose, to = claims_of("q2 sales rose 28 percent to $403.6 million.")
    assert (rose.direction, rose.source_direction, rose.direction_agrees) == (1, -1, False)
    assert to.direction_agrees is False
    (fell,) = claims_of("q2 sales fell 28%.")
    assert fell.direction_agrees is True


def test_a_direction_after_the_number_in_the_source_counts_and_up_to_is_no_direction():
    (claim,) = claims_of("Gross margin rose to 12.1%.")  # source: "improved to 12.1%"
    assert claim.direction_agrees is True
    (bound,) = claims_of("Sales of up to $403.6 million.")
    assert bound.direction is None


def test_a_claim_whose_source_has_no_direction_is_unverifiable():
    counts, _ = document_claims("q2 eps rose to $0.31.", source())
    # the $0.31 sentence says "were $0.31, compared to $0.64 a year ago": no direction word
    assert (counts.direction_claims, counts.direction_unverifiable) == (0, 1)


# ------------------------------------------------------------------------------------ malformed figures

@pytest.mark.parametrize("summary, bad", [
    ("sees fy sales $ per share.", True),
    ("revenue $ common billion.", True),
    ("revenue $, million.", True),
    ("revenue up 5% million.", True),
    ("revenue up 5% percent.", True),
    ("revenue of $5 percent.", True),
    ("revenue of percent.", True),
    ("revenue of $5 million billion.", True),
    ("revenue $403.6 million, up 5%.", False),
    ("eps $(0.03) per share.", False),
    ("revenue of five million dollars and 2.5 percent growth.", False),
])
def test_malformed_figures(summary, bad):
    assert bool(malformed_figures(tokens(summary))) is bad


# ------------------------------------------------------------------------------------ numbers stated so (strict)

Q4 = "We are pleased with our fourth quarter results. "
Q1 = "We are pleased with our first quarter results. "


@pytest.mark.parametrize("source, summary, lexical, strict", [
    # two metrics in one source sentence: the number is stated for the one read at it
    (Q4 + "Revenue was $3.7 billion and adjusted EBITDA was $830 million.", "q4 revenue $830 million.",
     "in_context", False),
    (Q4 + "Revenue was $3.7 billion and adjusted EBITDA was $830 million.", "q4 adjusted ebitda $830 million.",
     "in_context", True),
    # the metric after the number
    (Q4 + "We generated $500 million of free cash flow as revenue rose 5%.", "q4 free cash flow of $500 million.",
     "in_context", True),
    (Q4 + "We generated $500 million of free cash flow as revenue rose 5%.", "q4 revenue of $500 million.",
     "in_context", False),
    # last year's value is a comparison
    (Q1 + "Adjusted EPS decreased 52% from $0.64 per share to $0.31 per share.", "q1 adjusted eps $0.64.",
     "in_context", False),
    (Q1 + "Adjusted EPS decreased 52% from $0.64 per share to $0.31 per share.", "q1 adjusted eps $0.31.",
     "in_context", True),
    # GAAP given as non-GAAP; a summary that names no basis is not judged on it
    (Q1 + "GAAP earnings per share of $1.41 compared to $1.12 in the year ago quarter.",
     "q1 non-gaap earnings per share of $1.41.", "in_context", False),
    (Q1 + "GAAP earnings per share of $1.41 compared to $1.12 in the year ago quarter.",
     "q1 earnings per share of $1.41.", "in_context", True),
    # a change is not a level
    (Q1 + "We reported an earnings per share improvement of $0.08.", "q1 earnings per share of $0.08.",
     "in_context", False),
    (Q1 + "Revenue rose 7% to $1.8 billion.", "q1 revenue rose 7 percent to $1.8 billion.", "in_context", True),
    (Q1 + "Revenue rose 7% to $1.8 billion.", "q1 revenue of $1.8 billion.", "in_context", True),
    (Q1 + "Revenue rose 7% to $1.8 billion.", "q1 revenue of 7 percent.", "in_context", False),
    # guidance is not a result, and a guidance word after the number does not make it guidance
    (Q4 + "Our full-year 2021 adjusted earnings per share guidance is $2.70 to $2.90 per share.",
     "q4 adjusted earnings per share $2.70.", "in_context", False),
    (Q4 + "Our full-year 2021 adjusted earnings per share guidance is $2.70 to $2.90 per share.",
     "sees fy adjusted earnings per share $2.70.", "in_context", True),
    (Q4 + "Fourth quarter FFO per share of $0.57 exceeded the midpoint of guidance.", "q4 ffo per share of $0.57.",
     "in_context", True),
    # the period: the full year and the year to date are not the quarter
    (Q4 + "For the full year, revenue was $12.1 billion.", "q4 revenue $12.1 billion.", "in_context", False),
    (Q4 + "For the full year, revenue was $12.1 billion.", "fy revenue $12.1 billion.", "in_context", True),
    (Q4 + "For the nine-month period, FFO per share grew 10%.", "qtrly ffo per share rose 10%.", "in_context", False),
    # a sequential change only for a sequential claim; the direction the source states
    (Q4 + "Fourth quarter net sales were up 8% sequentially.", "q4 sales rose 8 percent.", "in_context", False),
    (Q4 + "Fourth quarter net sales were up 8% sequentially.", "q4 sales rose 8 percent sequentially.",
     "in_context", True),
    (Q4 + "Revenues in the quarter were $3.7 billion, down $368 million.", "revenues of $3.7 billion, up 5%.",
     "in_context", False),
    # a number the source lacks, or states only for another metric, is never stated so
    (Q4 + "Revenue was $3.7 billion.", "q4 revenue $3.9 billion.", "absent", False),
    (Q4 + "Net debt was $112.1 million.", "q4 revenue $112.1 million.", "elsewhere", False),
])
def test_numbers_stated_so_tell_apart_what_the_lexical_test_passes(source, summary, lexical, strict):
    claim = sentence_claims(tokens(summary), SourceClaims.from_text(source))[0]  # the summary's first number
    assert claim.status == lexical
    assert claim.strict is strict


def test_numbers_stated_so_are_counted_among_the_numbers_with_a_metric():
    source = Q4 + "Revenue was $3.7 billion and adjusted EBITDA was $830 million."
    counts, row = document_claims("q4 revenue $3.7 billion. q4 revenue $830 million. "
                                  "versus refinitiv ibes estimate of $830 million.", source)
    assert (counts.numbers, counts.in_context, counts.stated_so, counts.estimates) == (2, 2, 1, 1)
    assert row["numbers_stated_so"] == 50.0 and row["numbers_in_metric_context"] == 100.0
    assert [c["strict"] for c in row["claims"]] == [True, False, None]
    figures, _ = claim_scores(["q4 revenue $830 million."], [source])
    assert figures["numbers_stated_so"] == 0.0 and figures["numbers_in_metric_context"] == 100.0


# ------------------------------------------------------------------------------------ documents and corpora

def test_document_figures_for_the_issue_example():
    summary = ("Compname reports q3 adjusted earnings per share $0.64.\nQ1 sales rose 28 percent to $403.6 million.\n"
               "Sees fy sales $112.1 million to $ per share.")
    counts, row = document_claims(summary, CALL, "q2 adjusted earnings per share $0.31.")
    # periods: q3 (wrong), q1 (wrong, results), fy (guidance: agrees)
    assert (counts.period_mentions, counts.period_agree) == (3, 1)
    assert (counts.period_mentions_reference, counts.period_agree_reference) == (3, 1)
    # $0.64 is in an eps sentence (last year's: the lexical test passes it), 28% and $403.6 million are
    # sales, $112.1 million is net debt
    assert (counts.numbers, counts.in_context, counts.elsewhere) == (4, 3, 1)
    assert (counts.direction_claims, counts.direction_agree) == (2, 0)
    assert counts.malformed == 1
    assert row["period"] == "q2" and row["period_agreement"] == 33.33 and row["numbers_in_metric_context"] == 75.0
    assert row["malformed_figures"] == ["$ per share"]
    assert [c["status"] for c in row["claims"]] == ["in_context", "in_context", "in_context", "elsewhere"]


def test_a_call_without_a_period_leaves_period_agreement_undefined():
    counts, row = document_claims("q3 revenue $5 million.", "Revenue was $5 million.\nThank you.")
    assert row["period"] is None and row["period_agreement"] is None
    assert counts.period_undetected == 1 and counts.period_mentions == 0
    figures, _ = claim_scores(["q3 revenue $5 million."], ["Revenue was $5 million."])
    assert figures["period_agreement"] is None and figures["period_undetected"] == 1


def test_corpus_figures_are_micro_averages():
    summaries = ["q2 sales $403.6 million.", "q2 sales $112.1 million. q2 eps $0.31."]
    figures, rows = claim_scores(summaries, [CALL, CALL])
    assert figures["numbers_with_metric"] == 3 and figures["numbers_in_metric_context"] == pytest.approx(66.67)
    assert [r["numbers_in_metric_context"] for r in rows] == [100.0, 50.0]
    total = ClaimCounts()
    for s in summaries:
        total.add(document_claims(s, CALL)[0])
    assert total.in_context == 2 and total.summaries == 2
    with pytest.raises(ValueError):
        claim_scores(summaries, [CALL])


def test_lead3_writes_the_claim_figures(tmp_path, capsys):
    data = tmp_path / "calls.jsonl"
    data.write_text(json.dumps({"id": "c", "article": CALL, "summary": "q2 sales fell 28 percent to $403.6 million."})
                    + "\n", encoding="utf-8")
    assert main(["lead3", "--data", str(data), "--sentences", "2", "--out", str(tmp_path / "out")]) == 0
    assert "claims: period agreement 100.0% of 2 mentions" in capsys.readouterr().out
    scores = json.loads((tmp_path / "out" / "scores.json").read_text(encoding="utf-8"))
    # the lead: "... second quarter fiscal 2021 results." and "Sales decreased 28% to $403.6 million, compared
    # with the second quarter of last year.": both name the reported quarter
    assert scores["numbers_in_metric_context"] == 100.0 and scores["numbers_with_metric"] == 2
    assert scores["direction_agreement"] == 100.0 and scores["malformed_figures"] == 0.0
    (row,) = [json.loads(line) for line in (tmp_path / "out" / "predictions.jsonl").read_text().splitlines()]
    assert row["period"] == "q2" and row["numbers_in_metric_context"] == 100.0
