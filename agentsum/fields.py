"""Settings dataclasses filled from plain dicts (a YAML section, a checkpoint's config).

Unknown keys and values of the wrong type are a :class:`ConfigError` naming the key, so a typo
never silently trains the wrong model. Every settings dataclass of the package is filled here:
the run configuration's sections (``agentsum.config``) and the model configurations
(``agentsum.models.build_model``). Imports nothing from agentsum.
"""

from __future__ import annotations

import dataclasses
from typing import Any


class ConfigError(ValueError):
    pass


def _coerce(value: Any, annotation: str, where: str) -> Any:
    """Check a scalar against its field's annotation; YAML 1.1 reads ``1e-4`` as a string, so numbers
    written that way are converted."""
    if value is None:
        if "None" in annotation:
            return None
        raise ConfigError(f"{where}: must not be empty")
    base = annotation.split("|")[0].strip()
    if base == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if base in ("int", "float"):
        if isinstance(value, bool):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        try:
            number = float(value) if base == "float" else int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: expected {'a number' if base == 'float' else 'an integer'}, got {value!r}") from None
        if base == "int" and isinstance(value, float) and value != int(value):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return number
    if base == "str" and not isinstance(value, str):
        raise ConfigError(f"{where}: expected a string, got {value!r}")
    return value


def fill_dataclass(kind, values: dict, where: str):
    """``kind(**values)`` with every value checked against its field's annotation."""
    annotations = {f.name: str(f.type) for f in dataclasses.fields(kind)}
    unknown = set(values) - set(annotations)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; known: {sorted(annotations)}")
    return kind(**{k: _coerce(v, annotations[k], f"{where}.{k}") for k, v in values.items()})
