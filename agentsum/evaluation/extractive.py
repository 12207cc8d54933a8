"""Extractive baselines as users know them: Lead-K, LexRank (Erkan and Radev, 2004) and TextRank
(Mihalcea and Tarau, 2004), the last two from the ``sumy`` library (``agentsum extract``; ``agentsum
lead3`` is the lead). Their summaries are scored by the same code as a model's
(:func:`agentsum.evaluation.evaluate.score_summaries`).

sumy reads text with its own tokenizer, which needs NLTK's ``punkt`` data, and a machine without
internet lacks it. Here sumy never tokenizes: :class:`ProjectTokenizer` gives it the project's own
sentences and words (``data.language``: blingfire sentences and PTB-like tokens for English, jieba
words or characters for Chinese), so the extracted sentences are the ones Lead-K and the models see,
and nothing is downloaded. sumy's English summarizers stem with NLTK's Snowball stemmer (code, no
data) and drop sumy's packaged stop words; Chinese words are not stemmed and drop sumy's Chinese
stop words.

Choices:

* A sentence is the project's sentence (``TextProcessor.article_sentences``): for dialogues
  (``data.dialogue: true``) an utterance. Sentences without a letter or digit are never picked.
* The whole article is read, not the 400/800 tokens a model reads.
* A sentence written twice is offered once (its first place): sumy keys its ratings by sentence
  text, so two copies would share one rating and could both be picked.
* The ``K`` best-rated sentences are returned in document order (ties go to the earlier sentence);
  an article with fewer sentences returns them all.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentsum.data.language import TextProcessor

METHODS = ("lead", "lexrank", "textrank")
#: names as printed beside the scores (``LexRank-3``)
METHOD_NAMES = {"lead": "Lead", "lexrank": "LexRank", "textrank": "TextRank"}
#: sumy's names for the languages of ``data.language``
SUMY_LANGUAGES = {"en": "english", "zh": "chinese"}


class ProjectTokenizer:
    """sumy's tokenizer interface (``to_sentences``, ``to_words``) over the project's text processing:
    :meth:`to_sentences` splits and tokenizes an article as ``language`` does and returns each sentence
    as its tokens joined by spaces; :meth:`to_words` reads such a sentence back into its words
    (tokens holding a letter or digit: punctuation is not a word, as in sumy's own tokenizer)."""

    def __init__(self, language: TextProcessor):
        self.language = language

    def to_sentences(self, text: str) -> tuple[str, ...]:
        return tuple(" ".join(tokens) for tokens in self.language.article_sentences(text))

    def to_words(self, sentence: str) -> tuple[str, ...]:
        return tuple(t for t in sentence.split() if any(ch.isalnum() for ch in t))


class Extractor:
    """An extractive summarizer: ``extractor(article)`` is the summary, one sentence per line, as
    the project tokenizes it (what ROUGE and the numbers figures read, like a model's output).

    ``method``: ``lead`` (the first ``sentences`` sentences, or with ``chars`` the first ``chars``
    characters, the usual Chinese lead baseline), ``lexrank`` or ``textrank`` (the ``sentences``
    most central sentences by sumy's LexRank / TextRank, in document order).
    """

    def __init__(self, method: str, language: TextProcessor | None = None, sentences: int = 3,
                 chars: int | None = None):
        if method not in METHODS:
            raise ValueError(f"unknown extractive method {method!r}; expected one of {', '.join(METHODS)}")
        if sentences < 1:
            raise ValueError(f"sentences must be at least 1, got {sentences}")
        if chars is not None and method != "lead":
            raise ValueError(f"chars applies to the lead method only, not {method!r}")
        if chars is not None and chars < 1:
            raise ValueError(f"chars must be at least 1, got {chars}")
        self.method, self.sentences, self.chars = method, sentences, chars
        self.language = language or TextProcessor()
        self.tokenizer = ProjectTokenizer(self.language)
        self._summarizer = _sumy_summarizer(method, self.language) if method != "lead" else None

    @property
    def name(self) -> str:
        """``Lead-3``, ``LexRank-3``, ``Lead-20 characters``."""
        if self.chars is not None:
            return f"Lead-{self.chars} characters"
        return f"{METHOD_NAMES[self.method]}-{self.sentences}"

    def __call__(self, article: str) -> str:
        if self.method == "lead":
            return self.language.lead(article, self.sentences, self.chars)
        sentences = self.language.article_sentences(article)
        return self.language.join_sentences([sentences[i] for i in self.select(sentences)])

    def select(self, sentences: Sequence[Sequence[str]]) -> list[int]:
        """Indices (ascending) of the sentences this method picks from tokenized ``sentences``."""
        if self.method == "lead":
            return list(range(min(self.sentences, len(sentences))))
        from sumy.models.dom import ObjectDocumentModel, Paragraph, Sentence

        first: dict[str, int] = {}  # each distinct sentence at its first place
        for i, tokens in enumerate(sentences):
            text = " ".join(tokens)
            if text not in first and self.tokenizer.to_words(text):
                first[text] = i
        if not first:
            return []
        document = ObjectDocumentModel([Paragraph([Sentence(text, self.tokenizer) for text in first])])
        picked = self._summarizer(document, self.sentences)
        return sorted(first[str(s)] for s in picked)


def _sumy_summarizer(method: str, language: TextProcessor):
    """sumy's LexRank or TextRank summarizer for ``language``, with its stemmer and stop words."""
    from sumy.nlp.stemmers import Stemmer
    from sumy.summarizers.lex_rank import LexRankSummarizer
    from sumy.summarizers.text_rank import TextRankSummarizer
    from sumy.utils import get_stop_words

    name = SUMY_LANGUAGES[language.language]
    summarizer = {"lexrank": LexRankSummarizer, "textrank": TextRankSummarizer}[method](Stemmer(name))
    summarizer.stop_words = get_stop_words(name)
    return summarizer


def extract_summaries(articles: Sequence[str], method: str, language: TextProcessor | None = None,
                      sentences: int = 3, chars: int | None = None) -> list[str]:
    """The :class:`Extractor` summary of every article, in order."""
    extractor = Extractor(method, language, sentences, chars)
    return [extractor(article) for article in articles]
