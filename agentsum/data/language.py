"""Language-specific text handling, chosen by ``data.language``: the rest of the pipeline calls these
methods and never branches on the language itself.

English (``en``): lower-casing, PTB-like tokens, blingfire sentences (``agentsum.data.text``).
Chinese (``zh``): jieba words or characters (``data.zh_tokenizer``, ``agentsum.data.chinese``).
How each language is scored with ROUGE (``zh_rouge_unit``) is read from here by
``agentsum.evaluation.rouge.rouge_for``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentsum.data import chinese, readable, text

LANGUAGES = ("en", "zh")


@dataclass(frozen=True)
class TextProcessor:
    language: str = "en"
    lowercase: bool = True
    zh_tokenizer: str = "jieba"  # jieba | char
    zh_rouge_unit: str = "char"  # char | word
    dialogue: bool = False  # articles are dialogues: one utterance (line) per sentence

    def __post_init__(self):
        if self.language not in LANGUAGES:
            raise ValueError(f"data.language must be one of {LANGUAGES}, got {self.language!r}")
        if self.zh_tokenizer not in chinese.MODES:
            raise ValueError(f"data.zh_tokenizer must be one of {chinese.MODES}, got {self.zh_tokenizer!r}")

    @property
    def is_chinese(self) -> bool:
        return self.language == "zh"

    def article_sentences(self, article: str, limit: int | None = None) -> list[list[str]]:
        """Tokenized sentences; ``limit``: only as many as hold the first ``limit`` tokens."""
        if self.is_chinese:
            return chinese.article_sentences(article, self.zh_tokenizer, lower=self.lowercase, limit=limit)
        return text.article_sentences(article, lower=self.lowercase, dialogue=self.dialogue, limit=limit)

    def summary_sentences(self, summary: str) -> list[list[str]]:
        if self.is_chinese:
            return chinese.summary_sentences(summary, self.zh_tokenizer, lower=self.lowercase)
        return text.summary_sentences(summary, lower=self.lowercase)

    def split_generated(self, tokens: Sequence[str]) -> list[list[str]]:
        return chinese.split_generated(tokens) if self.is_chinese else text.split_generated(list(tokens))

    def join_sentences(self, sentences: Sequence[Sequence[str]]) -> str:
        """One sentence per line (the rougeLsum format)."""
        if self.is_chinese:
            return chinese.join_sentences(sentences, self.zh_tokenizer)
        return text.join_sentences([list(s) for s in sentences])

    def summary_text(self, tokens: Sequence[str]) -> str:
        """Generated tokens as text, one sentence per line."""
        return self.join_sentences(self.split_generated(tokens))

    def display(self, tokens: Sequence[str]) -> str:
        """Generated tokens as one line of text."""
        return chinese.join_tokens(tokens, self.zh_tokenizer) if self.is_chinese else " ".join(tokens)

    def readable(self, tokens: Sequence[str], article: str) -> list[str]:
        """Generated tokens as a person reads them, one string per sentence: English is cased
        from ``article`` and detokenized (:mod:`agentsum.data.readable`); Chinese is joined as text."""
        return self.sentence_texts(self.display_words(tokens, article))

    def sentence_texts(self, words: Sequence[Sequence[str]]) -> list[str]:
        """Sentences of shown words (:meth:`display_words`) as text, one string per sentence."""
        if self.is_chinese:
            return [self.join_sentences([s]) for s in words]
        return [readable.detokenize(s) for s in words]

    def display_words(self, tokens: Sequence[str], article: str) -> list[list[str]]:
        """The generated tokens split into sentences, each token in the form it is shown in
        (English: cased from ``article``, sentence starts capitalized; Chinese: unchanged)."""
        sentences = self.split_generated(tokens)
        if self.is_chinese:
            return [list(s) for s in sentences]
        casing = readable.Casing.from_text(article, self.dialogue) if self.lowercase else readable.Casing()
        return readable.display_words(sentences, casing)

    def lead(self, article: str, sentences: int = 3, chars: int | None = None) -> str:
        """The lead baseline: the first ``sentences`` sentences, or the first ``chars`` characters
        (whitespace excluded; the usual Chinese lead baseline), as text with one sentence per line."""
        sents = self.article_sentences(article)
        if chars is None:
            return self.join_sentences(sents[:sentences])
        kept, used = [], 0
        for sentence in sents:
            out = []
            for token in sentence:
                if used >= chars:
                    break
                token = token[: chars - used]
                out.append(token)
                used += len(token)
            if out:
                kept.append(out)
            if used >= chars:
                break
        return self.join_sentences(kept)


def text_processor(data_config) -> TextProcessor:
    d = data_config
    return TextProcessor(d.language, d.lowercase, d.zh_tokenizer, d.zh_rouge_unit, d.dialogue)
