"""Splitting a tokenized document among the M encoder agents of DCA.

The paper (Celikyilmaz et al., 2018, section 4) truncates CNN/DailyMail articles to 400 or 800
tokens and "distribute[s] the truncated articles among agents ... preserving the paragraph and
sentences as possible"; Appendix A, Table 6 gives per-agent input lengths of 375 (2 agents),
250 (3 agents) and 150 (5 agents). Nothing more is specified, so :func:`split_among_agents`
applies these rules, in order:

1. Truncate: keep the first ``min(max_article_tokens, n_agents * budget)`` tokens (a plain
   token-level cut, as in See et al. 2017; the last kept sentence may lose its tail).
2. Cut over-long sentences: a sentence longer than ``budget`` cannot fit any agent, so it is cut
   into the fewest pieces of at most ``budget`` tokens, of near-equal length (choice: even pieces
   rather than ``budget``-sized ones plus a remainder, which leaves more room for balancing).
3. Balanced partition: the sentence units are divided into ``n_agents`` contiguous groups whose
   largest group is as small as possible (and at most ``budget``); among those, the partition
   with the smallest sum of squared group lengths, with earlier agents preferred on ties (so
   when there are fewer units than agents the *last* agents are the empty ones).
   Choice: balanced lengths mirror the paper's equal per-agent budgets and give every agent
   real content; the sum-of-squares tie-break avoids splits like [250, 250, 30] when
   [250, 140, 140] keeps the same maximum.
4. Fallback: if sentence granularity makes rule 3 impossible (e.g. three 200-token sentences
   for two agents of 250), agents are filled greedily in order, each up to ``budget``; a unit
   that does not fit moves to the next agent, and the last agent takes what still fits, cut
   at the budget. The tail that fits nowhere is dropped.

``data.agent_split: whole`` (:func:`agentsum.data.dataset.agent_budget`) sets the budget to the
whole truncation, so rule 1 keeps the first ``max_article_tokens`` tokens, as one agent reads them,
and rule 2 cuts sentences longer than an equal share, ceil(tokens / M) (``piece``); rule 3 then
only balances the shares along sentence breaks. Choice: Table 6's budgets stay the default, as
printed; on CNN/DM they cut 800-token articles to 720 tokens on average under three agents.

``data.agents: auto`` (:func:`auto_agent_count`) gives each document as many agents as it needs:
the fewest agents whose sentence-aligned groups of at most ``budget`` tokens (rule 2's pieces kept
whole) hold all of its first ``max_article_tokens`` tokens. That is at least ceil(n / budget) for n
tokens, and more where sentence breaks fall badly (three sentences of 250 tokens under a budget of
400 need three agents, not two). Choice: with exactly ceil(n / budget) agents a sentence-aligned
split under the budget may not exist, and rule 4 would then drop the tail; one more agent keeps
every token and every sentence whole. Capped at ``max_agents``, the document is truncated to
``max_agents * budget`` tokens and rules 1-4 apply as for a fixed M.

Invariant in every case: concatenating the agents in order yields the truncated token sequence
or a prefix of it; no token is duplicated or reordered, and no agent exceeds ``budget``.

``data.agent_split: speakers`` (:func:`split_by_speaker`, with ``data.agents: auto``) gives a dialogue
one agent per participant: agent a reads the utterances of the a-th person to speak, in the order
they were said, each with its ``name :`` tag, from the dialogue's first ``max_article_tokens`` tokens.
DCA's agents then are the people: the agent attention says whose words the decoder draws on, and the
agents' messages are the conversation. Choices: an utterance with no ``name :`` of its own (a
second line of the same turn) belongs to the speaker before it; text before the first turn goes to
the first speaker; with ``data.max_agents`` set, the speakers from that number on share the last
agent; a text with no turn is one agent. The order of turns across people is not encoded (each
agent keeps its own person's order only): the decoder learns it from the messages or not at all.
This split alone breaks the invariant below: the agents are the truncated tokens regrouped by
speaker, each group in order.

Sentences, not paragraphs, are the unit: the HF CNN/DailyMail 3.0.0 articles have no paragraph
breaks, so sentence boundaries are the only structure every corpus provides.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from agentsum.data.speakers import is_turn_start

#: Table 6 of the paper, CNN/DailyMail: tokens per agent for 2, 3 and 5 agents.
PAPER_AGENT_BUDGET: dict[int, int] = {2: 375, 3: 250, 5: 150}


def default_agent_budget(n_agents: int, max_article_tokens: int) -> int:
    """Tokens each agent reads: the paper's Table 6 value when it has one (never more than
    ``max_article_tokens``), else an equal share of ``max_article_tokens`` rounded up."""
    if n_agents < 1:
        raise ValueError(f"n_agents must be >= 1, got {n_agents}")
    if max_article_tokens < 1:
        raise ValueError(f"max_article_tokens must be >= 1, got {max_article_tokens}")
    if n_agents == 1:
        return max_article_tokens
    if n_agents in PAPER_AGENT_BUDGET:
        return min(PAPER_AGENT_BUDGET[n_agents], max_article_tokens)
    return math.ceil(max_article_tokens / n_agents)


def auto_agent_count(sentences: Sequence[Sequence[str]], budget: int, max_article_tokens: int,
                     max_agents: int | None = None) -> int:
    """Agents a document gets under ``data.agents: auto`` (see the module docstring): the fewest
    whose sentence-aligned groups of at most ``budget`` tokens hold its first ``max_article_tokens``
    tokens, at most ``max_agents`` (None: no cap), at least 1 (an empty document gets one empty agent).
    :func:`split_among_agents` with this many agents keeps every one of those tokens when uncapped."""
    if budget < 1:
        raise ValueError(f"budget must be >= 1, got {budget}")
    if max_agents is not None and max_agents < 1:
        raise ValueError(f"max_agents must be >= 1 or None, got {max_agents}")
    kept = _truncate(sentences, max_article_tokens)
    needed = max(1, _groups_needed([len(u) for sentence in kept for u in _cut(sentence, budget)], budget))
    return needed if max_agents is None else min(needed, max_agents)


def split_among_agents(
    sentences: Sequence[Sequence[str]],
    n_agents: int,
    budget: int,
    max_article_tokens: int,
    piece: int | None = None,
) -> list[list[str]]:
    """Exactly ``n_agents`` token lists (some empty for short documents); see the module rules.
    ``piece``: the longest sentence unit of rule 2 (default ``budget``). With a budget as large
    as the truncation (``data.agent_split: whole``), pieces of ceil(tokens / M) keep one long
    sentence from filling a single agent."""
    if n_agents < 1:
        raise ValueError(f"n_agents must be >= 1, got {n_agents}")
    if budget < 1:
        raise ValueError(f"budget must be >= 1, got {budget}")
    if max_article_tokens < 0:
        raise ValueError(f"max_article_tokens must be >= 0, got {max_article_tokens}")
    kept = _truncate(sentences, min(max_article_tokens, n_agents * budget))
    size = min(piece or budget, budget)
    units = [unit for sentence in kept for unit in _cut(sentence, size)]
    bounds = _balanced_partition([len(u) for u in units], n_agents, budget)
    if bounds is None:
        return _greedy_fill(units, n_agents, budget)
    return [[tok for unit in units[a:b] for tok in unit] for a, b in bounds]


def split_by_speaker(sentences: Sequence[Sequence[str]], max_article_tokens: int,
                     max_agents: int | None = None) -> list[list[str]]:
    """One token list per participant of a dialogue, in the order they first speak (see the module
    docstring, ``data.agent_split: speakers``); at least one (empty for an empty document)."""
    return [[tok for sentence in group for tok in sentence]
            for group in speaker_groups(sentences, max_article_tokens, max_agents)]


def speaker_groups(sentences: Sequence[Sequence[str]], max_article_tokens: int,
                   max_agents: int | None = None) -> list[list[list[str]]]:
    """:func:`split_by_speaker` with each agent's sentences (utterances) kept apart."""
    if max_agents is not None and max_agents < 1:
        raise ValueError(f"max_agents must be >= 1 or None, got {max_agents}")
    agent_of: dict[str, int] = {}
    groups: list[list[list[str]]] = []
    before: list[list[str]] = []  # sentences before the first turn
    current = None
    for sentence in _truncate(sentences, max_article_tokens):
        if is_turn_start(sentence, 0):
            name = sentence[0]
            if name not in agent_of:
                agent_of[name] = len(agent_of) if max_agents is None else min(len(agent_of), max_agents - 1)
                if agent_of[name] == len(groups):
                    groups.append([])
            current = agent_of[name]
        if current is None:
            before.append(sentence)
        else:
            groups[current].append(sentence)
    if not groups:
        return [before]
    groups[0][:0] = before
    return groups


