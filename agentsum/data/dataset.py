"""From a corpus to model batches: reading, preprocessing, agent splitting and length-bucketed batching.

Data flows one way: text -> sentences of tokens -> agent chunks -> ``Batch``. :class:`DataConfig`
(the ``data`` section of a run configuration) says how; :func:`load_documents` reads a
:class:`DataSource` with it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from agentsum.data import sources
from agentsum.data.agents import (auto_agent_count, default_agent_budget, speaker_groups, split_among_agents,
                                  split_by_speaker)
from agentsum.data.batch import Batch, make_batch
from agentsum.data.corpus import Example
from agentsum.data.language import TextProcessor, text_processor
from agentsum.data.records import ReadStats
from agentsum.data.vocab import Vocabulary
from agentsum.fields import ConfigError

#: ``data.agents: auto``: each document gets as many agents as its length needs (``data.agent_tokens`` each).
AUTO_AGENTS = "auto"
#: ``data.agent_tokens`` under ``data.agents: auto`` when it is not set: the paper's 400-token truncation
#: (Table 6), the length one agent of its single-agent baseline reads.
AUTO_AGENT_TOKENS = 400

#: The annotation of ``data.agents``: a positive integer M, or "auto". A name of its own, so that
#: :func:`agentsum.fields.fill_dataclass` passes the value through and :meth:`DataConfig.__post_init__`
#: checks it.
AgentCount = int | str


@dataclass
class DataSource:
    """A corpus: a JSONL file, a .story file or directory, or ``hf:NAME:CONFIG:SPLIT``; rows [start, end)."""

    path: str
    start: int | None = None
    end: int | None = None


@dataclass
class DataConfig:
    train: DataSource | None = None
    valid: DataSource | None = None
    test: DataSource | None = None
    article_field: str = "article"
    summary_field: str = "summary"
    id_field: str = "id"
    lowercase: bool = True
    language: str = "en"  # en | zh
    zh_tokenizer: str = "jieba"  # Chinese units: jieba words (as the paper) or char
    zh_rouge_unit: str = "char"  # Chinese ROUGE on characters (default) or jieba words
    dialogue: bool = False  # articles are dialogues (SAMSum, DialogSum): each line one utterance, one sentence
    min_human_label: int | None = None  # LCSTS PART II/III: keep pairs scored >= this (test set: 3)
    # M, the same for every document (1 is the single-agent baseline); or "auto": as many agents
    # of data.agent_tokens as each document needs (agentsum.data.agents.auto_agent_count)
    agents: AgentCount = 3
    max_article_tokens: int = 400  # paper: 400 or 800
    # per-agent budget; None = the paper's Table 6 value for M, or 400 (AUTO_AGENT_TOKENS) under agents: auto
    agent_tokens: int | None = None
    max_agents: int | None = None  # agents: auto only: at most this many agents (None: as max_article_tokens allows)
    # table6: each agent reads at most its Table 6 budget (3 x 250 = 750 of 800 tokens, less where sentence
    # breaks fall badly); whole: the agents share all max_article_tokens, balanced along sentences, so M
    # agents read the same tokens as one agent does; speakers (with agents: auto): a dialogue gets one agent
    # per participant, each reading that person's utterances in order (agentsum/data/agents.py)
    agent_split: str = "table6"
    max_summary_tokens: int = 100  # training targets (paper: 100)
    vocab_size: int = 50_000  # V most frequent training tokens (paper: 50,000)
    skip_bad: bool = False  # skip and count malformed corpus lines instead of stopping
    # Training reads data.train and data.valid from prepared corpus stores (agentsum.data.store): tokenized
    # once, memory-mapped, shared by every process. false: prepare them in memory at every start.
    store: bool = True
    store_dir: str | None = None  # where the stores live (STORE_DIR/train, STORE_DIR/valid); None: RUN_DIR/data
    prepare_workers: int | None = None  # processes that prepare a store; None: the cores available

    def __post_init__(self):
        problem = agents_problem(self)
        if problem is not None:
            raise ConfigError(problem)

    @property
    def auto_agents(self) -> bool:
        """Whether each document gets its own number of agents (``data.agents: auto``)."""
        return self.agents == AUTO_AGENTS


def agents_problem(cfg: DataConfig) -> str | None:
    """What is wrong with the agent settings (``data.agents``, ``agent_tokens``, ``max_agents``), in
    words naming the setting; None when they are usable."""
    agents = cfg.agents
    if isinstance(agents, bool) or not (agents == AUTO_AGENTS or (isinstance(agents, int) and agents >= 1)):
        return f"data.agents must be a positive integer or auto; got {agents!r}"
    for name in ("agent_tokens", "max_agents", "max_article_tokens"):
        value = getattr(cfg, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            return f"data.{name} must be a positive integer{'' if name == 'max_article_tokens' else ' or null'}; " \
                   f"got {value!r}"
    if agents != AUTO_AGENTS and cfg.max_agents is not None:
        return f"data.max_agents ({cfg.max_agents}) applies only with data.agents: auto; data.agents is {agents}"
    if cfg.agent_split == "speakers":
        if agents != AUTO_AGENTS:
            return (f"data.agent_split: speakers gives each dialogue one agent per participant, as many as it has: "
                    f"set data.agents: auto (it is {agents})")
        if cfg.agent_tokens is not None:
            return (f"data.agent_tokens ({cfg.agent_tokens}) does not apply with data.agent_split: speakers (each agent "
                    f"reads all of one person's utterances within data.max_article_tokens)")
    if agents == AUTO_AGENTS and cfg.agent_split == "whole":
        return ("data.agents: auto gives each agent data.agent_tokens tokens and data.agent_split: whole gives one "
                "agent the whole truncation; give one (agent_split: table6 with agents: auto)")
    return None


@dataclass
class Document:
    """A preprocessed example.

    agents:    A token lists (the article split among the agents, truncated).
    summary:   target tokens, truncated to ``max_summary_tokens`` (empty when unknown).
    reference: the whole tokenized reference, one sentence per line (for ROUGE).
    article:   the article as written, kept only for inference (``keep_text=True``): output is
               cased from it and the web page shows it.
    """

    id: str
    agents: list[list[str]]
    summary: list[str]
    reference: str
    article: str = ""

    @property
    def num_tokens(self) -> int:
        return sum(len(a) for a in self.agents) + len(self.summary)


#: What the CLI, the HTTP API and the Python API say about a text with nothing to summarize.
NO_WORDS = "no words to summarize (the text holds only punctuation, symbols or whitespace)"


def has_words(doc: Document) -> bool:
    """True when some token holds a letter or a digit (any script): punctuation and symbols alone
    are nothing to summarize, and a model asked to would only emit punctuation."""
    return any(any(ch.isalnum() for ch in token) for agent in doc.agents for token in agent)


def source_view(doc: Document, cfg: DataConfig) -> tuple[list[list[str]], list[list[int]]]:
    """What a reader is shown of the source: every agent's tokens as written in the article
    (original casing), aligned one to one with ``doc.agents``, and for every agent the indices of
    its tokens that begin a sentence (an utterance, for dialogues); an agent's first token always
    begins one of its lines. The article is tokenized once, cased, for both.

    Tokenization and the agent split depend on token lengths only, which lower-casing keeps, and
    the agents' tokens are the first tokens of the article's sentences in order
    (:mod:`agentsum.data.agents`), so the cased sentences' running lengths locate the starts.
    Needs ``doc.article`` (``keep_text=True``); without it, ``doc.agents`` and only their first tokens."""
    words = [list(a) for a in doc.agents]
    starts = [[0] if agent else [] for agent in doc.agents]
    if not doc.article:
        return words, starts
    language = text_processor(dataclasses.replace(cfg, lowercase=False))
    sentences = language.article_sentences(doc.article, limit=kept_tokens(cfg))
    cased = split_article(sentences, cfg)
    if cfg.lowercase and [len(a) for a in cased] == [len(a) for a in doc.agents]:  # else keep alignment safe
        words = cased
    if cfg.agent_split == "speakers":  # the agents regroup the utterances: each group's running lengths
        groups = speaker_groups(sentences, cfg.max_article_tokens, cfg.max_agents)
        for a, group in enumerate(groups[:len(doc.agents)]):
            offsets, total = [], 0
            for sentence in group:  # none is empty
                offsets.append(total)
                total += len(sentence)
            starts[a] = offsets
        return words, starts
    begins, total = set(), 0
    for sentence in sentences:
        begins.add(total)
        total += len(sentence)
    offset = 0
    for a, agent in enumerate(doc.agents):
        starts[a] += sorted(b - offset for b in begins if offset < b < offset + len(agent))
        offset += len(agent)
    return words, starts


def agent_budget(cfg: DataConfig) -> int:
    """Tokens each agent may read: ``data.agent_tokens``, else the paper's Table 6 value for M
    (``agent_split: table6``), or the whole truncation (``agent_split: whole``): with that budget
    the balanced split of :mod:`agentsum.data.agents` keeps every one of the first
    ``max_article_tokens`` tokens and only balances the agents' shares along sentence breaks."""
    if cfg.auto_agents:
        return cfg.agent_tokens or AUTO_AGENT_TOKENS
    if cfg.agent_split == "whole":
        return cfg.max_article_tokens
    return cfg.agent_tokens or default_agent_budget(cfg.agents, cfg.max_article_tokens)


