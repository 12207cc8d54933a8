"""Chinese preprocessing for LCSTS-style text: sentences of words (jieba) or characters.

The same API shape as :mod:`agentsum.data.text` (``article_sentences``, ``summary_sentences``,
``split_generated``, ...) so the pipeline can switch by language. Two tokenization modes:

``"jieba"``
    Word segmentation with ``jieba.lcut(text, HMM=True)``: dictionary DAG + maximum-probability path,
    with the HMM discovering words missing from the dictionary (paper 003, section 3.1). ``jieba``
    is imported on first use and its dictionary is loaded once per process (~1 s).
``"char"``
    One token per Chinese character (and per punctuation mark or other symbol); a run of ASCII letters
    and digits stays one token ("iphone", "2015", and "3.5" with its decimal part).

Both modes first normalise the text (:func:`normalize`): NFKC, which folds full-width ASCII
("Ａ股２０１５" -> "A股2015", "，" -> ",", "！" -> "!") and other compatibility forms ("…" -> "...",
"①" -> "1"); control and format characters (zero-width space, BOM, soft hyphen, private use) are
dropped; English is lower-cased. jieba segments the *cased* NFKC text (its dictionary has cased
entries such as "T恤", "B超") and the tokens are lower-cased afterwards. Whitespace only separates
tokens and is never a token, so tokenization round-trips::

    "".join(tokenize(text, mode)) == re.sub(r"\\s+", "", normalize(text))

Summaries get no end punctuation appended (unlike English highlights): LCSTS summaries are
headlines without a final mark, and an appended "。" would be scored against references that lack it.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections.abc import Iterable, Sequence

from agentsum.data.text import sentences_up_to

MODES = ("jieba", "char")

#: Marks that end a sentence (full-width forms fold to "!" "?" under NFKC; both are listed so that
#: :func:`split_sentences` works on raw and on normalised text). ";"/"；" does not end a sentence: it
#: joins clauses, as in English, where the sentence splitter does not cut at semicolons either.
SENTENCE_END = frozenset({"。", "｡", "！", "？", "!", "?"})
#: Closing quotes and brackets that stay with the sentence whose end mark they follow.
_CLOSERS = frozenset({"”", "’", "」", "』", "）", ")", "】", "》", "〉", "〕", "］", "]", "｝", "}"})
_ASCII_QUOTES = frozenset({'"', "'"})  # closing only when the sentence holds an odd number of them

# Control (Cc, except tab/newline/CR) and format (Cf) characters, soft hyphen and the BMP private use
# area: invisible in the text, harmful as tokens (the LCSTS training data has a few U+200B, U+F06C).
_INVISIBLE_RE = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u202a-\u202e"
    r"\u2060-\u2064\u2066-\u206f\ue000-\uf8ff\ufeff\ufff9-\ufffb]"
)
_WHITESPACE_RE = re.compile(r"\s+")
# Char mode: an ASCII letter/digit run (with decimal parts: "3.5", "1.5.2"), else any one non-space char.
_CHAR_TOKEN_RE = re.compile(r"[A-Za-z0-9]+(?:\.[0-9]+)*|\S")
_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")

_jieba = None
_jieba_lock = threading.Lock()


def normalize(text: str, lower: bool = True) -> str:
    """NFKC (full-width ASCII -> half-width), invisible characters removed, lower-cased."""
    text = _INVISIBLE_RE.sub("", unicodedata.normalize("NFKC", text))
    return _lower(text) if lower else text


def _lower(text: str) -> str:
    """Lower-case character by character: ``str.lower`` on a whole string is context-dependent (a
    word-final capital sigma becomes a final sigma), so lower-casing a text and lower-casing its
    tokens one by one could disagree, and tokenization would no longer round-trip."""
    return "".join(c.lower() for c in text)


def _get_jieba():
    """The ``jieba`` module with its dictionary loaded and its log output silenced (once)."""
    global _jieba
    if _jieba is None:
        with _jieba_lock:
            if _jieba is None:
                try:
                    import jieba  # noqa: PLC0415 - optional dependency, ~0.5 s import
                except ImportError:
                    raise ImportError(
                        "Chinese word segmentation needs the 'jieba' package: `pip install jieba` "
                        "(or use mode='char', which needs nothing)"
                    ) from None
                jieba.setLogLevel(logging.WARNING)  # "Building prefix dict ..." goes to stderr otherwise
                jieba.initialize()
                _jieba = jieba
    return _jieba


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown Chinese tokenization mode {mode!r}; expected one of {MODES}")


def tokenize(text: str, mode: str = "jieba", lower: bool = True) -> list[str]:
    """Normalised tokens of ``text`` (any length, newlines allowed); whitespace is never a token."""
    _check_mode(mode)
    if mode == "char":
        return _CHAR_TOKEN_RE.findall(normalize(text, lower))
    cased = normalize(text, lower=False)
    if not cased.strip():
        return []
    tokens: list[str] = []
    for token in _get_jieba().lcut(cased, HMM=True):
        if not token or token.isspace():
            continue
        if lower:
            token = _lower(token)
        # jieba never returns a token with inner whitespace; split one defensively all the same.
        tokens.extend(token.split() if _WHITESPACE_RE.search(token) else (token,))
    return tokens


def split_sentences(text: str) -> list[str]:
    """Sentences of raw text: cut at newlines and after 。！？!? (a run of marks such as "？！" and
    the closing quotes/brackets after them stay with the sentence). Stripped; empty ones dropped.
    The text is not normalised here; :func:`tokenize` does that."""
    sentences: list[str] = []
    for line in text.splitlines():
        start = 0
        i = 0
        n = len(line)
        quotes = 0
        while i < n:
            ch = line[i]
            if ch in _ASCII_QUOTES:
                quotes += 1
            i += 1
            if ch not in SENTENCE_END:
                continue
            while i < n and (line[i] in SENTENCE_END or line[i] in _CLOSERS
                             or (line[i] in _ASCII_QUOTES and quotes % 2 == 1)):
                if line[i] in _ASCII_QUOTES:
                    quotes += 1
                i += 1
            sentences.append(line[start:i])
            start = i
            quotes = 0
        sentences.append(line[start:])
    return [s.strip() for s in sentences if s.strip()]


def article_sentences(text: str, mode: str = "jieba", lower: bool = True,
                      limit: int | None = None) -> list[list[str]]:
    """Article text -> tokenized sentences (empty sentences dropped). ``limit``: stop after the
    sentence that brings the token count to ``limit`` or more (each sentence is tokenized on its
    own, so the sentences returned are those of the unlimited call)."""
    _check_mode(mode)
    return sentences_up_to((tokenize(sentence, mode, lower) for sentence in split_sentences(text)), limit)


def summary_sentences(text: str, mode: str = "jieba", lower: bool = True) -> list[list[str]]:
    """Reference summary -> tokenized sentences. No end mark is appended (see the module docstring)."""
    return article_sentences(text, mode, lower)


def split_generated(tokens: Sequence[str]) -> list[list[str]]:
    """Split generated tokens into sentences after 。！？!? tokens.

    A run of end marks and the closing quotes/brackets right after them stay with the sentence
    (Chinese curly quotes have a direction, unlike the English '"'). A trailing run without an end
    mark is kept as a last sentence.
    """
    sentences: list[list[str]] = []
    current: list[str] = []
    ended = False
    quotes = 0
    for token in tokens:
        if ended and not (token in SENTENCE_END or token in _CLOSERS
                          or (token in _ASCII_QUOTES and quotes % 2 == 1)):
            sentences.append(current)
            current, ended, quotes = [], False, 0
        current.append(token)
        if token in _ASCII_QUOTES:
            quotes += 1
        if token in SENTENCE_END:
            ended = True
    if current:
        sentences.append(current)
    return sentences


def join_tokens(tokens: Iterable[str], mode: str = "jieba") -> str:
    """Tokens as display text: no spaces, except one between two ASCII words ("iphone 6 plus")."""
    _check_mode(mode)
    out: list[str] = []
    previous = ""
    for token in tokens:
        if not token:
            continue
        if previous and previous[-1] in _ASCII_ALNUM and token[0] in _ASCII_ALNUM:
            out.append(" ")
        out.append(token)
        previous = token
    return "".join(out)


def join_sentences(sentences: Iterable[Sequence[str]], mode: str = "jieba") -> str:
    """Sentences as display text, one per line (the layout rougeLsum expects)."""
    return "\n".join(join_tokens(s, mode) for s in sentences)


class CharTokenizer:
    """``rouge-score`` tokenizer for Chinese characters: ``tokenize(text, mode="char")``.

    One token per Chinese character or symbol, ASCII words whole, lower-cased, NFKC-normalised,
    punctuation kept (as in the usual LCSTS evaluation, which maps every character to an id).
    """

    def tokenize(self, text: str) -> list[str]:
        return tokenize(text, "char")

    def __repr__(self) -> str:
        return "CharTokenizer()"


class WhitespaceTokenizer:
    """``rouge-score`` tokenizer for pre-segmented text: ``text.split()``, nothing else."""

    def tokenize(self, text: str) -> list[str]:
        return text.split()

    def __repr__(self) -> str:
        return "WhitespaceTokenizer()"
