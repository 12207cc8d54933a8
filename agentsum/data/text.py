"""English preprocessing for CNN/DailyMail-style news: sentences of lower-cased PTB-like tokens.

DCA (Celikyilmaz et al., 2018) replicates the preprocessing of Paulus et al. (2018), who follow
See et al. (2017): Stanford CoreNLP PTB tokenization, lower-casing, and a '.' appended to every
highlight that lacks final punctuation. CoreNLP is a Java dependency, so this module approximates
it offline with a regex tokenizer and ``blingfire`` sentence splitting. The differences that remain
(brackets are kept as ``(`` ``)`` instead of ``-lrb-``, quotes are not turned into `` and '') do
not matter for a model trained and evaluated with the same preprocessing.

Sentence structure is kept (``list[list[str]]``) because the agent split (:mod:`agentsum.data.agents`)
cuts at sentence boundaries and rougeLsum scores sentence by sentence.
"""

from __future__ import annotations

import ctypes
import re
import threading
from collections.abc import Iterable, Sequence
from itertools import chain

import blingfire

#: Tokens that end a sentence in generated output and in processed references.
SENTENCE_END = frozenset({".", "!", "?"})
_CLOSERS = frozenset({'"', "'", ")"})

# Dateline / source prefix at the very start of an article: "(CNN) -- ", "(CNN)",
# "LONDON, England (CNN) -- ", "WASHINGTON (CNN) --", "(Mental Floss) -- ", "LONDON, England -- ".
# The location is a run of capitalised words with commas (no sentence punctuation except the
# "." of "St." or "D.C."); a parenthesised source without "--" must name a known news service,
# so an article that merely opens with a parenthetical remark is left alone.
_LOCATION = r"[A-Z][\w.'’&-]*(?:,?[ \t]+[\w.'’&-]+){0,7}"
_KNOWN_SOURCE = r"(?:CNN[\w .]{0,20}|Reuters|AP|AFP|EW\.com)"
_PREFIX_RE = re.compile(
    rf"""\A\s*(?:
        (?:{_LOCATION}[ \t]*)?\((?:{_KNOWN_SOURCE})\)[ \t]*(?:--+|—)?   # (CNN) with optional --
      | \([A-Z][^()\n]{{0,40}}\)[ \t]*(?:--+|—)                        # (Any Source) --
      | [A-Z][A-Z.'’&-]+(?:[ \t]+[A-Z][A-Z.'’&-]+){{0,3}}               # ALL-CAPS city,
        (?:,[ \t]+[A-Z][\w.'’&-]*(?:[ \t]+[A-Z][\w.'’&-]*){{0,3}})?     # optional region,
        [ \t]*(?:--+|—)                                                # then a dash
    )[ \t]*""",
    re.VERBOSE,
)
_PREFIX_WINDOW = 120

