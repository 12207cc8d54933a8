"""Search strategies against a scripted fake decoder (deterministic, no trained model)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch

from agentsum.data.batch import Batch, make_batch
from agentsum.models.base import StepModel
from agentsum.decoding.search import (
    Hypotheses,
    SearchConfig,
    beam_search,
    block_repeated_ngrams,
    greedy_search,
    search,
)
from agentsum.data.vocab import BOS_ID, EOS_ID, PAD_ID, SPECIALS, UNK_ID, Vocabulary
from agentsum.decoding.copying import to_words

WORDS = ["a", "b", "c", "d", "e", "f", "g", "x", "y", "z"]
VOCAB = Vocabulary(list(SPECIALS) + WORDS)
V = len(VOCAB)
BASE = 1e-4  # about the probability weight of every allowed token a table does not list


def w(token: str) -> int:
    return VOCAB.id(token)


# ------------------------------------------------------------------------------------------
# Scripted fake decoder
# ------------------------------------------------------------------------------------------

# (document key, tokens produced so far) -> {next token id: probability weight}
DistFn = Callable[[str, tuple[int, ...]], dict[int, float]]
# (document key, tokens so far, agent lengths) -> (word attention (A, S), agent attention (A,)) or None
AttnFn = Callable[[str, tuple[int, ...], list[int], int], "tuple[torch.Tensor, torch.Tensor] | None"]


@dataclass
class FakeAttention:
    word: torch.Tensor
    agent: torch.Tensor


@dataclass
class FakeEnc:
    keys: list[str]
    n_oov: list[int]
    agent_lengths: list[list[int]]
    width: int
    S: int

    def select(self, index: torch.Tensor) -> "FakeEnc":
        idx = index.tolist()
        return FakeEnc(
            [self.keys[i] for i in idx],
            [self.n_oov[i] for i in idx],
            [self.agent_lengths[i] for i in idx],
            self.width,
            self.S,
        )


@dataclass
class FakeState:
    prefix: torch.Tensor  # (N, t) tokens produced so far
    started: bool = False

    def select(self, index: torch.Tensor) -> "FakeState":
        return FakeState(self.prefix.index_select(0, index), self.started)


def default_attention(prev: int, agent_lengths: list[int], S: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Agent prev % A gets most agent attention; inside each agent, position (prev + a) % len peaks."""
    A = len(agent_lengths)
    word = torch.zeros(A, S)
    for a, n in enumerate(agent_lengths):
        if n == 0:
            continue
        word[a, :n] = 0.4 / n
        word[a, (prev + a) % n] += 0.6
    star = prev % A
    agent = torch.full((A,), 0.3 / max(A - 1, 1))
    agent[star] = 0.7
    return word, agent


def expected_copy_position(prev: int, agent_lengths: list[int], S: int) -> int:
    a = prev % len(agent_lengths)
    return a * S + (prev + a) % agent_lengths[a]


