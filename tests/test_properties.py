"""Property-based tests (hypothesis, derandomized): tokenization, agent splitting, OOV extension,
batching, ROUGE and search invariants on generated inputs.

Every property is a real check of a documented contract; the settings are deterministic
(``derandomize=True``) so a failure reproduces on every run.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import string
from dataclasses import dataclass

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from agentsum.data import chinese, text
from agentsum.data.agents import split_among_agents
from agentsum.data.batch import make_batch
from agentsum.data.vocab import BOS_ID, EOS_ID, PAD_ID, SPECIALS, UNK_ID, Vocabulary
from agentsum.decoding.copying import to_words
from agentsum.decoding.search import SearchConfig, search
from agentsum.evaluation.rouge import rouge, rouge_per_document
from agentsum.models import build_model
from agentsum.training.rewards import score as id_score

torch.set_num_threads(1)


def props(n: int):
    """Deterministic hypothesis settings with ``n`` generated examples."""
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ------------------------------------------------------------------------------------------
# Text strategies
# ------------------------------------------------------------------------------------------

MIXED_PIECES = [
    "The U.S. economy", "don't", "o'neill's", "(CNN) -- ", "LONDON, England (CNN) -- ", "Mr. Smith",
    "http://cnn.com/x.html", "a@b.co.uk", "3.5", "1,000", "9/11", "18-year-old", "...", "--",
    "中文字符", "股市上涨。", "Ａ股２０１５", "，", "！", "？", "“引号”", "iPhone 6 Plus", "αβγ ΑΣ", "Σ",
    "Привет мир", "مرحبا", "שלום", "नमस्ते", "こんにちは", "한국어", "🙂👍🏽", "e\u0301", "ﬁ", "①",
    "\u200b", "\ufeff", "\u00ad", "\x00", "\x07", "\x1b[0m", "\u202e", "\ue000", "\U000f0000",
    " ", "\n", "\r\n", "\t", "\u3000", "\u00a0", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x85",
    "``", "''", "‘quoted’", "…", "—", "İ", "ß", "ǅ",
]
PUNCTUATION = string.punctuation + "…—–“”‘’«»¡¿。，！？、；：「」『』（）【】《》·・￥"
HUGE_SPACE = [" " * 2000, "\n" * 500, "\t \r\n\u3000\u00a0" * 200, "\u2028\u2029" * 100, "\n \n" * 300]

texts = st.one_of(
    st.text(max_size=300),  # any code point but surrogates (controls, format chars, private use ...)
    st.lists(st.sampled_from(MIXED_PIECES), max_size=40).map("".join),
    st.lists(st.one_of(st.sampled_from(MIXED_PIECES), st.text(max_size=5)), max_size=30).map(" ".join),
    st.text(alphabet=PUNCTUATION, max_size=80),
    st.builds(lambda a, ws, b: a + ws + b, st.text(max_size=30), st.sampled_from(HUGE_SPACE), st.text(max_size=30)),
)


def _check_tokens(tokens):
    assert isinstance(tokens, list)
    for tok in tokens:
        assert isinstance(tok, str)
        assert tok != "", f"empty token in {tokens!r}"
        assert not any(c.isspace() for c in tok), f"token with whitespace: {tok!r}"
        assert re.search(r"\s", tok) is None, f"token with whitespace: {tok!r}"


def _check_sentences(sentences):
    assert isinstance(sentences, list)
    for sentence in sentences:
        assert sentence, "empty sentence"
        _check_tokens(sentence)


# ------------------------------------------------------------------------------------------
# English tokenization
# ------------------------------------------------------------------------------------------


@props(400)
@given(texts, st.booleans())
def test_english_tokenize_never_fails_and_tokens_are_clean(s, lower):
    tokens = text.tokenize(s, lower)
    _check_tokens(tokens)
    if lower:
        assert tokens == [t.lower() for t in tokens]


@props(300)
@given(texts)
def test_english_article_and_summary_sentences_are_clean(s):
    _check_sentences(text.article_sentences(s))
    summary = text.summary_sentences(s)
    _check_sentences(summary)
    for sentence in summary:  # every highlight ends a sentence (a '.' is appended if needed)
        end = len(sentence)
        while end > 0 and sentence[end - 1] in {'"', "'", ")"}:
            end -= 1
        assert end > 0 and sentence[end - 1] in text.SENTENCE_END, sentence


# ------------------------------------------------------------------------------------------
# Chinese tokenization
# ------------------------------------------------------------------------------------------


def _normalised_without_space(s: str) -> str:
    return re.sub(r"\s+", "", chinese.normalize(s))


@props(400)
@given(texts)
def test_chinese_char_mode_clean_and_round_trips(s):
    tokens = chinese.tokenize(s, "char")
    _check_tokens(tokens)
    assert "".join(tokens) == _normalised_without_space(s)
    _check_sentences(chinese.article_sentences(s, "char"))
    _check_sentences(chinese.summary_sentences(s, "char"))


@props(200)
@given(texts)
def test_chinese_jieba_mode_never_fails_and_tokens_are_clean(s):
    _check_tokens(chinese.tokenize(s, "jieba"))
    _check_tokens(chinese.tokenize(s, "jieba", lower=False))
    _check_sentences(chinese.article_sentences(s, "jieba"))


@props(200)
@given(texts)
@example("AΣ")  # jieba splits "A" | "Σ"; "Σ".lower() == "σ" but "AΣ".lower() == "aς" (final sigma)
def test_chinese_jieba_mode_round_trips(s):
    """The module docstring promises the round trip for both modes: jieba tokens are lower-cased
    one by one, normalize() lower-cases the whole text, and str.lower() is context-sensitive for a
    word-final capital sigma, so the two disagree when jieba cuts next to a "Σ"."""
    assert "".join(chinese.tokenize(s, "jieba")) == _normalised_without_space(s)


# ------------------------------------------------------------------------------------------
# Splitting a document among agents
# ------------------------------------------------------------------------------------------

WORD = st.sampled_from([f"w{i}" for i in range(30)])
sentence_lists = st.lists(st.lists(WORD, max_size=25), max_size=12)


def _truncated(sentences, limit):
    flat = [t for s in sentences for t in s]
    return flat[:limit]


def _cut_units(sentences, limit, budget):
    """The documented rule-1/2 units: truncated sentences, over-long ones cut into the fewest
    near-equal pieces of at most ``budget`` tokens."""
    units, room = [], limit
    for s in sentences:
        if room <= 0:
            break
        if not s:
            continue
        s = s[:room]
        room -= len(s)
        pieces = math.ceil(len(s) / budget)
        size, extra = divmod(len(s), pieces)
        start = 0
        for i in range(pieces):
            end = start + size + (1 if i < extra else 0)
            units.append(s[start:end])
            start = end
    return units


def _packable(lengths, n_groups, budget):
    """A contiguous packing into n_groups of total <= budget exists (first fit in order is optimal)."""
    groups, filled = 1, 0
    for length in lengths:
        if length > budget:
            return False
        if filled + length > budget:
            groups, filled = groups + 1, 0
        filled += length
    return groups <= n_groups


@props(500)
@given(sentence_lists, st.integers(1, 6), st.integers(1, 40), st.integers(0, 200))
def test_split_among_agents_invariants(sentences, n_agents, budget, max_tokens):
    agents = split_among_agents(sentences, n_agents, budget, max_tokens)
    assert len(agents) == n_agents
    assert all(len(a) <= budget for a in agents)
    truncated = _truncated(sentences, min(max_tokens, n_agents * budget))
    joined = [t for a in agents for t in a]
    # a prefix of the truncated token sequence: nothing reordered, duplicated or lost in the middle
    assert joined == truncated[: len(joined)]
    # nothing lost when the whole truncated document fits: it fits one agent, or its units (cut
    # sentences) can be packed contiguously into the agents
    units = _cut_units(sentences, min(max_tokens, n_agents * budget), budget)
    assert [t for u in units for t in u] == truncated
    if len(truncated) <= budget or _packable([len(u) for u in units], n_agents, budget):
        assert joined == truncated
    # agents are cut along unit boundaries whenever nothing is lost
    if joined == truncated and units:
        bounds = set(itertools.accumulate(len(u) for u in units))
        cuts = list(itertools.accumulate(len(a) for a in agents))
        assert all(c == 0 or c in bounds for c in cuts)


@props(300)
@given(st.lists(st.lists(WORD, min_size=1, max_size=1), max_size=60), st.integers(1, 6), st.integers(1, 15),
       st.integers(0, 100))
def test_split_one_token_sentences_loses_nothing(sentences, n_agents, budget, max_tokens):
    """With one-token sentences any document that fits the agents (after truncation) fits exactly."""
    agents = split_among_agents(sentences, n_agents, budget, max_tokens)
    assert [t for a in agents for t in a] == _truncated(sentences, min(max_tokens, n_agents * budget))


# ------------------------------------------------------------------------------------------
# Vocabulary and OOV extension
# ------------------------------------------------------------------------------------------

VOCAB_WORDS = [f"v{i}" for i in range(20)]
VOCAB = Vocabulary(list(SPECIALS) + VOCAB_WORDS)
V = len(VOCAB)
any_token = st.one_of(st.sampled_from(VOCAB_WORDS + list(SPECIALS)), st.text(max_size=6))
plain_token = st.one_of(st.sampled_from(VOCAB_WORDS), st.sampled_from([f"oov{i}" for i in range(12)]))


@props(300)
@given(st.lists(any_token, max_size=40), st.lists(st.text(max_size=4), max_size=3, unique=True))
def test_encode_extended_round_trips(tokens, initial_oovs):
    oovs = [w for w in initial_oovs if w not in VOCAB.stoi]
    before = list(oovs)
    ids = VOCAB.encode_extended(tokens, oovs)
    assert oovs[: len(before)] == before  # only appended to
    assert len(set(oovs)) == len(oovs)
    assert VOCAB.decode(ids, oovs) == tokens
    for tok, i in zip(tokens, ids):
        assert (i >= V) == (tok not in VOCAB.stoi)
    assert VOCAB.to_input_ids(torch.tensor(ids, dtype=torch.long)).tolist() == VOCAB.encode(tokens)


@props(300)
@given(st.lists(any_token, max_size=30), st.lists(any_token, max_size=30))
def test_encode_target_extends_only_source_oovs(source, target):
    oovs: list[str] = []
    VOCAB.encode_extended(source, oovs)
    ids = VOCAB.encode_target(target, oovs)
    assert len(ids) == len(target)
    for tok, i in zip(target, ids):
        if tok in VOCAB.stoi:
            assert i == VOCAB.stoi[tok]
        elif tok in oovs:
            assert i == V + oovs.index(tok) and i >= V
        else:
            assert i == UNK_ID
    assert VOCAB.decode([i for i in ids if i != UNK_ID], oovs) == [t for t, i in zip(target, ids) if i != UNK_ID]


@props(200)
@given(st.lists(st.integers(0, V + 15), max_size=50), st.integers(1, 3))
def test_to_input_ids_maps_extended_ids_to_unk(ids, rows):
    x = torch.tensor([ids] * rows, dtype=torch.long).reshape(rows, len(ids))
    y = VOCAB.to_input_ids(x)
    assert y.shape == x.shape and y.dtype == x.dtype
    expected = [[UNK_ID if i >= V else i for i in ids]] * rows
    assert y.tolist() == expected
    assert x.tolist() == [ids] * rows  # input untouched


# ------------------------------------------------------------------------------------------
# Batches
# ------------------------------------------------------------------------------------------


@st.composite
def documents(draw):
    B = draw(st.integers(1, 4))
    A = draw(st.integers(1, 4))
    docs = [[draw(st.lists(plain_token, max_size=9)) for _ in range(A)] for _ in range(B)]
    summaries = [draw(st.lists(plain_token, max_size=9)) for _ in range(B)]
    return docs, summaries


@props(200)
@given(documents())
def test_make_batch_shapes_and_masks(data):
    docs, summaries = data
    batch = make_batch(docs, VOCAB, summaries=summaries)
    B, A = len(docs), len(docs[0])
    S = max(1, max(len(c) for d in docs for c in d))
    assert batch.src_ids.shape == batch.src_ext_ids.shape == batch.src_mask.shape == (B, A, S)
    assert batch.src_lengths.tolist() == [[len(c) for c in d] for d in docs]
    assert batch.num_source_tokens() == int(batch.src_mask.sum()) == sum(len(c) for d in docs for c in d)
    assert batch.agent_mask.tolist() == [[len(c) > 0 for c in d] for d in docs]
    T = max(len(s) for s in summaries) + 1
    assert batch.tgt_in.shape == batch.tgt_out.shape == batch.tgt_mask.shape == (B, T)
    assert batch.tgt_mask.sum(1).tolist() == [len(s) + 1 for s in summaries]
    assert batch.num_target_tokens() == sum(len(s) + 1 for s in summaries)
    for b, (doc, summary) in enumerate(zip(docs, summaries)):
        n = len(summary)
        assert batch.tgt_mask[b].tolist() == [True] * (n + 1) + [False] * (T - n - 1)
        assert batch.tgt_in[b, 0].item() == BOS_ID and batch.tgt_out[b, n].item() == EOS_ID
        assert batch.tgt_in[b, 1 : n + 1].tolist() == VOCAB.encode(summary)
        assert batch.tgt_out[b, :n].tolist() == VOCAB.encode_target(summary, batch.oov_words[b])
        assert (batch.tgt_in[b] < V).all()
        oovs = batch.oov_words[b]
        assert oovs == list(dict.fromkeys(t for c in doc for t in c if t not in VOCAB.stoi))
        for a, chunk in enumerate(doc):
            n_a = len(chunk)
            assert batch.src_mask[b, a].tolist() == [True] * n_a + [False] * (S - n_a)
            assert VOCAB.decode(batch.src_ext_ids[b, a, :n_a].tolist(), oovs) == chunk
            assert batch.src_ids[b, a, :n_a].tolist() == VOCAB.encode(chunk)
            assert (batch.src_ids[b, a, n_a:] == PAD_ID).all() and (batch.src_ext_ids[b, a, n_a:] == PAD_ID).all()
        assert batch.src_tokens[b] == doc


# ------------------------------------------------------------------------------------------
# ROUGE
# ------------------------------------------------------------------------------------------

ROUGE_WORDS = ["cat", "cats", "dog", "run", "running", "the", "a", "park", "12", "x1", "b"]
rouge_sentence = st.lists(st.one_of(st.sampled_from(ROUGE_WORDS), st.sampled_from([".", ",", "!", "'s", "--"])),
                          max_size=10).map(" ".join)
rouge_text = st.one_of(st.lists(rouge_sentence, max_size=3).map("\n".join), st.text(max_size=40))


def _alnum_tokens(s: str) -> list[str]:
    """What rouge-score's default tokenizer keeps: lower-cased [a-z0-9] runs."""
    return re.findall(r"[a-z0-9]+", s.lower())


