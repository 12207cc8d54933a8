"""Checkpoints: written atomically, read with ``weights_only=True`` (no pickled code runs).

A checkpoint is a dict of tensors and plain Python values: ``model`` and ``optimizer`` state dicts,
``config`` (the full run configuration), ``vocab`` (the token list), ``step``, ``metrics`` and the
RNG states needed to resume. :func:`export_inference` writes the inference-only form (16-bit
weights, configuration, vocabulary and provenance; no optimizer): the form of the models shipped
inside the package (:data:`SHIPPED_MODELS`), which :func:`shipped_checkpoint` and
:func:`default_checkpoint` find and :func:`checkpoint_path` resolves names to.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import torch

from agentsum.config import Config, ConfigError, apply_overrides
from agentsum.data.vocab import Vocabulary
from agentsum.models import build_model


class CheckpointError(ValueError):
    pass


def save_checkpoint(state: dict, path: str | Path) -> None:
    """Write to a temporary file in the same directory, fsync, then rename over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


#: The layout of the checkpoint dict this version writes and reads; a file with a larger number was
#: written by a newer agentsum. Checkpoints without the key are format 1.
CHECKPOINT_FORMAT = 1
_ZIP_MAGIC = b"PK\x03\x04"  # torch.save's format since PyTorch 1.6
_PICKLE_MAGIC = b"\x80"  # the legacy torch.save format starts with a pickle protocol marker


def _check_file(path: Path) -> None:
    """Named errors for what is not a checkpoint file, before torch reads it (torch's own messages
    would advise ``weights_only=False``, which must never be followed for a file from elsewhere)."""
    if path.is_dir():
        for candidate in (path / "best.pt", path / "checkpoints" / "best.pt"):
            if candidate.is_file():
                raise CheckpointError(f"{path} is a directory, not a checkpoint file; did you mean {candidate}?")
        raise CheckpointError(f"{path} is a directory, not a checkpoint file (a run keeps its checkpoints in "
                              "RUN_DIR/checkpoints/best.pt and last.pt)")
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} not found")
    with path.open("rb") as f:
        head = f.read(4)
    if not head:
        raise CheckpointError(f"{path} is empty (0 bytes), not an agentsum checkpoint")
    if head == _ZIP_MAGIC:
        if not zipfile.is_zipfile(path):
            raise CheckpointError(f"{path} is truncated or damaged: a PyTorch file whose end is missing "
                                  "(was it copied or written completely?)")
    elif not head.startswith(_PICKLE_MAGIC):
        raise CheckpointError(f"{path} is not an agentsum checkpoint: not a PyTorch file "
                              "(checkpoints are written by `agentsum train` or `agentsum export`)")


def read_checkpoint(path: str | Path, mmap: bool = False) -> dict:
    """The checkpoint dict. With ``mmap`` the tensors are mapped from the file and read only when
    used (inference never touches the optimizer state). Every failure is a :class:`CheckpointError`
    naming the file and what is wrong with it."""
    path = Path(path)
    _check_file(path)
    try:
        try:
            state = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
        except RuntimeError as e:
            if not (mmap and "mmap" in str(e)):
                raise
            # a legacy (non-zip) torch file cannot be mapped: read it whole
            state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:  # weights_only refused a Python object
        raise CheckpointError(f"{path} is not an agentsum checkpoint: it holds Python objects other than "
                              "tensors and plain values, which agentsum never loads") from None
    except Exception as e:  # damaged inside, or a foreign format
        raise CheckpointError(f"{path} is truncated or damaged: PyTorch cannot read it ({type(e).__name__})") from None
    missing = {"model", "config", "vocab"} - set(state) if isinstance(state, dict) else {"model", "config", "vocab"}
    if missing:
        raise CheckpointError(f"{path} is not an agentsum checkpoint (missing {sorted(missing)})")
    version = state.get("format", 1)
    if not isinstance(version, int) or version > CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path} was written by a newer agentsum (checkpoint format {version}; this version "
                              f"reads format {CHECKPOINT_FORMAT} and older): upgrade agentsum to read it")
    return state


TRAINING_STATE = ("model", "optimizer", "scheduler", "rng")

@dataclass(frozen=True)
class ShippedModel:
    """A model shipped inside the package (docs/model_card.md): ``file`` relative to the package,
    what it is ``for`` (``purpose``) and the ``corpus`` it was trained on."""

    name: str
    file: str
    purpose: str
    corpus: str


