"""Claims in search: constraints that keep a summary's figures well formed, its periods the source's,
and its numbers in the context the summary states them for.

Three options of :class:`~agentsum.decoding.search.SearchConfig`, each off by default, read text as
the claim figures measure it (:mod:`agentsum.data.figures`, :mod:`agentsum.evaluation.claims`):

* ``figure_grammar``: a currency sign only before a number (after ``$`` the next token is a numeral
  the source writes after a sign, or the ``(`` of an accounting negative; no sign as a summary's last
  token), and with the scale the source writes after that amount (``$ 16 billion``, not ``$ 16``);
  percent only after a numeral the source writes before percent; scale words (``million``) and percent (``%``,
  ``percent``, ``pct``) only right after a numeral; never two units on one number (no scale or
  percent after a scale or percent, no percent after ``$ 5``). ``$ per share``, ``$ common
  billion`` and ``5 % million`` cannot be written, and an UNK whose replacement would be a sign, a
  scale word or percent is not written either (it would put one past these rules).
* ``source_periods``: a period token is written only where the source states that period, and
  where it agrees with the document's reporting period as the period-agreement figure judges it
  (:func:`agentsum.data.figures.mention_agrees`), from the words written so far (a forward word the
  sentence writes after its period is not seen yet): in a sentence about results, only the quarter the
  call reports (and the full year only in a fourth-quarter call); in a forward-looking sentence
  (``sees``, ``expects`` ... earlier in the sentence), only a later period. Period tokens are
  ``q1``-``q4``, ``1q``-``4q``, ``h1``, ``h2``, ``fy`` (and ``fy21``), ``quarter`` / ``half`` after
  an ordinal (``first quarter``) and ``year`` after ``full`` or ``fiscal``. Where the source names
  no quarter, only the first rule holds.
* ``numbers_in_context``: a number copied inside a summary sentence that has named a metric draws
  its copy mass only from source sentences that state that metric (the lexicon of
  ``agentsum/data/metrics.yaml``, the nearest metric phrase before the number, as the figure reads
  it), and of the period the summary sentence is about: a source sentence that names the full year
  supplies numbers only to a summary sentence about the full year, one that names a quarter only to
  a sentence about that quarter (or about the reported quarter, where the summary names none), and
  a number the source states as a comparison (``compared to $0.64 a year ago``, ``from $0.64 to
  $0.31``: after ``from``, ``versus``, ``compared`` ... or before ``a year ago``, ``last year``,
  ``prior year``) supplies none; after a direction word (``rose``, ``fell``) only numbers the source
  states with that direction, or with none, supply one. Its copy weight elsewhere is set to 0, so its
  probability is the
  copy mass of the allowed positions only (not renormalised). Numerals are copy-only under this
  option (as with ``numbers_from_source``), or a generated numeral would bypass it.

  Choice: the lexicon, not the content words the summary sentence shares with a source sentence,
  because the metric is what a reader checks a figure against, it is what the figure measures,
  and a summary sentence's content words before a number are mostly the metric phrase and period
  words ("q3 adjusted ebitda"), which the lexicon reads with its synonyms; shared content words
  would also pass a sentence that names the metric only as a comparison. Choice: the period with
  the metric, because a third of the calls model's wrong figures are right numbers for another
  period (../shared/reviews/claims.md), which the metric alone cannot see.

A constraint needs a vocabulary of words (an English one with numerals); a model whose vocabulary
holds no numeral (a Chinese model) cannot honour ``figure_grammar`` or ``numbers_in_context``, and
one without period tokens cannot honour ``source_periods``: :class:`ConstraintError` names the
option.
"""

from __future__ import annotations

import torch

from agentsum.data.batch import Batch
from agentsum.data.claims import direction_near
from agentsum.data.figures import (FORWARD_WORDS, FULL_YEAR, HALF, ORDINALS, QUARTER, Mention, Period,
                                   comparison_value, document_period, last_direction, lexicon,
                                   mention_agrees, period_mentions, sentence_periods, summary_period)
from agentsum.data.numerals import SCALES, is_numeral
from agentsum.data.text import SENTENCE_END, sentence_spans
from agentsum.data.vocab import UNK_ID, Vocabulary