@props(150)
@given(rouge_text, rouge_text)
def test_rouge_bounds_and_f1_symmetry(pred, ref):
    fwd = rouge([pred], [ref])
    bwd = rouge([ref], [pred])
    for key, value in fwd.items():
        if key != "n":
            assert 0.0 <= value <= 100.0, (key, value)
    for kind in ("rouge1", "rouge2"):
        assert fwd[kind] == pytest.approx(bwd[kind], abs=1e-9)
        assert fwd[kind + "_p"] == pytest.approx(bwd[kind + "_r"], abs=1e-9)
    if "\n" not in pred and "\n" not in ref:  # one sentence: rougeLsum is plain ROUGE-L, symmetric
        assert fwd["rougeLsum"] == pytest.approx(bwd["rougeLsum"], abs=1e-9)


@props(150)
@given(rouge_text)
def test_rouge_identity_is_100(s):
    tokens = _alnum_tokens(s)
    assume(tokens)
    scores = rouge([s], [s])
    assert scores["rouge1"] == pytest.approx(100.0)
    assert scores["rougeLsum"] == pytest.approx(100.0)
    if len(tokens) >= 2 and "\n" not in s:
        assert scores["rouge2"] == pytest.approx(100.0)
    per_doc = rouge_per_document([s], [s])[0]
    assert per_doc["rouge1"]["p"] == pytest.approx(1.0) and per_doc["rouge1"]["r"] == pytest.approx(1.0)


