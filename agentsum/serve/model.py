"""The model behind the service: a :class:`~agentsum.summarizer.Summarizer` and what the service adds
to it (request search settings, batched inference with readable output, the attention payload).

**Attention.** With ``"attention": true`` each output token carries the agent attention ``g^t`` (A
floats summing to 1, eq 10) and its ``k = 5`` source words with the largest cascaded attention
``l^t_{a,i} g^t_a`` (eq 8, 10: what UNK replacement picks from; the multi-agent pointer copies with
g_a (1 - p_a) l_{a,i}). They are computed by a teacher-forced forward pass over the generated
summary, which reproduces the decoding-time attention because step-by-step decoding and teacher
forcing compute the same thing (a test checks this against the attention search records).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import torch

from agentsum.data.dataset import Document, source_view, to_batch
from agentsum.decoding.constraints import ConstraintError, check_vocabulary
from agentsum.decoding.copying import cascaded_attention, padded_ids, source_word, teacher_forced
from agentsum.decoding.provenance import provenance as word_provenance
from agentsum.decoding.search import SearchConfig
from agentsum.serve.schemas import TOP_K, RequestError, SummarizeRequest
from agentsum.summarizer import Summarizer

#: Digits kept for attention weights in responses (enough for display, keeps payloads small).
WEIGHT_DIGITS = 5


class ServedModel:
    """A checkpoint loaded once for the service; :meth:`infer` is called in one worker thread.

    summarizer: the :class:`Summarizer` (model, vocabulary, config, language); path, step,
    selection, parameters and load_seconds describe it for ``/v1/model`` and the log.
    """

    def __init__(self, checkpoint_path: str | Path, device: str | torch.device = "auto", quantize: str | None = None):
        started = time.perf_counter()
        self.path = Path(checkpoint_path)
        self.summarizer = Summarizer(self.path, device, quantize=quantize)
        metadata = self.summarizer.metadata
        self.step: int | None = metadata.get("step")
        self.selection: dict = dict(metadata.get("selection") or {})
        self.parameters = sum(p.numel() for p in self.summarizer.model.parameters())
        self.load_seconds = time.perf_counter() - started

    @property
    def config(self):
        return self.summarizer.config

    @property
    def language(self):
        return self.summarizer.language

    def prepare(self, texts: Sequence[str]) -> list[Document]:
        return self.summarizer.prepare(texts, origin="request")

    def search_config(self, req: SummarizeRequest) -> SearchConfig:
        """The checkpoint's search settings with the request's; an impossible mix is a 422."""
        changes = {k: v for k, v in (("beam_size", req.beam_size), ("max_length", req.max_length),
                                     ("min_length", req.min_length), ("block_trigrams", req.block_trigrams),
                                     ("no_repeat_ngram_size", req.no_repeat_ngram_size),
                                     ("repetition_penalty", req.repetition_penalty),
                                     ("repeat_window", req.repeat_window),
                                     ("numbers_from_source", req.numbers_from_source),
                                     ("figure_grammar", req.figure_grammar), ("source_periods", req.source_periods),
                                     ("numbers_in_context", req.numbers_in_context),
                                     ("attribution_rerank", req.attribution_rerank), ("role_names", req.role_names),
                                     ("lm_weight", req.lm_weight))
                   if v is not None}
        if req.max_length is not None and req.min_length is None:
            changes["min_length"] = min(self.config.search.min_length, req.max_length)
        try:
            search = self.summarizer.search_config(**changes)
            check_vocabulary(self.summarizer.vocab, figure_grammar=search.figure_grammar,
                             source_periods=search.source_periods, numbers_in_context=search.numbers_in_context)
            if self.summarizer.lacks_summary_lm(search):
                raise RequestError(422, f"invalid request: lm_weight {search.lm_weight:g} needs a summary language "
                                        "model, and this model has none (`agentsum fit-lm` writes one beside its "
                                        "checkpoint)")
            return search
        except ConstraintError as e:
            raise RequestError(422, f"invalid request: {e}") from None
        except ValueError as e:  # e.g. min_length > the checkpoint's default max_length
            if "min_length" in changes and "max_length" not in changes:
                raise RequestError(422, f"invalid request: min_length ({changes['min_length']}) is larger than "
                                        f"the model's default max_length ({self.config.search.max_length}); "
                                        "give max_length too") from None
            raise RequestError(422, f"invalid request: {e}") from None

    @property
    def can_explain(self) -> bool:
        """Whether the model has a copy mechanism, so that provenance can say what it copied."""
        model = self.config.model
        pointer = model.get("pointer", "multi" if model.get("type", "dca") == "dca" else True)
        return pointer not in ("none", False)

    @torch.no_grad()
    def infer(self, docs: Sequence[Document], config: SearchConfig, attention: bool,
              provenance: bool = False) -> list[dict]:
        """Summaries of ``docs`` decoded as one batch; with ``attention``, the attention payloads too;
        with ``provenance``, where every word came from (:meth:`provenance`)."""
        # on the model's device once: search and the attention re-run read the same batch
        batch = to_batch(docs, self.summarizer.vocab, with_targets=False).to(self.summarizer.device)
        hyps, words = self.summarizer.decode_batch(batch, config)
        payloads = self.attention(batch, hyps.tokens, docs) if attention else [None] * len(docs)
        origins = self.provenance(batch, hyps.tokens, words, docs) if provenance else [None] * len(docs)
        results = []
        for doc, tokens, payload, origin in zip(docs, words, payloads, origins):
            sentences = self.language.split_generated(tokens)
            if payload is not None:
                payload["sentences"] = sentence_attention(payload, sentences)
            shown = self.language.display_words(tokens, doc.article)  # casing read from the article once
            readable = self.language.sentence_texts(shown)
            results.append({
                "summary": "\n".join(readable),  # one sentence per line
                "sentences": readable,
                "tokens": tokens,
                "words": [w for sentence in shown for w in sentence],
                "attention": payload,
                "provenance": origin,
            })
        return results

    def provenance(self, batch, token_ids: list[list[int]], words: list[list[str]], docs: Sequence[Document]
                   ) -> list[dict]:
        """Per document, :meth:`Summarizer.explained`'s words and sentences, each number word with its
        record (:func:`agentsum.data.number_links.number_links`), as ``agentsum summarize
        --provenance`` gives them."""
        rows = word_provenance(self.summarizer.model, batch, token_ids)
        out = []
        for doc, tokens, row in zip(docs, words, rows):
            explained = self.summarizer.explained(doc, tokens, row, batch.src_ids.size(2))
            out.append({"words": explained["words"], "sentences": explained["sentences"]})
        return out

    def attention(self, batch, token_ids: list[list[int]], docs: Sequence[Document], k: int = TOP_K) -> list[dict]:
        """Per output token: g^t and the top-k source words by l^t_{a,i} g^t_a (teacher-forced re-run).
        ``batch`` is on the model's device; the generated ids are put there too."""
        B, A, S = batch.src_ids.shape
        out = self.summarizer.model(teacher_forced(batch, padded_ids(token_ids, batch.src_ids.device)))
        agent = out.attention.agent.float()  # (B, T, A)
        top_w, top_i = cascaded_attention(out.attention.word, agent).topk(min(k, A * S), dim=-1)  # (B, T, k)
        agent_l, top_w_l, top_i_l = agent.tolist(), top_w.tolist(), top_i.tolist()
        payloads = []
        for b, ids in enumerate(token_ids):
            # the document's own agents: the batch pads to its largest agent count (data.agents: auto),
            # and padding agents get no attention
            n = max(len(docs[b].agents), 1)
            per_token = []
            for t in range(len(ids)):
                entries = []
                for w, pos in zip(top_w_l[b][t], top_i_l[b][t]):
                    found = source_word(batch, b, pos)
                    if w <= 0 or found is None:
                        continue  # padding (zero weight)
                    a, i, word = found
                    entries.append({"agent": a, "index": i, "word": word, "weight": round(w, WEIGHT_DIGITS)})
                per_token.append({"agent": [round(g, WEIGHT_DIGITS) for g in agent_l[b][t][:n]], "source": entries})
            words, lines = source_view(docs[b], self.config.data)  # the article tokenized once for both
            payloads.append({"agents": n, "source_tokens": [list(x) for x in batch.src_tokens[b][:n]],
                             "per_token": per_token, "source_words": words, "source_lines": lines})
        return payloads


def sentence_attention(payload: dict, sentences: list[list[str]]) -> list[dict]:
    """Token span and mean agent attention g^t of every summary sentence."""
    rows = [p["agent"] for p in payload["per_token"]]
    out, start = [], 0
    for sentence in sentences:
        end = start + len(sentence)
        chunk = rows[start:end]
        out.append({"start": start, "end": end,
                    "agent": [round(sum(r[a] for r in chunk) / max(len(chunk), 1), WEIGHT_DIGITS)
                              for a in range(payload["agents"])]})
        start = end
    return out
