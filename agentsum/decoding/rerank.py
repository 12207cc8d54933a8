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

**Role names** (``search.role_names``; it implies the attribution ordering): the names of a
dialogue's misattributed sentences are set to the roles the sentence's content words show, and the
search scores the result (:func:`role_name_edits`, :func:`role_name_variants`). In a sentence whose
subject wrote none of its content words, the subject becomes the one participant who wrote the most
of them (at least two, as the check asks), and where that participant is also named later in the
sentence, the two names trade places ("dale will call mike" -> "mike will call dale"). In a sentence
that names its subject again ("mike wants to call mike") the later mention becomes the other person
of a two-person chat. Each edited hypothesis is scored as the search would have scored it: the
decoder forced along its tokens through the search's own filtered steps
(:func:`agentsum.decoding.search.forced_scores`: the repetition penalty and window, n-gram blocking
and the rest), so an edit that repeats a blocked trigram or a word of the window scores -inf. It
joins the n-best only where its score reaches the n-best's worst, that is, where the beam could have
kept it, and only if no hypothesis already holds its tokens; then the fewest misattributed sentences
win as above, and the n-best keeps its length.

This answers the objection above to a swap after the fact: the model scores the sentence with its new
name, so a name the model finds unlikely there (a pronoun or verb written for the other person)
costs the edit its place. The new name is copied from the speaker's tag (the ``name :`` that opens
their first turn: its source id and copy position), as the model copies names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from agentsum.data.attribution import OTHER_WORDS, Dialogue, check_sentence, sentence_subject, sentence_support
from agentsum.data.batch import Batch
from agentsum.data.text import split_generated
from agentsum.data.speakers import is_turn_start
from agentsum.data.vocab import Vocabulary
from agentsum.decoding.copying import to_words
from agentsum.models.summary_lm import NgramLM, with_name_class

__all__ = ["Scorer", "attribution_rerank", "dialogue_of", "misattributed_sentences", "rerank", "role_name_edits",
           "role_name_variants", "speaker_tags"]


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


#: Scores hypotheses of one document as the search would: (document, token lists, finished flags) ->
#: scores (:func:`agentsum.decoding.search.forced_scores` for the search's model and settings).
Scorer = Callable[[int, list[list[int]], list[bool]], list[float]]


def rerank(hyps, batch: Batch, vocab: Vocabulary, *, attribution: bool = False, lm: NgramLM | None = None,
           lm_weight: float = 0.0, unk_replace: bool = True, scorer: Scorer | None = None):
    """``hyps`` with each document's n-best list reordered among the hypotheses that ended as its best
    did: with ``attribution``, a dialogue's fewest misattributed sentences first; then, with ``lm`` and
    ``lm_weight`` > 0, the highest search score plus ``lm_weight`` times the LM's log-probability per
    token; search order among equals. The other hypotheses follow in search order. With ``scorer``
    (role names, which imply ``attribution``), each dialogue's candidates are joined by their
    role-name edits that the beam could have kept (module docstring); the list keeps its length, so
    the last of the others may fall off."""
    attribution = attribution or scorer is not None
    rescore = lm is not None and lm_weight > 0
    n_best = []
    for b, beam in enumerate(hyps.n_best):
        dialogue = dialogue_of(batch, b) if len(beam) > 1 and (attribution or rescore) else None
        if len(beam) <= 1 or not (rescore or dialogue is not None):
            n_best.append(beam)
            continue
        candidates = [h for h in beam if h.finished == beam[0].finished]
        rest = [h for h in beam if h.finished != beam[0].finished]
        words = _words(candidates, batch, b, vocab, unk_replace)
        if scorer is not None and dialogue is not None:
            edited = role_name_variants(scorer, beam, candidates, words, batch, b, dialogue)
            candidates, words = candidates + edited, words + _words(edited, batch, b, vocab, unk_replace)
        names = dialogue.speakers if dialogue is not None else []
        key = []
        for k, (h, w) in enumerate(zip(candidates, words)):
            wrong = misattributed_sentences(w, dialogue) if attribution and dialogue is not None else 0
            lowered = [t.lower() for t in w]
            score = h.score + (lm_weight * lm.logprob(with_name_class(lowered, names)) / (len(w) + 1)
                               if rescore else 0.0)
            key.append((wrong, -score, k))
        order = [candidates[k] for *_, k in sorted(key)]
        n_best.append((order + rest)[: len(beam)])
    return type(hyps).from_n_best(n_best)  # Hypotheses: search imports this module, not the other way