class FakeModel:
    """Implements the StepModel interface with hand-written next-token tables."""

    vocab_size = V

    def __init__(self, dist_fn: DistFn, attn_fn: AttnFn | None = None):
        self.dist_fn = dist_fn
        self.attn_fn = attn_fn
        self.calls: list[int] = []  # rows decoded at every step

    def encode(self, batch: Batch) -> FakeEnc:
        return FakeEnc(
            keys=list(batch.ids),
            n_oov=[len(o) for o in batch.oov_words],
            agent_lengths=batch.src_lengths.tolist(),
            width=V + batch.max_oov,
            S=batch.src_ids.size(2),
        )

    def init_state(self, enc: FakeEnc) -> FakeState:
        return FakeState(torch.zeros((len(enc.keys), 0), dtype=torch.long))

    def log_prob_row(self, key: str, prefix: tuple[int, ...], n_oov: int, width: int) -> torch.Tensor:
        """The next-token log-probs: listed weights, BASE for other real tokens, -inf elsewhere."""
        weights = torch.zeros(width, dtype=torch.float64)
        # slightly different weights per id, so that no two hypotheses tie exactly
        weights[UNK_ID : V + n_oov] = BASE * (1 + 0.01 * torch.arange(V + n_oov - UNK_ID, dtype=torch.float64))
        weights[BOS_ID] = 0.0
        for tok, p in self.dist_fn(key, prefix).items():
            assert tok < V + n_oov, f"table of {key!r} lists token {tok} outside its extended vocabulary"
            weights[tok] = p
        return (weights / weights.sum()).log().float()

    def step(self, enc: FakeEnc, state: FakeState, input_ids: torch.Tensor):
        N = input_ids.size(0)
        assert len(enc.keys) == N and state.prefix.size(0) == N
        assert bool((input_ids < enc.width).all())
        self.calls.append(N)
        if state.started:
            prefix = torch.cat([state.prefix, input_ids.unsqueeze(1)], dim=1)
        else:
            assert bool((input_ids == BOS_ID).all())
            prefix = state.prefix
        rows, words, agents = [], [], []
        A = len(enc.agent_lengths[0])
        for r in range(N):
            key, p = enc.keys[r], tuple(prefix[r].tolist())
            rows.append(self.log_prob_row(key, p, enc.n_oov[r], enc.width))
            att = self.attn_fn(key, p, enc.agent_lengths[r], enc.S) if self.attn_fn else None
            if att is None:
                att = default_attention(int(input_ids[r]), enc.agent_lengths[r], enc.S)
            words.append(att[0])
            agents.append(att[1])
        assert all(a.numel() == A for a in agents)
        attn = FakeAttention(torch.stack(words), torch.stack(agents))
        return torch.stack(rows), FakeState(prefix, True), attn

    def sequence_log_prob(self, batch: Batch, b: int, tokens: list[int], finished: bool) -> tuple[float, int]:
        """Sum of the log-probs of the tokens (and of EOS if finished), and the number of steps."""
        key, n_oov = batch.ids[b], len(batch.oov_words[b])
        seq = list(tokens) + ([EOS_ID] if finished else [])
        total = 0.0
        for j, tok in enumerate(seq):
            total += float(self.log_prob_row(key, tuple(seq[:j]), n_oov, V + n_oov)[tok])
        return total, len(seq)


def table(entries: dict[tuple[str, ...], dict[str, float]], default: dict[str, float] | None = None):
    """A prefix table written with words; returns {prefix ids: {token id: weight}}."""

    def ids(tokens):
        return tuple(EOS_ID if t == "</s>" else w(t) for t in tokens)

    converted = {ids(k): {ids([t])[0]: p for t, p in v.items()} for k, v in entries.items()}
    fallback = {ids([t])[0]: p for t, p in (default or {"</s>": 1.0}).items()}
    return lambda prefix: converted.get(prefix, fallback)


# Beam beats greedy: "a" is the best first token but every continuation is weak.
CLASSIC = table(
    {
        (): {"a": 0.55, "b": 0.45},
        ("a",): {"c": 0.34, "d": 0.33, "e": 0.33},
        ("b",): {"c": 0.95, "</s>": 0.04},
    }
)
# Early EOS everywhere.
SHORT = table({}, default={"</s>": 0.9, "x": 0.1})
# Never ends on its own; alternates two equally likely tokens.
CHATTY = table({}, default={"a": 0.5, "b": 0.4, "c": 0.1})


def loop_dist(prefix: tuple[int, ...]) -> dict[int, float]:
    """Loves "a b c a b c ...", with "d" as a distant second choice.

    The weight of "d" depends on the step so that different hypotheses do not tie exactly
    (top-k breaks ties arbitrarily).
    """
    nxt = {w("a"): w("b"), w("b"): w("c"), w("c"): w("a")}
    prev = prefix[-1] if prefix else w("c")
    return {nxt.get(prev, w("a")): 0.9, w("d"): 0.05 + 0.003 * len(prefix)}


DISTS: dict[str, Callable[[tuple[int, ...]], dict[int, float]]] = {
    "classic": CLASSIC,
    "short": SHORT,
    "chatty": CHATTY,
    "loop": loop_dist,
}


def keyed(key: str, prefix: tuple[int, ...]) -> dict[int, float]:
    return DISTS[key.split("#")[0]](prefix)


DEFAULT_DOC = [["a", "b", "zeta", "c"], ["d", "omega", "e"]]


