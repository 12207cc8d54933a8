"""Model, language and corpus are independent choices: the Transformer pointer-generator on Chinese
(with the Noam schedule and word2vec embeddings), DCA on Chinese, LCSTS PART files end to end."""

import json

import pytest

from agentsum.cli import main
from agentsum.config import load_config
from agentsum.models import TransformerPG
from agentsum.checkpoint import load_model, read_checkpoint
from agentsum.training.trainer import Trainer
from conftest import write_jsonl

ZH_ROWS = [
    {"article": "国家统计局今天发布数据，上月全国居民消费价格同比上涨百分之二。专家认为物价总体稳定。",
     "summary": "上月居民消费价格同比上涨百分之二"},
    {"article": "某市地铁三号线今日开通运营，全长二十公里，设站十五座。市民乘坐更加方便。",
     "summary": "地铁三号线今日开通"},
    {"article": "研究人员发现一种新冠病毒变异株，传播能力更强。卫生部门提醒公众注意防护。",
     "summary": "研究发现新冠病毒变异株"},
    {"article": "今年夏粮再获丰收，总产量比去年增加百分之一。农业部门表示将继续稳定生产。",
     "summary": "夏粮再获丰收产量增加"},
] * 3

SMALL_TRANSFORMER = ["model.d_model=16", "model.heads=2", "model.d_ff=32", "model.encoder_layers=1",
                     "model.decoder_layers=1", "model.dropout=0.0"]


def zh_config(tmp_path, preset, extra=()):
    corpus = write_jsonl(tmp_path / "zh.jsonl", [dict(r, id=f"zh{i}") for i, r in enumerate(ZH_ROWS)])
    return corpus, load_config(preset, [f"data.train={corpus}", f"data.valid={corpus}", f"train.run_dir={tmp_path / 'run'}",
                                        "train.max_steps=6", "train.valid_every=3", "train.batch_size=4", *extra])


def test_transformer_on_chinese_with_noam_and_word2vec(tmp_path, capsys):
    pytest.importorskip("gensim")
    corpus, config = zh_config(tmp_path, "lcsts", SMALL_TRANSFORMER + ["train.warmup=4", "data.vocab_size=300"])
    trainer = Trainer(config)
    assert isinstance(trainer.model, TransformerPG)
    # word2vec vectors (trained on the corpus) were copied into the embedding
    assert "embeddings:" in capsys.readouterr().err
    trainer.run()
    state = read_checkpoint(tmp_path / "run" / "checkpoints" / "last.pt")
    assert state["scheduler"]["last_epoch"] == 6  # one scheduler step per update
    assert state["optimizer"]["param_groups"][0]["lr"] == pytest.approx(0.0005 * (4 / 7) ** 0.5)
    out = tmp_path / "eval"
    assert main(["evaluate", "--checkpoint", str(tmp_path / "run" / "checkpoints" / "best.pt"), "--data", corpus,
                 "--out", str(out), "--beam", "2"]) == 0
    scores = json.loads((out / "scores.json").read_text())
    assert scores["n"] == len(ZH_ROWS) and scores["beam_size"] == 2


def test_dca_on_chinese_characters_and_summarize(tmp_path, capsys):
    corpus, config = zh_config(tmp_path, "lcsts-dca", ["model.hidden_size=16", "model.embedding_size=16"])
    Trainer(config).run()
    model, vocab, cfg, _ = load_model(tmp_path / "run" / "checkpoints" / "best.pt")
    assert cfg.data.language == "zh" and cfg.data.agents == 3
    assert all(len(t) == 1 or t.isascii() for t in vocab.itos[4:])  # character vocabulary
    article = tmp_path / "a.txt"
    article.write_text(ZH_ROWS[0]["article"], encoding="utf-8")
    capsys.readouterr()
    assert main(["summarize", "--checkpoint", str(tmp_path / "run" / "checkpoints" / "best.pt"), str(article),
                 "--max-length", "8"]) == 0
    line = capsys.readouterr().out.strip()
    assert line and " " not in line  # Chinese is shown without spaces between characters


def test_chinese_lead_baseline_on_characters(tmp_path, capsys):
    corpus = write_jsonl(tmp_path / "zh.jsonl", ZH_ROWS[:4])
    assert main(["lead3", "--config", "lcsts-small", "--data", corpus, "--chars", "10", "--out", str(tmp_path / "lead")]) == 0
    rows = [json.loads(line) for line in (tmp_path / "lead" / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert rows[0]["prediction"] == "国家统计局今天发布数据"[:10]
    scores = json.loads((tmp_path / "lead" / "scores.json").read_text())
    assert scores["rouge1"] > 0  # characters are scored, not dropped
    assert "Lead-10 characters" in capsys.readouterr().out


def test_lcsts_part_file_with_label_filter_through_the_cli(tmp_path, capsys):
    part = tmp_path / "PART_III.txt"
    blocks = []
    for i, (row, label) in enumerate(zip(ZH_ROWS[:4], (5, 2, 3, 1))):
        blocks.append(f"<doc id={i}>\n<human_label>{label}</human_label>\n<summary>\n{row['summary']}\n</summary>\n"
                      f"<short_text>\n{row['article']}\n</short_text>\n</doc>\n")
    part.write_text("".join(blocks), encoding="utf-8")
    assert main(["lead3", "--config", "lcsts-small", "--data", str(part), "--min-human-label", "3", "--chars", "20"]) == 0
    assert "(F1, 2 documents)" in capsys.readouterr().out


def test_fit_lm_writes_the_lm_beside_the_checkpoint_and_lm_weight_reads_it(tiny_run, tmp_path, capsys):
    """`agentsum fit-lm` writes NAME.lm.json.gz beside the checkpoint; `summarize --lm-weight` decodes
    with it; without one, --lm-weight is an error that names the file and the command that writes it."""
    import shutil

    from agentsum.cli import main

    checkpoint = tmp_path / "model.pt"
    shutil.copy(tiny_run["checkpoint"], checkpoint)
    article = tmp_path / "article.txt"
    article.write_text("The cat saw a dog near the park. The owl met a fox near the river.\n", encoding="utf-8")
    assert main(["summarize", "--checkpoint", str(checkpoint), str(article), "--beam", "3", "--lm-weight", "0.1"]) != 0
    err = capsys.readouterr().err
    assert "model.lm.json.gz" in err and "agentsum fit-lm" in err
    assert main(["fit-lm", "--checkpoint", str(checkpoint), "--data", tiny_run["train"]]) == 0
    assert (tmp_path / "model.lm.json.gz").is_file() and "24 summaries" in capsys.readouterr().out
    assert main(["summarize", "--checkpoint", str(checkpoint), str(article), "--beam", "3", "--lm-weight", "0.1",
                 "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "summaries.txt").read_text(encoding="utf-8").strip()


def test_fit_lm_never_replaces_a_shipped_models_lm_unless_told_where(tmp_path, capsys, tiny_run):
    from agentsum.cli import main
    from agentsum.checkpoint import shipped_path

    before = shipped_path("dialogue").with_name("samsum-en.lm.json.gz").read_bytes()
    assert main(["fit-lm", "--checkpoint", "dialogue", "--data", tiny_run["train"]]) != 0
    assert "give --out" in capsys.readouterr().err
    assert shipped_path("dialogue").with_name("samsum-en.lm.json.gz").read_bytes() == before
    out = tmp_path / "mine.lm.json.gz"
    assert main(["fit-lm", "--checkpoint", "dialogue", "--data", tiny_run["train"], "--out", str(out)]) == 0
    assert out.is_file()
