"""Deep Communicating Agents (Celikyilmaz et al., 2018), section 2, equations (1)-(16).

Shape notation:
    B  documents            A  agents (M in the paper)     S  tokens per agent (I in the paper)
    T  decoder steps        E  embedding size              H  hidden size
    V  fixed vocabulary     V_ext  V + OOV words of the batch (copy targets)

The model implements ``agentsum.models.base.SummarizationModel``: it only offers distributions
(``forward`` for teacher forcing, ``encode``/``init_state``/``step`` for search); losses live in
``agentsum.training.objectives`` and search in ``agentsum.decoding.search``.

Choices where the paper is silent or ambiguous (also in docs/model.md):
* Eq (7) as printed, ``v1^T tanh(W3 h + W4 z)``, is a scalar, but it is the input of a bLSTM
  that must carry the token's representation h_i^(k) to the next layer; one number per token would
  throw away everything the lower layers encoded. We read ``v1`` as a matrix ``V1 in R^{H x H}``:
  f(h, z) = V1 tanh(W3 h + W4 z), an H-dimensional input.
* bLSTMs have H units per direction; W1/W2 (eq 2, 5) project the 2H concatenation back to H.
* "Last hidden state" h_{m,I} (eq 6) is the projected output at agent m's last real token
  (``agent_state="last"``, the default), whose backward half has read one token; ``"ends"`` uses
  W[fwd_I; bwd_1] instead, both directions after the agent's whole text. s_0 = h^(K)_{1,I} comes
  from agent 1 (``init_state="first"``, as printed) or, with ``"mean"``, from the mean over agents.
  Agents that received no text (short documents) neither send messages nor receive attention;
  eq (6)'s 1/(M-1) becomes 1/(number of other agents with text). With M = 1 the message is 0.
  Two options leave the printed reading as their default. ``message="length"`` weights each other
  agent in eq (6) by its tokens, so an agent of 3 tokens weighs less than one of 250.
  ``agent_index`` adds a learned vector e_a per agent position inside eq (10)'s tanh (zeros at the
  start): as printed, shared parameters and a symmetric message give the agents no signal of order.
* Without communication (ablation m4) the message is 0, so f(h) = V1 tanh(W3 h): same layers,
  no information from other agents.
* The decoder LSTM's initial cell state is zero (the paper only gives s_0 = h_{1,I}^(K)); its input
  is the embedding of the previous word (eq 12 conditions on s_t and w_{t-1} only). With
  ``input_feeding`` it is [y_{t-1}; c*_{t-1}], as in See et al.'s pointer-generator code and
  OpenNMT-py's ``input_feed``: the previous agent context then reaches the agent attention of eq (10)
  and the switches of eq (14) through s_t, not only the vocabulary MLP of eq (13); teacher forcing
  runs step by step (c*_t depends on s_t, and s_{t+1} on c*_t).
* The "MLP" of eq (12)/(13) is Linear -> tanh -> Linear; c*_0 = 0 for contextual agent attention.
* y_t in eq (14) is the embedding of the decoder input at step t (the previous word).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from agentsum.data.batch import Batch
from agentsum.data.speakers import MAX_SPEAKERS, source_speakers
from agentsum.data.vocab import PAD_ID
from agentsum.models.additive import additive_scores
from agentsum.models.base import (Attention, DecoderOutput, masked_softmax, producible_targets, step_log_probs,
                                  unk_extended_ids)
from agentsum.models.dropout import Dropout
from agentsum.models.pointer import CopyDistribution

POINTERS = ("none", "single", "multi")
AGENT_STATES = ("last", "ends")  # what "the last hidden state" of an agent is (eq 6, s_0)
INIT_STATES = ("first", "mean")  # s_0 from agent 1 (the paper) or the mean over agents with text
MESSAGES = ("mean", "length")  # eq (6): the plain mean over the other agents (the paper) or by their tokens
#: Agent positions the agent-index embedding of eq (10) has (``agent_index``); the paper's largest M is 5.
MAX_AGENT_INDEX = 16


@dataclass
class DCAConfig:
    vocab_size: int
    embedding_size: int = 128
    hidden_size: int = 128
    contextual_layers: int = 2  # K
    communication: bool = True
    pointer: str = "multi"  # none | single | multi
    contextual_agent_attention: bool = False  # caa, eq (13)
    dropout: float = 0.0
    # See et al. (2017) coverage: each agent's past word attention enters eq (8) (and, through the
    # objective, the coverage loss); off in the paper's presets
    coverage: bool = False
    # An agent's "last hidden state" h_{m,I} (eq 6's messages and s_0): "last" is the layer's output
    # at the last token, W[fwd_I; bwd_I], whose backward half has read one token; "ends" is
    # W[fwd_I; bwd_1], both directions after the whole agent text (the usual bLSTM summary).
    agent_state: str = "last"
    # s_0: "first" is h^(K)_{1,I} as printed; "mean" averages the agents that hold text, so the
    # decoder does not start from agent 1's part alone.
    init_state: str = "first"
    # The decoder LSTM reads [y_{t-1}; c*_{t-1}] (input feeding) instead of y_{t-1} alone; off as printed.
    input_feeding: bool = False
    # Eq (10) with a learned vector per agent position added inside the tanh, so the agent attention
    # can tell agent 1 (the article's start) from agent 3; off as printed (shared parameters and a
    # symmetric message give the agents no signal of their order).
    agent_index: bool = False
    # Eq (6)'s message: "mean" over the other agents as printed; "length" weights each by its tokens,
    # so an agent holding 3 tokens counts for less than one holding 250.
    message: str = "mean"
    # Activation checkpointing of the agents' encoder: each bLSTM layer (eq 1-5, 7) keeps only its
    # input and output during the forward pass and is run again during the backward pass, so a
    # training step holds one layer's LSTM internals at a time instead of all of them: less memory
    # on long documents (benchmarks/results/long/), about one more encoder forward pass of time.
    # Same loss and gradients (tests/models/test_checkpoint_agents.py). Training only.
    checkpoint_agents: bool = False
    # A learned vector per speaker (agentsum.data.speakers: 1 for the first to speak, ...) added to
    # every source token's word embedding, so that the encoder knows whose words it reads; zeros at
    # the start, so a model trained without it starts from what it was. Not in the paper: dialogues
    # (SAMSum) give actions to the wrong participant when "who said this" is left to the name tokens.
    speaker_embedding: bool = False

    def __post_init__(self):
        if self.pointer not in POINTERS:
            raise ValueError(f"model.pointer must be one of {POINTERS}, got {self.pointer!r}")
        if self.agent_state not in AGENT_STATES:
            raise ValueError(f"model.agent_state must be one of {AGENT_STATES}, got {self.agent_state!r}")
        if self.init_state not in INIT_STATES:
            raise ValueError(f"model.init_state must be one of {INIT_STATES}, got {self.init_state!r}")
        if self.message not in MESSAGES:
            raise ValueError(f"model.message must be one of {MESSAGES}, got {self.message!r}")
        if self.contextual_layers < 0:
            raise ValueError("model.contextual_layers must be >= 0")


@dataclass
class EncoderOutput:
    """What the decoder needs from the encoder, computed once per document.

    states:      (B, A, S, H) h^(K)_{a,i}, the last contextual layer.
    keys:        (B, A, S, H) W5 h^(K)_{a,i}, the attention projection of eq (8), precomputed once.
    mask:        (B, A, S) bool, real tokens.
    agent_mask:  (B, A) bool, agents holding text.
    src_ext_ids: (B, A*S) extended source ids (copy targets).
    init_hidden: (B, H) s_0 = h^(K)_{1,I}.
    n_ext:       V_ext.
    """

    states: torch.Tensor
    keys: torch.Tensor
    mask: torch.Tensor
    agent_mask: torch.Tensor
    src_ext_ids: torch.Tensor
    init_hidden: torch.Tensor
    n_ext: int

    def select(self, index: torch.Tensor) -> "EncoderOutput":
        pick = lambda x: x.index_select(0, index)  # noqa: E731
        return EncoderOutput(pick(self.states), pick(self.keys), pick(self.mask), pick(self.agent_mask),
                             pick(self.src_ext_ids), pick(self.init_hidden), self.n_ext)


@dataclass
class DecoderState:
    """hidden, cell: (1, N, H) LSTM state; context: (N, H) c*_{t-1} (for caa); coverage: (N, A, S)
    the sum of every agent's past word attention (with ``coverage``; None without)."""

    hidden: torch.Tensor
    cell: torch.Tensor
    context: torch.Tensor
    coverage: torch.Tensor | None = None

    def select(self, index: torch.Tensor) -> "DecoderState":
        return DecoderState(self.hidden.index_select(1, index), self.cell.index_select(1, index),
                            self.context.index_select(0, index),
                            None if self.coverage is None else self.coverage.index_select(0, index))


