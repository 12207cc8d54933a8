import random

import pytest

from agentsum.data.agents import PAPER_AGENT_BUDGET, auto_agent_count, default_agent_budget, split_among_agents


def make_doc(*lengths):
    """Sentences of the given lengths with globally unique tokens, so order is checkable."""
    counter = iter(range(1_000_000))
    return [[f"w{next(counter)}" for _ in range(n)] for n in lengths]


def flat(sentences):
    return [t for s in sentences for t in s]


def sentence_starts(doc):
    starts, pos = set(), 0
    for s in doc:
        starts.add(pos)
        pos += len(s)
    return starts


def test_default_agent_budget():
    assert PAPER_AGENT_BUDGET == {2: 375, 3: 250, 5: 150}
    assert default_agent_budget(1, 800) == 800
    assert default_agent_budget(2, 800) == 375
    assert default_agent_budget(3, 800) == 250
    assert default_agent_budget(5, 400) == 150
    assert default_agent_budget(3, 200) == 200  # table value capped by the article limit
    assert default_agent_budget(4, 800) == 200
    assert default_agent_budget(4, 401) == 101  # ceil
    with pytest.raises(ValueError):
        default_agent_budget(0, 800)


def test_one_agent_gets_all_tokens_up_to_max():
    doc = make_doc(30, 40, 50)
    assert split_among_agents(doc, 1, 800, 800) == [flat(doc)]
    assert split_among_agents(doc, 1, 100, 100) == [flat(doc)[:100]]
    assert split_among_agents(doc, 1, 100, 60) == [flat(doc)[:60]]


def test_three_agents_balanced_with_intact_sentences():
    doc = make_doc(*([10] * 7))
    agents = split_among_agents(doc, 3, 30, 800)
    assert [len(a) for a in agents] == [30, 20, 20]  # not [30, 30, 10]
    assert flat(agents) == flat(doc)
    starts = sentence_starts(doc)
    pos = 0
    for agent in agents:  # every agent starts at a sentence boundary
        assert pos in starts
        pos += len(agent)


def test_balanced_partition_minimises_largest_group():
    doc = make_doc(40, 40, 40, 40, 100, 20, 20)
    agents = split_among_agents(doc, 3, 250, 800)
    # The largest group cannot go below 140; of the partitions with 140, [80, 80, 140] is
    # more even than [120, 140, 40].
    assert [len(a) for a in agents] == [80, 80, 140]
    assert flat(agents) == flat(doc)


def test_sentence_longer_than_budget_is_cut_evenly():
    doc = make_doc(400, 50, 50)
    agents = split_among_agents(doc, 3, 250, 800)
    assert [len(a) for a in agents] == [200, 200, 100]
    assert flat(agents) == flat(doc)


def test_article_truncated_to_max_and_agent_capacity():
    doc = make_doc(*([50] * 20))
    agents = split_among_agents(doc, 3, 250, 800)
    assert flat(agents) == flat(doc)[:750]  # 3 * 250 < 800
    assert [len(a) for a in agents] == [250, 250, 250]
    agents = split_among_agents(doc, 3, 250, 400)
    assert flat(agents) == flat(doc)[:400]
    assert max(len(a) for a in agents) == 150  # 400 over 3 agents in whole 50-token sentences


def test_greedy_fallback_when_sentences_do_not_pack():
    # 750 kept tokens = seven 100-token sentences + 50; at most two whole sentences fit 250,
    # so agents are filled in order and the last one is cut at its budget.
    doc = make_doc(*([100] * 10))
    agents = split_among_agents(doc, 3, 250, 800)
    assert [len(a) for a in agents] == [200, 200, 250]
    assert flat(agents) == flat(doc)[:650]


def test_greedy_fallback_keeps_a_prefix():
    doc = make_doc(6, 6, 6)  # no contiguous 2-way split of whole sentences fits 10 each
    agents = split_among_agents(doc, 2, 10, 800)
    assert [len(a) for a in agents] == [6, 10]
    assert flat(agents) == flat(doc)[:16]


def test_short_document_leaves_last_agents_empty():
    doc = make_doc(5, 7)
    agents = split_among_agents(doc, 5, 150, 800)
    assert agents == [doc[0], doc[1], [], [], []]
    assert split_among_agents([], 3, 250, 800) == [[], [], []]
    assert split_among_agents([[], []], 2, 10, 800) == [[], []]


