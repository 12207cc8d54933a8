"""A claim reward for self-critical RL: each sentence of a sampled summary is rewarded for the claims it
gets right and penalised for those it gets wrong, beside its ROUGE-L reward (DCA eq 22).

For sentence q of a summary (words read from its ids, the source as the agents read it), with the
claim reading of :mod:`agentsum.data.claims` and :mod:`agentsum.data.figures` (the reading the claim
figures measure, :mod:`agentsum.evaluation.claims`):

* right: each number stated for a metric that one source sentence states beside it (``in_context``),
  and, in a sentence that states a figure, each period mention that agrees with the period the
  source reports;
* wrong: each number stated for a metric no source sentence states it beside (``elsewhere``), each
  number the source lacks, each analysts' estimate (a call does not state the consensus, so such a
  number is never the call's: the template "versus refinitiv ibes estimate of $X" is always filled
  with a wrong figure), each period mention that disagrees, and each malformed figure;

    c_q = (right - wrong) / (right + wrong)   in [-1, 1];   0 for a sentence with no claim.

The reward of sentence q is ``r_q + lambda * c_q``, r_q its ROUGE-L reward of eq 22; the greedy
baseline's sentences are scored alike, so the advantage of a sample's sentence is its reward minus
that of the baseline's sentence of the same index (:class:`~agentsum.training.objectives.SelfCritical`).

Choices. Signed and normalised per sentence, so that a sentence is not rewarded for holding more
figures (ROUGE-L already rewards the reference's figures), only for getting its figures right, and a
sentence with no figure is neither rewarded nor penalised: the reward does not teach the model to
leave figures out, which ROUGE would also punish. Per sentence (not per summary) because eq 22
already credits each sentence with its own reward. The weight lambda is ``train.claim_reward``
(0: off), chosen on the selection calls.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import torch

from agentsum.data.batch import Batch
from agentsum.data.claims import SourceClaims, malformed_figures, sentence_claims
from agentsum.data.figures import forward_looking, mention_agrees, period_mentions
from agentsum.data.text import split_generated
from agentsum.data.vocab import EOS_ID, PAD_ID, Vocabulary
from agentsum.training.rewards import sentence_ends
from agentsum.training.source_reading import SourceCache, candidate_words

__all__ = ["ClaimReward", "sentence_claim_score"]

#: claim statuses counted right and wrong (``no_metric`` is neither)
RIGHT = frozenset({"in_context"})
WRONG = frozenset({"elsewhere", "absent", "estimate"})
#: source documents kept read between steps (an epoch of ECTSum is 1,522 calls)
CACHE_SIZE = 4096


def sentence_claim_score(words: Sequence[str], source: SourceClaims) -> tuple[float, int, int]:
    """(c_q, right, wrong) of one tokenized summary sentence against ``source``.

    A period mention that agrees counts right only in a sentence that states a figure (a number
    counted right or wrong above): the period is then an attribute of that claim. On its own, a
    sentence such as ``q3 .`` would score c_q = +1, and since each sentence is rewarded, a policy
    could collect lambda per sentence by writing period mentions without figures. A period that
    disagrees counts wrong in any sentence."""
    words = [w.lower() for w in words]
    right = wrong = 0
    for claim in sentence_claims(words, source):
        right += claim.status in RIGHT
        wrong += claim.status in WRONG
    states_figure = right + wrong > 0
    if source.period is not None:
        forward = forward_looking(words)
        for mention in period_mentions(words):
            agrees = mention_agrees(mention, source.period, forward)
            if agrees is not None:
                right += agrees and states_figure
                wrong += not agrees
    wrong += len(malformed_figures(words))
    return ((right - wrong) / (right + wrong) if right + wrong else 0.0), right, wrong


class ClaimReward:
    """Per-token claim rewards of a batch of summaries (``weight`` = lambda): every token of sentence
    q carries ``lambda * c_q``, EOS the last sentence's, padding 0 -- the layout of
    :func:`agentsum.training.rewards.sentence_reward_matrix`, so the two add up."""

    stat = "claims_right_share"

    def __init__(self, vocab: Vocabulary, weight: float, end_ids: Collection[int]):
        if weight < 0:
            raise ValueError(f"train.claim_reward must be >= 0, got {weight}")
        self.vocab, self.weight, self.end_ids = vocab, weight, frozenset(end_ids)
        self._sources = SourceCache(lambda tokens: SourceClaims(split_generated(tokens)), CACHE_SIZE)

    def source(self, batch: Batch, b: int) -> SourceClaims:
        """Document b's source, read once per document id (the agents' tokens, in order)."""
        return self._sources(batch, b)

    def words(self, ids: Sequence[int], batch: Batch, b: int) -> list[str]:
        return candidate_words(ids, batch, b, self.vocab)

    def matrix(self, candidates: torch.Tensor, batch: Batch) -> tuple[torch.Tensor, dict]:
        """(B, T) per-token rewards of ``candidates`` (extended ids, ending at EOS / PAD) and the
        batch's claim counts (``claims_right``, ``claims_wrong``)."""
        rows = candidates.detach().cpu().tolist()
        B, T = candidates.shape
        out = torch.zeros((B, T), dtype=torch.float32)
        right_total = wrong_total = 0
        for b, ids in enumerate(rows):
            length = next((k for k, i in enumerate(ids) if i in (EOS_ID, PAD_ID)), len(ids))
            words = self.words(ids[:length], batch, b)
            source = self.source(batch, b)
            start = 0
            last = 0.0
            for end in sentence_ends(ids[:length], self.end_ids):
                score, right, wrong = sentence_claim_score(words[start:end], source)
                right_total, wrong_total = right_total + right, wrong_total + wrong
                last = self.weight * score
                out[b, start:end] = last
                start = end
            if length < T and ids[length] == EOS_ID:
                out[b, length] = last
        return out.to(candidates.device), {"claims_right": right_total, "claims_wrong": wrong_total}

    @staticmethod
    def share(counts: dict) -> float:
        """Right claims among a batch's right and wrong ones (0 when there were none)."""
        right, wrong = counts["claims_right"], counts["claims_wrong"]
        return right / (right + wrong) if right + wrong else 0.0
