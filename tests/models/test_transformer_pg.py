"""The Transformer pointer-generator with input feeding (paper 003), with a tiny configuration."""

import dataclasses
import itertools

import pytest
import torch

from agentsum.data.batch import make_batch
from agentsum.data.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Vocabulary
from agentsum.decoding.copying import to_words
from agentsum.decoding.search import SearchConfig, greedy_search, sample_and_greedy, search
from agentsum.fields import fill_dataclass
from agentsum.models.transformer_pg import TransformerPG, TransformerPGConfig
from agentsum.training.objectives import MLE

WORDS = "疫情 城市 增加 了 。 医院 发布 报告 ， 患者 减少 病毒 防控 新 措施 今天 我们 的 在 政府".split()
VOCAB = Vocabulary.build([WORDS])
V = len(VOCAB)

# "新冠" (COVID) and "武汉" are OOV: only the pointer can produce them.
DOCS = [
    [["新冠", "疫情", "在", "城市", "增加", "了", "。"]],
    [["医院", "今天", "发布", "报告", "，", "患者", "减少", "。"]],
    [["政府", "发布", "病毒", "防控", "新", "措施", "。"]],
    [["我们", "的", "城市", "武汉", "患者", "减少", "了", "。"]],
]
SUMMARIES = [["新冠", "疫情", "增加"], ["医院", "发布", "报告", "。"], ["防控", "新", "措施"], ["武汉", "患者", "减少"]]

TINY = dict(d_model=16, heads=2, d_ff=32, encoder_layers=2, decoder_layers=2, dropout=0.0)
VARIANTS = [dict(input_feeding=f, pointer=p) for f, p in itertools.product((True, False), (True, False))]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models gain nothing from intra-op threads, and on a busy machine OpenMP threads that
    wait for a core can make each op many times slower; run this module single-threaded."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def tiny_model(seed=0, **kw) -> TransformerPG:
    torch.manual_seed(seed)
    return TransformerPG(TransformerPGConfig(vocab_size=V, **{**TINY, **kw})).eval()


def batch_of(indices, summaries=True):
    return make_batch([DOCS[i] for i in indices], VOCAB,
                      summaries=[SUMMARIES[i] for i in indices] if summaries else None)


def with_targets(batch, tokens):
    """The batch with target sequences ``tokens`` (lists of extended ids, EOS included)."""
    T = max(len(t) for t in tokens)
    tgt_out = torch.full((len(tokens), T), PAD_ID)
    tgt_in = torch.full((len(tokens), T), PAD_ID)
    for b, seq in enumerate(tokens):
        tgt_out[b, : len(seq)] = torch.tensor(seq)
        tgt_in[b, : len(seq)] = torch.tensor([BOS_ID] + seq[:-1])
    return dataclasses.replace(batch, tgt_in=tgt_in, tgt_out=tgt_out, tgt_mask=tgt_out != PAD_ID)


def test_config_round_trips_and_reads_from_yaml_values():
    model = tiny_model()
    d = dataclasses.asdict(model.config)
    assert TransformerPGConfig(**d) == model.config
    assert fill_dataclass(TransformerPGConfig, d, "model") == model.config
    with pytest.raises(ValueError):
        TransformerPGConfig(vocab_size=V, d_model=10, heads=3)
    with pytest.raises(ValueError):
        TransformerPGConfig(vocab_size=V, copy_heads="max")


def test_shapes():
    model = tiny_model()
    batch = batch_of([0, 1, 2])
    B, A, S = batch.src_ids.shape
    T = batch.tgt_in.size(1)
    enc = model.encode(batch)
    assert enc.memory.shape == (B, A * S, 16) and enc.mask.shape == (B, A * S)
    assert len(enc.cross_keys) == 2 and enc.cross_keys[0].shape == (B, 2, A * S, 8)
    assert enc.n_ext == V + 1
    out = model(batch, enc)
    assert out.dist.log_probs().shape == (B, T, V + 1)
    assert out.attention.word.shape == (B, T, A, S) and out.attention.agent.shape == (B, T, A)
    assert out.states.shape == (B, T, 16)
    state = model.init_state(enc)
    log_probs, state, attn = model.step(enc, state, torch.full((B,), BOS_ID))
    assert log_probs.shape == (B, V + 1) and attn.word.shape == (B, A, S) and attn.agent.shape == (B, A)
    # 2 passes x 2 layers of (N, heads, t, d_head) caches, grown by one position per step
    assert len(state.keys) == 4 and state.keys[0].shape == (B, 2, 1, 8) and state.feed.shape == (B, 16)
    _, state, _ = model.step(enc, state, torch.full((B,), BOS_ID))
    assert state.keys[3].shape == (B, 2, 2, 8) and state.t == 2
    picked = state.select(torch.tensor([2, 2, 0]))
    assert picked.keys[0].shape == (3, 2, 2, 8) and torch.equal(picked.values[1][0], state.values[1][2])


