"""Decoding strategies (greedy, beam and sampling) kept apart from the model.

Search talks to a model only through the small :class:`agentsum.models.base.StepModel` protocol
(``encode`` / ``init_state`` / ``step``), in the style of fairseq, OpenNMT and Hugging Face: the
beam step is pure tensor math, n-gram blocking is a logits filter (:func:`block_repeated_ngrams`),
and every strategy decodes through one filtered step (:func:`filtered_step`: no PAD, no BOS, no
other document's OOV words, no EOS before ``min_length``, optionally no repeated trigram). Greedy
and beam search share one signature ``strategy(model, batch, config) -> Hypotheses``;
:func:`sample_and_greedy` (self-critical RL's sample and baseline) takes the same arguments and
returns the two sequences as id tensors. Decoding is batched over documents; the only Python loop
inside decoding runs over time steps. Documents that have finished
are dropped from the working rows (``enc.select`` / ``state.select``), so the decoder spends no
time on them, and decoding stops as soon as every document has finished.

Test-time tricks from DCA Appendix A.2 (following Paulus et al., 2018):

* the decoder may not produce the same trigram twice (``SearchConfig.block_trigrams``);
* every predicted UNK is replaced by its most likely origin, the source word with the largest
  cascaded attention ``argmax_{a,i} l^t_{a,i} * g^t_a`` (eq 8, 10). Search records that flat source
  position ``a * S + i`` for every output token (``Hypotheses.copy_positions``) and
  :func:`agentsum.decoding.copying.to_words` performs the replacement.

Numbers only from the source (``SearchConfig.numbers_from_source``): the generator may not write a
numeral (:func:`agentsum.data.numerals.is_numeral`), the copy mechanism still may, so every number
in a summary is a token of its source. Search asks the model's step distribution for its
log-probabilities with the vocabulary's numerals marked copy-only
(:meth:`agentsum.models.pointer.CopyDistribution.log_probs`, :func:`numeral_mask`), and a scale
word after a numeral must be one the source writes after it (``1.2 billion`` is not ``1.2
million``: :class:`SourceNumbers`). UNK replacement puts in source words only, so it adds no other
number. This needs the vocabulary (``vocab=``, to know which ids are numerals) and a model with
``step_distribution``; a model without a copy mechanism can then write no numeral at all.

Scores: a hypothesis' score is ``sum of its log-probs / n_steps ** length_penalty`` where
``n_steps`` counts the decoder steps that were scored, i.e. its tokens plus the EOS step when it
ended with EOS (a hypothesis cut at ``max_length`` has no EOS step). ``length_penalty=1`` is the
mean log-prob per step (See et al., 2017); ``0`` is the raw sum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from agentsum.data.batch import Batch
from agentsum.data.numerals import SCALES, is_numeral
from agentsum.data.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Vocabulary
from agentsum.decoding.constraints import ClaimConstraints
from agentsum.decoding.copying import copy_positions, padded_ids
from agentsum.decoding.rerank import rerank
from agentsum.models.base import Attention, Selectable, StepAttention, StepModel

__all__ = [
    "SearchConfig",
    "Hypothesis",
    "Hypotheses",
    "block_repeated_ngrams",
    "penalize_repeats",
    "filtered_step",
    "numeral_mask",
    "SourceNumbers",
    "greedy_search",
    "beam_search",
    "forced_scores",
    "sample_and_greedy",
    "search",
]

NEG_INF = float("-inf")


# --------------------------------------------------------------------------------------------
# Configuration and results
# --------------------------------------------------------------------------------------------


@dataclass
class SearchConfig:
    """Decoding settings (defaults: DCA test time, beam 5, summaries of at most 110 tokens).

    beam_size:       hypotheses kept per document; 1 selects greedy decoding in :func:`search`.
    min_length:      EOS is forbidden until this many tokens have been produced.
    max_length:      at most this many decoder steps (so at most this many output tokens).
    block_trigrams:  forbid any token that would repeat a trigram of the hypothesis (Paulus et al.).
    no_repeat_ngram_size: forbid any token that would repeat an n-gram of the hypothesis, for this
                     n (Hugging Face ``generate``'s ``no_repeat_ngram_size``, OpenNMT-py's
                     ``block_ngram_repeat``); 0 turns blocking off; None (the default) means 3 with
                     ``block_trigrams`` and off without it. n-grams are of extended ids, so copied
                     out-of-vocabulary words are blocked as vocabulary words are.
    repetition_penalty: every token the hypothesis already holds has its log-probability
                     multiplied by this (Keskar et al., 2019, as Hugging Face applies it to
                     log-probabilities in beam search): > 1 discourages a repeat, 1 is off.
    repeat_window:   forbid any token among the hypothesis' last ``repeat_window`` tokens (0: off).
                     2 forbids "X and X" and "X X": a copy attention that returns to the word just
                     copied (benchmarks/studies/x_and_x_cause.py) cannot write it again at once.
    length_penalty:  final score = sum log-prob / n_steps ** length_penalty (1: mean, 0: sum).
    unk_replace:     replace predicted UNKs by their cascaded-attention source word
                     (``agentsum.decoding.copying.to_words``).
    numbers_from_source: a numeral may be copied from the source but never generated from the
                     vocabulary (module docstring), so every number of a summary is in its source.
                     Off by default; the ECTSum presets (earnings calls, whose summaries are mostly
                     figures) turn it on.
    figure_grammar:  a currency sign only before a number, scale words and percent only after one,
                     never two units on one number (:mod:`agentsum.decoding.constraints`).
    source_periods:  a period token (q3, fy, first quarter) only where the source states that
                     period and it agrees with the period the call reports (constraints module).
    numbers_in_context: a number copied in a summary sentence that has named a metric draws its copy
                     mass only from source sentences stating that metric, for that sentence's
                     period (constraints module); numerals are then copy-only.
    attribution_rerank: of a dialogue's n-best, the best-scored hypothesis with the fewest misattributed
                     sentences wins (:mod:`agentsum.decoding.rerank`); other sources, and greedy
                     decoding, are unchanged.
    role_names:      the attribution rerank, with each misattributed sentence's names also set to the
                     roles its content words show, each edit scored as the search would have scored it
                     (:func:`forced_scores`); an edit the beam could have kept joins the n-best
                     (:mod:`agentsum.decoding.rerank`, "Role names"). Beam search of a dialogue only.
    lm_weight:       w > 0: beam search's n-best is rescored with the model's summary language model,
                     search score + w * LM log-probability per token (:mod:`agentsum.decoding.rerank`;
                     ``search(..., summary_lm=)``); 0: off.
    min_length_ratio: a document's minimum length is at most this share of its source tokens
                     (``min(min_length, ceil(ratio * source tokens))``), so a one-sentence input is
                     not padded to ``min_length`` with words it cannot support; None: off.
    """

    beam_size: int = 5
    min_length: int = 0
    max_length: int = 110
    block_trigrams: bool = True
    length_penalty: float = 1.0
    unk_replace: bool = True
    no_repeat_ngram_size: int | None = None
    repetition_penalty: float = 1.0
    repeat_window: int = 0
    numbers_from_source: bool = False
    figure_grammar: bool = False
    source_periods: bool = False
    numbers_in_context: bool = False
    min_length_ratio: float | None = 0.5
    attribution_rerank: bool = False
    role_names: bool = False
    lm_weight: float = 0.0

    def __post_init__(self) -> None:
        for name in ("numbers_from_source", "figure_grammar", "source_periods", "numbers_in_context",
                     "attribution_rerank", "role_names"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if not (isinstance(self.lm_weight, (int, float)) and not isinstance(self.lm_weight, bool)
                and math.isfinite(self.lm_weight) and 0 <= self.lm_weight <= 10):
            raise ValueError(f"lm_weight must be a number from 0 (off) to 10, got {self.lm_weight!r}")
        if self.min_length_ratio is not None and not (0 < self.min_length_ratio and math.isfinite(self.min_length_ratio)):
            raise ValueError(f"min_length_ratio must be a positive number or null, got {self.min_length_ratio}")
        if self.beam_size < 1:
            raise ValueError(f"beam_size must be >= 1, got {self.beam_size}")
        if self.max_length < 1:
            raise ValueError(f"max_length must be >= 1, got {self.max_length}")
        if not 0 <= self.min_length <= self.max_length:
            raise ValueError(f"need 0 <= min_length <= max_length, got {self.min_length}, {self.max_length}")
        if self.no_repeat_ngram_size is not None and self.no_repeat_ngram_size < 0:
            raise ValueError(f"no_repeat_ngram_size must be >= 0, got {self.no_repeat_ngram_size}")
        if self.repeat_window < 0:
            raise ValueError(f"repeat_window must be >= 0, got {self.repeat_window}")
        if not (self.repetition_penalty > 0 and math.isfinite(self.repetition_penalty)):
            raise ValueError(f"repetition_penalty must be a positive number, got {self.repetition_penalty}")

    @property
    def ngram_block(self) -> int:
        """The order n of the n-gram blocking in force (0: none)."""
        if self.no_repeat_ngram_size is not None:
            return self.no_repeat_ngram_size
        return 3 if self.block_trigrams else 0


@dataclass
class Hypothesis:
    """One decoded sequence.

    tokens:          extended ids, without BOS and EOS.
    score:           sum log-prob / n_steps ** length_penalty (see module docstring).
    copy_positions:  per token, the flat source position a * S + i maximising l^t_{a,i} * g^t_a.
    agent_attention: (len(tokens), A) agent attention g^t per token (CPU).
    finished:        True if it ended with EOS, False if it was cut at max_length.
    """

    tokens: list[int]
    score: float
    copy_positions: list[int]
    agent_attention: torch.Tensor
    finished: bool


@dataclass
class Hypotheses:
    """Search output for a batch: the best hypothesis of every document, plus the n-best lists.

    tokens, scores, copy_positions, agent_attention: one entry per document, for its best
    hypothesis (see :class:`Hypothesis` for their meaning).
    n_best: per document, all returned hypotheses ordered by score, best first (greedy: one).
    """

    tokens: list[list[int]]
    scores: list[float]
    copy_positions: list[list[int]]
    agent_attention: list[torch.Tensor]
    n_best: list[list[Hypothesis]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.tokens)

    @classmethod
    def from_n_best(cls, n_best: list[list[Hypothesis]]) -> "Hypotheses":
        best = [hyps[0] for hyps in n_best]
        return cls(
            tokens=[h.tokens for h in best],
            scores=[h.score for h in best],
            copy_positions=[h.copy_positions for h in best],
            agent_attention=[h.agent_attention for h in best],
            n_best=n_best,
        )


# --------------------------------------------------------------------------------------------
# Logits filters
# --------------------------------------------------------------------------------------------


def penalize_repeats(log_probs: torch.Tensor, history: torch.Tensor, penalty: float) -> torch.Tensor:
    """Multiply by ``penalty`` the log-probability of every token already in the row's history.

    log_probs: (N, V) next-token scores (extended ids, <= 0); history: (N, t) tokens so far. A token
    counts once however often it occurred. Returns a new tensor (-inf stays -inf).
    """
    if history.size(1) == 0 or penalty == 1.0:
        return log_probs
    seen = torch.zeros(log_probs.shape, dtype=torch.bool, device=log_probs.device)
    seen.scatter_(1, history.to(log_probs.device), True)
    # -inf stays -inf: a penalty that rounds to 0 in float32 (5e-324) would make it NaN
    return torch.where(seen & (log_probs > NEG_INF), log_probs * penalty, log_probs)


def block_repeated_ngrams(log_probs: torch.Tensor, history: torch.Tensor, n: int = 3) -> torch.Tensor:
    """Forbid (-inf) every token that would complete an n-gram already present in the row's history.

    Args:
        log_probs: (N, V) scores of the next token (extended ids).
        history:   (N, t) int64 tokens produced so far by every row (extended ids, no BOS).
        n:         n-gram order (3: trigram blocking).

    Returns a new tensor; rows with fewer than n - 1 tokens (all rows when t < n - 1) are unchanged.
    Vectorised: the last n-1 tokens of each row are compared with every earlier (n-1)-gram, and -inf
    is scattered onto the tokens that followed the matching ones.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    steps = history.size(1)
    if steps < max(n - 1, 1):
        return log_probs
    history = history.to(log_probs.device)
    following = history[:, n - 1 :]  # (N, t-n+1): the token after each earlier (n-1)-gram
    if n == 1:
        match = torch.ones_like(following, dtype=torch.bool)
    else:
        last = history[:, steps - n + 1 :]  # (N, n-1)
        grams = history.unfold(1, n - 1, 1)[:, : steps - n + 1]  # (N, t-n+1, n-1)
        match = (grams == last.unsqueeze(1)).all(dim=-1)
    if following.numel() == 0:
        return log_probs
    # min-reduce -inf into the followers of matching (n-1)-grams, +inf (a no-op) elsewhere:
    # one pass over log_probs, deterministic even when a token follows several (n-1)-grams.
    src = torch.full(following.shape, float("inf"), dtype=log_probs.dtype, device=log_probs.device)
    src.masked_fill_(match, NEG_INF)
    return log_probs.scatter_reduce(1, following, src, reduce="amin")


