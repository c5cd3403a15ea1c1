"""Perception sets: reasons said inside a request's frames (``[carried]``) and the fit's L2.

Issue 34: every CraigslistBargain buyer turn carries an offer, and people put the reason in
the offer's own sentence ("Since the hinge is loose, would you take $240?"). The CB set says
such clauses once and composes them into request frames, so the reader learns the reason
whatever offer carries it, and the same frames around a filler as the bare offer they are.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dialogue_gym.cards.card import load_card
from dialogue_gym.mind.encoders import make_encoder
from dialogue_gym.users.meaning import MeaningReader
from dialogue_gym.users.perception_sets import (
    DEFAULT_L2,
    PerceptionSetError,
    carry,
    load_perception_set,
    parse_perception_set,
)

FRAMES = [
    "{reason}, would you take $240?",
    "Would you do $95 {reason}?",
    "I can offer $300 {reason}.",
]


def test_carry_says_each_clause_alone_then_in_frames_taken_in_turn() -> None:
    lines = carry(["since it is scratched", "given the dent"], FRAMES, per_clause=2)
    assert lines == (
        "Since it is scratched",
        "Given the dent",
        "Since it is scratched, would you take $240?",
        "Would you do $95 since it is scratched?",
        "I can offer $300 given the dent.",
        "Given the dent, would you take $240?",
    )


def _p4g_good() -> dict:
    card = load_card("p4g")
    return {"concerns": {c.id: {"addressing": ["a reason"]} for c in card.concerns}}


def test_carried_clauses_join_their_classes() -> None:
    card = load_card("p4g")
    cid = card.concerns[0].id
    data = {
        **_p4g_good(),
        "turns": {"ask_polite": ["Would you give $1?"]},
        "carried": {
            "frames": FRAMES[:2],
            "concerns": {cid: {"addressing": ["since it is audited"], "near_miss": ["as I said"]}},
            "turns": {"ask_polite": ["if that's okay"]},
        },
    }
    examples = parse_perception_set(data, card, "x.toml")
    assert examples.addressing[cid] == (
        "a reason",
        "Since it is audited",
        "Since it is audited, would you take $240?",
    )
    assert examples.near_miss[cid] == ("As I said", "As I said, would you take $240?")
    assert examples.turns["ask_polite"][0] == "Would you give $1?"
    assert "If that's okay, would you take $240?" in examples.turns["ask_polite"]
    assert examples.l2 == DEFAULT_L2


@pytest.mark.parametrize(
    ("carried", "match"),
    [
        ({"frames": ["no slot here"]}, "slot"),
        ({"frames": []}, "slot"),
        ({"frames": FRAMES, "per_clause": 4}, "per_clause"),
        ({"frames": FRAMES, "per_clause": True}, "per_clause"),
        ({"frames": FRAMES, "shouting": {}}, "expected the keys"),
        ({"frames": FRAMES, "concerns": {"bogus": {"addressing": ["x"]}}}, "no such concern"),
    ],
)
def test_carried_errors_name_the_field(carried: dict, match: str) -> None:
    with pytest.raises(PerceptionSetError, match=match):
        parse_perception_set({**_p4g_good(), "carried": carried}, load_card("p4g"), "x")


def test_fit_l2_is_read_and_checked() -> None:
    card = load_card("p4g")
    assert parse_perception_set({**_p4g_good(), "fit": {"l2": 1e-4}}, card, "x").l2 == 1e-4
    for bad in ({"l2": 0}, {"l2": "small"}, {"l2": 1e-4, "steps": 10}, {"l2": True}):
        with pytest.raises(PerceptionSetError, match="fit"):
            parse_perception_set({**_p4g_good(), "fit": bad}, card, "x")


def test_the_cb_set_carries_reasons_and_fits_sharper() -> None:
    examples = load_perception_set(load_card("cb"))
    assert examples is not None and examples.l2 == 3e-4
    # Every concern has reasons said inside an offer's own sentence.
    for lines in examples.addressing.values():
        assert sum("$" in line and line.rstrip().endswith("?") for line in lines) >= 20
    assert sum("$" in line for line in examples.turns["ask_polite"]) >= 90


def test_another_l2_is_another_fit(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """The L2 is part of the fit's cache key: a set fitted sharper never reuses a fit."""
    from dialogue_gym.users import meaning

    monkeypatch.setenv("DIALOGUE_GYM_CACHE", str(tmp_path))
    monkeypatch.setattr(meaning, "_FITS", {})
    card = load_card("p4g")
    encoder = make_encoder("hashing")
    examples = load_perception_set(card)
    assert examples is not None
    first = MeaningReader(card, encoder, examples)
    sharper = MeaningReader(card, encoder, dataclasses.replace(examples, l2=1e-5))
    assert len(list((tmp_path / "meaning").glob("*.npy"))) == 2
    assert not np.allclose(first._w, sharper._w)
