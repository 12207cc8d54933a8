"""data.agents: auto: a batch mixes documents with different agent counts, the shorter ones padded with
empty agents (length 0). A document decoded beside a longer one, with more and longer agents, must
read exactly as it does alone: padding agents send no message (eq 6), receive no agent attention
(eq 10) and no copy mass (eq 14-16)."""

import pytest
import torch

from agentsum.data.batch import make_batch
from agentsum.data.vocab import Vocabulary
from agentsum.decoding.copying import to_words
from agentsum.decoding.search import SearchConfig, beam_search
from agentsum.models.dca import DCA, MAX_AGENT_INDEX, DCAConfig
from agentsum.models.transformer_pg import TransformerPG, TransformerPGConfig

WORDS = "the a cat dog sat on mat ran . and big small red blue house tree saw of to in was".split()
VOCAB = Vocabulary.build([WORDS])
V = len(VOCAB)

# Two agents, one OOV word ("zorp").
SHORT = [["the", "cat", "sat", "on", "the", "mat", "."], ["a", "dog", "ran", "to", "zorp", "."]]
SHORT_SUMMARY = ["the", "cat", "zorp", "sat", "."]
# Five agents, longer ones, other OOV words: the short document gets three padding agents beside it,
# longer S, a longer target and a larger extended vocabulary.
LONG = [["the", "big", "red", "house", "was", "in", "the", "tree", "of", "a", "small", "dog", "."],
        ["quux", "saw", "the", "blue", "mat", "and", "the", "cat", "ran", "to", "the", "house", "."],
        ["a", "tree", "."],
        ["the", "dog", "sat", "on", "a", "red", "mat", "in", "the", "blorp", "house", "of", "quux", "."],
        ["small", "blue", "cat", "."]]
LONG_SUMMARY = ["quux", "saw", "the", "big", "red", "house", "and", "the", "blorp", "cat", "ran", "."]

M6 = dict(pointer="multi", contextual_agent_attention=True, communication=True)
CONFIGS = [M6,
           {**M6, "coverage": True, "init_state": "mean", "agent_state": "ends"},
           {**M6, "input_feeding": True, "message": "length", "agent_index": True},
           dict(pointer="single", contextual_agent_attention=False, communication=True)]


def tiny_model(**kw) -> DCA:
    torch.manual_seed(0)
    model = DCA(DCAConfig(vocab_size=V, embedding_size=8, hidden_size=12, **kw)).eval()
    if kw.get("agent_index"):
        with torch.no_grad():
            model.agent_position.weight.normal_()  # as after training, not the zeros it starts from
    return model


def alone_and_beside():
    """The short document alone, and first in a batch beside the long one."""
    return (make_batch([SHORT], VOCAB, summaries=[SHORT_SUMMARY]),
            make_batch([SHORT, LONG], VOCAB, summaries=[SHORT_SUMMARY, LONG_SUMMARY]))


def document_nll(model, batch) -> torch.Tensor:
    """(B,) teacher-forced negative log-likelihood of each document's summary."""
    out = model(batch)
    log_prob = out.dist.log_prob(model.target_ids(batch.tgt_out))
    return -(log_prob * batch.tgt_mask).sum(1)


def test_the_short_document_is_padded_with_empty_agents():
    alone, beside = alone_and_beside()
    assert alone.n_agents == 2 and beside.n_agents == 5
    assert beside.src_lengths[0].tolist() == [7, 6, 0, 0, 0]
    assert beside.src_ids.size(2) > alone.src_ids.size(2) and beside.tgt_out.size(1) > alone.tgt_out.size(1)
    assert beside.max_oov > alone.max_oov


@pytest.mark.parametrize("kw", CONFIGS, ids=str)
def test_a_document_beside_a_longer_one_has_the_loss_it_has_alone(kw):
    model = tiny_model(**kw)
    alone, beside = alone_and_beside()
    with torch.no_grad():
        nll_alone = document_nll(model, alone)
        nll_beside = document_nll(model, beside)
        nll_long = document_nll(model, make_batch([LONG], VOCAB, summaries=[LONG_SUMMARY]))
    assert float(nll_beside[0]) == pytest.approx(float(nll_alone[0]), rel=1e-5, abs=1e-5)
    assert float(nll_beside[1]) == pytest.approx(float(nll_long[0]), rel=1e-5, abs=1e-5)  # the longer one too


