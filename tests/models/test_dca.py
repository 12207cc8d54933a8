"""The DCA model, equation by equation, with a tiny configuration."""

import itertools

import pytest
import torch

from agentsum.data.batch import make_batch
from agentsum.data.vocab import BOS_ID, Vocabulary
from agentsum.models.base import masked_softmax
from agentsum.models.dca import DCA, DCAConfig
from agentsum.training.objectives import MLE

WORDS = "the a cat dog sat on mat ran . and big small red blue house tree saw".split()
VOCAB = Vocabulary.build([WORDS])
V = len(VOCAB)

# Three documents of three agents; "zorp" and "quux" are OOV, one agent of doc 3 is empty.
DOCS = [
    [["the", "cat", "sat", "on", "the", "mat", "."], ["the", "dog", "ran", "zorp", "."], ["a", "big", "red", "house", "."]],
    [["a", "dog", "."], ["the", "cat", "saw", "a", "tree", "quux", "."], ["small", "blue", "mat", "."]],
    [["big", "tree", "."], ["the", "cat", "ran", "."], []],
]
SUMMARIES = [["the", "dog", "zorp", "sat", "."], ["quux", "saw", "a", "cat", "."], ["the", "tree", "."]]

CONFIGS = [dict(pointer=p, contextual_agent_attention=caa, communication=comm)
           for p, caa, comm in itertools.product(("none", "single", "multi"), (False, True), (False, True))]
# See et al. (2017) coverage on the single-agent pointer and on the full m6 architecture
CONFIGS += [dict(pointer="single", coverage=True),
            dict(pointer="multi", contextual_agent_attention=True, communication=True, coverage=True)]
# the readings of "an agent's last hidden state" and of s_0 that the paper leaves open
CONFIGS += [dict(pointer="multi", contextual_agent_attention=True, communication=True, agent_state="ends",
                 init_state="mean")]
# input feeding: [y_{t-1}; c*_{t-1}] into the decoder LSTM, with and without caa, coverage and one pointer
CONFIGS += [dict(pointer="multi", contextual_agent_attention=caa, communication=True, input_feeding=True)
            for caa in (False, True)]
# the optional order signal in eq (10) and the length-weighted message of eq (6)
CONFIGS += [dict(pointer="multi", contextual_agent_attention=True, communication=True, agent_index=True,
                 message="length", input_feeding=True)]
CONFIGS += [dict(pointer="single", coverage=True, input_feeding=True),
            dict(pointer="multi", contextual_agent_attention=True, communication=True, coverage=True,
                 input_feeding=True)]


def tiny_model(seed=0, **kw) -> DCA:
    torch.manual_seed(seed)
    return DCA(DCAConfig(vocab_size=V, embedding_size=8, hidden_size=12, **kw)).eval()


def batch_of(indices, summaries=True):
    return make_batch([DOCS[i] for i in indices], VOCAB, summaries=[SUMMARIES[i] for i in indices] if summaries else None)


def test_encoder_and_decoder_shapes():
    model = tiny_model()
    batch = batch_of([0, 1, 2])
    B, A, S = batch.src_ids.shape
    enc = model.encode(batch)
    assert enc.states.shape == (B, A, S, 12) and enc.keys.shape == (B, A, S, 12)
    assert enc.src_ext_ids.shape == (B, A * S) and enc.init_hidden.shape == (B, 12)
    assert enc.n_ext == V + 1  # one OOV word per document at most
    out = model(batch)
    T = batch.tgt_in.size(1)
    assert out.dist.log_probs().shape == (B, T, V + 1)
    assert out.attention.word.shape == (B, T, A, S) and out.attention.agent.shape == (B, T, A)
    assert out.states.shape == (B, T, 12)
    state = model.init_state(enc)
    log_probs, state, attn = model.step(enc, state, torch.full((B,), BOS_ID))
    assert log_probs.shape == (B, V + 1) and attn.word.shape == (B, A, S) and attn.agent.shape == (B, A)
    assert state.hidden.shape == (1, B, 12) and state.context.shape == (B, 12)


def test_local_and_contextual_layers_project_back_to_hidden_size():
    model = tiny_model()
    x = torch.randn(4, 7, 8)
    assert model.local(x, torch.tensor([7, 3, 1, 5])).shape == (4, 7, 12)
    h = torch.randn(2, 2, 7, 12)
    assert model.contextual[0](h, torch.randn(2, 2, 12), torch.tensor([7, 3, 1, 5])).shape == (2, 2, 7, 12)


