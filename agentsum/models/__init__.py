"""Summarization models. Each offers ``encode``, ``init_state``, ``step`` and a teacher-forced ``forward``.

``model.type`` in a configuration picks one: ``dca`` (Deep Communicating Agents, the default) or
``transformer_pg`` (Transformer pointer-generator with input feeding). Both read the same ``Batch``
and return the same ``CopyDistribution``, so objectives, search and the CLI work with either.
"""

from agentsum.config import fill_dataclass
from agentsum.models.dca import DCA, DCAConfig
from agentsum.models.transformer_pg import TransformerPG, TransformerPGConfig

__all__ = ["DCA", "DCAConfig", "TransformerPG", "TransformerPGConfig", "build_model", "MODEL_TYPES"]

MODEL_TYPES = {"dca": (DCA, DCAConfig), "transformer_pg": (TransformerPG, TransformerPGConfig)}


def build_model(model_config: dict, vocab_size: int):
    """Instantiate the model named by ``model_config['type']`` (default ``dca``)."""
    cfg = dict(model_config)
    kind = cfg.pop("type", "dca")
    if kind not in MODEL_TYPES:
        raise ValueError(f"unknown model.type {kind!r} (known: {', '.join(MODEL_TYPES)})")
    model_cls, config_cls = MODEL_TYPES[kind]
    return model_cls(fill_dataclass(config_cls, {"vocab_size": vocab_size, **cfg}, "model"))
