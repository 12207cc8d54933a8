"""Provenance of summary words (agentsum.decoding.provenance): scripted distributions first, then a
trained model through Summarizer.explain."""

from __future__ import annotations

import pytest
import torch

from agentsum.data.batch import make_batch
from agentsum.data.vocab import SPECIALS, Vocabulary
from agentsum.decoding.provenance import ProvenanceError, provenance, sentence_sources
from agentsum.models.base import Attention, DecoderOutput
from agentsum.models.pointer import CopyDistribution

WORDS = ["the", "fox", "ran", "home", "."]
VOCAB = Vocabulary([*SPECIALS, *WORDS])
#: two agents; "zorro" is out of the vocabulary (extended id V + 0)
AGENTS = [["the", "fox", "ran", "."], ["zorro", "ran", "home", "."]]


class Scripted(torch.nn.Module):
    """A model whose teacher-forced output is given: per step, the generator's logits, the switch,
    the copy weights and the attention."""

    def __init__(self, logits, gen_weight, copy_weight, word, agent):
        super().__init__()
        self.out = (logits, gen_weight, copy_weight, word, agent)

    def forward(self, batch):
        logits, gen_weight, copy_weight, word, agent = self.out
        dist = CopyDistribution(logits, gen_weight, copy_weight, batch.src_ext_ids.flatten(1), len(VOCAB) + batch.max_oov)
        return DecoderOutput(dist=dist, attention=Attention(word, agent), states=torch.zeros(1, logits.size(1), 2))


def _batch():
    return make_batch([AGENTS], VOCAB)


def _step(copy_at: int | None, p_gen: float, favourite: str, attend_at: int):
    """One step's tensors: the generator puts most of its mass on ``favourite``; copying goes to
    flat position ``copy_at``; attention peaks at ``attend_at``."""
    A, S = 2, 4
    logits = torch.full((len(VOCAB),), -5.0)
    logits[VOCAB.stoi[favourite]] = 5.0
    copy = torch.zeros(A * S)
    if copy_at is not None:
        copy[copy_at] = 1 - p_gen
    cascaded = torch.full((A * S,), 0.02)
    cascaded[attend_at] = 1.0
    cascaded = cascaded / cascaded.sum()
    agent = cascaded.view(A, S).sum(-1)
    word = cascaded.view(A, S) / agent.unsqueeze(-1)
    return logits, torch.tensor(p_gen), copy, word, agent


def _scripted(*steps):
    parts = list(zip(*steps))
    return Scripted(*(torch.stack(p).unsqueeze(0) for p in parts))


def test_a_word_copied_with_p_gen_near_zero_is_marked_copied_from_its_position_and_agent():
    batch = _batch()
    # step 1 copies "zorro" (OOV, agent 1 index 0), step 2 copies "home" (agent 1, index 2) although
    # the generator prefers "fox"; step 3 generates "fox" with p_gen 0.99 while attending to "ran"
    model = _scripted(_step(4, 0.01, "the", 4), _step(6, 0.02, "fox", 6), _step(None, 0.99, "fox", 2))
    zorro, home, fox = len(VOCAB), VOCAB.stoi["home"], VOCAB.stoi["fox"]
    (rows,) = provenance(model, batch, [[zorro, home, fox]])
    first, second, third = rows
    assert first["copied"] and first["copy_mass"] == pytest.approx(1.0)  # an OOV word: copy only
    assert (first["agent"], first["index"], first["position"]) == (1, 0, 4)  # after agent 0's 4 tokens
    assert second["copied"] and second["p_gen"] == pytest.approx(0.02, abs=1e-4)
    assert (second["agent"], second["index"], second["position"]) == (1, 2, 6)
    assert second["copy_mass"] > 0.99 and second["generated"] < 0.02 * 0.01
    # generated: "fox" is in the source (agent 0, index 1) but nothing was copied there; it drew most
    # from where it attended
    assert not third["copied"] and third["copy_mass"] == 0.0 and third["p_gen"] == pytest.approx(0.99, abs=1e-4)
    assert (third["agent"], third["index"], third["position"]) == (0, 2, 2)