ids_list = st.lists(st.integers(0, 12), max_size=30)


@props(400)
@given(ids_list, ids_list)
def test_reward_score_bounds_identity_and_symmetry(cand, ref):
    for kind in ("rouge1", "rouge2", "rougeL"):
        s = id_score(cand, ref, kind)
        r = id_score(ref, cand, kind)
        for v in s:
            assert 0.0 <= v <= 1.0
        assert s.fmeasure == r.fmeasure
        assert s.precision == r.recall and s.recall == r.precision
        if cand:
            same = id_score(cand, list(cand), kind)
            if kind != "rouge2" or len(cand) >= 2:
                assert same.fmeasure == pytest.approx(1.0) and same.precision == pytest.approx(1.0)
    # ROUGE-L F1 never exceeds ROUGE-1 F1 (an LCS is a set of unigram matches)
    assert id_score(cand, ref, "rougeL").fmeasure <= id_score(cand, ref, "rouge1").fmeasure + 1e-12


# ------------------------------------------------------------------------------------------
# Search: a random second-order Markov fake implementing StepModel
# ------------------------------------------------------------------------------------------


@dataclass
class MarkovAttention:
    word: torch.Tensor
    agent: torch.Tensor


@dataclass
class MarkovEnc:
    doc: torch.Tensor  # (N,) document of each row
    n_oov: torch.Tensor  # (N,)
    mask: torch.Tensor  # (N, A, S)

    def select(self, index: torch.Tensor) -> "MarkovEnc":
        return MarkovEnc(self.doc.index_select(0, index), self.n_oov.index_select(0, index),
                         self.mask.index_select(0, index))