__all__ = ["ConstraintError", "ClaimConstraints", "check_vocabulary", "CURRENCY", "PERCENT_TOKENS"]

NEG_INF = float("-inf")
CURRENCY = frozenset({"$", "€", "£", "¥"})
PERCENT_TOKENS = frozenset({"%", "percent", "pct"})


class ConstraintError(ValueError):
    """A constraint that the model's vocabulary cannot honour (no numerals, no period tokens);
    ``option`` is the SearchConfig field asked for."""

    def __init__(self, option: str, reason: str):
        super().__init__(f"search.{option}: {reason}")
        self.option = option


def _period_token(word: str, previous: str) -> Mention | None:
    """The period a token names with the token before it (``quarter`` after ``first``), or None."""
    if word in ("quarter", "quarters", "half") and previous in ORDINALS:
        return Mention(QUARTER if word != "half" else HALF, ORDINALS[previous], None, 0, f"{previous} {word}")
    if word in ("year", "-year") and previous in ("full", "fiscal"):
        return Mention(FULL_YEAR, None, None, 0, f"{previous} {word}")
    if word in ORDINALS:
        return None  # "first" alone is not a period: "quarter" after it is judged
    found = period_mentions([word])
    return found[0] if len(found) == 1 and found[0].kind in (QUARTER, HALF, FULL_YEAR) else None


_PAIR_WORDS = ("quarter", "quarters", "half", "year", "-year")


def check_vocabulary(vocab: Vocabulary, *, figure_grammar: bool = False, source_periods: bool = False,
                     numbers_in_context: bool = False) -> None:
    """Raise :class:`ConstraintError`, naming the option, when the vocabulary cannot honour a
    constraint asked for: no numeral (``figure_grammar``, ``numbers_in_context``), no period token
    (``source_periods``)."""
    if figure_grammar or numbers_in_context:
        if not any(is_numeral(w) for w in vocab.itos):
            option = "figure_grammar" if figure_grammar else "numbers_in_context"
            raise ConstraintError(option, "the model's vocabulary holds no numeral, so it writes no figure to "
                                          "constrain (a Chinese model, or one trained without numbers)")
    if source_periods and not any(_period_token(w, "") is not None or w in _PAIR_WORDS for w in vocab.itos):
        raise ConstraintError("source_periods", "the model's vocabulary holds no period token (q1-q4, fy, "
                                                "quarter ...), so it writes no period to constrain")


#: the word classes the constraints read, by mask name
_WORD_TESTS = {
    "numeral": is_numeral,
    "currency": lambda w: w in CURRENCY,
    "percent": lambda w: w in PERCENT_TOKENS,
    "scale": lambda w: w in SCALES,
    "paren": lambda w: w == "(",
    "end": lambda w: w in SENTENCE_END,
    "forward": lambda w: w in FORWARD_WORDS,
}
# Recently used vocabularies and their masks, by identity (a Vocabulary is not hashable); an entry
# holds the vocabulary itself, so its id cannot be reused while the entry lives.
_VOCABULARY_MASKS: dict[int, tuple[Vocabulary, dict[str, torch.Tensor], torch.Tensor]] = {}
_MASKS_KEPT = 8


def _vocabulary_entry(vocab: Vocabulary) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    entry = _VOCABULARY_MASKS.get(id(vocab))
    if entry is None or entry[0] is not vocab:
        if len(_VOCABULARY_MASKS) >= _MASKS_KEPT:
            _VOCABULARY_MASKS.pop(next(iter(_VOCABULARY_MASKS)))  # the oldest
        masks = {name: torch.tensor([test(w) for w in vocab.itos], dtype=torch.bool).unsqueeze(0)
                 for name, test in _WORD_TESTS.items()}
        period_ids = torch.tensor([i for i, w in enumerate(vocab.itos) if _period_token(w, "") is not None],
                                  dtype=torch.long)
        entry = (vocab, masks, period_ids)
        _VOCABULARY_MASKS[id(vocab)] = entry
    return entry[1], entry[2]


def _vocabulary_masks(vocab: Vocabulary) -> dict[str, torch.Tensor]:
    """(1, V) bool masks of the vocabulary's word classes (:data:`_WORD_TESTS`), computed once."""
    return _vocabulary_entry(vocab)[0]