#: The shipped models by the name ``--model NAME`` and ``Summarizer(NAME)`` take. A file may be
#: missing from an installation (``agentsum models`` says which are there).
SHIPPED_MODELS = {
    "dialogue": ShippedModel("dialogue", "pretrained/samsum-en.pt",
                             "English chats and dialogues (`Name: text` per line), one to three sentences",
                             "SAMSum"),
    "calls": ShippedModel("calls", "pretrained/ectsum-en.pt",
                          "earnings-call transcripts and other long English documents of a few thousand words "
                          "(DCA: many agents read the whole call)", "ECTSum"),
}
#: The name of the model used when no ``--checkpoint`` or ``--model`` is given.
DEFAULT_NAME = "dialogue"
#: The default model's file, relative to the package.
DEFAULT_MODEL = SHIPPED_MODELS[DEFAULT_NAME].file


def shipped_path(name: str) -> Path:
    """Where the shipped model ``name`` lies in this installation (whether or not it is there)."""
    file = DEFAULT_MODEL if name == DEFAULT_NAME else SHIPPED_MODELS[name].file
    return Path(str(resources.files("agentsum") / file))


def default_checkpoint() -> Path:
    """The default shipped model's path; used when a command is given no ``--checkpoint`` or ``--model``."""
    path = shipped_path(DEFAULT_NAME)
    if not path.is_file():
        raise CheckpointError(f"no model is shipped with this installation ({path} is missing); "
                              "pass --checkpoint with a checkpoint written by `agentsum train`")
    return path


def shipped_checkpoint(name: str) -> Path:
    """The path of the shipped model ``name``; an unknown name, or a model this installation lacks,
    is a :class:`CheckpointError` that says what to do instead."""
    if name not in SHIPPED_MODELS:
        raise CheckpointError(f"no shipped model is called {name!r}; the shipped models are "
                              f"{', '.join(SHIPPED_MODELS)} (`agentsum models` lists them)")
    if name == DEFAULT_NAME:
        return default_checkpoint()
    path = shipped_path(name)
    if not path.is_file():
        model = SHIPPED_MODELS[name]
        raise CheckpointError(f"the shipped model {name!r} ({model.corpus}) is not in this installation: "
                              f"{path} is missing; pass --checkpoint with a checkpoint written by "
                              "`agentsum train` or `agentsum export` instead")
    return path


def checkpoint_path(checkpoint: str | Path | None) -> Path:
    """The checkpoint file ``checkpoint`` names: None is the default shipped model; a string that is
    a shipped model's name (:data:`SHIPPED_MODELS`) and not an existing path is that model; anything
    else is a path. An existing file or directory wins over a name: ``./calls`` is read if it exists."""
    if checkpoint is None:
        return default_checkpoint()
    if isinstance(checkpoint, str) and checkpoint in SHIPPED_MODELS and not os.path.exists(checkpoint):
        return shipped_checkpoint(checkpoint)
    return Path(checkpoint)


def export_inference(source: str | Path, target: str | Path, dtype: torch.dtype = torch.float16,
                     overrides: list[str] | None = None, quantize: str | None = None) -> dict:
    """Write ``source``'s weights in ``dtype`` with its configuration and vocabulary, without the
    optimizer, scheduler and RNG state: a file for summarizing only, a sixth of a training
    checkpoint's size at 16 bits. ``load_model`` reads it like any checkpoint (weights are cast
    back to the model's float32 parameters). ``overrides`` (``search.KEY=VALUE``, as ``--set``)
    change decoding defaults, e.g. a ``min_length`` chosen on validation after training; only the
    search section can change, since the weights fix the rest. ``quantize="int8"`` records that the
    model is to run in dynamic int8 on the CPU: a Summarizer of the file quantizes its LSTM and
    linear layers as it loads (:mod:`agentsum.models.quantize`; the int8 weights are computed from
    the 16-bit ones in a fraction of a second, so the file stays in 16 bits, and on a GPU it runs in
    float). Returns the metadata written."""
    state = read_checkpoint(source)
    if overrides:
        wrong = [o for o in overrides if not o.startswith("search.")]
        if wrong:
            raise ConfigError(f"--set {wrong[0]}: expected search.KEY=VALUE (only decoding defaults can change)")
        # checked like a config file's keys and values
        state["config"] = Config.from_dict(apply_overrides(state["config"], overrides), "export --set").to_dict()
    weights = {k: v.to(dtype) if v.is_floating_point() else v for k, v in state["model"].items()}
    metadata = {k: v for k, v in state.items() if k not in TRAINING_STATE}
    metadata["exported"] = {"from": Path(source).name, "dtype": str(dtype).removeprefix("torch.")}
    if quantize not in (None, "none"):
        if quantize != "int8":
            raise ConfigError(f"--quantize {quantize}: expected int8 or none")
        metadata["quantize"] = quantize
    else:
        metadata.pop("quantize", None)
    save_checkpoint({"model": weights, **metadata, "format": CHECKPOINT_FORMAT}, target)
    return metadata