def build_batch(keys: list[str], docs: list[list[list[str]]] | None = None) -> Batch:
    """A batch whose document ids select the fake's tables (``key#anything`` shares a table)."""
    docs = docs or [DEFAULT_DOC] * len(keys)
    return make_batch(docs, VOCAB, ids=keys)


def cfg(**kw) -> SearchConfig:
    base = dict(beam_size=3, max_length=20, block_trigrams=False, length_penalty=0.0)
    base.update(kw)
    return SearchConfig(**base)


# ------------------------------------------------------------------------------------------
# block_repeated_ngrams
# ------------------------------------------------------------------------------------------


def test_block_repeated_ngrams_hand_built_history():
    history = torch.tensor(
        [
            [5, 6, 7, 5, 6],  # "5 6" seen before, followed by 7
            [5, 6, 7, 6, 9],  # last "6 9" unseen
            [1, 2, 3, 4, 5],  # nothing repeats
            [6, 5, 6, 5, 6],  # "5 6" at 1 -> 5 follows at 3, "5 6" at 3 is the last bigram itself
        ]
    )
    lp = torch.zeros(4, 12)
    out = block_repeated_ngrams(lp, history, n=3)
    expected = torch.zeros(4, 12, dtype=torch.bool)
    expected[0, 7] = True
    expected[3, 5] = True
    assert torch.equal(torch.isinf(out), expected)
    assert torch.equal(out[~expected], lp[~expected])
    assert torch.equal(lp, torch.zeros(4, 12))  # input untouched


def test_block_repeated_ngrams_multiple_matches_and_bigrams():
    history = torch.tensor([[5, 6, 7, 5, 6, 8, 5, 6]])
    out = block_repeated_ngrams(torch.zeros(1, 10), history, n=3)
    assert torch.isinf(out[0]).nonzero().flatten().tolist() == [7, 8]
    # bigram blocking: last token 6 was followed by 7 and 8
    out2 = block_repeated_ngrams(torch.zeros(1, 10), history, n=2)
    assert torch.isinf(out2[0]).nonzero().flatten().tolist() == [7, 8]


def test_block_repeated_ngrams_short_history_is_untouched():
    lp = torch.randn(2, 8)
    assert torch.equal(block_repeated_ngrams(lp, torch.zeros(2, 0, dtype=torch.long)), lp)
    assert torch.equal(block_repeated_ngrams(lp, torch.tensor([[3], [4]])), lp)
    # two tokens: one bigram, no earlier one to repeat
    assert torch.equal(block_repeated_ngrams(lp, torch.tensor([[3, 3], [4, 5]])), lp)


# ------------------------------------------------------------------------------------------
# Greedy and beam
# ------------------------------------------------------------------------------------------


def test_fake_model_satisfies_protocol():
    assert isinstance(FakeModel(keyed), StepModel)


def test_greedy_follows_argmax_path():
    model = FakeModel(keyed)
    batch = build_batch(["classic"])
    hyps = greedy_search(model, batch, cfg(beam_size=1))
    assert isinstance(hyps, Hypotheses) and len(hyps) == 1
    assert hyps.tokens == [[w("a"), w("c")]]
    total, n = model.sequence_log_prob(batch, 0, hyps.tokens[0], finished=True)
    assert n == 3
    assert hyps.scores[0] == pytest.approx(total, abs=1e-5)
    assert len(model.calls) == 3  # stops at EOS


def test_beam_finds_better_sequence_than_greedy():
    model = FakeModel(keyed)
    batch = build_batch(["classic"])
    greedy = greedy_search(model, batch, cfg(beam_size=1))
    beam = beam_search(model, batch, cfg(beam_size=2))
    assert greedy.tokens[0] == [w("a"), w("c")]
    assert beam.tokens[0] == [w("b"), w("c")]
    assert beam.scores[0] > greedy.scores[0]
    assert len(model.calls) == 3 + 3  # beam also stops early (pool full, live hypotheses hopeless)


def test_search_dispatches_on_beam_size():
    batch = build_batch(["classic"])
    assert search(FakeModel(keyed), batch, cfg(beam_size=1)).tokens == [[w("a"), w("c")]]
    assert search(FakeModel(keyed), batch, cfg(beam_size=2)).tokens == [[w("b"), w("c")]]