class ClaimConstraints:
    """The claim constraints of one batch (module docstring). ``words[b]`` maps document b's extended
    ids to words; masks are (B, V_ext) over each document's extended vocabulary."""

    def __init__(self, vocab: Vocabulary, batch: Batch, device: torch.device, *, figure_grammar: bool = False,
                 source_periods: bool = False, numbers_in_context: bool = False, max_length: int | None = None):
        self.figure_grammar, self.source_periods = figure_grammar, source_periods
        self.max_length = max_length
        self.numbers_in_context = numbers_in_context
        self.words = [list(vocab.itos) + list(oovs) + [""] * (batch.max_oov - len(oovs)) for oovs in batch.oov_words]
        check_vocabulary(vocab, figure_grammar=figure_grammar, source_periods=source_periods,
                         numbers_in_context=numbers_in_context)
        # the vocabulary's masks are read once per vocabulary; only each document's OOV words are new
        base = _vocabulary_masks(vocab)
        oovs = [[_WORD_TESTS[name](w) if w else False for name in _WORD_TESTS for w in words[len(vocab):]]
                for words in self.words]
        for k, name in enumerate(_WORD_TESTS):
            tails = torch.tensor([tail[k * batch.max_oov:(k + 1) * batch.max_oov] for tail in oovs],
                                 dtype=torch.bool).view(len(self.words), batch.max_oov)
            setattr(self, name, torch.cat([base[name].expand(len(self.words), -1), tails], dim=1))
        self.unit = self.percent | self.scale
        self.device = device
        self.sources = [[t for agent in agents for t in agent] for agents in batch.src_tokens]
        self.periods: list[Period | None] = []
        if source_periods or numbers_in_context:
            self.periods = [document_period(_sentences(tokens)) for tokens in self.sources]
        if source_periods:
            self._build_periods(vocab, batch)
        if numbers_in_context:
            self._build_context(batch)
        # (B, A * S): source positions holding a currency sign, scale word or percent, which an UNK
        # copied from there would put into the summary past the figure grammar
        A, S = batch.src_ext_ids.shape[1:]
        self.figure_word_at = torch.zeros((len(self.words), A * S), dtype=torch.bool)
        for b, agents in enumerate(batch.src_tokens):
            for a, tokens in enumerate(agents):
                for i, token in enumerate(tokens[:S]):
                    if token.lower() in CURRENCY or token.lower() in PERCENT_TOKENS or token.lower() in SCALES:
                        self.figure_word_at[b, a * S + i] = True
        if figure_grammar:
            self._build_units(batch)
        for name in (*_WORD_TESTS, "unit", "figure_word_at", "money", "percented"):
            if hasattr(self, name):
                setattr(self, name, getattr(self, name).to(device))

    # ------------------------------------------------------------------------------ units

    def _build_units(self, batch: Batch) -> None:
        """What the source writes around each numeral, by extended id, per document: ``money``
        (B, V_ext) the numerals it writes after a currency sign, ``percented`` (B, V_ext) those it
        writes before percent, ``money_scales[b]``: numeral -> (the scale ids after ``$ x``, whether
        ``$ x`` also stands without one). A document with no money numeral (or no percent) does not
        restrict the sign (or percent): every numeral is allowed there, as without these rules."""
        B, width = len(self.words), len(self.words[0])
        self.money = torch.zeros((B, width), dtype=torch.bool)
        self.percented = torch.zeros((B, width), dtype=torch.bool)
        self.money_scales: list[dict[int, tuple[set[int], bool]]] = []
        ext = batch.src_ext_ids.tolist()
        for b, agents in enumerate(batch.src_tokens):
            scales: dict[int, tuple[set[int], bool]] = {}
            for a, tokens in enumerate(agents):
                words = [t.lower() for t in tokens]
                for i, word in enumerate(words):
                    if not is_numeral(word):
                        continue
                    x = ext[b][a][i]
                    after = words[i + 1] if i + 1 < len(words) else ""
                    if after in PERCENT_TOKENS:
                        self.percented[b, x] = True
                    sign = (i > 0 and words[i - 1] in CURRENCY) or \
                        (i > 1 and words[i - 1] == "(" and words[i - 2] in CURRENCY)
                    if sign:
                        self.money[b, x] = True
                        found, bare = scales.get(x, (set(), False))
                        if after in SCALES and i + 1 < len(tokens):
                            found.add(ext[b][a][i + 1])
                        else:
                            bare = True
                        scales[x] = (found, bare)
            if not self.money[b].any():
                self.money[b] = self.numeral[b]
            if not self.percented[b].any():
                self.percented[b] = self.numeral[b]
            self.money_scales.append(scales)

    # ------------------------------------------------------------------------------ periods

    def _build_periods(self, vocab: Vocabulary, batch: Batch) -> None:
        """allowed[b, f]: (V_ext,) bool, the tokens document b allows in a sentence that is (f = 1)
        or is not (f = 0) forward-looking, for tokens that are periods by themselves; after[b][f]:
        for a token pair (previous word, word), whether it is allowed."""
        self.pair_ids = {w: vocab.stoi[w] for w in _PAIR_WORDS if w in vocab.stoi}
        B, width = len(self.words), len(self.words[0])
        self.allowed = torch.ones((B, 2, width), dtype=torch.bool)
        self.pair_rules: list[dict[tuple[str, int], bool]] = []
        for b, words in enumerate(self.words):
            stated = {(m.kind, m.value) for s in _sentences(self.sources[b]) for m in period_mentions(s)}
            period = self.periods[b]

            def ok(m: Mention, forward: bool) -> bool:
                if (m.kind, m.value) not in stated and not (m.kind == FULL_YEAR and (FULL_YEAR, None) in stated):
                    return False
                return period is None or mention_agrees(m, period, forward) is not False

            # the period tokens: the vocabulary's (found once per vocabulary) and this document's OOV words
            ids = _vocabulary_entry(vocab)[1].tolist() + [len(vocab) + k for k, w in enumerate(words[len(vocab):])
                                                          if w and _period_token(w, "") is not None]
            for i in ids:
                m = _period_token(words[i], "")
                self.allowed[b, 0, i], self.allowed[b, 1, i] = ok(m, False), ok(m, True)
            rules = {}
            for previous in (*ORDINALS, "full", "fiscal"):
                for word in self.pair_ids:
                    m = _period_token(word, previous)
                    if m is not None:
                        rules[(previous, 0, word)], rules[(previous, 1, word)] = ok(m, False), ok(m, True)
            self.pair_rules.append(rules)
        self.allowed = self.allowed.to(self.device)

    def _forward_rows(self, history: torch.Tensor, t: int, row_doc: torch.Tensor) -> torch.Tensor:
        """(N,) bool: the row's current sentence (since its last . ! ?) holds a forward word."""
        if t == 0:
            return torch.zeros(row_doc.shape, dtype=torch.bool, device=self.device)
        h = history[:, :t].to(self.device)
        docs = row_doc.to(self.device).unsqueeze(1).expand_as(h)
        is_end, is_forward = self.end[docs, h], self.forward[docs, h]
        positions = torch.arange(t, device=self.device).expand_as(h)
        last_end = torch.where(is_end, positions, torch.full_like(positions, -1)).max(1, keepdim=True).values
        return (is_forward & (positions > last_end)).any(1)

    # ------------------------------------------------------------------------------ context

    def _build_context(self, batch: Batch) -> None:
        """For every document: the flat source positions (a * S + i) of its numerals, each with the
        metrics and period tags of its sentence and whether it is a comparison value."""
        lex = lexicon()
        A, S = batch.src_ext_ids.shape[1:]
        self.L = A * S
        # (position, metrics, periods, direction) of every numeral that may supply a number
        self.context: list[list[tuple[int, frozenset, frozenset, int | None]]] = []
        for agents in batch.src_tokens:
            entries = []
            for a, tokens in enumerate(agents):
                tokens = tokens[:S]
                for start, end in sentence_spans(tokens):
                    sentence = [t.lower() for t in tokens[start:end]]
                    metrics = frozenset(lex.metrics_of(sentence))
                    periods = sentence_periods(sentence)
                    for i in range(start, end):
                        if is_numeral(tokens[i]) and not comparison_value(sentence, i - start):
                            direction = direction_near([t.lower() for t in sentence], i - start)
                            entries.append((a * S + i, metrics, periods, direction))
            self.context.append(entries)
        self.numeral_positions = torch.zeros((len(self.context), self.L), dtype=torch.bool)
        for b, agents in enumerate(batch.src_tokens):
            for a, tokens in enumerate(agents):
                for i, token in enumerate(tokens[:S]):
                    if is_numeral(token):
                        self.numeral_positions[b, a * S + i] = True
        self._cache: dict[tuple, torch.Tensor] = {}  # (document, metric, period, direction) -> copy mask
        self._readings: dict[tuple[str, ...], tuple | None] = {}  # a sentence so far -> (metric, period, direction)

    def copy_keep(self, history: torch.Tensor, t: int, row_doc: torch.Tensor) -> torch.Tensor | None:
        """(N, L) float: 1 where each row may copy from, 0 at the numerals of source sentences that do
        not state the metric (and period) of the row's current summary sentence. None: no row is
        restricted (no constraint, or no row's sentence has named a metric)."""
        if not self.numbers_in_context or t == 0:
            return None
        lex = lexicon()
        rows = history[:, :t].tolist()
        docs = row_doc.tolist()
        keep = None
        for r, (row, d) in enumerate(zip(rows, docs)):
            words = self.words[d]
            sentence = []
            for token in reversed(row):
                word = words[token] if token < len(words) else ""
                if word in SENTENCE_END:
                    break
                sentence.append(word)
            sentence.reverse()
            reading = self._readings.get(tuple(sentence), False)  # the same prefix recurs across beams and steps
            if reading is False:
                found = lex.find(sentence)
                reading = (found[-1][2], summary_period(sentence), last_direction(sentence)) if found else None
                self._readings[tuple(sentence)] = reading
            if reading is None:
                continue
            metric, period, direction = reading
            key = (d, metric, period, direction)
            mask = self._cache.get(key)
            if mask is None:
                mask = self._context_mask(d, metric, period, direction)
                self._cache[key] = mask
            if keep is None:
                keep = torch.ones((len(rows), self.L), dtype=torch.float32)
            keep[r] = mask
        return None if keep is None else keep.to(self.device)

    def _context_mask(self, d: int, metric: str, period: str, direction: int | None = None) -> torch.Tensor:
        """(L,) float: 0 at document d's numerals that may not supply a number stated for
        ``metric`` in a summary sentence about ``period`` (with ``direction``, +1 / -1, written
        before it), 1 elsewhere."""
        mask = (~self.numeral_positions[d]).float()
        reported = self.periods[d]
        for position, metrics, periods, stated in self.context[d]:
            # "earnings of $0.31 per share": the figure reads EPS where "per share" follows a number
            # after a generic earnings word, which is not yet written here: such a sentence may draw on both
            if metric not in metrics and not (metric == "net_income" and "eps" in metrics):
                continue
            if direction is not None and stated is not None and stated != direction:
                continue
            if period == "fy":
                fits = "fy" in periods
            elif period.startswith("q"):  # an untagged sentence is about the reported quarter, if any is known
                fits = period in periods or (not periods and (reported is None or period == f"q{reported.quarter}"))
            else:  # the summary names no period: the reported one
                fits = not periods or (reported is not None and f"q{reported.quarter}" in periods)
            if fits:
                mask[position] = 1.0
        return mask

    # ------------------------------------------------------------------------------ the filter

    def filter(self, log_probs: torch.Tensor, history: torch.Tensor, t: int, row_doc: torch.Tensor) -> torch.Tensor:
        """Forbid (-inf, in place) what ``figure_grammar`` and ``source_periods`` rule out at step t.
        log_probs (N, V_ext); history (N, >= t); row_doc (N,) the document of every row."""
        docs = row_doc.to(log_probs.device)
        if self.figure_grammar:
            self._figure_grammar(log_probs, history, t, docs)
        if self.source_periods:
            self._periods(log_probs, history, t, docs)
        return log_probs

    def forbid_figure_unks(self, log_probs: torch.Tensor, positions: torch.Tensor, row_doc: torch.Tensor
                           ) -> torch.Tensor:
        """Under ``figure_grammar``, forbid (-inf, in place) UNK in the rows whose UNK would be
        replaced by a currency sign, scale word or percent (the source word at the row's copy position
        ``positions`` (N,)): such a sign is written past the grammar (``$ to be``). The vocabulary
        holds these words, which the grammar then places."""
        if self.figure_grammar:
            hit = self.figure_word_at[row_doc.to(self.device), positions.to(self.device)]
            log_probs[:, UNK_ID] = log_probs[:, UNK_ID].masked_fill(hit.to(log_probs.device), NEG_INF)
        return log_probs

    def _figure_grammar(self, log_probs: torch.Tensor, history: torch.Tensor, t: int, docs: torch.Tensor) -> None:
        unit = self.unit[docs]
        if self.max_length is not None and t == self.max_length - 1:  # the last token: no sign left dangling
            log_probs.masked_fill_(self.currency[docs], NEG_INF)
        if t == 0:
            log_probs.masked_fill_(unit, NEG_INF)
            return
        last = history[:, t - 1].to(log_probs.device)
        after_numeral = self.numeral[docs, last]
        # no unit except right after a numeral (this also forbids a unit after a unit)
        log_probs.masked_fill_(unit & ~after_numeral.unsqueeze(1), NEG_INF)
        # after a currency sign (or its "("), only a numeral, or "(" right after the sign
        after_sign = self.currency[docs, last]
        after_paren = self.paren[docs, last]
        if t >= 2:
            previous = history[:, t - 2].to(log_probs.device)
            after_paren &= self.currency[docs, previous]
            # $ 5: no percent after an amount of money
            money = after_numeral & self.currency[docs, previous]
            log_probs.masked_fill_(self.percent[docs] & money.unsqueeze(1), NEG_INF)
        else:
            after_paren = torch.zeros_like(after_paren)
        last_step = self.max_length is not None and t >= self.max_length - 2  # "$ (" needs two more tokens
        # after a sign, a numeral the source writes after one (``$ 16`` where it writes ``16 %`` is not its figure)
        allowed = self.money[docs] | (self.paren[docs] & after_sign.unsqueeze(1) & (not last_step))
        log_probs.masked_fill_(~allowed & (after_sign | after_paren).unsqueeze(1), NEG_INF)
        # percent only after a numeral the source writes before percent
        log_probs.masked_fill_(self.percent[docs] & (after_numeral & ~self.percented[docs, last]).unsqueeze(1),
                               NEG_INF)
        if t >= 2:
            self._money_scales(log_probs, last, money, docs)

    def _money_scales(self, log_probs: torch.Tensor, last: torch.Tensor, money: torch.Tensor,
                      docs: torch.Tensor) -> None:
        """After ``$ x``: only a scale word the source writes after ``$ x``, and one of them where it
        never writes ``$ x`` without one (unless repeat blocking has forbidden them all: then the
        row is left to end as it can rather than be made a dead end)."""
        rows = money.nonzero().squeeze(1).tolist()
        for r, d, x in zip(rows, docs[rows].tolist(), last[rows].tolist()):
            found = self.money_scales[d].get(x)
            if found is None:
                continue
            scales, bare = found
            allowed = torch.tensor(sorted(scales), dtype=torch.long, device=log_probs.device)
            kept = log_probs[r, allowed]
            if bare or not bool(torch.isfinite(kept).any()):
                log_probs[r].masked_fill_(self.unit[d] & ~self.percent[d], NEG_INF)  # scale words
            else:
                log_probs[r] = NEG_INF
            log_probs[r, allowed] = kept

    def _periods(self, log_probs: torch.Tensor, history: torch.Tensor, t: int, docs: torch.Tensor) -> None:
        forward = self._forward_rows(history, t, docs)
        log_probs.masked_fill_(~self.allowed[docs, forward.long()], NEG_INF)
        if t == 0 or not self.pair_ids:
            return
        last = history[:, t - 1].tolist()
        for r, (token, d, f) in enumerate(zip(last, docs.tolist(), forward.tolist())):
            previous = self.words[d][token] if token < len(self.words[d]) else ""
            if previous not in ORDINALS and previous not in ("full", "fiscal"):
                continue
            for word, i in self.pair_ids.items():
                if not self.pair_rules[d].get((previous, int(f), word), True):
                    log_probs[r, i] = NEG_INF


def _sentences(tokens: list[str]) -> list[list[str]]:
    return [[t.lower() for t in tokens[s:e]] for s, e in sentence_spans(tokens)]


