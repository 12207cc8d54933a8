"""An attribution reward for self-critical RL: each sentence of a sampled dialogue summary that gives
its content to the wrong participant is penalised, beside its ROUGE-L reward (DCA eq 22).

For sentence q of a summary (words read from its ids, the dialogue read from the agents' tokens as
:meth:`agentsum.data.attribution.Dialogue.from_tokens`), the check of
:func:`agentsum.data.attribution.check_sentence` -- the reading the attribution figure of
``agentsum evaluate`` measures (:mod:`agentsum.evaluation.attribution`) -- gives

    a_q = -1   if the sentence is misattributed (its subject wrote none of its content words while
               another participant wrote two or more, or it names its subject again in another role);
    a_q =  0   otherwise (attributed, or not checked).

The reward of sentence q is ``r_q + lambda * a_q``, r_q its ROUGE-L reward of eq 22; the greedy
baseline's sentences are scored alike, so the advantage of a sample's sentence is its reward minus
that of the baseline's sentence of the same index (:class:`~agentsum.training.objectives.SelfCritical`).

Choice: a penalty only. Against 100 hand-labelled SAMSum validation summaries the check is precise
(84% of the summaries it flags give an action to the wrong person) but sees few errors (29% recall):
"attributed" means only "not caught", so a bonus for it would reward what the check cannot verify,
and a sentence whose subject is not a participant ("They will meet") would be worth less than one
that names someone. A sentence is penalised, not the summary, because eq 22 already credits each
sentence with its own reward. The weight lambda is ``train.attribution_reward`` (0: off). A source
that is not a dialogue (fewer than two ``name :`` turns) gives every sentence 0.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import torch

from agentsum.data.attribution import Dialogue, check_sentence
from agentsum.data.batch import Batch
from agentsum.data.vocab import EOS_ID, PAD_ID, Vocabulary
from agentsum.training.rewards import sentence_ends
from agentsum.training.source_reading import SourceCache, candidate_words

__all__ = ["AttributionReward"]

#: dialogues kept read between steps (an epoch of SAMSum is 14,732 dialogues; a read one is small)
CACHE_SIZE = 16384


class AttributionReward:
    """Per-token attribution rewards of a batch of summaries (``weight`` = lambda): every token of a
    misattributed sentence carries ``-lambda``, EOS the last sentence's, others 0 -- the layout of
    :func:`agentsum.training.rewards.sentence_reward_matrix`, so the two add up."""

    stat = "misattributed_share"

    def __init__(self, vocab: Vocabulary, weight: float, end_ids: Collection[int]):
        if weight < 0:
            raise ValueError(f"train.attribution_reward must be >= 0, got {weight}")
        self.vocab, self.weight, self.end_ids = vocab, weight, frozenset(end_ids)
        self._dialogues = SourceCache(Dialogue.from_tokens, CACHE_SIZE)

    def dialogue(self, batch: Batch, b: int) -> Dialogue | None:
        """Document b's dialogue, read once per document id; None for a source that is not one."""
        return self._dialogues(batch, b)

    def words(self, ids: Sequence[int], batch: Batch, b: int) -> list[str]:
        return candidate_words(ids, batch, b, self.vocab)

    def matrix(self, candidates: torch.Tensor, batch: Batch) -> tuple[torch.Tensor, dict]:
        """(B, T) per-token rewards of ``candidates`` (extended ids, ending at EOS / PAD) and the
        batch's counts (``checked``, ``misattributed`` sentences)."""
        rows = candidates.detach().cpu().tolist()
        B, T = candidates.shape
        out = torch.zeros((B, T), dtype=torch.float32)
        checked = misattributed = 0
        for b, ids in enumerate(rows):
            dialogue = self.dialogue(batch, b)
            if dialogue is None:
                continue
            length = next((k for k, i in enumerate(ids) if i in (EOS_ID, PAD_ID)), len(ids))
            words = [w.lower() for w in self.words(ids[:length], batch, b)]
            start = 0
            last = 0.0
            for end in sentence_ends(ids[:length], self.end_ids):
                verdict = check_sentence(words[start:end], dialogue)
                checked += verdict is not None
                misattributed += verdict is False
                last = -self.weight if verdict is False else 0.0
                out[b, start:end] = last
                start = end
            if length < T and ids[length] == EOS_ID:
                out[b, length] = last
        return out.to(candidates.device), {"checked": checked, "misattributed": misattributed}

    @staticmethod
    def share(counts: dict) -> float:
        """Misattributed sentences among the checked ones of a batch (0 when none was checked)."""
        return counts["misattributed"] / counts["checked"] if counts["checked"] else 0.0