# Recently used vocabularies and their (numeral, scale word) masks, by identity (a Vocabulary is not
# hashable); an entry holds the vocabulary itself, so its id cannot be reused while the entry lives.
_WORD_MASKS: dict[int, tuple[Vocabulary, torch.Tensor, torch.Tensor]] = {}
_WORD_MASKS_KEPT = 8


def numeral_mask(vocab: Vocabulary) -> torch.Tensor:
    """(V,) bool, True at the vocabulary's numerals (:func:`agentsum.data.numerals.is_numeral`):
    the ids ``numbers_from_source`` makes copy-only. Computed once per vocabulary (on the CPU)."""
    return _word_masks(vocab)[0]


def _word_masks(vocab: Vocabulary) -> tuple[torch.Tensor, torch.Tensor]:
    """(numerals (V,) bool, scale words (V,) bool) of a vocabulary, cached."""
    entry = _WORD_MASKS.get(id(vocab))
    if entry is None or entry[0] is not vocab:
        if len(_WORD_MASKS) >= _WORD_MASKS_KEPT:
            _WORD_MASKS.pop(next(iter(_WORD_MASKS)))  # the oldest
        entry = (vocab, torch.tensor([is_numeral(token) for token in vocab.itos], dtype=torch.bool),
                 torch.tensor([token in SCALES for token in vocab.itos], dtype=torch.bool))
        _WORD_MASKS[id(vocab)] = entry
    return entry[1], entry[2]


