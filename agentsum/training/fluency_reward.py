"""A fluency reward for self-critical RL: each sampled summary sentence that reads less fluently than
the training summaries do is penalised, beside its ROUGE-L reward (DCA eq 22).

Fluency is SLOR (syntactic log-odds ratio; Pauls and Klein, 2012; Lau et al., 2017; Kann et al.,
2018): a sentence S of |S| tokens, read in the context of the summary's earlier tokens, scores

    SLOR(S) = ( log p_LM(S) - log p_U(S) ) / |S|

where p_LM is the summary language model (:class:`agentsum.models.summary_lm.NgramLM`, a 4-gram
Kneser-Ney model of the training summaries, participant names as one class ``<name>``) and p_U the
unigram distribution of the same summaries. Dividing by the unigram probability takes word
frequency out: a rare but right word ("cinnamon") costs nothing, a common word in a wrong place
("Lisa have", "will met") does. The reward of sentence q is

    f_q = lambda * min(0, SLOR(q) - level)

``level`` is the mean sentence SLOR of the training summaries held out of the LM (every 10th), so a
sentence as fluent as a typical human one is not penalised. The greedy baseline's sentences are
scored alike (:class:`~agentsum.training.objectives.SelfCritical`).

Choices: SLOR rather than the LM's log-probability per token, because the latter prefers frequent
words and would pull the summary away from the dialogue's own (less frequent) words that ROUGE
rewards; a penalty only, as the attribution reward's, because a bonus for fluency above the human
level would reward generic sentences ("They will meet."); and the LM and level come from the run's
own training summaries (fit when the objective is built, seconds for SAMSum), so the reward needs
no file beside the configuration. The weight lambda is ``train.fluency_reward`` (0: off).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Iterable, Sequence

import torch

from agentsum.data.batch import Batch
from agentsum.data.vocab import EOS_ID, PAD_ID, Vocabulary
from agentsum.models.summary_lm import UNK, NgramLM, document_summaries, participants, with_name_class
from agentsum.training.rewards import sentence_ends
from agentsum.training.source_reading import SourceCache, candidate_words

__all__ = ["FluencyReward", "Fluency"]

#: every HELD_OUT-th training summary is held out of the LM to set the level
HELD_OUT = 10
#: dialogues kept read between steps (as the attribution reward's cache)
CACHE_SIZE = 16384


class Fluency:
    """SLOR of summary sentences under a summary LM and its unigram distribution."""

    def __init__(self, lm: NgramLM, unigram: dict[str, float]):
        self.lm, self.unigram = lm, unigram  # unigram: every word of lm.vocab, <unk> included

    @classmethod
    def fit(cls, summaries: Iterable[Sequence[str]], order: int = 4) -> "Fluency":
        """From summaries as tokens (names already ``<name>``)."""
        summaries = [list(s) for s in summaries]
        lm = NgramLM.fit(summaries, order=order)
        counts = Counter(t if t in lm.vocab else UNK for s in summaries for t in s)
        total = sum(counts.values()) + len(lm.vocab)  # add-one, so no word has probability 0
        unigram = {w: math.log((counts.get(w, 0) + 1) / total) for w in lm.vocab}
        return cls(lm, unigram)

    def slor(self, tokens: Sequence[str], start: int, end: int) -> float:
        """SLOR of ``tokens[start:end]`` read after ``tokens[:start]``; 0 for an empty span."""
        return self.sentence_slors(tokens[:end], [start, end])[1]

    def sentence_slors(self, tokens: Sequence[str], ends: Sequence[int]) -> list[float]:
        """SLOR of each sentence ``tokens[previous end:end]`` (``ends`` increasing, exclusive), every
        token's log-probability computed once; 0 for an empty sentence."""
        gain = [lm - self.unigram[t if t in self.unigram else UNK]
                for t, lm in zip(tokens, self.lm.token_logprobs(tokens))]
        start, out = 0, []
        for end in ends:
            out.append(sum(gain[start:end]) / (end - start) if end > start else 0.0)
            start = end
        return out


class FluencyReward:
    """Per-token fluency rewards of a batch of summaries (``weight`` = lambda): every token of a
    sentence carries ``lambda * min(0, SLOR - level)``, EOS the last sentence's, others 0 -- the layout
    of :func:`agentsum.training.rewards.sentence_reward_matrix`, so the two add up."""

    stat = "disfluent_share"

    def __init__(self, vocab: Vocabulary, weight: float, end_ids: Collection[int], fluency: Fluency, level: float):
        self.vocab, self.weight, self.end_ids = vocab, _checked(weight), frozenset(end_ids)
        self.fluency, self.level = fluency, level
        self._names = SourceCache(lambda tokens: frozenset(participants(tokens)), CACHE_SIZE)

    @classmethod
    def fit(cls, vocab: Vocabulary, weight: float, end_ids: Collection[int], docs, order: int = 4) -> "FluencyReward":
        """From a run's training documents (their summary tokens; a dialogue's participants as
        ``<name>``): the LM from all but every HELD_OUT-th summary, the level from those."""
        _checked(weight)  # before the fit
        summaries = document_summaries(docs)
        if not summaries:
            raise ValueError("train.fluency_reward needs training summaries to fit its language model")
        held = summaries[::HELD_OUT]
        fluency = Fluency.fit([s for k, s in enumerate(summaries) if k % HELD_OUT] or summaries, order=order)
        end_words = {vocab.itos[i] for i in end_ids}
        slors = [x for s in held for x in fluency.sentence_slors(s, sentence_ends(s, end_words))]
        return cls(vocab, weight, end_ids, fluency, sum(slors) / len(slors))

    def names(self, batch: Batch, b: int) -> frozenset[str]:
        """Document b's participants (none for a source that is not a dialogue), read once per id."""
        return self._names(batch, b)

    def words(self, ids: Sequence[int], batch: Batch, b: int) -> list[str]:
        return candidate_words(ids, batch, b, self.vocab)

    def matrix(self, candidates: torch.Tensor, batch: Batch) -> tuple[torch.Tensor, dict]:
        """(B, T) per-token rewards of ``candidates`` (extended ids, ending at EOS / PAD) and the
        batch's counts (``sentences``, ``disfluent``: those below the level)."""
        rows = candidates.detach().cpu().tolist()
        B, T = candidates.shape
        out = torch.zeros((B, T), dtype=torch.float32)
        sentences = disfluent = 0
        for b, ids in enumerate(rows):
            length = next((k for k, i in enumerate(ids) if i in (EOS_ID, PAD_ID)), len(ids))
            if length == 0:
                continue
            words = with_name_class([w.lower() for w in self.words(ids[:length], batch, b)], self.names(batch, b))
            ends = sentence_ends(ids[:length], self.end_ids)
            start, last = 0, 0.0
            for end, slor in zip(ends, self.fluency.sentence_slors(words, ends)):
                gap = slor - self.level
                sentences += 1
                disfluent += gap < 0
                last = self.weight * min(0.0, gap)
                out[b, start:end] = last
                start = end
            if length < T and ids[length] == EOS_ID:
                out[b, length] = last
        return out.to(candidates.device), {"sentences": sentences, "disfluent": disfluent}

    @staticmethod
    def share(counts: dict) -> float:
        """Sentences below the level among a batch's sentences (0 when there were none)."""
        return counts["disfluent"] / counts["sentences"] if counts["sentences"] else 0.0


def _checked(weight: float) -> float:
    if weight < 0:
        raise ValueError(f"train.fluency_reward must be >= 0, got {weight}")
    return weight
