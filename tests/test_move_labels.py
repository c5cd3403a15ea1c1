"""SFT over listening moves: labels from the corpus's acts, and cloning the successes only."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest

from dialogue_gym.cards.card import load_card
from dialogue_gym.data import Dialogue, Turn
from dialogue_gym.env.wrappers import BargainMoves, ListeningMoves
from dialogue_gym.mind.encoders import make_encoder
from dialogue_gym_agents.common.checkpoint import load_checkpoint
from dialogue_gym_agents.planner.train import PlannerConfig, main
from dialogue_gym_agents.training.corpora import dialogue_outcome, successful_dialogues
from dialogue_gym_agents.training.move_labels import ActMoveLabels, corpus_labels

DATA = Path(
    os.environ.get("DIALOGUE_GYM_DATA")
    or Path(__file__).resolve().parents[2] / "shared" / "datasets"
)
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"corpus copies not found at {DATA}")
ENCODER = make_encoder("hashing")


def _moves(labels: ActMoveLabels, target: np.ndarray | None) -> set[str]:
    assert target is not None
    return {labels.moves.names[i] for i in np.flatnonzero(target)}


def test_nearest_among_keeps_to_the_moves_named() -> None:
    moves = ListeningMoves(load_card("p4g"))
    text = "Would you be willing to donate part of your $2 to Save the Children?"
    assert moves.names[moves.nearest(text, [], ENCODER)] == "ask"
    among = {"answer:trust", "probe"}
    assert moves.names[moves.nearest(text, [], ENCODER, among=among)] in among
    # Nothing to say back yet: reflect has no candidate, so the first named move is taken.
    assert moves.names[moves.nearest(text, [], ENCODER, among={"reflect"})] == "reflect"
    with pytest.raises(ValueError, match="no move among"):
        moves.nearest(text, [], ENCODER, among={"offer:target"})


def test_an_annotated_strategy_picks_the_answers_of_the_concerns_it_addresses() -> None:
    """P4G: the act says which move family, the card's ``addresses`` which answers; acts
    without a move (``other``) are skipped, as the strategy view skips unmapped labels."""
    card = load_card("p4g")
    labels = ActMoveLabels(card, ListeningMoves(card), ENCODER)
    said = "Save the Children has been around for a hundred years and is very reputable."
    assert _moves(labels, labels(Turn("system", said, "credibility-appeal"), [], [])) == {
        "answer:trust"
    }
    hello = Turn("system", "Hello, how are you today?", "greeting")
    assert _moves(labels, labels(hello, [], [])) == {"rapport"}
    ask = Turn("system", "How much would you like to donate?", "ask-donation-amount")
    assert _moves(labels, labels(ask, [], [])) == {"ask"}  # an alias of the proposition
    both = Turn("system", "Thanks! Have you heard of them?", "thank+source-related-inquiry")
    target = labels(both, [], [])
    assert _moves(labels, target) == {"acknowledge", "probe"}
    assert target is not None and target.sum() == pytest.approx(1.0)
    assert labels(Turn("system", "lol yeah", "other"), [], []) is None
    report = labels.report()
    assert report["skipped_acts"] == {"other": 1} and report["move_counts"]["rapport"] == 1


def test_a_suggestion_is_a_concrete_step_or_the_ask_not_a_reflection() -> None:
    card = load_card("esconv")
    labels = ActMoveLabels(card, ListeningMoves(card), ENCODER)
    turn = Turn(
        "system", "Maybe you could write down what keeps you awake.", "Providing Suggestions"
    )
    assert _moves(labels, labels(turn, [], [])) <= {
        "answer:needs_concrete_step",
        "answer:overwhelm",
        "ask",
    }
    restated = Turn("system", "So you lost your job last week?", "Restatement or Paraphrasing")
    assert _moves(labels, labels(restated, ["I lost my job last week."], [])) == {"reflect"}


def test_an_annotated_price_offer_is_the_price_move_nearest_its_price() -> None:
    """CB: a buyer's priced proposal becomes the price move whose price, from the prices named
    so far, is nearest the one offered; the seller's price or more is an accept."""
    card = load_card("cb")
    moves = BargainMoves(card)
    labels = ActMoveLabels(card, moves, ENCODER)
    replies = ["Hi! It's a couch, asking $1,000."]
    target = round(moves.fraction * 1000)

    def label(text: str, act: str, replies: list[str], own: list[str]) -> set[str]:
        return _moves(labels, labels(Turn("system", text, act), replies, own))

    assert label(f"Would you take ${target}?", "propose", replies, []) == {"offer:target"}
    own = [f"Would you take ${target}?"]
    seller = [*replies, "I could do $900."]
    split = (target + 900) // 2
    assert label(f"How about ${split}?", "counter", seller, own) == {"offer:split"}
    raised = target + 40
    assert label(f"Could you do ${raised}?", "counter", seller, own) == {"offer:raise"}
    assert label("Okay, $900 works for me.", "counter", seller, own) == {"accept"}
    assert label("Deal!", "agree", seller, own) == {"accept"}
    # A proposal before the seller named any price has no price move: skipped.
    assert labels(Turn("system", "Would you take $50?", "propose"), [], []) is None
    # The nearest wording never makes an offer (price moves have no wording).
    nearest, _ = corpus_labels(card, moves, ENCODER, "nearest")
    y = nearest(Turn("system", f"Would you take ${target}?", "propose"), replies, [])
    assert not moves.names[int(np.argmax(y))].startswith("offer:")


