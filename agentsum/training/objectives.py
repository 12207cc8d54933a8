"""Training objectives (DCA section 3). Every objective is ``objective(model, batch) -> (loss, stats)``.

``loss`` is the scalar to minimise; ``stats`` holds the numbers to log, as 0-dim tensors where they
are computed on the device: reading them (``.item()``) would make the host wait for the device
before ``backward()``, so the trainer reads them once per step. The training loop never
branches on which objective it runs; an objective only tells it how to select the best model
(``selection``: the paper picks MLE models by validation NLL, MLE+RL models by validation ROUGE-L).

Scale. Eq (17)-(21) are sums over a document's tokens. Every loss here is the batch's sum of those
per-document terms divided by the batch's number of reference target tokens, so MLE, SEM and RL
keep the paper's relative weights (lambda, gamma) while the learning rate does not depend on the
batch size or summary length.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from agentsum.data.batch import Batch
from agentsum.data.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Vocabulary
from agentsum.decoding.copying import teacher_forced
from agentsum.decoding.search import SearchConfig, sample_and_greedy
from agentsum.devices import copy_to
from agentsum.models.dropout import Dropout
from agentsum.training.distributed import unwrap
from agentsum.training.attribution_reward import AttributionReward
from agentsum.training.fluency_reward import FluencyReward
from agentsum.training.claim_rewards import ClaimReward
from agentsum.training.rewards import sentence_reward_matrix, sequence_rewards

SENTENCE_END_TOKENS = (".", "!", "?")


def sentence_end_ids(vocab: Vocabulary) -> list[int]:
    """Ids of the sentence delimiters. The paper uses '.'; '!' and '?' end sentences too, and the
    preprocessing (``agentsum.data.text``) splits sentences at all three."""
    return [vocab.stoi[t] for t in SENTENCE_END_TOKENS if t in vocab.stoi]


def semantic_cohesion(states: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor,
                      end_ids: list[int]) -> torch.Tensor:
    """Eq (18): sum over documents of sum_{q>=2} cos(s'_q, s'_{q-1}), (B,) per document.

    states: (B, T, H) decoder states s_t; targets: (B, T) the word y_t produced at step t; s'_q are
    the states at steps whose word is a sentence delimiter. Documents with fewer than two sentences
    contribute 0.
    """
    B, T, H = states.shape
    is_end = torch.isin(targets, torch.tensor(end_ids, device=targets.device)) & mask  # (B, T)
    positions = torch.arange(T, device=states.device).expand(B, T)
    marked = torch.where(is_end, positions, torch.full_like(positions, -1))
    # previous delimiter strictly before t: running max of the marks, shifted by one step
    previous = F.pad(marked.cummax(dim=1).values, (1, 0), value=-1)[:, :-1]  # (B, T)
    pair = is_end & (previous >= 0)
    unit = F.normalize(states, dim=-1)
    prev_states = unit.gather(1, previous.clamp_min(0).unsqueeze(-1).expand(B, T, H))
    cosine = (unit * prev_states).sum(-1)  # (B, T)
    return (cosine * pair).sum(1)


class MLE:
    """Eq (17), plus lambda * eq (18) when ``sem_weight`` > 0 (eq 19, MLE+SEM), plus
    ``coverage_weight`` * the coverage loss of See et al. (2017, eq 13) when the model has coverage."""

    selection = "valid_nll"

    def __init__(self, sem_weight: float = 0.0, end_ids: list[int] | None = None, coverage_weight: float = 0.0,
                 label_smoothing: float = 0.0):
        if sem_weight and not end_ids:
            raise ValueError("the semantic cohesion loss needs the ids of sentence delimiters")
        if not 0.0 <= label_smoothing < 1.0:
            raise ValueError(f"label smoothing must be in [0, 1), got {label_smoothing}")
        self.sem_weight = sem_weight
        self.coverage_weight = coverage_weight
        self.label_smoothing = label_smoothing
        self.end_ids = end_ids or []

    def terms(self, model, batch: Batch, enc=None) -> tuple[torch.Tensor, torch.Tensor, dict]:
        """(nll_sum, extra_sum, stats): the batch sum of eq (17), and the weighted batch sums of
        eq (18) and the coverage loss (``sem_weight * sem_sum + coverage_weight * coverage_sum``)."""
        out = model(batch, enc)
        target = unwrap(model).target_ids(batch.tgt_out)
        # only the real target positions: padding never reaches the output layer
        dist = out.dist.at(batch.tgt_mask)
        nll_sum = -dist.log_prob(target[batch.tgt_mask]).sum()
        sem_sum = (semantic_cohesion(out.states, batch.tgt_out, batch.tgt_mask, self.end_ids).sum()
                   if self.sem_weight else nll_sum.new_zeros(()))
        coverage_loss = out.coverage_loss  # (B, T) with model.coverage, else None
        cov_sum = coverage_loss[batch.tgt_mask].sum() if coverage_loss is not None else nll_sum.new_zeros(())
        tokens = batch.tgt_mask.sum()  # counted on the device: int() would wait for it
        stats = {"nll_sum": nll_sum.detach(), "sem_sum": sem_sum.detach(), "tokens": tokens}
        if coverage_loss is not None:
            stats["coverage"] = cov_sum.detach() / tokens.clamp_min(1)
        extra = self.sem_weight * sem_sum + self.coverage_weight * cov_sum
        if self.label_smoothing:
            # (1 - eps) * NLL + eps * smooth = NLL + eps * (smooth - NLL): nll_sum stays the true NLL
            # (logged, and what validation selects on); the smoothing rides in the extra terms
            extra = extra + self.label_smoothing * (smoothing_sum(dist) - nll_sum)
        return nll_sum, extra, stats

    def __call__(self, model, batch: Batch) -> tuple[torch.Tensor, dict]:
        nll_sum, extra_sum, stats = self.terms(model, batch)
        tokens = stats["tokens"].clamp_min(1)
        loss = (nll_sum + extra_sum) / tokens
        stats.update(loss=loss.detach(), nll=stats["nll_sum"] / tokens)
        return loss, stats


def smoothing_sum(dist) -> torch.Tensor:
    """Sum over positions of the cross-entropy against the uniform distribution over the fixed
    vocabulary, less padding and BOS (never targets): ``-mean_w log P(w)``.

    Label smoothing (Szegedy et al., 2016; Vaswani et al., 2017, eps 0.1) puts eps of each target's
    mass on every word. With a copy mechanism P is the final mixture of eq (16), so the term reads the
    copied mass too: a word the decoder copies with certainty is smoothed as one it generates. The
    uniform is over the fixed vocabulary only; in-article OOVs (extended ids) stay reachable through
    the target term alone, as a word another document's OOV slot names is not a word of this one.
    This builds the (positions, V_ext) mixture that training otherwise avoids.
    """
    log_p = dist.log_probs()[..., :dist.vocab_size]  # (P, V)
    keep = torch.ones(log_p.size(-1), dtype=torch.bool, device=log_p.device)
    keep[[PAD_ID, BOS_ID]] = False
    return -(log_p[..., keep].mean(-1)).sum()


def _reference_ids(batch: Batch) -> torch.Tensor:
    """Reference ids for rewards; an UNK in the reference matches nothing (it is not a word)."""
    return batch.tgt_out.masked_fill(batch.tgt_out == UNK_ID, -1)


class SelfCritical:
    """Self-critical policy gradient (eq 20), optionally mixed with MLE[+SEM] (eq 21), with
    end-of-summary or sentence-level intermediate rewards (eq 22).

    For each document a summary is sampled and a greedy baseline decoded, batched, without
    gradients, by the search strategy :func:`agentsum.decoding.search.sample_and_greedy` (the
    filters of greedy and beam search, no minimum length, no trigram blocking, at most
    ``max_length`` tokens); the sample's log-probabilities are then recomputed with gradients by one
    teacher-forced pass over the sampled words (identical to the sampling step's distributions,
    see ``tests/models/test_dca.py``), which costs far less memory than keeping the graph of every sampling
    step. The reward is ROUGE-L F1 against the reference, computed on token ids.

    Intermediate rewards (eq 22). Sentence q of the sample gets r(o_1..o_q) - r(o_1..o_{q-1}); the
    greedy baseline is split the same way and its q-th sentence reward is that sentence's baseline,
    with every greedy sentence beyond the sample's last sentence added to the last sentence's
    baseline. The advantages of a sample's sentences therefore sum to r(sample) - r(greedy), the
    advantage of eq (20), and each token is weighted by its sentence's advantage.

    Dropout. The sample and the baseline are decoded with dropout off (the model in eval mode, its
    own encoding without gradients), then the sample is scored with dropout on, as every training
    pass is: decoded in train mode, the sampling policy and the scored one would differ by their
    dropout masks, and the greedy baseline would be a noisy draw (with dropout 0.3, one mask per
    pass). ``decode_dropout=True`` (``train.rl_decode_dropout``) keeps train mode for decoding,
    sharing the training pass's encoding. A model without dropout decodes from that encoding either way.
    """

    selection = "valid_rougeL"

    def __init__(self, end_ids: list[int], gamma: float = 0.97, sem_weight: float = 0.0,
                 intermediate: bool = True, reward: str = "rougeL", max_length: int = 100,
                 coverage_weight: float = 0.0, decode_dropout: bool = False, label_smoothing: float = 0.0,
                 claim_reward: ClaimReward | None = None, attribution_reward: AttributionReward | None = None,
                 fluency_reward: FluencyReward | None = None):
        extras = {"claim_reward": claim_reward, "attribution_reward": attribution_reward,
                  "fluency_reward": fluency_reward}
        for key, extra in extras.items():
            if extra is not None and not intermediate:
                raise ValueError(f"train.{key} scores each sentence of a summary: it needs "
                                 "train.intermediate_rewards (eq 22)")
        self.claim_reward = claim_reward
        self.attribution_reward = attribution_reward
        self.fluency_reward = fluency_reward
        #: the rewards added to each sentence's ROUGE reward, each with its per-token ``matrix``, the
        #: batch ``share`` it logs and that statistic's name (``stat``)
        self.sentence_rewards = [extra for extra in extras.values() if extra is not None]
        self.gamma = gamma
        self.decode_dropout = decode_dropout
        self.intermediate = intermediate
        self.reward = reward
        self.max_length = max_length
        self.sampling = SearchConfig(beam_size=1, min_length=0, max_length=max_length, block_trigrams=False)
        self.end_ids = end_ids
        self.mle = MLE(sem_weight, end_ids, coverage_weight, label_smoothing=label_smoothing)

    def advantages(self, sample: torch.Tensor, greedy: torch.Tensor, reference: torch.Tensor,
                   batch: Batch | None = None) -> tuple[torch.Tensor, dict]:
        """(B, T) per-token advantages of the sampled sequences and reward statistics. With a claim
        reward (:mod:`agentsum.training.claim_rewards`; ``batch`` gives the words and the sources),
        each sentence's reward is its ROUGE reward plus lambda times its claim score, in the sample
        and in the baseline alike; an attribution reward (:mod:`agentsum.training.attribution_reward`)
        adds -lambda to each misattributed sentence's reward, likewise; a fluency reward
        (:mod:`agentsum.training.fluency_reward`) lambda * min(0, SLOR - level) to each sentence's."""
        if not self.intermediate:
            r_sample = sequence_rewards(sample, reference, kind=self.reward)
            r_greedy = sequence_rewards(greedy, reference, kind=self.reward)
            adv = (r_sample - r_greedy).unsqueeze(1) * (sample != PAD_ID)
        else:
            sample_tok, r_sample = sentence_reward_matrix(sample, reference, self.end_ids, kind=self.reward)
            greedy_tok, r_greedy = sentence_reward_matrix(greedy, reference, self.end_ids, kind=self.reward)
            stats = {}
            for extra in self.sentence_rewards:
                sample_extra, counts = extra.matrix(sample, batch)
                greedy_extra, _ = extra.matrix(greedy, batch)
                sample_tok, greedy_tok = sample_tok + sample_extra, greedy_tok + greedy_extra
                stats[extra.stat] = torch.tensor(extra.share(counts))
            baseline = sentence_baselines(sample, greedy, greedy_tok, self.end_ids)
            adv = (sample_tok - baseline) * (sample != PAD_ID)
            return adv, {"reward_sample": r_sample.mean(), "reward_greedy": r_greedy.mean(), **stats}
        return adv, {"reward_sample": r_sample.mean(), "reward_greedy": r_greedy.mean()}

    def rl_sum(self, model, batch: Batch, sample: torch.Tensor, advantages: torch.Tensor, enc=None) -> torch.Tensor:
        """Eq (20) summed over the batch: -sum_b sum_t A_{b,t} log p(y^_{b,t})."""
        sampled = teacher_forced(batch, sample)
        return self._policy_sum(model, sampled, model(sampled, enc), advantages)

    @staticmethod
    def _policy_sum(model, sampled: Batch, out, advantages: torch.Tensor) -> torch.Tensor:
        """:meth:`rl_sum` from the teacher-forced pass ``out`` of ``model`` over ``sampled``."""
        mask = sampled.tgt_mask
        log_p = out.dist.at(mask).log_prob(unwrap(model).target_ids(sampled.tgt_out)[mask])  # (P,)
        return -(advantages[:, : mask.size(1)][mask] * log_p).sum()

    def __call__(self, model, batch: Batch) -> tuple[torch.Tensor, dict]:
        core = unwrap(model)  # model may be wrapped by DistributedDataParallel; its forward carries the gradients
        if self.decode_dropout or not core.training or not has_dropout(core):
            enc = core.encode(batch)
            sample, greedy = sample_and_greedy(core, batch, self.sampling, enc=enc)
        else:
            core.eval()
            try:
                sample, greedy = sample_and_greedy(core, batch, self.sampling)  # its own encoding, no gradients
            finally:
                core.train()
            enc = core.encode(batch)
        B = sample.size(0)
        # ROUGE is computed on the host: one copy of both sequences and one of the references,
        # taken before the teacher-forced pass is queued, so that the device runs that pass while
        # the host scores; the advantages go back in one copy
        candidates = torch.cat([sample, greedy]).cpu()
        references = _reference_ids(batch).cpu()
        sampled = teacher_forced(batch, sample)  # reads the sample's length: the queue is empty after the copies
        out = model(sampled, enc)
        adv, stats = self.advantages(candidates[:B], candidates[B:], references, batch)
        tokens = batch.tgt_mask.sum().clamp_min(1)
        rl = self._policy_sum(model, sampled, out, copy_to(adv, sample.device)) / tokens
        loss = self.gamma * rl
        if self.gamma < 1:
            nll_sum, extra_sum, mle_stats = self.mle.terms(model, batch, enc)
            mle = (nll_sum + extra_sum) / tokens
            loss = loss + (1 - self.gamma) * mle
            stats.update(nll=mle_stats["nll_sum"] / tokens, sem_sum=mle_stats["sem_sum"])
        stats.update(loss=loss.detach(), rl=rl.detach(), tokens=tokens,
                     sample_length=float((candidates[:B] != PAD_ID).sum(1).float().mean()))
        return loss, stats