@pytest.mark.parametrize("kw", CONFIGS, ids=str)
def test_distribution_sums_to_one_and_masks_padding(kw):
    model = tiny_model(**kw)
    batch = batch_of([0, 1, 2])
    out = model(batch)
    probs = out.dist.log_probs().exp()
    assert torch.allclose(probs.sum(-1), torch.ones(probs.shape[:2]), atol=1e-5)
    word = out.attention.word
    assert torch.all(word.masked_select(~batch.src_mask.unsqueeze(1).expand_as(word)) == 0)
    assert torch.allclose(out.attention.agent.sum(-1), torch.ones(word.shape[:2]), atol=1e-6)
    assert torch.all(out.attention.agent[2, :, 2] == 0)  # doc 3's empty agent gets no attention


@pytest.mark.parametrize("kw", CONFIGS, ids=str)
def test_log_prob_of_target_equals_full_distribution(kw):
    model = tiny_model(**kw)
    batch = batch_of([0, 1, 2])
    out = model(batch)
    target = model.target_ids(batch.tgt_out)
    full = out.dist.log_probs().gather(-1, target.unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(out.dist.log_prob(target), full, atol=1e-5)


@pytest.mark.parametrize("kw", CONFIGS, ids=str)
def test_batch_loss_is_sum_of_single_example_losses(kw):
    """OpenNMT-py 3.5.1's copy attention fails exactly this when a batch holds more than one example."""
    model = tiny_model(**kw)
    _, stats = MLE()(model, batch_of([0, 1, 2]))
    singles = sum(float(MLE()(model, batch_of([i]))[1]["nll_sum"]) for i in range(3))
    assert float(stats["nll_sum"]) == pytest.approx(singles, rel=1e-5)


def test_padding_does_not_change_outputs():
    model = tiny_model(pointer="multi", contextual_agent_attention=True)
    alone = model(batch_of([2]))
    padded = model(batch_of([2, 0, 1]))  # doc 3 is the shortest: padded in S and T
    T = alone.states.size(1)
    S = alone.attention.word.size(-1)
    assert torch.allclose(alone.states[0], padded.states[0, :T], atol=1e-5)
    assert torch.allclose(alone.attention.word[0], padded.attention.word[0, :T, :, :S], atol=1e-5)
    lp_alone = alone.dist.log_prob(batch_of([2]).tgt_out)[0]
    lp_padded = padded.dist.log_prob(batch_of([2, 0, 1]).tgt_out)[0, :T]
    assert torch.allclose(lp_alone, lp_padded, atol=1e-5)


def test_padding_to_a_multiple_does_not_change_the_loss():
    """train.pad_multiple rounds S and T up: the bLSTMs read each agent within its length and the
    loss is masked, so the extra positions change nothing."""
    from agentsum.training.objectives import MLE

    model = tiny_model(pointer="multi", contextual_agent_attention=True, communication=True)
    plain = make_batch(DOCS, VOCAB, summaries=SUMMARIES)
    rounded = make_batch(DOCS, VOCAB, summaries=SUMMARIES, pad_multiple=8)
    assert rounded.src_ids.size(-1) % 8 == 0 and rounded.tgt_out.size(1) % 8 == 0
    assert rounded.src_ids.size(-1) > plain.src_ids.size(-1)
    _, a = MLE()(model, plain)
    _, b = MLE()(model, rounded)
    assert a["tokens"] == b["tokens"]
    assert float(b["nll_sum"]) == pytest.approx(float(a["nll_sum"]), rel=1e-5)


@pytest.mark.parametrize("kw", CONFIGS, ids=str)
def test_step_by_step_decoding_equals_teacher_forcing(kw):
    model = tiny_model(**kw)
    batch = batch_of([0, 1, 2])
    forced = model(batch).dist.log_probs()
    enc = model.encode(batch)
    state = model.init_state(enc)
    for t in range(batch.tgt_in.size(1)):
        log_probs, state, _ = model.step(enc, state, batch.tgt_in[:, t])
        assert torch.allclose(log_probs, forced[:, t], atol=1e-5), f"step {t}"


def test_step_reads_extended_ids_as_unk():
    model = tiny_model()
    batch = batch_of([0])
    enc = model.encode(batch)
    a, _, _ = model.step(enc, model.init_state(enc), torch.tensor([V]))  # the copied OOV "zorp"
    b, _, _ = model.step(enc, model.init_state(enc), torch.tensor([VOCAB.id("<unk>")]))
    assert torch.equal(a, b)


@pytest.mark.parametrize("pointer", ["single", "multi"])
def test_copy_puts_mass_on_source_oov_word(pointer):
    model = tiny_model(pointer=pointer)
    batch = batch_of([0])
    assert batch.oov_words[0] == ["zorp"]
    probs = model(batch).dist.log_probs().exp()
    assert torch.all(probs[0, :, V] > 1e-4)  # zorp, copied from agent 2
    # An extended id that no document holds gets nothing.
    assert torch.allclose(model(batch_of([0, 1])).dist.log_probs().exp()[0, :, V + 1:].sum(), torch.tensor(0.0), atol=1e-30)


def test_multi_pointer_is_agent_weighted_mixture_eq_15_16():
    model = tiny_model(pointer="multi")
    batch = batch_of([0])
    out = model(batch)
    d = out.dist
    # Rebuild eq (16) from its parts: sum_a g_a (p_a P_voc + (1-p_a) u_a).
    enc = model.encode(batch)
    y = model.input_embedding(batch.tgt_in)
    s = out.states
    word, agent = out.attention.word, out.attention.agent
    context = torch.einsum("btas,bash->btah", word, enc.states)
    p = torch.sigmoid(model.gen_context(context).squeeze(-1) + model.gen_state(s) + model.gen_input(y))
    p_voc = torch.softmax(d.vocab_logits, -1)
    B, T, A, S = word.shape
    expected = torch.zeros(B, T, d.n_ext)
    for a in range(A):
        u = torch.zeros(B, T, d.n_ext).scatter_add(-1, batch.src_ext_ids[:, a].unsqueeze(1).expand(B, T, S), word[:, :, a])
        expected += agent[:, :, a, None] * (p[:, :, a, None] * torch.nn.functional.pad(p_voc, (0, d.n_ext - V)) + (1 - p[:, :, a, None]) * u)
    assert torch.allclose(d.log_probs().exp(), expected, atol=1e-6)


def test_message_is_mean_of_other_agents_eq_6():
    model = tiny_model(communication=True)
    torch.manual_seed(1)
    h = torch.randn(2, 3, 5, 12)
    last = torch.tensor([[4, 2, 0], [1, 3, 4]])
    agents = torch.ones(2, 3, dtype=torch.bool)
    z = model._message(model._agent_states(h, last)[1], agents, last + 1)  # states at each agent's last token
    for b in range(2):
        finals = [h[b, a, last[b, a]] for a in range(3)]
        for a in range(3):
            explicit = sum(finals[m] for m in range(3) if m != a) / 2
            assert torch.allclose(z[b, a], explicit, atol=1e-6)
    # An agent without text sends nothing: the others average over the agents that have text.
    agents[0, 2] = False
    z = model._message(model._agent_states(h, last)[1], agents, last + 1)  # states at each agent's last token
    assert torch.allclose(z[0, 0], h[0, 1, 2], atol=1e-6)
    assert torch.allclose(z[0, 2], (h[0, 0, 4] + h[0, 1, 2]) / 2, atol=1e-6)


def test_length_weighted_message_weights_the_other_agents_by_their_tokens():
    model = tiny_model(communication=True, message="length")
    torch.manual_seed(1)
    final = torch.randn(1, 3, 12)
    lengths = torch.tensor([[250, 3, 100]])
    agents = torch.ones(1, 3, dtype=torch.bool)
    z = model._message(final, agents, lengths)
    assert torch.allclose(z[0, 0], (3 * final[0, 1] + 100 * final[0, 2]) / 103, atol=1e-6)
    assert torch.allclose(z[0, 1], (250 * final[0, 0] + 100 * final[0, 2]) / 350, atol=1e-6)
    agents[0, 2] = False  # an agent without text sends nothing, whatever its recorded length
    z = model._message(final, agents, lengths)
    assert torch.allclose(z[0, 0], final[0, 1], atol=1e-6)
    mean = tiny_model(communication=True)._message(final, torch.ones(1, 3, dtype=torch.bool), lengths)
    assert torch.allclose(mean[0, 0], (final[0, 1] + final[0, 2]) / 2, atol=1e-6)  # the paper's mean


@pytest.mark.parametrize("index", [False, True])
def test_agent_attention_sees_agent_order_only_with_the_agent_index(index):
    """With s_0 the agents' mean and the symmetric message of eq (6), nothing in eq (1)-(10) tells
    the agents apart but their text: swapping two agents' texts swaps their attention weights
    exactly. With learned position vectors in eq (10) it does not."""
    model = tiny_model(contextual_agent_attention=True, communication=True, init_state="mean", agent_index=index)
    with torch.no_grad():
        model.v3.weight.mul_(50)
        if index:
            model.agent_position.weight.normal_(std=1.0)
    weights = []
    for doc in (DOCS[0], [DOCS[0][1], DOCS[0][0], DOCS[0][2]]):
        enc = model.encode(make_batch([doc], VOCAB))
        _, _, attn = model.step(enc, model.init_state(enc), torch.tensor([BOS_ID]))
        weights.append(attn.agent[0])
    swapped_back = weights[1][[1, 0, 2]]
    if index:
        assert (weights[0] - swapped_back).abs().max() > 1e-3
    else:
        assert torch.allclose(weights[0], swapped_back, atol=1e-6)


def test_agent_index_starts_as_the_printed_model_and_is_checked():
    plain, indexed = tiny_model(contextual_agent_attention=True), tiny_model(contextual_agent_attention=True,
                                                                             agent_index=True)
    indexed.load_state_dict({**plain.state_dict(), "agent_position.weight": indexed.agent_position.weight})
    batch = batch_of([0, 1])
    assert torch.allclose(MLE()(plain, batch)[0], MLE()(indexed, batch)[0], atol=1e-6)  # e_a = 0 at the start
    with pytest.raises(ValueError, match="model.message must be one of"):
        DCAConfig(vocab_size=V, message="sum")


def _agent1_encoding(model, second_agent):
    doc = [DOCS[0][0], second_agent, DOCS[0][2]]
    batch = make_batch([doc], VOCAB)
    return model.encode(batch).states[0, 0, : len(doc[0])]


def test_communication_switch():
    other = ["a", "small", "blue", "tree", "saw", "the", "dog", "."]
    silent = tiny_model(communication=False)
    assert torch.allclose(_agent1_encoding(silent, DOCS[0][1]), _agent1_encoding(silent, other), atol=1e-6)
    talking = tiny_model(communication=True)
    with torch.no_grad():  # make messages count at random initialisation
        for layer in talking.contextual:
            layer.w4.weight.normal_(std=1.0)
    diff = (_agent1_encoding(talking, DOCS[0][1]) - _agent1_encoding(talking, other)).abs().max()
    assert diff > 1e-4  # while without communication the difference is float noise (< 1e-6)


@pytest.mark.parametrize("caa", [False, True])
def test_previous_context_enters_the_output_only_with_contextual_agent_attention(caa):
    """Eq (13): with caa the output MLP reads c*_{t-1} (state.context) beside s_t and c*_t, so the
    distribution moves with it; eq (12), without caa, reads s_t and c*_t only. The first step, with
    c*_0 = 0, equals the first teacher-forced step."""
    model = tiny_model(contextual_agent_attention=caa)
    batch = batch_of([0])
    enc = model.encode(batch)
    state = model.init_state(enc)
    assert torch.count_nonzero(state.context) == 0
    a, _, _ = model.step(enc, state, torch.tensor([BOS_ID]))
    assert torch.allclose(a[0], model(batch).dist.log_probs()[0, 0], atol=1e-5)
    state.context = torch.randn_like(state.context)
    b, _, _ = model.step(enc, state, torch.tensor([BOS_ID]))
    moved = (a.exp() - b.exp()).abs().max()  # in probabilities
    assert (moved > 1e-4) if caa else torch.allclose(a, b, atol=1e-6)


def test_masked_softmax_of_empty_row_is_zero():
    out = masked_softmax(torch.randn(2, 3), torch.tensor([[True, False, True], [False, False, False]]))
    assert torch.allclose(out[0].sum(), torch.tensor(1.0)) and out[0, 1] == 0
    assert torch.all(out[1] == 0)


@pytest.mark.parametrize("kw", [dict(pointer="multi", contextual_agent_attention=True), dict(pointer="single")], ids=str)
def test_gradients_reach_every_parameter(kw):
    model = tiny_model(**kw).train()
    loss, _ = MLE()(model, batch_of([0, 1, 2]))
    loss.backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not torch.any(p.grad != 0)]
    assert missing == []


