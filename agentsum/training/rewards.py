"""ROUGE rewards on token ids for self-critical RL (DCA, Celikyilmaz et al. 2018, section 3, eq 20-22).

The RL step scores a sampled and a greedy summary for every document of every batch, and with
the intermediate rewards of eq 22 it needs the score of *every sentence prefix* of the sample:

    r(o_q) = r([o_1 .. o_q]) - r([o_1 .. o_{q-1}])

Detokenizing and calling Google's ``rouge-score`` would cost a string round trip, a regex tokenizer
and an O(m n) pure-Python DP table per call, and one call per prefix. Here scores are computed on
the id lists directly:

* ROUGE-L uses the bit-parallel LCS of Allison & Dix (1986): each candidate token costs a handful
  of big-int operations on a bit vector over the reference, and after each token the popcount of
  that vector is the LCS of the candidate prefix, so all prefix scores come out of one pass.
* ROUGE-N counts clipped n-gram overlaps with ``collections.Counter``; prefix scores are kept
  incrementally (each new n-gram adds at most one clipped hit).

The definitions are exactly ``rouge_score.rouge_scorer._score_lcs`` / ``_score_ngrams`` (no
stemming; tokens are whatever ids are given), with the same float operations in the same order,
so the floats are identical to ``RougeScorer(..., use_stemmer=False)`` run with a whitespace
tokenizer on the ids written as strings (tests/training/test_rewards.py checks this).

Ids are compared as ids: pass references in the same id space as the candidates (the extended
vocabulary when the pointer copies OOV words), and note that UNK in a candidate matches UNK in the
reference, which text-level ROUGE on the original words would not count.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from typing import NamedTuple

import torch

from agentsum.data.vocab import EOS_ID, PAD_ID

KINDS = ("rouge1", "rouge2", "rougeL")


class Score(NamedTuple):
    """Same fields as ``rouge_score.scoring.Score``."""

    precision: float
    recall: float
    fmeasure: float


ZERO = Score(0.0, 0.0, 0.0)


def _fmeasure(precision: float, recall: float) -> float:
    # rouge_score.scoring.fmeasure, same expression so the floats match bit for bit.
    if precision + recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.0


# ---------------------------------------------------------------------------------------------
# LCS


def _position_masks(reference: Sequence[int]) -> dict[int, int]:
    """For each symbol, the set of its positions in ``reference`` as a Python int bitmask."""
    masks: dict[int, int] = {}
    get = masks.get
    for j, tok in enumerate(reference):
        masks[tok] = get(tok, 0) | (1 << j)
    return masks


def lcs_prefix_lengths(candidate: Sequence[int], reference: Sequence[int]) -> list[int]:
    """Element i is LCS(candidate[:i+1], reference), for every i, in one pass.

    Bit-parallel LCS (L. Allison and T. I. Dix, "A bit-string longest-common-subsequence
    algorithm", Information Processing Letters 23(5), 1986; see also H. Hyyrö, "Bit-parallel
    LCS-length computation revisited", AWOCA 2004). Row i of the LCS DP table over the reference
    is encoded by the bit vector S whose bit j is set where the row steps up
    (L[i][j+1] - L[i][j] = 1), so popcount(S) = L[i][m]. With M[c] the positions of symbol c in the
    reference, one row update is

        X = M[c] | S;  S = X & ((X - ((S << 1) | 1)) ^ X)

    Python ints are unbounded two's-complement, so the subtraction may go negative and the
    ``& X`` still confines S to the reference's m bits. A token absent from the reference leaves S
    unchanged (M[c] = 0 gives S & -1), so it is skipped. Cost: O(len(candidate)) big-int ops of
    m / 64 words each, instead of the O(m n) Python steps of rouge-score's DP table.
    """
    masks = _position_masks(reference)
    out: list[int] = []
    append = out.append
    get = masks.get
    s = 0
    lcs = 0
    for tok in candidate:
        m = get(tok)
        if m is not None:
            x = m | s
            s = x & ((x - ((s << 1) | 1)) ^ x)
            lcs = s.bit_count()
        append(lcs)
    return out


def lcs_length(candidate: Sequence[int], reference: Sequence[int]) -> int:
    """LCS(candidate, reference): the same loop as lcs_prefix_lengths without per-token popcounts."""
    masks = _position_masks(reference)
    get = masks.get
    s = 0
    for tok in candidate:
        m = get(tok)
        if m is not None:
            x = m | s
            s = x & ((x - ((s << 1) | 1)) ^ x)
    return s.bit_count()


# ---------------------------------------------------------------------------------------------
# Whole-sequence scores (rouge_score's definitions)


def rouge_l(candidate: Sequence[int], reference: Sequence[int]) -> Score:
    """ROUGE-L as ``rouge_scorer._score_lcs``: P = LCS/|cand|, R = LCS/|ref|; 0 if either is empty."""
    if not candidate or not reference:
        return ZERO
    lcs = lcs_length(candidate, reference)
    precision = lcs / len(candidate)
    recall = lcs / len(reference)
    return Score(precision, recall, _fmeasure(precision, recall))


def _ngrams(tokens: Sequence[int], n: int) -> Counter:
    if n == 1:
        return Counter(tokens)
    return Counter(zip(*(tokens[i:] for i in range(n))))


def rouge_n(candidate: Sequence[int], reference: Sequence[int], n: int) -> Score:
    """ROUGE-N as ``rouge_scorer._score_ngrams``: clipped n-gram overlap over max(count, 1)."""
    if n <= 0:
        raise ValueError(f"rouge-n requires positive n, got {n}")
    ref = _ngrams(reference, n)
    cand = _ngrams(candidate, n)
    if len(ref) > len(cand):
        ref, cand = cand, ref  # min(a, b) is symmetric: iterate over the smaller Counter
    overlap = sum(min(c, cand[g]) for g, c in ref.items())
    precision = overlap / max(len(candidate) - n + 1, 1)
    recall = overlap / max(len(reference) - n + 1, 1)
    return Score(precision, recall, _fmeasure(precision, recall))


def _check_kind(kind: str) -> int:
    """0 for rougeL, else n for rougeN."""
    if kind == "rougeL":
        return 0
    if kind.startswith("rouge") and kind[5:].isdigit() and int(kind[5:]) > 0:
        return int(kind[5:])
    raise ValueError(f"unknown ROUGE kind {kind!r}; expected one of {KINDS} (or rougeN)")


def score(candidate: Sequence[int], reference: Sequence[int], kind: str = "rougeL") -> Score:
    n = _check_kind(kind)
    return rouge_l(candidate, reference) if n == 0 else rouge_n(candidate, reference, n)


# ---------------------------------------------------------------------------------------------
# Sentence (intermediate) rewards, eq 22


def sentence_ends(candidate: Sequence[int], sentence_end_ids: Collection[int]) -> list[int]:
    """Exclusive end index of each sentence: a sentence ends after a token in sentence_end_ids;
    trailing tokens without one form a last sentence."""
    ends = [i + 1 for i, tok in enumerate(candidate) if tok in sentence_end_ids]
    if candidate and (not ends or ends[-1] != len(candidate)):
        ends.append(len(candidate))
    return ends


def prefix_fmeasures(candidate: Sequence[int], reference: Sequence[int], ends: Sequence[int],
                     kind: str = "rougeL") -> list[float]:
    """F1 of candidate[:e] against reference for each e in ``ends`` (increasing, each >= 1).

    Each value equals ``score(candidate[:e], reference, kind).fmeasure`` exactly.
    """
    n = _check_kind(kind)
    if not ends:
        return []
    if not reference:
        return [0.0] * len(ends)
    ref_len = len(reference)
    out = []
    if n == 0:
        lcs = lcs_prefix_lengths(candidate[: ends[-1]], reference)
        for e in ends:
            precision = lcs[e - 1] / e
            recall = lcs[e - 1] / ref_len
            out.append(_fmeasure(precision, recall))
        return out
    ref = _ngrams(reference, n)
    ref_count = max(ref_len - n + 1, 1)
    seen: Counter = Counter()
    overlap = 0
    start = 0  # next n-gram start index to add
    for e in ends:
        # n-grams wholly inside candidate[:e] start at 0 .. e - n
        for i in range(start, e - n + 1):
            g = candidate[i] if n == 1 else tuple(candidate[i:i + n])
            seen[g] += 1
            if seen[g] <= ref.get(g, 0):
                overlap += 1
        start = max(start, e - n + 1)
        precision = overlap / max(e - n + 1, 1)
        recall = overlap / ref_count
        out.append(_fmeasure(precision, recall))
    return out


def sentence_rewards(candidate: Sequence[int], reference: Sequence[int], sentence_end_ids: Collection[int],
                     kind: str = "rougeL") -> tuple[list[int], list[float]]:
    """Intermediate rewards of eq 22: (sentence end indices, r_q = F1(o_1..o_q) - F1(o_1..o_{q-1})).

    F1 of the empty prefix is 0, so the rewards telescope to the F1 of the whole candidate (up to
    float rounding). A sentence that adds no overlap (e.g. one repeating an earlier sentence whose
    words the reference holds only once) lowers precision at unchanged recall: its reward is <= 0,
    which is how these rewards discourage repetition. For rougeL all prefixes come from one
    bit-parallel LCS pass (lcs_prefix_lengths).
    """
    ends, rewards, _ = _sentence_rewards(candidate, reference, sentence_end_ids, kind)
    return ends, rewards


def _sentence_rewards(candidate, reference, sentence_end_ids, kind):
    """(ends, rewards, F1 of the whole candidate)."""
    if not isinstance(sentence_end_ids, (set, frozenset)):
        sentence_end_ids = frozenset(sentence_end_ids)
    ends = sentence_ends(candidate, sentence_end_ids)
    fs = prefix_fmeasures(candidate, reference, ends, kind)
    rewards = []
    prev = 0.0
    for f in fs:
        rewards.append(f - prev)
        prev = f
    return ends, rewards, prev


# ---------------------------------------------------------------------------------------------
# Batched tensor plumbing


def strip_ids(row, eos_id: int = EOS_ID, pad_id: int = PAD_ID) -> list[int]:
    """A row of a (B, T) id tensor (or any int sequence) as a list, cut at the first EOS or PAD.

    EOS and PAD are not words: leaving them in would let a trailing EOS match the reference's.
    """
    ids = row.tolist() if isinstance(row, torch.Tensor) else list(row)
    for i, tok in enumerate(ids):
        if tok == eos_id or tok == pad_id:
            return ids[:i]
    return ids


def _rows(ids: torch.Tensor, eos_id: int, pad_id: int) -> list[list[int]]:
    if ids.dim() != 2:
        raise ValueError(f"expected a (B, T) id tensor, got shape {tuple(ids.shape)}")
    # one device->host copy for the whole batch instead of per-element indexing
    return [strip_ids(row, eos_id, pad_id) for row in ids.detach().cpu().tolist()]


def sequence_rewards(candidates: torch.Tensor, references: torch.Tensor, eos_id: int = EOS_ID, pad_id: int = PAD_ID,
                     kind: str = "rougeL", dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """(B,) ROUGE F1 of each candidate row against its reference row, both cut at the first EOS/PAD.

    This is r(y) of eq 20 for a sampled or greedy batch; the result is on candidates' device.
    """
    if candidates.size(0) != references.size(0):
        raise ValueError(f"{candidates.size(0)} candidates for {references.size(0)} references")
    _check_kind(kind)
    cands = _rows(candidates, eos_id, pad_id)
    refs = _rows(references, eos_id, pad_id)
    values = [score(c, r, kind).fmeasure for c, r in zip(cands, refs)]
    return torch.tensor(values, dtype=dtype, device=candidates.device)


def sentence_reward_matrix(candidates: torch.Tensor, references: torch.Tensor, sentence_end_ids: Collection[int],
                           eos_id: int = EOS_ID, pad_id: int = PAD_ID, kind: str = "rougeL",
                           dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token intermediate rewards for a batch: (rewards (B, T), totals (B,)).

    Each token of sentence q gets r(o_q) (eq 22), so ``(rewards * logp).sum(1)`` weights each
    sentence's log-probability by its own reward. The EOS token, if present, belongs to the last
    sentence (it was sampled and its log-probability is in the loss); positions after it, or from
    the first PAD on, get 0. ``totals`` is the whole-candidate F1, the sum of the sentence rewards
    up to float rounding; it equals what sequence_rewards returns, from the same pass.
    """
    if candidates.size(0) != references.size(0):
        raise ValueError(f"{candidates.size(0)} candidates for {references.size(0)} references")
    _check_kind(kind)
    ends_set = frozenset(sentence_end_ids)
    cand_full = candidates.detach().cpu().tolist()
    refs = _rows(references, eos_id, pad_id)
    B, T = candidates.shape
    matrix: list[list[float]] = []
    totals: list[float] = []
    for ids, ref in zip(cand_full, refs):
        cand = strip_ids(ids, eos_id, pad_id)
        ends, rewards, total = _sentence_rewards(cand, ref, ends_set, kind)
        row = [0.0] * T
        start = 0
        for end, r in zip(ends, rewards):
            row[start:end] = [r] * (end - start)
            start = end
        k = len(cand)
        if k < T and ids[k] == eos_id and rewards:
            row[k] = rewards[-1]
        matrix.append(row)
        totals.append(total)
    device = candidates.device
    return (torch.tensor(matrix, dtype=dtype, device=device).reshape(B, T),
            torch.tensor(totals, dtype=dtype, device=device))