@pytest.mark.parametrize("kw", VARIANTS, ids=str)
def test_step_by_step_decoding_equals_teacher_forcing(kw):
    model = tiny_model(**kw)
    batch = batch_of([0, 1, 2, 3])
    out = model(batch)
    forced = out.dist.log_probs()
    enc = model.encode(batch)
    state = model.init_state(enc)
    for t in range(batch.tgt_in.size(1)):
        dist, state, attn, s = model.step_distribution(enc, state, batch.tgt_in[:, t])
        assert torch.allclose(dist.log_probs()[:, 0], forced[:, t], atol=1e-5), f"step {t}"
        assert torch.allclose(s, out.states[:, t], atol=1e-5)
        assert torch.allclose(attn.word[:, 0], out.attention.word[:, t], atol=1e-5)


@pytest.mark.parametrize("feeding", [True, False])
def test_causal_mask_future_tokens_do_not_change_earlier_steps(feeding):
    model = tiny_model(input_feeding=feeding)
    batch = batch_of([0, 1])
    before = model(batch).dist.log_probs()
    k = 2
    changed = batch.tgt_in.clone()
    changed[:, k] = VOCAB.id("政府")
    after = model(dataclasses.replace(batch, tgt_in=changed)).dist.log_probs()
    assert torch.allclose(before[:, :k], after[:, :k], atol=1e-6)
    assert (before[:, k] - after[:, k]).abs().max() > 1e-4


def test_input_feeding_enters_the_next_step_only():
    """With W_f = [I, 0] the fed-in vector is ignored and the model is exactly the plain decoder
    (same weights); making the fed half non-zero leaves step 0 (a_{-1} = 0) alone and changes
    every later step."""
    on, off = tiny_model(input_feeding=True), tiny_model(input_feeding=False)
    missing, unexpected = off.load_state_dict(on.state_dict(), strict=False)
    assert missing == [] and sorted(unexpected) == ["feed.bias", "feed.weight"]
    batch = batch_of([0, 1, 2, 3])
    with torch.no_grad():
        on.feed.weight.copy_(torch.cat([torch.eye(16), torch.zeros(16, 16)], dim=1))
        on.feed.bias.zero_()
    plain = off(batch).dist.log_probs()
    assert torch.allclose(on(batch).dist.log_probs(), plain, atol=1e-6)
    with torch.no_grad():
        on.feed.weight[:, 16:].normal_()
    fed = on(batch).dist.log_probs()
    assert torch.allclose(fed[:, 0], plain[:, 0], atol=1e-6)
    for t in range(1, fed.size(1)):
        assert (fed[:, t] - plain[:, t]).abs().max() > 1e-3, f"step {t}"


def test_fed_vector_is_the_previous_steps_attention_vector():
    """state.feed after step t is a^(1)_t = sum_j alpha_{t,j} m_j of pass 1, which (with W_f's
    embedding half the identity) is the plain decoder's attention vector; perturbing it changes
    step t+1."""
    on, off = tiny_model(input_feeding=True), tiny_model(input_feeding=False)
    off.load_state_dict(on.state_dict(), strict=False)
    with torch.no_grad():
        on.feed.weight[:, :16].copy_(torch.eye(16))
        on.feed.bias.zero_()
    batch = batch_of([0, 1])
    enc_off = off.encode(batch)
    attn = off(batch, enc_off).attention
    alpha = (attn.word * attn.agent.unsqueeze(-1)).flatten(-2)  # (B, T, L): word * agent = copy attention
    a_plain = alpha @ enc_off.memory  # (B, T, D)
    enc = on.encode(batch)
    state = on.init_state(enc)
    assert torch.all(state.feed == 0)
    for t in range(3):
        log_probs, state, _ = on.step(enc, state, batch.tgt_in[:, t])
        assert torch.allclose(state.feed, a_plain[:, t], atol=1e-5)
    nxt, _, _ = on.step(enc, state, batch.tgt_in[:, 3])
    state.feed = state.feed + torch.randn_like(state.feed)
    perturbed, _, _ = on.step(enc, state, batch.tgt_in[:, 3])
    assert (nxt - perturbed).abs().max() > 1e-3
    assert off.init_state(enc_off).feed is None