@pytest.mark.parametrize("penalty", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("key", ["classic", "chatty", "short"])
def test_beam_scores_are_sorted_and_recomputable(key, penalty):
    model = FakeModel(keyed)
    batch = build_batch([key])
    hyps = beam_search(model, batch, cfg(beam_size=4, max_length=6, length_penalty=penalty))
    n_best = hyps.n_best[0]
    assert len(n_best) == 4
    scores = [h.score for h in n_best]
    assert scores == sorted(scores, reverse=True)
    assert hyps.scores[0] == scores[0] and hyps.tokens[0] == n_best[0].tokens
    seen = set()
    for h in n_best:
        total, n = model.sequence_log_prob(batch, 0, h.tokens, h.finished)
        assert h.finished == (len(h.tokens) < 6)
        assert h.score == pytest.approx(total / n**penalty, abs=1e-5)
        assert EOS_ID not in h.tokens and BOS_ID not in h.tokens
        assert len(h.copy_positions) == len(h.tokens) == h.agent_attention.size(0)
        seen.add(tuple(h.tokens))
    assert len(seen) == len(n_best)  # no duplicate hypotheses


def test_length_penalty_changes_the_winner():
    # EOS at once has the best raw sum; "a b c d" is longer but has the best mean log-prob.
    dist = table(
        {
            (): {"</s>": 0.5, "a": 0.45},
            ("a",): {"b": 0.9},
            ("a", "b"): {"c": 0.9},
            ("a", "b", "c"): {"d": 0.9},
            ("a", "b", "c", "d"): {"</s>": 0.9},
        }
    )
    model = FakeModel(lambda key, prefix: dist(prefix))
    batch = build_batch(["any"])
    raw = beam_search(model, batch, cfg(beam_size=2, length_penalty=0.0))
    mean = beam_search(model, batch, cfg(beam_size=2, length_penalty=1.0))
    assert raw.tokens[0] == [] and raw.scores[0] == pytest.approx(math.log(0.5 / 0.95), abs=1e-2)
    assert mean.tokens[0] == [w("a"), w("b"), w("c"), w("d")]


@pytest.mark.parametrize("strategy", [greedy_search, beam_search])
def test_batched_equals_one_document_at_a_time(strategy):
    keys = ["classic", "loop", "short"]
    docs = [
        [["a", "b", "zeta", "c"], ["d", "omega", "e"]],  # two OOV words
        [["kappa", "b"], ["c", "d", "e", "f"]],  # one OOV word
        [["a", "b", "c", "d"], ["e"]],  # none
    ]
    config = cfg(beam_size=1 if strategy is greedy_search else 3, max_length=9, block_trigrams=True, length_penalty=1.0)
    model = FakeModel(keyed)
    batch = build_batch(keys, docs)
    together = strategy(model, batch, config)
    calls = list(model.calls)
    for b in range(3):
        alone_batch = build_batch([keys[b]], [docs[b]])
        alone = strategy(FakeModel(keyed), alone_batch, config)
        assert len(together.n_best[b]) == len(alone.n_best[0])
        for h, g in zip(together.n_best[b], alone.n_best[0]):
            assert h.tokens == g.tokens
            assert h.score == pytest.approx(g.score, abs=1e-5)
            assert h.copy_positions == g.copy_positions  # all documents have S = 4
            assert torch.allclose(h.agent_attention, g.agent_attention)
            assert h.finished == g.finished
    # documents drop out of the working rows as they finish
    width = config.beam_size
    assert calls[0] == 3 * width
    assert calls == sorted(calls, reverse=True)
    assert calls[-1] < calls[0]


@pytest.mark.parametrize("strategy", [greedy_search, beam_search])
def test_trigram_blocking(strategy):
    model = FakeModel(keyed)
    batch = build_batch(["loop"])

    def trigrams(tokens):
        return [tuple(tokens[i : i + 3]) for i in range(len(tokens) - 2)]

    free = strategy(model, batch, cfg(beam_size=2, max_length=12, block_trigrams=False))
    assert free.tokens[0][:6] == [w(t) for t in "a b c a b c".split()]
    assert len(set(trigrams(free.tokens[0]))) < len(trigrams(free.tokens[0]))

    blocked = strategy(model, batch, cfg(beam_size=2, max_length=12, block_trigrams=True))
    if strategy is greedy_search:  # the loop breaks where "c" would repeat "a b c"
        assert blocked.tokens[0][:6] == [w(t) for t in "a b c a b d".split()]
    for h in blocked.n_best[0]:
        assert len(h.tokens) >= 6
        assert len(set(trigrams(h.tokens))) == len(trigrams(h.tokens))


@pytest.mark.parametrize("strategy", [greedy_search, beam_search])
def test_min_length_forbids_early_eos(strategy):
    batch = build_batch(["short"])
    free = strategy(FakeModel(keyed), batch, cfg())
    assert free.tokens[0] == []
    held = strategy(FakeModel(keyed), batch, cfg(min_length=3))
    assert held.tokens[0] == [w("x")] * 3
    assert all(len(h.tokens) >= 3 and h.finished for h in held.n_best[0])


@pytest.mark.parametrize("strategy", [greedy_search, beam_search])
def test_max_length_is_respected(strategy):
    model = FakeModel(keyed)
    batch = build_batch(["chatty", "classic"])
    hyps = strategy(model, batch, cfg(max_length=7))
    assert len(model.calls) == 7
    assert len(hyps.tokens[0]) == 7
    assert all(len(h.tokens) == 7 and not h.finished for h in hyps.n_best[0])
    assert hyps.tokens[1] == ([w("a"), w("c")] if strategy is greedy_search else [w("b"), w("c")])


def test_beam_pool_prefers_finished_over_truncated():
    # one finished hypothesis exists; truncated ones only fill the remaining slots
    dist = table({(): {"</s>": 0.01, "a": 0.99}}, default={"a": 0.6, "b": 0.3, "c": 0.09})
    model = FakeModel(lambda key, prefix: dist(prefix))
    hyps = beam_search(model, build_batch(["any"]), cfg(beam_size=3, max_length=5, length_penalty=1.0))
    n_best = hyps.n_best[0]
    assert len(n_best) == 3
    assert [h.finished for h in n_best].count(True) == 1
    assert [h.score for h in n_best] == sorted((h.score for h in n_best), reverse=True)
    assert n_best[0].tokens == [w("a")] * 5 and not n_best[0].finished  # truncated but better


@pytest.mark.parametrize("strategy", [greedy_search, beam_search])
def test_copy_positions_follow_cascaded_attention(strategy):
    model = FakeModel(keyed)
    batch = build_batch(["classic"])
    hyps = strategy(model, batch, cfg())
    lengths = batch.src_lengths[0].tolist()
    S = batch.src_ids.size(2)
    for h in hyps.n_best[0]:
        prev = [BOS_ID] + h.tokens[:-1]
        assert h.copy_positions == [expected_copy_position(p, lengths, S) for p in prev]
        for j, p in enumerate(prev):
            expected = torch.full((2,), 0.3)
            expected[p % 2] = 0.7
            assert torch.allclose(h.agent_attention[j], expected)


# ------------------------------------------------------------------------------------------
# UNK replacement and words
# ------------------------------------------------------------------------------------------


def unk_model() -> FakeModel:
    dist = table({(): {"<unk>": 0.9}, ("<unk>",): {"a": 0.9}, ("<unk>", "a"): {"</s>": 0.9}})

    def attn(key, prefix, agent_lengths, S):
        if prefix:
            return None
        # largest l alone: agent 0, position 0 ("paris"); largest l * g: agent 1, position 1 ("london")
        word = torch.tensor([[0.9, 0.05, 0.05], [0.1, 0.8, 0.1]])
        agent = torch.tensor([0.2, 0.8])
        return word, agent

    return FakeModel(lambda key, prefix: dist(prefix), attn)


@pytest.mark.parametrize("strategy", [greedy_search, beam_search])
def test_unk_replaced_by_argmax_of_cascaded_attention(strategy):
    batch = build_batch(["unk"], [[["paris", "b", "c"], ["d", "london", "e"]]])
    hyps = strategy(unk_model(), batch, cfg())
    assert hyps.tokens[0] == [UNK_ID, w("a")]
    assert hyps.copy_positions[0][0] == 1 * 3 + 1
    assert to_words(hyps.tokens, hyps.copy_positions, batch, VOCAB) == [["london", "a"]]
    assert to_words(hyps.tokens, hyps.copy_positions, batch, VOCAB, unk_replace=False) == [["<unk>", "a"]]


def test_to_words_maps_extended_ids_to_each_documents_oov_words():
    batch = build_batch(
        ["d0", "d1"],
        [[["zeta", "a"], ["omega", "b"]], [["kappa", "c"], ["d", "e"]]],
    )
    assert batch.oov_words == [["zeta", "omega"], ["kappa"]]
    tokens = [[V + 1, w("a"), V], [V, w("c"), UNK_ID]]
    copies = [[0, 0, 0], [0, 0, 2 + 1]]  # S = 2: position 3 is agent 1, word 1 ("e")
    assert to_words(tokens, copies, batch, VOCAB) == [["omega", "a", "zeta"], ["kappa", "c", "e"]]
    assert to_words(tokens, copies, batch, VOCAB, unk_replace=False)[1] == ["kappa", "c", "<unk>"]


def test_copied_oov_token_is_decoded():
    dist = {(): {V + 1: 0.9}, (V + 1,): {EOS_ID: 0.9}}
    model = FakeModel(lambda key, prefix: dist.get(prefix, {EOS_ID: 1.0}))
    batch = build_batch(["x"], [[["zeta", "a"], ["omega", "b"]]])
    hyps = beam_search(model, batch, cfg())
    assert hyps.tokens[0] == [V + 1]
    assert to_words(hyps.tokens, hyps.copy_positions, batch, VOCAB) == [["omega"]]


def test_unk_on_padding_position_is_kept():
    batch = build_batch(["d0"], [[["a", "b", "c"], ["d"]]])
    assert to_words([[UNK_ID]], [[1 * 3 + 2]], batch, VOCAB) == [["<unk>"]]


def test_config_validation():
    with pytest.raises(ValueError):
        SearchConfig(beam_size=0)
    with pytest.raises(ValueError):
        SearchConfig(min_length=5, max_length=4)
    assert SearchConfig() == SearchConfig(5, 0, 110, True, 1.0, True)


# ------------------------------------------------------------------------------------------
# Sampling (self-critical RL's sample and baseline) goes through the same filters
# ------------------------------------------------------------------------------------------


class TrapModel:
    """Puts most of every step's mass on what search forbids: PAD, BOS and the last extended id of
    the batch (an OOV word of only the document with the most OOV words)."""

    vocab_size = V

    def encode(self, batch: Batch) -> FakeEnc:
        return FakeModel(lambda key, prefix: {}).encode(batch)

    def init_state(self, enc: FakeEnc) -> FakeState:
        return FakeState(torch.zeros((len(enc.keys), 0), dtype=torch.long))

    def step(self, enc: FakeEnc, state: FakeState, input_ids: torch.Tensor):
        N = input_ids.size(0)
        logits = torch.full((N, enc.width), -4.0)
        logits[:, [PAD_ID, BOS_ID, enc.width - 1]] = 3.0
        logits[:, w("a")] = 0.5
        logits[:, w("b")] = 0.4
        logits[:, EOS_ID] = 0.0
        att = [default_attention(int(i), lengths, enc.S) for i, lengths in zip(input_ids, enc.agent_lengths)]
        attn = FakeAttention(torch.stack([a[0] for a in att]), torch.stack([a[1] for a in att]))
        return torch.log_softmax(logits, -1), FakeState(state.prefix, True), attn


def trap_batch() -> Batch:
    # document 0 holds two OOV words (extended ids V and V + 1), document 1 none
    return make_batch([[["omega", "a", "zeta"]], [["a", "b", "c"]]], VOCAB, ids=["d0", "d1"])


def test_sample_and_greedy_obeys_the_filters_of_search():
    from agentsum.decoding.search import sample_and_greedy

    batch = trap_batch()
    # min_length 3 on 3-token documents: the ratio (which would allow 2) is off
    config = SearchConfig(beam_size=1, min_length=3, max_length=12, block_trigrams=True, min_length_ratio=None)
    for seed in range(20):
        sample, greedy = sample_and_greedy(TrapModel(), batch, config, generator=torch.Generator().manual_seed(seed))
        for rows in (sample, greedy):
            for b, row in enumerate(rows.tolist()):
                n = row.index(EOS_ID) + 1 if EOS_ID in row else len(row)
                words, rest = row[:n], row[n:]
                assert all(t == PAD_ID for t in rest)
                assert PAD_ID not in words and BOS_ID not in words
                assert all(t < V + len(batch.oov_words[b]) for t in words)  # no other document's OOV word
                assert EOS_ID not in words[:3]  # min_length
                trigrams = [tuple(words[j:j + 3]) for j in range(len(words) - 2)]
                assert len(trigrams) == len(set(trigrams))  # trigram blocking


def test_the_greedy_half_of_sample_and_greedy_is_greedy_search():
    from agentsum.decoding.search import sample_and_greedy

    batch = trap_batch()
    for config in (SearchConfig(beam_size=1, max_length=8, block_trigrams=False),
                   SearchConfig(beam_size=1, min_length=2, max_length=8, block_trigrams=True)):
        _, greedy = sample_and_greedy(TrapModel(), batch, config, generator=torch.Generator().manual_seed(0))
        hyps = greedy_search(TrapModel(), batch, config)
        for b in range(2):
            row = greedy[b].tolist()
            n = row.index(EOS_ID) if EOS_ID in row else len(row)
            assert row[:n] == hyps.tokens[b]
        # document 0's own OOV word is allowed and the most likely token; document 1's best is "a"
        assert greedy[0, 0].item() == V + 1 and greedy[1, 0].item() == w("a")


# ------------------------------------------------------------------------------------------
# no_repeat_ngram_size and repetition_penalty
# ------------------------------------------------------------------------------------------

def test_ngram_block_order_follows_block_trigrams_unless_given():
    assert SearchConfig().ngram_block == 3 and SearchConfig(block_trigrams=False).ngram_block == 0
    assert SearchConfig(no_repeat_ngram_size=2).ngram_block == 2
    assert SearchConfig(block_trigrams=True, no_repeat_ngram_size=0).ngram_block == 0
    with pytest.raises(ValueError, match="no_repeat_ngram_size"):
        SearchConfig(no_repeat_ngram_size=-1)
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="repetition_penalty"):
            SearchConfig(repetition_penalty=bad)


