"""Transformer pointer-generator with input feeding (paper 003, sections 2.1-2.2 and 3.1).

A post-norm Transformer encoder-decoder (Vaswani et al., 2017) whose decoder reads the previous
step's attention vector (input feeding, Luong et al., 2015) and whose output mixes generation and
copying (See et al., 2017). Paper settings (section 3.1): 6 + 6 layers, d_model 512, 8 heads,
d_ff 2048, ReLU, sinusoidal positions, Noam warm-up 4,000 steps with peak lr 0.0005
(``agentsum.training.schedule``), batch 32, source <= 150 tokens, summary <= 25 tokens, beam 4.

Shape notation:
    B  documents              A  agents, S tokens per agent (``Batch.src_ids`` is (B, A, S))
    L  source positions = A * S: the agents' token slots flattened into one sequence (normally A = 1)
    T  target steps           D  d_model              h  heads, d_h = D / h
    N  rows during search (documents x beams)         t  steps already decoded
    V  fixed vocabulary       V_ext  V + OOV words of the batch (copy targets)

Interface: ``agentsum.models.base.SummarizationModel`` (``encode`` / ``init_state`` / ``step`` /
``step_distribution`` / ``forward`` / ``target_ids``), as DCA, so ``agentsum.decoding.search`` and
``agentsum.training.objectives`` run it unchanged. Copying goes through ``agentsum.models.pointer.CopyDistribution``.

Equations (paper section 2.2, with t the decoder step; the paper's i):
    embX_t = E[y_t] * sqrt(D) + PE(t)                         (PE: sinusoidal, section 2.2)
    embY_t = W_f concat[embX_t, a_{t-1}]                      (input feeding; a_{-1} = 0)
    d_t    = DecoderStack(embY_{<=t}, encoder memory)         (post-norm: LayerNorm(x + Sublayer(x)))
    S_t    = W_s d_t + b_s                                    ("S_i = FFN(d_i)": one fully connected layer)
    alpha_t = mean over heads of the last decoder layer's encoder-decoder attention weights, (L,)
    a_t    = sum_j alpha_{t,j} m_j                            (m: encoder output; the "attention vector")
    P_vocab = softmax(W_v concat[S_t, a_t] + b_v)             (the paper's softmax([S_i, a_i]))
    P_gen  = sigmoid(w_g . concat[S_{t-1}, S_t, a_t] + b_g)   (S_{-1} = 0)
    P(w)   = P_gen P_vocab(w) + (1 - P_gen) sum_{j: src_j = w} alpha_{t,j}

Choices where the paper is silent or ambiguous (also in docs/transformer_pg.md):

* **Input feeding with parallel training.** Feeding the final a_{t-1} into step t makes step t wait
  for step t-1, which is exactly the recurrence the Transformer removes. We run the decoder stack
  twice with the *same* weights: pass 1 feeds a_{t-1} = 0 to every step (an ordinary causal
  decoder, all T steps at once) and yields attention vectors a^(1)_t; pass 2 feeds
  embY_t = W_f[embX_t, a^(1)_{t-1}] (again all T steps at once) and produces every output. Pass k
  of this unrolling is exact sequential input feeding for the first k steps, and the fed vector is
  the same kind of quantity the decoder computes (same weights, same "attention vector"), not a
  proxy from a separate module. Incremental decoding runs both passes one token at a time, each
  with its own self-attention K/V cache, and carries a^(1)_t to the next step in the state, so
  ``step`` reproduces ``forward`` exactly (tested to 1e-5). Cost: the decoder stack twice (about
  +12 % of a paper-size forward: the encoder and the cross-attention K/V, computed once, dominate).
  With ``input_feeding: false`` there is one pass and no W_f.
* **Attention distribution / vector.** alpha_t (the copy distribution) is the last decoder layer's
  encoder-decoder attention averaged over heads (``copy_heads: mean``; ``first`` uses head 0 only,
  as OpenNMT-py's Transformer copy attention does). a_t is the context vector under that same
  distribution, sum_j alpha_{t,j} m_j, as in See et al. (2017), where the copy distribution and
  the context vector also share one attention.
* **S_t and P_vocab.** S_t is one Linear(D, D) on the decoder output (the paper: "the decoder output
  after a fully connected layer"); softmax([S_t, a_t]) is read as softmax(Linear(2D -> V)).
  The output projection is not tied to the embedding (its input is 2D-dimensional).
* **Sources without text.** A document with no source token has no copy distribution; P_gen is set
  to 1 there so the distribution still sums to one (and nothing is NaN).
* **Multi-agent batches** (A > 1) are read as one sequence of length L = A*S; positions count real
  tokens only (padding between agents does not shift them). For search's UNK replacement the copy
  attention is factorised DCA-style: agent = g_a = sum_i alpha_{a,i}, word = alpha_{a,i} / g_a, so
  ``word * agent`` is alpha exactly and its argmax is the most attended source word.
* **Embeddings.** Encoder and decoder share one embedding when ``share_embeddings`` (one vocabulary);
  embeddings are scaled by sqrt(D) and initialised N(0, D^-1/2); attention/FFN weights Xavier.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from agentsum.data.batch import Batch
from agentsum.data.vocab import PAD_ID
from agentsum.models.base import (Attention, DecoderOutput, masked_softmax, producible_targets, step_log_probs,
                                  unk_extended_ids)
from agentsum.models.dropout import Dropout
from agentsum.models.pointer import CopyDistribution

COPY_HEADS = ("mean", "first")


@dataclass
class TransformerPGConfig:
    vocab_size: int
    d_model: int = 512
    heads: int = 8
    d_ff: int = 2048
    encoder_layers: int = 6
    decoder_layers: int = 6
    dropout: float = 0.1
    max_positions: int = 1024
    input_feeding: bool = True
    pointer: bool = True
    copy_heads: str = "mean"  # mean | first
    share_embeddings: bool = True
    # coverage loss (See et al., 2017, eq 12-13) on the copy attention alpha; see forward()
    coverage: bool = False

    def __post_init__(self):
        if self.d_model % self.heads:
            raise ValueError(f"model.d_model ({self.d_model}) must be divisible by model.heads ({self.heads})")
        if self.copy_heads not in COPY_HEADS:
            raise ValueError(f"model.copy_heads must be one of {COPY_HEADS}, got {self.copy_heads!r}")
        if self.encoder_layers < 1 or self.decoder_layers < 1:
            raise ValueError("model.encoder_layers and model.decoder_layers must be >= 1")
        if not isinstance(self.pointer, bool) or not isinstance(self.input_feeding, bool):
            raise ValueError("model.pointer and model.input_feeding must be true or false")


@dataclass
class EncoderOutput:
    """What the decoder needs from the encoder, computed once per document.

    memory:       (B, L, D) encoder output m_j.
    mask:         (B, L) bool, real source tokens.
    cross_keys:   decoder_layers tensors (B, h, L, d_h): each decoder layer's encoder-decoder keys.
    cross_values: decoder_layers tensors (B, h, L, d_h).
    src_ext_ids:  (B, L) extended source ids (copy targets).
    n_ext:        V_ext.
    n_agents:     A (to reshape the copy attention to (..., A, S) for search).
    """

    memory: torch.Tensor
    mask: torch.Tensor
    cross_keys: tuple[torch.Tensor, ...]
    cross_values: tuple[torch.Tensor, ...]
    src_ext_ids: torch.Tensor
    n_ext: int
    n_agents: int

    def select(self, index: torch.Tensor) -> "EncoderOutput":
        pick = lambda x: x.index_select(0, index)  # noqa: E731
        return EncoderOutput(pick(self.memory), pick(self.mask), tuple(map(pick, self.cross_keys)),
                             tuple(map(pick, self.cross_values)), pick(self.src_ext_ids), self.n_ext, self.n_agents)


@dataclass
class DecoderState:
    """Incremental decoding state after t steps.

    keys, values: one (N, h, t, d_h) self-attention cache per (pass, decoder layer), pass-major:
                  entry p * decoder_layers + l (pass 1 only without input feeding).
    feed:         (N, D) a^(1)_{t-1}, the pass-1 attention vector of the previous step (zeros at
                  t = 0), fed into the next step; None without input feeding.
    prev_s:       (N, D) S_{t-1} for P_gen (zeros at t = 0).
    t:            steps decoded so far (the position of the next token).
    """

    keys: tuple[torch.Tensor, ...]
    values: tuple[torch.Tensor, ...]
    feed: torch.Tensor | None
    prev_s: torch.Tensor
    t: int

    def select(self, index: torch.Tensor) -> "DecoderState":
        pick = lambda x: x.index_select(0, index)  # noqa: E731
        return DecoderState(tuple(map(pick, self.keys)), tuple(map(pick, self.values)),
                            None if self.feed is None else pick(self.feed), pick(self.prev_s), self.t)


def sinusoidal_positions(n: int, d: int) -> torch.Tensor:
    """(n, d) PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...) (section 2.2)."""
    pos = torch.arange(n, dtype=torch.float32).unsqueeze(1)
    freq = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq)[:, : d // 2]
    return pe


class MultiHeadAttention(nn.Module):
    """Scaled dot-product attention with h heads (section 2.2). Keys/values are projected separately
    (``project_kv``) so callers can cache them: encoder memory once per document, decoder
    self-attention once per token."""

    def __init__(self, d_model: int, heads: int, dropout: float):
        super().__init__()
        self.heads, self.d_head = heads, d_model // heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = Dropout(dropout)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.heads, self.d_head).transpose(1, 2)  # (B, h, T, d_h)

    def project_kv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, L, D) -> keys, values (B, h, L, d_h)."""
        return self._split(self.w_k(x)), self._split(self.w_v(x))

    def forward(self, x: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, mask: torch.Tensor):
        """x: (B, T, D) queries; keys/values (B, h, L, d_h); mask bool broadcastable to (B, h, T, L),
        True where attending is allowed. Returns the output (B, T, D) and the weights (B, h, T, L)
        (before dropout; a row with nothing to attend to is all zeros, not NaN)."""
        B, T, D = x.shape
        q = self._split(self.w_q(x))  # (B, h, T, d_h)
        scores = q @ keys.transpose(-1, -2) / math.sqrt(self.d_head)  # (B, h, T, L)
        weights = masked_softmax(scores, mask)
        out = self.dropout(weights) @ values  # (B, h, T, d_h)
        out = out.transpose(1, 2).reshape(B, T, D)  # (B, T, D): heads concatenated, then W_O
        return self.w_o(out), weights


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W1 + b1) W2 + b2 (section 2.2)."""

    def __init__(self, d_model: int, d_ff: int, dropout: float):
        super().__init__()
        self.w1, self.w2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.dropout = Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(self.dropout(F.relu(self.w1(x))))


class EncoderLayer(nn.Module):
    """Self-attention and FFN sublayers, each LayerNorm(x + Sublayer(x)) (post-norm, section 2.1)."""

    def __init__(self, c: TransformerPGConfig):
        super().__init__()
        self.attn = MultiHeadAttention(c.d_model, c.heads, c.dropout)
        self.ffn = FeedForward(c.d_model, c.d_ff, c.dropout)
        self.norm1, self.norm2 = nn.LayerNorm(c.d_model), nn.LayerNorm(c.d_model)
        self.dropout = Dropout(c.dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """x: (B, L, D), mask: (B, L) -> (B, L, D). Padding keys are masked for every query."""
        k, v = self.attn.project_kv(x)
        h, _ = self.attn(x, k, v, mask[:, None, None, :])
        x = self.norm1(x + self.dropout(h))
        return self.norm2(x + self.dropout(self.ffn(x)))


class DecoderLayer(nn.Module):
    """Masked self-attention, encoder-decoder attention and FFN, each post-norm (section 2.1)."""

    def __init__(self, c: TransformerPGConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(c.d_model, c.heads, c.dropout)
        self.cross_attn = MultiHeadAttention(c.d_model, c.heads, c.dropout)
        self.ffn = FeedForward(c.d_model, c.d_ff, c.dropout)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(c.d_model) for _ in range(3))
        self.dropout = Dropout(c.dropout)

    def forward(self, x, past_k, past_v, cross_k, cross_v, src_mask):
        """x: (B, T, D) the new positions t0 .. t0+T-1; past_k/v: (B, h, t0, d_h) cached earlier
        positions; cross_k/v: (B, h, L, d_h); src_mask: (B, L).

        Returns x (B, T, D), encoder-decoder weights (B, h, T, L) and the self-attention keys and
        values (B, h, t0+T, d_h) including the new positions. Teacher forcing (t0 = 0, all T) and
        incremental decoding (T = 1) run this same code.
        """
        T, t0 = x.size(1), past_k.size(2)
        k_new, v_new = self.self_attn.project_kv(x)
        keys, values = torch.cat([past_k, k_new], dim=2), torch.cat([past_v, v_new], dim=2)  # (B, h, t0+T, d_h)
        query_pos = torch.arange(t0, t0 + T, device=x.device).unsqueeze(1)
        causal = torch.arange(t0 + T, device=x.device).unsqueeze(0) <= query_pos  # (T, t0+T): key j <= query i
        h, _ = self.self_attn(x, keys, values, causal)
        x = self.norm1(x + self.dropout(h))
        c, weights = self.cross_attn(x, cross_k, cross_v, src_mask[:, None, None, :])
        x = self.norm2(x + self.dropout(c))
        x = self.norm3(x + self.dropout(self.ffn(x)))
        return x, weights, keys, values


class TransformerPG(nn.Module):
    """Transformer pointer-generator; a :class:`agentsum.models.base.SummarizationModel`."""

    def __init__(self, config: TransformerPGConfig):
        super().__init__()
        self.config = c = config
        V, D = c.vocab_size, c.d_model
        self.vocab_size = V
        self.embedding = nn.Embedding(V, D, padding_idx=PAD_ID)  # decoder (and encoder if shared)
        self.src_embedding = self.embedding if c.share_embeddings else nn.Embedding(V, D, padding_idx=PAD_ID)
        self.register_buffer("positions", sinusoidal_positions(c.max_positions, D), persistent=False)
        self.dropout = Dropout(c.dropout)
        self.encoder = nn.ModuleList(EncoderLayer(c) for _ in range(c.encoder_layers))
        self.decoder = nn.ModuleList(DecoderLayer(c) for _ in range(c.decoder_layers))
        self.n_passes = 2 if c.input_feeding else 1
        if c.input_feeding:
            self.feed = nn.Linear(2 * D, D)  # W_f: embY_t = W_f [embX_t, a_{t-1}]
        self.state_proj = nn.Linear(D, D)  # S_t = W_s d_t + b_s
        self.out_vocab = nn.Linear(2 * D, V)  # P_vocab = softmax(W_v [S_t, a_t] + b_v)
        if c.pointer:
            self.gen = nn.Linear(3 * D, 1)  # P_gen = sigmoid(w_g [S_{t-1}, S_t, a_t] + b_g)
        self._reset_parameters()

    def _reset_parameters(self):
        D = self.config.d_model
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, std=D ** -0.5)
                with torch.no_grad():
                    module.weight[PAD_ID].zero_()
        if self.config.input_feeding:
            with torch.no_grad():  # start as "embedding + a little of the fed vector"
                self.feed.weight[:, :D].copy_(torch.eye(D))

    # ----------------------------------------------------------------------------------- encoder
    def encode(self, batch: Batch) -> EncoderOutput:
        B, A, S = batch.src_ids.shape
        src = batch.src_ids.reshape(B, A * S)  # (B, L)
        mask = batch.src_mask.reshape(B, A * S)  # (B, L)
        # positions count real tokens, so padding inside the flattened agents does not shift them
        pos = (mask.long().cumsum(1) - 1).clamp_min(0)  # (B, L)
        # the longest source, counted in the batch's host-side tokens: no wait for the device
        self._check_positions(max((sum(map(len, agents)) for agents in batch.src_tokens), default=0))
        x = self.dropout(self.src_embedding(src) * math.sqrt(self.config.d_model) + self.positions[pos])  # (B, L, D)
        for layer in self.encoder:
            x = layer(x, mask)
        kv = [layer.cross_attn.project_kv(x) for layer in self.decoder]  # once per document
        return EncoderOutput(
            memory=x,
            mask=mask,
            cross_keys=tuple(k for k, _ in kv),
            cross_values=tuple(v for _, v in kv),
            src_ext_ids=batch.src_ext_ids.reshape(B, A * S),
            n_ext=self.vocab_size + batch.max_oov,
            n_agents=A,
        )

    @property
    def max_positions(self) -> int:
        """Sinusoidal positions are precomputed up to ``model.max_positions`` (source and target)."""
        return self.config.max_positions

    def input_embeddings(self) -> list[nn.Embedding]:
        """The decoder's embedding and, unless shared, the encoder's."""
        return [self.embedding] if self.src_embedding is self.embedding else [self.embedding, self.src_embedding]

    def _check_positions(self, n: int):
        if n > self.config.max_positions:
            raise ValueError(f"sequence of {n} positions exceeds model.max_positions = {self.config.max_positions}")

    # ----------------------------------------------------------------------------------- decoder
    def init_state(self, enc: EncoderOutput) -> DecoderState:
        N, D = enc.memory.size(0), self.config.d_model
        h, d_h = self.config.heads, D // self.config.heads
        empty = enc.memory.new_zeros(N, h, 0, d_h)
        n = self.n_passes * len(self.decoder)
        zeros = enc.memory.new_zeros(N, D)
        return DecoderState((empty,) * n, (empty,) * n, zeros if self.config.input_feeding else None, zeros, 0)

    def input_embedding(self, ids: torch.Tensor, t0: int) -> torch.Tensor:
        """embX for decoder inputs ids (B, T) at positions t0.. -> (B, T, D); extended (copied OOV)
        ids are read as UNK."""
        T = ids.size(1)
        self._check_positions(t0 + T)
        emb = self.embedding(unk_extended_ids(ids, self.vocab_size))
        return emb * math.sqrt(self.config.d_model) + self.positions[t0: t0 + T]

    def _stack(self, enc: EncoderOutput, x: torch.Tensor, state: DecoderState, p: int):
        """One pass p through the decoder stack. x: (B, T, D) -> d (B, T, D), copy attention
        alpha (B, T, L), attention vector a (B, T, D), and the pass's updated K/V caches."""
        n = len(self.decoder)
        keys, values = [], []
        for l, layer in enumerate(self.decoder):
            i = p * n + l
            x, weights, k, v = layer(x, state.keys[i], state.values[i], enc.cross_keys[l], enc.cross_values[l], enc.mask)
            keys.append(k)
            values.append(v)
        # weights of the last layer: (B, h, T, L) -> alpha (B, T, L)
        alpha = weights.mean(1) if self.config.copy_heads == "mean" else weights[:, 0]
        a = alpha @ enc.memory  # (B, T, D): a_t = sum_j alpha_{t,j} m_j
        return x, alpha, a, keys, values

    def _decode(self, enc: EncoderOutput, state: DecoderState, ids: torch.Tensor):
        """Decoder inputs ids (B, T) at positions state.t .. state.t+T-1 (T = all steps in teacher
        forcing, 1 in search) -> CopyDistribution (B, T, ...), Attention, S (B, T, D), new state."""
        T = ids.size(1)
        emb_x = self.input_embedding(ids, state.t)  # (B, T, D)
        keys, values = [], []
        feed = None
        if self.config.input_feeding:
            # pass 1: a_{t-1} = 0 for every step -> attention vectors a^(1)_t of all T steps at once
            x1 = self.dropout(self.feed(torch.cat([emb_x, torch.zeros_like(emb_x)], dim=-1)))
            _, _, a1, k, v = self._stack(enc, x1, state, 0)
            keys += k
            values += v
            # pass 2: embY_t = W_f [embX_t, a^(1)_{t-1}], with a^(1)_{-1} = 0 (or the cached a^(1) of step t0-1)
            fed = torch.cat([state.feed.unsqueeze(1), a1[:, :-1]], dim=1)  # (B, T, D) shifted by one step
            x = self.dropout(self.feed(torch.cat([emb_x, fed], dim=-1)))
            feed = a1[:, -1]
            d, alpha, a, k, v = self._stack(enc, x, state, 1)
        else:
            d, alpha, a, k, v = self._stack(enc, self.dropout(emb_x), state, 0)
        keys += k
        values += v

        s = self.state_proj(d)  # S_t (B, T, D)
        features = self.dropout(torch.cat([s, a], dim=-1))  # (B, T, 2D)
        # logits = out_vocab(features), (B, T, V): computed by the distribution when needed, so
        # training runs the output layer on real target positions only
        gen_weight = copy_weight = None
        if self.config.pointer:
            s_prev = torch.cat([state.prev_s.unsqueeze(1), s[:, :-1]], dim=1)  # S_{t-1}, (B, T, D)
            # the sigmoid in float32: in bf16 (autocast) it is exactly 1.0 for logits above about 6.2,
            # which zeroes the copy weight and its gradient
            p_gen = torch.sigmoid(self.gen(torch.cat([s_prev, s, a], dim=-1)).float()).squeeze(-1)  # (B, T)
            has_source = enc.mask.any(-1, keepdim=True)  # (B, 1): nothing to copy from an empty source
            gen_weight = torch.where(has_source, p_gen, torch.ones_like(p_gen))
            copy_weight = (1 - gen_weight).unsqueeze(-1) * alpha  # (B, T, L)
        dist = CopyDistribution(None, gen_weight, copy_weight, enc.src_ext_ids, enc.n_ext,
                                features=features, output_layer=self.out_vocab)
        new_state = DecoderState(tuple(keys), tuple(values), feed, s[:, -1], state.t + T)
        return dist, self._factorise(alpha, enc.n_agents), s, new_state

    @staticmethod
    def _factorise(alpha: torch.Tensor, A: int) -> Attention:
        """Copy attention alpha (..., L) as DCA-style word (..., A, S) and agent (..., A) attention
        with word * agent = alpha: agent = per-agent mass g_a, word = alpha / g_a (0 where g_a = 0)."""
        word = alpha.unflatten(-1, (A, alpha.size(-1) // A))  # (..., A, S)
        agent = word.sum(-1)  # (..., A)
        word = word / agent.unsqueeze(-1).clamp_min(1e-30) * (agent.unsqueeze(-1) > 0)
        return Attention(word, agent)

    def forward(self, batch: Batch, enc: EncoderOutput | None = None) -> DecoderOutput:
        """Teacher-forced distributions for every target step of ``batch`` (both passes in parallel).

        Returns DecoderOutput(dist: CopyDistribution over (B, T, V_ext), attention: word (B, T, A, S)
        and agent (B, T, A), states: S_t (B, T, D)).
        """
        if batch.tgt_in is None:
            raise ValueError("forward needs a batch with targets; use encode/step to decode")
        enc = self.encode(batch) if enc is None else enc
        dist, attention, s, _ = self._decode(enc, self.init_state(enc), batch.tgt_in)
        coverage_loss = None
        if self.config.coverage:
            # See et al. (2017) eq (12)-(13) on the copy attention: cov_t = sum_{t' < t} alpha_t',
            # loss_t = sum_j min(alpha_{t,j}, cov_{t,j}). Choice: the loss only; coverage is not fed
            # into the attention scores (their eq 11), since that would make step t's attention wait
            # for steps < t and serialize the parallel decoder of teacher forcing.
            alpha = (attention.word * attention.agent.unsqueeze(-1)).flatten(-2)  # (B, T, L)
            past = torch.cumsum(alpha, dim=1) - alpha
            coverage_loss = torch.minimum(alpha, past).sum(-1)  # (B, T)
        return DecoderOutput(dist, attention, s, coverage_loss)

    def step(self, enc: EncoderOutput, state: DecoderState, input_ids: torch.Tensor):
        """One decoding step. input_ids: (N,) previous words (extended ids).

        Returns log-probabilities (N, V_ext), the new state and the step's attention (word (N, A, S),
        agent (N, A); word * agent is the copy attention alpha_t).
        """
        return step_log_probs(self, enc, state, input_ids)

    def step_distribution(self, enc: EncoderOutput, state: DecoderState, input_ids: torch.Tensor):
        """One step returning the CopyDistribution (N, 1, ...), the new state, the attention
        (N, 1, ...) and S_t (N, D); only the new token runs through the stack (K/V caches)."""
        dist, attention, s, state = self._decode(enc, state, input_ids.unsqueeze(1))
        return dist, state, attention, s.squeeze(1)

    def target_ids(self, tgt_out: torch.Tensor) -> torch.Tensor:
        """Without a pointer a copied word cannot be produced: its target becomes UNK."""
        return producible_targets(tgt_out, self.vocab_size, copies=self.config.pointer)