def test_padding_does_not_change_outputs():
    model = tiny_model()
    alone = model(batch_of([2]))
    padded = model(batch_of([2, 1, 3]))  # doc 3 is the shortest source and has a 3-token summary
    T, S = alone.states.size(1), alone.attention.word.size(-1)
    assert padded.attention.word.size(-1) > S and padded.states.size(1) > T
    assert torch.allclose(alone.states[0], padded.states[0, :T], atol=1e-5)
    assert torch.allclose(alone.attention.word[0], padded.attention.word[0, :T, :, :S], atol=1e-5)
    assert torch.all(padded.attention.word[0, :, :, S:] == 0)
    lp_alone = alone.dist.log_prob(batch_of([2]).tgt_out)[0]
    lp_padded = padded.dist.log_prob(batch_of([2, 1, 3]).tgt_out)[0, :T]
    assert torch.allclose(lp_alone, lp_padded, atol=1e-5)


@pytest.mark.parametrize("kw", VARIANTS, ids=str)
def test_padding_to_a_multiple_does_not_change_the_loss(kw):
    """train.pad_multiple rounds S and T up (bf16 default 8): the extra positions are padding."""
    model = tiny_model(**kw)
    docs, summaries = [DOCS[i] for i in range(4)], [SUMMARIES[i] for i in range(4)]
    plain = make_batch(docs, VOCAB, summaries=summaries)
    rounded = make_batch(docs, VOCAB, summaries=summaries, pad_multiple=16)
    assert rounded.src_ids.size(-1) == 16 and rounded.tgt_out.size(1) == 16
    assert plain.src_ids.size(-1) < 16 and plain.tgt_out.size(1) < 16
    _, a = MLE()(model, plain)
    _, b = MLE()(model, rounded)
    assert a["tokens"] == b["tokens"]
    assert float(b["nll_sum"]) == pytest.approx(float(a["nll_sum"]), rel=1e-5)


def test_multi_agent_source_reads_as_the_concatenated_document():
    """A > 1: the agents' slots are one sequence; positions skip padding, so the split document
    gives the same distribution as the whole one; word * agent is the copy attention."""
    model = tiny_model()
    whole = DOCS[1][0]
    split = make_batch([[whole[:3], whole[3:]], [["新冠", "疫情"], ["。"]]], VOCAB, summaries=[SUMMARIES[1], ["新冠"]])
    single = make_batch([[whole]], VOCAB, summaries=[SUMMARIES[1]])
    a = model(split)
    b = model(single)
    T = b.states.size(1)
    assert torch.allclose(a.dist.log_prob(split.tgt_out)[0, :T], b.dist.log_prob(single.tgt_out)[0], atol=1e-5)
    word, agent = a.attention.word, a.attention.agent  # (B, T, 2, S), (B, T, 2)
    assert torch.allclose(agent.sum(-1), torch.ones(agent.shape[:2]), atol=1e-5)
    assert torch.allclose(word.sum(-1), torch.ones(agent.shape), atol=1e-5)
    assert torch.allclose((word[0] * agent[0].unsqueeze(-1))[:, 0, :3], b.attention.word[0, :, 0, :3], atol=1e-5)
    assert torch.allclose((word[0] * agent[0].unsqueeze(-1))[:, 1, :5], b.attention.word[0, :, 0, 3:], atol=1e-5)


