"""The cue prefilter answers exactly what searching every cue answers, only faster."""

from __future__ import annotations

import random
import re

import pytest

from dialogue_gym.cards.card import builtin_cards, load_card
from dialogue_gym.text.cue_search import CueIndex, CueText, any_cue, required_literals


def _families(card: object) -> list[tuple[re.Pattern[str], ...]]:
    families = [tuple(v) for v in card.cues.values()]  # type: ignore[attr-defined]
    for concern in card.concerns:  # type: ignore[attr-defined]
        families += [tuple(concern.unlock_cues), tuple(concern.anti_cues)]
    return [f for f in families if f]


def _cards() -> list[object]:
    return [load_card(name) for name in builtin_cards()]


def _texts(card: object, rng: random.Random) -> list[str]:
    """Turns that hit and miss the cues: templates, literal fragments, case and Unicode tricks."""
    templates = [t for s in card.strategies for t in s.templates]  # type: ignore[attr-defined]
    fragments = [
        literal
        for family in _families(card)
        for pattern in family
        for literal in (required_literals(pattern) or ())
    ]
    words = " ".join(templates).split() + fragments
    texts = list(templates)
    for _ in range(400):
        pieces = rng.sample(words, k=min(len(words), rng.randint(1, 12)))
        text = " ".join(pieces)
        roll = rng.random()
        if roll < 0.2:
            text = text.upper()
        elif roll < 0.3:
            text = text.replace("s", "\u017f").replace("k", "\u212a")  # fold to s and k
        elif roll < 0.4:
            text = text.replace("i", "\u0130")  # lowercases to two characters
        elif roll < 0.5:
            text = "".join(c.upper() if rng.random() < 0.5 else c for c in text)
        texts.append(text)
    return texts


@pytest.fixture(scope="module")
def cards() -> list[object]:
    return _cards()


def test_same_answer_as_searching_every_cue(cards: list[object]) -> None:
    rng = random.Random(0)
    checked = matched = 0
    for card in cards:
        families = _families(card)
        index = CueIndex(families)
        for text in _texts(card, rng):
            cue_text, indexed = CueText(text), index.read(text)
            for family in families:
                expected = any(p.search(text) for p in family)
                assert cue_text.any(family) == expected, (text, [p.pattern for p in family])
                assert indexed.any(family) == expected, (text, [p.pattern for p in family])
                checked += 1
                matched += expected
    assert checked > 10_000 and matched > 500  # both answers were exercised


def test_every_card_cue_requires_literals(cards: list[object]) -> None:
    """Every shipped cue can be skipped on a turn that lacks its literals (the speed-up)."""
    missing = [
        p.pattern
        for card in cards
        for family in _families(card)
        for p in family
        if required_literals(p) is None
    ]
    assert not missing


@pytest.mark.parametrize(
    ("pattern", "literals"),
    [
        (r"\b(donate|give) now\b", ("donate now", "give now")),
        (r"would you (like|care|want) to (donate|give)", ("would you ",)),
        # Six characters are selective enough; past that, fewer strings win.
        (r"how'?s (it|your day)", ("how's it", "how's your day", "hows it", "hows your day")),
        (r"why (do|does) (you|we)", ("why do",)),
        (r"\bno (pressure|obligation)\b", ("no obligation", "no pressure")),
        (r"(\d+|many) (kids|children)", (" children", " kids")),
        (r"Charity NAVIGATOR", ("charity navigator",)),
        (r"(?:ab)+c", ("ab",)),  # an unbounded repeat breaks the run; its body is required
    ],
)
def test_required_literals(pattern: str, literals: tuple[str, ...]) -> None:
    assert required_literals(re.compile(pattern, re.I)) == literals


@pytest.mark.parametrize(
    "pattern",
    [
        r"\w+",  # no literal at all
        r"(a|\w)x",  # only "x" is required
        r"(\w)\1",  # a back-reference
        r"(?:a|)b?",  # every literal optional
        r"\u212a",  # non-ASCII: the Kelvin sign matches "k" ignoring case
    ],
)
def test_patterns_without_usable_literals_are_always_searched(pattern: str) -> None:
    compiled = re.compile(pattern, re.I)
    literals = required_literals(compiled)
    if literals is not None:
        assert all(s and s.isascii() for s in literals)
    for text in ("xx", "k", "b", "aax", ""):
        assert any_cue([compiled], text) == bool(compiled.search(text))


def test_non_ascii_text_is_always_searched() -> None:
    kelvin = re.compile(r"kind", re.I)
    assert any_cue((kelvin,), "\u212aind") is True  # "Kind" with the Kelvin sign
    dotted = re.compile(r"if", re.I)
    assert any_cue((dotted,), "\u0130f") is True  # "İf": str.lower() gives three characters


def test_any_accepts_lists_and_empty_families() -> None:
    pattern = re.compile(r"\bhello\b", re.I)
    assert any_cue([pattern], "Oh, HELLO there") is True
    assert any_cue([pattern], "hellos") is False
    assert any_cue((), "hello") is False


def test_the_index_finds_every_literal_present() -> None:
    literals = ["would you ", "would you like", "you li", "like", "ou", "e"]
    index = CueIndex([tuple(re.compile(re.escape(s)) for s in literals)])
    text = "Would you like it? you lied."
    assert index.present(text.lower()) == {s for s in literals if s in text.lower()}
    assert index.present("nothing here") == frozenset({"e"})


def test_the_index_reads_families_it_was_not_built_with() -> None:
    indexed = (re.compile(r"\bhello\b", re.I),)
    other = (re.compile(r"\bworld\b", re.I),)
    cues = CueIndex([indexed]).read("Hello, World")
    assert cues.any(indexed) and cues.any(other)
    assert CueIndex([]).read("hello").any(indexed)