@dataclass
class MarkovState:
    prev: torch.Tensor  # (N, 2): the two previous tokens (BOS at the start)

    def select(self, index: torch.Tensor) -> "MarkovState":
        return MarkovState(self.prev.index_select(0, index))


class MarkovModel:
    """log p(next | doc, two previous tokens) from a fixed random table; PAD, BOS and extended ids
    beyond the row's own OOV words get -inf (like a real pointer-generator)."""

    def __init__(self, vocab_size: int, max_width: int, n_docs: int, seed: int, sharpness: float):
        g = torch.Generator().manual_seed(seed)
        self.vocab_size = vocab_size
        self.table = torch.randn(n_docs, max_width, max_width, max_width, generator=g) * sharpness
        self.calls = 0

    def encode(self, batch):
        B = batch.batch_size
        return MarkovEnc(torch.arange(B), torch.tensor([len(o) for o in batch.oov_words]), batch.src_mask)

    def init_state(self, enc):
        return MarkovState(torch.full((enc.doc.numel(), 2), BOS_ID, dtype=torch.long))

    def log_probs(self, doc: torch.Tensor, prev: torch.Tensor, n_oov: torch.Tensor, width: int) -> torch.Tensor:
        logits = self.table[doc, prev[:, 0], prev[:, 1], :width].clone()
        allowed = torch.arange(width).unsqueeze(0) < (self.vocab_size + n_oov).unsqueeze(1)
        logits[~allowed] = float("-inf")
        logits[:, PAD_ID] = float("-inf")
        logits[:, BOS_ID] = float("-inf")
        return torch.log_softmax(logits, dim=-1)

    def step(self, enc, state, input_ids):
        self.calls += 1
        width = self.width
        new_prev = torch.stack([state.prev[:, 1], input_ids], dim=1)
        lp = self.log_probs(enc.doc, new_prev, enc.n_oov, width)
        N, A, S = enc.mask.shape
        word = enc.mask.float() / enc.mask.float().sum(-1, keepdim=True).clamp(min=1)
        word = word * (1 + (input_ids.view(N, 1, 1) % 3).float() * torch.arange(S).view(1, 1, S) / S)
        agent = torch.softmax((input_ids.view(N, 1) % (A + 1)).float() * torch.arange(A).view(1, A), dim=-1)
        return lp, MarkovState(new_prev), MarkovAttention(word, agent)

    def sequence_log_prob(self, b: int, n_oov: int, tokens: list[int], finished: bool) -> tuple[float, int]:
        prev = [BOS_ID, BOS_ID]
        total = 0.0
        for tok in tokens + ([EOS_ID] if finished else []):
            lp = self.log_probs(torch.tensor([b]), torch.tensor([prev]), torch.tensor([n_oov]), self.width)
            total += float(lp[0, tok])
            prev = [prev[1], tok]
        return total, len(tokens) + int(finished)


