"""The validator's act-only reference: what the replayed system turns' acts alone predict.

The fixture is test_validate's tiny P4G-format corpus: donors' persuaders say the keyword
MAGIC. Labelled with an appeal on the donors' turns and a greeting on the others', the acts
separate the outcomes exactly (AUC 1); unlabelled, the P4G card's learned readers read them.
"""

from __future__ import annotations

import dataclasses
import io

import pytest
from test_validate import KeywordJudge, fixture_corpus

import dialogue_gym
from dialogue_gym.data import Dialogue, Turn
from dialogue_gym.validity import validate_dialogues
from dialogue_gym.validity.acts import (
    ASK,
    TURN,
    act_reader,
    act_rows,
    act_source,
    act_tokens,
    predict_acts,
)
from dialogue_gym.validity.runner import format_report

APPEAL = "credibility-appeal"
CELL = "act-only reference: replayed turns' acts -> real success"


def _labelled(dialogue: Dialogue) -> Dialogue:
    act = APPEAL if dialogue.profile["donation"] > 0 else "greeting"
    turns = tuple(
        dataclasses.replace(t, act=act) if t.role == "system" else t for t in dialogue.turns
    )
    return dataclasses.replace(dialogue, turns=turns)


def _card(env_id: str = "P4G-soft"):
    return dialogue_gym.make(env_id, encoder="hashing").card


def test_act_tokens_count_turns_and_acts() -> None:
    assert act_tokens("greeting|logical-appeal\n\nask") == [
        TURN,
        "act=greeting",
        "act=logical-appeal",
        TURN,
        TURN,
        "act=ask",
    ]


def test_act_source_prefers_labels_then_the_cards_readers() -> None:
    held_out, train = fixture_corpus()
    p4g, esconv = _card(), _card("ESConv-soft")
    labelled = [_labelled(d) for d in (*held_out, *train)]
    assert act_source(p4g, labelled, 8) == "labels"
    # One unlabelled dialogue is enough to fall back on the readers (P4G names them) ...
    assert act_source(p4g, [*labelled, held_out[0]], 8) == "readers"
    # ... and a card without readers has no act-only reference then.
    assert act_source(esconv, [*labelled, held_out[0]], 8) is None
    assert act_source(esconv, [], 8) is None


def test_act_rows_read_labels_through_aliases_and_text_through_readers() -> None:
    esconv = _card("ESConv-soft")
    turns = (
        Turn("system", "Hello, how are you?", "Questions"),  # FailedESConv's spelling
        Turn("user", "Not great."),
        Turn("system", "That sounds so hard.", "Reflection of feelings"),
        Turn("user", "It is."),
    )
    seeker = {"initial_emotion_intensity": "4", "final_emotion_intensity": "2"}
    dialogue = Dialogue("esconv", "e1", "test", turns, {}, {"survey_score": {"seeker": seeker}})
    [(dialogue_id, document, success)] = act_rows(esconv, [dialogue], 8, "labels")
    assert (dialogue_id, success) == ("e1", True)
    assert act_tokens(document) == [TURN, "act=Question", TURN, "act=Reflection of feelings"]
    assert act_rows(esconv, [dialogue], 1, "labels")[0][1] == "Question"
    with pytest.raises(ValueError, match="names no learned act readers"):
        act_rows(esconv, [dialogue], 8, "readers")
    with pytest.raises(ValueError, match="act source"):
        act_rows(esconv, [dialogue], 8, "words")

    reader = act_reader(_card())
    assert reader is not None
    assert ASK in reader("Would you be willing to donate some of your payment to the charity?")
    assert reader("ok") == frozenset()


def test_predict_acts_fits_on_train_only_and_refuses_overlap() -> None:
    held_out, train = fixture_corpus()
    held_out, train = [_labelled(d) for d in held_out], [_labelled(d) for d in train]
    card = _card()
    source, predictions = predict_acts(card, train, held_out, 8)
    assert source == "labels"
    assert set(predictions) == {d.id for d in held_out}
    for prediction in predictions.values():
        assert prediction.mode == "train"
        assert prediction.fitted_on == frozenset(d.id for d in train)  # held-out ids never
    donors = [predictions[d.id].probability for d in held_out if d.profile["donation"] > 0]
    others = [predictions[d.id].probability for d in held_out if d.profile["donation"] == 0]
    assert min(donors) > max(others)
    with pytest.raises(ValueError, match="held-out dialogues in the train split"):
        predict_acts(card, [*train, held_out[0]], held_out, 8)


def test_validator_reports_the_act_only_reference_on_the_fixture() -> None:
    held_out, train = fixture_corpus()
    kwargs = {
        "env_options": {"encoder": "hashing", "success_judge": KeywordJudge},
        "baselines": (),
        "n_resamples": 50,
        "judge_transcripts": False,
        "open_loop": False,
        "labelled": False,
        "progress": None,
    }
    labelled = validate_dialogues(
        "P4G-soft", [_labelled(d) for d in held_out], [_labelled(d) for d in train], **kwargs
    )
    cell = labelled["cells"][CELL]
    assert cell["reference"]["value"] == 1.0 and cell["reference"]["n"] == 6
    assert cell["sim"]["value"] is None and cell["target"] is None  # no simulator, no target
    assert labelled["reference_modes"]["acts"] == "labels, train"
    assert all(row["reference_acts"] is not None for row in labelled["dialogues"])
    printed = io.StringIO()
    format_report({**labelled, "splits": ["test"]}, printed)
    assert "act-only reference (in the text-only column)" in printed.getvalue()
    [line] = [row for row in printed.getvalue().splitlines() if row.startswith(CELL)]
    assert "n/a" not in line and "1.00 [1.00, 1.00] n=6" in line  # the reference column only

    plain = validate_dialogues("P4G-soft", held_out, train, **kwargs)
    assert plain["reference_modes"]["acts"] == "readers, train"
    assert plain["cells"][CELL]["reference"]["n"] == 6
