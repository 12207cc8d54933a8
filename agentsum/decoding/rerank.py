"""Reranking the n-best list: by who did what (``search.attribution_rerank``) and with a summary
language model (``search.lm_weight``).

Beam search returns, per document, its hypotheses best first. For a dialogue source (``name :
text`` turns, :meth:`agentsum.data.attribution.Dialogue.from_tokens`), the rerank reads every
hypothesis as words (OOV ids and UNK replacement as the summary will show them,
:func:`agentsum.decoding.copying.to_words`), counts its misattributed sentences
(:func:`agentsum.data.attribution.check_sentence`: a sentence whose subject wrote none of its content
words while another participant wrote two or more, or that names its subject again in another role)
and keeps the best-scored hypothesis among those with the fewest. A beam with no misattributed
hypothesis, or with all of them equally so, is left as the search ranked it; so is a source that is
not a dialogue.

Only hypotheses that ended as the best one did are candidates (finished, when the best finished), so
the rerank never trades a complete summary for one cut at ``max_length``.

The choice, and why: the check is the one ``agentsum evaluate`` reports and the RL attribution
reward (``train.attribution_reward``) penalises. Against hand labels a flag is right about 8 times in
10 and sees about 3 wrong-person errors in 10 (``benchmarks/results/samsum/labels/``), so a
hypothesis it prefers is rarely worse, and most wrong persons it cannot see. Applied in search,
rather than to a sentence after the fact (swapping the subject for the person whose words it holds),
it only ever picks a summary the model itself wrote: a subject swap would write sentences the model
never scored, with a new name whose verb form and pronouns were chosen for the old one.

With ``search.lm_weight`` w > 0, each candidate scores its search score (log-probability per step)
plus w times the summary LM's log-probability per token (:class:`agentsum.models.summary_lm.NgramLM`,
the model's ``NAME.lm.json.gz``; a dialogue's participants as one ``<name>`` class, ``</s>``
counted), and the best such score wins among the fewest misattributed. Any source is rescored, a
dialogue or not. Choice: the LM as a rescorer of whole hypotheses, not a term in every beam step, so
that the beam explores as the model alone would and the LM only judges finished summaries; w = 0.1
for the shipped dialogue model, chosen on SAMSum validation rows 100-299 (``benchmarks/studies/lm_rescore.py``).
"""

from __future__ import annotations

from agentsum.data.attribution import Dialogue, check_sentence
from agentsum.data.batch import Batch
from agentsum.data.text import split_generated
from agentsum.data.vocab import Vocabulary
from agentsum.decoding.copying import to_words
from agentsum.models.summary_lm import NgramLM, with_name_class

__all__ = ["attribution_rerank", "dialogue_of", "misattributed_sentences", "rerank"]


def dialogue_of(batch: Batch, b: int) -> Dialogue | None:
    """Document b's dialogue, read from its source tokens in agent order; None where it is not one."""
    return Dialogue.from_tokens(batch.source_tokens(b))


def misattributed_sentences(words: list[str], dialogue: Dialogue) -> int:
    """How many sentences of a summary (its words, cut as :func:`agentsum.data.text.split_generated`
    cuts generated tokens) are misattributed."""
    return sum(check_sentence(s, dialogue) is False for s in split_generated([w.lower() for w in words]))


def attribution_rerank(hyps, batch: Batch, vocab: Vocabulary, unk_replace: bool = True):
    """``hyps`` (a :class:`~agentsum.decoding.search.Hypotheses` of ``batch``) with each dialogue's
    n-best list reordered: fewest misattributed sentences first, search order among equals."""
    return rerank(hyps, batch, vocab, attribution=True, unk_replace=unk_replace)


def rerank(hyps, batch: Batch, vocab: Vocabulary, *, attribution: bool = False, lm: NgramLM | None = None,
           lm_weight: float = 0.0, unk_replace: bool = True):
    """``hyps`` with each document's n-best list reordered among the hypotheses that ended as its best
    did: with ``attribution``, a dialogue's fewest misattributed sentences first; then, with ``lm`` and
    ``lm_weight`` > 0, the highest search score plus ``lm_weight`` times the LM's log-probability per
    token; search order among equals. The other hypotheses follow in search order."""
    rescore = lm is not None and lm_weight > 0
    n_best = []
    for b, beam in enumerate(hyps.n_best):
        dialogue = dialogue_of(batch, b) if len(beam) > 1 and (attribution or rescore) else None
        if len(beam) <= 1 or not (rescore or dialogue is not None):
            n_best.append(beam)
            continue
        candidates = [k for k, h in enumerate(beam) if h.finished == beam[0].finished]
        words = to_words([beam[k].tokens for k in candidates], [beam[k].copy_positions for k in candidates],
                         batch.select([b] * len(candidates)), vocab, unk_replace=unk_replace)
        names = dialogue.speakers if dialogue is not None else []
        key = {}
        for k, w in zip(candidates, words):
            wrong = misattributed_sentences(w, dialogue) if attribution and dialogue is not None else 0
            lowered = [t.lower() for t in w]
            score = beam[k].score + (lm_weight * lm.logprob(with_name_class(lowered, names)) / (len(w) + 1)
                                     if rescore else 0.0)
            key[k] = (wrong, -score, k)
        order = sorted(candidates, key=key.__getitem__)
        n_best.append([beam[k] for k in order] + [h for k, h in enumerate(beam) if k not in key])
    return type(hyps).from_n_best(n_best)  # Hypotheses: search imports this module, not the other way
