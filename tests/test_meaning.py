"""The sentence-level meaning reader, the perception sets and the task brief."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dialogue_gym.cards.card import builtin_cards, load_card
from dialogue_gym.env.reveal import public_events
from dialogue_gym.mind.encoders import make_encoder
from dialogue_gym.users.meaning import (
    ACTS,
    MeaningReader,
    PerceptionSetError,
    load_perception_set,
    parse_perception_set,
    split_clauses,
    split_points,
    split_sentences,
)


def test_split_sentences_joins_fragments() -> None:
    assert split_sentences("Sure! The audit is public. Anyone can read it online.") == [
        "Sure! The audit is public.",
        "Anyone can read it online.",
    ]
    assert split_sentences("Okay.") == ["Okay."]
    assert split_sentences("One two three.\nFour five six") == ["One two three.", "Four five six"]


def test_split_clauses_keeps_independent_clauses_and_drops_asides() -> None:
    two = "Fifty cents buys a year of deworming pills; small gifts are pooled into real supplies."
    assert split_clauses(two) == [
        "Fifty cents buys a year of deworming pills",
        "small gifts are pooled into real supplies.",
    ]
    assert split_clauses("Just name an amount; if not, fine.") == []  # an aside, one clause
    assert split_clauses("No semicolon in this sentence at all.") == []
    # Blind play round 7: reasons joined by ", and" are points too.
    listed = "The audited reports are published online, and the watchdog rating is public."
    assert split_clauses(listed) == [
        "The audited reports are published online",
        "the watchdog rating is public.",
    ]
    # A colon or a dash elaborates one point; "and" alone joins words, not clauses.
    assert split_clauses("It never asks for bank details: no card, no form, no sign-up.") == []
    assert split_clauses("Pausing takes one tap - no call, no form, no fee at all.") == []
    assert split_clauses("Bread and butter and jam for everyone at the table.") == []


def test_split_points_reads_what_follows_a_lead_in_on_its_own() -> None:
    """Whether a sentence answers a worry is read part by part, elaborations after a colon or
    a dash included (the encoders' view writes an em dash as "--"); how many reasons it gives
    is not (:func:`split_clauses`)."""
    sentence = (
        "I do want to gently push back on one thing, though: going without proper sleep would "
        "wear anyone down -- struggling with it isn't a sign you're weak."
    )
    assert split_points(sentence) == [
        "I do want to gently push back on one thing, though",
        "going without proper sleep would wear anyone down",
        "struggling with it isn't a sign you're weak.",
    ]
    assert split_clauses(sentence) == []
    assert split_points("It never asks for bank details: no card, no form, no sign-up.") == [
        "It never asks for bank details",
        "no card, no form, no sign-up.",
    ]
    assert split_points("Here's the thing: it is free.") == []  # an aside: one point
    assert split_points("No break in this sentence at all.") == []


@pytest.mark.parametrize("name", builtin_cards())
def test_every_shipped_card_has_a_valid_perception_set(name: str) -> None:
    card = load_card(name)
    examples = load_perception_set(card)
    assert examples is not None, f"{card.id} ships no perception set"
    assert set(examples.addressing) == {c.id for c in card.concerns}
    assert all(len(lines) >= 20 for lines in examples.addressing.values())
    assert set(examples.turns) <= set(ACTS)


def test_perception_set_errors_name_the_field() -> None:
    card = load_card("p4g")
    good = {c.id: {"addressing": ["a reason"]} for c in card.concerns}
    parse_perception_set({"concerns": good}, card, "x.toml")
    with pytest.raises(PerceptionSetError, match="no such concern"):
        parse_perception_set({"concerns": {**good, "bogus": {"addressing": ["a"]}}}, card, "x")
    with pytest.raises(PerceptionSetError, match="unknown acts"):
        parse_perception_set({"concerns": good, "turns": {"shouting": ["a"]}}, card, "x")
    missing = dict(good)
    missing.pop("trust")
    with pytest.raises(PerceptionSetError, match="trust"):
        parse_perception_set({"concerns": missing}, card, "x")
    with pytest.raises(PerceptionSetError, match="list of non-empty strings"):
        parse_perception_set({"concerns": {**good, "trust": {"addressing": [3]}}}, card, "x")


@pytest.fixture(scope="module")
def p4g_reader() -> MeaningReader:
    card = load_card("p4g")
    return MeaningReader(card, make_encoder("minilm"))


def _read(reader: MeaningReader, text: str) -> dict[str, float]:
    sentences = split_sentences(text)
    meaning = reader.read(np.asarray(reader.encoder.encode(sentences)))
    return {**meaning.concerns, **meaning.acts}


def test_reader_reads_an_answer_in_words_no_card_sentence_uses(p4g_reader: MeaningReader) -> None:
    text = (
        "I hear you, that's a reasonable thing to wonder about. They've been going for over a "
        "hundred years and independent accountants go through their books annually."
    )
    scores = _read(p4g_reader, text)
    assert max(scores, key=scores.get) == "trust"  # type: ignore[arg-type]


def test_reader_tells_acts_apart(p4g_reader: MeaningReader) -> None:
    polite = _read(p4g_reader, "Would you be up for giving a little? Either answer is fine by me.")
    pushy = _read(p4g_reader, "Stop stalling and hand it over now, you're being selfish.")
    bye = _read(p4g_reader, "No worries at all, thanks for your time and have a good evening!")
    assert polite["ask_polite"] > polite["ask_pushy"]
    assert pushy["ask_pushy"] > pushy["ask_polite"]
    assert max(bye, key=bye.get) == "farewell"  # type: ignore[arg-type]


def test_reader_fit_is_deterministic_and_cached() -> None:
    card = load_card("p4g")
    a = MeaningReader(card, make_encoder("hashing"))
    b = MeaningReader(card, make_encoder("hashing"))
    assert a._w is b._w  # one fit per card and encoder in a process
    assert a.examples > 300


def test_concern_events_stay_private() -> None:
    events = ["ask", "voiced:trust", "resolved:trust", "addressed:trust", "pressure"]
    assert public_events(events) == ["ask", "pressure"]


def test_preset_fields_have_documented_defaults() -> None:
    from dialogue_gym.users.presets import HARD

    fields = {f.name for f in dataclasses.fields(HARD)}
    assert {"meaning_threshold", "pushy_threshold"} <= fields


def test_reader_fits_are_cached_on_disk(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """A second process loads the fit instead of refitting, and gets the same weights; a
    corrupt cache file only costs a refit."""
    from dialogue_gym.users import meaning

    monkeypatch.setenv("DIALOGUE_GYM_CACHE", str(tmp_path))
    monkeypatch.setattr(meaning, "_FITS", {})
    card = load_card("p4g")
    encoder = make_encoder("hashing")
    first = MeaningReader(card, encoder)
    (cached,) = (tmp_path / "meaning").glob("*.npy")
    monkeypatch.setattr(meaning, "_FITS", {})

    def no_refit(*args: object, **kwargs: object) -> np.ndarray:
        raise AssertionError("refitted although a cached fit exists")

    with monkeypatch.context() as patch:
        patch.setattr(meaning, "_fit_softmax", no_refit)
        second = MeaningReader(card, encoder)
    np.testing.assert_array_equal(first._w, second._w)
    cached.write_bytes(b"not an array")
    monkeypatch.setattr(meaning, "_FITS", {})
    third = MeaningReader(card, encoder)
    np.testing.assert_array_equal(first._w, third._w)
    # Another encoder (same name, other weights) never reuses the fit.
    other = make_encoder("hashing-128")
    monkeypatch.setattr(meaning, "_FITS", {})
    assert MeaningReader(card, other)._w.shape[0] == 129


def test_a_card_without_a_perception_set_gets_no_reader() -> None:
    """A reader fitted on a few prototype classes would credit any turn (an ask) as a reason."""
    card = dataclasses.replace(load_card("p4g"), id="NoSuchTask")
    assert load_perception_set(card) is None
    assert MeaningReader.for_card(card, make_encoder("hashing")) is None
    assert MeaningReader.for_card(load_card("p4g"), make_encoder("hashing")) is not None