def average_checkpoints(sources: list[str | Path], target: str | Path) -> dict:
    """Write the element-wise mean of ``sources``' weights (OpenNMT-py's ``onmt_average_models``,
    fairseq's ``average_checkpoints.py``) with the first one's configuration and vocabulary, without
    optimizer, scheduler and RNG state. Floating-point tensors are averaged in float64 and written in
    their own dtype; other tensors (counters) are taken from the last file. The files must hold the
    same model: the same model section, vocabulary, and parameter names and shapes; a file that
    does not is named, with what differs. Returns the metadata written."""
    if len(sources) < 2:
        raise CheckpointError(f"averaging needs at least two checkpoints, got {len(sources)}")
    first = read_checkpoint(sources[0], mmap=True)
    total = {k: v.double() if v.is_floating_point() else v for k, v in first["model"].items()}
    steps = [first.get("step")]
    for source in sources[1:]:
        state = read_checkpoint(source, mmap=True)
        if state["config"].get("model") != first["config"].get("model"):
            raise CheckpointError(f"{source}: model section {state['config'].get('model')} differs from "
                                  f"{sources[0]}'s {first['config'].get('model')}")
        if state["vocab"] != first["vocab"]:
            raise CheckpointError(f"{source}: its vocabulary differs from {sources[0]}'s (averaged weights "
                                  "would mix rows of different words)")
        names, wanted = set(state["model"]), set(first["model"])
        if names != wanted:
            raise CheckpointError(f"{source}: parameters {sorted(names ^ wanted)[:3]} are in one file only")
        for name, value in state["model"].items():
            if value.shape != total[name].shape:
                raise CheckpointError(f"{source}: {name} has shape {tuple(value.shape)}, "
                                      f"{sources[0]} {tuple(total[name].shape)}")
            total[name] = total[name] + value.double() if value.is_floating_point() else value
        steps.append(state.get("step"))
    weights = {k: (v / len(sources)).to(first["model"][k].dtype) if v.is_floating_point() else v
               for k, v in total.items()}
    metadata = {k: v for k, v in first.items() if k not in TRAINING_STATE}
    metadata["step"] = steps[-1]
    metadata["averaged"] = {"from": [Path(s).name for s in sources], "steps": steps}
    save_checkpoint({"model": weights, **metadata, "format": CHECKPOINT_FORMAT}, target)
    return metadata


def load_model(path: str | Path, device: str | torch.device = "cpu"):
    """(model in eval mode, vocabulary, config, checkpoint metadata) from a checkpoint file.

    The metadata is the checkpoint dict without its tensors (weights, optimizer and scheduler
    state, RNG state): a caller that keeps it does not keep two copies of the weights and the
    optimizer moments in memory (3x the model's size for Adam) while it decodes.
    """
    state = read_checkpoint(path, mmap=True)
    try:
        config = Config.from_dict(state["config"], f"{path}: config")
        vocab = Vocabulary(state["vocab"])
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: invalid configuration or vocabulary: {e}") from None
    try:
        model = build_model(config.model, len(vocab))
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: cannot build its model: {e}") from None
    try:
        model.load_state_dict(state["model"])
    except RuntimeError as e:
        raise CheckpointError(f"{path}: weights do not match its configuration and vocabulary ({len(vocab)} words): {e}") from None
    metadata = {k: v for k, v in state.items() if k not in TRAINING_STATE}
    return model.to(device).eval(), vocab, config, metadata