SEARCH_WORDS = ["a", "b", "c", "d", "e"]
SEARCH_VOCAB = Vocabulary(list(SPECIALS) + SEARCH_WORDS)
OOV_POOL = ["zeta", "omega", "kappa"]


@st.composite
def search_cases(draw):
    B = draw(st.integers(1, 3))
    docs = []
    for _ in range(B):
        A = 2
        docs.append([draw(st.lists(st.sampled_from(SEARCH_WORDS + OOV_POOL), min_size=1, max_size=5))
                     for _ in range(A)])
    beam = draw(st.integers(1, 4))
    max_length = draw(st.integers(1, 12))
    min_length = draw(st.integers(0, max_length))
    penalty = draw(st.sampled_from([0.0, 0.5, 1.0]))
    seed = draw(st.integers(0, 2**16))
    sharpness = draw(st.sampled_from([0.5, 2.0, 6.0]))
    return docs, beam, max_length, min_length, penalty, seed, sharpness


def _trigrams(tokens):
    return [tuple(tokens[i : i + 3]) for i in range(len(tokens) - 2)]


def _check_hypotheses(hyps, batch, config, vocab_size, model=None):
    """Search invariants; with ``model`` (the Markov fake) the scores are recomputed too."""
    assert len(hyps) == batch.batch_size and len(hyps.n_best) == batch.batch_size
    for b, n_best in enumerate(hyps.n_best):
        assert 1 <= len(n_best) <= config.beam_size
        scores = [h.score for h in n_best]
        assert all(x >= y for x, y in zip(scores, scores[1:])), scores  # best first
        assert hyps.tokens[b] == n_best[0].tokens and hyps.scores[b] == n_best[0].score
        finite = [h for h in n_best if math.isfinite(h.score)]
        assert len({tuple(h.tokens) for h in finite}) == len(finite), "duplicate hypotheses in n_best"
        if model is not None:  # >= 6 possible tokens per step: the pool always fills up
            assert len(finite) == config.beam_size, scores
        for h in finite:
            toks = h.tokens
            assert len(toks) <= config.max_length
            assert len(toks) < config.max_length if h.finished else len(toks) == config.max_length
            if config.block_trigrams:
                assert len(set(_trigrams(toks))) == len(_trigrams(toks)), f"repeated trigram in {toks}"
            # min_length, lowered for a short source to ceil(min_length_ratio * its tokens)
            minimum = config.min_length if config.min_length_ratio is None else \
                min(config.min_length, math.ceil(config.min_length_ratio * int(batch.src_lengths[b].sum())))
            assert len(toks) >= minimum, f"EOS before min_length {minimum}: {toks}"
            assert EOS_ID not in toks, toks
            if model is not None:  # the fake gives PAD and BOS -inf (a random real model does not)
                assert PAD_ID not in toks and BOS_ID not in toks, toks
            assert all(0 <= t < vocab_size + len(batch.oov_words[b]) for t in toks), toks
            assert len(h.copy_positions) == len(toks) == h.agent_attention.size(0)
            if model is not None:
                total, n = model.sequence_log_prob(b, len(batch.oov_words[b]), toks, h.finished)
                pen = config.length_penalty
                expected = total if pen == 0 else total / max(n, 1) ** pen
                assert h.score == pytest.approx(expected, rel=1e-4, abs=1e-4)
    words = to_words(hyps.tokens, hyps.copy_positions, batch, SEARCH_VOCAB)
    assert [len(w) for w in words] == [len(t) for t in hyps.tokens]


