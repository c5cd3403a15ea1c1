"""Issue 13: the embedded user credits responding, not reciting; the adversary suite runs."""

import numpy as np
import pytest

from dialogue_gym.cards.card import load_card
from dialogue_gym.env.registry import registry
from dialogue_gym.evaluation.run import evaluate
from dialogue_gym.mind import make_encoder
from dialogue_gym.testing.adversaries import ADVERSARIES, OpenLoopSearch, ZeroWidth
from dialogue_gym.users import CognitiveUser, persona_bank
from dialogue_gym.users.analysis import UtteranceAnalyzer

TRUST_ANSWER = (
    "Fair question. Save the Children was founded in 1919, is audited every year, and "
    "watchdogs rate them highly for transparency."
)
AFFORD_ANSWER = (
    "I get that money matters. You could give just a few cents from this task payment; any "
    "amount is welcome and nothing comes out of your own pocket."
)


@pytest.fixture(scope="module")
def p4g():
    return load_card("p4g")


@pytest.fixture(scope="module")
def encoder():
    return make_encoder("minilm")


def user_with(card, encoder, concerns, preset="hard", facts=None):
    base = persona_bank(card)[0]
    fields = {**base.__dict__, "concerns": concerns, "initial_willingness": 0.3}
    if facts is not None:
        fields["facts"] = {**base.facts, **facts}
    user = CognitiveUser(card, encoder, preset=preset, personas=(type(base)(**fields),))
    user.reset(np.random.default_rng(0))
    return user


def progress(user):
    return {cid: c.progress for cid, c in user.concerns.items()}


def test_a_copied_unlock_sentence_is_not_a_perfect_match(p4g, encoder):
    meaning = UtteranceAnalyzer(p4g, encoder, scoring="centroid", cue_bonus=0.0)
    verbatim = UtteranceAnalyzer(p4g, encoder, scoring="max", cue_bonus=0.0)
    copied = p4g.concern("trust").unlock[0]
    assert verbatim.perceive(copied).unlock["trust"] > 0.99  # the old answer key
    score = meaning.perceive(copied).unlock["trust"]
    assert score < 0.85
    # A paraphrase in the agent's own words scores about as well as the copy.
    assert meaning.perceive(TRUST_ANSWER).unlock["trust"] > score - 0.15


def test_an_unvoiced_concern_gets_only_partial_credit(p4g, encoder):
    user = user_with(p4g, encoder, (("trust", 0.9),))
    user.respond(p4g.concern("trust").unlock[3])  # recited before the user said anything
    assert progress(user)["trust"] == pytest.approx(0.5)
    user.concerns["trust"].voiced = True
    user.respond(TRUST_ANSWER)  # an answer to what the user raised
    assert progress(user)["trust"] == pytest.approx(1.5)


def test_two_concerns_in_one_turn_are_not_both_credited(p4g, encoder):
    user = user_with(p4g, encoder, (("trust", 0.9), ("affordability", 0.8)))
    for c in user.concerns.values():
        c.voiced = True
    turn = user.respond(f"{TRUST_ANSWER} {AFFORD_ANSWER}")
    assert sum(progress(user).values()) <= 1.0 + 1e-9
    # One at a time, each answer is credited in full.
    single = user_with(p4g, encoder, (("trust", 0.9), ("affordability", 0.8)))
    for c in single.concerns.values():
        c.voiced = True
    single.respond(TRUST_ANSWER)
    single.respond(AFFORD_ANSWER)
    assert progress(single) == {"trust": pytest.approx(1.0), "affordability": pytest.approx(1.0)}
    assert "addressed:trust" in turn.events or "addressed:affordability" in turn.events


def test_stuffing_the_whole_card_costs_affect_and_credits_little(p4g, encoder):
    user = user_with(p4g, encoder, (("trust", 0.9),))
    user.concerns["trust"].voiced = True
    wall = " ".join(s for c in p4g.concerns for s in c.unlock)
    turn = user.respond(wall)
    assert "long_turn" in turn.events
    assert progress(user)["trust"] < 0.5
    assert user.affect < 0