def test_the_copy_position_is_the_largest_copy_weight_among_positions_holding_the_word():
    batch = _batch()
    logits, p, copy, word, agent = _step(None, 0.1, "the", 0)
    copy[2], copy[5], copy[1] = 0.3, 0.5, 0.1  # "ran" at agent 0 index 2 and agent 1 index 1; "fox" at 1
    (rows,) = provenance(Scripted(*(x.unsqueeze(0).unsqueeze(0) for x in (logits, p, copy, word, agent))), batch,
                         [[VOCAB.stoi["ran"]]])
    assert (rows[0]["agent"], rows[0]["index"]) == (1, 1)  # 0.5 beats 0.3; "fox"'s 0.1 is not "ran"
    assert rows[0]["copied_probability"] == pytest.approx(0.8)


def test_a_model_without_a_copy_mechanism_is_refused():
    logits, _, _, word, agent = _step(None, 0.5, "the", 0)
    model = Scripted(logits.view(1, 1, -1), None, None, word.unsqueeze(0).unsqueeze(0), agent.view(1, 1, -1))
    with pytest.raises(ProvenanceError, match="model.pointer"):
        provenance(model, _batch(), [[VOCAB.stoi["the"]]])


def test_source_sentences_hold_half_the_summed_attention_at_most_three_in_document_order():
    S = 6
    lines = [[0, 3], [0]]  # agent 0: sentences [0, 3) and [3, 6); agent 1: [0, 4)
    lengths = [6, 4]

    def word(*mass):  # attention over flat positions a * S + i
        att = torch.zeros(2 * S)
        for position, m in mass:
            att[position] = m
        return {"attention": att}

    words = [word((4, 0.6), (7, 0.4)),  # sentence 1: agent 0's second sentence holds 0.6 of 1.0
             word((1, 0.2), (4, 0.3), (8, 0.5)),  # sentence 2: agent 1 then agent 0's second then first
             word((1, 0.2), (4, 0.3), (8, 0.5))]
    out = sentence_sources(words, [["a"], ["b", "c"]], lines, S, lengths)
    assert out[0] == [{"agent": 0, "line": 1, "start": 3, "end": 6, "share": 0.6}]
    # 1.0 + 0.6 of 2.0 summed: agent 1 (1.0) reaches half alone
    assert out[1] == [{"agent": 1, "line": 0, "start": 0, "end": 4, "share": 0.5}]
    # seven sentences of two tokens (agent 0: four, agent 1: three), attention spread evenly
    S, lines, lengths = 8, [[0, 2, 4, 6], [0, 2, 4]], [8, 6]
    even = {"attention": torch.tensor([1.0] * 8 + [1.0] * 6 + [0.0] * 2)}
    # five of them hold the mass: three reach half (3/5); all seven: three is the most (3/7)
    five = {"attention": torch.tensor([0.0] * 4 + [1.0] * 4 + [1.0] * 6 + [0.0] * 2)}
    assert [(s["agent"], s["line"]) for s in sentence_sources([five], [["x"]], lines, S, lengths)[0]] == \
        [(0, 2), (0, 3), (1, 0)]
    chosen = sentence_sources([even], [["x"]], lines, S, lengths)[0]
    assert len(chosen) == 3 and sum(c["share"] for c in chosen) == pytest.approx(3 / 7, abs=1e-3)


