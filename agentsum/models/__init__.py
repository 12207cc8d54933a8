"""Summarization models. Each offers ``encode``, ``init_state``, ``step`` and a teacher-forced ``forward``."""

from agentsum.config import fill_dataclass
from agentsum.models.dca import DCA, DCAConfig

__all__ = ["DCA", "DCAConfig", "build_model"]


def build_model(model_config: dict, vocab_size: int):
    """Instantiate the model named by ``model_config['type']`` (default ``dca``)."""
    cfg = dict(model_config)
    kind = cfg.pop("type", "dca")
    if kind == "dca":
        return DCA(fill_dataclass(DCAConfig, {"vocab_size": vocab_size, **cfg}, "model"))
    raise ValueError(f"unknown model.type {kind!r} (known: dca)")
