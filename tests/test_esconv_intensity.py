"""ESConv seekers pinned to a real dialogue use its initial emotion intensity (issue 15).

The persona built from a real ESConv dialogue starts less willing, lower in valence and with
stronger concerns the more intense the seeker's emotion was, by the train split's intensity
quantiles; its concerns come from its emotion and problem types. Bank personas and unpinned
envs are untouched.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import numpy as np
import pytest

from dialogue_gym.cards.card import load_card
from dialogue_gym.data import Dialogue, Turn, load_corpus, seeds_from
from dialogue_gym.env.registry import make
from dialogue_gym.plugins.esconv import seeker as esconv_seeker
from dialogue_gym.plugins.esconv.seeker import (
    TRAIN_INTENSITY_COUNTS,
    intensity_counts,
    intensity_quantile,
    seeker_layers,
)
from dialogue_gym.users.corpus import personas_from_seeds
from dialogue_gym.users.persona import STRENGTH_RANGE, WILLINGNESS_RANGE, Persona, persona_bank

DATASETS = Path("/work/shared/datasets")
CARD = load_card("esconv")


def _seeker(
    dialogue_id: str,
    intensity: int | None,
    emotion: str = "anxiety",
    problem: str = "job crisis",
    split: str = "test",
) -> Dialogue:
    turns = (
        Turn("user", "Hi, I have been struggling lately."),
        Turn("system", "I'm sorry to hear that. What has been going on?"),
        Turn("user", "I might lose my job and I can't sleep."),
    )
    profile = {} if intensity is None else {"initial_emotion_intensity": intensity}
    situation = {"emotion_type": emotion, "problem_type": problem, "situation": "I lost my job."}
    return Dialogue("esconv", dialogue_id, split, turns, profile, situation)


def _hashed_base(dialogue_id: str) -> Persona:
    """The bank persona ``personas_from_seeds`` starts from for an ESConv dialogue id."""
    bank = persona_bank(CARD)
    digest = hashlib.sha256(f"esconv/{dialogue_id}".encode()).hexdigest()
    return bank[int(digest[:8], 16) % len(bank)]


def _personas(*dialogues: Dialogue) -> tuple[Persona, ...]:
    return personas_from_seeds(CARD, seeds_from(list(dialogues), CARD.goal))


def test_quantiles_are_the_train_mid_ranks() -> None:
    total = sum(TRAIN_INTENSITY_COUNTS.values())
    assert total == 910
    assert intensity_quantile(1) == pytest.approx(1 / total)
    assert intensity_quantile(4) == pytest.approx((2 + 31 + 173 + 401 / 2) / total)
    quantiles = [intensity_quantile(k) for k in range(1, 6)]
    assert quantiles == sorted(quantiles) and quantiles[0] > 0 and quantiles[-1] < 1
    with pytest.raises(ValueError, match="1-5"):
        intensity_quantile(6)


def test_train_population_keeps_the_bank_mean_willingness() -> None:
    # The probability integral transform: over the train split the pinned seekers' mean
    # willingness is the middle of the bank's range, as the bank's uniform draws are.
    total = sum(TRAIN_INTENSITY_COUNTS.values())
    fields = {
        k: seeker_layers(CARD, {"initial_emotion_intensity": k}, {}, persona_bank(CARD)[0])
        for k in TRAIN_INTENSITY_COUNTS
    }
    mean = sum(n * fields[k]["initial_willingness"] for k, n in TRAIN_INTENSITY_COUNTS.items())
    assert mean / total == pytest.approx(sum(WILLINGNESS_RANGE) / 2, abs=2e-3)


def test_more_intense_seekers_start_further_from_feeling_better() -> None:
    personas = _personas(*(_seeker(f"s-{k}", k) for k in range(1, 6)))
    assert [p.emotion_intensity for p in personas] == [1, 2, 3, 4, 5]
    willingness = [p.initial_willingness for p in personas]
    valence = [p.initial_valence for p in personas]
    strength = [p.concerns[0][1] for p in personas]
    assert willingness == sorted(willingness, reverse=True) and len(set(willingness)) == 5
    assert valence == sorted(valence, reverse=True) and -0.7 <= valence[-1] < valence[0] <= -0.2
    assert strength == sorted(strength) and STRENGTH_RANGE[0] <= strength[0]
    assert strength[-1] <= STRENGTH_RANGE[1]


@pytest.mark.parametrize("preset", ["soft", "hard"])
def test_pinned_start_state_depends_on_intensity(preset: str) -> None:
    env = make(f"ESConv-{preset}", encoder="hashing")
    try:
        starts = {}
        for k in (2, 5):
            [persona] = _personas(_seeker(f"pin-{k}", k))
            env.reset(seed=3, options={"persona": persona})
            state, info = env.user.state, env.user.privileged()
            assert info["persona"] == persona.id
            assert info["willingness"] == pytest.approx(persona.initial_willingness)
            starts[k] = (state.receptivity, state.valence, info["concerns"])
        calm, distressed = starts[2], starts[5]
        assert distressed[0] < calm[0]  # receptivity 0.1 + 0.9 w0
        assert distressed[1] < calm[1] < 0.0  # valence
        assert set(calm[2]) == set(distressed[2]) == {"overwhelm", "needs_concrete_step"}
        assert all(c["strength"] > calm[2][cid]["strength"] for cid, c in distressed[2].items())
        if preset == "hard":  # a strength of 0.8 or more needs one more addressing turn
            assert distressed[2]["overwhelm"]["needed"] == calm[2]["overwhelm"]["needed"] + 1
    finally:
        env.close()


def test_concerns_come_from_the_emotion_and_problem_types() -> None:
    shame, unknown, repeated = _personas(
        _seeker("c-1", 4, emotion="Shame", problem="breakup with partner"),
        _seeker("c-2", 4, emotion="jealousy", problem="something else"),
        _seeker("c-3", 4, emotion="depression", problem="ongoing depression"),
    )
    assert [cid for cid, _ in shame.concerns] == ["shame", "isolation"]
    assert [cid for cid, _ in repeated.concerns] == ["hopelessness"]
    # No matching category: the concerns of the bank persona the id's hash chose.
    assert unknown.concerns == _hashed_base("c-2").concerns
    # A card without the matching concern keeps the bank persona's concerns.
    pruned = dataclasses.replace(
        CARD, concerns=tuple(c for c in CARD.concerns if c.id not in ("shame", "isolation"))
    )
    base = persona_bank(CARD)[0]
    fields = seeker_layers(
        pruned, {}, {"emotion_type": "shame", "problem_type": "problems with friends"}, base
    )
    assert "concerns" not in fields


def test_without_an_intensity_willingness_and_valence_stay_the_banks() -> None:
    [persona] = _personas(_seeker("no-score", None))
    base = _hashed_base("no-score")
    assert persona.emotion_intensity is None
    assert persona.initial_valence == 0.0
    assert persona.initial_willingness == base.initial_willingness
    middle = round(sum(STRENGTH_RANGE) / 2, 3)
    assert persona.concerns == (("overwhelm", middle), ("needs_concrete_step", middle))


# -- unpinned users are unchanged ----------------------------------------------------------------


def _bank_digest(card_name: str) -> str:
    """The bank's personas as they were before corpus intensity existed (old fields only)."""
    rows = [
        (p.id, p.name, p.age, p.background, p.style, p.concerns, p.initial_willingness, p.capacity)
        for p in persona_bank(load_card(card_name))
    ]
    return hashlib.sha256(repr(rows).encode()).hexdigest()[:16]