def test_source_sentences_include_the_sentence_each_copied_number_came_from_whatever_its_attention():
    S, lines, lengths = 8, [[0, 2, 4, 6], [0, 2, 4]], [8, 6]  # seven sentences of two tokens

    def word(mass, copied=False, at=(0, 0)):
        return {"attention": torch.tensor(mass), "copied": copied, "agent": at[0], "index": at[1]}

    # the attention rests on agent 0's first sentence; "2.5" was copied from agent 1's third
    # sentence (index 5), which holds almost none of it; "7" is generated (not copied) while drawing
    # on agent 1's first sentence, and "fox" is copied but no number
    focused = [1.0, 1.0] + [0.0] * 6 + [0.0] * 5 + [0.01] + [0.0] * 2
    words = [word(focused), word(focused, True, (1, 5)), word(focused, False, (1, 0)), word(focused, True, (0, 6))]
    (chosen,) = sentence_sources(words, [["rose", "2.5", "7", "fox"]], lines, S, lengths)
    assert [(c["agent"], c["line"]) for c in chosen] == [(0, 0), (1, 2)]
    assert chosen[1]["share"] < 0.01 and chosen[1]["start"] == 4 and chosen[1]["end"] == 6
    # without the number, the mass rule alone
    words[1]["copied"] = False
    assert [(c["agent"], c["line"]) for c in sentence_sources(words, [["rose", "2.5", "7", "fox"]], lines, S,
                                                                lengths)[0]] == [(0, 0)]
    # beyond the three the mass rule allows: three sentences by attention and the number's fourth,
    # in document order
    even = [1.0] * 8 + [1.0] * 6 + [0.0] * 2
    words = [word(even), word(even, True, (1, 5))]
    (chosen,) = sentence_sources(words, [["in", "1,000"]], lines, S, lengths)
    by_mass = sentence_sources([word(even), word(even)], [["in", "1,000"]], lines, S, lengths)[0]
    assert [(c["agent"], c["line"]) for c in by_mass] == [(0, 0), (0, 1), (0, 2)]  # ties: document order
    assert [(c["agent"], c["line"]) for c in chosen] == [(0, 0), (0, 1), (0, 2), (1, 2)]


def test_explain_gives_every_written_word_its_provenance(tiny_run):
    from agentsum import Summarizer

    summarizer = Summarizer(tiny_run["checkpoint"], device="cpu")
    text = "The fox chased a crow near the river. The owl watched a hare near the barn. The cat ate a frog."
    result = summarizer.explain(text, beam_size=3, min_length=6)
    # the summary Summarizer() writes (one line there; one sentence a line here)
    assert result["summary"].replace("\n", " ") == summarizer(text, beam_size=3, min_length=6)
    words, sentences = result["words"], result["sentences"]
    assert len(words) >= 6 and sentences[0]["start"] == 0 and sentences[-1]["end"] == len(words)
    for a, b in zip(sentences, sentences[1:]):
        assert a["end"] == b["start"]
    (doc,) = summarizer.prepare([text])
    flat = [token for agent in doc.agents for token in agent]
    for w in words:
        assert 0 <= w["agent"] < len(doc.agents) and 0 <= w["p_gen"] <= 1 and 0 <= w["copy_mass"] <= 1
        assert flat[w["source"]] == doc.agents[w["agent"]][w["agent_index"]]
        assert w["source_word"].lower() == flat[w["source"]]
        if w["copied"]:
            assert w["token"] == flat[w["source"]]  # a copied word comes from a position holding it
    assert any(w["copied"] for w in words)
    for sentence in sentences:
        for source in sentence["source_sentences"]:
            assert 0 < source["share"] <= 1 and source["text"]
    # a batch of texts gives each text what it gives alone
    both = summarizer.explain([text, "The owl watched a hare near the barn."], beam_size=3, min_length=6)
    assert both[0] == result