@pytest.mark.parametrize("strategy", [greedy_search, beam_search])
@pytest.mark.parametrize("n", [1, 2, 4])
def test_no_repeat_ngram_size_forbids_every_repeated_ngram_of_that_size(strategy, n):
    model = FakeModel(keyed)
    batch = build_batch(["loop"])
    found = strategy(model, batch, cfg(beam_size=2, max_length=12, no_repeat_ngram_size=n))
    for h in found.n_best[0]:
        grams = [tuple(h.tokens[i : i + n]) for i in range(len(h.tokens) - n + 1)]
        assert len(set(grams)) == len(grams)
    free = strategy(model, batch, cfg(beam_size=2, max_length=12))
    grams = [tuple(free.tokens[0][i : i + n]) for i in range(len(free.tokens[0]) - n + 1)]
    assert len(set(grams)) < len(grams)  # the scripted model repeats when nothing stops it


@pytest.mark.parametrize("strategy", [greedy_search, beam_search])
def test_blocking_sees_copied_out_of_vocabulary_words(strategy):
    """A copied OOV word (extended id V + i) counts as a word: "omega a omega" cannot be followed
    by "a" under bigram blocking, as "b a b" could not be by "a"."""
    omega = V + 1  # DEFAULT_DOC's OOV words: zeta (V), omega (V + 1)
    cycle = {omega: w("a"), w("a"): omega}
    model = FakeModel(lambda key, prefix: {cycle.get(prefix[-1] if prefix else w("a"), omega): 0.9,
                                           w("d"): 0.05 + 0.001 * len(prefix)})
    batch = build_batch(["oov"])
    free = strategy(model, batch, cfg(beam_size=2, max_length=6))
    assert free.tokens[0] == [omega, w("a")] * 3
    blocked = strategy(model, batch, cfg(beam_size=2, max_length=6, no_repeat_ngram_size=2))
    for h in blocked.n_best[0]:
        grams = [tuple(h.tokens[i : i + 2]) for i in range(len(h.tokens) - 1)]
        assert len(set(grams)) == len(grams)
    assert blocked.tokens[0][:3] == [omega, w("a"), omega] and blocked.tokens[0][3] != w("a")


