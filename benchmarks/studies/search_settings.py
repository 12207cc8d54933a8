"""The search settings a study decodes with: recorded beside its scores, read back, and compared.

A study compares pairs (DCA against one agent, a change on and off, RL against its control), and a
pair is a comparison of models only when both are decoded alike. Each checkpoint carries its preset's
search settings, and the presets differ (``ectsum-m1-long`` decodes 20-120 tokens with no repeat
window, ``ectsum-m6`` 30-120 tokens with a window of 3), so every study pins one set in its script
(``SEARCH=(...)``, passed to ``agentsum evaluate`` or ``quality_curve.py``) and the tables check the
settings each row recorded: ``agentsum evaluate`` writes them to ``scores.json``, ``quality_curve.py``
to every ``curve.jsonl`` record.

The settings are :class:`~agentsum.decoding.search.SearchConfig`'s fields, by its names, except
``block_trigrams``: the ``no_repeat_ngram_size`` recorded beside it is the n-gram blocking in force
(3 with trigram blocking, whatever else sets it). Older records hold fewer: curve.jsonl records
before these were written hold ``beam``, ``min_length`` and ``max_length``; scores.json ones lacked
``min_length``, ``max_length`` and ``numbers_from_source``. A setting a record lacks is unknown, not
equal to anything.
"""

from __future__ import annotations

import dataclasses

from agentsum.decoding.search import SearchConfig

#: The settings compared, in the order they are written.
FIELDS = tuple(f.name for f in dataclasses.fields(SearchConfig) if f.name != "block_trigrams")
#: How a table cell names each (its value follows).
SHORT = {"beam_size": "beam", "min_length": "min", "max_length": "max", "no_repeat_ngram_size": "ngram block",
         "repetition_penalty": "repetition penalty", "repeat_window": "repeat window",
         "numbers_from_source": "numbers from source", "length_penalty": "length penalty",
         "unk_replace": "unk replace", "min_length_ratio": "min length ratio", "figure_grammar": "figure grammar",
         "source_periods": "source periods", "numbers_in_context": "numbers in context"}


def settings_of(search: SearchConfig) -> dict:
    """Every setting ``search`` decodes with, as :data:`FIELDS` name them (for a record)."""
    return {name: search.ngram_block if name == "no_repeat_ngram_size" else getattr(search, name) for name in FIELDS}


def recorded(record: dict) -> dict:
    """The settings a ``scores.json`` or ``curve.jsonl`` record holds, old or new."""
    settings = {name: record[name] for name in FIELDS if name in record}  # None is a value: min_length_ratio off
    if "beam_size" not in settings and record.get("beam") is not None:  # curve.jsonl before the full record
        settings["beam_size"] = record["beam"]
    if "no_repeat_ngram_size" not in settings and record.get("block_trigrams") is not None:
        settings["no_repeat_ngram_size"] = 3 if record["block_trigrams"] else 0
    return settings


def differences(a: dict, b: dict) -> list[str]:
    """'min_length 20 / 30' for every setting both record with different values."""
    return [f"{name} {show(a[name])} / {show(b[name])}" for name in FIELDS
            if name in a and name in b and a[name] != b[name]]


def unrecorded(settings: list[dict]) -> tuple[list[str], list[str]]:
    """(the settings none of ``settings`` records, those some record and others do not)."""
    counts = {name: sum(name in s for s in settings) for name in FIELDS}
    return ([name for name, n in counts.items() if n == 0],
            [name for name, n in counts.items() if 0 < n < len(settings)])


def show(value) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"{value:g}" if isinstance(value, float) else str(value)


def describe(settings: dict) -> str:
    """'beam 5, min 20, max 120, ngram block 3, ...': the recorded settings, in :data:`FIELDS` order."""
    return ", ".join(f"{SHORT.get(name, name)} {show(settings[name])}" for name in FIELDS if name in settings) \
        or "none recorded"


def labels(settings: dict[str, dict]) -> dict[str, str]:
    """``s1``, ``s2``, ... per distinct settings, in order of first appearance: name -> label."""
    seen: list[dict] = []
    out = {}
    for name, s in settings.items():
        if s not in seen:
            seen.append(s)
        out[name] = f"s{seen.index(s) + 1}"
    return out