def _dialogue(corpus: str, profile: dict, situation: dict) -> Dialogue:
    return Dialogue(corpus, "d", "train", (Turn("system", "Hi."),), profile, situation)


def test_only_the_dialogues_whose_recorded_outcome_is_a_success_are_kept() -> None:
    donated = _dialogue("p4g", {"donation": 0.5}, {})
    refused = _dialogue("p4g", {"donation": 0.0}, {})

    def survey(final: str) -> dict:  # as the loader gives it
        return {"seeker": {"initial_emotion_intensity": "4", "final_emotion_intensity": final}}

    better = _dialogue("esconv", {}, {"survey_score": survey("2")})
    same = _dialogue("esconv", {}, {"survey_score": survey("4")})
    unsurveyed = _dialogue("esconv", {}, {})
    assert [dialogue_outcome(d) for d in (donated, refused, better, same, unsurveyed)] == [
        True,
        False,
        True,
        False,
        None,
    ]
    assert successful_dialogues([donated, refused, better, same, unsurveyed]) == [donated, better]
    # CB: the deal's price is read from the text; a deal within the buyer's target succeeds.
    scenario = {"listing_price": "200.0", "buyer_target": "150.0"}
    turns = (Turn("system", "Would you take $140?", "propose"), Turn("user", "Deal.", "agree"))
    cheap = Dialogue("cb", "c", "valid", turns, {}, scenario)
    assert dialogue_outcome(cheap) is True
    dear = dataclasses.replace(cheap, turns=(Turn("system", "Is $180 ok?", "propose"), turns[1]))
    assert dialogue_outcome(dear) is False
    assert dialogue_outcome(dataclasses.replace(cheap, turns=turns[:1])) is False  # no deal
    with pytest.raises(ValueError, match="record no outcome"):
        successful_dialogues([_dialogue("ed", {}, {"emotion": "proud"})])


def test_the_options_are_checked() -> None:
    config = PlannerConfig(task="P4G", out=str(Path("unused")), view="concern")
    assert config.move_labels == "nearest" and not config.successful_only
    with pytest.raises(ValueError, match="move labels"):
        corpus_labels(load_card("p4g"), None, ENCODER, "closest")


@needs_data
def test_the_trainer_labels_by_acts_and_clones_successes_only(tmp_path: Path) -> None:
    out = tmp_path / "sft-acts"
    argv = ["--task", "P4G", "--view", "concern", "--data", str(DATA)]
    argv += ["--encoder", "hashing", "--pretrain-epochs", "1", "--ppo-steps", "0"]
    argv += ["--no-progress", "--max-dialogues", "40"]
    assert main([*argv, "--out", str(out), "--move-labels", "acts", "--successful-only"]) == 0
    info = load_checkpoint(out, kind="planner").info["pretrain"]
    assert info["labels"].startswith("corpus acts")
    assert 0 < info["dialogues"] < 40  # the persuadees who did not donate are left out
    assert info["move_counts"]["answer:trust"] > 0 and "other" in info["skipped_acts"]


def test_a_balanced_loss_weighs_every_move_the_same(tmp_path: Path) -> None:
    """Nine labels of one move for one of another, on the same features: the clone learns
    the corpus's 0.9 / 0.1, and with ``class_weights="balanced"`` 0.5 / 0.5."""
    import torch

    from dialogue_gym_agents.common.seeding import generators
    from dialogue_gym_agents.common.tracking import RunLogger
    from dialogue_gym_agents.planner.agent import StrategyPolicyNet
    from dialogue_gym_agents.planner.train import pretrain

    X = np.ones((100, 3), np.float32)
    Y = np.zeros((100, 2), np.float32)
    Y[:90, 0] = Y[90:, 1] = 1.0
    learned = {}
    for weights in ("none", "balanced"):
        config = PlannerConfig(
            task="P4G",
            out=str(tmp_path / "unused"),
            pretrain_epochs=100,
            pretrain_lr=0.02,
            class_weights=weights,
        )
        run = generators(0)
        net = StrategyPolicyNet(3, 2, (8,), generator=run.torch)
        with RunLogger(tmp_path / weights, tensorboard=False) as log:
            pretrain(net, X, Y, config, run, log)
        with torch.no_grad():
            learned[weights] = float(torch.softmax(net(torch.as_tensor(X[:1])), 1)[0, 0])
    assert learned["none"] == pytest.approx(0.9, abs=0.03)
    assert learned["balanced"] == pytest.approx(0.5, abs=0.03)