def _truncate(sentences: Sequence[Sequence[str]], limit: int) -> list[list[str]]:
    """The first ``limit`` tokens, sentence structure kept, empty sentences dropped."""
    kept: list[list[str]] = []
    room = limit
    for sentence in sentences:
        if room <= 0:
            break
        if sentence:
            kept.append(list(sentence[:room]))
            room -= len(kept[-1])
    return kept


def _cut(sentence: list[str], budget: int) -> list[list[str]]:
    """A sentence as the fewest near-equal pieces of at most ``budget`` tokens."""
    pieces = math.ceil(len(sentence) / budget)
    if pieces <= 1:
        return [sentence]
    size, extra = divmod(len(sentence), pieces)
    out: list[list[str]] = []
    start = 0
    for i in range(pieces):
        end = start + size + (1 if i < extra else 0)
        out.append(sentence[start:end])
        start = end
    return out


def _groups_needed(lengths: Sequence[int], cap: int) -> int:
    """Fewest contiguous groups of total <= cap (greedy is optimal for this); units <= cap."""
    groups, filled = 0, cap
    for length in lengths:
        if filled + length > cap:
            groups, filled = groups + 1, 0
        filled += length
    return groups


def _balanced_partition(lengths: Sequence[int], n_groups: int, budget: int) -> list[tuple[int, int]] | None:
    """Unit index ranges of the rule-3 partition, or None when no partition fits ``budget``."""
    if not lengths:
        return [(0, 0)] * n_groups
    if _groups_needed(lengths, budget) > n_groups:
        return None
    if n_groups == 1:  # the one partition (the table below costs a one-agent model 0.1 ms a document)
        return [(0, len(lengths))]
    # Smallest feasible largest-group size, by binary search on the cap.
    lo = max(max(lengths), math.ceil(sum(lengths) / n_groups))
    hi = budget
    while lo < hi:
        mid = (lo + hi) // 2
        if _groups_needed(lengths, mid) <= n_groups:
            hi = mid
        else:
            lo = mid + 1
    return _min_squares_partition(lengths, n_groups, lo)


