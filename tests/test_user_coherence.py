"""The hard users stay coherent: pressure is repeated asking, not asking; no reply said twice."""

from __future__ import annotations

from typing import Any

import pytest

import dialogue_gym
from dialogue_gym.evaluation import evaluate


def _play(env: Any, turns: list[str], seed: int = 0) -> list[dict[str, Any]]:
    env.reset(seed=seed)
    steps = []
    for text in turns:
        _, _, terms, truncs, infos = env.step({"system": text})
        steps.append(
            {
                "reply": env.history[-1][1],
                "events": infos["system"]["privileged"]["user_events"],
                "public": infos["system"]["user_events"],
            }
        )
        if terms["system"] or truncs["system"]:
            break
    return steps


@pytest.fixture(scope="module")
def p4g() -> Any:
    return dialogue_gym.make("P4G-hard", privileged=True)


POLITE = "Would you like to donate a little of your payment? Either answer is completely okay."
REASON = (
    "Fair question. They've been around for over a century, outside auditors check their "
    "books every year, and about 85 percent of spending goes to programs for kids."
)


def test_one_polite_ask_is_not_pressure(p4g: Any) -> None:
    steps = _play(p4g, ["Hi! How's your day going?", POLITE])
    assert "ask" in steps[1]["events"]
    assert "pressure" not in steps[1]["events"]


def test_asking_again_after_a_no_without_a_reason_is_pressure(p4g: Any) -> None:
    for seed in range(20):
        _play(p4g, [POLITE], seed)
        if p4g.user.decision != "refused":
            continue
        _, _, _, _, infos = p4g.step({"system": POLITE.replace("a little", "something")})
        assert "pressure" in infos["system"]["privileged"]["user_events"]
        return
    pytest.fail("no persona refused the first ask in 20 seeds")


def test_a_reason_between_two_asks_makes_the_second_fair(p4g: Any) -> None:
    found = False
    for seed in range(20):
        steps = _play(p4g, [POLITE, REASON, POLITE.replace("a little", "something")], seed)
        if len(steps) < 3 or "addressed:trust" not in steps[1]["events"]:
            continue
        found = True
        assert "pressure" not in steps[2]["events"], steps
    assert found, "no persona credited the trust answer in 20 seeds"


def test_backing_off_gets_a_goodbye_not_go_on(p4g: Any) -> None:
    steps = _play(p4g, ["No worries at all. Thanks for your time, and have a lovely evening!"])
    assert "farewell" in steps[0]["events"]
    assert steps[0]["reply"] in p4g.card.replies["farewell"]


def test_a_goodbye_put_last_after_thanks_is_a_goodbye(p4g: Any) -> None:
    """Blind play round 3 (P4G seed 20): a goodbye after thanks was answered "And then what?"."""
    goodbye = (
        "That's completely fine, and thank you for hearing me out. If anything I said was "
        "unclear I'm happy to answer, otherwise I hope the rest of your day goes easy."
    )
    steps = _play(p4g, [goodbye])
    assert "farewell" in steps[0]["events"], steps


def test_no_reply_is_said_twice_in_an_episode(p4g: Any) -> None:
    for seed in range(5):
        steps = _play(p4g, ["Okay."] * 8, seed)
        replies = [s["reply"].lower() for s in steps]
        assert len(set(replies)) == len(replies), replies


@pytest.mark.parametrize("env_id", ["P4G-hard", "Merchant-hard", "ESConv-hard"])
def test_a_resolved_concern_is_never_raised_again(env_id: str) -> None:
    result = evaluate(
        ["scripted", "random"],
        [env_id],
        episodes=10,
        progress=False,
        env_kwargs={"encoder": "hashing", "privileged": True},
    )
    for record in result.records:
        resolved: set[str] = set()
        replies = [t["text"].lower() for t in record["transcript"] if t["role"] == "user"]
        assert len(set(replies)) == len(replies), replies
        for events in record["events"]:
            for event in events:
                kind, _, cid = event.partition(":")
                if kind == "voiced":
                    assert cid not in resolved, (record["transcript"], record["events"])
            resolved |= {e.split(":", 1)[1] for e in events if e.startswith("resolved:")}