def float32_lstm(lstm: nn.LSTM, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None = None):
    """``lstm(x, state)`` in float32, outside autocast.

    Under CUDA autocast the cuDNN LSTM runs in float16 whatever the autocast dtype, and training
    uses no GradScaler (bf16 needs none), so its gradients could underflow; on CPUs without
    AVX512-BF16 / AMX oneDNN has no bf16 LSTM kernel at all. The LSTMs therefore always run in
    float32 (TF32 on CUDA, see ``agentsum.devices.use_tf32``); the layers around them still follow
    autocast.
    """
    with torch.autocast(x.device.type, enabled=False):
        return lstm(x.float(), None if state is None else tuple(h.float() for h in state))


class BiLSTMLayer(nn.Module):
    """bLSTM over every agent's tokens in one call, followed by W[h_fwd, h_bwd] (eq 1-2, 3-5).

    The two directions are two unidirectional LSTMs over padded (not packed) sequences: the
    backward one reads each sequence reversed within its own length, so padding never reaches a
    real position in either direction. PyTorch's CPU LSTM over a PackedSequence runs a generic
    per-step loop; over padded input it runs the oneDNN kernel, measured 13x faster forward +
    backward at 16 x 400 tokens, 128 -> 256 units (the encoder of a training step).
    """

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.forward_lstm = nn.LSTM(input_size, hidden_size, batch_first=True)
        self.backward_lstm = nn.LSTM(input_size, hidden_size, batch_first=True)
        self.proj = nn.Linear(2 * hidden_size, hidden_size, bias=False)  # W1 / W2

    def forward(self, x: torch.Tensor, lengths: torch.Tensor, ends: bool = False):
        """x: (N, S, D), lengths: (N,) >= 1 -> (N, S, H); padding rows are zero before projection.
        With ``ends``, also the sequence summary W[fwd_last; bwd_first] (N, H): both directions after
        the whole sequence."""
        N, S, D = x.shape
        pos = torch.arange(S, device=x.device).expand(N, S)
        length = lengths.to(x.device).unsqueeze(1)
        real = pos < length  # (N, S)
        # position s of the reversed sequence holds token len-1-s; padding stays in place
        flip = torch.where(real, length - 1 - pos, pos).unsqueeze(-1)  # (N, S, 1), its own inverse
        fwd, _ = float32_lstm(self.forward_lstm, x)
        bwd, _ = float32_lstm(self.backward_lstm, x.gather(1, flip.expand(N, S, D)))
        bwd = bwd.gather(1, flip.expand(N, S, bwd.size(-1)))
        out = self.proj(torch.cat([fwd, bwd], dim=-1) * real.unsqueeze(-1))
        if not ends:
            return out
        last = (length - 1).view(N, 1, 1).expand(N, 1, fwd.size(-1))
        return out, self.proj(torch.cat([fwd.gather(1, last).squeeze(1), bwd[:, 0]], dim=-1))

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # checkpoints written before the split held one bidirectional nn.LSTM named "lstm"
        for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
            if prefix + "lstm." + name in state_dict:
                state_dict[prefix + "forward_lstm." + name] = state_dict.pop(prefix + "lstm." + name)
                state_dict[prefix + "backward_lstm." + name] = state_dict.pop(prefix + "lstm." + name + "_reverse")
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class ContextualLayer(nn.Module):
    """One communication round: f(h, z) of eq (7) feeds a bLSTM (eq 3-5)."""

    def __init__(self, hidden_size: int):
        super().__init__()
        H = hidden_size
        self.w3 = nn.Linear(H, H, bias=False)
        self.w4 = nn.Linear(H, H, bias=False)
        self.v1 = nn.Linear(H, H, bias=False)  # v1 read as an H x H matrix, see module docstring
        self.blstm = BiLSTMLayer(H, H)

    def forward(self, h: torch.Tensor, message: torch.Tensor, lengths: torch.Tensor, ends: bool = False):
        """h: (B, A, S, H), message: (B, A, H), lengths: (B*A,) -> (B, A, S, H) (and, with ``ends``,
        each agent's summary (B, A, H), see :class:`BiLSTMLayer`)."""
        B, A, S, H = h.shape
        f = self.v1(torch.tanh(self.w3(h) + self.w4(message).unsqueeze(2)))  # eq (7), (B, A, S, H)
        if not ends:
            return self.blstm(f.reshape(B * A, S, H), lengths).view(B, A, S, H)
        out, summary = self.blstm(f.reshape(B * A, S, H), lengths, ends=True)
        return out.view(B, A, S, H), summary.view(B, A, H)


