"""The attribution figure (agentsum.evaluation.attribution): hand-written dialogues where the person a
sentence names is, or is not, the one whose side of the dialogue holds its words."""

from __future__ import annotations

from agentsum.evaluation.attribution import (AttributionCounts, Dialogue, attribution_figures, check_sentence,
                                             document_attribution, summary_sentences)
from agentsum.data.text import tokenize

CALL = "Mike: I can't talk right now, I'm in a meeting\nDale: ok, call me later\nMike: I'll call you in 2 hrs"
SCHOOL = ("Monica: How is school, Gaia?\nGaia: I have a lot of exams this term\nMonica: Study hard then\n"
          "Gaia: I will, mum")


def test_the_sides_hold_each_speakers_own_words():
    dialogue = Dialogue.parse(SCHOOL)
    assert dialogue.speakers == ["monica", "gaia"]
    assert "exam" in dialogue.sides["gaia"] and "exam" not in dialogue.sides["monica"]
    assert "school" in dialogue.sides["monica"] and "school" not in dialogue.sides["gaia"]
    assert Dialogue.parse("Revenue grew 5%. We raised guidance.") is None


def test_a_sentence_given_to_the_wrong_speaker_is_misattributed():
    dialogue = Dialogue.parse(SCHOOL)
    assert check_sentence(tokenize("Monica will have a lot of exams this term."), dialogue) is False
    assert check_sentence(tokenize("Gaia has a lot of exams this term."), dialogue) is True
    # Monica wrote "study" but not "exams": one of her words is enough, the rule only flags none
    assert check_sentence(tokenize("Monica tells her to study for the exams."), dialogue) is True
    # another participant's single word is not evidence enough
    assert check_sentence(tokenize("Gaia asks about school."), dialogue) is True
    assert check_sentence(tokenize("Monica and Gaia talk about exams."), dialogue) is True  # either side


def test_a_subject_named_again_as_the_object_is_misattributed():
    dialogue = Dialogue.parse(CALL)
    assert check_sentence(tokenize("Mike wants to call Mike in 2 hrs."), dialogue) is False
    assert check_sentence(tokenize("Mike will call Dale in 2 hrs."), dialogue) is True
    assert check_sentence(tokenize("Dale can't talk right now."), dialogue) is False


def test_sentences_without_a_participant_subject_or_known_words_are_not_checked():
    dialogue = Dialogue.parse(CALL)
    assert check_sentence(tokenize("They will talk later."), dialogue) is None
    assert check_sentence(tokenize("Dale likes zebras."), dialogue) is None


def test_document_counts_rows_and_figures():
    summary = "Mike wants to call Mike in 2 hrs. Dale can't talk right now.\nMike is in a meeting."
    assert [" ".join(s) for s in summary_sentences(summary)] == [
        "mike wants to call mike in 2 hrs .", "dale ca n't talk right now .", "mike is in a meeting ."]
    counts, row = document_attribution(summary, CALL)
    assert (counts.sentences, counts.checked, counts.attributed, counts.misattributed) == (3, 3, 1, 2)
    assert row["wrong_person_suspected"] is True and len(row["misattributed_sentences"]) == 2
    good, row = document_attribution("Mike is in a meeting. Mike will call Dale in 2 hrs.", CALL)
    assert row["wrong_person_suspected"] is False
    total = AttributionCounts()
    total.add(counts)
    total.add(good)
    figures = attribution_figures(total)
    assert figures["attribution"] == 60.0 and figures["attribution_checked"] == 5
    assert figures["wrong_person_suspected"] == 50.0
    _, row = document_attribution("Revenue grew.", "Revenue grew 5% in the quarter.")
    assert row == {"wrong_person_suspected": None}
    assert attribution_figures(AttributionCounts())["attribution"] is None