def has_dropout(model: torch.nn.Module) -> bool:
    """Whether some dropout layer of ``model`` drops anything (p > 0)."""
    return any(isinstance(m, (torch.nn.Dropout, Dropout)) and m.p > 0 for m in model.modules())


def sentence_baselines(sample: torch.Tensor, greedy: torch.Tensor, greedy_token_rewards: torch.Tensor,
                       end_ids: list[int]) -> torch.Tensor:
    """(B, T) baseline per sample token: the greedy sequence's reward for the same sentence index.

    Sentence q of the sample is baselined by greedy sentence q's differential reward; greedy
    sentences past the sample's last sentence are added to that last sentence, so each row's
    sentence baselines sum to r(greedy).
    """
    sample_sentence = _sentence_index(sample, end_ids)  # (B, T), -1 on padding
    greedy_sentence = _sentence_index(greedy, end_ids)
    B = sample.size(0)
    n_sentences = int(max(sample_sentence.max(), greedy_sentence.max())) + 1
    # reward of each greedy sentence (every token of a sentence carries it; padding goes to a spare column)
    greedy_reward = greedy_token_rewards.new_zeros(B, n_sentences + 1)
    idx = torch.where(greedy_sentence >= 0, greedy_sentence, torch.full_like(greedy_sentence, n_sentences))
    greedy_reward.scatter_(1, idx, greedy_token_rewards)
    greedy_reward = greedy_reward[:, :n_sentences]
    last = sample_sentence.max(1).values.clamp_min(0)  # (B,) the sample's last sentence index
    tail = torch.arange(n_sentences, device=sample.device).unsqueeze(0) >= last.unsqueeze(1)  # sentences folded into the last one
    folded = (greedy_reward * tail).sum(1)  # (B,)
    per_sentence = torch.where(tail, torch.zeros_like(greedy_reward), greedy_reward)
    per_sentence.scatter_(1, last.unsqueeze(1), folded.unsqueeze(1))
    baseline = per_sentence.gather(1, sample_sentence.clamp_min(0))
    return baseline * (sample_sentence >= 0)