class DCA(nn.Module):
    """Deep Communicating Agents; a :class:`agentsum.models.base.SummarizationModel`."""

    max_positions = None  # LSTMs read sequences of any length
    #: layers whose weight is read as a tensor (eq 8's v2, the coverage vector w_c): int8
    #: quantization (agentsum.models.quantize) leaves them in float
    float_layers = ("v2", "w_cov")

    def __init__(self, config: DCAConfig):
        super().__init__()
        self.config = config
        V, E, H = config.vocab_size, config.embedding_size, config.hidden_size
        self.vocab_size = V
        self.embedding = nn.Embedding(V, E, padding_idx=PAD_ID)
        self.dropout = Dropout(config.dropout)
        if config.speaker_embedding:
            self.speaker = nn.Embedding(MAX_SPEAKERS + 1, E, padding_idx=0)
            nn.init.zeros_(self.speaker.weight)
        # Encoder (section 2.1); parameters are shared by all agents.
        self.local = BiLSTMLayer(E, H)  # eq (1)-(2)
        self.contextual = nn.ModuleList(ContextualLayer(H) for _ in range(config.contextual_layers))
        # Decoder (section 2.2).
        self.decoder = nn.LSTM(E + H if config.input_feeding else E, H, batch_first=True)
        self.w5 = nn.Linear(H, H, bias=False)  # eq (8)
        if config.coverage:
            self.w_cov = nn.Linear(1, H, bias=False)  # w_c of See et al. (2017), eq (11)
        self.w6 = nn.Linear(H, H, bias=True)  # eq (8), bias is b1
        self.v2 = nn.Linear(H, 1, bias=False)
        self.w7 = nn.Linear(H, H, bias=False)  # eq (10)
        self.w8 = nn.Linear(H, H, bias=True)  # eq (10), bias is b2
        self.v3 = nn.Linear(H, 1, bias=False)
        if config.agent_index:  # e_a of eq (10); zeros at the start, so training starts from the printed model
            self.agent_position = nn.Embedding(MAX_AGENT_INDEX, H)
            nn.init.zeros_(self.agent_position.weight)
        n_in = 3 * H if config.contextual_agent_attention else 2 * H
        self.out_hidden = nn.Linear(n_in, H)  # MLP of eq (12)/(13)
        self.out_vocab = nn.Linear(H, V)
        if config.pointer != "none":  # eq (14): v5, v6, v7 and the scalar b
            self.gen_context = nn.Linear(H, 1, bias=True)
            self.gen_state = nn.Linear(H, 1, bias=False)
            self.gen_input = nn.Linear(E, 1, bias=False)

    # ----------------------------------------------------------------------------------- encoder
    def encode(self, batch: Batch) -> EncoderOutput:
        src = batch.src_ids
        B, A, S = src.shape
        lengths = batch.src_lengths.reshape(B * A).clamp_min(1)  # empty agents run over one PAD, then are masked
        agent_mask = batch.agent_mask  # (B, A)
        last = (batch.src_lengths - 1).clamp_min(0)  # (B, A) index of the last real token

        x = self.embedding(src.reshape(B * A, S))  # (B*A, S, E)
        if self.config.speaker_embedding:
            x = x + self.speaker(source_speakers(batch).reshape(B * A, S))
        x = self.dropout(x)
        ends = self.config.agent_state == "ends"
        h, final = self._agent_states(self._run_layer(self.local, x, lengths, ends=ends), last)  # h^(1), eq (1)-(2)
        for layer in self.contextual:
            message = self._message(final, agent_mask, batch.src_lengths)  # z^(k), eq (6)
            out = self._run_layer(layer, self.dropout(h), message, lengths, ends=ends)  # eq (3)-(5), (7)
            h, final = self._agent_states(out, last)
        keys = self.w5(h)  # W5 h of eq (8), once per document
        if self.config.init_state == "mean":
            weights = agent_mask.to(final.dtype).unsqueeze(-1)
            init_hidden = (final * weights).sum(1) / weights.sum(1).clamp_min(1)
        else:
            init_hidden = final[:, 0]  # s_0 = h^(K)_{1,I}
        return EncoderOutput(
            states=h,
            keys=keys,
            mask=batch.src_mask,
            agent_mask=agent_mask,
            src_ext_ids=batch.src_ext_ids.reshape(B, A * S),
            init_hidden=init_hidden,
            n_ext=self.vocab_size + batch.max_oov,
        )

    def _run_layer(self, layer: nn.Module, *inputs, ends: bool):
        """``layer(*inputs, ends=ends)``; with ``checkpoint_agents`` and gradients on, checkpointed:
        its internals are recomputed in the backward pass instead of kept. The layers hold no dropout
        or other randomness (dropout is applied to their inputs, outside), so the recomputation is
        the same computation."""
        if self.config.checkpoint_agents and torch.is_grad_enabled():
            return checkpoint(layer, *inputs, ends=ends, use_reentrant=False)
        return layer(*inputs, ends=ends)

    def _agent_states(self, out, last: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A layer's output as (h (B, A, S, H), each agent's last state (B, A, H)): the layer's own
        summary with ``agent_state="ends"``, else h at the agent's last real token."""
        B, A = last.shape
        if isinstance(out, tuple):
            h, summary = out
            return h.view(B, A, h.size(-2), -1), summary.view(B, A, -1)
        h = out.view(B, A, out.size(-2), -1)
        return h, h.gather(2, last.view(B, A, 1, 1).expand(B, A, 1, h.size(-1))).squeeze(2)

    def _message(self, final: torch.Tensor, agent_mask: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Eq (6): z_a = the mean of the other agents' last states (B, A, H), over agents with text;
        with ``message="length"``, each other agent weighted by its tokens (lengths: (B, A))."""
        B, A, H = final.shape
        if not self.config.communication or A == 1:
            return final.new_zeros(B, A, H)
        if self.config.message == "length":
            # w[a, m]: agent m's tokens for m != a (0 for agents without text), as an (A, A) matrix:
            # "all minus self" would cancel large weights against each other in floating point
            tokens = (lengths * agent_mask).to(final.dtype)  # (B, A)
            w = tokens.unsqueeze(1) * (1 - torch.eye(A, dtype=final.dtype, device=final.device))  # (B, A, A)
            return torch.bmm(w, final) / w.sum(-1, keepdim=True).clamp_min(1)
        final = final * agent_mask.unsqueeze(-1)
        others = final.sum(1, keepdim=True) - final  # sum over m != a
        n_others = (agent_mask.sum(1, keepdim=True) - agent_mask.long()).clamp_min(1)  # (B, A)
        return others / n_others.unsqueeze(-1)

    # ----------------------------------------------------------------------------------- decoder
    def init_state(self, enc: EncoderOutput) -> DecoderState:
        h0 = enc.init_hidden.unsqueeze(0).contiguous()  # (1, B, H)
        coverage = enc.mask.new_zeros(enc.mask.shape, dtype=enc.states.dtype) if self.config.coverage else None
        return DecoderState(hidden=h0, cell=torch.zeros_like(h0), context=torch.zeros_like(enc.init_hidden),
                            coverage=coverage)

    def _contexts(self, enc: EncoderOutput, s: torch.Tensor, coverage: torch.Tensor | None = None):
        """Eq (8)-(11) for decoder states s: (B, T, H): word attention (B, T, A, S), agent attention
        (B, T, A), agent contexts c^t_a (B, T, A, H), c*_t (B, T, H), the coverage after the last
        step and the per-step coverage loss (both None without ``coverage``).
        coverage: (B, A, S) before the first of these steps (None = zeros)."""
        B, T, H = s.shape
        _, A, S, _ = enc.states.shape
        # eq (8): l^t_a = softmax_i(v2^T tanh(W5 h_{a,i} + W6 s_t + b1))
        # (blockwise on CPU: agentsum.models.additive never builds the (B, T, A*S, H) tanh tensor)
        cov_loss = None
        if self.config.coverage:
            word_attn, coverage, cov_loss = self._covered_word_attention(enc, self.w6(s), coverage)
        else:
            scores = additive_scores(enc.keys.reshape(B, A * S, H), self.w6(s), self.v2.weight.view(H))
            scores = scores.view(B, T, A, S)
            word_attn = masked_softmax(scores, enc.mask.unsqueeze(1))
        # eq (9): c^t_a = sum_i l^t_{a,i} h_{a,i}
        context = torch.einsum("btas,bash->btah", word_attn, enc.states)  # (B, T, A, H)
        # eq (10): g^t = softmax_a(v3^T tanh(W7 c^t_a + W8 s_t + b2))
        agent_features = self.w7(context) + self.w8(s).unsqueeze(2)  # (B, T, A, H)
        if self.config.agent_index:  # + e_a, the agent's position
            if A > MAX_AGENT_INDEX:
                raise ValueError(f"model.agent_index holds {MAX_AGENT_INDEX} agent positions; the batch has {A} agents "
                                 f"(set data.max_agents, or data.agents, to at most {MAX_AGENT_INDEX})")
            agent_features = agent_features + self.agent_position.weight[:A]
        agent_scores = self.v3(torch.tanh(agent_features)).squeeze(-1)  # (B, T, A)
        agent_attn = masked_softmax(agent_scores, enc.agent_mask.unsqueeze(1))
        # eq (11): c*_t = sum_a g^t_a c^t_a
        agent_context = torch.einsum("bta,btah->bth", agent_attn, context)  # (B, T, H)
        return word_attn, agent_attn, context, agent_context, coverage, cov_loss

    def _attend(self, enc: EncoderOutput, s: torch.Tensor, y: torch.Tensor, prev_context: torch.Tensor | None,
                coverage: torch.Tensor | None = None, contexts: tuple | None = None):
        """Eq (8)-(16) for decoder states s: (B, T, H) and inputs y: (B, T, E).

        prev_context: (B, 1, H) c*_{t-1} for a single step, or None in teacher forcing, where it is
        c* shifted by one step (without input feeding c*_t does not depend on c*_{t-1}, so all steps
        run at once). coverage: (B, A, S) before this step (with ``coverage``; None in teacher
        forcing = zeros). contexts: :meth:`_contexts` of ``s``, when already computed.
        Returns the distribution, the attention, c*_t, the coverage after the last step and the
        per-step coverage loss (both None without ``coverage``).
        """
        B, T, H = s.shape
        _, A, S, _ = enc.states.shape
        word_attn, agent_attn, context, agent_context, coverage, cov_loss = (
            contexts if contexts is not None else self._contexts(enc, s, coverage))
        # eq (12) / (13)
        features = [s, agent_context]
        if self.config.contextual_agent_attention:
            if prev_context is None:
                prev_context = F.pad(agent_context, (0, 0, 1, 0))[:, :-1]  # c*_{t-1}, c*_0 = 0
            features.append(prev_context)
        hidden = torch.tanh(self.out_hidden(self.dropout(torch.cat(features, dim=-1))))
        # P_voc logits = out_vocab(hidden), (B, T, V): computed by the distribution when needed,
        # so training runs the (large) output layer on real target positions only

        # The switches' logits are summed and squashed in float32: a bf16 sigmoid (autocast) is
        # exactly 1.0 for logits above about 6.2, which zeroes the copy weight and its gradient.
        gen_weight = copy_weight = None
        pointer = self.config.pointer
        if pointer == "multi":
            # eq (14): p^t_a = sigma(v5 c^t_a + v6 s_t + v7 y_t + b), one per agent
            p = torch.sigmoid(self.gen_context(context).float().squeeze(-1)
                              + (self.gen_state(s).float() + self.gen_input(y).float()))  # (B, T, A)
            # eq (15)-(16): P = sum_a g_a (p_a P_voc + (1 - p_a) u_a)
            gen_weight = (agent_attn * p).sum(-1)  # (B, T)
            copy_weight = ((agent_attn * (1 - p)).unsqueeze(-1) * word_attn).reshape(B, T, A * S)
        elif pointer == "single":
            # See et al. (2017): one p_gen from c*_t, and the copy distribution is the cascaded
            # attention g_a l_{a,i} over the whole document.
            p = torch.sigmoid(self.gen_context(agent_context).float() + self.gen_state(s).float()
                              + self.gen_input(y).float()).squeeze(-1)
            gen_weight = p
            copy_weight = ((1 - p).view(B, T, 1, 1) * agent_attn.unsqueeze(-1) * word_attn).reshape(B, T, A * S)
        dist = CopyDistribution(None, gen_weight, copy_weight, enc.src_ext_ids, enc.n_ext,
                                features=hidden, output_layer=self.out_vocab)
        return dist, Attention(word_attn, agent_attn), agent_context, coverage, cov_loss

    def _covered_word_attention(self, enc: EncoderOutput, query: torch.Tensor, coverage: torch.Tensor | None):
        """Eq (8) with coverage (See et al., 2017, eq 11), step by step, since the coverage of step
        t sums the attention of steps < t:

            l^t_a = softmax_i(v2^T tanh(W5 h_{a,i} + W6 s_t + w_c cov^t_{a,i} + b1)),
            cov^{t+1}_{a,i} = cov^t_{a,i} + l^t_{a,i}.

        Choice for several agents: one coverage vector per agent over its own word attention (each
        l^t_a sums to 1, so each agent keeps its own account of what it has offered), and the
        coverage loss sum_i min(l^t_{a,i}, cov^t_{a,i}) averaged over the agents holding text, so its
        scale is the single-agent one whatever M is. query: (B, T, H) W6 s_t.
        Returns word attention (B, T, A, S), coverage after the last step and loss (B, T).
        """
        B, T, H = query.shape
        mask = enc.mask  # (B, A, S)
        _, A, S = mask.shape
        keys = enc.keys.reshape(B, A * S, H)
        cov = coverage if coverage is not None else mask.new_zeros(mask.shape, dtype=query.dtype)
        w_cov = self.w_cov.weight.view(1, 1, H).to(keys.dtype)
        v = self.v2.weight.view(H)
        agents = mask.any(-1).sum(-1).clamp_min(1).to(cov.dtype)  # (B,)
        attention, losses = [], []
        for t in range(T):
            covered_keys = keys + cov.reshape(B, A * S, 1).to(keys.dtype) * w_cov
            scores = additive_scores(covered_keys, query[:, t : t + 1], v).view(B, A, S)
            attn = masked_softmax(scores, mask)
            losses.append(torch.minimum(attn, cov).sum((1, 2)) / agents)
            cov = cov + attn
            attention.append(attn)
        return torch.stack(attention, 1), cov, torch.stack(losses, 1)

    def input_embedding(self, ids: torch.Tensor) -> torch.Tensor:
        """Embed decoder inputs; extended (copied OOV) ids are read as UNK."""
        return self.dropout(self.embedding(unk_extended_ids(ids, self.vocab_size)))

    def input_embeddings(self) -> list[nn.Embedding]:
        """The word embedding (shared by the agents' encoder and the decoder)."""
        return [self.embedding]

    def forward(self, batch: Batch, enc: EncoderOutput | None = None) -> DecoderOutput:
        """Teacher-forced distributions for every target step of ``batch``."""
        if batch.tgt_in is None:
            raise ValueError("forward needs a batch with targets; use encode/step to decode")
        enc = self.encode(batch) if enc is None else enc
        state = self.init_state(enc)
        y = self.input_embedding(batch.tgt_in)  # (B, T, E)
        if self.config.input_feeding:
            s, contexts = self._fed_states(enc, state, y)
            dist, attention, _, _, coverage_loss = self._attend(enc, s, y, None, contexts=contexts)
            return DecoderOutput(dist, attention, s, coverage_loss)
        # The decoder LSTM reads only the previous words, so all T steps run in one call.
        s, _ = float32_lstm(self.decoder, y, (state.hidden, state.cell))  # (B, T, H)
        dist, attention, _, _, coverage_loss = self._attend(enc, s, y, None)
        return DecoderOutput(dist, attention, s, coverage_loss)

    def _fed_states(self, enc: EncoderOutput, state: DecoderState, y: torch.Tensor):
        """Teacher forcing with input feeding: s_t = LSTM([y_{t-1}; c*_{t-1}]) one step at a time, with
        eq (8)-(11) at each step for the next c*. Returns s (B, T, H) and the :meth:`_contexts` of
        all steps, so that the output layers (eq 12-16) still run once over every step."""
        hidden, cell, prev, coverage = state.hidden, state.cell, state.context, state.coverage
        states, steps = [], []
        for t in range(y.size(1)):
            x = torch.cat([y[:, t : t + 1], prev.unsqueeze(1).to(y.dtype)], dim=-1)
            s_t, (hidden, cell) = float32_lstm(self.decoder, x, (hidden, cell))
            step = self._contexts(enc, s_t, coverage)
            coverage, prev = step[4], step[3].squeeze(1)
            states.append(s_t)
            steps.append(step)
        word, agent, context, agent_context, _, cov = zip(*steps)
        contexts = (torch.cat(word, 1), torch.cat(agent, 1), torch.cat(context, 1), torch.cat(agent_context, 1),
                    coverage, torch.cat(cov, 1) if cov[0] is not None else None)
        return torch.cat(states, 1), contexts

    def step(self, enc: EncoderOutput, state: DecoderState, input_ids: torch.Tensor):
        """One decoding step. input_ids: (N,) previous words (extended ids).

        Returns log-probabilities (N, V_ext), the new state and the step's attention
        (word (N, A, S), agent (N, A)).
        """
        return step_log_probs(self, enc, state, input_ids)

    def step_distribution(self, enc: EncoderOutput, state: DecoderState, input_ids: torch.Tensor):
        """One step returning the CopyDistribution (N, 1, ...), the new state, the attention
        (N, 1, ...) and the decoder state s_t (N, H): everything :meth:`step` condenses."""
        y = self.input_embedding(input_ids).unsqueeze(1)  # (N, 1, E)
        x = torch.cat([y, state.context.unsqueeze(1).to(y.dtype)], dim=-1) if self.config.input_feeding else y
        s, (hidden, cell) = float32_lstm(self.decoder, x, (state.hidden, state.cell))  # (N, 1, H)
        dist, attention, context, coverage, _ = self._attend(enc, s, y, state.context.unsqueeze(1), state.coverage)
        return dist, DecoderState(hidden, cell, context.squeeze(1), coverage), attention, s.squeeze(1)

    def target_ids(self, tgt_out: torch.Tensor) -> torch.Tensor:
        """Without a pointer a copied word cannot be produced: its target becomes UNK."""
        return producible_targets(tgt_out, self.vocab_size, copies=self.config.pointer != "none")
