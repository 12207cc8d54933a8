"""model.speaker_embedding: who speaks at every source token, and the learned vector it adds."""

import torch

from agentsum.data.batch import make_batch
from agentsum.data.speakers import MAX_SPEAKERS, source_speakers, speaker_ids
from agentsum.data.vocab import Vocabulary
from agentsum.models.dca import DCA, DCAConfig

CHAT = [["amanda", ":", "lunch", "at", "1", "?", "jerry", ":", "sure", "see", "you", "amanda", ":", "ok"]]
VOCAB = Vocabulary.build([CHAT[0] + ["the", "cafe", "."]])


def test_every_token_gets_the_number_of_its_turns_speaker_in_order_of_first_turn():
    assert speaker_ids(CHAT) == [[1] * 6 + [2] * 5 + [1] * 3]


def test_numbers_run_across_agents_and_text_before_the_first_turn_is_nobody():
    agents = [["hello", "there", "bob", ":", "hi"], ["#person1#", ":", "yes", "bob", ":", "no"]]
    assert speaker_ids(agents) == [[0, 0, 1, 1, 1], [2, 2, 2, 1, 1, 1]]


def test_a_colon_after_a_number_or_punctuation_opens_no_turn_and_late_speakers_share_the_last_number():
    assert speaker_ids([["ann", ":", "at", "10", ":", "30", "!", ":", "ok"]]) == [[1] * 9]
    many = [tok for i in range(MAX_SPEAKERS + 3) for tok in (f"p{i}x", ":", "hi")]
    ids = speaker_ids([many])[0]
    assert ids[::3] == list(range(1, MAX_SPEAKERS + 1)) + [MAX_SPEAKERS] * 3


def test_source_speakers_pads_with_zero():
    batch = make_batch([[CHAT[0]], [["jerry", ":", "the", "cafe"]]], VOCAB)
    ids = source_speakers(batch)
    assert ids.shape == batch.src_ids.shape
    assert ids[1, 0].tolist() == [1, 1, 1, 1] + [0] * (len(CHAT[0]) - 4)
    assert (ids[~batch.src_mask] == 0).all()


def tiny(**kw):
    torch.manual_seed(0)
    return DCA(DCAConfig(vocab_size=len(VOCAB), embedding_size=8, hidden_size=12, pointer="single",
                         communication=False, **kw)).eval()


def test_zero_initialised_it_leaves_the_model_as_it_was_and_once_trained_it_tells_speakers_apart():
    batch = make_batch([CHAT], VOCAB, summaries=[["jerry", "will", "see", "amanda"]])
    plain, with_speakers = tiny(), tiny(speaker_embedding=True)
    state = {k: v for k, v in with_speakers.state_dict().items() if not k.startswith("speaker.")}
    plain.load_state_dict(state)
    assert torch.equal(plain.encode(batch).states, with_speakers.encode(batch).states)
    # a trained table enters the encoder: the vector added at each token is its speaker's row
    with torch.no_grad():
        with_speakers.speaker.weight.normal_()
    seen = {}
    with_speakers.local.register_forward_hook(lambda module, inputs, output: seen.update(x=inputs[0]))
    with_speakers.encode(batch)
    words = with_speakers.embedding(batch.src_ids[0, 0])
    expected = words + with_speakers.speaker.weight[torch.tensor(speaker_ids(CHAT)[0])]
    assert torch.allclose(seen["x"][0], expected)
    assert not torch.allclose(plain.encode(batch).states, with_speakers.encode(batch).states)


def test_it_learns_gradients_flow_into_the_table():
    model = tiny(speaker_embedding=True).train()
    batch = make_batch([CHAT], VOCAB, summaries=[["jerry", "will", "see", "amanda"]])
    out = model(batch)
    loss = -out.dist.log_probs().gather(-1, batch.tgt_out.unsqueeze(-1)).mean()
    loss.backward()
    grad = model.speaker.weight.grad
    assert grad[1].abs().sum() > 0 and grad[2].abs().sum() > 0 and grad[0].abs().sum() == 0