@props(200)
@given(search_cases())
def test_search_invariants_with_random_markov_model(case):
    docs, beam, max_length, min_length, penalty, seed, sharpness = case
    batch = make_batch(docs, SEARCH_VOCAB)
    V_ = len(SEARCH_VOCAB)
    model = MarkovModel(V_, V_ + len(OOV_POOL), len(docs), seed, sharpness)
    model.width = V_ + batch.max_oov
    config = SearchConfig(beam_size=beam, min_length=min_length, max_length=max_length, block_trigrams=True,
                          length_penalty=penalty)
    _check_hypotheses(search(model, batch, config), batch, config, V_, model)


@props(20)
@given(search_cases())
def test_search_invariants_with_random_tiny_dca(case):
    docs, beam, max_length, min_length, penalty, seed, _ = case
    torch.manual_seed(seed)
    model = build_model({"type": "dca", "embedding_size": 8, "hidden_size": 8, "contextual_layers": 1,
                         "pointer": "multi", "contextual_agent_attention": True}, len(SEARCH_VOCAB)).eval()
    batch = make_batch(docs, SEARCH_VOCAB)
    config = SearchConfig(beam_size=beam, min_length=min_length, max_length=max_length, block_trigrams=True,
                          length_penalty=penalty)
    _check_hypotheses(search(model, batch, config), batch, config, len(SEARCH_VOCAB))


