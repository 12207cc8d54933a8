"""The vocabulary (agentsum.data.vocab): special ids, frequency order, per-document OOV extension."""

import pytest
import torch

from agentsum.data.vocab import BOS_ID, EOS_ID, PAD_ID, SPECIALS, UNK_ID, Vocabulary


def test_specials_come_first_with_fixed_ids():
    vocab = Vocabulary.build([["b", "a"]])
    assert vocab.itos[:4] == list(SPECIALS)
    assert [vocab.id(t) for t in SPECIALS] == [PAD_ID, UNK_ID, BOS_ID, EOS_ID] == [0, 1, 2, 3]


def test_build_ranks_by_frequency_then_alphabet_and_keeps_max_size():
    vocab = Vocabulary.build([["b", "c", "a", "c"], ["b", "c", "d", "<s>"]], max_size=3)
    assert vocab.itos[4:] == ["c", "b", "a"]  # c x3, then b x2, then a/d x1 alphabetically, cut at 3
    assert "<s>" not in vocab.itos[4:]  # a special token in the text is not counted twice
    assert Vocabulary.build([["x", "y", "y"]], min_freq=2).itos[4:] == ["y"]


def test_vocabulary_must_start_with_the_specials_and_hold_no_duplicate():
    with pytest.raises(ValueError, match="must start with"):
        Vocabulary(["a", "b", "c", "d"])
    with pytest.raises(ValueError, match="duplicate"):
        Vocabulary(list(SPECIALS) + ["a", "a"])


def test_oov_words_get_extended_ids_in_order_of_first_appearance():
    vocab = Vocabulary.build([["the", "cat"]])
    V = len(vocab)
    oovs: list[str] = []
    assert vocab.encode(["the", "zebra", "cat"]) == [vocab.id("the"), UNK_ID, vocab.id("cat")]
    assert vocab.encode_extended(["zebra", "the", "yak", "zebra"], oovs) == [V, vocab.id("the"), V + 1, V]
    assert oovs == ["zebra", "yak"]
    # targets: an OOV word of the source gets its extended id, any other OOV word is UNK
    assert vocab.encode_target(["yak", "gnu", "cat"], oovs) == [V + 1, UNK_ID, vocab.id("cat")]


def test_decode_reads_extended_ids_from_the_documents_oov_words():
    vocab = Vocabulary.build([["the"]])
    V = len(vocab)
    assert vocab.decode([vocab.id("the"), V + 1, EOS_ID], ["zebra", "yak"]) == ["the", "yak", "</s>"]
    with pytest.raises(IndexError, match="outside vocabulary"):
        vocab.decode([V + 2], ["zebra", "yak"])


def test_decoder_inputs_read_extended_ids_as_unk_and_saving_round_trips():
    vocab = Vocabulary.build([["the", "cat"]])
    V = len(vocab)
    assert vocab.to_input_ids(torch.tensor([BOS_ID, V, V + 3, 4])).tolist() == [BOS_ID, UNK_ID, UNK_ID, 4]
    assert Vocabulary(vocab.save()) == vocab
    assert Vocabulary(vocab.save()) != Vocabulary.build([["the", "dog"]])
