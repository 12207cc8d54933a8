"""Copy and OOV bookkeeping (agentsum.decoding.copying): source positions, UNK replacement,
generated ids -> a teacher-forced batch."""

import torch

from agentsum.data.batch import make_batch
from agentsum.data.vocab import BOS_ID, EOS_ID, PAD_ID, SPECIALS, UNK_ID, Vocabulary
from agentsum.decoding.copying import (cascaded_attention, copy_positions, padded_ids, source_position, source_word,
                                       teacher_forced, to_words)

VOCAB = Vocabulary(list(SPECIALS) + ["a", "b", "c", "."])
V = len(VOCAB)


def batch():
    # document 0: agents of 3 and 1 tokens (S = 3); document 1: one agent with text, one empty
    return make_batch([[["a", "paris", "b"], ["rome"]], [["c", "."], []]], VOCAB,
                      summaries=[["a", "rome"], ["c"]])


def test_flat_source_positions_name_agent_index_and_word():
    b = batch()
    assert b.src_ids.size(2) == 3
    assert source_position(4, 3) == (1, 1)
    assert source_word(b, 0, 1) == (0, 1, "paris")
    assert source_word(b, 0, 3) == (1, 0, "rome")
    assert source_word(b, 0, 4) is None  # padding after agent 1's only token
    assert source_word(b, 1, 3) is None  # an agent without text


def test_cascaded_attention_is_word_times_agent_and_its_argmax_is_the_copy_position():
    word = torch.tensor([[[0.2, 0.8, 0.0], [1.0, 0.0, 0.0]]])  # (N=1, A=2, S=3)
    agent = torch.tensor([[0.3, 0.7]])
    flat = cascaded_attention(word, agent)
    torch.testing.assert_close(flat, torch.tensor([[0.06, 0.24, 0.0, 0.7, 0.0, 0.0]]))
    assert copy_positions(word, agent).tolist() == [3]
    assert copy_positions(word, torch.tensor([[0.9, 0.1]])).tolist() == [1]


def test_to_words_reads_oov_ids_and_replaces_unk_with_the_copied_word():
    b = batch()
    # document 0's OOV words: paris (V), rome (V + 1)
    tokens = [[V + 1, UNK_ID, VOCAB.id("a")], [UNK_ID]]
    positions = [[0, 1, 0], [4]]
    assert to_words(tokens, positions, b, VOCAB) == [["rome", "paris", "a"], ["<unk>"]]  # doc 1: padding
    assert to_words(tokens, positions, b, VOCAB, unk_replace=False)[0] == ["rome", "<unk>", "a"]


def test_generated_ids_become_a_teacher_forced_batch():
    b = batch()
    generated = [[VOCAB.id("a"), V + 1, EOS_ID], []]
    ids = padded_ids(generated)
    assert ids.tolist() == [[VOCAB.id("a"), V + 1, EOS_ID], [PAD_ID, PAD_ID, PAD_ID]]
    assert padded_ids([[], []]).shape == (2, 1)
    forced = teacher_forced(b, torch.cat([ids, torch.full((2, 2), PAD_ID)], dim=1))  # trailing padding is cut
    assert forced.tgt_out.tolist() == ids.tolist()
    assert forced.tgt_in.tolist() == [[BOS_ID, VOCAB.id("a"), V + 1], [PAD_ID, PAD_ID, PAD_ID]]
    assert forced.tgt_mask.tolist() == [[True, True, True], [False, False, False]]
    assert forced.src_ids is b.src_ids and forced.oov_words == b.oov_words  # the source is untouched