# ------------------------------------------------------------------------------------------
# Tokenizing by pieces (through a cache) is tokenizing the whole sentence
# ------------------------------------------------------------------------------------------

#: Pieces around the look-aheads that peek past whitespace: titles, months, states, company
#: suffixes, initials, numbers and commas after a '.', clitics, quotes; and pieces ending in '.'
#: that need no join (a lower-case word, a long or inner capitalized run, a digit, a non-ASCII capital).
LOOKAHEAD_PIECES = ["Mr.", "Dr.", "Jan.", "No.", "Pa.", "Calif.", "Inc.", "Co.", "J.", "F.", "U.S.", "a.m.",
                    "5", "10", ",", "Kennedy", "said", "and", "'s", "don't", "''", "``", ".", "...", "x.",
                    "cnn.com", "www.cnn.com.", "A", "b", "--", "hospital.", "Sept.", "Bros.", "Ltd.", "vs.",
                    "(Jan.", "xInc.", "_Inc.", "McCain.", "Wash.", "Wyo.", "5.", "Ä.", "#Person1#", "#Person1#'s"]


def whole_sentence_tokens(sentence: str, lower: bool) -> list[str]:
    """The tokenizer's regex over the whole cleaned sentence at once (the reference)."""
    tokens = text._TOKEN_RE.findall(text._DOUBLE_QUOTE_RE.sub('"', text.clean_text(sentence)))
    return [t.lower() if lower else t for t in tokens if t]


@props(500)
@given(st.lists(st.one_of(st.sampled_from(LOOKAHEAD_PIECES + MIXED_PIECES), st.text(max_size=8)), max_size=25),
       st.lists(st.sampled_from([" ", "  ", "\t", "\u00a0", "\u3000", " \u2028 "]), min_size=1, max_size=3),
       st.booleans())
def test_tokenizing_by_pieces_is_tokenizing_the_whole_sentence(pieces, spaces, lower):
    sentence = "".join(p + spaces[i % len(spaces)] for i, p in enumerate(pieces))
    for _ in range(2):  # the second call is answered from the cache
        assert text.tokenize(sentence, lower) == whole_sentence_tokens(sentence, lower)


@props(300)
@given(texts)
def test_the_buffered_sentence_splitter_is_blingfire(line):
    import blingfire

    line = text.clean_text(line)
    assert text._text_to_sentences(line) == blingfire.text_to_sentences(line)


@props(400)
@given(st.one_of(texts, st.text(alphabet=st.characters(max_codepoint=127), max_size=200)))
def test_clean_text_takes_a_short_path_for_ascii_with_the_same_result(raw):
    assert text.clean_text(raw) == text._CONTROL_RE.sub("", raw.translate(text._CHAR_MAP))


MAPPED = [chr(code) for code in text._CHAR_MAP]


@props(400)
@given(st.lists(st.one_of(st.sampled_from(MAPPED), st.sampled_from(MIXED_PIECES), st.text(max_size=6)), max_size=40)
       .map("".join))
def test_clean_text_replaces_each_mapped_character_as_the_map_does(raw):
    """clean_text replaces the mapped characters one after another (str.replace); the reference is
    the simultaneous map, str.translate, on texts dense in every mapped character."""
    assert text.clean_text(raw) == text._CONTROL_RE.sub("", raw.translate(text._CHAR_MAP))


def _old_sentences(raw: str) -> list[str]:
    """The article's sentences as the whole text cleaned at once and every line given to blingfire."""
    import blingfire

    out = []
    for line in text.clean_text(raw).splitlines():
        line = line.strip()
        if line:
            out.extend(s.strip() for s in blingfire.text_to_sentences(line).split("\n") if s.strip())
    return out


ASCII_LINES = st.lists(st.one_of(st.sampled_from(MIXED_PIECES + LOOKAHEAD_PIECES),
                                 st.text(alphabet=st.characters(max_codepoint=127), max_size=12)),
                       max_size=30).map(" ".join)


@props(500)
@given(st.lists(st.one_of(texts, ASCII_LINES), max_size=6),
       st.lists(st.sampled_from(["\n", "\r\n", "\n\n", "\x0b", "\x1c", "\u2028", "\x85", " \n "]), min_size=1,
                max_size=3))
def test_lazy_sentences_are_the_whole_text_cleaned_and_split(lines, breaks):
    raw = "".join(line + breaks[i % len(breaks)] for i, line in enumerate(lines))
    assert list(text._sentences(raw)) == _old_sentences(raw)


