"""One agent per participant (data.agent_split: speakers, agentsum.data.agents.split_by_speaker): each
agent reads one person's utterances in order, and the reader's view of the source stays aligned."""

import pytest

from agentsum.config import ConfigError
from agentsum.data.agents import split_by_speaker
from agentsum.data.corpus import Example
from agentsum.data.dataset import DataConfig, prepare, source_view

CHAT = ("Amanda: Lunch at 1?\nJerry: Sure\nAmanda: At the cafe\nOlivia: Can I come?\nJerry: Yes, Olivia\n"
        "and bring Priya")


def utterances(text):
    return [line.lower().replace(":", " :").replace("?", " ?").replace(",", " ,").split() for line in text.splitlines()]


def test_each_participant_gets_their_own_utterances_in_order():
    agents = split_by_speaker(utterances(CHAT), max_article_tokens=400)
    assert [" ".join(a) for a in agents] == [
        "amanda : lunch at 1 ? amanda : at the cafe",
        "jerry : sure jerry : yes , olivia and bring priya",  # a line with no name: the speaker before it
        "olivia : can i come ?"]


def test_the_cap_merges_the_later_speakers_and_the_truncation_applies_first():
    sentences = utterances(CHAT)
    capped = split_by_speaker(sentences, 400, max_agents=2)
    assert [" ".join(a) for a in capped] == [
        "amanda : lunch at 1 ? amanda : at the cafe",
        "jerry : sure olivia : can i come ? jerry : yes , olivia and bring priya"]  # olivia shares the last, in order
    assert split_by_speaker(sentences, 9) == [["amanda", ":", "lunch", "at", "1", "?"], ["jerry", ":", "sure"]]


def test_text_before_the_first_turn_goes_to_the_first_speaker_and_prose_is_one_agent():
    assert split_by_speaker([["hello", "all"], ["amanda", ":", "hi"], ["jerry", ":", "yo"]], 400) == [
        ["hello", "all", "amanda", ":", "hi"], ["jerry", ":", "yo"]]
    assert split_by_speaker([["the", "cat", "sat", "."], ["it", "ran", "."]], 400) == [
        ["the", "cat", "sat", ".", "it", "ran", "."]]
    assert split_by_speaker([], 400) == [[]]


def test_a_prepared_dialogue_and_its_cased_view_stay_aligned():
    cfg = DataConfig(agents="auto", agent_split="speakers", dialogue=True)
    doc = prepare(Example("d", CHAT, "Amanda and Jerry meet at 1.", "x:1"), cfg, keep_text=True)
    assert [a[0] for a in doc.agents] == ["amanda", "jerry", "olivia"]
    words, starts = source_view(doc, cfg)
    assert [len(w) for w in words] == [len(a) for a in doc.agents]
    assert words[0][:3] == ["Amanda", ":", "Lunch"]
    assert starts[0] == [0, 6] and [words[0][i] for i in starts[0]] == ["Amanda", "Amanda"]
    assert [words[1][i] for i in starts[1]] == ["Jerry", "Jerry", "and"]  # each utterance line begins one


def test_the_speaker_split_needs_auto_agents_and_no_budget():
    with pytest.raises(ConfigError, match="agent_split: speakers .* set data.agents: auto"):
        DataConfig(agents=3, agent_split="speakers")
    with pytest.raises(ConfigError, match="agent_tokens .* does not apply"):
        DataConfig(agents="auto", agent_split="speakers", agent_tokens=100)
