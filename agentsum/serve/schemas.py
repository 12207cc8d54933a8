"""The service's request and response schemas (pydantic; they make ``/openapi.json``) and its limits.

Errors are ``{"error": message}`` (:class:`ErrorResponse`, plus ``errors``, one entry per problem,
for invalid requests); :class:`RequestError` is how the service's code asks for one.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictStr, WithJsonSchema,
                      model_validator)

#: Source words reported per output token in the attention payload.
TOP_K = 5
MAX_BEAM = 16
MAX_LENGTH = 500
MAX_NGRAM = 10
MAX_PENALTY = 10.0


def _json_integer(value: Any) -> Any:
    """A JSON Schema integer: an int, or a number with no fraction (``5.0``); never a bool or a string."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("Input should be a valid integer")
    if isinstance(value, float):
        if not (math.isfinite(value) and value.is_integer()):
            raise ValueError("Input should be a valid integer, got a number with a fractional part")
        return int(value)
    return value


def _json_number(value: Any) -> Any:
    """A JSON number (int or float); never a bool or a numeric string."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("Input should be a valid number")
    return value


def json_int(ge: int, le: int):
    """``integer`` in [ge, le] in the schema, and what JSON Schema means by it: 5 and 5.0 alike."""
    return Annotated[int, Field(ge=ge, le=le), BeforeValidator(_json_integer)]


#: A JSON number in (0, MAX_PENALTY].
Penalty = Annotated[float, Field(gt=0, le=MAX_PENALTY), BeforeValidator(_json_number)]
#: A text with something other than whitespace in it: the schema's pattern ``\S``, whose whitespace is
#: ECMA-262's (JSON Schema's regular expressions), checked with its own message by :func:`blank`.
TEXT_SCHEMA = {"type": "string", "pattern": r"\S"}
#: ECMA-262's white space and line terminators: ``\s`` in a JSON Schema pattern. (Python's ``str.isspace``
#: also counts the separators U+001C-U+001F and U+0085, which a schema's ``\S`` accepts.)
ECMA_SPACE = frozenset("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
                       "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")


def blank(text: str) -> bool:
    r"""Whether ``text`` has nothing but whitespace (what the schema's ``\S`` pattern refuses)."""
    return all(ch in ECMA_SPACE for ch in text)


class SummarizeRequest(BaseModel):
    """One text or a list of texts, and optional decoding settings (defaults: the checkpoint's config).

    The schema states what is checked: exactly one of ``text`` / ``texts`` (``oneOf``), texts that are
    not only whitespace, ``texts`` of at most the server's ``max_texts`` items (set when the app is
    made), integers given as 5 or 5.0. What no schema can say is answered 422 with its reason: a text
    of punctuation or symbols only (no words to summarize), ``min_length`` above ``max_length``."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "oneOf": [{"required": ["text"]}, {"required": ["texts"]}],
        "examples": [{"text": "The cat chased a dog near the park. The owl met a fox near the river."},
                     {"texts": ["First article ...", "Second article ..."], "beam_size": 5, "attention": True}]})

    # Validated as optional (an explicit null is refused below); published as what must be sent.
    text: Annotated[StrictStr | None, WithJsonSchema(TEXT_SCHEMA)] = Field(
        None, description="one article (give either text or texts)")
    texts: Annotated[list[StrictStr] | None, WithJsonSchema({"type": "array", "items": TEXT_SCHEMA, "minItems": 1})] = Field(
        None, min_length=1, description="several articles, summarized in order")
    beam_size: json_int(1, MAX_BEAM) | None = Field(None, description="beam width; 1 = greedy")
    max_length: json_int(1, MAX_LENGTH) | None = Field(None, description="at most this many summary tokens")
    min_length: json_int(0, MAX_LENGTH) | None = Field(None, description="no end of summary before this many tokens")
    block_trigrams: StrictBool | None = Field(None, description="forbid repeating a trigram")
    no_repeat_ngram_size: json_int(0, MAX_NGRAM) | None = Field(
        None, description="forbid repeating any n-gram of this size (0: off)")
    repetition_penalty: Penalty | None = Field(None, description="multiply the log-probability of a word already in the "
                                                              "summary by this (> 1 discourages repeats; 1: off)")
    repeat_window: json_int(0, MAX_NGRAM) | None = Field(
        None, description="forbid a word that is one of the summary's last this many words (2 forbids 'X and X'; 0: off)")
    numbers_from_source: StrictBool | None = Field(
        None, description="true: a number may be copied from the text but never generated, so every number of the "
                          "summary is in the text (default: the model's; on for the ECTSum presets)")
    figure_grammar: StrictBool | None = Field(
        None, description="true: a currency sign only before a number, scale words and percent only after one, never "
                          "two units on one number (default: the model's)")
    source_periods: StrictBool | None = Field(
        None, description="true: a period (q3, fy, first quarter) only where the text states it and it agrees with "
                          "the quarter the text reports (a later period in guidance)")
    numbers_in_context: StrictBool | None = Field(
        None, description="true: a number in a summary sentence that has named a metric is copied only from "
                          "sentences of the text stating that metric, for the sentence's period")
    lm_weight: Annotated[float, Field(ge=0, le=10), BeforeValidator(_json_number)] | None = Field(
        None, description="w > 0: rescore the beam with the model's summary language model, search score + w times its "
                          "log-probability per token (0.1 for the shipped dialogue model; 0: off; a model without "
                          "one answers 422)")
    attribution_rerank: StrictBool | None = Field(
        None, description="true: of a chat's beam, the best summary with the fewest sentences that give a statement "
                          "to someone who wrote none of its words wins (beam > 1; other texts are unchanged)")
    role_names: StrictBool | None = Field(
        None, description="true: as attribution_rerank, and a chat summary's sentence that gives a statement to someone "
                          "who wrote none of its words is also tried with the person who did as its subject, scored "
                          "as the search would score it; kept where the beam could have kept it (beam > 1; other "
                          "texts are unchanged)")
    attention: StrictBool = Field(False, description="include per-token agent and source attention")
    provenance: StrictBool = Field(False, description="include where every summary word came from: copied or "
                                                      "generated, the source word and agent it drew most from, each "
                                                      "number linked to the source, each sentence's source sentences")

    @model_validator(mode="after")
    def _one_input(self) -> SummarizeRequest:
        for name in ("text", "texts"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"'{name}' is null; leave it out instead")
        if (self.text is None) == (self.texts is None):
            raise ValueError("give exactly one of 'text' (a string) or 'texts' (a list of strings)")
        if self.text is not None and blank(self.text):
            raise ValueError("'text' is empty or only whitespace")
        for i, t in enumerate(self.texts or []):
            if blank(t):
                raise ValueError(f"texts[{i}] is empty or only whitespace")
        if self.min_length is not None and self.max_length is not None and self.min_length > self.max_length:
            raise ValueError(f"min_length ({self.min_length}) is larger than max_length ({self.max_length})")
        return self

    def documents(self) -> list[str]:
        return [self.text] if self.text is not None else list(self.texts or [])


class SourceWord(BaseModel):
    agent: int = Field(description="agent index a (0-based)")
    index: int = Field(description="token index i inside the agent's source tokens")
    word: str
    weight: float = Field(description="cascaded attention l^t_{a,i} * g^t_a")


class TokenAttention(BaseModel):
    agent: list[float] = Field(description="agent attention g^t (one weight per agent, sums to 1)")
    source: list[SourceWord] = Field(description=f"the top-{TOP_K} source words by cascaded attention")


class SentenceAttention(BaseModel):
    start: int = Field(description="index of the sentence's first token in tokens")
    end: int = Field(description="index after its last token")
    agent: list[float] = Field(description="mean agent attention over the sentence's tokens")


class AttentionPayload(BaseModel):
    agents: int = Field(description="the document's agents (with data.agents: auto, as many as its length needs)")
    source_tokens: list[list[str]] = Field(description="the (preprocessed, truncated) source tokens of every agent")
    source_words: list[list[str]] = Field(description="the same tokens as written in the text (original casing)")
    source_lines: list[list[int]] = Field(description="per agent, the indices of its tokens that begin a sentence "
                                                      "(an utterance, for a dialogue model)")
    per_token: list[TokenAttention] = Field(description="one entry per output token, aligned with tokens")
    sentences: list[SentenceAttention]


class NumberLink(BaseModel):
    supported: bool = Field(description="every number this word states is stated in the source")
    occurrences: list[int] = Field(description="source token positions (as `source`) stating a matching number")
    claim: Literal["in_context", "elsewhere", "absent"] = Field(description=(
        "in_context: the source states the number as the summary does: for its metric, as its own value (not a "
        "comparison), with its basis, change or level, direction and period (with no metric, just in the source); "
        "elsewhere: in the source, but stated for something else (another metric or period, or as an analysts' "
        "estimate); absent: not in the source"))
    metric: str | None = Field(None, description="the metric the summary states the number for (e.g. eps); null "
                                                 "when its sentence names none")
    context_occurrences: list[int] = Field(default_factory=list, description=(
        "source token positions (as `source`) of the number inside the sentences that state it so"))


class ProvenanceWord(BaseModel):
    word: str = Field(description="the word as shown (aligned with the summary's words)")
    token: str = Field(description="the word as the model wrote it")
    copied: bool = Field(description="the copy part of its probability is larger than the generated part")
    p_gen: float = Field(description="the generate/copy switch at this step")
    copy_mass: float = Field(description="the copied share of the word's probability")
    source: int = Field(description="the source token it drew most from: its position among the agents' tokens, in order")
    source_word: str | None = Field(description="that source token as written in the text")
    agent: int = Field(description="the agent holding that token (0-based)")
    agent_index: int = Field(description="its position within the agent")
    number: NumberLink | None = Field(None, description="for a number: whether the source states it, where, and "
                                                            "whether for the metric the summary gives it")


class SourceSentence(BaseModel):
    agent: int
    line: int = Field(description="the sentence's number within its agent (0-based)")
    start: int = Field(description="its first token within the agent")
    end: int = Field(description="after its last token")
    share: float = Field(description="its part of the summary sentence's summed attention")
    text: str


class ProvenanceSentence(BaseModel):
    text: str
    start: int = Field(description="index of the sentence's first word in words")
    end: int
    source_sentences: list[SourceSentence] = Field(
        description="the source sentences holding half of the sentence's summed attention, at most three, and "
                    "the sentence each of its copied numbers was copied from, in document order")


class ProvenancePayload(BaseModel):
    words: list[ProvenanceWord]
    sentences: list[ProvenanceSentence]


class Summary(BaseModel):
    summary: str = Field(description="the summary as text, one sentence per line: cased from the article and "
                                     "detokenized (English)")
    sentences: list[str] = Field(description="the summary's sentences as text")
    tokens: list[str] = Field(description="the model's output tokens (lower-cased, as ROUGE scores them)")
    words: list[str] = Field(description="tokens as shown: cased from the article, sentence starts capitalized; "
                                         "aligned with tokens")
    attention: AttentionPayload | None = None
    provenance: ProvenancePayload | None = None
    warnings: list[str] = Field(default_factory=list, description=(
        "what the reader should know about this summary, one message each (empty for most texts): a text far "
        "longer than the model reads is summarized from its beginning only, and a dialogue model names the "
        "shipped long-document model (--model calls)"))


class ModelRef(BaseModel):
    checkpoint: str
    step: int | None


class SummarizeResponse(BaseModel):
    summaries: list[Summary]
    model: ModelRef
    elapsed_ms: float


class ErrorResponse(BaseModel):
    error: str
    errors: list[dict[str, Any]] | None = None


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorResponse, "description": "the body is not valid JSON"},
    413: {"model": ErrorResponse, "description": "the body is larger than the server's limit"},
    422: {"model": ErrorResponse, "description": "invalid request (the message says which field and why)"},
    500: {"model": ErrorResponse, "description": "unexpected server error"},
    503: {"model": ErrorResponse, "description": "too many documents waiting; retry later"},
}


class RequestError(Exception):
    """An error answered with ``status`` and ``{"error": message}``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message
