"""Who is speaking at every source token of a dialogue (``model.speaker_embedding``).

A prepared dialogue is a flat token list per agent: every utterance is ``name : text`` (SAMSum
``amanda : lunch at 1 ?``, DialogSum ``#person1# : hello``), and the utterances follow one another
without a marker between them. A speaker turn starts at a name token followed by ``:``; every token
from there to the next turn, the name and the colon included, belongs to that speaker.

Speakers are numbered by their first turn in the document (across its agents, in order): 1 for the
first to speak, 2 for the second, and so on up to :data:`MAX_SPEAKERS`; later speakers share the last
number. 0 is "no speaker": the tokens before the first turn, and text that is not a dialogue.

Choice: the turn is found from the tokens, not from the line breaks, because the prepared corpus
(and its memory-mapped store) keeps no utterance boundaries. A word before a colon inside an
utterance ("the plan : ...") reads as a turn; in SAMSum's validation dialogues that is rare, since
times (``10:30``) and emoticons (``:)``) are single tokens. A two-word name ("mary ann :") is
numbered by its last word.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: Speaker numbers beyond the padding id 0; the 9th and later speakers share number 8.
MAX_SPEAKERS = 8

_NAME = re.compile(r"^(#\w+#|[^\W\d_][\w'.\-]*)$")


def is_turn_start(tokens: Sequence[str], i: int) -> bool:
    """Whether ``tokens[i]`` is a speaker name that opens a turn (``name :``)."""
    return i + 1 < len(tokens) and tokens[i + 1] == ":" and _NAME.match(tokens[i]) is not None


def speaker_ids(agents: Sequence[Sequence[str]], max_speakers: int = MAX_SPEAKERS) -> list[list[int]]:
    """For each agent's tokens, the speaker number of every token (see the module docstring)."""
    numbers: dict[str, int] = {}
    current = 0
    out: list[list[int]] = []
    for tokens in agents:
        ids = []
        for i, token in enumerate(tokens):
            if is_turn_start(tokens, i):
                if token not in numbers:
                    numbers[token] = min(len(numbers) + 1, max_speakers)
                current = numbers[token]
            ids.append(current)
        out.append(ids)
    return out


def source_speakers(batch) -> "torch.Tensor":
    """(B, A, S) int64 on the batch's device: the speaker number of every source position of a
    :class:`~agentsum.data.batch.Batch` (0 on padding), from its ``src_tokens``."""
    import torch

    B, A, S = batch.src_ids.shape
    out = torch.zeros((B, A, S), dtype=torch.long)
    for b, doc in enumerate(batch.src_tokens):
        for a, ids in enumerate(speaker_ids(doc)):
            if ids:
                out[b, a, : len(ids)] = torch.tensor(ids[:S], dtype=torch.long)
    return out.to(batch.src_ids.device)