def _old_summary_sentences(raw: str, lower: bool) -> list[list[str]]:
    """summary_sentences as it was: every line through split_sentences, then tokenize (which cleans again)."""
    result = []
    for line in raw.splitlines():
        for sentence in text.split_sentences(text._UPDATE_MARKER_RE.sub("", line)):
            tokens = text.tokenize(sentence, lower)
            if tokens:
                result.append(tokens if text._ends_sentence(tokens) else [*tokens, "."])
    return result


@props(400)
@given(st.lists(st.one_of(texts, ASCII_LINES, ASCII_LINES.map(lambda line: "NEW: " + line)), max_size=5),
       st.booleans())
def test_summary_sentences_by_the_lazy_splitter_are_the_old_ones(lines, lower):
    raw = "\n".join(lines)
    assert text.summary_sentences(raw, lower) == _old_summary_sentences(raw, lower)


@props(500)
@given(ASCII_LINES)
def test_blingfire_keeps_an_ascii_line_without_inner_sentence_end_whole(line):
    import blingfire

    line = text.clean_text(line).strip()
    assume(line.isascii() and line.splitlines() == [line] and not re.search(r"[.!?]", line[:-1]))
    assert blingfire.text_to_sentences(line) == line


def _partitions(n: int, k: int):
    """Every way to cut units [0, n) into k contiguous (possibly empty) groups, as group ends."""
    for cuts in itertools.combinations_with_replacement(range(n + 1), k - 1):
        yield [*cuts, n]


@props(400)
@given(st.lists(st.integers(1, 12), min_size=1, max_size=9), st.integers(1, 4), st.integers(1, 40))
def test_min_squares_partition_is_the_best_of_all_partitions(lengths, groups, slack):
    from agentsum.data.agents import _min_squares_partition

    cap = max(lengths) + slack
    best = None
    for ends in _partitions(len(lengths), groups):
        starts = [0, *ends[:-1]]
        totals = [sum(lengths[a:b]) for a, b in zip(starts, ends)]
        if max(totals) > cap:
            continue
        # smallest sum of squares; on ties the larger earlier groups (lexicographically largest ends)
        rank = (sum(t * t for t in totals), [-e for e in ends])
        if best is None or rank < best[0]:
            best = (rank, list(zip(starts, ends)))
    assume(best is not None)
    assert _min_squares_partition(lengths, groups, cap) == best[1]


@props(400)
@given(st.text(alphabet=st.characters(categories=["Lu", "Ll", "Lt", "Lm", "Lo"]), min_size=1, max_size=12),
       st.booleans())
def test_a_piece_of_letters_is_one_token(piece, lower):
    assert text._piece_tokens(piece, lower) == tuple(whole_sentence_tokens(piece, lower))


def _epoch_order_by_python_sorts(lengths, batch_size, seed, epoch, window):
    """epoch_order as first written, Python sorts throughout (the reference for the numpy one): the
    documents, then the batches, in the order of their raw 64-bit draws; each window by length."""
    bits = np.random.PCG64(np.random.SeedSequence([seed % 2**64, epoch]))
    def shuffled(n):  # by each raw draw's high bits, then by index
        width = max(n - 1, 1).bit_length()
        draws = bits.random_raw(n).tolist() if n else []
        return sorted(range(n), key=lambda i: (draws[i] >> width, i))

    order = shuffled(len(lengths))
    if window > 1:
        span = batch_size * window
        order = [i for s in range(0, len(order), span) for i in sorted(order[s: s + span], key=lambda j: lengths[j])]
    batches = [order[s: s + batch_size] for s in range(0, len(order), batch_size)]
    return [batches[k] for k in shuffled(len(batches))]


@props(300)
@given(st.lists(st.integers(0, 40), max_size=300), st.integers(1, 9), st.integers(0, 5), st.integers(0, 3),
       st.integers(1, 7))
def test_epoch_order_sorts_each_window_as_a_stable_python_sort_does(lengths, batch_size, seed, epoch, window):
    from agentsum.data.dataset import epoch_order

    expected = _epoch_order_by_python_sorts(lengths, batch_size, seed, epoch, window)
    assert epoch_order(lengths, batch_size, seed, epoch, window) == expected
    assert epoch_order(np.asarray(lengths, dtype=np.int64), batch_size, seed, epoch, window) == expected
