"""Where every word of a summary came from: copied or generated, from which source word and agent,
and which source sentences each summary sentence rests on.

A pointer-generator writes each word w from the mixture (``agentsum.models.pointer``)

    P(w) = gen_weight * P_voc(w) + sum_{j : src[j] = w} copy_weight[j]

so the two parts of the probability of the word it wrote are known at every step. For each word:

* ``generated`` = gen_weight * P_voc(w) (0 for an out-of-vocabulary word) and ``copied`` = the copy
  mass on the source positions holding w; the word is marked **copied** when the copy part is the
  larger one. ``p_gen`` is the switch, gen_weight (DCA's multi-agent pointer: sum_a g_a p_a, eq 15);
  ``copy_mass`` is the copied share of the word's probability, copied / (generated + copied).
* ``source``: the source position the word drew most from. For a word the source holds, the
  position of the largest copy weight among those holding it (where the copy came from); for any
  other word, the position of the largest cascaded attention l^t_{a,i} g^t_a (eq 8, 10: what the
  decoder read most, and what UNK replacement would copy). The position is given as the agent, the
  token index within the agent, the token index in the article as the agents read it (the agents are
  contiguous, in order), and the word as written in the article.
* ``agent``: the agent of that position.

For each summary sentence, ``source_sentences``: the source sentences holding the most of the
summed cascaded attention of its words, largest first, until they hold half of it, at most three;
and, whatever their attention and beyond the three, the source sentence each of its copied numbers
was copied from (the sentence holding the word's ``agent``/``index``); returned in document order
with their share. Choice: attention, not copy weights, because a sentence's generated words (verbs,
function words) rest on the source too; summed over the sentence's words, because one word's
attention is too narrow to name a sentence; half the mass, at most three, because a summary
sentence usually fuses one to three source sentences and more would not help a reader check it. A
copied number is the exception: its few tokens hold little of the sentence's mass, yet the sentence
it came from is the evidence a reader checks the figure against, and leaving it out would point
them at sentences that do not state it.

The numbers come from a teacher-forced pass over the written summary, which computes what the
step-by-step search computed (the service's attention is checked against the search's records the
same way). A model without a copy mechanism has no copy part to report: :class:`ProvenanceError`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from agentsum.data.batch import Batch
from agentsum.data.numerals import is_numeral
from agentsum.decoding.copying import cascaded_attention, padded_ids, teacher_forced

__all__ = ["ProvenanceError", "provenance", "sentence_sources", "SENTENCE_MASS", "MAX_SENTENCES"]

#: A summary sentence's source sentences hold at least this share of its summed attention ...
SENTENCE_MASS = 0.5
#: ... and are at most this many.
MAX_SENTENCES = 3
#: Digits kept for probabilities and shares.
DIGITS = 4


class ProvenanceError(ValueError):
    """A model that cannot say where its words came from (no copy mechanism)."""


@torch.no_grad()
def provenance(model, batch: Batch, token_ids: Sequence[Sequence[int]]) -> list[list[dict]]:
    """Per document, per written token (extended ids, as the search returned them): ``copied``,
    ``p_gen``, ``copy_mass``, ``generated`` and ``copied_probability`` (the two parts of the word's
    probability), ``agent``, ``index`` (within the agent), ``position`` (in the agents' tokens read
    in order) and ``attention`` (the cascaded attention over source positions, (L,) float32, for
    :func:`sentence_sources`; not meant for output). ``batch`` is on the model's device."""
    out = model(teacher_forced(batch, padded_ids(token_ids, batch.src_ids.device)))
    dist = out.dist
    if dist.copy_weight is None or dist.gen_weight is None:
        raise ProvenanceError("provenance needs a pointer-generator (model.pointer): this checkpoint writes every "
                              "word from its vocabulary, so no word is copied from the source")
    B, A, S = batch.src_ids.shape
    ids = padded_ids(token_ids, batch.src_ids.device)[:, : dist.copy_weight.size(1)]  # (B, T)
    V = dist.vocab_size
    p_voc = F.softmax(dist.vocab_logits.float(), dim=-1).gather(-1, ids.clamp_max(V - 1).unsqueeze(-1)).squeeze(-1)
    generated = torch.where(ids < V, dist.gen_weight.float() * p_voc, torch.zeros_like(p_voc))  # (B, T)
    copy_weight = dist.copy_weight.float()  # (B, T, L)
    holds = batch.src_ext_ids.reshape(B, 1, A * S) == ids.unsqueeze(-1)  # (B, T, L): positions holding the word
    copied_weight = copy_weight * holds
    copied = copied_weight.sum(-1)  # (B, T)
    attention = cascaded_attention(out.attention.word, out.attention.agent)  # (B, T, L)
    drew = torch.where(copied > 0, copied_weight.argmax(-1), attention.argmax(-1))  # (B, T)
    lengths = batch.src_lengths.tolist()
    rows = []
    for b, tokens in enumerate(token_ids):
        offsets = [sum(lengths[b][:a]) for a in range(A)]
        row = []
        for t in range(len(tokens)):
            agent, index = divmod(int(drew[b, t]), S)
            g, c = float(generated[b, t]), float(copied[b, t])
            row.append({
                "copied": c > g,
                "p_gen": round(float(dist.gen_weight[b, t]), DIGITS),
                "copy_mass": round(c / (g + c), DIGITS) if g + c > 0 else 0.0,
                "generated": g,
                "copied_probability": c,
                "agent": agent,
                "index": index,
                "position": offsets[agent] + index,
                "attention": attention[b, t],
            })
        rows.append(row)
    return rows


