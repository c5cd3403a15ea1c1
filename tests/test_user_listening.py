"""The hard users hear a full answer in the agent's own words (blind play round 17, replayed).

* A turn full of the speaker's own particulars is on topic when it reads as one of the concerns,
  however far its whole is from the task's sentences (ED seed 163: "huh? sorry, i lost you
  there." to a plain validation).
* An answer to the worry under discussion that also says what goes with it (Merchant: the crew's
  tablet and Busy mode; a thinner margin and the orders it brings) is one answer, not two topics
  splitting the turn's credit (seeds 161 and 168).
* An ED speaker who promised more tells the rest of *its* story when invited, and once (seeds
  160, 161: before, the promise was followed by the opening told again, or by nothing).
"""

from __future__ import annotations

from blind_replay import replay_blind


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
    assert "margin" in replies[2].lower() or "commission" in replies[2].lower()
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
