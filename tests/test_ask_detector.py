"""The learned ask detector: fitted on train persuader turns, read by the users via the card."""

from __future__ import annotations

import copy

import pytest
from test_calibration import P4G_TRAIN, p4g_dialogue
from test_data import DATA, needs_data

import dialogue_gym
from dialogue_gym.calibration import ASK_DETECTORS, CalibrationError, fit, shipped_table
from dialogue_gym.cards.card import load_card
from dialogue_gym.data import Dialogue, Turn, load_corpus
from dialogue_gym.mind.encoders import HashingEncoder
from dialogue_gym.plugins.p4g.calibration import ASK_ACTS, AskDetector, shipped_ask_detector
from dialogue_gym.users.analysis import UtteranceAnalyzer, card_ask_detector

#: An ask no cue of the P4G card matches (a real persuader's wording).
UNCUED_ASK = "I would love for you to donate part of your earnings to Save the Children."


def test_the_fixture_fit_reads_its_asks() -> None:
    table = fit("p4g", P4G_TRAIN)
    part = table["parameters"]["ask"]
    assert part["turns"] == {"n": 24, "ask": 18, "other": 6}
    assert part["rule"]["ask"] == sorted(ASK_ACTS)
    detector = AskDetector(table)
    assert detector("Would you like to donate to them?")
    assert not detector("Hello! Have you heard of Save the Children?")
    assert detector.probability("Could you give a bit more?") > 0.5


def test_a_fit_without_asks_is_refused() -> None:
    quiet = [
        Dialogue(
            "p4g",
            d.id,
            "train",
            tuple(
                Turn(t.role, t.text, "greeting" if t.role == "system" else t.act) for t in d.turns
            ),
            {},
            {},
        )
        for d in P4G_TRAIN
    ]
    with pytest.raises(CalibrationError, match="ask and other turns"):
        fit("p4g", quiet)


def test_a_table_without_an_ask_reader_is_refused() -> None:
    table = copy.deepcopy(fit("p4g", P4G_TRAIN))
    del table["parameters"]["ask"]
    with pytest.raises(CalibrationError, match="no usable ask reader"):
        AskDetector(table)


def test_held_out_dialogues_never_enter_the_ask_fit() -> None:
    with pytest.raises(CalibrationError, match="train split only"):
        fit("p4g", [*P4G_TRAIN, p4g_dialogue(99, split="valid")])


def test_the_shipped_detector_reads_an_ask_the_cues_miss() -> None:
    detector = shipped_ask_detector()
    assert shipped_table("p4g")["provenance"]["code_version"]["fitter"] >= 2
    assert detector(UNCUED_ASK)
    assert detector("Would you like to donate some of your task payment?")
    assert not detector("Save the Children helps kids in Syria get food and schooling.")
    assert not detector("Hi, how are you today?")


def test_the_p4g_card_names_the_detector_and_other_cards_do_not() -> None:
    assert load_card("p4g").corpus.ask_reader == "p4g"
    assert card_ask_detector(load_card("p4g")) is ASK_DETECTORS["p4g"]()
    assert card_ask_detector(load_card("esconv")) is None


def test_the_users_read_an_ask_when_cues_or_detector_say_so() -> None:
    card = load_card("p4g")
    encoder = HashingEncoder()
    cues_only = UtteranceAnalyzer(card, encoder, scoring="centroid")
    both = UtteranceAnalyzer.for_user(card, encoder)
    assert not cues_only.perceive(UNCUED_ASK).ask
    perceived = both.perceive(UNCUED_ASK)
    assert perceived.ask and not perceived.off_topic
    cued = "Would you like to donate some of your task payment?"
    assert cues_only.perceive(cued).ask and both.perceive(cued).ask
    assert not both.perceive("Hi, how are you today?").ask


def test_the_p4g_env_user_reads_asks_with_the_detector() -> None:
    env = dialogue_gym.make("P4G-hard", encoder="hashing")
    user = env.user
    assert user.analyzer.ask_detector is not None
    assert user.analyzer.perceive(UNCUED_ASK).ask
    env.close()


@needs_data
def test_the_shipped_detector_finds_more_held_out_asks_than_the_cues() -> None:
    """Measured on the annotated held-out persuader turns (never fitted on)."""
    card = load_card("p4g")
    cues_only = UtteranceAnalyzer(card, HashingEncoder())
    detector = shipped_ask_detector()
    turns = [
        (turn.text, bool(ASK_ACTS & set(turn.acts)))
        for dialogue in load_corpus("p4g", DATA, format="annotated")
        if dialogue.split != "train"
        for turn in dialogue.turns
        if turn.role == "system" and turn.acts and turn.text
    ]
    asks = [text for text, is_ask in turns if is_ask]
    by_cues = sum(cues_only.perceive(text).ask for text in asks)
    by_either = sum(cues_only.perceive(text).ask or detector(text) for text in asks)
    assert by_either >= by_cues + 0.1 * len(asks)