# Order matters: the first alternative that matches at a position wins.
_TOKEN_RE = re.compile(
    r"""
    (?i:https?://|www\.)[^\s"'<>()]*[^\s"'<>().,!?;:]     # URL (trailing punctuation split off)
  | [\w.+-]+@[\w-]+(?:\.[\w-]+)+                          # e-mail address
  | \#[A-Za-z]\w*\#                                        # speaker tag: #Person1# (DialogSum), one token
  | (?:[A-Za-z]\.){2,}                                    # u.s. / a.m. / e.g.
  | [\w-]+(?:\.[\w-]+)*\.(?i:com|org|net|gov|edu|uk|info)\b  # bare domain: cnn.com
  | (?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|Gen|Gov|Sens?|Reps?|Rev|Mt|Ft|vs  # titles: "Mr." "Sgt." ...
     |Lt|Col|Maj|Sgt|Cpl|Pvt|Spc|Capt|Cmdr|Adm)\.(?=\s|$)
  | (?:Jan|Feb|Aug|Sept?|Oct|Nov|Dec|No)\.(?=\s*\d)       # "Jan. 5", "No. 10"
  | (?:Ala|Ariz|Ark|Calif|Colo|Conn|Del|Fla|Ga|Ill|Ind|Kan|Ky|La|Md|Mass|Mich|Minn  # US state
     |Miss|Mo|Mont|Neb|Nev|Okla|Ore|Pa|Tenn|Vt|Va|Wash|Wis|Wyo)\.(?=\s*,)  # "Erie, Pa., said"
  | (?:Inc|Corp|Ltd|Co|Bros)\.(?=\s+[a-z,]|,)             # company suffix inside a sentence
  | [A-Z]\.(?=\s+[A-Z])                                   # initial: "J. F. Kennedy"
  | \w+(?=(?i:n't)\b)                                     # "do" of "don't" (PTB: ca|n't, wo|n't)
  | (?i:n't)\b                                            # negation clitic
  | (?<=[\w#])'(?i:s|re|ve|ll|d|m)\b                      # clitics: 's 're 've 'll 'd 'm (#Person1#'s too)
  | \d+(?:[.,:/]\d+)+[^\W_]*                              # 3.5  1,000  10:30  9/11  1.5m
  | \w+(?:-\w+|'(?!(?i:s|re|ve|ll|d|m|t)\b)\w+)*          # words, 18-year-old, o'neill
  | \.\.\.+|--+                                           # ellipsis, dash
  | [^\w\s]                                               # any other symbol on its own
    """,
    re.VERBOSE,  # case-sensitive: titles and initials need capitals; clitics use (?i:...)
)

# Curly quotes and typographic variants mapped to the ASCII forms the tokenizer knows.
_CHAR_MAP = str.maketrans(
    {
        "‘": "'", "’": "'", "‚": "'", "‛": "'", "′": "'", "`": "'",
        "“": '"', "”": '"', "„": '"', "‟": '"', "″": '"',
        "…": "...",
        "—": " -- ", "―": " -- ",
    }
)
_CHAR_ITEMS = tuple((chr(code), replacement) for code, replacement in _CHAR_MAP.items())
# Unicode categories Cc, Cf, Co, Cs (Unicode 14 tables) except tab, line feed and carriage
# return; a precomputed class because a per-character unicodedata lookup tripled the run time.
_CONTROL_RE = re.compile(
    r"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891"
    r"\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ud800-\uf8ff\ufeff"
    r"\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3"
    r"\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f\U000f0000-\U000ffffd\U00100000-\U0010fffd]"
)
#: The ASCII characters of _CONTROL_RE.
_ASCII_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f]")
_DOUBLE_QUOTE_RE = re.compile(r"''")  # '' and `` (after mapping ` to ') are PTB-style double quotes


def strip_source_prefix(text: str) -> str:
    """Remove a leading dateline/source such as "LONDON, England (CNN) -- ".

    It is boilerplate repeated across thousands of articles (and absent from highlights), so it
    only wastes the 400/800-token input budget. Only a prefix ending within the first 120
    characters is removed; anything else is returned unchanged.
    """
    match = _PREFIX_RE.match(text[:_PREFIX_WINDOW])
    if match is None or match.end() >= len(text.rstrip()):
        return text
    return text[match.end():]


def clean_text(text: str) -> str:
    """Normalise quotes and drop control/format characters (NUL, zero-width space, soft hyphen).

    Line breaks and tabs survive as whitespace because paragraph breaks carry sentence boundaries.
    ASCII text (``isascii`` is a flag, not a scan) takes a shorter path with the same result: of
    the map only the backquote is ASCII, and of the control class only the ASCII controls.
    """
    if not text.isascii():
        # str.replace of the mapped characters that occur, not str.translate: translate looks every
        # character of a non-ASCII text up in the map (0.31 ms of a 3,700-character news article,
        # against 0.06 ms for these scans); the replacements are ASCII and hold no mapped character,
        # so replacing one after another is the simultaneous map (tests/test_properties.py)
        for char, replacement in _CHAR_ITEMS:
            if char in text:
                text = text.replace(char, replacement)
        if not text.isascii():
            return _CONTROL_RE.sub("", text)
    else:
        text = text.replace("`", "'")
    return _ASCII_CONTROL_RE.sub("", text)