def kept_tokens(cfg: DataConfig) -> int:
    """How many of an article's first tokens the agents read: min(max_article_tokens, agents x budget),
    where agents is ``data.max_agents`` under ``agents: auto`` (no cap when it is not set)."""
    if cfg.agent_split == "speakers":
        return cfg.max_article_tokens
    if cfg.auto_agents:
        return cfg.max_article_tokens if cfg.max_agents is None else \
            min(cfg.max_article_tokens, cfg.max_agents * agent_budget(cfg))
    return min(cfg.max_article_tokens, cfg.agents * agent_budget(cfg))


def split_article(sentences: Sequence[Sequence[str]], cfg: DataConfig) -> list[list[str]]:
    """An article's tokenized sentences split among ``cfg.agents`` agents as ``cfg`` says; under
    ``agents: auto``, among as many as :func:`agentsum.data.agents.auto_agent_count` gives it."""
    if cfg.agent_split == "speakers":
        return split_by_speaker(sentences, cfg.max_article_tokens, cfg.max_agents)
    if cfg.auto_agents:
        budget = agent_budget(cfg)
        n_agents = auto_agent_count(sentences, budget, cfg.max_article_tokens, cfg.max_agents)
        return split_among_agents(sentences, n_agents, budget, cfg.max_article_tokens)
    # agent_split: whole cuts a sentence longer than an equal share, so that every agent gets text
    piece = -(-cfg.max_article_tokens // cfg.agents) if cfg.agent_split == "whole" else None
    return split_among_agents(sentences, cfg.agents, agent_budget(cfg), cfg.max_article_tokens, piece)


def prepare(example: Example, cfg: DataConfig, language: TextProcessor | None = None,
            keep_text: bool = False) -> Document:
    """Tokenize an example and split its truncated article among ``cfg.agents`` agents."""
    language = language or text_processor(cfg)
    summary = language.summary_sentences(example.summary) if example.summary else []
    flat = [tok for sentence in summary for tok in sentence]
    # the agents keep the first kept_tokens(cfg) tokens: the rest of the article is not split into
    # sentences or tokenized at all (a CNN article is ~40 sentences)
    agents = split_article(language.article_sentences(example.article, limit=kept_tokens(cfg)), cfg)
    return Document(id=example.id, agents=agents, summary=flat[: cfg.max_summary_tokens],
                    reference=language.join_sentences(summary), article=example.article if keep_text else "")


def prepare_all(examples: Sequence[Example], cfg: DataConfig, *, drop_empty: bool = True,
                keep_text: bool = False) -> list[Document]:
    """Preprocess every example; documents whose article has no tokens are dropped (nothing to encode).
    ``keep_text`` keeps each article as written (for readable output; not needed to train)."""
    language = text_processor(cfg)
    docs = [prepare(ex, cfg, language, keep_text) for ex in examples]
    return [d for d in docs if any(d.agents)] if drop_empty else docs


def read_examples(source: DataSource, cfg: DataConfig, *, require_summary: bool = True,
                  warn: Callable[[str], None] | None = None) -> list[Example]:
    """The examples of ``source`` (rows [start, end)) read with ``cfg``'s field names, LCSTS label
    filter and ``skip_bad``; when rows were skipped, ``warn`` gets the line that says so."""
    stats = ReadStats()
    examples = sources.load_examples(source.path, start=source.start, end=source.end, article_field=cfg.article_field,
                                     summary_field=cfg.summary_field, id_field=cfg.id_field, skip_bad=cfg.skip_bad,
                                     require_summary=require_summary, min_human_label=cfg.min_human_label, stats=stats)
    report = stats.report(source.path)
    if report is not None and warn is not None:
        warn(report)
    return examples


def load_documents(source: DataSource, cfg: DataConfig, *, drop_empty: bool = True,
                   warn: Callable[[str], None] | None = None) -> list[Document]:
    """The documents of ``source`` prepared as ``cfg`` says: :func:`read_examples`, then :func:`prepare_all`."""
    return prepare_all(read_examples(source, cfg, warn=warn), cfg, drop_empty=drop_empty)


def document_lengths(docs: Sequence[Document]) -> np.ndarray:
    """Tokens per document (article and summary), the length batches are bucketed by; a corpus store
    has them without reading its documents."""
    stored = getattr(docs, "lengths", None)
    return np.asarray(stored if stored is not None else [d.num_tokens for d in docs], dtype=np.int64)


def to_batch(docs: Sequence[Document], vocab: Vocabulary, with_targets: bool = True, pad_multiple: int = 1) -> Batch:
    return make_batch(
        [d.agents for d in docs],
        vocab,
        summaries=[d.summary for d in docs] if with_targets else None,
        references=[d.reference for d in docs],
        ids=[d.id for d in docs],
        pad_multiple=pad_multiple,
    )


#: The algorithm behind :func:`epoch_order`, recorded beside benchmark runs: two runs of one seed see
#: the same batches only under the same order ("random.shuffle" before "pcg64-sort").
EPOCH_ORDER = "pcg64-sort"
#: The order before it, which checkpoints without an ``epoch_order`` were trained with.
LEGACY_EPOCH_ORDER = "random.shuffle"


def epoch_order(lengths: Sequence[int], batch_size: int, seed: int, epoch: int, window: int = 50) -> list[list[int]]:
    """Batches of document indices for one epoch, deterministic in (seed, epoch).

    Documents are shuffled, then sorted by length inside windows of ``window`` batches so that a
    batch holds documents of similar length (less padding), and the batches are shuffled again.
    Every document appears exactly once per epoch.
    """
    bits = np.random.PCG64(np.random.SeedSequence([seed % 2**64, epoch]))
    order = _permutation(len(lengths), bits)
    if window > 1 and len(order):
        # Each window of `span` shuffled documents sorted by length, ties in shuffled order: one
        # stable numpy sort on (window, length), the order that a stable sort per window gives
        # (a Python sort per window took about a second of the first step at 2.4M documents)
        span = batch_size * window
        keys = np.asarray(lengths, dtype=np.int64)[order]
        windows = np.arange(len(order), dtype=np.int64) // span
        order = order[np.argsort(windows * (int(keys.max()) + 1) + keys, kind="stable")]
    flat = order.tolist()
    batches = [flat[s : s + batch_size] for s in range(0, len(flat), batch_size)]
    return [batches[k] for k in _permutation(len(batches), bits).tolist()]


def _permutation(n: int, bits: np.random.BitGenerator) -> np.ndarray:
    """A uniformly random order of range(n): indices sorted by n raw 64-bit draws.

    Raw draws rather than ``Generator.permutation`` or ``random.shuffle``: NumPy keeps a bit
    generator's stream the same across releases but not the algorithms built on it, so an epoch's
    order, which exact resume depends on, survives an upgrade; and ``random.shuffle`` of 2.4M
    indices (LCSTS) is a Python loop (benchmarks/data/bench_epoch_order.py). Each draw's low bits are
    replaced by its index, so no two keys are equal and any sort gives the one order: the default
    quicksort, 3x faster than a stable sort here, and draws equal in their high bits keep index order.
    """
    width = max(n - 1, 1).bit_length()
    keys = (bits.random_raw(n) >> np.uint64(width) << np.uint64(width)) | np.arange(n, dtype=np.uint64)
    return np.argsort(keys)


def iterate_global_batches(lengths: Sequence[int], batch_size: int, *, seed: int, start_step: int = 0,
                           window: int = 50) -> Iterator[list[int]]:
    """Endless stream of global batches (document indices), epoch after epoch, from any step:
    the order depends only on (seed, step), so training resumes exactly where it stopped."""
    per_epoch = (len(lengths) + batch_size - 1) // batch_size
    step = start_step
    while True:
        epoch, offset = divmod(step, per_epoch)
        for indices in epoch_order(lengths, batch_size, seed, epoch, window)[offset:]:
            yield indices
            step += 1


def sorted_batches(docs: Sequence[Document], vocab: Vocabulary, batch_size: int,
                   with_targets: bool = True, bucket: bool = True) -> Iterator[tuple[list[int], Batch]]:
    """Batches for evaluation, of documents of similar length (sorted by length, for speed: a batch
    pads to its longest document); yields the original indices too, so the caller restores the
    order. ``bucket=False`` batches the documents in the order given."""
    order = np.argsort(document_lengths(docs), kind="stable").tolist() if bucket else list(range(len(docs)))
    for s in range(0, len(order), batch_size):
        idx = order[s : s + batch_size]
        yield idx, to_batch([docs[i] for i in idx], vocab, with_targets)