def _words(beam: list, batch: Batch, b: int, vocab: Vocabulary, unk_replace: bool) -> list[list[str]]:
    """Document b's hypotheses as the summary will show their words."""
    if not beam:
        return []
    return to_words([h.tokens for h in beam], [h.copy_positions for h in beam], batch.select([b] * len(beam)),
                    vocab, unk_replace=unk_replace)


def role_name_edits(words: list[str], dialogue: Dialogue) -> dict[int, str]:
    """Token index -> the participant it should name instead, for the names of a summary's
    misattributed sentences (the module docstring's "Role names"); {} where no sentence is
    misattributed, or none can be mended by a name."""
    edits = {}
    start = 0
    for sentence in split_generated([w.lower() for w in words]):
        if check_sentence(sentence, dialogue) is False:
            edits.update({start + j: name for j, name in _mended_names(sentence, dialogue).items()})
        start += len(sentence)
    return edits


def _mended_names(sentence: list[str], dialogue: Dialogue) -> dict[int, str]:
    """A misattributed sentence's edits: the subject -> the one participant who wrote the most of its
    content words (two or more), trading places with a later mention of that participant; else, for
    a subject named again, the later mentions -> the other person of a two-person chat."""
    subject = sentence_subject(sentence, dialogue.speakers)
    if len(subject) != 1:
        return {}
    person = subject[0]
    support = sentence_support(sentence[1:], dialogue)
    best = max(support.values(), default=0)
    winners = [q for q, n in support.items() if n == best]
    if best >= OTHER_WORDS and len(winners) == 1 and winners[0] != person and support[person] == 0:
        other = winners[0]
        return {0: other, **{j: person for j in range(1, len(sentence)) if sentence[j] == other}}
    others = [q for q in dialogue.speakers if q != person]
    later = [j for j in range(1, len(sentence)) if sentence[j] == person]
    if later and len(others) == 1:
        return {j: others[0] for j in later}
    return {}


def speaker_tags(batch: Batch, b: int, speakers: list[str]) -> dict[str, tuple[int, int]]:
    """Participant -> (flat source position, extended id) of the ``name :`` tag opening their first
    turn in document b (of their first mention where no tag is found): what the model copies a name
    from."""
    S = batch.src_ids.size(2)
    tags, mentions = {}, {}
    for a, agent in enumerate(batch.src_tokens[b]):
        lowered = [t.lower() for t in agent]
        for i, name in enumerate(lowered):
            if name in speakers:
                found = (a * S + i, int(batch.src_ext_ids[b, a, i]))
                mentions.setdefault(name, found)
                if is_turn_start(lowered, i):
                    tags.setdefault(name, found)
    return {**mentions, **tags}


def role_name_variants(scorer: Scorer, beam: list, candidates: list, words: list[list[str]], batch: Batch, b: int,
                       dialogue: Dialogue) -> list:
    """The role-name edits of document b's ``candidates`` (read as ``words``; ``beam`` is the whole
    n-best) that mend a misattributed sentence, hold tokens no hypothesis holds, and score (by
    ``scorer``, as the search would) at least the n-best's worst: each a copy of its hypothesis with
    the names copied from the speakers' tags and that score, best first."""
    tags = speaker_tags(batch, b, dialogue.speakers)
    seen = {tuple(h.tokens) for h in beam}
    edited = []
    for h, w in zip(candidates, words):
        edits = {j: q for j, q in role_name_edits(w, dialogue).items() if q in tags}
        if not edits:
            continue
        tokens, positions, mended = list(h.tokens), list(h.copy_positions), list(w)
        for j, name in edits.items():
            positions[j], tokens[j] = tags[name]
            mended[j] = name
        if tuple(tokens) not in seen and misattributed_sentences(mended, dialogue) < misattributed_sentences(w, dialogue):
            seen.add(tuple(tokens))
            edited.append((h, tokens, positions))
    if not edited:
        return []
    scores = scorer(b, [tokens for _, tokens, _ in edited], [h.finished for h, _, _ in edited])
    floor = min(h.score for h in beam)
    kept = [dataclasses.replace(h, tokens=tokens, copy_positions=positions, score=score)
            for (h, tokens, positions), score in zip(edited, scores) if score > float("-inf") and score >= floor]
    return sorted(kept, key=lambda h: -h.score)