class SourceNumbers:
    """What ``numbers_from_source`` enforces on one batch: numbers as the source writes them.

    * ``no_generation`` (V,) bool: the vocabulary's numerals are copy-only (the generator's part of
      their probability is 0: :meth:`agentsum.models.pointer.CopyDistribution.log_probs`).
    * A scale word after a numeral is part of the number (``1.2 billion`` is not ``1.2 million``,
      :mod:`agentsum.data.numerals`), so after a numeral x the next token may be a scale word only
      if the source writes that scale word after x somewhere, and must be one if the source never
      writes x without one (:meth:`filter`). A copied numeral alone would otherwise let the
      generator append any scale: on ECTSum that was every number the source still lacked.

    numeral, scale: (B, V_ext) bool, the numerals and scale words of every document's extended
    vocabulary; follows[b]: numeral id -> (the scale word ids after it in document b's source,
    whether it also occurs there without one).
    """

    def __init__(self, vocab: Vocabulary, batch: Batch, device: torch.device):
        numeral, scale = _word_masks(vocab)
        self.no_generation = numeral.to(device)
        B, width = batch.batch_size, len(vocab) + batch.max_oov
        self.numeral = torch.zeros((B, width), dtype=torch.bool)
        self.scale = torch.zeros((B, width), dtype=torch.bool)
        self.numeral[:, : len(vocab)], self.scale[:, : len(vocab)] = numeral, scale
        self.follows: list[dict[int, tuple[set[int], bool]]] = []
        ext_ids = batch.src_ext_ids.tolist()  # (B, A, S)
        for b, oovs in enumerate(batch.oov_words):
            for k, word in enumerate(oovs):
                self.numeral[b, len(vocab) + k] = is_numeral(word)
                self.scale[b, len(vocab) + k] = word in SCALES
            follows: dict[int, tuple[set[int], bool]] = {}
            for a, tokens in enumerate(batch.src_tokens[b]):
                for i, token in enumerate(tokens):
                    if not is_numeral(token):
                        continue
                    scales, bare = follows.get(ext_ids[b][a][i], (set(), False))
                    if i + 1 < len(tokens) and tokens[i + 1] in SCALES:
                        scales.add(ext_ids[b][a][i + 1])
                    else:
                        bare = True
                    follows[ext_ids[b][a][i]] = (scales, bare)
            self.follows.append(follows)
        self.numeral, self.scale = self.numeral.to(device), self.scale.to(device)
        # (B, A * S) bool: the source positions that hold a numeral (what an UNK copied from would be)
        A, S = batch.src_ext_ids.shape[1:]
        self.numeral_at = torch.zeros((B, A * S), dtype=torch.bool)
        for b, agents in enumerate(batch.src_tokens):
            for a, tokens in enumerate(agents):
                for i, token in enumerate(tokens[:S]):
                    if is_numeral(token):
                        self.numeral_at[b, a * S + i] = True
        self.numeral_at = self.numeral_at.to(device)
        # per document: the numerals the source writes only scaled, with the scale words it writes
        self.scaled_only: list[dict[int, set[int]]] = [
            {x: scales for x, (scales, bare) in follows.items() if not bare} for follows in self.follows]

    def filter(self, log_probs: torch.Tensor, history: torch.Tensor, t: int, row_doc: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Forbid (-inf, in place) the scale words the source does not write after each row's last
        token, a numeral, and every other token where the source writes that numeral only scaled.
        log_probs (N, V_ext); history (N, >= t); row_doc (N,) the document of every row.

        Returns log_probs and the rows that need a scale word (N,) bool, or None when none does:
        such a row may not end (a number cut from its scale is not the source's), so if repeat
        blocking then forbids its scale words, it is a dead end rather than a finished summary.
        """
        if t == 0:
            return log_probs, None
        last = history[:, t - 1].to(log_probs.device)
        after = self.numeral[row_doc, last]
        rows = after.nonzero().squeeze(1)
        if rows.numel() == 0:
            return log_probs, None
        needs_scale = torch.zeros_like(after)
        for r, d, token in zip(rows.tolist(), row_doc[rows].tolist(), last[rows].tolist()):
            scales, bare = self.follows[d].get(token, (set(), True))  # not in the source: no scale
            allowed = torch.tensor(sorted(scales), dtype=torch.long, device=log_probs.device)
            kept = log_probs[r, allowed]
            if bare:
                log_probs[r].masked_fill_(self.scale[d], NEG_INF)
            else:
                log_probs[r] = NEG_INF
                needs_scale[r] = True
            log_probs[r, allowed] = kept
        return log_probs, needs_scale


    def forbid_numeral_unks(self, log_probs: torch.Tensor, positions: torch.Tensor, row_doc: torch.Tensor
                            ) -> torch.Tensor:
        """Forbid (-inf, in place) UNK in the rows whose UNK would be replaced by a numeral: the
        source word at the row's copy position ``positions`` (N,) (:func:`copy_positions`, the UNK
        replacement of :func:`agentsum.decoding.copying.to_words`). Such an UNK is a number written
        past the copy distribution, and past :meth:`filter`'s scale rule: a generated UNK put in as
        ``1.5`` and followed by a generated ``million`` where the call says ``$ 1.5 billion``. The
        numeral can still be copied, where the scale rule holds."""
        unk_is_numeral = self.numeral_at[row_doc.to(self.numeral_at.device), positions.to(self.numeral_at.device)]
        log_probs[:, UNK_ID] = log_probs[:, UNK_ID].masked_fill(unk_is_numeral.to(log_probs.device), NEG_INF)
        return log_probs

    def forbid_dead_ends(self, log_probs: torch.Tensor, history: torch.Tensor, t: int, row_doc: torch.Tensor,
                         n: int, window: int, last_step: bool = False) -> torch.Tensor:
        """Forbid (-inf, in place) a numeral the source writes only scaled when every scale word it
        may take would be forbidden at the next step: by n-gram blocking (the n-gram ending in the
        numeral and that scale is already in the row's history) or by ``repeat_window`` (the scale
        word is among the last ``window`` tokens). Without this look-ahead a row that writes such a
        numeral is a dead end (:meth:`filter`), and when every row of a beam reaches one at once,
        search continues from forbidden tokens: ``$ 1.5 million`` where the call says ``$ 1.5
        billion`` and the summary had stated it already. n = 0: no n-gram blocking. At the
        ``last_step`` (``max_length`` is reached after it) no scale word can follow: every such
        numeral is forbidden."""
        if not any(self.scaled_only):
            return log_probs
        if last_step:
            for r, d in enumerate(row_doc.tolist()):
                if self.scaled_only[d]:
                    log_probs[r, list(self.scaled_only[d])] = NEG_INF
            return log_probs
        if t == 0:
            return log_probs
        rows = history[:, :t].tolist()
        for r, d in enumerate(row_doc.tolist()):
            scaled_only = self.scaled_only[d]
            if not scaled_only:
                continue
            row = rows[r]
            blocked: dict[int, set[int]] = {}  # numeral -> its scale words forbidden after it
            if n >= 2 and t >= n - 1:  # earlier n-grams that begin with the row's last n - 2 tokens
                context = row[t - (n - 2):] if n > 2 else []
                for j in range(t - n + 1):
                    if row[j : j + n - 2] == context and row[j + n - 2] in scaled_only:
                        blocked.setdefault(row[j + n - 2], set()).add(row[j + n - 1])
            elif n == 1:
                blocked = {x: set(row) for x in scaled_only}
            recent = set(row[max(t + 1 - window, 0):]) if window > 1 else set()
            if recent:
                for x, scales in scaled_only.items():
                    if scales & recent:
                        blocked.setdefault(x, set()).update(scales & recent)
            for x, forbidden in blocked.items():
                if scaled_only[x] <= forbidden:
                    log_probs[r, x] = NEG_INF
        return log_probs


def _source_numbers(model: StepModel, batch: Batch, config: SearchConfig, vocab: Vocabulary | None,
                    device: torch.device) -> SourceNumbers | None:
    """The batch's :class:`SourceNumbers` when the config asks for them (``numbers_from_source``, or
    ``numbers_in_context``, which makes numerals copy-only too; else None)."""
    if not (config.numbers_from_source or config.numbers_in_context):
        return None
    option = "numbers_from_source" if config.numbers_from_source else "numbers_in_context"
    if vocab is None:
        raise ValueError(f"search.{option} needs the vocabulary, to know which ids are numerals: "
                         "pass vocab= to the search")
    if len(vocab) != model.vocab_size:
        raise ValueError(f"the vocabulary has {len(vocab)} words but the model scores {model.vocab_size}")
    if not callable(getattr(model, "step_distribution", None)):
        raise TypeError(f"search.{option} needs a model with step_distribution() (its copy "
                        "distribution, to forbid generating numerals but not copying them)")
    return SourceNumbers(vocab, batch, device)


def _constraints(batch: Batch, config: SearchConfig, vocab: Vocabulary | None, device: torch.device
                 ) -> ClaimConstraints | None:
    """The batch's :class:`~agentsum.decoding.constraints.ClaimConstraints` when the config asks for
    any (else None)."""
    asked = [n for n in ("figure_grammar", "source_periods", "numbers_in_context") if getattr(config, n)]
    if not asked:
        return None
    if vocab is None:
        raise ValueError(f"search.{asked[0]} needs the vocabulary, to read the words it constrains: "
                         "pass vocab= to the search")
    return ClaimConstraints(vocab, batch, device, figure_grammar=config.figure_grammar,
                            source_periods=config.source_periods, numbers_in_context=config.numbers_in_context,
                            max_length=config.max_length)


def _doc_min_lengths(batch: Batch, config: SearchConfig, device: torch.device) -> torch.Tensor | None:
    """(B,) each document's minimum length: ``config.min_length``, at most ``min_length_ratio`` of
    its source tokens. None where every document keeps ``config.min_length``."""
    if config.min_length_ratio is None or config.min_length == 0:
        return None
    tokens = batch.src_lengths.sum(1).to(torch.float64)
    per_doc = torch.clamp((tokens * config.min_length_ratio).ceil(), max=config.min_length).long()
    return None if bool((per_doc == config.min_length).all()) else per_doc.to(device)


# --------------------------------------------------------------------------------------------
# Shared step
# --------------------------------------------------------------------------------------------


def _check_model(model: StepModel) -> None:
    for name in ("encode", "init_state", "step"):
        if not callable(getattr(model, name, None)):
            raise TypeError(f"model lacks {name}(); see agentsum.models.base.StepModel")


def filtered_step(
    model: StepModel,
    enc: Selectable,
    state: Selectable,
    input_ids: torch.Tensor,
    history: torch.Tensor,
    t: int,
    config: SearchConfig,
    expected_width: int,
    row_oov: torch.Tensor,
    numbers: SourceNumbers | None = None,
    row_doc: torch.Tensor | None = None,
    constraints: ClaimConstraints | None = None,
    min_lengths: torch.Tensor | None = None,
) -> tuple[torch.Tensor, Selectable, StepAttention]:
    """One decoder step with the filters every strategy applies.

    ``expected_width`` is V + the batch's ``max_oov``. ``row_oov`` (N,) is the number of OOV words
    of each row's document: extended ids beyond it belong to other documents of the batch and are
    forbidden, as are PAD and BOS (never words). EOS is forbidden before ``config.min_length``;
    so is any token that repeats an n-gram of ``history[:, :t]`` (``config.ngram_block``), and
    tokens of the history are penalized by ``config.repetition_penalty``. With ``numbers``
    (``numbers_from_source``; ``row_doc`` (N,) is then the document of every row) the step reads the
    model's step distribution with the vocabulary's numerals copy-only
    (:meth:`agentsum.models.pointer.CopyDistribution.log_probs`) and a numeral's scale word must
    follow the source (:meth:`SourceNumbers.filter`). With ``constraints`` (the claim options of
    :mod:`agentsum.decoding.constraints`) a row's copy weights outside the context of its sentence's
    metric are set to 0 before the distribution is condensed, and the figure and period rules
    forbid their tokens. ``min_lengths`` (N,): each row's minimum length, where it differs from
    ``config.min_length`` (``min_length_ratio``).

    Returns (log_probs (N, V_ext) float32 with the filters applied as -inf, a fresh tensor the
    caller may modify in place; the new state; the step's attention).
    """
    if numbers is None:
        log_probs, state, attn = model.step(enc, state, input_ids)
    else:  # model.step's condensing (agentsum.models.base.step_log_probs), with copy-only words
        dist, state, attn, _ = model.step_distribution(enc, state, input_ids)
        keep = constraints.copy_keep(history, t, row_doc) if constraints is not None else None
        if keep is not None and dist.copy_weight is not None:
            dist.copy_weight = dist.copy_weight * keep.view(*dist.copy_weight.shape[:-1], -1).to(dist.copy_weight.dtype)
        log_probs = dist.log_probs(numbers.no_generation).squeeze(1)
        attn = Attention(attn.word.squeeze(1), attn.agent.squeeze(1))
    if log_probs.size(-1) != expected_width:
        raise ValueError(
            f"model.step returned {log_probs.size(-1)} scores per row, expected vocab_size + max_oov = {expected_width}"
        )
    log_probs = log_probs.float().clone()
    log_probs[:, PAD_ID] = NEG_INF
    log_probs[:, BOS_ID] = NEG_INF
    V = model.vocab_size
    if expected_width > V:
        others = torch.arange(expected_width - V, device=log_probs.device).unsqueeze(0) >= row_oov.unsqueeze(1)
        log_probs[:, V:] = log_probs[:, V:].masked_fill(others, NEG_INF)
    if min_lengths is not None:
        log_probs[:, EOS_ID] = log_probs[:, EOS_ID].masked_fill(t < min_lengths.to(log_probs.device), NEG_INF)
    elif t < config.min_length:
        log_probs[:, EOS_ID] = NEG_INF
    needs_scale = None
    # where an UNK would be copied from (its replacement), read once for both UNK rules
    unk_from = copy_positions(attn.word, attn.agent) if config.unk_replace and (numbers is not None or constraints is not None) else None
    if numbers is not None:
        log_probs, needs_scale = numbers.filter(log_probs, history, t, row_doc)
        if unk_from is not None:
            numbers.forbid_numeral_unks(log_probs, unk_from, row_doc)
    if constraints is not None:
        constraints.filter(log_probs, history, t, row_doc)
        if unk_from is not None:
            constraints.forbid_figure_unks(log_probs, unk_from, row_doc)
    n = config.ngram_block
    if n and t >= max(n - 1, 1):
        log_probs = block_repeated_ngrams(log_probs, history[:, :t], n=n)
    if config.repetition_penalty != 1.0 and t > 0:
        log_probs = penalize_repeats(log_probs, history[:, :t], config.repetition_penalty)
    if config.repeat_window and t > 0:
        recent = history[:, max(t - config.repeat_window, 0) : t].to(log_probs.device)
        log_probs.scatter_(1, recent, NEG_INF)
    if numbers is not None:  # after the repeat filters, which it looks one step past
        numbers.forbid_dead_ends(log_probs, history, t, row_doc, n=n or 0, window=config.repeat_window,
                                 last_step=t == config.max_length - 1)
    # A row whose every token is forbidden (unigram blocking over a small vocabulary before
    # min_length, say) ends: otherwise search would pick among forbidden ids. No wait for the device.
    # A number that needs its scale word does not end so (SourceNumbers.filter): that row is dead.
    stuck = torch.isneginf(log_probs).all(dim=-1)
    if needs_scale is not None:
        stuck &= ~needs_scale
    log_probs[:, EOS_ID] = torch.where(stuck, 0.0, log_probs[:, EOS_ID])
    return log_probs, state, attn


def _scored_step(model, enc, state, input_ids, history, t, config, expected_width, row_oov, numbers, row_doc,
                 constraints=None, min_lengths=None):
    """:func:`filtered_step` for greedy and beam search, which also record where each token was
    copied from: (log_probs, state, copy positions (N,) int64, agent attention (N, A) float32)."""
    log_probs, state, attn = filtered_step(model, enc, state, input_ids, history, t, config, expected_width, row_oov,
                                           numbers, row_doc, constraints, min_lengths)
    return log_probs, state, copy_positions(attn.word, attn.agent), attn.agent.float()


def _normalise(score_sum: torch.Tensor, n_steps: int, penalty: float) -> torch.Tensor:
    """Summed log-probs of hypotheses scored over n_steps decoder steps -> final score."""
    if penalty == 0:
        return score_sum
    return score_sum / max(n_steps, 1) ** penalty


def _split_rows(flags: torch.Tensor, n_true: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(indices where ``flags`` (N,) is False, indices where it is True), each in increasing order,
    as ``(~flags).nonzero()`` and ``flags.nonzero()`` give them; ``n_true`` is already on the host,
    so this waits for the device no further (a nonzero or a boolean-mask index would, on a GPU)."""
    order = flags.to(torch.int8).argsort(stable=True)  # False rows first, each group in order
    n_false = flags.numel() - n_true
    return order[:n_false], order[n_false:]


def _rows(docs: torch.Tensor, width: int) -> torch.Tensor:
    """Row indices of the `width` consecutive rows of each of the given documents."""
    return (docs.unsqueeze(1) * width + torch.arange(width, device=docs.device)).reshape(-1)


# --------------------------------------------------------------------------------------------
# Greedy search
# --------------------------------------------------------------------------------------------


@torch.no_grad()
def greedy_search(model: StepModel, batch: Batch, config: SearchConfig | None = None, *,
                  vocab: Vocabulary | None = None) -> Hypotheses:
    """Pick the most probable token at every step (respects min_length, max_length, trigram blocking).

    A row whose every token is forbidden (possible only with tiny vocabularies) ends with EOS
    (:func:`filtered_step`). ``vocab`` (the model's) is needed with ``config.numbers_from_source``.
    """
    config = config or SearchConfig(beam_size=1)
    _check_model(model)
    device = batch.src_ids.device
    numbers = _source_numbers(model, batch, config, vocab, device)
    constraints = _constraints(batch, config, vocab, device)
    doc_min = _doc_min_lengths(batch, config, device)
    B, A, T = batch.batch_size, batch.n_agents, config.max_length  # T: decoder steps at most
    width = model.vocab_size + batch.max_oov
    n_oov = torch.tensor([len(o) for o in batch.oov_words], device=device)

    enc = model.encode(batch)
    state = model.init_state(enc)
    active = torch.arange(B, device=device)  # original document of every working row
    input_ids = torch.full((B,), BOS_ID, dtype=torch.long, device=device)
    sums = torch.zeros(B, device=device)
    tok_buf = torch.full((B, T), PAD_ID, dtype=torch.long, device=device)
    copy_buf = torch.zeros((B, T), dtype=torch.long, device=device)
    attn_buf = torch.zeros((B, T, A), device=device)

    out_tok = torch.full((B, T), PAD_ID, dtype=torch.long, device=device)
    out_copy = torch.zeros((B, T), dtype=torch.long, device=device)
    out_attn = torch.zeros((B, T, A), device=device)
    out_len = torch.zeros(B, dtype=torch.long, device=device)
    out_score = torch.full((B,), NEG_INF, device=device)
    out_finished = torch.zeros(B, dtype=torch.bool, device=device)

    for t in range(T):
        log_probs, state, copy_pos, agent = _scored_step(model, enc, state, input_ids, tok_buf, t, config, width,
                                                            n_oov[active], numbers, active, constraints,
                                                            None if doc_min is None else doc_min[active])
        best_lp, tok = log_probs.max(dim=-1)
        tok = tok.masked_fill(best_lp == NEG_INF, EOS_ID)
        sums = sums + best_lp
        tok_buf[:, t] = tok
        copy_buf[:, t] = copy_pos
        attn_buf[:, t] = agent

        is_eos = tok == EOS_ID
        ended = is_eos | (t == T - 1)
        n_ended = int(ended.sum())  # the step's one wait for the device
        if n_ended:
            keep, done = _split_rows(ended, n_ended)
            docs = active[done]
            out_tok[docs] = tok_buf[done]
            out_copy[docs] = copy_buf[done]
            out_attn[docs] = attn_buf[done]
            out_len[docs] = torch.where(is_eos[done], t, t + 1)
            out_score[docs] = _normalise(sums[done], t + 1, config.length_penalty)
            out_finished[docs] = is_eos[done]
            if keep.numel() == 0:
                break
            active, sums, tok, tok_buf, copy_buf, attn_buf = (
                x.index_select(0, keep) for x in (active, sums, tok, tok_buf, copy_buf, attn_buf)
            )
            enc, state = enc.select(keep), state.select(keep)
        input_ids = tok

    n_best = []
    out_len, out_score, out_finished = out_len.tolist(), out_score.tolist(), out_finished.tolist()
    out_tok, out_copy, out_attn = out_tok.cpu(), out_copy.cpu(), out_attn.cpu()
    for b in range(B):
        n = out_len[b]
        n_best.append(
            [
                Hypothesis(
                    tokens=out_tok[b, :n].tolist(),
                    score=out_score[b],
                    copy_positions=out_copy[b, :n].tolist(),
                    agent_attention=out_attn[b, :n].clone(),
                    finished=out_finished[b],
                )
            ]
        )
    return Hypotheses.from_n_best(n_best)


@torch.no_grad()
def forced_scores(model: StepModel, batch: Batch, docs: list[int], sequences: list[list[int]],
                  finished: list[bool], config: SearchConfig, *, vocab: Vocabulary | None = None) -> list[float]:
    """The score search would give each of ``sequences`` (extended ids without EOS; sequence k is a
    summary of document ``docs[k]`` of ``batch``): the decoder is forced along its tokens, and EOS
    after them where ``finished[k]``, through the same filtered steps as greedy and beam search
    (:func:`filtered_step`: n-gram blocking, the repetition penalty and window, min_length, the number
    and claim constraints), and the filtered log-probabilities are summed and normalised as
    :attr:`Hypothesis.score` is. -inf where a filter forbids one of its tokens, as the search would
    never have written it. Each document is encoded once. ``vocab`` as for :func:`search`."""
    if not (len(docs) == len(sequences) == len(finished)):
        raise ValueError(f"{len(docs)} documents, {len(sequences)} sequences and {len(finished)} finished flags")
    if not sequences:
        return []
    _check_model(model)
    device = batch.src_ids.device
    unique = list(dict.fromkeys(docs))
    sub = batch.select(unique)
    rows = torch.tensor([unique.index(d) for d in docs], dtype=torch.long, device=device)  # each row's document in sub
    numbers = _source_numbers(model, sub, config, vocab, device)
    constraints = _constraints(sub, config, vocab, device)
    doc_min = _doc_min_lengths(sub, config, device)
    steps = [len(seq) + int(f) for seq, f in zip(sequences, finished)]
    N, T = len(sequences), max(steps)
    targets = padded_ids([list(seq) + [EOS_ID] * bool(f) for seq, f in zip(sequences, finished)], device)
    lengths = torch.tensor(steps, device=device)
    width = model.vocab_size + sub.max_oov
    n_oov = torch.tensor([len(o) for o in sub.oov_words], device=device)[rows]
    enc = model.encode(sub).select(rows)
    state = model.init_state(enc)
    input_ids = torch.full((N,), BOS_ID, dtype=torch.long, device=device)
    sums = torch.zeros(N, device=device)
    for t in range(T):
        log_probs, state, _ = filtered_step(model, enc, state, input_ids, targets, t, config, width, n_oov, numbers,
                                            rows, constraints, None if doc_min is None else doc_min[rows])
        live = t < lengths
        picked = log_probs.gather(1, targets[:, t : t + 1]).squeeze(1)
        sums = sums + torch.where(live, picked, torch.zeros_like(picked))
        input_ids = targets[:, t].masked_fill(~live, EOS_ID)  # a row past its end reads EOS, counted nowhere
    return [float(_normalise(sums[k], steps[k], config.length_penalty)) for k in range(N)]


# --------------------------------------------------------------------------------------------
# Beam search
# --------------------------------------------------------------------------------------------


@torch.no_grad()
def beam_search(model: StepModel, batch: Batch, config: SearchConfig | None = None, *,
                vocab: Vocabulary | None = None) -> Hypotheses:
    """Batched beam search with a per-document pool of finished hypotheses.

    Every step, each document's K = beam_size live hypotheses are expanded over the extended
    vocabulary (after min_length and trigram blocking) and the top 2K of the K * V_ext candidates
    are ranked. EOS candidates among the top K ranks enter the document's finished pool, which keeps
    the best K by normalised score (a (B, K) tensor with its token / copy / attention buffers); the
    best K non-EOS candidates continue (there are always at least K, since at most K candidates are
    EOS). Hypothesis bookkeeping is reordered by backpointers with ``index_select``.

    Stopping heuristic (the one of Hugging Face's ``early_stopping=False``): a document is done when
    its pool is full and its best live hypothesis, normalised at its *current* length, does not beat
    the pool's worst score. This is exact for ``length_penalty == 0`` (log-probs are <= 0, so a
    live sum can only fall); with a positive penalty a live hypothesis could in principle still
    climb by adding very likely tokens, which the heuristic ignores. A document whose live
    hypotheses are all -inf is also done. At ``max_length`` the live hypotheses of unfinished
    documents fill the empty slots of their pool (they never displace a finished hypothesis),
    and the pool is re-sorted.

    Finished documents are removed from the working rows; the loop stops when none is left.
    ``vocab`` (the model's) is needed with ``config.numbers_from_source``.
    """
    config = config or SearchConfig()
    _check_model(model)
    device = batch.src_ids.device
    numbers = _source_numbers(model, batch, config, vocab, device)
    constraints = _constraints(batch, config, vocab, device)
    doc_min = _doc_min_lengths(batch, config, device)
    B, A, T, K = batch.batch_size, batch.n_agents, config.max_length, config.beam_size  # T: steps at most
    length_penalty = config.length_penalty
    width = model.vocab_size + batch.max_oov
    n_oov = torch.tensor([len(o) for o in batch.oov_words], device=device)

    enc = model.encode(batch)
    state = model.init_state(enc)
    expand = torch.arange(B, device=device).repeat_interleave(K)
    enc, state = enc.select(expand), state.select(expand)

    active = torch.arange(B, device=device)  # original document of every working document
    live = torch.full((B, K), NEG_INF, device=device)
    live[:, 0] = 0.0  # only the first beam is alive at t = 0: no duplicate hypotheses
    input_ids = torch.full((B * K,), BOS_ID, dtype=torch.long, device=device)
    tok_buf = torch.full((B * K, T), PAD_ID, dtype=torch.long, device=device)
    copy_buf = torch.zeros((B * K, T), dtype=torch.long, device=device)
    attn_buf = torch.zeros((B * K, T, A), device=device)

    pool_score = torch.full((B, K), NEG_INF, device=device)  # sorted, best first
    pool_tok = torch.full((B, K, T), PAD_ID, dtype=torch.long, device=device)
    pool_copy = torch.zeros((B, K, T), dtype=torch.long, device=device)
    pool_attn = torch.zeros((B, K, T, A), device=device)
    pool_len = torch.zeros((B, K), dtype=torch.long, device=device)
    pool_finished = torch.zeros((B, K), dtype=torch.bool, device=device)

    n_cand = min(2 * K, K * width)
    for t in range(T):
        n_live = active.numel()
        row_doc = active.repeat_interleave(K)
        log_probs, state, copy_pos, agent = _scored_step(
            model, enc, state, input_ids, tok_buf, t, config, width, n_oov[active].repeat_interleave(K), numbers,
            row_doc, constraints, None if doc_min is None else doc_min[row_doc]
        )
        cand = log_probs.add_(live.reshape(-1, 1))
        cand = cand.reshape(n_live, K * width)
        top_score, top_idx = cand.topk(n_cand, dim=1)  # (n_live, 2K), sorted
        top_beam = torch.div(top_idx, width, rounding_mode="floor")
        top_tok = top_idx % width
        base = (torch.arange(n_live, device=device) * K).unsqueeze(1)
        top_src = base + top_beam  # (n_live, 2K) working row that produced each candidate
        top_eos = top_tok == EOS_ID

        # --- finished candidates: EOS among the top K ranks, merged into the pool ----------
        new_fin = top_eos[:, :K] & torch.isfinite(top_score[:, :K])
        fin_score = torch.where(new_fin, _normalise(top_score[:, :K], t + 1, length_penalty), NEG_INF)
        merged = torch.cat([pool_score[active], fin_score], dim=1)  # (n_live, 2K)
        new_score, pick = merged.topk(K, dim=1)  # the pool's scores after the merge, with or without EOS

        # --- live candidates: the best K non-EOS ones, in rank order ------------------------
        keep = top_eos.to(torch.int8).sort(dim=1, stable=True).indices[:, :K]  # non-EOS first
        live = top_score.gather(1, keep)
        # early stopping: pool full (else its worst is -inf) and the best live hypothesis, normalised
        # at its current length, no better than the pool's worst; live is sorted: column 0 is the best
        done = _normalise(live[:, 0], t + 1, length_penalty) <= new_score[:, -1]
        # the step's one wait for the device: did any EOS finish, and how many documents are done
        any_fin, n_done = torch.stack([new_fin.any().long(), done.sum()]).tolist()

        if any_fin:
            src = top_src[:, :K].reshape(-1)
            c_tok = tok_buf.index_select(0, src).view(n_live, K, T)  # column t (EOS) is still PAD
            c_copy = copy_buf.index_select(0, src).view(n_live, K, T)
            c_attn = attn_buf.index_select(0, src).view(n_live, K, T, A)
            rows = torch.arange(n_live, device=device).unsqueeze(1)
            pool_score[active] = new_score
            pool_tok[active] = torch.cat([pool_tok[active], c_tok], 1)[rows, pick]
            pool_copy[active] = torch.cat([pool_copy[active], c_copy], 1)[rows, pick]
            pool_attn[active] = torch.cat([pool_attn[active], c_attn], 1)[rows, pick]
            c_len = torch.full((n_live, K), t, dtype=torch.long, device=device)
            pool_len[active] = torch.cat([pool_len[active], c_len], 1)[rows, pick]
            c_fin = torch.ones((n_live, K), dtype=torch.bool, device=device)
            pool_finished[active] = torch.cat([pool_finished[active], c_fin], 1)[rows, pick]

        new_tok = top_tok.gather(1, keep).reshape(-1)
        src = top_src.gather(1, keep).reshape(-1)
        tok_buf = tok_buf.index_select(0, src)
        copy_buf = copy_buf.index_select(0, src)
        attn_buf = attn_buf.index_select(0, src)
        tok_buf[:, t] = new_tok
        copy_buf[:, t] = copy_pos.index_select(0, src)
        attn_buf[:, t] = agent.index_select(0, src)
        state = state.select(src)
        input_ids = new_tok

        if t == T - 1:
            break
        # --- shrinking: finished documents leave the working rows ---------------------------
        if n_done:
            keep_docs, _ = _split_rows(done, n_done)
            if keep_docs.numel() == 0:
                active = keep_docs
                break
            keep_rows = _rows(keep_docs, K)
            active = active.index_select(0, keep_docs)
            live = live.index_select(0, keep_docs)
            tok_buf, copy_buf, attn_buf, input_ids = (
                x.index_select(0, keep_rows) for x in (tok_buf, copy_buf, attn_buf, input_ids)
            )
            enc, state = enc.select(keep_rows), state.select(keep_rows)

    # --- max_length reached: live hypotheses fill the empty pool slots --------------------
    n_live = active.numel()
    if n_live > 0:
        slots = torch.arange(K, device=device).unsqueeze(0)  # (1, K)
        filled = torch.isfinite(pool_score[active]).sum(dim=1, keepdim=True)  # (n_live, 1)
        take = (slots - filled).clamp(min=0)  # live hypothesis for every empty slot
        fill = slots >= filled
        live_norm = _normalise(live, T, length_penalty).gather(1, take)
        rows = torch.arange(n_live, device=device).unsqueeze(1)
        src = (rows * K + take).reshape(-1)
        l_tok = tok_buf.index_select(0, src).view(n_live, K, T)
        l_copy = copy_buf.index_select(0, src).view(n_live, K, T)
        l_attn = attn_buf.index_select(0, src).view(n_live, K, T, A)
        score = torch.where(fill, live_norm, pool_score[active])
        order = score.argsort(dim=1, descending=True, stable=True)
        fill_steps, fill_attn = fill.unsqueeze(-1), fill.view(n_live, K, 1, 1)
        pool_score[active] = score.gather(1, order)
        pool_tok[active] = torch.where(fill_steps, l_tok, pool_tok[active])[rows, order]
        pool_copy[active] = torch.where(fill_steps, l_copy, pool_copy[active])[rows, order]
        pool_attn[active] = torch.where(fill_attn, l_attn, pool_attn[active])[rows, order]
        pool_len[active] = torch.where(fill, T, pool_len[active])[rows, order]
        pool_finished[active] = torch.where(fill, False, pool_finished[active])[rows, order]

    # --- to Python (after decoding) -------------------------------------------------------
    scores, lens, fins = pool_score.tolist(), pool_len.tolist(), pool_finished.tolist()
    pool_tok, pool_copy, pool_attn = pool_tok.cpu(), pool_copy.cpu(), pool_attn.cpu()
    n_best: list[list[Hypothesis]] = []
    for b in range(B):
        hyps = []
        for k in range(K):
            if k > 0 and not math.isfinite(scores[b][k]):
                break  # keep at least one (possibly empty, -inf) hypothesis per document
            n = lens[b][k]
            hyps.append(
                Hypothesis(
                    tokens=pool_tok[b, k, :n].tolist(),
                    score=scores[b][k],
                    copy_positions=pool_copy[b, k, :n].tolist(),
                    agent_attention=pool_attn[b, k, :n].clone(),
                    finished=fins[b][k],
                )
            )
        n_best.append(hyps)
    return Hypotheses.from_n_best(n_best)


# --------------------------------------------------------------------------------------------
# Sampling (self-critical RL)
# --------------------------------------------------------------------------------------------


@torch.no_grad()
def sample_and_greedy(model: StepModel, batch: Batch, config: SearchConfig, *, enc: Selectable | None = None,
                      generator: torch.Generator | None = None, vocab: Vocabulary | None = None
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """A multinomial sample and the greedy sequence of every document, decoded in one batched loop
    (2B rows): the sample and the baseline of self-critical RL (DCA eq 20).

    Both halves go through :func:`filtered_step`, so they obey the filters of greedy and beam
    search and ``config`` (RL uses ``min_length=0`` and no trigram blocking: the policy itself is
    sampled); the greedy half is :func:`greedy_search`'s sequence. ``enc`` is ``model.encode(batch)``
    when the caller has it already. A row whose every token is forbidden ends with EOS. ``vocab``
    (the model's) is needed with ``config.numbers_from_source``.

    Returns (sample, greedy), each (B, T) extended ids, T = ``config.max_length``, ending with EOS
    where the model ended them, PAD afterwards.
    """
    _check_model(model)
    device = batch.src_ids.device
    B, T = batch.batch_size, config.max_length
    numbers = _source_numbers(model, batch, config, vocab, device)
    constraints = _constraints(batch, config, vocab, device)
    doc_min = _doc_min_lengths(batch, config, device)
    both = torch.cat([torch.arange(B), torch.arange(B)]).to(device)  # rows 0..B-1 sample, B..2B-1 greedy
    enc_both = (model.encode(batch) if enc is None else enc).select(both)
    state = model.init_state(enc_both)
    width = model.vocab_size + batch.max_oov
    n_oov = torch.tensor([len(o) for o in batch.oov_words], device=device)[both]
    tokens = torch.full((2 * B, T), PAD_ID, dtype=torch.long, device=device)
    done = torch.zeros(2 * B, dtype=torch.bool, device=device)
    inputs = torch.full((2 * B,), BOS_ID, dtype=torch.long, device=device)
    for t in range(T):
        log_probs, state, _ = filtered_step(model, enc_both, state, inputs, tokens, t, config, width, n_oov,
                                            numbers, both, constraints, None if doc_min is None else doc_min[both])
        sampled = torch.multinomial(log_probs[:B].exp(), 1, generator=generator).squeeze(1)
        chosen = torch.cat([sampled, log_probs[B:].argmax(-1)])
        chosen = chosen.masked_fill(done, PAD_ID)
        tokens[:, t] = chosen
        done = done | (chosen == EOS_ID)
        if bool(done.all()):  # the step's one wait for the device
            break
        inputs = chosen.masked_fill(done, EOS_ID)
    return tokens[:B], tokens[B:]


def search(model: StepModel, batch: Batch, config: SearchConfig | None = None, *,
           vocab: Vocabulary | None = None, summary_lm=None) -> Hypotheses:
    """Greedy decoding when ``config.beam_size == 1``, beam search otherwise (its n-best reranked
    with ``config.attribution_rerank`` or ``config.role_names`` and rescored with ``summary_lm``, an
    :class:`~agentsum.models.summary_lm.NgramLM`, at ``config.lm_weight``). ``vocab`` (the model's)
    is needed with ``config.numbers_from_source``, ``config.attribution_rerank``, ``config.role_names`` and
    ``config.lm_weight``."""
    config = config or SearchConfig()
    if config.beam_size == 1:
        return greedy_search(model, batch, config, vocab=vocab)
    reranked = config.attribution_rerank or config.role_names or config.lm_weight > 0
    if reranked and vocab is None:
        raise ValueError("search.attribution_rerank, search.role_names and search.lm_weight need the model's "
                         "vocabulary (vocab=)")
    if config.lm_weight > 0 and summary_lm is None:
        raise ValueError("search.lm_weight needs the model's summary language model (summary_lm=)")
    hyps = beam_search(model, batch, config, vocab=vocab)
    if reranked:
        def scorer(b: int, sequences: list[list[int]], finished: list[bool]) -> list[float]:
            return forced_scores(model, batch, [b] * len(sequences), sequences, finished, config, vocab=vocab)

        hyps = rerank(hyps, batch, vocab, attribution=config.attribution_rerank, lm=summary_lm,
                      lm_weight=config.lm_weight, unk_replace=config.unk_replace,
                      scorer=scorer if config.role_names else None)
    return hyps
