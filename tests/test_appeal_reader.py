"""The learned appeal readers: fitted on train persuader turns, read by the users via the card."""

from __future__ import annotations

import copy

import pytest
from test_calibration import P4G_TRAIN
from test_data import DATA, needs_data

import dialogue_gym
from dialogue_gym.calibration import APPEAL_READERS, CalibrationError, fit
from dialogue_gym.calibration.text_reader import fit_softmax, fit_softmax_many
from dialogue_gym.cards.card import load_card
from dialogue_gym.data import Dialogue, Turn, load_corpus
from dialogue_gym.mind.encoders import HashingEncoder
from dialogue_gym.plugins.p4g.calibration import APPEAL_ACTS, AppealReader, shipped_appeal_reader
from dialogue_gym.users.analysis import UtteranceAnalyzer, card_appeal_reader

#: A real persuader's kind of credibility appeal that no unlock cue of the P4G card matches.
UNCUED_APPEAL = "They have been working in this field for a very long time and are well known."


def appeal_dialogue(index: int) -> Dialogue:
    """A tiny annotated P4G dialogue whose persuader makes two appeals and asks once."""
    turns = (
        Turn("system", "Hi! Save the Children is well known and trusted.", "credibility-appeal"),
        Turn("user", "Oh nice.", "acknowledgement"),
        Turn(
            "system", "The donation comes right out of your task payment.", "donation-information"
        ),
        Turn("user", "Okay.", "acknowledgement"),
        Turn(
            "system",
            "They are trusted. It comes out of your payment.",
            "credibility-appeal+donation-information",
        ),
        Turn("user", "I see.", "acknowledgement"),
        Turn("system", "How are you today?", "greeting"),
        Turn("user", "Good.", "greeting"),
    )
    return Dialogue("p4g", f"a{index:03d}", "train", turns, {"donation": 0.0}, {})


TRAIN = [*P4G_TRAIN, *(appeal_dialogue(i) for i in range(6))]


def test_the_fixture_fit_reads_its_appeals() -> None:
    table = fit("p4g", TRAIN)
    part = table["parameters"]["appeals"]
    assert part["turns"]["n"] == 24 + 24
    assert part["turns"]["by_appeal"]["credibility-appeal"] == 12
    assert part["turns"]["by_appeal"]["donation-information"] == 12
    assert part["turns"]["by_appeal"]["personal-story"] == 0
    # Only the appeals with turns that make them (and turns that do not) get a reader.
    assert set(part["readers"]) == {"credibility-appeal", "donation-information"}
    assert set(part["rule"]) == set(APPEAL_ACTS)
    reader = AppealReader(table)
    assert reader("Save the Children is well known and trusted.") == {"credibility-appeal"}
    assert reader("The donation comes right out of your task payment.") == {"donation-information"}
    assert reader("How are you today?") == frozenset()


def test_a_fit_without_appeals_has_no_readers_and_reads_none() -> None:
    table = fit("p4g", P4G_TRAIN)
    assert table["parameters"]["appeals"]["readers"] == {}
    assert AppealReader(table)("Save the Children is well known and trusted.") == frozenset()


def test_a_table_without_appeal_readers_is_refused() -> None:
    table = copy.deepcopy(fit("p4g", TRAIN))
    del table["parameters"]["appeals"]
    with pytest.raises(CalibrationError, match="no usable appeal readers"):
        AppealReader(table)
    table = copy.deepcopy(fit("p4g", TRAIN))
    table["parameters"]["appeals"]["readers"]["credibility-appeal"]["classes"] = ["a", "b"]
    with pytest.raises(CalibrationError, match="without their class"):
        AppealReader(table)


def test_readers_fitted_together_equal_readers_fitted_alone() -> None:
    texts = [t.text for d in TRAIN for t in d.turns if t.role == "system"]
    first = ["greet" if "How are" in t else "other" for t in texts]
    second = ["trust" if "trusted" in t else "other" for t in texts]
    together = fit_softmax_many(texts, [(first, ("greet", "other")), (second, ("trust", "other"))])
    alone = [
        fit_softmax(texts, first, ("greet", "other")),
        fit_softmax(texts, second, ("trust", "other")),
    ]
    assert together == alone
    with pytest.raises(ValueError, match="at least one task"):
        fit_softmax_many(texts, [])