@pytest.mark.parametrize("kw", CONFIGS, ids=str)
def test_a_document_beside_a_longer_one_gets_the_beam_search_summary_it_gets_alone(kw):
    model = tiny_model(**kw)
    with torch.no_grad():  # sharper agent attention, and a copy switch that favours copying
        model.v3.weight.mul_(20)
        model.gen_context.bias.fill_(-6.0)
    alone, beside = alone_and_beside()
    config = SearchConfig(beam_size=3, max_length=12, min_length=4)
    with torch.no_grad():
        one = beam_search(model, make_batch([SHORT], VOCAB), config)
        two = beam_search(model, make_batch([SHORT, LONG], VOCAB), config)
    assert two.tokens[0] == one.tokens[0]
    assert two.scores[0] == pytest.approx(one.scores[0], abs=1e-5)
    assert torch.allclose(two.agent_attention[0][:, :2], one.agent_attention[0], atol=1e-5)
    assert not two.agent_attention[0][:, 2:].any()  # the padding agents were never attended
    # the summary's words, with UNK replacement through copy positions (flat over A x S, other S beside)
    words_two = to_words(two.tokens, two.copy_positions, make_batch([SHORT, LONG], VOCAB), VOCAB)
    words_one = to_words(one.tokens, one.copy_positions, make_batch([SHORT], VOCAB), VOCAB)
    assert words_two[0] == words_one[0]
    source = set(make_batch([SHORT], VOCAB).src_ext_ids.flatten().tolist())
    assert len(set(one.tokens[0]) & source) >= 3  # the summary copies: the copy path is exercised


@pytest.mark.parametrize("kw", CONFIGS, ids=str)
def test_padding_agents_get_no_agent_attention_and_no_copy_mass(kw):
    model = tiny_model(**kw)
    _, beside = alone_and_beside()
    with torch.no_grad():
        out = model(beside)
    T = int(beside.tgt_mask[0].sum())
    agent = out.attention.agent[0, :T]  # (T, A)
    assert (agent[:, 2:] == 0).all()  # eq (10): a softmax over the real agents only
    assert torch.allclose(agent[:, :2].sum(-1), torch.ones(T), atol=1e-6)
    assert (out.attention.word[0, :T, 2:] == 0).all()
    # eq (14)-(16): the copy weight over the padding agents' slots is exactly 0, and the mixture sums to 1
    S = beside.src_ids.size(2)
    copy = out.dist.copy_weight[0, :T].view(T, 5, S)
    assert (copy[:, 2:] == 0).all() and copy[:, :2].sum() > 0
    assert torch.allclose(out.dist.log_probs()[0, :T].exp().sum(-1), torch.ones(T), atol=1e-5)


@pytest.mark.parametrize("kw", [M6, {**M6, "message": "length", "agent_state": "ends"}], ids=str)
def test_the_message_of_a_real_agent_is_the_same_with_padding_agents(kw, monkeypatch):
    """Eq (6): z_a = 1/(M-1) sum_{m != a} h_{m,I}, M counting the document's own agents: the mean runs
    over the real other agents, never over padding."""
    model = tiny_model(**kw)
    messages = []
    original = model._message

    def recorded(*args):
        messages.append(original(*args))
        return messages[-1]

    monkeypatch.setattr(model, "_message", recorded)
    alone, beside = alone_and_beside()
    with torch.no_grad():
        model.encode(alone)
        model.encode(beside)
    layers = model.config.contextual_layers
    assert len(messages) == 2 * layers
    for k in range(layers):
        lone, padded = messages[k], messages[layers + k]
        assert padded.shape[1] == 5 and lone.shape[1] == 2
        assert torch.allclose(padded[0, :2], lone[0], atol=1e-6)
        assert padded[0, :2].abs().sum() > 0  # the two real agents do talk to each other


def test_the_agent_index_is_refused_beyond_its_positions_naming_the_setting():
    model = tiny_model(**{**M6, "agent_index": True})
    docs = [[["the", "cat", "."]] * (MAX_AGENT_INDEX + 1)]
    with pytest.raises(ValueError, match="data.max_agents"):
        model(make_batch(docs, VOCAB, summaries=[["the"]]))


def test_the_transformer_pointer_generator_reads_a_document_the_same_beside_a_longer_one():
    """It reads the agents as one sequence, with positions counting real tokens only: padding agents
    shift nothing and hold no copy mass."""
    torch.manual_seed(0)
    model = TransformerPG(TransformerPGConfig(vocab_size=V, d_model=16, heads=2, d_ff=32, encoder_layers=1, decoder_layers=1,
                                              dropout=0.0, max_positions=128)).eval()
    alone, beside = alone_and_beside()
    with torch.no_grad():
        nll_alone, nll_beside = document_nll(model, alone), document_nll(model, beside)
        out = model(beside)
    assert float(nll_beside[0]) == pytest.approx(float(nll_alone[0]), rel=1e-5, abs=1e-5)
    T = int(beside.tgt_mask[0].sum())
    assert (out.attention.agent[0, :T, 2:] == 0).all()