def split_sentences(text: str) -> list[str]:
    """Split text into sentences: at line breaks first, then with blingfire inside each line.

    Raw CNN ``.story`` articles keep paragraphs (and photo captions without final punctuation) as
    separate lines; blingfire alone would merge a caption into the next sentence.
    """
    sentences: list[str] = []
    for line in clean_text(text).splitlines():
        line = line.strip()
        if not line:
            continue
        sentences.extend(s.strip() for s in _text_to_sentences(line).split("\n") if s.strip())
    return sentences


def tokenize(sentence: str, lower: bool = True) -> list[str]:
    """PTB-like tokens: punctuation and clitics split off; numbers, hyphenated words, URLs kept.

    Rules are applied to the original casing (initials and titles need capitals), then tokens are
    lower-cased as in See et al. (2017) and Paulus et al. (2018).
    """
    return _tokenize_clean(clean_text(sentence), lower)


def _tokenize_clean(sentence: str, lower: bool) -> list[str]:
    """:func:`tokenize` of a sentence already passed through :func:`clean_text` (which is idempotent,
    so cleaning it again would change nothing and cost a second pass).

    The sentence is tokenized one whitespace-separated piece at a time, through a cache, because
    no token spans whitespace and a piece is tokenized the same alone as in its sentence: at a
    piece's start the regex sees whitespace or the start of the text, which its look-behind and
    word boundaries treat alike, and the only look-aheads that peek past whitespace follow a '.'
    that ends a piece (titles, months, states, company suffixes, initials). A piece ending in '.'
    after such a word (``_JOIN_END_RE``) is therefore tokenized together with the pieces after it,
    up to one that does not.
    tests/test_properties.py holds this to the whole-sentence regex on generated sentences. Most
    pieces of a news corpus are frequent words, so the cache turns most regex runs into a lookup;
    once it holds ``_PIECE_CACHE_SIZE`` pieces it keeps them (the frequent ones come early) and
    stops growing, rather than emptying and losing them to a long tail of rare pieces.
    """
    pieces = sentence.split()
    cache = _PIECE_CACHE[lower]
    # A join needs a '.' before whitespace, so a sentence whose only '.' (if any) is its last character
    # needs no regex: one C scan answers for five sentences in six of a news corpus (the regex costs
    # about five times the scan)
    if sentence.find(".", 0, len(sentence) - 1) == -1 or _JOIN_RE.search(sentence) is None:
        # No piece joins the next: look every piece up at once (a C loop; most sentences of a
        # news corpus), then tokenize the few the cache lacks.
        found = list(map(cache.get, pieces))
        if None in found:
            room = len(cache) < _PIECE_CACHE_SIZE
            for k, tokens in enumerate(found):
                if tokens is None:
                    found[k] = tokens = _piece_tokens(pieces[k], lower)
                    if room:
                        cache[pieces[k]] = tokens
        return list(chain.from_iterable(found))
    room = len(cache) < _PIECE_CACHE_SIZE
    out: list[str] = []
    i, n = 0, len(pieces)
    while i < n:
        piece = pieces[i]
        i += 1
        while i < n and _JOIN_END_RE.search(piece) is not None:
            piece += " " + pieces[i]
            i += 1
        tokens = cache.get(piece)
        if tokens is None:
            tokens = _piece_tokens(piece, lower)
            if room:
                cache[piece] = tokens
        out.extend(tokens)
    return out


def _piece_tokens(piece: str, lower: bool) -> tuple[str, ...]:
    """The tokens of one piece (or of a run of pieces joined after a '.'), by the sentence regex. A
    piece of letters only is one word to the regex (``\\w`` takes every letter, and no other rule
    starts without a digit or a symbol), and is answered without it."""
    if piece.isalpha():
        return (piece.lower(),) if lower else (piece,)
    tokens = _TOKEN_RE.findall(_DOUBLE_QUOTE_RE.sub('"', piece))
    if lower:
        tokens = [t.lower() for t in tokens]
    return tuple(t for t in tokens if t)


