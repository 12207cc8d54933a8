"""The one batch type every model, objective and search strategy consumes.

Shape notation used across the package:
    B  documents in the batch          A  agents (paragraphs) per document
    S  tokens per agent (padded)       T  target steps (BOS/EOS included once each)
    V  fixed vocabulary                V_ext = V + max number of OOV words in the batch
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields

import torch

from agentsum.data.vocab import BOS_ID, EOS_ID, PAD_ID, Vocabulary


@dataclass
class Batch:
    """A padded batch of agent-split documents and (optionally) their reference summaries.

    Attributes:
        src_ids:      (B, A, S) int64. Source ids over the fixed vocabulary (OOV -> UNK); encoder input.
        src_ext_ids:  (B, A, S) int64. Source ids over the extended vocabulary (OOV -> V + k); copy targets.
        src_mask:     (B, A, S) bool. True on real tokens, False on padding.
        src_lengths:  (B, A) int64. Tokens per agent; 0 for an agent that received no text, and for the
                      padding agents of a document with fewer agents than the batch's largest A
                      (``data.agents: auto``): models treat both alike (no message, attention or copy).
        oov_words:    B lists of str. Document b's OOV word k has extended id V + k.
        src_tokens:   B lists of A lists of str. The agent token strings (for UNK replacement); padding
                      agents are empty lists.
        tgt_in:       (B, T) int64 or None. Decoder input: BOS + summary, extended ids mapped to UNK.
        tgt_out:      (B, T) int64 or None. Decoder target: summary + EOS over the extended vocabulary
                      (an OOV word found in the source gets its extended id, otherwise UNK); PAD after EOS.
        tgt_mask:     (B, T) bool or None. True on real target steps.
        references:   B str. Reference summaries, one sentence per line (for ROUGE); empty if unknown.
        ids:          B str. Document identifiers.
    """

    src_ids: torch.Tensor
    src_ext_ids: torch.Tensor
    src_mask: torch.Tensor
    src_lengths: torch.Tensor
    oov_words: list[list[str]]
    src_tokens: list[list[list[str]]]
    tgt_in: torch.Tensor | None = None
    tgt_out: torch.Tensor | None = None
    tgt_mask: torch.Tensor | None = None
    references: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)

    @property
    def batch_size(self) -> int:
        return self.src_ids.size(0)

    @property
    def n_agents(self) -> int:
        return self.src_ids.size(1)

    @property
    def max_oov(self) -> int:
        return max((len(o) for o in self.oov_words), default=0)

    @property
    def agent_mask(self) -> torch.Tensor:
        """(B, A) bool: True for agents that hold at least one token."""
        return self.src_lengths > 0

    def num_source_tokens(self) -> int:
        return int(self.src_mask.sum())

    def num_target_tokens(self) -> int:
        return 0 if self.tgt_mask is None else int(self.tgt_mask.sum())

    def to(self, device: torch.device | str) -> "Batch":
        moved = {}
        for f in fields(self):
            value = getattr(self, f.name)
            moved[f.name] = value.to(device) if isinstance(value, torch.Tensor) else value
        return Batch(**moved)

    def source_tokens(self, b: int) -> list[str]:
        """Document b's source tokens, its agents' in order, lower-cased (as the attribution, claim and
        fluency readings take a source)."""
        return [t.lower() for agent in self.src_tokens[b] for t in agent]

    def select(self, index: Sequence[int]) -> "Batch":
        """The sub-batch of the given documents (padding is kept, so shapes other than B do not change)."""
        idx = torch.as_tensor(list(index), dtype=torch.long)
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, torch.Tensor):
                out[f.name] = value.index_select(0, idx.to(value.device))
            elif isinstance(value, list) and len(value) == self.batch_size:
                out[f.name] = [value[i] for i in idx.tolist()]
            else:
                out[f.name] = value
        return Batch(**out)


def make_batch(
    agents: Sequence[Sequence[Sequence[str]]],
    vocab: Vocabulary,
    summaries: Sequence[Sequence[str]] | None = None,
    references: Sequence[str] | None = None,
    ids: Sequence[str] | None = None,
    pad_multiple: int = 1,
) -> Batch:
    """Pad and index a list of documents.

    Args:
        agents: B documents, each a list of token lists, one per agent. Documents with fewer agents than
            the batch's largest A (``data.agents: auto``) get empty padding agents after their own: an
            empty agent is length 0, which every model masks like an agent that received no text.
        vocab: the fixed vocabulary.
        summaries: B target token lists (already truncated), or None for inference.
        references: B reference strings for ROUGE (sentences on separate lines).
        ids: B document ids.
        pad_multiple: round S and T up to a multiple of this (extra positions are padding, masked
            like any other). Fewer distinct shapes let oneDNN's bf16 kernels be reused from its
            primitive cache instead of cached anew for every batch length.
    """
    if pad_multiple < 1:
        raise ValueError(f"pad_multiple must be >= 1, got {pad_multiple}")
    B = len(agents)
    if B == 0:
        raise ValueError("cannot build a batch of zero documents")
    A = max(len(doc) for doc in agents)
    if A == 0:
        raise ValueError("cannot build a batch of documents without agents")
    agents = [list(doc) + [[]] * (A - len(doc)) for doc in agents]  # padding agents, length 0
    S = round_up(max(1, max(len(chunk) for doc in agents for chunk in doc)), pad_multiple)

    src_ids = torch.full((B, A, S), PAD_ID, dtype=torch.long)
    src_ext = torch.full((B, A, S), PAD_ID, dtype=torch.long)
    lengths = torch.zeros((B, A), dtype=torch.long)
    oov_words: list[list[str]] = []
    for b, doc in enumerate(agents):
        oovs: list[str] = []
        for a, chunk in enumerate(doc):
            n = len(chunk)
            if n == 0:
                continue
            lengths[b, a] = n
            src_ids[b, a, :n] = torch.tensor(vocab.encode(chunk), dtype=torch.long)
            src_ext[b, a, :n] = torch.tensor(vocab.encode_extended(chunk, oovs), dtype=torch.long)
        oov_words.append(oovs)
    src_mask = torch.arange(S).view(1, 1, S) < lengths.unsqueeze(-1)

    batch = Batch(
        src_ids=src_ids,
        src_ext_ids=src_ext,
        src_mask=src_mask,
        src_lengths=lengths,
        oov_words=oov_words,
        src_tokens=[[list(chunk) for chunk in doc] for doc in agents],
        references=list(references) if references is not None else [""] * B,
        ids=list(ids) if ids is not None else [str(i) for i in range(B)],
    )
    if summaries is not None:
        if len(summaries) != B:
            raise ValueError(f"{len(summaries)} summaries for {B} documents")
        T = round_up(max(len(s) for s in summaries) + 1, pad_multiple)
        tgt_in = torch.full((B, T), PAD_ID, dtype=torch.long)
        tgt_out = torch.full((B, T), PAD_ID, dtype=torch.long)
        for b, summary in enumerate(summaries):
            out = vocab.encode_target(summary, oov_words[b]) + [EOS_ID]
            inp = [BOS_ID] + vocab.encode(summary)
            tgt_out[b, : len(out)] = torch.tensor(out, dtype=torch.long)
            tgt_in[b, : len(inp)] = torch.tensor(inp, dtype=torch.long)
        batch.tgt_in = tgt_in
        batch.tgt_out = tgt_out
        batch.tgt_mask = tgt_out != PAD_ID
    return batch


def round_up(n: int, multiple: int) -> int:
    """The smallest multiple of ``multiple`` that is >= n (a padded length)."""
    return -(-n // multiple) * multiple
