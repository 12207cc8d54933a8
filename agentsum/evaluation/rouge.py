"""ROUGE-1/2/L F1 as most summarization papers report it: Google's ``rouge-score`` with stemming,
ROUGE-L computed over newline-separated sentences (``rougeLsum``, the summary-level LCS that the
original Perl ROUGE-1.5.5 reports).

Mind the argument order: ``rouge_score``'s ``score(target, prediction)`` takes the reference first;
the functions here take ``(predictions, references)`` and call it the right way round.

Chinese: ``rouge-score``'s default tokenizer keeps only ``[a-z0-9]`` runs, so every Chinese
character is dropped and Chinese text scores 0. Pass ``tokenizer=`` (any object with
``.tokenize(text) -> list[str]``; ``stemming`` is then ignored, as in ``rouge-score``), or use
:func:`rouge_for_language`: Chinese is scored on characters by default (:class:`CharTokenizer`),
or on jieba words (``zh_unit="word"``). :func:`rouge_for` scores with a text processor's settings
(``data.language``, ``data.zh_rouge_unit``), the way ``evaluate``, ``analyze``, ``lead3`` and
validation score.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentsum.data.chinese import CharTokenizer, WhitespaceTokenizer  # noqa: F401 - part of this module's API
from agentsum.data.chinese import tokenize as _zh_tokenize

ROUGE_TYPES = ("rouge1", "rouge2", "rougeLsum")
LANGUAGES = ("en", "zh")
ZH_UNITS = ("char", "word")


def rouge_per_document(
    predictions: Sequence[str], references: Sequence[str], stemming: bool = True, tokenizer=None
) -> list[dict]:
    """Per-document scores: a list of {rouge_type: {"p", "r", "f"}} with values in [0, 1].

    Each string holds one sentence per line (rougeLsum splits on newlines). ``tokenizer`` (an
    object with ``.tokenize(text)``) replaces rouge-score's default tokenizer and its stemmer.
    """
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references")
    from rouge_score import rouge_scorer  # imported here: it loads nltk (~60 MB), needed only to score

    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=stemming, tokenizer=tokenizer)
    out = []
    for prediction, reference in zip(predictions, references):
        scores = scorer.score(reference, prediction)  # (target, prediction)
        out.append({k: {"p": v.precision, "r": v.recall, "f": v.fmeasure} for k, v in scores.items()})
    return out


def rouge(predictions: Sequence[str], references: Sequence[str], stemming: bool = True, tokenizer=None) -> dict:
    """Mean F1 (and P/R) over documents, in percent: {"rouge1": 41.2, ..., "rouge1_p": ..., "n": N}."""
    return _mean_scores(rouge_per_document(predictions, references, stemming, tokenizer))


def _mean_scores(per_doc: list[dict]) -> dict:
    n = len(per_doc)
    result: dict = {"n": n}
    for kind in ROUGE_TYPES:
        for part, suffix in (("f", ""), ("p", "_p"), ("r", "_r")):
            result[kind + suffix] = 100.0 * sum(d[kind][part] for d in per_doc) / max(n, 1)
    return result


def rouge_for_language(
    predictions: Sequence[str],
    references: Sequence[str],
    language: str = "en",
    zh_unit: str = "char",
    per_document: bool = False,
) -> dict | list[dict]:
    """ROUGE with the settings of the language: :func:`rouge` means, or with ``per_document`` the
    :func:`rouge_per_document` list.

    ``"en"``: rouge-score's default tokenizer with stemming (what English papers report).
    ``"zh"``: no stemming; ``zh_unit="char"`` scores characters (:class:`CharTokenizer`: one token
    per character, ASCII words whole, full-width folded, lower-cased, punctuation kept);
    ``zh_unit="word"`` segments each line with jieba, joins the words with spaces and scores them with
    :class:`WhitespaceTokenizer`. Sentences stay on separate lines either way (rougeLsum).
    """
    if language not in LANGUAGES:
        raise ValueError(f"unknown ROUGE language {language!r}; expected one of {LANGUAGES}")
    if language == "en":
        per_doc = rouge_per_document(predictions, references, stemming=True)
    elif zh_unit == "char":
        per_doc = rouge_per_document(predictions, references, stemming=False, tokenizer=CharTokenizer())
    elif zh_unit == "word":
        per_doc = rouge_per_document(
            [_jieba_lines(p) for p in predictions], [_jieba_lines(r) for r in references],
            stemming=False, tokenizer=WhitespaceTokenizer(),
        )
    else:
        raise ValueError(f"unknown Chinese ROUGE unit {zh_unit!r}; expected one of {ZH_UNITS}")
    return per_doc if per_document else _mean_scores(per_doc)


def rouge_for(language, predictions: Sequence[str], references: Sequence[str],
              per_document: bool = False) -> dict | list[dict]:
    """:func:`rouge_for_language` with the settings of ``language``
    (an :class:`agentsum.data.language.TextProcessor`)."""
    return rouge_for_language(predictions, references, language.language, language.zh_rouge_unit, per_document)


def _jieba_lines(text: str) -> str:
    """Each line segmented with jieba, words joined by spaces, lines kept."""
    return "\n".join(" ".join(_zh_tokenize(line, "jieba")) for line in text.split("\n"))


def format_rouge(scores: dict) -> str:
    return (f"ROUGE-1 {scores['rouge1']:.2f}  ROUGE-2 {scores['rouge2']:.2f}  ROUGE-L {scores['rougeLsum']:.2f}"
            f"  (F1, {scores['n']} documents)")
