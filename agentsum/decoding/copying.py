"""Copy and out-of-vocabulary bookkeeping: the one place that maps between ids, source positions
and words. Search, the objectives and the service all go through it.

* **Source positions.** A batch holds every document's source as (A, S) agent slots; a flat source
  position ``p = a * S + i`` is token i of agent a (:func:`source_position`, :func:`source_word`).
  Models attend and copy over these L = A * S positions.
* **Cascaded attention and UNK replacement** (DCA Appendix A.2, after Paulus et al., 2018). The
  source word behind an output token is the one with the largest cascaded attention
  ``l^t_{a,i} * g^t_a`` (eq 8, 10: :func:`cascaded_attention`, :func:`copy_positions`); a
  predicted UNK becomes that word (:func:`to_words`).
* **Extended ids -> words.** Ids >= V are the document's OOV words (``batch.oov_words[b]``),
  through :meth:`agentsum.data.vocab.Vocabulary.decode`.
* **Generated ids -> a teacher-forced batch** (:func:`teacher_forced`): a decoded or sampled
  sequence becomes the batch's target, so one teacher-forced pass re-scores it (self-critical RL)
  or re-computes its attention (the service).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch

from agentsum.data.batch import Batch
from agentsum.data.vocab import BOS_ID, PAD_ID, UNK_ID, Vocabulary

__all__ = ["source_position", "source_word", "cascaded_attention", "copy_positions", "to_words", "padded_ids",
           "teacher_forced"]


def source_position(position: int, tokens_per_agent: int) -> tuple[int, int]:
    """Flat source position ``a * S + i`` -> (agent a, index i)."""
    return divmod(int(position), tokens_per_agent)


def source_word(batch: Batch, document: int, position: int) -> tuple[int, int, str] | None:
    """(agent, index, word) at a flat source position of a document; None on padding."""
    agent, index = source_position(position, batch.src_ids.size(2))
    source = batch.src_tokens[document]
    if agent < len(source) and index < len(source[agent]):
        return agent, index, source[agent][index]
    return None


def cascaded_attention(word: torch.Tensor, agent: torch.Tensor) -> torch.Tensor:
    """``l^t_{a,i} * g^t_a`` over flat source positions: word (..., A, S), agent (..., A) -> (..., A*S), float32."""
    agent = agent.float()
    return (word.float() * agent.unsqueeze(-1)).flatten(-2)


def copy_positions(word: torch.Tensor, agent: torch.Tensor) -> torch.Tensor:
    """The flat source position each row's output token was copied from (its UNK replacement):
    the argmax of the cascaded attention. word (N, A, S), agent (N, A) -> (N,) int64."""
    return cascaded_attention(word, agent).argmax(dim=-1)


def to_words(
    hyps_tokens: list[list[int]],
    copy_positions: list[list[int]],
    batch: Batch,
    vocab: Vocabulary,
    unk_replace: bool = True,
) -> list[list[str]]:
    """Decode extended ids to words, one list per document.

    Extended ids >= V become the document's OOV words (``batch.oov_words[b]``). With
    ``unk_replace``, every UNK becomes the source word at its copy position ``a * S + i``
    (``batch.src_tokens[b][a][i]``), the source word with the largest cascaded attention
    l^t_{a,i} * g^t_a (DCA Appendix A.2). A position that falls on padding leaves the UNK as it is.
    Only source words are put in, so with ``search.numbers_from_source`` an UNK never becomes a
    number that the source lacks.
    """
    if len(hyps_tokens) != len(copy_positions):
        raise ValueError(f"{len(hyps_tokens)} token lists but {len(copy_positions)} copy-position lists")
    out = []
    for b, (ids, positions) in enumerate(zip(hyps_tokens, copy_positions)):
        words = vocab.decode(ids, batch.oov_words[b])
        if unk_replace:
            if len(positions) != len(ids):
                raise ValueError(f"document {b}: {len(ids)} tokens but {len(positions)} copy positions")
            for j, (token, position) in enumerate(zip(ids, positions)):
                if int(token) == UNK_ID:
                    found = source_word(batch, b, position)
                    if found is not None:
                        words[j] = found[2]
        out.append(words)
    return out


def padded_ids(sequences: Sequence[Sequence[int]], device: torch.device | str = "cpu") -> torch.Tensor:
    """Id lists -> (B, max(1, longest)) int64, PAD after each sequence."""
    out = torch.full((len(sequences), max([1, *map(len, sequences)])), PAD_ID, dtype=torch.long, device=device)
    for b, ids in enumerate(sequences):
        if ids:
            out[b, : len(ids)] = torch.as_tensor(list(ids), dtype=torch.long, device=device)
    return out


def teacher_forced(batch: Batch, tokens: torch.Tensor) -> Batch:
    """The batch with ``tokens`` (B, T: extended ids, PAD after each sequence) as its target:
    ``tgt_out = tokens``, ``tgt_in`` = BOS + tokens shifted by one step (PAD where the target is
    PAD), ``tgt_mask`` = the real tokens; T is cut to the longest sequence (at least 1). The model
    reads extended ids in ``tgt_in`` as UNK (``agentsum.models.base.unk_extended_ids``)."""
    mask = tokens != PAD_ID
    keep = max(int(mask.sum(1).max()) if tokens.numel() else 0, 1)
    tokens, mask = tokens[:, :keep], mask[:, :keep]
    tgt_in = torch.cat([torch.full_like(tokens[:, :1], BOS_ID), tokens[:, :-1]], dim=1).masked_fill(~mask, PAD_ID)
    return dataclasses.replace(batch, tgt_in=tgt_in, tgt_out=tokens, tgt_mask=mask)
