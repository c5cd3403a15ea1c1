"""Learned readers of real users' text (issue 15 item 2) and how the success judge uses them.

The reader module (features, the two fits, the table round trip, quantile votes), the
per-task resolution (P4G's shipped table; ESConv's first-use fit or user table, or none), and
the judge's rule: a learned reader reads replies an external policy wrote, never the
simulator's own (embedded episodes stay bit-identical).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from test_calibration import ESCONV_TRAIN

from dialogue_gym import make
from dialogue_gym.calibration import fit, write_table
from dialogue_gym.calibration.text_reader import (
    STANCES,
    TextReader,
    features,
    fit_ridge,
    fit_softmax,
    quantile_votes,
)
from dialogue_gym.cards.card import load_card
from dialogue_gym.judges import user_text
from dialogue_gym.judges.base import Exchange
from dialogue_gym.judges.embedded import StateSuccessJudge
from dialogue_gym.plugins.esconv.calibration import SeekerReader
from dialogue_gym.plugins.p4g.calibration import PersuadeeReader
from dialogue_gym.users.base import UserTurn

# -- features and fits -----------------------------------------------------------------------------


def test_features_fold_numbers_and_keep_word_pairs():
    found = features("I'd give $5, maybe 0.50 or 20 cents!")
    assert {"i'd", "give", "$", "<num>", "cents", "!", "$ <num>", "<num> cents"} <= found
    assert not any(ch.isdigit() for f in found for ch in f)
    assert features("") == set()


TOY_TEXTS = ["yes i will donate", "sure i will give", "no i will not", "no thanks never"] * 3
TOY_LABELS = ["agree", "agree", "refused", "refused"] * 3


def test_softmax_reader_learns_separates_and_round_trips():
    reader = fit_softmax(TOY_TEXTS, TOY_LABELS, ("refused", "agree"), min_df=2)
    yes = reader.probabilities("yes i will donate")
    no = reader.probabilities("no thanks")
    assert sum(yes.values()) == pytest.approx(1.0)
    assert yes["agree"] > 0.5 > no["agree"]
    assert reader.probabilities("unseen words only") == reader.probabilities("")  # bias only
    again = TextReader.from_table(reader.to_table())
    assert again == reader and again.probabilities("sure") == reader.probabilities("sure")
    assert fit_softmax(TOY_TEXTS, TOY_LABELS, ("refused", "agree"), min_df=2) == reader
    with pytest.raises(ValueError, match="value"):
        reader.value("x")


def test_softmax_fit_refuses_bad_labels():
    with pytest.raises(ValueError, match="outside the classes"):
        fit_softmax(["a"], ["maybe"], ("refused", "agree"))
    with pytest.raises(ValueError, match="every class"):
        fit_softmax(["a", "b"], ["agree", "agree"], ("refused", "agree"))
    with pytest.raises(ValueError, match="differ in length"):
        fit_softmax(["a"], [], ("agree",))


def test_ridge_reader_predicts_a_number():
    texts = ["great", "great fine", "bad", "bad awful"] * 4
    targets = [4.0, 3.0, 1.0, 0.0] * 4
    reader = fit_ridge(texts, targets, l2=0.1, min_df=2)
    assert reader.value("great") > reader.value("bad")
    # The intercept is unpenalized: the fitted values average to the mean target.
    assert np.mean([reader.value(t) for t in texts]) == pytest.approx(2.0, abs=1e-3)
    assert TextReader.from_table(reader.to_table()) == reader
    with pytest.raises(ValueError, match="probabilities"):
        reader.probabilities("x")


def test_reader_tables_are_checked():
    with pytest.raises(ValueError, match="kind"):
        TextReader("tree", (), ("a",), ((),), (0.0,))
    with pytest.raises(ValueError, match="one weight per feature"):
        TextReader("ridge", ("a", "b"), ("value",), ((1.0,),), (0.0,))
    with pytest.raises(ValueError, match="not a TextReader table"):
        TextReader.from_table({"kind": "ridge"})


@pytest.mark.parametrize(
    ("distribution", "votes"),
    [
        ({"agree": 1.0}, ["agree"] * 3),
        ({"agree": 0.6, "positive": 0.4}, ["positive", "agree", "agree"]),
        ({"agree": 0.5, "positive": 0.2, "neutral": 0.3}, ["neutral", "positive", "agree"]),
        ({"neutral": 0.9, "refused": 0.1}, ["neutral"] * 3),
        ({"refused": 0.2, "neutral": 0.8}, ["refused", "neutral", "neutral"]),
    ],
)
def test_quantile_votes_read_the_distribution_at_1_6_1_2_5_6(distribution, votes):
    assert quantile_votes(distribution, 3) == votes


def test_quantile_votes_refuse_unknown_or_empty():
    with pytest.raises(ValueError, match="unknown stances"):
        quantile_votes({"maybe": 1.0})
    with pytest.raises(ValueError, match="positive mass"):
        quantile_votes({"agree": 0.0})
    assert len(quantile_votes({"agree": 1.0}, 5)) == 5


# -- the success judge -----------------------------------------------------------------------------


class FixedReader:
    """A stance reader that returns one distribution and records what it read."""

    def __init__(self, distribution: dict[str, float]) -> None:
        self.fixed = distribution
        self.read: list[tuple[tuple[str, str], ...]] = []

    def distribution(self, history: Sequence[tuple[str, str]]) -> dict[str, float]:
        self.read.append(tuple(history))
        return dict(self.fixed)


def exchange(reply: str, external: bool, decision: str = "neutral", w: float = 0.0) -> Exchange:
    card = load_card("p4g")
    history = (("system", "Would you donate?"), ("user", reply))
    return Exchange(
        1,
        history,
        history[0][1],
        reply,
        UserTurn(reply, decision, card.target, True),
        {"willingness": w},
        external_user=external,
    )


def test_the_judge_reads_external_replies_with_the_reader():
    card = load_card("p4g")
    reader = FixedReader({"agree": 0.7, "positive": 0.3})
    judgment = StateSuccessJudge(card, text_reader=reader).judge(exchange("whatever", True))
    assert judgment.votes == ("positive", "agree", "agree") and judgment.success
    assert reader.read == [(("system", "Would you donate?"), ("user", "whatever"))]
    regex = StateSuccessJudge(card)  # no reader: the cue regexes read neutral
    assert not regex.judge(exchange("whatever", True)).success


@pytest.mark.parametrize(
    ("reply", "decision"),
    [("No, I won't donate.", "refused"), ("Sure, put me down for $1.00.", "agree")],
)
def test_external_replies_the_cues_place_are_judged_as_before(reply: str, decision: str):
    card = load_card("p4g")
    reader = FixedReader({"neutral": 1.0})
    judge = StateSuccessJudge(card, text_reader=reader)
    with_reader = judge.judge(exchange(reply, True, decision, 0.9))
    without = StateSuccessJudge(card).judge(exchange(reply, True, decision, 0.9))
    assert with_reader == without and reader.read == []
    assert with_reader.success == (decision == "agree")


@pytest.mark.parametrize(("decision", "w"), [("agree", 0.9), ("neutral", 0.1), ("refused", 0.0)])
def test_the_simulators_own_replies_are_judged_as_before(decision: str, w: float):
    card = load_card("p4g")
    reader = FixedReader({"agree": 1.0})
    reply = "Sure, I will donate $1."
    with_reader = StateSuccessJudge(card, text_reader=reader).judge(
        exchange(reply, False, decision, w)
    )
    without = StateSuccessJudge(card).judge(exchange(reply, False, decision, w))
    assert with_reader == without and reader.read == []


def test_p4g_uses_the_shipped_reader_and_other_tasks_none():
    reader = user_text.reader_for("P4G")
    assert isinstance(reader, PersuadeeReader)
    agree = reader.distribution([("system", "How much?"), ("user", "I will donate $1 please.")])
    no = reader.distribution([("system", "Will you?"), ("user", "Hello, how are you today?")])
    assert set(agree) == set(STANCES)
    assert agree["agree"] > 0.5 > no["agree"]
    assert user_text.reader_for("CB") is None and user_text.reader_for("ED") is None


def test_esconv_reader_comes_from_a_table_or_the_given_train_split(tmp_path: Path):
    assert user_text.reader_for("ESConv") is None  # nothing given: no reader, nothing implicit
    fitted = user_text.reader_for("ESConv", train=ESCONV_TRAIN)
    assert isinstance(fitted, SeekerReader)
    write_table(fit("esconv", ESCONV_TRAIN), tmp_path)
    read = user_text.reader_for("ESConv", table=tmp_path / "esconv.json")
    assert isinstance(read, SeekerReader)
    history = [("system", "How are you feeling now?"), ("user", "Thank you, I feel better.")]
    assert read.distribution(history) == fitted.distribution(history)


def _self_play_once(**kwargs: object) -> dict[str, object]:
    env = make("P4G-hard", encoder="hashing", external=("system", "user"), **kwargs)
    env.reset(seed=0)
    env.step({"system": "Would you like to donate some of your payment to Save the Children?"})
    _, _, _, _, infos = env.step({"user": "I would like to donate 50 cents please."})
    return infos["user"]


def test_an_external_persuadee_who_states_an_amount_succeeds_with_the_reader():
    judge = functools.partial(StateSuccessJudge, text_reader=user_text.reader_for("P4G"))
    info = _self_play_once(success_judge=judge)
    assert info["success"] and np.isclose(info["success_score"], 1.0)


def test_the_reader_is_opt_in():
    """A default env judges external replies with the cues (the same wherever it runs)."""
    assert not _self_play_once()["success"]
