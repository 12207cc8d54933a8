"""Which reader reads a corpus: :func:`load_examples` picks it from the corpus name and content.

``hf:NAME[:CONFIG[:SPLIT]]`` -> Hugging Face; a directory -> its ``.story`` files; a ``.story``
file -> one story; an LCSTS PART file (``<doc id=...>`` blocks) or a ``.tsv`` ->
:mod:`agentsum.data.lcsts`; a ``.json`` file -> one JSON array of objects (the original SAMSum
files); anything else -> JSON Lines (``.gz`` allowed). The readers live in
:mod:`agentsum.data.corpus` and :mod:`agentsum.data.lcsts`.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from pathlib import Path

from agentsum.data.corpus import Example, parse_hf_spec, read_hf, read_json_array, read_jsonl, read_stories
from agentsum.data.lcsts import load_lcsts, sniff_lcsts
from agentsum.data.records import DataError, ReadStats


def load_examples(spec: str, *, start: int | None = None, end: int | None = None, stats: ReadStats | None = None,
                  **options) -> list[Example]:
    """Read a corpus named by ``spec`` and keep examples ``[start:end)`` (:func:`iter_examples`, as a
    list); an empty result is a :class:`DataError`."""
    stats = stats if stats is not None else ReadStats()
    result = list(iter_examples(spec, start=start, end=end, stats=stats, **options))
    if not result:
        raise DataError(no_examples(spec, start, end, stats))
    return result


def no_examples(spec: str, start: int | None, end: int | None, stats: ReadStats) -> str:
    """The message for a corpus (or slice of one) that holds no usable example."""
    where = "" if start is None and end is None else f" slice [{start}:{end}]"
    skipped = f" ({stats.skipped} bad rows skipped)" if stats.skipped else ""
    return f"no examples in {spec}{where}{skipped}"


def iter_examples(
    spec: str,
    *,
    start: int | None = None,
    end: int | None = None,
    article_field: str = "article",
    summary_field: str = "summary",
    id_field: str = "id",
    skip_bad: bool = False,
    require_summary: bool = True,
    stats: ReadStats | None = None,
    min_human_label: int | None = None,
) -> Iterator[Example]:
    """The examples ``[start:end)`` of the corpus named by ``spec``, read as they are consumed (a
    corpus of any size streams through in bounded memory; negative bounds need the whole list).

    The reader follows the module docstring; ``min_human_label`` keeps LCSTS pairs scored at least
    that (3 gives the standard PART III test set). Default field names fall back to their
    :data:`agentsum.data.corpus.FIELD_ALIASES` (``dialogue`` for ``article``, ...); the field names
    apply to JSON Lines, JSON arrays and ``hf:`` datasets alike. Slicing counts good examples
    (after skipped rows); non-negative bounds stop reading early.
    """
    stats = stats if stats is not None else ReadStats()
    examples: Iterator[Example]
    if spec.startswith("hf:"):
        name, config, split = parse_hf_spec(spec)
        examples = read_hf(  # CNN/DailyMail's "highlights" is found through FIELD_ALIASES
            name, config, split, article_field, summary_field, id_field, skip_bad, require_summary, stats
        )
    else:
        path = Path(spec)
        if not path.exists():
            raise DataError(f"{spec}: no such file or directory")
        if path.is_dir() or path.suffix == ".story":
            examples = read_stories(path if path.is_dir() else [path], skip_bad, require_summary, stats)
        elif path.name.lower().removesuffix(".gz").endswith(".json"):
            examples = read_json_array(
                path, article_field, summary_field, id_field, skip_bad, require_summary, stats
            )
        elif min_human_label is not None or _is_lcsts(path):
            examples = load_lcsts(path, min_human_label, skip_bad, require_summary, stats)
        else:
            examples = read_jsonl(
                path, article_field, summary_field, id_field, skip_bad, require_summary, stats
            )
    if (start is None or start >= 0) and (end is None or end >= 0):
        return islice(examples, start, end)
    return iter(list(examples)[start:end])


def _is_lcsts(path: Path) -> bool:
    return path.name.lower().removesuffix(".gz").endswith(".tsv") or sniff_lcsts(path)