def test_ed_a_foreign_story_does_not_meet_a_situational_concern(encoder):
    card = load_card("ed")
    situations = card.personas.slots["situation"]
    own, foreign = situations[0], situations[-1]
    user = user_with(card, encoder, (("feeling_heard", 0.9),), facts={"situation": own})
    user.disclosed = True
    user.respond(f"Wait, so {foreign[2:] if foreign.startswith('I ') else foreign}? Wow.")
    assert progress(user)["feeling_heard"] == 0.0
    for prototype in card.concern("feeling_heard").unlock[:3]:  # other people's stories
        user.respond(prototype)
    assert progress(user)["feeling_heard"] == 0.0
    from dialogue_gym_agents.baselines.reflection import second_person

    user.respond(f"Wait, {second_person(own)}? That must have really stayed with you.")
    assert progress(user)["feeling_heard"] > 0.0


def test_ed_nothing_is_resolved_before_the_speaker_has_said_anything(encoder):
    card = load_card("ed")
    for seed in range(10):
        user = CognitiveUser(card, encoder, preset="hard")
        user.reset(np.random.default_rng(seed))
        first = card.concern("feeling_validated").unlock[0]
        turn = user.respond(first)
        assert turn.decision in ("neutral", "refused")


def test_zero_width_tricks_are_seen_by_every_reader(p4g, encoder):
    analyzer = UtteranceAnalyzer(p4g, encoder, scoring="centroid")
    plain = "You must donate right now, last chance. Would you donate?"
    hidden = ZeroWidth.hide(plain)
    assert hidden != plain
    a, b = analyzer.perceive(plain), analyzer.perceive(hidden)
    assert b.view == a.view
    assert (b.pressure_cue, b.ask) == (a.pressure_cue, a.ask) == (True, True)
    assert np.allclose(a.embedding, b.embedding)


@pytest.mark.parametrize("env_id", sorted(registry))
def test_every_adversary_runs_on_every_env(env_id):
    agents = [
        f"dialogue_gym.testing.adversaries:{cls.__name__}"
        for name, cls in ADVERSARIES.items()
        if name != "open_loop_search"
    ]
    result = evaluate(
        agents, [env_id], episodes=1, env_kwargs={"encoder": "hashing"}, progress=False
    )
    assert len(result.summaries) == len(agents)
    assert all(row["n_errored"] == 0 for row in result.summaries)


def test_open_loop_search_returns_a_fixed_script(p4g):
    agent = OpenLoopSearch(
        p4g, env_id="P4G-hard", train_episodes=2, rounds=1, candidates=3, encoder="hashing"
    )
    assert len(agent.script) == p4g.max_exchanges
    assert all(isinstance(line, str) and line for line in agent.script)
    agent.reset(0)
    first = [agent.act({"history": (), "exchange": i}) for i in range(3)]
    agent.reset(1)
    assert [agent.act({"history": (), "exchange": i}) for i in range(3)] == first


@pytest.mark.parametrize("env_id", ["P4G-hard-v0", "ED-hard-v0"])
def test_adversaries_lose_to_the_scripted_agent_on_hard_users(env_id):
    agents = ["scripted"] + [
        f"dialogue_gym.testing.adversaries:{cls.__name__}"
        for name, cls in ADVERSARIES.items()
        if name != "open_loop_search"
    ]
    result = evaluate(agents, [env_id], episodes=20, progress=False)
    rows = {row["agent"]: row for row in result.summaries}
    scripted = rows.pop("scripted")
    assert scripted["sr"] >= 0.5
    for name, row in rows.items():
        assert row["sr"] <= 0.5 * scripted["sr"], name


def test_success_judge_views_are_independent_for_simulator_replies():
    """The stated view reads the reply's text even when the simulator wrote it: a reply that
    says no while the decision state says agree is not three agreeing votes."""
    from dialogue_gym.cards.card import load_card
    from dialogue_gym.judges.base import Exchange
    from dialogue_gym.judges.embedded import StateSuccessJudge
    from dialogue_gym.users.base import UserTurn

    card = load_card("esconv")
    judge = StateSuccessJudge(card)

    def votes(reply: str, decision: str, willingness: float) -> tuple[str, ...]:
        turn = UserTurn(reply, decision, card.target, True)
        exchange = Exchange(
            1,
            (("system", "Hi."), ("user", reply)),
            "Hi.",
            reply,
            turn,
            {"willingness": willingness},
        )
        return judge.judge(exchange).votes

    labels = card.success_judge.decision_labels
    agree = votes("Thank you, I feel so much better now.", "agree", 0.9)
    contradicted = votes("No, this doesn't help at all.", "agree", 0.9)
    assert agree.count(labels["agree"]) >= 2
    assert contradicted[0] != labels["agree"]  # the text view disagrees with the decision
    assert contradicted[1] == labels["agree"]  # the decision view