def test_rejects_bad_arguments():
    with pytest.raises(ValueError):
        split_among_agents(make_doc(3), 0, 10, 10)
    with pytest.raises(ValueError):
        split_among_agents(make_doc(3), 2, 0, 10)


def test_random_documents_keep_invariants():
    rng = random.Random(1234)
    for _ in range(400):
        n_agents = rng.choice([1, 2, 3, 4, 5])
        budget = rng.randint(1, 60)
        max_tokens = rng.randint(0, 200)
        doc = make_doc(*(rng.choice([0, 1, 3, 8, 15, 30, 70]) for _ in range(rng.randint(0, 25))))
        agents = split_among_agents(doc, n_agents, budget, max_tokens)
        limit = min(max_tokens, n_agents * budget)
        truncated = flat(doc)[:limit]
        joined = flat(agents)
        assert len(agents) == n_agents
        assert all(len(a) <= budget for a in agents)
        assert joined == truncated[: len(joined)]  # a prefix: nothing duplicated or reordered
        if joined != truncated:  # only the greedy fallback drops tokens, after filling the last agent
            assert len(agents[-1]) == budget
        elif all(len(s) <= budget for s in doc):
            # No sentence needed cutting: every agent starts on a sentence boundary.
            starts = sentence_starts(doc) | {len(truncated)}
            pos = 0
            for agent in agents:
                assert pos in starts or pos >= limit
                pos += len(agent)


def test_auto_agents_are_the_fewest_that_hold_every_sentence_whole():
    """data.agents: auto: three sentences of 250 tokens under a budget of 400 are 750 tokens, ceil = 2
    agents, but no two sentence-aligned groups of <= 400 hold them: three agents keep every token."""
    doc = make_doc(250, 250, 250)
    assert auto_agent_count(doc, 400, 10_000) == 3
    assert [len(a) for a in split_among_agents(doc, 3, 400, 10_000)] == [250, 250, 250]
    assert auto_agent_count(make_doc(100, 100, 150), 400, 10_000) == 1
    assert auto_agent_count(make_doc(300, 100, 200), 400, 10_000) == 2
    assert auto_agent_count(make_doc(900), 400, 10_000) == 3  # an over-long sentence in 3 pieces of 300
    assert auto_agent_count([], 400, 10_000) == auto_agent_count(make_doc(0, 0), 400, 10_000) == 1
    assert auto_agent_count(make_doc(250, 250, 250), 400, 500) == 2  # only the first 500 tokens count
    assert auto_agent_count(doc, 400, 10_000, max_agents=2) == 2
    with pytest.raises(ValueError):
        auto_agent_count(doc, 0, 10)
    with pytest.raises(ValueError):
        auto_agent_count(doc, 10, 10, max_agents=0)


def test_random_documents_under_auto_agents_keep_every_token_in_as_few_agents_as_possible():
    rng = random.Random(99)
    for _ in range(300):
        budget = rng.randint(1, 60)
        max_tokens = rng.randint(1, 400)
        doc = make_doc(*(rng.choice([0, 1, 3, 8, 15, 30, 70]) for _ in range(rng.randint(1, 25))))
        truncated = flat(doc)[:max_tokens]
        count = auto_agent_count(doc, budget, max_tokens)
        agents = split_among_agents(doc, count, budget, max_tokens)
        assert flat(agents) == truncated  # every token, in order
        assert all(len(a) <= budget for a in agents)
        assert count >= -(-len(truncated) // budget)
        if truncated:
            assert all(agents)  # no agent is left empty when the fewest are used
        if count > 1:  # one agent fewer cannot hold them all
            assert flat(split_among_agents(doc, count - 1, budget, max_tokens)) != truncated
        cap = rng.randint(1, 4)
        capped = split_among_agents(doc, auto_agent_count(doc, budget, max_tokens, cap), budget, max_tokens)
        assert len(capped) == min(count, cap)
        assert flat(capped) == truncated[: len(flat(capped))]  # a prefix, truncated to cap x budget
        assert len(flat(capped)) <= cap * budget