def test_penalize_repeats_scales_the_log_probs_of_tokens_already_produced():
    from agentsum.decoding.search import penalize_repeats

    log_probs = torch.log(torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25]]))
    log_probs[1, 0] = float("-inf")
    history = torch.tensor([[2, 2, 3], [0, 1, 1]])
    out = penalize_repeats(log_probs, history, 1.5)
    expected = log_probs.clone()
    expected[0, 2] *= 1.5
    expected[0, 3] *= 1.5
    expected[1, 1] *= 1.5  # counted once though it occurred twice; -inf stays -inf
    assert torch.equal(out, expected)
    assert torch.equal(penalize_repeats(log_probs, history, 1.0), log_probs)
    assert torch.equal(penalize_repeats(log_probs, history[:, :0], 2.0), log_probs)


@pytest.mark.parametrize("strategy", [greedy_search, beam_search])
def test_repetition_penalty_turns_the_decoder_from_a_word_it_has_used(strategy):
    """The scripted model prefers "a" at every step (0.5) over "b" (0.4): without a penalty it says
    "a a a ..."; with 2.0, a repeated "a" (log 0.5 * 2 = log 0.25) loses to a fresh "b"."""
    model = FakeModel(lambda key, prefix: {w("a"): 0.5, w("b"): 0.4, w("c"): 0.1 - 0.001 * len(prefix)})
    batch = build_batch(["rep"])
    free = strategy(model, batch, cfg(beam_size=2, max_length=4))
    assert free.tokens[0] == [w("a")] * 4
    penalized = strategy(model, batch, cfg(beam_size=2, max_length=4, repetition_penalty=2.0))
    assert set(penalized.tokens[0][:2]) == {w("a"), w("b")}  # greedy: "a b"; beam may find "b a" as good
    if strategy is greedy_search:
        assert penalized.tokens[0][:2] == [w("a"), w("b")]


