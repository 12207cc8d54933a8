import pytest

from agentsum.config import ConfigError, load_config, preset_names
from agentsum.models import build_model


def test_presets_load_and_build():
    for name in preset_names():
        config = load_config(name)
        model = build_model(config.model, 100)
        assert model.vocab_size == 100 and sum(p.numel() for p in model.parameters()) > 0


def test_paper_rows_are_what_table_1_says():
    m1, m4, m5, m6 = (load_config(n) for n in ("m1", "m4", "m5", "m6"))
    assert m1.data.agents == 1 and m4.data.agents == m5.data.agents == m6.data.agents == 3
    assert m4.model["communication"] is False and m4.model["pointer"] == "single"
    assert m5.model["communication"] is True and m5.model["pointer"] == "multi"
    assert m5.model["contextual_agent_attention"] is False and m6.model["contextual_agent_attention"] is True
    assert all(c.model["hidden_size"] == 128 for c in (m1, m4, m5, m6))
    assert m5.train.lr == 1e-3 and m5.search.beam_size == 5 and m5.search.max_length == 110


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
