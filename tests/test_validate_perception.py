"""What the validator reports of the user's perception: event shares and the labelled arm.

The fixture is test_validate's tiny P4G-format corpus; a variant labels its persuader turns
with a card strategy, as P4G's annotated dialogues are labelled.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from test_validate import KeywordJudge, fixture_corpus

import dialogue_gym
from dialogue_gym.data import Dialogue, Turn
from dialogue_gym.validity import exchanges_of, validate_dialogues
from dialogue_gym.validity.corpus import exchange_acts
from dialogue_gym.validity.episodes import perceived_shares
from dialogue_gym.validity.labelled import reading_labels, strategy_labels

DATASETS = Path("/work/shared/datasets")
APPEAL = "credibility-appeal"  # a P4G card strategy that addresses the trust concern


def _labelled(dialogue: Dialogue, act: str | None) -> Dialogue:
    turns = tuple(
        dataclasses.replace(t, act=act) if t.role == "system" else t for t in dialogue.turns
    )
    return dataclasses.replace(dialogue, turns=turns)


def test_perceived_shares_count_exchanges_not_events() -> None:
    events = [
        ["addressed:trust", "addressed:efficacy", "rapport"],
        ["pressure"],
        ["off_topic"],
        [],
    ]
    assert perceived_shares(events) == {"reason": 0.25, "pressure": 0.25, "off_topic": 0.25}
    assert perceived_shares([]) == {"reason": None, "pressure": None, "off_topic": None}


def test_exchange_acts_follow_the_exchanges() -> None:
    turns = (
        Turn("user", "hi, anyone there?", "greeting"),
        Turn("system", "Hello!", "greeting"),
        Turn("system", "Save the Children is audited every year.", APPEAL),
        Turn("user", "ok"),
        Turn("system", "Would you give a dollar?"),
    )
    dialogue = Dialogue("p4g", "d0", "test", turns, {}, {})
    assert [s for s, _ in exchanges_of(dialogue)] == [
        "Hello! Save the Children is audited every year.",
        "Would you give a dollar?",
    ]
    assert exchange_acts(dialogue) == [frozenset({"greeting", APPEAL}), frozenset()]


def test_strategy_labels_keep_card_strategies_and_mark_unannotated_exchanges() -> None:
    card = dialogue_gym.make("P4G-soft", encoder="hashing").card
    turns = (
        Turn("system", "Hi there", "greeting+not-a-card-label"),
        Turn("user", "hi"),
        Turn("system", "They are audited.", f"{APPEAL}+not-a-card-label"),
        Turn("user", "ok"),
        Turn("system", "Anything else?"),
        Turn("user", "no"),
        Turn("system", "Bye", "not-a-card-label"),
    )
    dialogue = Dialogue("p4g", "d1", "test", turns, {}, {})
    assert strategy_labels(card, dialogue, 8) == [
        frozenset({"greeting"}),
        frozenset({APPEAL}),
        None,  # not annotated: the user's own reader reads it
        frozenset(),  # annotated, but with nothing the card knows
    ]
    assert strategy_labels(card, dialogue, 1) == [frozenset({"greeting"})]
    unlabelled = Dialogue("p4g", "d2", "test", (Turn("system", "Hi", "x"),), {}, {})
    assert strategy_labels(card, unlabelled, 8) == []  # the arm does not apply


def test_reading_labels_swaps_the_users_reader_and_restores_it() -> None:
    env = dialogue_gym.make("P4G-soft", encoder="hashing")
    analyzer = env.user.analyzer
    own = analyzer.appeal_reader
    text = "Thanks for chatting with me this evening."
    other = "Kids there need help."
    with reading_labels(env, [text, other], [frozenset({APPEAL}), None]):
        perceived = analyzer.perceive(text)
        assert perceived.appeals == frozenset({APPEAL})
        # An unlabelled turn is read by the user's own (shipped) reader.
        assert analyzer.perceive(other).appeals == analyzer._appeals(analyzer.view(other))[0]
    assert analyzer.appeal_reader is own
    plain = analyzer.perceive(text)
    assert plain.appeals == frozenset()
    assert perceived.unlock["trust"] == pytest.approx(plain.unlock["trust"] + analyzer.cue_bonus)


def test_validator_reports_perception_and_the_labelled_arm_on_the_fixture() -> None:
    held_out, train = fixture_corpus()
    kwargs = {
        "env_options": {"encoder": "hashing", "success_judge": KeywordJudge},
        "baselines": ("random",),
        "n_resamples": 100,
        "judge_transcripts": False,
        "open_loop": False,
        "progress": None,
    }
    plain = validate_dialogues("P4G-soft", held_out, train, **kwargs)
    cells = plain["cells"]
    for arm in ("human replay", "random"):
        for what in ("a reason", "pressure", "off-topic"):
            cell = cells[f"exchanges read as {what}: {arm}"]
            assert cell["target"] is None and cell["sim"]["n"] == 6
            assert 0.0 <= cell["sim"]["value"] <= 1.0
    for row in plain["dialogues"]:
        assert set(row["replay"]["perceived"]) == {"reason", "pressure", "off_topic"}
        assert "replay_labelled" not in row  # the fixture's turns carry no labels
    assert not any("corpus labels" in name for name in cells)

    labelled = [_labelled(d, APPEAL) for d in held_out]
    result = validate_dialogues("P4G-soft", labelled, train, **kwargs)
    rows = result["dialogues"]
    assert all("replay_labelled" in row for row in rows)
    # The same turns and users; only the strategies the user reads differ.
    assert [r["replay"] for r in rows] == [r["replay"] for r in plain["dialogues"]]
    assert result["cells"]["SR@T human replay, corpus labels read"]["sim"]["n"] == 6
    with_labels = result["cells"]["exchanges read as a reason: human replay, corpus labels read"]
    without = result["cells"]["exchanges read as a reason: human replay"]
    assert with_labels["sim"]["value"] >= without["sim"]["value"]

    off = validate_dialogues("P4G-soft", labelled, train, labelled=False, **kwargs)
    assert not any("replay_labelled" in row for row in off["dialogues"])


@pytest.mark.skipif(not (DATASETS / "esconv").is_dir(), reason="needs /work/shared/datasets")
def test_real_esconv_turns_are_all_labelled_including_the_failed_files(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from dialogue_gym.cli.commands import main
    from dialogue_gym.validity import validate

    result = validate(
        "ESConv-soft",
        DATASETS,
        split="test,failed",
        limit=6,
        encoder="hashing",
        baselines=(),
        n_resamples=20,
        judge_transcripts=False,
        progress=None,
    )
    rows = result["dialogues"]
    assert rows and all("replay_labelled" in row for row in rows)
    # FailedESConv.json spells some strategies otherwise; the card's aliases name them all.
    card = dialogue_gym.make("ESConv-soft", encoder="hashing").card
    names = {s.name for s in card.strategies}
    aliases = card.corpus.label_aliases
    from dialogue_gym.validity.corpus import load_held_out

    failed = load_held_out("esconv", DATASETS, ["failed"])
    labels = {a for d in failed for t in d.turns if t.role == "system" for a in t.acts}
    assert labels and all(aliases.get(a, a) in names for a in labels)

    argv = ["validate", "ESConv-soft", "--data", str(DATASETS), "--limit", "2"]
    argv += ["--encoder", "hashing", "--no-baselines", "--no-transcripts", "--resamples", "10"]
    assert main([*argv, "--no-progress"]) == 0
    assert "SR@T human replay, corpus labels read" in capsys.readouterr().out
    assert main([*argv, "--no-progress", "--no-labelled"]) == 0
    assert "corpus labels" not in capsys.readouterr().out
