"""From corpus rows to batches (agentsum.data.dataset): reading a DataSource, preparing documents,
deterministic length-bucketed batching."""

import collections
import dataclasses

import pytest

from agentsum.data.corpus import Example
from agentsum.data.dataset import (DataConfig, DataSource, epoch_order, has_words, iterate_global_batches,
                                   load_documents, prepare, prepare_all, read_examples, source_view,
                                   sorted_batches, to_batch)
from agentsum.data.records import DataError
from agentsum.data.vocab import Vocabulary
from conftest import write_jsonl

ARTICLE = "The Cat sat on the mat. A dog ran to the park. The owl saw a fox near the river."


def test_prepare_splits_the_article_among_agents_and_keeps_the_reference_by_sentence():
    cfg = DataConfig(agents=2, max_article_tokens=400, max_summary_tokens=3)
    doc = prepare(Example("d1", ARTICLE, "The cat sat. The dog ran.", "x:1"), cfg)
    assert doc.id == "d1" and len(doc.agents) == 2
    flat = [t for agent in doc.agents for t in agent]
    assert flat[:7] == ["the", "cat", "sat", "on", "the", "mat", "."]  # lower-cased, in order, nothing lost
    assert len(flat) == 23 and all(len(agent) >= 7 for agent in doc.agents)  # whole sentences, balanced
    assert doc.summary == ["the", "cat", "sat"]  # training target truncated to max_summary_tokens
    assert doc.reference == "the cat sat .\nthe dog ran ."  # the whole reference, one sentence per line
    assert doc.article == ""  # the text as written is kept only for inference
    assert doc.num_tokens == 23 + 3


def test_truncation_and_kept_text_and_original_casing():
    cfg = DataConfig(agents=1, max_article_tokens=5)
    doc = prepare(Example("d", ARTICLE, "", "x"), cfg, keep_text=True)
    assert doc.agents == [["the", "cat", "sat", "on", "the"]] and doc.summary == [] and doc.reference == ""
    assert doc.article == ARTICLE
    assert source_view(doc, cfg)[0] == [["The", "Cat", "sat", "on", "the"]]  # aligned one to one with the tokens
    assert source_view(dataclasses.replace(doc, article=""), cfg)[0] == doc.agents


@pytest.mark.parametrize("split", ["table6", "whole"])
def test_source_view_gives_cased_words_and_utterance_starts_per_agent(split):
    chat = "Amy: one two three\nBob: Four five\nAmy: six"
    cfg = DataConfig(agents=2, dialogue=True, max_article_tokens=12, agent_split=split,
                     agent_tokens=None if split == "whole" else 7)
    doc = prepare(Example("d", chat, "", "x"), cfg, keep_text=True)
    assert doc.agents == [["amy", ":", "one", "two", "three"], ["bob", ":", "four", "five", "amy", ":", "six"]]
    words, starts = source_view(doc, cfg)
    assert words == [["Amy", ":", "one", "two", "three"], ["Bob", ":", "Four", "five", "Amy", ":", "six"]]
    assert starts == [[0], [0, 4]]
    assert source_view(dataclasses.replace(doc, article=""), cfg) == (doc.agents, [[0], [0]])


def test_documents_without_words_are_dropped_or_flagged():
    examples = [Example("a", ARTICLE, "s", "x:1"), Example("b", "   ", "s", "x:2"), Example("c", "!!! ...", "s", "x:3")]
    kept = prepare_all(examples, DataConfig())
    assert [d.id for d in kept] == ["a", "c"]  # no tokens at all: nothing to encode
    every = prepare_all(examples, DataConfig(), drop_empty=False)
    assert [has_words(d) for d in every] == [True, False, False]  # punctuation alone is no words


def test_epoch_order_covers_every_document_once_and_depends_only_on_seed_and_epoch():
    lengths = [5, 50, 7, 48, 6, 52, 9, 49, 8, 51, 4, 47]
    batches = epoch_order(lengths, batch_size=2, seed=3, epoch=0, window=6)
    assert sorted(i for b in batches for i in b) == list(range(12))
    assert batches == epoch_order(lengths, batch_size=2, seed=3, epoch=0, window=6)
    assert batches != epoch_order(lengths, batch_size=2, seed=3, epoch=1, window=6)
    # bucketing: every batch pairs documents of similar length (a short and a long one never meet)
    assert all(len({lengths[i] > 20 for i in b}) == 1 for b in batches)
    unbucketed = [epoch_order(lengths, batch_size=2, seed=s, epoch=0, window=1) for s in range(5)]
    assert any(len({lengths[i] > 20 for i in b}) == 2 for order in unbucketed for b in order)