#: Tokens of whitespace-free pieces (by lower-casing), up to this many pieces each.
_PIECE_CACHE: dict[bool, dict[str, tuple[str, ...]]] = {True: {}, False: {}}
_PIECE_CACHE_SIZE = 200_000


def dialogue_utterances(text: str) -> list[str]:
    """A chat or spoken dialogue (SAMSum, DialogSum): every non-blank line is one utterance,
    ``Speaker: text``, kept whole as one sentence with its speaker name.

    Choice: an utterance, not a grammatical sentence, is the unit, so that the agent split
    (:mod:`agentsum.data.agents`) never gives one speaker's turn to two agents and Lead-3 means the
    first three turns (the baseline of Gliwa et al., 2019). Multi-sentence turns stay whole.
    """
    return [line.strip() for line in clean_text(text).splitlines() if line.strip()]


def article_sentences(text: str, lower: bool = True, dialogue: bool = False,
                      limit: int | None = None) -> list[list[str]]:
    """Article text -> tokenized sentences, dateline removed, empty sentences dropped.

    ``dialogue=True``: one sentence per utterance (line), no dateline handling.
    ``limit``: stop after the sentence that brings the token count to ``limit`` or more. The
    sentences returned are the first ones of the unlimited call, unchanged: lines are cut into
    sentences one at a time and sentences tokenized one at a time, each independently of what
    follows, so a reader that keeps only the first ``limit`` tokens (the agent split) sees the
    same tokens without the article's tail being split and tokenized.
    """
    units = _utterances(text) if dialogue else _sentences(strip_source_prefix(text))
    return sentences_up_to((_tokenize_clean(unit, lower) for unit in units), limit)


def sentences_up_to(sentences: Iterable[list[str]], limit: int | None) -> list[list[str]]:
    """The non-empty token lists of ``sentences``, consumed only until they hold ``limit`` tokens
    or more (all of them for ``limit=None``): the sentences after are never split or tokenized."""
    kept: list[list[str]] = []
    total = 0
    for tokens in sentences:
        if tokens:
            kept.append(tokens)
            total += len(tokens)
            if limit is not None and total >= limit:
                break
    return kept


#: A piece that may be tokenized differently alone than with the piece after it: one that ends in
#: '.' after a capitalized run of at most five letters. Only the rules for titles, months, US
#: states, company suffixes and initials look past the '.' at what follows, and each is such a
#: run ("Calif." is the longest); "hospital." or "5." is tokenized the same alone. Joining when
#: it is not needed is never wrong, only slower.
_JOIN_END_RE = re.compile(r"(?:^|[^A-Za-z])[A-Z][A-Za-z]{0,4}\.$")
#: The same inside a sentence, before the whitespace that ends the piece.
_JOIN_RE = re.compile(r"(?:^|[^A-Za-z])[A-Z][A-Za-z]{0,4}\.\s")

_BUFFERS = threading.local()


def _text_to_sentences(line: str) -> str:
    """``blingfire.text_to_sentences``: the same library call with the same arguments, into an
    output buffer kept per thread instead of a fresh zero-filled one per call, which took half of
    the call's time (a CNN article is ~20 lines; tests/data/test_text.py compares the two)."""
    data = line.encode("utf-8")
    capacity = len(data) * 2  # what blingfire.text_to_sentences allocates and passes
    buffer = getattr(_BUFFERS, "buffer", None)
    if buffer is None or len(buffer) < capacity:
        buffer = _BUFFERS.buffer = ctypes.create_string_buffer(max(capacity, 1 << 14))
    n = blingfire.blingfire.TextToSentences(ctypes.c_char_p(data), ctypes.c_int(len(data)), ctypes.byref(buffer),
                                            ctypes.c_int(capacity))
    if n == -1 or n > capacity:
        return ""
    return ctypes.string_at(buffer, n).split(b"\0", 1)[0].decode("utf-8")