@pytest.mark.parametrize("strategy", [greedy_search, beam_search])
def test_a_row_with_every_token_blocked_ends(strategy):
    """Unigram blocking over this 10-word vocabulary (and two OOV words) runs out of tokens before
    min_length: the row ends with EOS rather than taking a forbidden id."""
    model = FakeModel(keyed)
    batch = build_batch(["chatty"])
    found = strategy(model, batch, cfg(beam_size=2, min_length=30, max_length=40, no_repeat_ngram_size=1))
    for h in found.n_best[0]:
        assert h.finished and len(set(h.tokens)) == len(h.tokens) <= 11 + 2
        assert all(t < V + len(batch.oov_words[0]) and t not in (PAD_ID, BOS_ID, EOS_ID) for t in h.tokens)


def test_a_penalty_that_rounds_to_zero_leaves_forbidden_tokens_forbidden():
    from agentsum.decoding.search import penalize_repeats

    log_probs = torch.tensor([[float("-inf"), -1.0, -2.0]])
    out = penalize_repeats(log_probs, torch.tensor([[0, 1]]), 5e-324)
    assert not torch.isnan(out).any() and out[0, 0] == float("-inf") and out[0, 2] == -2.0


@pytest.mark.parametrize("strategy", [greedy_search, beam_search])
def test_repeat_window_forbids_the_last_k_tokens(strategy):
    """The scripted model wants "a x a x ..." ("X and X" in miniature): a window of 2 forbids "a"
    right after "a x", while a window of 1 allows it."""
    cycle = {w("a"): w("x"), w("x"): w("a")}
    model = FakeModel(lambda key, prefix: {cycle.get(prefix[-1] if prefix else w("x"), w("a")): 0.9,
                                           w("d"): 0.05 + 0.001 * len(prefix)})
    batch = build_batch(["xax"])
    assert strategy(model, batch, cfg(beam_size=2, max_length=6, repeat_window=1)).tokens[0] == [w("a"), w("x")] * 3
    found = strategy(model, batch, cfg(beam_size=2, max_length=6, repeat_window=2))
    for h in found.n_best[0]:
        assert all(h.tokens[i] not in h.tokens[max(i - 2, 0) : i] for i in range(len(h.tokens)))
    with pytest.raises(ValueError, match="repeat_window"):
        SearchConfig(repeat_window=-1)
