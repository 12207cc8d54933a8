"""The model protocol every summarizer implements, and the pieces the models share.

Shape notation (as in every model file):
    B  documents        A  agents           S  tokens per agent      L  source positions, A * S
    T  target steps     N  rows in search (documents x beams)        H  hidden size
    V  fixed vocabulary                      V_ext  V + the batch's OOV words (copy targets)

A summarizer is an ``nn.Module`` that reads a :class:`~agentsum.data.batch.Batch` and returns
distributions over the extended vocabulary (:class:`~agentsum.models.pointer.CopyDistribution`),
never losses: objectives (``agentsum.training.objectives``) and search strategies
(``agentsum.decoding.search``) call it through :class:`SummarizationModel` and nothing else, so a
new model needs no change outside ``agentsum/models``. Search needs only the
:class:`StepModel` part of it (scripted fake models in the tests implement just that).

Shared pieces: the attention output types (:class:`Attention`, :class:`DecoderOutput`),
:func:`masked_softmax`, the extended-id -> UNK mapping of decoder inputs
(:func:`unk_extended_ids`), the target ids a model can produce (:func:`producible_targets`) and
one decoding step computed from a step distribution (:func:`step_log_probs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Self, runtime_checkable

import torch
import torch.nn as nn
import torch.nn.functional as F

from agentsum.data.batch import Batch
from agentsum.data.vocab import UNK_ID
from agentsum.models.pointer import CopyDistribution

__all__ = ["Attention", "DecoderOutput", "Selectable", "StepAttention", "StepModel", "SummarizationModel",
           "masked_softmax", "unk_extended_ids", "producible_targets", "step_log_probs"]


# --------------------------------------------------------------------------------------------
# Output types
# --------------------------------------------------------------------------------------------


@dataclass
class Attention:
    """word: (..., A, S) word attention l^t_{a,i} of every agent (DCA eq 8), zeros on padding;
    agent: (..., A) agent attention g^t_a (DCA eq 10). ``word * agent`` is the cascaded attention
    over the source, whose argmax UNK replacement copies (``agentsum.decoding.copying``)."""

    word: torch.Tensor
    agent: torch.Tensor


@dataclass
class DecoderOutput:
    """Teacher-forced output for all T steps.

    dist:          CopyDistribution over (B, T, V_ext).
    attention:     Attention with word (B, T, A, S) and agent (B, T, A).
    states:        (B, T, H) decoder states s_t (the semantic cohesion loss reads them, DCA eq 18).
    coverage_loss: (B, T) per-step coverage loss (See et al., 2017, eq 12-13), or None without coverage.
    """

    dist: CopyDistribution
    attention: Attention
    states: torch.Tensor
    coverage_loss: torch.Tensor | None = None


# --------------------------------------------------------------------------------------------
# The protocol
# --------------------------------------------------------------------------------------------


@runtime_checkable
class Selectable(Protocol):
    """Encoder output or decoder state: rows can be reordered / repeated along the document dim."""

    def select(self, index: torch.Tensor) -> Self: ...


class StepAttention(Protocol):
    """Attention of one decoder step: word (N, A, S) and agent (N, A), as :class:`Attention`."""

    @property
    def word(self) -> torch.Tensor: ...

    @property
    def agent(self) -> torch.Tensor: ...


@runtime_checkable
class StepModel(Protocol):
    """What search needs from a summarizer.

    ``step(enc, state, input_ids)`` takes the previous token of every row as an extended-vocabulary
    id (BOS at the first step; the model maps ids >= V to UNK itself) and returns
    ``(log_probs (N, V + batch.max_oov), new_state, attention)``.
    """

    vocab_size: int

    def encode(self, batch: Batch) -> Selectable: ...

    def init_state(self, enc: Selectable) -> Selectable: ...

    def step(
        self, enc: Selectable, state: Selectable, input_ids: torch.Tensor
    ) -> tuple[torch.Tensor, Selectable, StepAttention]: ...


@runtime_checkable
class SummarizationModel(StepModel, Protocol):
    """What training, search and the service need from a summarizer (``nn.Module`` subclasses).

    vocab_size:     V, the fixed vocabulary the output layer scores.
    max_positions:  the longest target sequence (decoder positions) the model can read; None for no limit.
    encode(batch) -> enc:              everything the decoder reads from the source, once per document.
    init_state(enc) -> state:          the decoder state before the first step.
    step(enc, state, input_ids):       one step's (log_probs (N, V_ext), state, Attention (N, ...)),
                                       i.e. :func:`step_log_probs` of :meth:`step_distribution`.
    step_distribution(enc, state, input_ids) -> (CopyDistribution (N, 1, ...), state, Attention (N, 1, ...),
                                       decoder states (N, H)).
    forward(batch, enc=None) -> DecoderOutput:   teacher forcing over ``batch.tgt_in`` (all steps).
    target_ids(tgt_out) -> ids:        the targets the model can produce (:func:`producible_targets`).
    input_embeddings() -> tables:      the distinct word-embedding tables, for pretrained vectors.

    ``step`` run step by step over a sequence gives the distributions ``forward`` gives for it
    (tests/models hold every model to it): RL scores samples by one teacher-forced pass.
    """

    max_positions: int | None

    def step_distribution(
        self, enc: Selectable, state: Selectable, input_ids: torch.Tensor
    ) -> tuple[CopyDistribution, Selectable, Attention, torch.Tensor]: ...

    def forward(self, batch: Batch, enc: Selectable | None = None) -> DecoderOutput: ...

    def __call__(self, batch: Batch, enc: Selectable | None = None) -> DecoderOutput: ...

    def target_ids(self, tgt_out: torch.Tensor) -> torch.Tensor: ...

    def input_embeddings(self) -> list[nn.Embedding]: ...


# --------------------------------------------------------------------------------------------
# Shared pieces
# --------------------------------------------------------------------------------------------


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax over ``mask``ed entries; a row with no entry gives zeros instead of NaN."""
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return F.softmax(scores, dim=dim) * mask


def unk_extended_ids(ids: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Decoder inputs: extended ids (copied OOV words, >= V) are read as UNK, the only id of the
    fixed vocabulary an embedding has for them."""
    return ids.masked_fill(ids >= vocab_size, UNK_ID)


def producible_targets(tgt_out: torch.Tensor, vocab_size: int, copies: bool) -> torch.Tensor:
    """The target ids a model can produce: all of ``tgt_out`` with a pointer; without one a copied
    word (extended id) cannot be produced and its target becomes UNK."""
    return tgt_out if copies else tgt_out.masked_fill(tgt_out >= vocab_size, UNK_ID)


def step_log_probs(model: SummarizationModel, enc: Selectable, state: Selectable,
                   input_ids: torch.Tensor) -> tuple[torch.Tensor, Selectable, Attention]:
    """One decoding step: log-probabilities (N, V_ext), the new state and the step's attention
    (word (N, A, S), agent (N, A)), condensed from ``model.step_distribution``."""
    dist, state, attention, _ = model.step_distribution(enc, state, input_ids)
    return dist.log_probs().squeeze(1), state, Attention(attention.word.squeeze(1), attention.agent.squeeze(1))
