"""The hard users hear a full answer in the agent's own words (blind play round 17, replayed).

* A turn full of the speaker's own particulars is on topic when it reads as one of the concerns,
  however far its whole is from the task's sentences (ED seed 163: "huh? sorry, i lost you
  there." to a plain validation).
* An answer to the worry under discussion that also says what goes with it (Merchant: the crew's
  tablet and Busy mode; a thinner margin and the orders it brings) is one answer, not two topics
  splitting the turn's credit (seeds 161 and 168).
* An ED speaker who promised more tells the rest of *its* story when invited, and once (seeds
  160, 161: before, the promise was followed by the opening told again, or by nothing).

Round 18 and the third independent wording set (``dev2``):

* A bare acknowledgement of the worry just said invites more of it: the user goes on about it,
  and the answer one turn later is read as the answer to it (P4G-hard, dev2 seed 15).
* A polite ask is no anti-pattern: "Just type an amount here" does not ask for card details.
* One more worry plainly answered beside the answer to the one under discussion is heard in
  part, and the user does not raise it afresh (round 18, P4G seed 173).
* A courier's replies never presuppose another vehicle than its own (round 18, seed 174).
* An ED speaker does not close in the reply that tells more of its story: it waits to be heard
  (round 18, seeds 171, 172, 176, 179).
"""

from __future__ import annotations

import pytest
from blind_replay import replay_blind

import dialogue_gym
from dialogue_gym.users.style import fits


def _progress(env, concern: str) -> float:
    return env.unwrapped.user.tracker.states[concern].progress


def test_a_validation_in_the_speakers_own_particulars_is_not_off_topic() -> None:
    env, replies = replay_blind("ED-hard", 163, 5, "v17")
    assert "lost you" not in replies[-1], replies[-1]
    assert _progress(env, "feeling_validated") > 0.0


def test_a_full_answer_to_the_crews_worry_is_one_answer() -> None:
    env, replies = replay_blind("Merchant-hard", 161, 5, "v17")
    assert "crew" in replies[3]  # the worry: "My crew will mess up the discounted tickets"
    staff = env.unwrapped.user.tracker.states["staff_training"]
    assert staff.progress >= staff.needed, replies[-1]


def test_margins_answered_with_what_the_orders_bring_are_one_answer() -> None:
    env, replies = replay_blind("Merchant-hard", 168, 4, "v17")
    assert any(w in replies[2].lower() for w in ("margin", "commission", "split")), replies[2]
    # Before the card said so: 0.25 + 0.5 of the 3 this owner needs; now one answer's worth.
    assert _progress(env, "margin_squeeze") >= 1.25, replies[-1]


def test_a_speaker_who_promised_more_tells_the_rest_of_its_story_once() -> None:
    env, replies = replay_blind("ED-hard", 160, 7, "v17")
    rest = env.unwrapped.user.persona.facts["rest"].lower()
    assert "part that really got me" in replies[5].lower()  # the promise ...
    assert rest in replies[6].lower()  # ... kept when invited
    env, replies = replay_blind("ED-hard", 161, 6, "v17")  # invited to go on three times
    rest = env.unwrapped.user.persona.facts["rest"].lower()
    assert sum(rest in reply.lower() for reply in replies) == 1, replies


def _events(env_id: str, seed: int, turns: list[str]) -> tuple[object, list[list[str]]]:
    env = dialogue_gym.make(env_id, privileged=True)
    env.reset(seed=seed)
    for turn in turns:
        env.step({"system": turn})
    return env, env.unwrapped.revealed()["user_events"]


DEV2_SEED_15 = [
    "Hi! I'm here to talk briefly about Save the Children, which has worked with children since "
    "1919 in more than 100 countries. Mind if I share a bit?",
    "Hey, thanks for chatting with me. Have you heard of Save the Children?",
    "Hi! Thanks for finishing the task. Could I tell you a little about Save the Children, a "
    "charity that helps kids?",
    "Good question to ask. Save the Children has been around since 1919, and outside firms "
    "audit its books every year.",
    "Fair point. Hey there. Do you ever give to charities, or is it not really your thing?",
    "That's an honest reaction, and I appreciate you saying it.",
    "Fair enough. Maybe forget the big numbers, then \u2014 it really comes down to one kid "
    "getting rehydration salts for about a dollar.",
]


def test_an_acknowledged_worry_stays_under_discussion() -> None:
    _env, events = _events("P4G-hard", 15, DEV2_SEED_15)
    assert "voiced:detachment" in events[4]
    # Before: "I like that. Kids deserve a fair chance." and the answer next went unheard.
    assert "voiced:detachment" in events[5], events[5]
    assert "addressed:detachment" in events[6], events[6]


@pytest.mark.parametrize(
    "ask",
    [
        "Would you like to make a small donation? Just type an amount here if so.",
        "Would you be open to donating some of it? Any amount is welcome, and no is fine too.",
    ],
)
def test_a_polite_ask_hits_no_anti_pattern(ask: str) -> None:
    env, events = _events("P4G-hard", 10, [*DEV2_SEED_15[:1], ask])
    assert not [e for e in events[-1] if e.startswith("anti:")], events[-1]
    # ... while the harmful words themselves still do.
    perception = env.unwrapped.user.perception  # type: ignore[attr-defined]
    p = perception.perceive("Would you donate? Just enter your card details on the website.", True)
    assert "procedure_time" in p.anti_cued


def test_a_worry_answered_beside_the_one_asked_about_is_not_raised_afresh() -> None:
    env, replies = replay_blind("P4G-hard", 173, 3, "v18")
    procedure = env.unwrapped.user.tracker.states["procedure_time"]
    assert 0.0 < procedure.progress < procedure.needed
    voice = env.unwrapped.card.concern("procedure_time").voice
    assert not any(line.lower() in replies[2].lower() for line in voice), replies[2]


def test_courier_replies_fit_the_couriers_vehicle() -> None:
    card = dialogue_gym.make("Courier-hard").unwrapped.card
    rules = card.personas.unfit
    for vehicle in card.personas.slots["vehicle"]:
        unfit = [line for r in rules if r.applies({"vehicle": vehicle}) for line in r.lines]
        assert unfit, vehicle
        for concern in card.concerns:
            # Every worry keeps at least one line this courier can say.
            assert [v for v in concern.voice if fits(v, unfit)], (vehicle, concern.id)
    car = [line for r in rules if r.applies({"vehicle": "car"}) for line in r.lines]
    assert not fits("Is there anywhere to charge out there? My battery won't make it.", car)
    bike = [line for r in rules if r.applies({"vehicle": "bicycle"}) for line in r.lines]
    assert not fits("By the time I've paid for fuel, there's not much left.", bike)


def test_a_speaker_waits_to_be_heard_before_it_closes() -> None:
    env, replies = replay_blind("ED-hard", 171, 3, "v18")
    rest = env.unwrapped.user.persona.facts["rest"].lower()
    assert rest in replies[2].lower()  # the rest of the story, told at the third exchange ...
    assert env.agents, replies[2]  # ... and the episode goes on
    assert env.unwrapped.user.decision != "agree"
    *_, infos = env.step({"system": "A pitying smile on top of it. That would sting anyone."})
    assert infos["system"]["success"], env.unwrapped.history[-1][1]