def test_cli_summarize_provenance_prints_json_lines_and_names_the_option_where_it_cannot(tiny_run, tmp_path, capsys):
    import json

    from agentsum.checkpoint import read_checkpoint, save_checkpoint
    from agentsum.cli import main

    rows = [json.dumps({"id": f"d{i}", "article": text}) for i, text in
            enumerate(["The fox chased a crow near the river. The owl watched a hare.", "The cat ate a frog near the barn."])]
    data = tmp_path / "in.jsonl"
    data.write_text("\n".join(rows) + "\n")
    assert main(["summarize", "--checkpoint", str(tiny_run["checkpoint"]), "--provenance", "--min-length", "4",
                 "--device", "cpu", str(data)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["id"] for line in lines] == ["d0", "d1"]
    for line in lines:
        assert {"summary", "words", "sentences"} <= set(line) and len(line["words"]) >= 4
        assert {"word", "token", "copied", "p_gen", "copy_mass", "source", "source_word", "agent"} <= set(line["words"][0])

    # a model without a copy mechanism (model.pointer: none) cannot say what it copied
    state = read_checkpoint(tiny_run["checkpoint"])
    state["config"]["model"]["pointer"] = "none"
    state["model"] = {k: v for k, v in state["model"].items() if not k.startswith("gen_")}
    save_checkpoint(state, tmp_path / "no_pointer.pt")
    assert main(["summarize", "--checkpoint", str(tmp_path / "no_pointer.pt"), "--provenance", "--device", "cpu",
                 str(data)]) == 2
    assert "--provenance: provenance needs a pointer-generator (model.pointer)" in capsys.readouterr().err


def test_the_cli_the_service_and_explain_give_every_word_the_same_number_record(tiny_run, tmp_path, capsys):
    """One record for a summary's numbers, added in Summarizer.explained: ``agentsum summarize
    --provenance``, POST /v1/summarize with "provenance" and Summarizer.explain (its default reader)
    give the same words, each with its ``number`` (None for a word that is not a number)."""
    import json

    from fastapi.testclient import TestClient

    from agentsum import Summarizer
    from agentsum.cli import main
    from agentsum.data.number_links import number_links
    from agentsum.serve.app import create_app

    text = "The fox chased 3 crows near the river on 12 May. The owl watched 2.5 hares. The cat ate 40 frogs."
    data = tmp_path / "in.txt"
    data.write_text(text)
    assert main(["summarize", "--checkpoint", str(tiny_run["checkpoint"]), "--provenance", "--min-length", "8",
                 "--device", "cpu", str(data)]) == 0
    (cli,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    with TestClient(create_app(tiny_run["checkpoint"], batch_wait_ms=0, device="cpu")) as client:
        r = client.post("/v1/summarize", json={"text": text, "min_length": 8, "provenance": True})
    assert r.status_code == 200, r.text
    api = r.json()["summaries"][0]["provenance"]
    summarizer = Summarizer(tiny_run["checkpoint"], device="cpu")
    python = summarizer.explain(text, min_length=8)  # the default number reader: number_links
    assert cli["words"] == api["words"] == python["words"]
    assert cli["sentences"] == api["sentences"] == python["sentences"]
    (doc,) = summarizer.prepare([text])
    expected = number_links([w["token"] for w in python["words"]], [t for agent in doc.agents for t in agent])
    assert [w["number"] for w in python["words"]] == [expected.get(j) for j in range(len(python["words"]))]
    # numbers=None leaves the records out
    assert "number" not in summarizer.explain(text, min_length=8, numbers=None)["words"][0]


def test_explain_hands_the_number_reader_the_written_tokens_and_the_source_as_the_agents_read_it(tiny_run):
    from agentsum import Summarizer

    summarizer = Summarizer(tiny_run["checkpoint"], device="cpu")
    text = "The fox chased a crow near the river. The owl watched a hare near the barn."
    seen = []

    def reader(summary, source):
        seen.append((list(summary), list(source)))
        return {1: {"supported": True, "occurrences": [0]}}

    result = summarizer.explain(text, min_length=4, numbers=reader)
    (doc,) = summarizer.prepare([text])
    assert seen == [([w["token"] for w in result["words"]], [t for agent in doc.agents for t in agent])]
    assert [w["number"] for w in result["words"][:3]] == [None, {"supported": True, "occurrences": [0]}, None]
