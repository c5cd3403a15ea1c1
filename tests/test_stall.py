"""The ``stall`` agent (issue 14): rapport and reasons, never the ask, on every registered env."""

import pytest

import dialogue_gym
from dialogue_gym.cards.card import load_card
from dialogue_gym.evaluation.agents import available_agents, make_agent
from dialogue_gym_agents.baselines.stall import RAPPORT, asks
from dialogue_gym_agents.dispatch import BAD_AGENT, STALL

ENV_IDS = sorted(dialogue_gym.registry)
# Events of the user that mean the system made the task's request (a seller also reads an
# accepted price as one and then records the deal).
ASK_EVENTS = {"ask", "accept", "deal"}


def test_stall_is_registered_for_every_task():
    assert "stall" in available_agents()
    tasks = {dialogue_gym.spec(env_id).kwargs["card"] for env_id in ENV_IDS}
    ids = {load_card(card).id for card in tasks}
    families = {load_card(card).agent_family for card in tasks}
    assert families <= set(STALL) and ids <= set(BAD_AGENT)


@pytest.mark.parametrize("task", sorted(RAPPORT))
def test_rapport_lines_never_ask(task):
    card = load_card({"P4G": "p4g", "ESConv": "esconv"}.get(task, task.lower()))
    assert not [line for line in RAPPORT[task] if asks(card, line, 500.0)]


def test_the_ask_detector_reads_the_card():
    assert asks(load_card("p4g"), "Would you be willing to donate 50 cents?")
    assert asks(load_card("esconv"), "Maybe try writing down what's on your mind.")
    assert not asks(load_card("ed"), "Would you like to talk about it?")  # ED has no ask
    cb = load_card("cb")
    assert asks(cb, "I can offer $350 for it.", 500.0)
    assert asks(cb, "Alright, I'll take it.", 500.0)
    assert not asks(cb, "How long have you had it?", 500.0)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_stall_plays_to_the_end_and_never_asks(make_env, env_id):
    env = make_env(env_id)
    agent = make_agent("stall", card=env.card, encoder="hashing")
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        agent.reset(seed=seed)
        infos: dict = {}
        while env.agents:
            text = agent.act(obs["system"])
            listing = getattr(env.user, "listing_price", None)
            assert isinstance(text, str) and text.strip()
            assert not asks(env.card, text, listing), text
            obs, _, _, _, infos = env.step({"system": text})
            assert not ASK_EVENTS & set(infos["system"]["user_events"]), (text, infos["system"])
        record = infos["system"]["episode"]
        # Played to the end (a soft user may still give in unasked: the soft-user bias, which
        # benchmarks/reward_alignment.py measures).
        assert record["success"] or record["turns"] == env.max_exchanges