def test_bilstm_layer_equals_a_packed_bidirectional_lstm_and_loads_its_weights():
    """The padded two-LSTM bLSTM gives the packed nn.LSTM(bidirectional=True) outputs on real
    positions, zeros on padding, and reads state dicts written with the single bidirectional LSTM."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    from agentsum.models.dca import BiLSTMLayer

    torch.manual_seed(0)
    N, S, D, H = 4, 7, 5, 6
    reference = torch.nn.LSTM(D, H, batch_first=True, bidirectional=True)
    proj = torch.nn.Linear(2 * H, H, bias=False)
    old_state = {f"lstm.{k}": v for k, v in reference.state_dict().items()} | {"proj.weight": proj.weight}
    layer = BiLSTMLayer(D, H)
    layer.load_state_dict(old_state)
    x = torch.randn(N, S, D)
    lengths = torch.tensor([7, 3, 1, 5])
    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out, _ = pad_packed_sequence(reference(packed)[0], batch_first=True, total_length=S)
    expected = proj(out)
    got = layer(x, lengths)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    assert bool((got[1, 3:] == 0).all()) and bool((got[2, 1:] == 0).all())
    x2 = x.clone()
    x2[1, 3:] = 100.0  # padding content never reaches real positions, in either direction
    torch.testing.assert_close(layer(x2, lengths), got)


def test_ends_summary_is_both_directions_after_the_whole_sequence():
    """agent_state="ends": W[fwd_I; bwd_1], i.e. the final states h_n of a packed bidirectional LSTM
    (forward after the last real token, backward after the first), not the output at position I."""
    from torch.nn.utils.rnn import pack_padded_sequence

    from agentsum.models.dca import BiLSTMLayer

    torch.manual_seed(0)
    N, S, D, H = 3, 6, 5, 4
    layer = BiLSTMLayer(D, H)
    reference = torch.nn.LSTM(D, H, batch_first=True, bidirectional=True)
    reference.load_state_dict({k.replace("forward_lstm.", "").replace("backward_lstm.", "") + (
        "_reverse" if k.startswith("backward") else ""): v for k, v in layer.state_dict().items() if "lstm" in k})
    x, lengths = torch.randn(N, S, D), torch.tensor([6, 2, 4])
    out, summary = layer(x, lengths, ends=True)
    assert torch.equal(out, layer(x, lengths))
    _, (h_n, _) = reference(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
    expected = layer.proj(torch.cat([h_n[0], h_n[1]], dim=-1))
    assert torch.allclose(summary, expected, atol=1e-6)
    at_last = out[torch.arange(N), lengths - 1]
    assert not torch.allclose(summary, at_last, atol=1e-3)  # the default reading differs


def test_messages_and_initial_state_from_agent_ends_and_mean():
    """With agent_state="ends" eq (6) averages the other agents' summaries; init_state="mean" starts
    the decoder from the mean over the agents that hold text (doc 3's third agent is empty)."""
    model = tiny_model(communication=True, agent_state="ends", init_state="mean")
    batch = batch_of([2])
    B, A, S = batch.src_ids.shape
    lengths = batch.src_lengths.reshape(B * A).clamp_min(1)
    h, final = model.local(model.embedding(batch.src_ids.reshape(B * A, S)), lengths, ends=True)
    h, final = h.view(B, A, S, -1), final.view(B, A, -1)
    for layer in model.contextual:
        message = torch.stack([final[0, 1], final[0, 0], (final[0, 0] + final[0, 1]) / 2]).unsqueeze(0)
        h, final = layer(h, message, lengths, ends=True)
    enc = model.encode(batch)
    assert torch.allclose(enc.states, h, atol=1e-6)
    assert torch.allclose(enc.init_hidden[0], (final[0, 0] + final[0, 1]) / 2, atol=1e-6)
    first = tiny_model(communication=True, agent_state="ends")
    assert torch.allclose(first.encode(batch).init_hidden[0], final[0, 0], atol=1e-6)


def test_agent_state_options_are_checked():
    with pytest.raises(ValueError, match="model.agent_state"):
        DCAConfig(vocab_size=V, agent_state="first")
    with pytest.raises(ValueError, match="model.init_state"):
        DCAConfig(vocab_size=V, init_state="sum")


def _lstm_output_dtypes(model: DCA) -> list[torch.dtype]:
    """Record the output dtype of every LSTM call of ``model`` (forward hooks)."""
    seen = []
    for lstm in [m for m in model.modules() if isinstance(m, torch.nn.LSTM)]:
        lstm.register_forward_hook(lambda module, args, out: seen.append(out[0].dtype))
    return seen


def test_lstms_run_in_float32_under_bf16_autocast_and_gradients_reach_them():
    """CUDA autocast would run cuDNN's LSTM in float16 (no GradScaler: gradients could underflow)
    and oneDNN has no bf16 LSTM on CPUs without AVX512-BF16 / AMX: every LSTM runs in float32."""
    model = tiny_model(pointer="multi", contextual_agent_attention=True).train()
    seen = _lstm_output_dtypes(model)
    batch = batch_of([0, 1, 2])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss, _ = MLE()(model, batch)
        enc = model.encode(batch)
        model.step(enc, model.init_state(enc), torch.full((3,), BOS_ID))  # the decoder one step at a time
    # encoder: local + 2 contextual layers, two directions each; the decoder teacher-forced and in one step
    assert seen == [torch.float32] * (2 * 3 + 1 + 2 * 3 + 1)
    loss.backward()
    lstm_grads = [p.grad for m in model.modules() if isinstance(m, torch.nn.LSTM) for p in m.parameters()]
    assert all(g is not None and g.dtype == torch.float32 and g.abs().sum() > 0 for g in lstm_grads)
    # the layers around the LSTMs still follow autocast
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert model.encode(batch).keys.dtype == torch.bfloat16


@pytest.mark.parametrize("pointer", ["single", "multi"])
def test_the_copy_switch_stays_below_one_under_bf16_autocast(pointer):
    """A logit of 7 gives p_gen = sigmoid(7) = 0.99909; a bf16 sigmoid rounds it to exactly 1.0,
    which would zero the copy weight and its gradient. The switch is computed in float32."""
    assert torch.sigmoid(torch.tensor(7.0, dtype=torch.bfloat16)) == 1.0  # what the float32 sigmoid avoids
    model = tiny_model(pointer=pointer)
    with torch.no_grad():
        for layer in (model.gen_context, model.gen_state, model.gen_input):
            layer.weight.zero_()
        model.gen_context.bias.fill_(7.0)
    batch = batch_of([0, 1, 2])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(batch)
    # the copy mass: (1 - p) times the agent attention's sum (1 up to its bf16 rounding)
    copied = out.dist.copy_weight.sum(-1)[batch.tgt_mask]
    assert torch.allclose(copied.float(), torch.full_like(copied.float(), 1 - torch.sigmoid(torch.tensor(7.0)).item()),
                          rtol=1e-2)


@pytest.mark.parametrize("feeding", [False, True])
def test_previous_context_reaches_the_agent_attention_only_with_input_feeding(feeding):
    """Without input feeding c*_{t-1} enters only eq (13)'s MLP, so the agent attention g^t of
    eq (10) cannot depend on it; with input feeding it enters s_t, and g^t moves with it."""
    model = tiny_model(contextual_agent_attention=True, input_feeding=feeding)
    with torch.no_grad():  # sharper agent scores than a fresh initialisation's near-uniform ones
        model.v3.weight.mul_(50)
        model.w8.weight.mul_(10)
    batch = batch_of([0])
    enc = model.encode(batch)
    state = model.init_state(enc)
    _, _, before = model.step(enc, state, torch.tensor([BOS_ID]))
    state.context = torch.randn_like(state.context)
    _, _, after = model.step(enc, state, torch.tensor([BOS_ID]))
    moved = (before.agent - after.agent).abs().max()
    assert (moved > 1e-4) if feeding else moved == 0
    assert ((before.word - after.word).abs().max() > 1e-6) if feeding else torch.equal(before.word, after.word)


@torch.no_grad()  # scores only: the re-scoring needs no graph
def test_input_feeding_beam_search_carries_the_context():
    """Beam search with input feeding scores each hypothesis as a step-by-step re-scoring of its
    words does: the context travels with each beam through reordering."""
    from agentsum.data.vocab import EOS_ID
    from agentsum.decoding.search import SearchConfig, search

    model = tiny_model(pointer="multi", contextual_agent_attention=True, input_feeding=True)
    batch = batch_of([0, 1], summaries=False)
    config = SearchConfig(beam_size=3, min_length=0, max_length=8, block_trigrams=False, length_penalty=0.0)
    found = search(model, batch, config)
    checked = 0
    for b, hyps in enumerate(found.n_best):
        enc = model.encode(batch_of([b], summaries=False))
        for hyp in hyps:
            state, prev, total = model.init_state(enc), torch.tensor([BOS_ID]), 0.0
            for token in [*hyp.tokens, EOS_ID] if hyp.finished else hyp.tokens:
                log_probs, state, _ = model.step(enc, state, prev)
                total += float(log_probs[0, token])
                prev = torch.tensor([token])
            assert total == pytest.approx(hyp.score, abs=1e-4)
            checked += 1
    assert checked >= 4