def test_epoch_order_is_the_same_in_every_release():
    # Exact resume replays an epoch's order from (seed, epoch) alone: a change here, say to NumPy's
    # Generator.permutation or random.shuffle, would resume old checkpoints on other batches.
    assert epoch_order(list(range(10)), batch_size=3, seed=1, epoch=0, window=1) == [[8, 6, 3], [7, 5, 0], [9, 2, 4], [1]]
    assert epoch_order([], batch_size=3, seed=1, epoch=0) == []


def test_epoch_order_puts_every_document_first_equally_often():
    firsts = collections.Counter(epoch_order([1] * 5, batch_size=1, seed=seed, epoch=0, window=1)[0][0]
                                 for seed in range(5000))
    assert sorted(firsts) == [0, 1, 2, 3, 4]
    assert all(850 < count < 1150 for count in firsts.values()), firsts  # 1,000 each, sd 28


def test_global_batches_resume_at_any_step():
    lengths = list(range(7))
    stream = iterate_global_batches(lengths, 3, seed=1)
    first = [next(stream) for _ in range(7)]  # over two epochs (3 batches per epoch)
    resumed = iterate_global_batches(lengths, 3, seed=1, start_step=4)
    assert [next(resumed) for _ in range(3)] == first[4:7]


def test_sorted_batches_group_by_length_and_return_the_original_indices():
    cfg = DataConfig(agents=1)
    texts = ["A b c d e f g h.", "A b.", "A b c d.", "A."]
    docs = prepare_all([Example(str(i), t, "", "x") for i, t in enumerate(texts)], cfg)
    vocab = Vocabulary.build([t for d in docs for t in d.agents[0]])
    got = list(sorted_batches(docs, vocab, batch_size=2, with_targets=False))
    assert [indices for indices, _ in got] == [[3, 1], [2, 0]]
    assert [b.ids for _, b in got] == [["3", "1"], ["2", "0"]]
    assert got[0][1].tgt_in is None and to_batch(docs, vocab).tgt_in is not None


def test_load_documents_reads_a_data_source_with_the_data_settings(tmp_path):
    rows = [{"key": f"k{i}", "text": f"The cat number {i} sat.", "gist": "A cat sat."} for i in range(5)]
    path = write_jsonl(tmp_path / "c.jsonl", rows)
    cfg = DataConfig(article_field="text", summary_field="gist", id_field="key", agents=1)
    docs = load_documents(DataSource(path, 1, 3), cfg)
    assert [d.id for d in docs] == ["k1", "k2"]
    assert docs[0].agents == [["the", "cat", "number", "1", "sat", "."]] and docs[0].reference == "a cat sat ."


def test_bad_rows_stop_reading_unless_skip_bad_and_then_warn(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"article": "A cat.", "summary": "Cat."}\nnot json\n{"article": "A dog.", "summary": "Dog."}\n',
                    encoding="utf-8")
    with pytest.raises(DataError, match=r"c\.jsonl:2: invalid JSON"):
        read_examples(DataSource(str(path)), DataConfig())
    warnings = []
    examples = read_examples(DataSource(str(path)), DataConfig(skip_bad=True), warn=warnings.append)
    assert [e.article for e in examples] == ["A cat.", "A dog."]
    assert len(warnings) == 1 and warnings[0].startswith(f"{path}: skipped 1 bad line(s); first: {path}:2: invalid JSON")


def _long_articles(n: int, seed: int = 0) -> list[Example]:
    """Articles of 1,000-1,500 words in sentences of 4-45 words (CNN/DM's range)."""
    import random

    rng = random.Random(seed)
    out = []
    for i in range(n):
        sentences, words = [], 0
        while words < rng.randint(1000, 1500):
            k = rng.randint(4, 45)
            sentences.append(" ".join(["The", *(f"w{rng.randrange(500)}" for _ in range(k - 1))]) + ".")
            words += k + 1
        out.append(Example(f"d{i}", " ".join(sentences), "a summary .", ""))
    return out