def _min_squares_partition(lengths: Sequence[int], n_groups: int, cap: int) -> list[tuple[int, int]]:
    """Contiguous partition into ``n_groups`` (possibly empty) groups of total <= cap that
    minimises the sum of squared group totals; ties go to the larger earlier group.

    Dynamic programme over (group, first unit), one group at a time on a (units+1)^2 table of
    group totals: ``cost[i]``, the best cost of placing units[i:] into the groups after the
    current one, gives the current group's best end for every start at once.
    """
    n_units = len(lengths)
    prefix = np.zeros(n_units + 1, dtype=np.int64)
    np.cumsum(lengths, out=prefix[1:])
    total = prefix[None, :] - prefix[:, None]  # total[i, j]: units[i:j] as one group
    upper = np.triu(np.ones((n_units + 1, n_units + 1), dtype=bool))
    fits = upper & (total <= cap)
    square = np.where(fits, total * total, _INFEASIBLE)
    cost = np.full(n_units + 1, _INFEASIBLE, dtype=np.int64)
    cost[n_units] = 0
    choice: list[np.ndarray] = []
    for _ in range(n_groups):
        candidates = np.minimum(square + cost[None, :], _INFEASIBLE)
        # the last (largest) j among equal minima: argmin over the columns reversed
        ends = n_units - np.argmin(candidates[:, ::-1], axis=1)
        cost = candidates[np.arange(n_units + 1), ends]
        choice.append(ends)
    choice.reverse()  # choice[k][i]: end unit of group k when it starts at unit i
    bounds: list[tuple[int, int]] = []
    start = 0
    for k in range(n_groups):
        end = int(choice[k][start])
        bounds.append((start, end))
        start = end
    assert start == n_units, "the cap was checked feasible"
    return bounds


#: Cost of a partition that does not fit (any feasible cost is far below it, and one addition of
#: two such costs stays inside int64).
_INFEASIBLE = np.int64(1 << 61)


def _greedy_fill(units: list[list[str]], n_agents: int, budget: int) -> list[list[str]]:
    """Rule 4: fill agents in order; a unit that does not fit goes to the next agent, and the
    last agent is cut at ``budget``."""
    agents: list[list[str]] = [[] for _ in range(n_agents)]
    current = 0
    for unit in units:
        while current < n_agents - 1 and len(agents[current]) + len(unit) > budget:
            current += 1
        room = budget - len(agents[current])
        agents[current].extend(unit[:room])
        if len(unit) > room:
            break
    return agents