@pytest.mark.parametrize("kw", VARIANTS, ids=str)
def test_distribution_sums_to_one(kw):
    model = tiny_model(**kw)
    batch = batch_of([0, 1, 2, 3])
    dist = model(batch).dist
    probs = dist.log_probs().exp()
    assert torch.allclose(probs.sum(-1), torch.ones(probs.shape[:2]), atol=1e-5)
    target = model.target_ids(batch.tgt_out)
    full = dist.log_probs().gather(-1, target.unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(dist.log_prob(target), full, atol=1e-5)


def test_copy_puts_mass_on_chinese_oov_word():
    model = tiny_model()
    batch = batch_of([0, 3])
    assert batch.oov_words == [["新冠"], ["武汉"]]
    assert batch.tgt_out[0, 0] == V and batch.tgt_out[1, 0] == V  # the summaries start with the OOV word
    probs = model(batch).dist.log_probs().exp()
    assert torch.all(probs[:, :, V] > 1e-3)  # copied from the source at every step
    words = to_words([[V, VOCAB.id("疫情")], [V]], [[0, 1], [3]], batch, VOCAB)
    assert words == [["新冠", "疫情"], ["武汉"]]
    # Without the pointer the OOV word is impossible and its target is UNK.
    plain = tiny_model(pointer=False)
    assert plain.target_ids(batch.tgt_out)[0, 0] == UNK_ID
    assert torch.all(plain(batch).dist.log_probs().exp()[:, :, V] < 1e-30)


def test_pointer_generator_equations():
    """P_gen = sigmoid(w [S_{t-1}, S_t, a_t] + b) with S_{-1} = 0, P_vocab = softmax(W_v [S_t, a_t]),
    copy weight (1 - P_gen) alpha_t, a_t = sum_j alpha_{t,j} m_j."""
    model = tiny_model()
    batch = batch_of([0, 1, 2])
    enc = model.encode(batch)
    out = model(batch, enc)
    alpha = (out.attention.word * out.attention.agent.unsqueeze(-1)).flatten(-2)  # (B, T, L)
    assert torch.allclose(alpha.sum(-1), torch.ones(alpha.shape[:2]), atol=1e-5)
    a = alpha @ enc.memory
    s = out.states
    s_prev = torch.cat([torch.zeros_like(s[:, :1]), s[:, :-1]], dim=1)
    p_gen = torch.sigmoid(model.gen(torch.cat([s_prev, s, a], -1))).squeeze(-1)
    assert torch.allclose(out.dist.gen_weight, p_gen, atol=1e-6)
    assert torch.allclose(out.dist.copy_weight, (1 - p_gen).unsqueeze(-1) * alpha, atol=1e-6)
    assert torch.allclose(out.dist.vocab_logits, model.out_vocab(torch.cat([s, a], -1)), atol=1e-5)


def test_empty_source_gives_no_nan():
    model = tiny_model()
    batch = make_batch([[[]], DOCS[0]], VOCAB, summaries=[["城市"], SUMMARIES[0]])
    out = model(batch)
    probs = out.dist.log_probs().exp()
    assert not torch.isnan(probs).any() and not torch.isnan(out.states).any()
    assert torch.allclose(probs.sum(-1), torch.ones(probs.shape[:2]), atol=1e-5)
    assert torch.all(out.attention.word[0] == 0) and torch.all(out.attention.agent[0] == 0)
    loss, _ = MLE()(model.train(), batch)
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_step_reads_extended_ids_as_unk():
    model = tiny_model()
    batch = batch_of([0])
    enc = model.encode(batch)
    a, _, _ = model.step(enc, model.init_state(enc), torch.tensor([V]))  # the copied "新冠"
    b, _, _ = model.step(enc, model.init_state(enc), torch.tensor([UNK_ID]))
    assert torch.equal(a, b)


@pytest.mark.parametrize("kw", VARIANTS, ids=str)
def test_batch_loss_is_sum_of_single_example_losses(kw):
    model = tiny_model(**kw)
    _, stats = MLE()(model, batch_of([0, 1, 2, 3]))
    singles = sum(float(MLE()(model, batch_of([i]))[1]["nll_sum"]) for i in range(4))
    assert float(stats["nll_sum"]) == pytest.approx(singles, rel=1e-5)


@pytest.mark.parametrize("kw", [dict(), dict(share_embeddings=False, copy_heads="first"), dict(input_feeding=False)], ids=str)
def test_gradients_reach_every_parameter(kw):
    model = tiny_model(**kw).train()
    loss, _ = MLE()(model, batch_of([0, 1, 2, 3]))
    loss.backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not torch.any(p.grad != 0)]
    assert missing == []


