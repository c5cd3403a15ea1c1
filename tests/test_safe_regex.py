"""The static check on card regexes (issue 16, item 7): catastrophic patterns are refused."""

from __future__ import annotations

import re

import pytest

from dialogue_gym.cards.card import builtin_cards, load_card
from dialogue_gym.text.safe_regex import UnsafeRegexError, check_safe, compile_safe

NESTED = ["^(a+)+$", "(a*)*", "(.*)+", "([a-z]+)*$", "((a+)b?)+", "(\\w+ ?)+$"]
AMBIGUOUS = ["(a|a)+", "(a|ab)+$", "(?:a|b|ab)*c", "(x\\w*|xy)+$", "(\\d+|\\w+)+"]
TRADING = ["(x+x+)+y", ".*a.*b", ".*a.*a.*b", "\\w+\\w+x", "\\w+\\s*\\w+x", "\\d+[^.]{0,60}x"]
SAFE = [
    "\\w+\\s+\\w+",
    "(?: \\w+)+",
    "(?:\\s+\\w+){0,3}",
    ".{0,40}x.{0,40}y",
    "(cat|car)+",
    "(very |really )*good",
    "\\bfoo\\b.*\\bbar\\b",
    "a.*b",
    "^\\d+(\\.\\d\\d)?$",
    "(a+b)+",
    "(\\w+-)+\\w+",
    "(a{1,2}){1,3}",
    "(\\w|\\d)+",  # the parser makes this one character set
    "^\\W*(hi|hello)\\b",
]


@pytest.mark.parametrize("pattern", NESTED)
def test_nested_repeats_that_trade_are_refused(pattern: str) -> None:
    with pytest.raises(UnsafeRegexError, match="repeated group holds a repeat"):
        check_safe(pattern, re.IGNORECASE)


@pytest.mark.parametrize("pattern", AMBIGUOUS)
def test_ambiguous_alternatives_under_a_repeat_are_refused(pattern: str) -> None:
    with pytest.raises(UnsafeRegexError, match=r"alternatives that can match the same text|trade"):
        check_safe(pattern, re.IGNORECASE)


@pytest.mark.parametrize("pattern", TRADING)
def test_repeats_that_trade_in_one_sequence_are_refused(pattern: str) -> None:
    with pytest.raises(UnsafeRegexError, match="variable-width parts can trade"):
        check_safe(pattern, re.IGNORECASE)


@pytest.mark.parametrize("pattern", SAFE)
def test_linear_patterns_pass(pattern: str) -> None:
    compiled = compile_safe(pattern, re.IGNORECASE)
    assert compiled.pattern == pattern and compiled.flags & re.IGNORECASE


@pytest.mark.parametrize("pattern", ["(", "a{99999999999}", "x" * 2001, 5])
def test_invalid_or_oversized_patterns_are_refused(pattern: object) -> None:
    with pytest.raises(UnsafeRegexError):
        compile_safe(pattern)  # type: ignore[arg-type]


def test_every_shipped_cue_passes() -> None:
    for name in builtin_cards():
        card = load_card(name)
        cues = [p for ps in card.cues.values() for p in ps]
        cues += [p for c in card.concerns for p in (*c.unlock_cues, *c.anti_cues)]
        assert cues
        for pattern in cues:
            check_safe(pattern.pattern, pattern.flags)
