"""The task brief: the ``[brief]`` facts every agent is told with its goal."""

from __future__ import annotations

from importlib import resources

import pytest
import tomllib

import dialogue_gym
from dialogue_gym.cards.card import parse_card
from dialogue_gym.cards.schema import CardError


def test_brief_facts_reach_the_system_observation() -> None:
    env = dialogue_gym.make("Courier-hard", encoder="hashing")
    obs, _ = env.reset(seed=0)
    goal = obs["system"]["goal"]
    assert goal.startswith(env.card.goal)
    assert "charging point" in goal  # the courier's question has an answer in the brief
    assert obs["user"]["goal"] == env.card.user_goal


def test_brief_section_is_validated() -> None:
    raw = resources.files("dialogue_gym.catalog").joinpath("p4g.toml").read_text()
    data = tomllib.loads(raw)
    assert parse_card(data).brief
    with pytest.raises(CardError, match="brief"):
        parse_card({**data, "brief": {"facts": ["ok"], "extra": 1}})
    with pytest.raises(CardError, match=r"brief\.facts"):
        parse_card({**data, "brief": {"facts": [""]}})
    card = parse_card({k: v for k, v in data.items() if k != "brief"})
    assert card.brief == () and card.system_brief == card.goal


def test_the_cb_buyer_is_told_the_facts_behind_each_reason_it_can_give() -> None:
    """An honest buyer argues a budget, cheaper listings or a cash pickup only if it has them.

    The seller's flaw is disclosed in the dialogue; the buyer's own situation must be in the
    brief, or only an agent reciting the card's sentences ("I'm a student ...") can argue it.
    """
    from dialogue_gym.text.cue_search import any_cue

    card = dialogue_gym.make("CB-hard", encoder="hashing").card
    for cid in ("market", "convenience", "budget"):
        cues = card.concern(cid).unlock_cues
        assert any(any_cue(cues, fact) for fact in card.brief), cid
