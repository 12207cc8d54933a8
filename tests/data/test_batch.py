"""The Batch (agentsum.data.batch): shapes, dtypes, padding, extended ids and targets, per field."""

import pytest
import torch

from agentsum.data.batch import Batch, make_batch, round_up
from agentsum.data.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Vocabulary

VOCAB = Vocabulary.build([["the", "cat", "sat", "a", "dog", "."]])
V = len(VOCAB)
DOCS = [[["the", "cat", "sat", "."], ["a", "zebra"]],  # 2 agents, 4 and 2 tokens, one OOV word
        [["a", "dog", "."], []]]  # an agent without text


def ids(*tokens):
    return [VOCAB.id(t) for t in tokens]


def test_source_fields_are_padded_per_agent_and_typed_as_documented():
    b = make_batch(DOCS, VOCAB, ids=["x", "y"])
    assert (b.batch_size, b.n_agents) == (2, 2)
    assert b.src_ids.shape == b.src_ext_ids.shape == b.src_mask.shape == (2, 2, 4)
    assert b.src_ids.dtype == b.src_ext_ids.dtype == b.src_lengths.dtype == torch.long
    assert b.src_mask.dtype == torch.bool
    assert b.src_lengths.tolist() == [[4, 2], [3, 0]]
    assert b.agent_mask.tolist() == [[True, True], [True, False]]
    assert b.src_ids[0, 1].tolist() == ids("a") + [UNK_ID, PAD_ID, PAD_ID]
    assert b.src_ext_ids[0, 1].tolist() == ids("a") + [V, PAD_ID, PAD_ID]  # zebra: doc 0's first OOV word
    assert b.src_mask[1].tolist() == [[True, True, True, False], [False] * 4]
    assert b.oov_words == [["zebra"], []] and b.max_oov == 1
    assert b.src_tokens[0][1] == ["a", "zebra"]
    assert b.ids == ["x", "y"] and b.references == ["", ""]
    assert b.num_source_tokens() == 9 and b.num_target_tokens() == 0
    assert b.tgt_in is None and b.tgt_out is None and b.tgt_mask is None


def test_targets_are_bos_plus_summary_in_and_summary_plus_eos_out():
    b = make_batch(DOCS, VOCAB, summaries=[["a", "zebra", "sat"], ["dog", "yak"]])
    assert b.tgt_in.shape == b.tgt_out.shape == b.tgt_mask.shape == (2, 4)
    # decoder input: BOS + summary over the fixed vocabulary (zebra -> UNK); output: summary + EOS,
    # a source OOV word with its extended id, an OOV word not in the source as UNK
    assert b.tgt_in.tolist() == [[BOS_ID, *ids("a"), UNK_ID, *ids("sat")], [BOS_ID, *ids("dog"), UNK_ID, PAD_ID]]
    assert b.tgt_out.tolist() == [[*ids("a"), V, *ids("sat"), EOS_ID], [*ids("dog"), UNK_ID, EOS_ID, PAD_ID]]
    assert b.tgt_mask.tolist() == [[True] * 4, [True, True, True, False]]
    assert b.num_target_tokens() == 7


def test_pad_multiple_rounds_source_and_target_lengths_up():
    b = make_batch(DOCS, VOCAB, summaries=[["a"], ["dog"]], pad_multiple=8)
    assert b.src_ids.size(2) == 8 and b.tgt_out.size(1) == 8
    assert b.src_mask.sum().item() == 9 and b.tgt_mask.sum().item() == 4  # padding is masked
    assert [round_up(n, 8) for n in (1, 8, 9)] == [8, 8, 16]


def test_select_and_to_keep_every_field_aligned():
    b = make_batch(DOCS, VOCAB, summaries=[["a"], ["dog", "."]], ids=["x", "y"], references=["r0", "r1"])
    one = b.select([1])
    assert isinstance(one, Batch) and one.batch_size == 1
    assert one.ids == ["y"] and one.references == ["r1"] and one.oov_words == [[]]
    assert one.src_ids.tolist() == b.src_ids[1:].tolist() and one.tgt_out.tolist() == b.tgt_out[1:].tolist()
    moved = b.to("cpu")
    assert moved.src_ids.tolist() == b.src_ids.tolist() and moved.src_tokens == b.src_tokens


def test_bad_batches_are_refused():
    with pytest.raises(ValueError, match="zero documents"):
        make_batch([], VOCAB)
    with pytest.raises(ValueError, match="without agents"):
        make_batch([[], []], VOCAB)
    with pytest.raises(ValueError, match="summaries for"):
        make_batch(DOCS, VOCAB, summaries=[["a"]])
    with pytest.raises(ValueError, match="pad_multiple"):
        make_batch(DOCS, VOCAB, pad_multiple=0)


def test_documents_with_fewer_agents_get_empty_padding_agents():
    """data.agents: auto: a batch mixes agent counts; the shorter documents are padded with agents of
    length 0, masked like an agent that received no text, after their own agents."""
    docs = [[["the", "cat"]], [["a", "dog"], ["the", "zebra", "sat"], ["."]]]
    b = make_batch(docs, VOCAB, summaries=[["the"], ["a"]])
    assert b.n_agents == 3 and b.src_ids.shape == (2, 3, 3)
    assert b.src_lengths.tolist() == [[2, 0, 0], [2, 3, 1]]
    assert b.agent_mask.tolist() == [[True, False, False], [True, True, True]]
    assert not b.src_mask[0, 1:].any() and (b.src_ids[0, 1:] == PAD_ID).all()
    assert b.src_tokens == [[["the", "cat"], [], []], docs[1]]
    assert b.oov_words == [[], ["zebra"]]
    # the first document's own fields are those of its batch alone, up to the padding
    alone = make_batch(docs[:1], VOCAB, summaries=[["the"]])
    assert b.src_ids[0, :1, :2].tolist() == alone.src_ids[0].tolist()
    assert b.tgt_out[0].tolist() == alone.tgt_out[0].tolist()