def test_bank_personas_are_unchanged() -> None:
    # Digests taken at 3bdcf9d, before the ESConv seeker layers.
    assert _bank_digest("esconv") == "4512ad0b055f3abe"
    assert _bank_digest("p4g") == "3deb68c9e1e0bd3e"
    for card in ("esconv", "p4g"):
        assert all(p.initial_valence == 0.0 for p in persona_bank(load_card(card)))
        assert all(p.emotion_intensity is None for p in persona_bank(load_card(card)))


@pytest.mark.parametrize("env_id", ["ESConv-hard", "ESConv-soft"])
def test_unpinned_seekers_start_at_neutral_valence(env_id: str) -> None:
    env = make(env_id, encoder="hashing")
    try:
        for seed in range(5):
            env.reset(seed=seed)
            w0 = env.user.persona.initial_willingness
            state = env.user.state
            assert state.valence == 0.0
            assert state.receptivity == pytest.approx(np.clip(0.1 + 0.9 * w0, 0.0, 1.0))
            assert env.user.persona.emotion_intensity is None
    finally:
        env.close()


# -- the train split, and nothing else, gives the counts -----------------------------------------


def test_counts_refuse_held_out_dialogues_by_id() -> None:
    train = [_seeker(f"t-{k}", k, split="train") for k in (3, 4, 4)]
    assert intensity_counts(train) == {1: 0, 2: 0, 3: 1, 4: 2, 5: 0}
    for split in ("valid", "test", "unsplit"):
        with pytest.raises(ValueError, match="held-out-7"):
            intensity_counts([*train, _seeker("held-out-7", 5, split=split)])


@pytest.mark.skipif(not (DATASETS / "esconv").is_dir(), reason="needs /work/shared/datasets")
def test_shipped_counts_are_the_train_splits() -> None:
    train = load_corpus("esconv", DATASETS, split="train")
    assert {d.split for d in train} == {"train"}
    assert intensity_counts(train) == dict(TRAIN_INTENSITY_COUNTS)
    assert esconv_seeker.TRAIN_INTENSITY_COUNTS is TRAIN_INTENSITY_COUNTS
