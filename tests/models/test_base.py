"""The model protocol and the pieces the models share (agentsum.models.base)."""

import pytest
import torch

from agentsum.data.batch import make_batch
from agentsum.data.vocab import BOS_ID, UNK_ID, Vocabulary
from agentsum.models import build_model
from agentsum.models.base import SummarizationModel, producible_targets, step_log_probs, unk_extended_ids

WORDS = "the cat sat on a mat dog ran .".split()
VOCAB = Vocabulary.build([WORDS])
V = len(VOCAB)
TINY = {
    "dca": {"type": "dca", "embedding_size": 8, "hidden_size": 8},
    "transformer_pg": {"type": "transformer_pg", "d_model": 8, "heads": 2, "d_ff": 16, "encoder_layers": 1,
                       "decoder_layers": 1, "dropout": 0.0, "max_positions": 64},
}


def batch():
    return make_batch([[["the", "zebra", "sat", "."], ["a", "dog", "ran", "."]]], VOCAB,
                      summaries=[["the", "zebra", "ran", "."]])


@pytest.mark.parametrize("kind", sorted(TINY))
def test_every_model_implements_the_protocol(kind):
    torch.manual_seed(0)
    model = build_model(TINY[kind], V).eval()
    assert isinstance(model, SummarizationModel)
    b = batch()
    enc = model.encode(b)
    state = model.init_state(enc)
    inputs = torch.tensor([BOS_ID])
    log_probs, _, attention = model.step(enc, state, inputs)
    shared, _, shared_attention = step_log_probs(model, enc, model.init_state(enc), inputs)
    assert log_probs.shape == (1, V + b.max_oov)
    torch.testing.assert_close(log_probs, shared)
    torch.testing.assert_close(attention.agent, shared_attention.agent)
    # the copied word "zebra" is a producible target (a pointer), and the output fits the batch's targets
    out = model(b)
    assert out.dist.log_prob(model.target_ids(b.tgt_out)).shape == b.tgt_out.shape
    assert model.target_ids(b.tgt_out).tolist() == b.tgt_out.tolist()


def test_max_positions_and_embedding_tables():
    dca = build_model(TINY["dca"], V)
    assert dca.max_positions is None
    assert dca.input_embeddings() == [dca.embedding]
    shared = build_model(TINY["transformer_pg"], V)
    assert shared.max_positions == 64
    assert shared.input_embeddings() == [shared.embedding]
    separate = build_model({**TINY["transformer_pg"], "share_embeddings": False}, V)
    tables = separate.input_embeddings()
    assert len(tables) == 2 and tables[0] is separate.embedding and tables[1] is separate.src_embedding


def test_extended_ids_are_read_as_unk_and_targets_follow_the_pointer():
    ids = torch.tensor([[BOS_ID, 5, V, V + 2]])
    assert unk_extended_ids(ids, V).tolist() == [[BOS_ID, 5, UNK_ID, UNK_ID]]
    assert producible_targets(ids, V, copies=True).tolist() == ids.tolist()
    assert producible_targets(ids, V, copies=False).tolist() == [[BOS_ID, 5, UNK_ID, UNK_ID]]
    no_pointer = build_model({**TINY["dca"], "pointer": "none"}, V)
    assert no_pointer.target_ids(ids).tolist() == [[BOS_ID, 5, UNK_ID, UNK_ID]]