@pytest.mark.parametrize("agents", [2, 3, 5])
def test_whole_agent_split_reads_the_tokens_one_agent_reads(agents):
    """agent_split: whole gives M agents exactly the first max_article_tokens tokens that one agent
    reads, in order; the Table 6 reading keeps at most M x budget, and here fewer."""
    one = DataConfig(agents=1, max_article_tokens=800)
    whole = dataclasses.replace(one, agents=agents, agent_split="whole")
    table6 = dataclasses.replace(one, agents=agents)
    kept_table6 = []
    for ex in _long_articles(40):
        single = prepare(ex, one).agents[0]
        split = prepare(ex, whole).agents
        assert len(single) == 800
        assert [t for a in split for t in a] == single
        assert all(split) and max(map(len, split)) <= -(-800 // agents) + 46  # balanced to a sentence (<= 46)
        kept_table6.append(sum(map(len, prepare(ex, table6).agents)))
    assert max(kept_table6) <= agents * {2: 375, 3: 250, 5: 150}[agents] and sum(kept_table6) < 40 * 800
    # one sentence of 1,000 words: cut into equal shares, not given to one agent
    run_on = Example("r", " ".join(f"w{i}" for i in range(1000)), "", "")
    assert [len(a) for a in prepare(run_on, whole).agents] == [800 // agents + (i < 800 % agents)
                                                               for i in range(agents)]


def test_agent_split_whole_refuses_an_agent_budget_too():
    from agentsum.config import ConfigError, load_config

    with pytest.raises(ConfigError, match=r"agent_tokens \(100\) and data.agent_split: whole"):
        load_config("m6", ["data.agent_split=whole", "data.agent_tokens=100"])


def test_auto_agents_give_each_document_as_many_agents_of_agent_tokens_as_it_needs():
    short, long_ = _long_articles(2, seed=5)
    short = dataclasses.replace(short, article=" ".join(short.article.split()[:120]))
    cfg = DataConfig(agents="auto", agent_tokens=200, max_article_tokens=1000)
    one = DataConfig(agents=1, max_article_tokens=1000)
    for ex in (short, long_):
        agents = prepare(ex, cfg).agents
        single = prepare(ex, one).agents[0]
        assert [t for a in agents for t in a] == single  # every token of the truncation
        assert all(0 < len(a) <= 200 for a in agents) and len(agents) >= -(-len(single) // 200)
    assert len(prepare(short, cfg).agents) == 1 and len(prepare(long_, cfg).agents) >= 5
    capped = prepare(long_, dataclasses.replace(cfg, max_agents=3)).agents
    assert len(capped) == 3 and sum(map(len, capped)) <= 600
    default = DataConfig(agents="auto", max_article_tokens=1000)
    assert all(len(a) <= 400 for a in prepare(long_, default).agents)  # agent_tokens defaults to 400
    assert len(prepare(long_, default).agents) >= 3
    # a batch mixes the counts: the short document's agent is padded with empty agents
    docs = [prepare(short, cfg), prepare(long_, cfg)]
    batch = to_batch(docs, Vocabulary.build([a for d in docs for a in d.agents]))
    assert batch.n_agents == len(docs[1].agents) and batch.src_lengths[0, 1:].eq(0).all()


@pytest.mark.parametrize("setting, message", [
    ("data.agents=0", "data.agents must be a positive integer or auto; got 0"),
    ("data.agents=foo", "data.agents must be a positive integer or auto; got 'foo'"),
    ("data.agents=-2", "data.agents must be a positive integer or auto"),
    ("data.agent_tokens=0", "data.agent_tokens must be a positive integer"),
    ("data.max_agents=4", "data.max_agents .4. applies only with data.agents: auto"),
])
def test_bad_agent_settings_are_named(setting, message):
    from agentsum.config import ConfigError, load_config

    with pytest.raises(ConfigError, match=message):
        load_config("m6", [setting])


def test_bad_auto_agent_settings_are_named():
    from agentsum.config import ConfigError, load_config

    with pytest.raises(ConfigError, match="data.agent_tokens must be a positive integer"):
        load_config("m6", ["data.agents=auto", "data.agent_tokens=-5"])
    with pytest.raises(ConfigError, match="data.agents: auto .* data.agent_split: whole"):
        load_config("m6", ["data.agents=auto", "data.agent_split=whole"])
    with pytest.raises(ConfigError, match="data.max_agents must be a positive integer"):
        load_config("m6", ["data.agents=auto", "data.max_agents=0"])
    assert load_config("m6", ["data.agents=auto", "data.max_agents=8"]).data.max_agents == 8


def test_the_agent_index_needs_a_cap_on_auto_agents():
    """model.agent_index has MAX_AGENT_INDEX positions (e_a of eq 10): agents: auto without a cap that
    fits is refused when the configuration is read."""
    from agentsum.config import ConfigError, load_config
    from agentsum.models.dca import MAX_AGENT_INDEX

    with pytest.raises(ConfigError, match="model.agent_index holds 16 agent positions.*data.max_agents"):
        load_config("m6", ["data.agents=auto", "model.agent_index=true"])
    with pytest.raises(ConfigError, match="data.max_agents"):
        load_config("m6", ["data.agents=auto", "model.agent_index=true", f"data.max_agents={MAX_AGENT_INDEX + 1}"])
    with pytest.raises(ConfigError, match="model.agent_index holds 16 agent positions; data.agents is 17"):
        load_config("m6", ["data.agents=17", "model.agent_index=true"])
    assert load_config("m6", ["data.agents=auto", "model.agent_index=true",
                              f"data.max_agents={MAX_AGENT_INDEX}"]).data.auto_agents