def sentence_sources(words: Sequence[dict], sentences: Sequence[Sequence[str]], source_lines: Sequence[Sequence[int]],
                     tokens_per_agent: int, agent_lengths: Sequence[int]) -> list[list[dict]]:
    """For each summary sentence (token lists whose lengths add up to ``len(words)``), its source
    sentences: ``{"agent", "line", "start", "end", "share"}`` (``line``: the sentence's number
    within its agent, from 0; ``start``/``end``: token indices within the agent; ``share``: its part
    of the summary sentence's summed attention), chosen as the module says, in document order.
    ``words``: :func:`provenance`'s rows (``attention``; for a numeral token, also ``copied``,
    ``agent`` and ``index``). ``source_lines``: per agent, the token indices that begin a sentence;
    ``agent_lengths``: the agents' token counts; ``tokens_per_agent``: S of the batch the attention
    came from."""
    spans = []  # (agent, line, start, end) of every source sentence
    for a, starts in enumerate(source_lines):
        bounds = [*starts, agent_lengths[a]]
        spans += [(a, k, s, e) for k, (s, e) in enumerate(zip(bounds, bounds[1:])) if e > s]
    out, start = [], 0
    for sentence in sentences:
        end = start + len(sentence)
        if end == start or not spans:
            out.append([])
            start = end
            continue
        mass = torch.stack([w["attention"] for w in words[start:end]]).sum(0).view(-1, tokens_per_agent)  # (A, S)
        totals = [float(mass[a, s:e].sum()) for a, _, s, e in spans]
        whole = sum(totals) or 1.0
        chosen, held = set(), 0.0
        for k in sorted(range(len(spans)), key=lambda k: -totals[k]):
            if held >= SENTENCE_MASS * whole * (1 - 1e-6) or len(chosen) == MAX_SENTENCES or totals[k] <= 0:
                break
            chosen.add(k)
            held += totals[k]
        chosen |= number_sentences(words[start:end], sentence, spans)
        out.append([{"agent": spans[k][0], "line": spans[k][1], "start": spans[k][2], "end": spans[k][3],
                     "share": round(totals[k] / whole, DIGITS)} for k in sorted(chosen)])
        start = end
    return out


def number_sentences(words: Sequence[dict], tokens: Sequence[str], spans: Sequence[tuple[int, int, int, int]]
                     ) -> set[int]:
    """Which of ``spans`` (source sentences: agent, line, start, end) the copied numerals among
    ``tokens`` were copied from (``words``: their provenance rows, aligned with ``tokens``)."""
    found = set()
    for token, word in zip(tokens, words):
        if not is_numeral(token.lower()) or not word["copied"]:
            continue
        found.update(k for k, (a, _, s, e) in enumerate(spans) if a == word["agent"] and s <= word["index"] < e)
    return found
