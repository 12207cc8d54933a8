"""Readable English output: generated lower-cased tokens -> text as a person writes it.

The models read and write lower-cased PTB-like tokens (:mod:`agentsum.data.text`), which is what ROUGE
is computed on. People read ``Amanda can't come tomorrow.``, not ``amanda ca n't come tomorrow .``;
this module turns the second into the first, for ``summarize``, the HTTP API and the web page:

* **Casing** is restored from the source document (:class:`Casing`): every token takes its most
  frequent written form in the source, counted where the casing is informative. A word seen only
  at the start of a sentence (``Tomorrow we go``) says nothing about its casing and stays lower
  case, except a dialogue's speaker names (``Amanda: ...``), which are names wherever they stand.
  ``i`` is always ``I``; English function words (``and``, ``the``, ``will`` ...) are always lower
  case, since chats capitalize them at random. A word the source does not have (generated from the vocabulary) stays
  lower case.
* **Detokenization** (:func:`detokenize`) undoes the tokenizer's splits: no space before
  punctuation and clitics (``ca n't`` -> ``can't``, as PTB splits it, ``amanda 's`` -> ``amanda's``), none inside
  brackets, and straight double quotes alternate between opening and closing.
* **Sentence starts** are capitalized.

Chinese output is joined by :mod:`agentsum.data.chinese` and is not touched here.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from agentsum.data import text
#: Tokens written without a space before them.
_NO_SPACE_BEFORE = frozenset({".", ",", "!", "?", ";", ":", ")", "]", "}", "%", "...", "n't", "'s", "'re", "'ve",
                              "'ll", "'d", "'m"})
#: English function words: always written lower case mid-sentence, whatever a chat's casing
#: ("And then..." after an emoticon, "OR" shouted): a source casing is trusted for content words only.
FUNCTION_WORDS = frozenset("""
a an the and or but nor so yet if then than because as of at by for from in into on onto to with without
about above after before below between during over under up down out off through since until upon via
is are was were be been being am do does did done have has had having will would shall should can could
may might must not no yes he she it they we you me him her them us my your his its our their mine yours
this that these those there here who whom whose which what when where why how all any some each every
both either neither one other another such very too also just only even still again ever never
""".split())
#: After these tokens the next word starts a sentence (or an utterance, after "Speaker:").
_STARTS_AFTER = frozenset({".", "!", "?", ":", "..."})
#: Tokens written without a space after them.
_NO_SPACE_AFTER = frozenset({"(", "[", "{", "$", "#", "@"})
#: ... except a currency sign before a word: ``$1.10`` and ``$(0.03)``, but ``$ per share`` (a summary
#: that writes a currency sign where no figure fits) stays apart, not ``$per share``.
_CURRENCY = frozenset({"$"})
_AMOUNT_START = re.compile(r"[\d.(]")


class Casing:
    """The written form of each lower-cased token, learned from one source text.

    ``Casing.from_text(article, dialogue=True)`` reads the article with the same tokenizer as the
    model (rules applied to the original casing), so every model token has a cased counterpart.
    """

    def __init__(self, forms: dict[str, str] | None = None):
        self.forms: dict[str, str] = dict(forms or {})

    @classmethod
    def from_sentences(cls, sentences: Iterable[Sequence[str]], speakers: Iterable[str] = ()) -> "Casing":
        """Most frequent form of every token from cased sentences; a token that starts a sentence
        (or follows ``.`` ``!`` ``?`` ``:``) counts only when it is a speaker name (in ``speakers``, cased)."""
        counts: dict[str, Counter] = defaultdict(Counter)
        for sentence in sentences:
            previous = None
            for token in sentence:
                # A token that starts a sentence, or follows an end mark inside one (a missed
                # split, or the text after "Speaker:"), is capitalized by convention, not by casing.
                if (previous is None or previous in _STARTS_AFTER) and token not in speakers:
                    previous = token
                    continue
                counts[token.lower()][token] += 1
                previous = token
        for name in speakers:
            counts[name.lower()][name] += 1
        # Ties go to the form with more capitals ("iPhone" over "iphone"): most ties are between a
        # name written once properly and once lazily in a chat.
        forms = {low: max(c.items(), key=lambda kv: (kv[1], sum(ch.isupper() for ch in kv[0])))[0]
                 for low, c in counts.items()}
        return cls(forms)

    @classmethod
    def from_text(cls, article: str, dialogue: bool = False) -> "Casing":
        if dialogue:
            units = text.dialogue_utterances(article)
            sentences = [text.tokenize(u, lower=False) for u in units]
            speakers = {s[0] for s in sentences if len(s) > 1 and s[1] == ":"}
        else:
            sentences = [text.tokenize(s, lower=False) for s in text.split_sentences(text.strip_source_prefix(article))]
            speakers = set()
        return cls.from_sentences(sentences, speakers)

    def __call__(self, token: str) -> str:
        if token == "i":
            return "I"
        if token in FUNCTION_WORDS:
            return token
        return self.forms.get(token, token)


#: A placeholder such as SAMSum's ``<file_gif>`` or ``<file:photo>``, which the tokenizer splits into
#: ``<`` ``file_gif`` ``>``: at most this many tokens between the brackets, each of these characters
#: (the web page's ``PLACEHOLDER_TOKENS`` and ``PLACEHOLDER_PART``).
_PLACEHOLDER_TOKENS = 3
_PLACEHOLDER_PART = re.compile(r"^[\w:.\-]+$")


def _placeholder_end(tokens: Sequence[str], i: int) -> int | None:
    """The index of the ``>`` closing a placeholder opened by ``tokens[i] == "<"``, or None."""
    for j in range(i + 1, min(i + 1 + _PLACEHOLDER_TOKENS, len(tokens) - 1) + 1):
        if tokens[j] == ">" and j > i + 1:
            return j
        if not _PLACEHOLDER_PART.match(tokens[j]):
            return None
    return None


_ENDS = (".", "!", "?")


def detokenize(tokens: Sequence[str]) -> str:
    """PTB-like tokens -> text with natural spacing (no casing changes); a placeholder such as
    ``<file_gif>`` is written as one word. An end mark (``.`` ``!`` ``?``) right after another is
    left out: ``psycho ! .`` reads ``psycho!``."""
    tokens = list(tokens)
    joined: list[str] = []
    i = 0
    while i < len(tokens):
        end = _placeholder_end(tokens, i) if tokens[i] == "<" else None
        joined.append("".join(tokens[i:end + 1]) if end is not None else tokens[i])
        i = end + 1 if end is not None else i + 1
    tokens = joined
    out: list[str] = []
    quote_open = False
    glue_next = False
    for token in tokens:
        low = token.lower()
        if token == '"':
            if quote_open:
                if out:
                    out[-1] += token
                else:
                    out.append(token)
                glue_next = False
            else:
                out.append(token)
                glue_next = True
            quote_open = not quote_open
            continue
        if token in _ENDS and out and out[-1][-1:] in _ENDS:
            continue  # "psycho ! ." -> "psycho!": a second end mark says nothing
        if glue_next == "currency" and not _AMOUNT_START.match(token):
            glue_next = False
        if out and (low in _NO_SPACE_BEFORE or glue_next):
            out[-1] += token
        else:
            out.append(token)
        glue_next = "currency" if low in _CURRENCY else low in _NO_SPACE_AFTER
    return " ".join(out)


def capitalize_first(sentence: str) -> str:
    """Upper-case the first letter (after any opening quotes or brackets)."""
    for i, ch in enumerate(sentence):
        if ch.isalpha():
            return sentence[:i] + ch.upper() + sentence[i + 1:]
        if ch.isalnum():
            return sentence
    return sentence


def display_words(sentences: Sequence[Sequence[str]], casing: Casing | None = None) -> list[list[str]]:
    """Generated sentences -> the same tokens as they are shown: cased, each sentence's first
    word capitalized. Aligned one to one with the input (the web page colours token by token)."""
    casing = casing or Casing()
    shown: list[list[str]] = []
    for sentence in sentences:
        words = [casing(t) for t in sentence]
        for i, word in enumerate(words):
            if any(ch.isalnum() for ch in word):
                words[i] = capitalize_first(word)
                break
        shown.append(words)
    return shown


def readable_sentences(sentences: Sequence[Sequence[str]], casing: Casing | None = None) -> list[str]:
    """Generated sentences (lower-cased tokens) -> cased, detokenized sentences, each capitalized."""
    return [detokenize(words) for words in display_words(sentences, casing) if words]


def readable(tokens: Sequence[str], source: str | None = None, dialogue: bool = False) -> str:
    """Generated tokens -> one line of readable text, cased from ``source`` when given."""
    casing = Casing.from_text(source, dialogue) if source else Casing()
    return " ".join(readable_sentences(text.split_generated(list(tokens)), casing))