def _sentences(text: str):
    """:func:`split_sentences`, lazily: one line's sentences at a time, each line cleaned as it is
    reached. Cleaning maps characters one by one and keeps '\n', so cleaning the text between
    '\n's one piece at a time gives the pieces of the cleaned text (and the same lines: the
    other line breaks that :meth:`str.splitlines` knows are seen after cleaning, as before)."""
    for segment in text.split("\n"):
        for line in clean_text(segment).splitlines():
            line = line.strip()
            if not line:
                continue
            if line.isascii() and _SENTENCE_END_RE.search(line, 0, len(line) - 1) is None:
                yield line  # blingfire breaks ASCII text only after . ! or ?: one sentence
                continue
            for sentence in _text_to_sentences(line).split("\n"):
                if sentence.strip():
                    yield sentence.strip()


#: The only characters after which blingfire ends a sentence inside an ASCII line (checked on
#: 617k news lines and by tests/test_properties.py): a line without one before its last
#: character is one sentence, and blingfire would return it unchanged.
_SENTENCE_END_RE = re.compile(r"[.!?]")


def _utterances(text: str):
    """:func:`dialogue_utterances`, lazily."""
    for line in clean_text(text).splitlines():
        if line.strip():
            yield line.strip()


def summary_sentences(text: str, lower: bool = True) -> list[list[str]]:
    """Reference highlights (one per line) -> tokenized sentences, each ending in . ! or ?.

    CNN marks the highlights of updated stories with a leading "NEW:" (12% of the CNN stories
    here); it is a label, not summary text, and a model trained on it opens its summaries with
    ``new :``. It is removed from the start of a highlight.

    Many CNN highlights lack a final period; See et al.'s ``fix_missing_period`` adds one so that
    '.' reliably marks sentence ends, which the decoder learns to emit and which
    :func:`split_generated` uses to recover sentences. A sentence whose end mark sits inside a
    closing quote or bracket (``... to . "``) already ends and gets nothing appended.
    """
    result: list[list[str]] = []
    for line in text.splitlines():
        line = _UPDATE_MARKER_RE.sub("", line)
        # split_sentences and tokenize, by their lazy forms: a one-sentence ASCII line skips
        # blingfire, and a sentence is cleaned once (the same tokens; tests/test_properties.py)
        for sentence in _sentences(line):
            tokens = _tokenize_clean(sentence, lower)
            if not tokens:
                continue
            if not _ends_sentence(tokens):
                tokens.append(".")
            result.append(tokens)
    return result


_UPDATE_MARKER_RE = re.compile(r"^\s*NEW\s*:\s*")


def _ends_sentence(tokens: list[str]) -> bool:
    """True when the tokens end in . ! or ?, possibly followed by closing quotes/brackets."""
    end = len(tokens)
    while end > 0 and tokens[end - 1] in _CLOSERS:
        end -= 1
    return end > 0 and tokens[end - 1] in SENTENCE_END


def join_sentences(sentences: list[list[str]]) -> str:
    """Tokens joined by spaces, sentences by newlines: the input format of rougeLsum."""
    return "\n".join(" ".join(s) for s in sentences)


def sentence_spans(tokens: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) of each sentence of a token list, as :func:`split_generated` cuts it: after each
    '.', '!' or '?' token, a trailing run without one a last sentence."""
    spans, start = [], 0
    for i, token in enumerate(tokens):
        if token in SENTENCE_END:
            spans.append((start, i + 1))
            start = i + 1
    if start < len(tokens):
        spans.append((start, len(tokens)))
    return spans


def split_generated(tokens: list[str]) -> list[list[str]]:
    """Split generated tokens into sentences after each '.', '!' or '?' token.

    A trailing run without end punctuation is kept as a last sentence. A closing quote after the
    period starts the next sentence: without quote direction it cannot be told from an opening one.
    An end mark right after another (``psycho ! .``) ends the same sentence, not a sentence of its
    own (the detokenized text then drops it: :func:`agentsum.data.readable.detokenize`).
    """
    sentences: list[list[str]] = []
    current: list[str] = []
    for token in tokens:
        if token in SENTENCE_END and not current and sentences and sentences[-1][-1] in SENTENCE_END:
            sentences[-1].append(token)
            continue
        current.append(token)
        if token in SENTENCE_END:
            sentences.append(current)
            current = []
    if current:
        sentences.append(current)
    return sentences