def _sentence_index(tokens: torch.Tensor, end_ids: list[int]) -> torch.Tensor:
    """(B, T) index of the sentence each token belongs to (a delimiter closes its sentence; EOS
    belongs to the last sentence); -1 on padding."""
    is_end = torch.isin(tokens, torch.tensor(end_ids, dtype=tokens.dtype, device=tokens.device))
    before = F.pad(is_end.long().cumsum(1), (1, 0))[:, :-1]  # delimiters strictly before t
    valid = tokens != PAD_ID
    index = before.clone()
    # EOS right after a delimiter belongs to the sentence the delimiter closed
    eos_after_end = (tokens == EOS_ID) & (F.pad(is_end, (1, 0))[:, :-1]) & (before > 0)
    index = index - eos_after_end.long()
    return torch.where(valid, index, torch.full_like(index, -1))


def build_objective(train_config, vocab: Vocabulary, train_docs=None):
    """The objective named by ``train.objective``: mle, mle+sem, rl, mixed, mixed+sem. ``train_docs``
    (the run's training documents) fit the fluency reward's language model, with ``train.fluency_reward``."""
    name = train_config.objective
    ends = sentence_end_ids(vocab)
    sem = train_config.sem_weight if name.endswith("+sem") else 0.0
    cov = train_config.coverage_weight  # applies only to models built with coverage
    attribution = train_config.attribution_reward
    fluency = train_config.fluency_reward
    if name in ("mle", "mle+sem"):
        for key, value in (("claim_reward", train_config.claim_reward), ("attribution_reward", attribution),
                           ("fluency_reward", fluency)):
            if value:
                raise ValueError(f"train.{key} is a reward of self-critical RL: it needs train.objective rl, "
                                 f"mixed or mixed+sem, not {name!r}")
        return MLE(sem, ends, cov, label_smoothing=train_config.label_smoothing)
    if name in ("rl", "mixed", "mixed+sem"):
        gamma = 1.0 if name == "rl" else train_config.gamma
        return SelfCritical(ends, gamma=gamma, sem_weight=sem, intermediate=train_config.intermediate_rewards,
                            reward=train_config.reward, max_length=train_config.rl_max_length, coverage_weight=cov,
                            decode_dropout=train_config.rl_decode_dropout,
                            label_smoothing=train_config.label_smoothing,
                            claim_reward=ClaimReward(vocab, train_config.claim_reward, ends)
                            if train_config.claim_reward else None,
                            attribution_reward=AttributionReward(vocab, attribution, ends) if attribution else None,
                            fluency_reward=_fluency_reward(vocab, fluency, ends, train_docs) if fluency else None)
    raise ValueError(f"unknown train.objective {name!r} (known: mle, mle+sem, rl, mixed, mixed+sem)")


def _fluency_reward(vocab: Vocabulary, weight: float, ends: list[int], train_docs) -> FluencyReward:
    if train_docs is None:
        raise ValueError("train.fluency_reward fits its language model on the run's training summaries: "
                         "build_objective needs train_docs")
    return FluencyReward.fit(vocab, weight, ends, train_docs)