def _rescore(model, batch, hyp):
    """Sum of the teacher-forced log-probs of every document's best hypothesis (EOS if finished)."""
    seqs = [h.tokens + ([EOS_ID] if h.finished else []) for h in (n[0] for n in hyp.n_best)]
    scored = with_targets(batch, seqs)
    out = model(scored)
    return (out.dist.log_prob(scored.tgt_out) * scored.tgt_mask).sum(1)


@pytest.mark.parametrize("beam", [1, 3])
def test_search_scores_match_teacher_forced_rescoring(beam):
    model = tiny_model(seed=1)
    batch = batch_of([0, 1, 2, 3], summaries=False)
    config = SearchConfig(beam_size=beam, max_length=6, block_trigrams=False, length_penalty=0.0)
    hyp = search(model, batch, config)
    assert len(hyp) == 4 and all(len(t) <= 6 for t in hyp.tokens)
    if beam > 1:
        assert all(len(n) == beam for n in hyp.n_best)
        assert all(n[0].score >= n[-1].score for n in hyp.n_best)
    assert torch.allclose(torch.tensor(hyp.scores), _rescore(model, batch, hyp), atol=1e-4)
    words = to_words(hyp.tokens, hyp.copy_positions, batch, VOCAB)
    assert [len(w) for w in words] == [len(t) for t in hyp.tokens]


def test_sampling_objective_runs_with_the_model():
    model = tiny_model()
    batch = batch_of([0, 1])
    config = SearchConfig(beam_size=1, max_length=5, block_trigrams=False)
    sample, greedy = sample_and_greedy(model, batch, config, generator=torch.Generator().manual_seed(0))
    reference = greedy_search(model, batch, SearchConfig(beam_size=1, max_length=5, block_trigrams=False))
    for b in range(2):
        assert greedy[b, : len(reference.tokens[b])].tolist() == reference.tokens[b]
    assert sample.shape == (2, 5)


def test_tiny_model_overfits_four_examples():
    torch.manual_seed(0)
    model = TransformerPG(TransformerPGConfig(vocab_size=V, **TINY))
    batch = batch_of([0, 1, 2, 3])
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(200):
        loss, stats = MLE()(model, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if stats["nll"] < 0.02:
            break
    assert stats["nll"] < 0.05
    model.eval()
    for beam in (1, 4):
        hyp = search(model, batch, SearchConfig(beam_size=beam, max_length=10, block_trigrams=False))
        words = [VOCAB.decode(t, oov) for t, oov in zip(hyp.tokens, batch.oov_words)]
        assert words == SUMMARIES, f"beam {beam}"  # including the copied OOV words 新冠 and 武汉


def test_p_gen_stays_below_one_under_bf16_autocast():
    """A logit of 7 gives P_gen = sigmoid(7) = 0.99909; a bf16 sigmoid rounds it to exactly 1.0,
    which would zero the copy weight and its gradient. P_gen is computed in float32."""
    assert torch.sigmoid(torch.tensor(7.0, dtype=torch.bfloat16)) == 1.0  # what the float32 sigmoid avoids
    model = tiny_model()
    with torch.no_grad():
        model.gen.weight.zero_()
        model.gen.bias.fill_(7.0)
    batch = batch_of([0, 1, 2, 3])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(batch)
    p_gen = out.dist.gen_weight
    assert p_gen.dtype == torch.float32
    assert torch.allclose(p_gen, torch.full_like(p_gen, torch.sigmoid(torch.tensor(7.0)).item()))
    assert torch.all(out.dist.copy_weight.sum(-1) > 0)


def test_a_source_longer_than_max_positions_is_a_clear_error():
    model = tiny_model(max_positions=7)
    with pytest.raises(ValueError, match="sequence of 8 positions exceeds model.max_positions = 7"):
        model.encode(batch_of([3]))  # 8 tokens
    model.encode(batch_of([0, 2]))  # 7 tokens fit
