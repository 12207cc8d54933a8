"""model.checkpoint_agents: the agents' encoder layers recomputed in the backward pass give the same
loss and the same gradients as the model that keeps them."""

import pytest
import torch

from agentsum.data.batch import make_batch
from agentsum.data.vocab import Vocabulary
from agentsum.models.dca import DCA, DCAConfig
from agentsum.training.objectives import MLE

WORDS = "the a cat dog sat on mat ran . and big small red blue house tree saw".split()
VOCAB = Vocabulary.build([WORDS])
# documents of different lengths and agent counts (padding agents, an empty agent) and an OOV word
DOCS = [[["the", "cat", "sat", "on", "the", "mat", "."], ["the", "dog", "ran", "zorp", "."], ["a", "big", "red", "."]],
        [["a", "dog", "."], ["the", "cat", "saw", "a", "tree", "."]],
        [["big", "tree", "."], [], ["the", "cat", "ran", "."]]]
SUMMARIES = [["the", "dog", "zorp", "sat", "."], ["a", "cat", "."], ["the", "tree", "."]]


def loss_and_grads(checkpoint_agents: bool, **kw):
    torch.manual_seed(0)  # the same weights for both models, and the same dropout masks
    model = DCA(DCAConfig(vocab_size=len(VOCAB), embedding_size=8, hidden_size=12, contextual_layers=2,
                          dropout=0.3, checkpoint_agents=checkpoint_agents, **kw)).train()
    batch = make_batch(DOCS, VOCAB, summaries=SUMMARIES)
    loss, _ = MLE(sem_weight=0.1, end_ids=[VOCAB.id(".")])(model, batch)
    loss.backward()
    return loss.detach(), {name: p.grad for name, p in model.named_parameters()}


@pytest.mark.parametrize("kw", [dict(pointer="multi", contextual_agent_attention=True, communication=True),
                                dict(pointer="single", agent_state="ends", init_state="mean", input_feeding=True),
                                dict(pointer="multi", coverage=True, message="length")])
def test_loss_and_gradients_equal_the_model_that_keeps_its_activations(kw):
    loss, grads = loss_and_grads(False, **kw)
    checkpointed_loss, checkpointed_grads = loss_and_grads(True, **kw)
    torch.testing.assert_close(checkpointed_loss, loss, rtol=0, atol=0)
    assert checkpointed_grads.keys() == grads.keys()
    for name, grad in grads.items():
        assert grad is not None and checkpointed_grads[name] is not None, name
        torch.testing.assert_close(checkpointed_grads[name], grad, rtol=1e-6, atol=1e-7, msg=name)


def test_without_gradients_nothing_is_checkpointed_and_results_are_the_same():
    torch.manual_seed(0)
    plain = DCA(DCAConfig(vocab_size=len(VOCAB), embedding_size=8, hidden_size=12)).eval()
    checkpointed = DCA(DCAConfig(vocab_size=len(VOCAB), embedding_size=8, hidden_size=12, checkpoint_agents=True)).eval()
    checkpointed.load_state_dict(plain.state_dict())  # the option adds no parameters
    batch = make_batch(DOCS, VOCAB, summaries=SUMMARIES)
    with torch.no_grad():
        torch.testing.assert_close(checkpointed.encode(batch).states, plain.encode(batch).states, rtol=0, atol=0)


def test_the_encoder_layers_keep_less_for_the_backward_pass():
    def saved_bytes(checkpoint_agents: bool) -> int:
        torch.manual_seed(0)
        model = DCA(DCAConfig(vocab_size=len(VOCAB), embedding_size=8, hidden_size=12,
                              checkpoint_agents=checkpoint_agents)).train()
        batch = make_batch(DOCS, VOCAB, summaries=SUMMARIES)
        total = 0

        def pack(t):
            nonlocal total
            total += t.numel() * t.element_size()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            model.encode(batch)
        return total

    assert saved_bytes(True) < 0.5 * saved_bytes(False)
