"""The Python API: load a model once, summarize texts.

    from agentsum import Summarizer

    summarizer = Summarizer()                          # the English dialogue model shipped with agentsum
    summarizer("Amanda: I baked cookies. Do you want some?\nJerry: Sure!")
    # -> 'Amanda baked cookies and will bring Jerry some.'   (the shipped model's words may differ)
    summarizer(["first text", "second text"], beam_size=3)   # a list in, a list out
    Summarizer("runs/samsum-m6/checkpoints/best.pt")   # any checkpoint written by agentsum train / export
    Summarizer("calls")                                # a shipped model by name (agentsum models lists them)

A string that names a shipped model (``"dialogue"``, ``"calls"``: :data:`agentsum.checkpoint.SHIPPED_MODELS`)
and is not an existing path loads that model; an existing file or directory of that name wins.

Summaries come back as text a person reads (cased from the input, detokenized; ``raw=True`` gives
the model's lower-cased tokens joined by spaces, the form ROUGE scores). Decoding settings default to
the checkpoint's ``search`` section. ``device`` is where the model runs: ``"auto"`` (the default: a
GPU where one is present, else the CPU), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``
(:func:`agentsum.devices.choose_device`, as ``train.device`` and every command's ``--device``).
``quantize="int8"`` runs the LSTM and linear layers in dynamic int8 on the CPU
(:mod:`agentsum.models.quantize`; ``--quantize int8`` on the command line); None (the default) takes
what the checkpoint asks for (``agentsum export --quantize int8``), ``"none"`` keeps float32.

Load -> prepare -> search -> words is written here once: ``agentsum summarize``, ``evaluate``,
``analyze``, the HTTP service and validation during training all decode through a Summarizer
(:meth:`Summarizer.from_model` wraps a model in memory).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from agentsum.config import Config
from agentsum.data.batch import Batch
from agentsum.data.corpus import Example
from agentsum.data.dataset import (NO_WORDS, Document, has_words, kept_tokens, prepare_all, sorted_batches,
                                   source_view)
from agentsum.data.language import text_processor
from agentsum.data.number_links import number_links
from agentsum.data.records import DataError
from agentsum.data.vocab import Vocabulary
from agentsum.decoding.copying import to_words
from agentsum.decoding.provenance import provenance, sentence_sources
from agentsum.decoding.search import Hypotheses, SearchConfig, search
from agentsum.devices import choose_device
from agentsum.fields import ConfigError
from agentsum.models.base import SummarizationModel
from agentsum.models.quantize import QUANTIZE_CHOICES, QuantizeError, quantize_model
from agentsum.models.summary_lm import NgramLM, lm_path
from agentsum import checkpoint as checkpoints

#: A text of more than this many times the tokens a model reads (in words) gets :meth:`Summarizer.length_warning`.
LONG_TEXT_FACTOR = 4
_WORD = re.compile(r"\S+")
#: What reads a summary's numbers against its source for :meth:`Summarizer.explain`: (the summary's
#: tokens, the source's tokens as the agents read them, in order) -> {summary token position: record}.
#: The default, :func:`agentsum.data.number_links.number_links`, gives the record of the service and
#: ``agentsum summarize --provenance``.
NumberReader = Callable[[Sequence[str], Sequence[str]], dict]


class Summarizer:
    """A loaded model and its preprocessing, search settings and output formatting.

    model, vocab, config: what the checkpoint holds; metadata: the rest of it (step, selection,
    provenance); language: the text processor of ``config.data``.
    """

    def __init__(self, checkpoint: str | Path | None = None, device: str | torch.device = "auto",
                 quantize: str | None = None):
        if quantize not in (None, *QUANTIZE_CHOICES):
            raise ValueError(f"quantize={quantize!r}: choose from {', '.join(QUANTIZE_CHOICES)} (None: the checkpoint's)")
        self.checkpoint: Path | None = checkpoints.checkpoint_path(checkpoint)
        if quantize == "int8" and device == "auto":
            device = "cpu"  # int8 kernels are CPU kernels
        resolved = choose_device(device, setting="device")  # before loading: a bad device fails fast
        model, vocab, config, metadata = checkpoints.load_model(self.checkpoint, resolved)
        if quantize is None:  # a file written by `agentsum export --quantize int8` asks for int8 on the CPU
            quantize = metadata.get("quantize") or "none"
            if resolved.type != "cpu":
                quantize = "none"  # on a GPU such a file runs in float
        try:
            model = quantize_model(model, quantize)
        except QuantizeError as e:
            raise ValueError(f"quantize={quantize!r}: {e}") from None
        self.quantize = quantize
        self._hold(model, vocab, config, metadata)

    @classmethod
    def from_model(cls, model: SummarizationModel, vocab: Vocabulary, config: Config,
                   metadata: dict | None = None) -> Summarizer:
        """A Summarizer of a model in memory (e.g. the one being trained); it is not put in eval mode
        here, :meth:`summarize_documents` does that while it decodes."""
        summarizer = cls.__new__(cls)
        summarizer.checkpoint, summarizer.quantize = None, "none"
        summarizer._hold(model, vocab, config, metadata or {})
        return summarizer

    def _hold(self, model, vocab: Vocabulary, config: Config, metadata: dict) -> None:
        self.model, self.vocab, self.config, self.metadata = model, vocab, config, metadata
        self.language = text_processor(config.data)

    @property
    def summary_lm_path(self) -> Path | None:
        """Where this model's summary language model is looked for (``search.lm_weight``): beside the
        checkpoint, ``NAME.lm.json.gz`` (``agentsum fit-lm`` writes it); None for a model in memory."""
        return lm_path(self.checkpoint) if self.checkpoint is not None else None

    @functools.cached_property
    def summary_lm(self) -> NgramLM | None:
        """The model's summary language model, read once when first asked for; None where there is none."""
        path = self.summary_lm_path
        return NgramLM.load(path) if path is not None and path.is_file() else None

    def lacks_summary_lm(self, search_config: SearchConfig) -> bool:
        """Whether ``search_config`` rescores its beam with a summary language model (``lm_weight`` > 0
        and a beam of more than one: greedy search has no n-best to rescore) that this model does not have."""
        return search_config.lm_weight > 0 and search_config.beam_size > 1 and self.summary_lm is None

    def check_search(self, search_config: SearchConfig) -> None:
        """A :class:`ConfigError` for settings this model cannot decode with: ``search.lm_weight``
        without a summary language model beside the checkpoint."""
        if self.lacks_summary_lm(search_config):
            where = self.summary_lm_path or "beside the checkpoint"
            raise ConfigError(f"search.lm_weight {search_config.lm_weight:g} needs a summary language model at "
                              f"{where}, which is missing; write one with `agentsum fit-lm --checkpoint "
                              f"{self.checkpoint or 'CKPT'} --data TRAIN.jsonl`, or use lm_weight 0")

    @property
    def device(self) -> torch.device:
        """Where the model's parameters are (batches are moved there to be decoded)."""
        return next(self.model.parameters()).device

    # ------------------------------------------------------------------------------ long texts
    def length_warning(self, text: str, origin: str = "text") -> str | None:
        """A warning for a text much longer than the model reads, or shorter than the summaries it
        writes, else None.

        A text of fewer words than the model's ``search.min_length`` cannot support a summary of
        that length: search lowers the minimum for it (``search.min_length_ratio``), but a model
        trained on long documents still writes a summary of the length it learnt, repeating or
        padding its figures, and the warning says so.

        The model reads an article's first :func:`~agentsum.data.dataset.kept_tokens` tokens (500 for
        the shipped dialogue model) and no more, whatever the text's length: a text of more than
        :data:`LONG_TEXT_FACTOR` times as many whitespace-separated words is summarized from its
        beginning only. For a dialogue model the warning names the shipped long-document model
        (``--model calls``). Counting is one pass over the text; nothing else is allocated for it."""
        kept = kept_tokens(self.config.data)
        limit = LONG_TEXT_FACTOR * kept
        words = 0
        for _ in _WORD.finditer(text):
            words += 1
        minimum = self.config.search.min_length
        if words < minimum:
            return (f"{origin}: {words:,} words, fewer than the {minimum} tokens this model's summaries have at "
                    f"least; it was trained on longer texts and may repeat or pad what the text states (the "
                    f"minimum length is lowered for a short text: search.min_length_ratio)")
        if words <= limit:
            return None
        share = round(100 * kept / words)
        share = f"about {share}%" if share >= 1 else "under 1%"
        message = (f"{origin}: {words:,} words, far more than this model reads (its first {kept:,} tokens, {share} "
                   f"of the text); the summary covers the beginning only")
        if self.config.data.dialogue:
            message += ("; this is a dialogue model: for earnings calls and other long documents use the shipped "
                        "long-document model (--model calls)")
        return message

    # ------------------------------------------------------------------------------ prepare
    def prepare(self, texts: Sequence[str], origin: str = "texts") -> list[Document]:
        """Documents of plain texts (the article as written is kept, for readable output); text i
        is named ``{origin}[i]`` in errors."""
        examples = [Example(id=str(i), article=t, summary="", origin=f"{origin}[{i}]") for i, t in enumerate(texts)]
        return self.prepare_examples(examples)

    def prepare_examples(self, examples: Sequence[Example], *, keep_text: bool = True) -> list[Document]:
        """Documents of corpus examples, one per example, in order (none dropped: see :func:`has_words`)."""
        return prepare_all(examples, self.config.data, drop_empty=False, keep_text=keep_text)

    def search_config(self, **changes) -> SearchConfig:
        """The checkpoint's search settings with ``changes`` (None values are left out)."""
        return dataclasses.replace(self.config.search, **{k: v for k, v in changes.items() if v is not None})

    # ------------------------------------------------------------------------------ search
    @torch.no_grad()
    def decode_batch(self, batch: Batch, search_config: SearchConfig) -> tuple[Hypotheses, list[list[str]]]:
        """Search one batch (moved to the model's device) and read every best hypothesis as words
        (OOV ids and, with ``search_config.unk_replace``, UNK replaced: :func:`~agentsum.decoding.copying.to_words`)."""
        batch = batch.to(self.device)
        self.check_search(search_config)
        lm = self.summary_lm if search_config.lm_weight > 0 else None
        hyps = search(self.model, batch, search_config, vocab=self.vocab, summary_lm=lm)
        words = to_words(hyps.tokens, hyps.copy_positions, batch, self.vocab, unk_replace=search_config.unk_replace)
        return hyps, words

    @torch.no_grad()
    def summarize_documents(self, docs: Sequence[Document], search_config: SearchConfig, batch_size: int = 16,
                            progress=None, with_attention: bool = False, bucket: bool = True):
        """Summary tokens for each document, in the order given; decoded in length-sorted batches
        (``bucket=False``: in batches of the order given, for comparison).

        With ``with_attention`` returns ``(tokens, attention)`` where ``attention[i]`` is document i's
        agent attention g^t per output token, a (len, A) tensor over its own A agents. ``progress(n)`` is called after
        every batch of n documents. The model is in eval mode while it decodes and returns to its
        previous mode after.
        """
        training = self.model.training
        self.model.eval()
        results: list[list[str]] = [[] for _ in docs]
        attention: list[torch.Tensor | None] = [None for _ in docs]
        try:
            for indices, batch in sorted_batches(docs, self.vocab, batch_size, with_targets=False, bucket=bucket):
                hyps, words = self.decode_batch(batch, search_config)
                for i, w, g in zip(indices, words, hyps.agent_attention):
                    results[i] = w
                    # the document's own agents: a batch pads to its largest agent count (data.agents: auto)
                    attention[i] = g[:, : max(len(docs[i].agents), 1)] if g is not None else None
                if progress is not None:
                    progress(len(indices))
        finally:
            self.model.train(training)
        return (results, attention) if with_attention else results

    # ------------------------------------------------------------------------------ text in, text out
    def __call__(self, texts: str | Sequence[str], *, beam_size: int | None = None, min_length: int | None = None,
                 max_length: int | None = None, raw: bool = False, batch_size: int = 16) -> str | list[str]:
        """The summary of one text (a string), or of each text of a list, in order.

        A text with no words (after preprocessing) is a :class:`agentsum.data.records.DataError`.
        """
        single = isinstance(texts, str)
        items = [texts] if single else list(texts)
        if not all(isinstance(t, str) for t in items):
            raise TypeError("texts must be a string or a sequence of strings")
        examples = [Example(id=str(i), article=t, summary="", origin=f"texts[{i}]") for i, t in enumerate(items)]
        search_config = self.search_config(beam_size=beam_size, min_length=min_length, max_length=max_length)
        out, _ = self.summarize_examples(examples, search_config, raw=raw, batch_size=batch_size)
        return out[0] if single else out

    def summarize_examples(self, examples: Sequence[Example], search_config: SearchConfig, *, raw: bool = False,
                           batch_size: int = 16, progress=None) -> tuple[list[str], list[list[str]]]:
        """(summary texts, model tokens) of corpus examples, in order; what ``agentsum summarize``
        runs. An example with no words is a DataError naming its origin ("<stdin>" for "-")."""
        docs = self.prepare_examples(examples)
        empty = ["<stdin>" if e.origin == "-" else e.origin for e, d in zip(examples, docs) if not has_words(d)]
        if empty:
            raise DataError(f"{', '.join(empty)}: {NO_WORDS}")
        tokens = self.summarize_documents(docs, search_config, batch_size, progress)
        texts = [self.language.display(t) if raw else " ".join(self.language.readable(t, d.article))
                 for t, d in zip(tokens, docs)]
        return texts, tokens

    # ------------------------------------------------------------------------------ provenance
    @torch.no_grad()
    def explain(self, texts: str | Sequence[str], *, batch_size: int = 16, numbers: NumberReader | None = number_links,
                **search) -> dict | list[dict]:
        """Summaries with the provenance of every word (:mod:`agentsum.decoding.provenance`), for one
        text (a dict) or each text of a list. ``search``: decoding settings, as :meth:`search_config`.

        Each result: ``summary`` (one sentence a line); ``words``, one per written word: ``word`` (as
        shown), ``token`` (as the model wrote it), ``copied``, ``p_gen``, ``copy_mass``, ``source``
        (the token position it drew most from, in the article's tokens as the agents read them, in
        order), ``source_word`` (that token as written in the article), ``agent`` and ``agent_index``
        (the position within the agent); ``sentences``, one per summary sentence: ``text``, ``start``
        and ``end`` (its words), ``source_sentences`` (``agent``, ``line``, ``start``/``end`` within the
        agent, ``share`` of the sentence's summed attention, ``text`` as written). Every count starts at 0.
        Each word also has ``number``: its record for a number word (where the source states it and,
        for a figure, whether for the metric the summary names: :func:`agentsum.data.number_links.number_links`,
        the record the service and ``agentsum summarize --provenance`` give), else None;
        ``numbers=None`` leaves it out, another :data:`NumberReader` replaces it.
        A checkpoint without a copy mechanism is a :class:`~agentsum.decoding.provenance.ProvenanceError`.
        """
        single = isinstance(texts, str)
        items = [texts] if single else list(texts)
        if not all(isinstance(t, str) for t in items):
            raise TypeError("texts must be a string or a sequence of strings")
        docs = self.prepare(items)
        empty = [f"texts[{i}]" for i, d in enumerate(docs) if not has_words(d)]
        if empty:
            raise DataError(f"{', '.join(empty)}: {NO_WORDS}")
        results = self.explain_documents(docs, self.search_config(**search), batch_size, numbers=numbers)
        return results[0] if single else results

    @torch.no_grad()
    def explain_documents(self, docs: Sequence[Document], search_config: SearchConfig, batch_size: int = 16,
                          numbers: NumberReader | None = number_links) -> list[dict]:
        """:meth:`explain` for prepared documents (with their articles), in order."""
        training = self.model.training
        self.model.eval()
        results: list[dict | None] = [None for _ in docs]
        try:
            for indices, batch in sorted_batches(docs, self.vocab, batch_size, with_targets=False):
                batch = batch.to(self.device)
                hyps, words = self.decode_batch(batch, search_config)
                rows = provenance(self.model, batch, hyps.tokens)
                for k, i in enumerate(indices):
                    results[i] = self.explained(docs[i], words[k], rows[k], batch.src_ids.size(2), numbers)
        finally:
            self.model.train(training)
        return results

    def explained(self, doc: Document, tokens: list[str], rows: list[dict], tokens_per_agent: int,
                  numbers: NumberReader | None = number_links) -> dict:
        """One document's :meth:`explain` result from its written tokens and their provenance rows;
        with ``numbers``, each word's ``number`` record (the one place it is added: the service, the
        CLI and :meth:`explain` all come here)."""
        shown = self.language.display_words(tokens, doc.article)  # sentences of words, aligned with tokens
        texts = self.language.sentence_texts(shown)
        source_words, source_lines = source_view(doc, self.config.data)
        lengths = [len(agent) for agent in doc.agents]
        links = numbers(tokens, [token for agent in doc.agents for token in agent]) if numbers is not None else None
        words = []
        for j, (token, word, row) in enumerate(zip(tokens, (w for sentence in shown for w in sentence), rows)):
            a, i = row["agent"], row["index"]
            words.append({"word": word, "token": token, "copied": row["copied"], "p_gen": row["p_gen"],
                          "copy_mass": row["copy_mass"], "source": row["position"],
                          "source_word": source_words[a][i] if a < len(source_words) and i < len(source_words[a])
                          else None, "agent": a, "agent_index": i})
            if links is not None:
                words[-1]["number"] = links.get(j)
        sources = sentence_sources(rows, shown, source_lines, tokens_per_agent, lengths)
        sentences, start = [], 0
        for text, sentence, chosen in zip(texts, shown, sources):
            for source in chosen:
                source["text"] = self.language.sentence_texts([source_words[source["agent"]][source["start"]:source["end"]]])[0]
            sentences.append({"text": text, "start": start, "end": start + len(sentence), "source_sentences": chosen})
            start += len(sentence)
        return {"summary": "\n".join(texts), "words": words, "sentences": sentences}

    def __repr__(self) -> str:
        quantized = f", quantize={self.quantize!r}" if self.quantize != "none" else ""
        return (f"Summarizer({str(self.checkpoint)!r}, step={self.metadata.get('step')}, device={str(self.device)!r}"
                f"{quantized})")