def test_a_warm_opening_is_not_a_goodbye(p4g: Any) -> None:
    steps = _play(p4g, ["Hi there, thanks for stopping by! How are you doing today?"])
    assert "farewell" not in steps[0]["events"]
    assert steps[0]["reply"] not in p4g.card.replies["farewell"]


def test_an_invitation_to_share_is_no_ask_where_the_task_has_no_request() -> None:
    """ED has no request: "would you like to tell me more?" is an invitation, never an ask
    to refuse (the reader there has no ask classes)."""
    env = dialogue_gym.make("ED-hard", privileged=True)
    for seed in range(3):
        steps = _play(env, ["Hi! How are you?", "Would you like to tell me more about it?"], seed)
        assert all("ask" not in s["events"] and "pressure" not in s["events"] for s in steps)
    reader = env.user.analyzer.meaning_reader
    assert reader is not None and not {"ask_polite", "ask_pushy"} & set(reader.classes)


def test_an_ask_closing_the_turn_is_heard() -> None:
    """An ask that ends a turn and splits its reading ("or would you rather think it over?")
    is still an ask: a merchant with nothing left to worry about can say yes to it."""
    from dialogue_gym.cards import load_card
    from dialogue_gym.mind.encoders import make_encoder
    from dialogue_gym.users.analysis import UtteranceAnalyzer

    analyzer = UtteranceAnalyzer.for_user(load_card("merchant"), make_encoder("minilm"))
    turn = (
        "Fair enough, you'd be in control of the flow the whole time. "
        "Would you like to give that a try, or would you rather think it over?"
    )
    assert analyzer.perceive(turn).ask
    assert not analyzer.perceive("Fair enough, you'd be in control the whole time.").ask


def test_a_refusal_after_an_acknowledgement_is_linked(p4g: Any) -> None:
    """ "That's fair. But not this time.": never an acknowledgement and a no side by side."""
    seen = 0
    for seed in range(30):
        steps = _play(p4g, [f"{REASON} Would you donate a little?"], seed)
        step = steps[0]
        if p4g.user.decision == "refused" and any(
            e.startswith("addressed:") for e in step["events"]
        ):
            seen += 1
            assert " but " in f" {step['reply'].lower()}", step
    assert seen, "no persona took the reason in and still refused in 30 seeds"


def test_a_disclaimer_of_guilt_is_not_a_guilt_trip(p4g: Any) -> None:
    analyzer = p4g.user.analyzer
    assert not analyzer.perceive("Fair enough, no guilt intended: you owe nothing.").pressure_cue
    assert not analyzer.perceive("Please don't feel guilty if you say no.").pressure_cue
    assert analyzer.perceive("You should feel guilty keeping it all.").pressure_cue


def test_a_long_opening_that_asks_is_answered_not_greeted_back() -> None:
    """Blind play round 3 (Merchant, Courier): a full pitch ending in a question got "Not bad,
    thanks. What's this about?" (an unasked "how are you" answered, the pitch ignored)."""
    env = dialogue_gym.make("Courier-hard", privileged=True)
    card = env.card
    pitch = (
        "Hi, thanks for taking a moment. This week there's a Northgate regional bonus: $60 on "
        "top of your normal pay for one 4-hour block in the Northgate zone, plus an $8 fuel "
        "allowance. Would you be open to hearing a bit more?"
    )
    for seed in range(5):
        steps = _play(env, [pitch], seed)
        greetings = {g.lower() for g in card.replies["greeting"]}
        assert steps[0]["reply"].lower() not in greetings, steps
    short = _play(env, ["Hi there! How are you doing today?"])
    assert short[0]["reply"].lower() in {g.lower() for g in card.replies["greeting"]}, short