def test_the_users_give_the_cue_bonus_to_the_concerns_an_appeal_addresses() -> None:
    card = load_card("p4g")
    encoder = HashingEncoder()
    cues_only = UtteranceAnalyzer(card, encoder, scoring="centroid")
    both = UtteranceAnalyzer.for_user(card, encoder)
    assert both.appeal_reader is not None
    assert shipped_appeal_reader()(UNCUED_APPEAL) >= {"credibility-appeal"}
    plain, read = cues_only.perceive(UNCUED_APPEAL), both.perceive(UNCUED_APPEAL)
    assert plain.appeals == frozenset() and "credibility-appeal" in read.appeals
    addressed = {c for s in card.strategies if s.name in read.appeals for c in s.addresses}
    assert "trust" in addressed
    for concern in card.concerns:
        bonus = both.cue_bonus if concern.id in addressed else 0.0
        assert read.unlock[concern.id] == pytest.approx(plain.unlock[concern.id] + bonus)
        assert read.anti[concern.id] == plain.anti[concern.id]
    # A turn the reader reads as no appeal is perceived exactly as before.
    greeting = "Hi, how are you today?"
    assert both.perceive(greeting).unlock == cues_only.perceive(greeting).unlock


def test_an_appeal_and_a_matching_cue_give_the_bonus_once() -> None:
    card = load_card("p4g")
    trust = card.concern("trust")
    cued = next(
        t
        for s in card.strategies
        for t in s.templates
        if any(cue.search(t) for cue in trust.unlock_cues)
    )
    encoder = HashingEncoder()
    cues_only = UtteranceAnalyzer(card, encoder, scoring="centroid")
    forced = UtteranceAnalyzer(
        card, encoder, scoring="centroid", appeal_reader=lambda _: frozenset({"credibility-appeal"})
    )
    assert forced.perceive(cued).unlock["trust"] == pytest.approx(
        cues_only.perceive(cued).unlock["trust"]
    )


def test_labels_map_to_card_strategies_through_the_aliases_and_unknown_ones_are_ignored() -> None:
    card = load_card("p4g")
    encoder = HashingEncoder()
    reader = lambda _: frozenset({"ask-donation-amount", "no-such-label"})  # noqa: E731
    analyzer = UtteranceAnalyzer(card, encoder, scoring="centroid", appeal_reader=reader)
    # ask-donation-amount is an alias of proposition-of-donation, which addresses nothing.
    perceived = analyzer.perceive("Something about the charity.")
    assert perceived.appeals == {"proposition-of-donation"}
    plain = UtteranceAnalyzer(card, encoder, scoring="centroid").perceive(
        "Something about the charity."
    )
    assert perceived.unlock == plain.unlock


def test_the_p4g_card_names_the_reader_and_the_env_user_has_it() -> None:
    assert load_card("p4g").corpus.appeal_reader == "p4g"
    assert card_appeal_reader(load_card("p4g")) is APPEAL_READERS["p4g"]()
    assert card_appeal_reader(load_card("esconv")) is None
    env = dialogue_gym.make("P4G-hard", encoder="hashing")
    assert env.user.analyzer.appeal_reader is not None
    assert "credibility-appeal" in env.user.analyzer.perceive(UNCUED_APPEAL).appeals
    env.close()


@needs_data
def test_the_shipped_readers_read_held_out_appeals() -> None:
    """Measured on the annotated held-out persuader turns (never fitted on)."""
    reader = shipped_appeal_reader()
    turns = [
        (turn.text, set(turn.acts))
        for dialogue in load_corpus("p4g", DATA, format="annotated")
        if dialogue.split != "train"
        for turn in dialogue.turns
        if turn.role == "system" and turn.acts and turn.text
    ]
    reads = [(reader(text), acts) for text, acts in turns]
    made = sum(bool(acts & set(APPEAL_ACTS)) for _, acts in reads)
    found = sum(bool(read & acts) for read, acts in reads)
    read_total = sum(len(read) for read, _ in reads)
    right = sum(len(read & acts) for read, acts in reads)
    assert made > 200
    assert found >= 0.4 * made  # measured: see docs/validity.md
    assert right >= 0.7 * read_total
