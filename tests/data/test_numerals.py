"""The token-level numeral test shared by the numbers figures and numbers_from_source."""

import pytest

from agentsum.data.numerals import is_numeral
from agentsum.data.numbers import read_numbers


@pytest.mark.parametrize("token", ["5", "2021", "2.5", "1,000", "452.2", ".5", "1.5m", "3bn", "50bps", "3-4",
                                   "18-year-old"])
def test_numerals(token):
    assert is_numeral(token)
    assert read_numbers([token]), "the numbers figures read a number from it too"


@pytest.mark.parametrize("token", ["q3", "3rd", "10x", "mp3", "10:30", "9/11", "two", "twenty", "$", "million",
                                   "-", "fy"])
def test_words_that_are_not_numerals(token):
    assert not is_numeral(token)
