"""Summarization models: everything between a ``Batch`` and a distribution over words.

``base`` holds the protocol every model implements (``SummarizationModel``: ``encode``,
``init_state``, ``step``, ``step_distribution``, a teacher-forced ``forward``, ``target_ids``) and
the pieces the models share; ``pointer`` the copy distribution (the one place where generating
and copying are mixed); ``additive`` and ``dropout`` layers; ``dca`` and ``transformer_pg`` the
models, which do not import each other.

``model.type`` in a configuration picks one: ``dca`` (Deep Communicating Agents, the default) or
``transformer_pg`` (Transformer pointer-generator with input feeding). Both read the same ``Batch``
and return the same ``CopyDistribution``, so objectives, search and the CLI work with either.

Imports ``agentsum.data`` and ``agentsum.fields`` only.
"""

from agentsum.fields import fill_dataclass
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
