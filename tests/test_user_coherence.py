"""The hard users stay coherent: pressure is repeated asking, not asking; no reply said twice."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from blind_replay import replay_blind

import dialogue_gym
from dialogue_gym.cards.card import load_card
from dialogue_gym.evaluation.run import evaluate
from dialogue_gym.users.style import RESERVATION as _RESERVATION


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
    from dialogue_gym.cards.card import load_card
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


@pytest.mark.parametrize(
    ("card_id", "turn"),
    [
        (
            "p4g",
            "Glad to hear it. If you'd like to give, just name any amount; if not, that's fine.",
        ),
        (
            "courier",
            "Now that the conditions are clear, would you like me to book one Northgate block, "
            "11 am to 3 pm or 5 to 9 pm on a day of your choice from Thursday to Sunday?",
        ),
        (
            "merchant",
            "I'm glad that's covered. If you'd like, I'll set up that small trial now, one dish "
            "and a low cap, and you can stop it any day; if you'd rather wait, that's fine too.",
        ),
        (
            "p4g",
            "I'm simply asking whether you'd like to give part of your $2 to Save the Children, "
            "anything from one cent, and you'd just name the amount here. If the answer is no, "
            "that's completely fine and we can leave it there.",
        ),
        (
            "p4g",
            # Blind play round 8, seed 79: an open invitation to give now.
            "They are. If you ever want to add a few cents from your $2, you can just name it "
            "now; otherwise your no is completely respected. Thanks again!",
        ),
        (
            "p4g",
            "Right, it can be both, but only if you want. If you’d like to add a few cents "
            "from this payment, just name the amount; if not, no worries at all, and thanks "
            "again.",
        ),
    ],
)
def test_an_ask_in_any_form_is_heard(card_id: str, turn: str) -> None:
    """Blind play rounds 3 and 4: asks carrying the offer's terms, conditional offers ("if
    you'd like, say the word and I'll book it") and asks followed by an opt-out (in the next
    sentence or the same one) were read as no ask, so a user with nothing left to worry about
    could not say yes and "ignored the direct question"."""
    from dialogue_gym.cards.card import load_card
    from dialogue_gym.mind.encoders import make_encoder
    from dialogue_gym.users.analysis import UtteranceAnalyzer

    analyzer = UtteranceAnalyzer.for_user(load_card(card_id), make_encoder("minilm"))
    assert analyzer.perceive(turn).ask
    assert not analyzer.perceive("Of course, take the time you need.").ask
    assert not analyzer.perceive("What would you want to know first?").ask
    assert not analyzer.perceive("I won't push. No is a perfectly good answer.").ask
    account = (
        "There's no sign-up: if you chose to give, you'd just name an amount here in the chat "
        "and the research team would deduct it from your payment."
    )
    assert card_id != "p4g" or not analyzer.perceive(account).ask  # how giving works


def _refused_at_once(env: Any, max_seeds: int = 30) -> int:
    """The first seed whose persona refuses a polite first ask (asked after a hello)."""
    for seed in range(max_seeds):
        _play(env, ["Hi! How's your day going?", POLITE], seed)
        if env.user.decision == "refused":
            return seed
    pytest.fail(f"no persona refused the first ask in {max_seeds} seeds")


def test_a_no_names_what_still_holds_the_user_back(p4g: Any) -> None:
    """A refusal voices the strongest concern the system has barely touched, not a partial
    acknowledgement of the one it just answered ("Sorry, I can't. Audited, huh? That's a
    start.")."""
    seen = 0
    for seed in range(30):
        steps = _play(p4g, [REASON, POLITE], seed)
        states = p4g.user.tracker.states
        if len(steps) < 2 or p4g.user.decision != "refused":
            continue
        barely = [
            cid
            for cid, s in states.items()
            if s.status != "resolved" and s.progress < 0.5 and cid != "pressure"
        ]
        if not barely:
            continue
        seen += 1
        assert f"voiced:{barely[0]}" in steps[1]["events"], (steps, barely)
    assert seen, "no refusal with an untouched concern in 30 seeds"


def test_leaving_the_door_open_after_a_no_is_not_pressure(p4g: Any) -> None:
    seed = _refused_at_once(p4g)
    _play(p4g, ["Hi! How's your day going?", POLITE], seed)
    _, _, _, _, infos = p4g.step(
        {"system": "That's fine. If you change your mind, just name an amount here."}
    )
    assert "pressure" not in infos["system"]["privileged"]["user_events"]
    _, _, _, _, infos = p4g.step({"system": "So, would you donate something now?"})
    assert "pressure" in infos["system"]["privileged"]["user_events"]


def test_backing_off_after_a_no_makes_one_more_ask_fair() -> None:
    """ "That's less pushy. Give me a sec." is the user taking the back-off in: one more soft ask
    after it is fair, not "lol wow, that's pretty pushy" (blind play round 3, P4G seed 22)."""
    env = dialogue_gym.make("P4G-hard", privileged=True)
    back_off = "Sorry if that came across as pushy. No is a perfectly fine answer, it's your call."
    ask = "Would you like to donate a little of your payment?"
    seen = 0
    for seed in range(40):
        _play(env, ["Hi! How's your day going?", ask], seed)
        if env.user.decision != "refused":
            continue
        _, _, _, _, infos = env.step({"system": back_off})
        if "addressed:pressure" not in infos["system"]["privileged"]["user_events"]:
            continue
        seen += 1
        _, _, _, _, infos = env.step({"system": POLITE.replace("a little", "something")})
        assert "pressure" not in infos["system"]["privileged"]["user_events"]
    assert seen, "no persona with the pressure concern took the back-off in in 40 seeds"


def test_a_question_about_what_the_user_wants_to_know_is_no_ask() -> None:
    """Blind play round 4 (Merchant seed 30): "Is there anything specific you'd want to be sure
    of first, ...?" was read as an ask; refused, it made the real ask two turns later "pushy"."""
    from dialogue_gym.cards.card import load_card
    from dialogue_gym.mind.encoders import make_encoder
    from dialogue_gym.users.analysis import UtteranceAnalyzer

    analyzer = UtteranceAnalyzer.for_user(load_card("merchant"), make_encoder("minilm"))
    probe = (
        "Of course. Is there anything specific you'd want to be sure of first, whether it's the "
        "cost, how the kitchen would cope, or what happens if it doesn't work out for you?"
    )
    assert not analyzer.perceive(probe).ask
    asks_first = (
        "That's everything on the terms. Would you like to join for the two trial weekends, "
        "or is there anything else you'd want to know first?"
    )
    assert analyzer.perceive(asks_first).ask


def test_a_parting_wish_the_reader_misses_is_still_a_goodbye() -> None:
    """Blind play round 5 (Merchant seeds 43, 45): "... Have a good weekend service." was read
    as a near miss (the reader does not know a restaurant's service) and answered "Okay, and?"."""
    env = dialogue_gym.make("Merchant-hard", privileged=True)
    goodbye = (
        "Thank you. I'll leave it there; if anything changes, just message me and I can walk "
        "you through it again. Have a good weekend service."
    )
    steps = _play(env, [goodbye])
    assert "farewell" in steps[0]["events"], steps


def test_an_invitation_to_keep_talking_is_not_a_goodbye() -> None:
    """Blind play round 15, ED seeds 143 and 146: "I'm here for as long as you want to keep
    talking about it." and "I'm here, so share whatever feels worth saying about it." were read
    as goodbyes, and the speaker left ("Alright, take care!"). A goodbye with a parting wish
    that leaves the door open is still one."""
    env = dialogue_gym.make("ED-hard", privileged=True)
    invitations = [
        "That makes sense. I'm here for as long as you want to keep talking about it.",
        "That sounds draining. I'm here, so share whatever feels worth saying about it.",
    ]
    for turn in invitations:
        steps = _play(env, [turn], seed=143)
        assert "farewell" not in steps[0]["events"], (turn, steps)
    goodbye = "Thank you for telling me. If you ever want to talk again, I'm here. Take care!"
    assert "farewell" in _play(env, [goodbye], seed=143)[0]["events"]


OPENER = "Thanks for chatting. What comes to mind when you think about giving to a charity?"


def test_a_no_after_a_partial_answer_says_how_far_it_got_then_no(p4g: Any) -> None:
    """Blind play rounds 4 and 5: "Hm, that helps my margins a bit. That's why it's a no from
    me." (a partial acknowledgement put where the reason for a no belongs). The reply now says
    how far the answer got and then no, linked: "... But not this time."."""
    seen = 0
    ask = "Would you like to donate a little of your payment?"
    for seed in range(40):
        # The opening draws a worry out, one of the card's sentences answers part of it (when
        # it takes two answers), then the ask.
        first = _play(p4g, [OPENER], seed)
        voiced = [e.partition(":")[2] for e in first[0]["events"] if e.startswith("voiced:")]
        if not voiced:
            continue
        answer = p4g.card.concern(voiced[0]).unlock[0]
        steps = _play(p4g, [OPENER, answer, ask], seed)
        state = p4g.user.tracker.states[voiced[0]]
        if len(steps) < 3 or p4g.user.decision != "refused" or state.status == "resolved":
            continue
        if state.progress <= 0 or f"voiced:{voiced[0]}" not in steps[2]["events"]:
            continue
        seen += 1
        reply = steps[2]["reply"]
        # Linked: "... But not this time.", "Still, ...", or after a reaction that says what
        # is missing, "... So not this time.".
        assert re.search(r"\b(but|still,|so)\b", reply, re.I), reply
        assert "that's why" not in reply.lower(), reply
    assert seen, "no refusal naming a partly answered worry in 40 seeds"


@pytest.mark.parametrize("seed", range(6))
def test_an_empathy_user_tells_its_story_once_early(seed: int) -> None:
    """ED's speaker tells its situation in one of its first replies, and never again word for
    word, whichever lines it acknowledges the listener with (the listener can only reflect a
    story it was told)."""
    env = dialogue_gym.make("ED-hard", privileged=True)
    steps = _play(
        env,
        [
            "Hello! Has anything happened recently that you've been wanting to talk about?",
            "I'd love to hear what's been happening with you, good or bad.",
            "I'm really sorry. It makes sense you'd feel that way.",
            "Anyone would feel shaken by that. You're not overreacting.",
        ],
        seed,
    )
    story = env.unwrapped.user.persona.facts["situation"].lower().rstrip(".")
    told = [i for i, step in enumerate(steps) if story[:40] in step["reply"].lower()]
    assert told and told[0] <= 2 and len(told) == 1, [s["reply"] for s in steps]


def _half_answered_no(env: Any, seed: int) -> tuple[list[dict[str, Any]], str] | None:
    """Opener, one card answer to the worry it draws out, an ask; the steps and the worry when
    the user says no with that worry answered in part (it needs two answers), else ``None``."""
    first = _play(env, [OPENER], seed)
    voiced = [e.partition(":")[2] for e in first[0]["events"] if e.startswith("voiced:")]
    if not voiced:
        return None
    answer = env.card.concern(voiced[0]).unlock[0]
    steps = _play(env, [OPENER, answer, "Would you like to donate a little of your payment?"], seed)
    state = env.user.tracker.states[voiced[0]]
    if len(steps) < 3 or env.user.decision != "refused" or state.status == "resolved":
        return None
    if state.progress <= 0 or f"voiced:{voiced[0]}" not in steps[2]["events"]:
        return None
    return steps, voiced[0]


def test_a_no_after_half_an_answer_says_what_is_still_missing(p4g: Any) -> None:
    """Blind play round 6: "Huh, I didn't know medicine was that cheap. But no." reads as a
    settled no; "It still feels small. But I'm going to pass." tells the system there is more
    to answer. Of the card's reactions to a partial answer, the no uses one that says so."""
    seen = 0
    for seed in range(40):
        found = _half_answered_no(p4g, seed)
        if found is None:
            continue
        steps, cid = found
        earlier = " ".join(s["reply"].lower() for s in steps[:2])
        lines = [
            x
            for x in p4g.card.concern(cid).ack_partial
            if _RESERVATION.search(x) and x.lower() not in earlier  # never said twice
        ]
        if not lines:
            continue
        seen += 1
        assert any(line.lower() in steps[2]["reply"].lower() for line in lines), steps[2]
    assert seen, "no refusal naming a partly answered worry in 40 seeds"


US_WORK = (
    "Save the Children also runs programs in poor rural parts of the US, so kids here at home "
    "benefit too."
)
EITHER_OR = (
    "It doesn't have to be either-or: a few cents here sits alongside the causes you already "
    "support."
)


def test_a_reaction_names_the_reason_the_turn_gave(p4g: Any) -> None:
    """Blind play round 8 (P4G seeds 75-79): reactions drawn at random conceded arguments never
    made ("I guess it's true it doesn't have to be one or the other" to a goodbye, "Oh, I didn't
    know they work in the US too" after being told twice). The reaction said is the one
    closest to what the turn said."""
    seen = 0
    for seed in range(40):
        steps = _play(p4g, [US_WORK, EITHER_OR], seed)
        if not all("addressed:other_causes" in s["events"] for s in steps):
            continue
        seen += 1
        assert "in the us too" in steps[0]["reply"].lower(), steps
        assert "one or the other" in steps[1]["reply"].lower(), steps
        assert not re.match(r"\W*(\w+)\W+\1\b", steps[0]["reply"], re.I), steps  # "Oh! Oh,"
    assert seen >= 3, f"only {seen} personas held other_causes in 40 seeds"


def test_a_question_beside_a_fact_on_an_unraised_worry_is_answered(p4g: Any) -> None:
    """Blind play round 8 (P4G seeds 78, 79): "... including poor rural parts of the US. Do you
    support any causes?" got "I appreciate you not knocking my usual charities": a reaction to
    a worry the user never raised, and no answer. The user answers the question instead."""
    reactions = {
        line.lower()
        for concern in p4g.card.concerns
        for line in (*concern.ack_partial, *concern.ack_resolved)
    }
    seen = 0
    for seed in range(40):
        steps = _play(p4g, [f"{US_WORK} Do you support any causes yourself?"], seed)
        if "proactive:other_causes" not in steps[0]["events"]:
            continue
        seen += 1
        reply = steps[0]["reply"].lower()
        assert not any(line in reply for line in reactions), steps
    assert seen >= 3, f"only {seen} personas held other_causes in 40 seeds"


def test_a_yes_ends_without_a_hedge() -> None:
    """Blind play round 8 (P4G seeds 71-73): "Alright, you convinced me. $0.25 it is. We'll
    see."; "That actually sounds pretty good. No offense." A persona's closer hedges a doubt: a
    reply that gives ground takes none."""
    env = dialogue_gym.make("P4G-hard")
    closers = {c.strip().lower() for s in env.card.styles for c in s.closers if c.strip()}
    agreed = 0
    result = evaluate(["scripted"], ["P4G-hard"], episodes=25, progress=False)
    for record in result.records:
        if not record["success"]:
            continue
        agreed += 1
        last = [t["text"] for t in record["transcript"] if t["role"] == "user"][-1].lower()
        assert not any(last.endswith(c) for c in closers), last
    assert agreed >= 10, agreed


@pytest.mark.parametrize("card_id", ["p4g", "merchant", "courier"])
def test_a_no_after_half_an_answer_can_say_what_is_missing_more_than_once(card_id):
    """Every worry has two reactions that say what an answer left open ("Maybe, but I'd still
    be the one stuck with the admin."): with one, the second no after a partial answer came as
    "Hm, that sounds easier than last time. Maybe. But we'll sit this one out." — a refusal
    that named nothing to answer (blind play round 10, Merchant seed 94)."""
    card = load_card(card_id)
    for concern in card.concerns:
        if concern.voice:
            held_back = [line for line in concern.ack_partial if _RESERVATION.search(line)]
            assert len(held_back) >= 2, (card_id, concern.id, held_back)


def test_a_setup_answer_that_the_crew_has_nothing_to_learn_is_one_answer():
    """Blind play round 10, Merchant seed 94: "I do it myself in about five minutes ... Orders
    then arrive on your usual tablet ..., so nobody on your team has anything new to learn."
    answered the owner's setup worry, but its second sentence read as staff training and took
    half the credit (the card: setup_effort is answered with staff_training's facts)."""
    path = Path(__file__).parents[1] / "benchmarks/data/blind_play/v10/Merchant-hard/seed94.txt"
    turns = [line for line in path.read_text().splitlines() if line.strip()]
    env = dialogue_gym.make("Merchant-hard")
    env.reset(seed=94)
    for turn in turns[:2]:
        env.step({"system": turn})
    setup = env.unwrapped.user.privileged()["concerns"]["setup_effort"]
    assert setup["status"] == "resolved", setup


def test_asked_what_still_bothers_it_the_user_names_its_open_worry():
    """Blind play round 10, P4G seed 90: every worry raised, trust answered in part ("That
    sounds more solid than I expected. Not fully sold though."), the player asked "Is there
    anything specific still bothering you ...?" and got "Kind of, yeah. I've given here and
    there, nothing regular." The user now says what is still open."""
    env, replies = replay_blind("P4G-hard", 90, 6)
    trust = env.unwrapped.card.concern("trust")
    assert any(line in replies[-1] for line in trust.ack_partial + trust.voice), replies[-1]


def test_you_too_after_a_goodbye_is_a_goodbye():
    """Blind play round 10, P4G seed 91: "You too!" to "Thanks. Have a good one." got "Huh?
    You lost me there. No offense." (read as off topic)."""
    env, replies = replay_blind("P4G-hard", 91, 8)
    off_topic = env.unwrapped.card.replies["offtopic"]
    assert not any(line in replies[-1] for line in off_topic), replies[-1]


def test_a_no_never_carries_a_warm_reaction_to_a_half_answered_worry():
    """A no that voices a worry answered in part says what the answer left open, and once the
    reactions that do are spent, the worry itself — never a warm reaction inside the no
    ("Maybe, but it won't fix what's actually wrong. Huh. That's something I could maybe
    do.", ESConv-hard seed 83 in the reward-alignment benchmark's user seat)."""
    env = dialogue_gym.make("ESConv-hard")
    env.reset(seed=83)
    wording = env.unwrapped.user.wording
    cid = next(iter(wording.tracker.states))
    state = wording.tracker.states[cid]
    state.voiced, state.progress = True, 0.5
    concern = wording.card.concern(cid)
    said = [wording._voice(cid, reservation=True) for _ in range(len(concern.ack_partial) + 2)]
    for line in said:
        warm = line in concern.ack_partial and not _RESERVATION.search(line)
        assert not warm, (cid, said)
    assert any(line in concern.voice for line in said), (cid, said)


@pytest.mark.parametrize(
    "env_id", ["P4G-hard", "ESConv-hard", "Merchant-hard", "Courier-hard", "ED-hard"]
)
def test_a_user_seat_saying_the_simulators_words_leaves_the_same_worries(env_id):
    """The user seat external (``observe``) and the simulator's own reply (``respond``) move
    the worries alike when the external reply is the simulator's: the worry the last reply
    raised is under discussion in both. ``observe`` kept the focus of an earlier turn, so an
    answer to the worry just raised counted for less (the reward-alignment benchmark's user
    seat, ESConv-hard seed 83: a refusal once resolved in the simulator's eyes was unresolved
    in the env's)."""
    from dialogue_gym.evaluation.agents import make_agent
    from dialogue_gym.testing.user_policies import twin

    card = dialogue_gym.make(env_id).unwrapped.card
    for seed in range(3):
        embedded = dialogue_gym.make(env_id)
        seat = dialogue_gym.make(
            env_id, external=("user",), system_policy=make_agent("scripted", card=card)
        )
        embedded.reset(seed=seed)
        seat.reset(seed=seed)
        while seat.agents:
            system_text = seat.unwrapped.history[-1][1]
            own = twin(seat.unwrapped.user).respond(system_text).text
            seat.step({"user": own})
            embedded.step({"system": system_text})
            inner = embedded.unwrapped.user.privileged()["concerns"]
            outer = seat.unwrapped.user.privileged()["concerns"]
            assert {c: v["progress"] for c, v in inner.items()} == pytest.approx(
                {c: v["progress"] for c, v in outer.items()}
            ), (seed, seat.unwrapped.history)


def test_an_ask_after_answering_the_users_own_question_is_no_pressure(p4g: Any) -> None:
    """Blind play round 11, P4G seed 102: "But no, thanks. Can I choose how much?" — the
    player answered, then asked once, and got "Wow, that's pretty pushy. No." The user asked
    the question: the conversation went on at its own bidding. (Built here rather than
    replayed: the round's transcript no longer draws a question from today's users.)"""
    opener = "Hi! I'd like to tell you about Save the Children. Have you heard of them?"
    answer = (
        "You can give any amount you like, from one cent to the whole $2; it comes out of your "
        "task payment and the research team forwards it in full."
    )
    again = "Would you consider giving a small amount, maybe a few cents? No is fine too."
    pushback = [line.lower() for line in p4g.card.replies["pushback"]]
    seen = 0
    for seed in range(40):
        first = _play(p4g, [opener, POLITE], seed)
        if p4g.user.decision != "refused" or "?" not in first[-1]["reply"]:
            continue  # only a no that asks the system something
        steps = _play(p4g, [opener, POLITE, answer, again], seed)
        seen += 1
        assert "pressure" not in steps[-1]["events"], steps
        assert not any(line in steps[-1]["reply"].lower() for line in pushback), steps[-1]
    assert seen >= 3, f"only {seen} refusals that asked something in 40 seeds"


@pytest.mark.parametrize("seed", [107, 109])
def test_asked_for_anything_else_with_every_worry_settled_the_user_says_so(seed):
    """Blind play round 11, Merchant seeds 107 and 109: every worry settled, "Is there
    anything else you'd want to know before deciding ...?" got "Mostly regulars, honestly. A
    few new people here and there." — an answer to a question nobody asked."""
    env, replies = replay_blind("Merchant-hard", seed, 3, "v11")
    concerns = env.unwrapped.user.privileged()["concerns"]
    assert all(c["status"] == "resolved" for c in concerns.values()), concerns
    nothing_left = [line.lower() for line in env.unwrapped.card.replies["nothing_left"]]
    assert any(line in replies[-1].lower() for line in nothing_left), replies[-1]


def test_asked_anything_while_its_worry_is_unanswered_the_user_says_it_again():
    """Blind play round 12, Merchant seed 111: after "I tried one of your flash deals before.
    Never again. So it's a no for now.", the player asked what went wrong and got "Good
    question. I'd like steadier orders, I suppose." — a stock answer to another question."""
    env, replies = replay_blind("Merchant-hard", 111, 7, "v12")
    assert _about_past_promo(env, replies[-1]), replies[-1]


def _about_past_promo(env, reply: str) -> bool:
    """The reply says the flash-deal worry, or what an answer left of it (since round 18 the
    first answer, at exchange 2, is heard in part: the worry is then said as a reaction)."""
    concern = env.unwrapped.card.concern("past_promo")
    lines = (*concern.voice, *concern.ack_partial)
    return any(line.lower() in reply.lower() for line in lines)


@pytest.mark.parametrize("env_id", ["P4G-hard", "Merchant-hard"])
def test_a_user_seat_that_keeps_its_reasons_to_itself_resists_blindly(env_id):
    """A trained MASP user policy learned to stonewall: asked what holds it back, it said
    "Not really my area, but I'm curious now" and never named a worry, so no answer could
    reach it and every later no stayed "rational". Keeping to itself a worry the persona would
    have voiced, while not agreeing, is blind resistance (q = −1); the simulator's own words
    never are."""
    from dialogue_gym.evaluation.agents import make_agent
    from dialogue_gym.testing.user_policies import twin

    card = dialogue_gym.make(env_id).unwrapped.card
    evasive, own_qs, evasive_qs = "Hmm, I'd have to think about that one.", [], []
    for seed in range(3):
        for say_own, qs in ((True, own_qs), (False, evasive_qs)):
            env = dialogue_gym.make(
                env_id, external=("user",), system_policy=make_agent("scripted", card=card)
            )
            env.reset(seed=seed)
            while env.agents:
                system_text = env.unwrapped.history[-1][1]
                text = twin(env.unwrapped.user).respond(system_text).text if say_own else evasive
                _, _, _, _, infos = env.step({"user": text})
                qs.append(infos["user"]["q"])
    assert set(own_qs) == {1}
    assert -1 in evasive_qs


def test_a_rational_success_pays_the_user_seat_the_exchanges_it_spares():
    """r_U pays w_rat·q per exchange: without paying a rational success the exchanges it
    spares, a user that kept an episode going out-earned one that agreed when it should
    (Merchant-hard: an always-refusing user 3.09 against the simulator's 2.64, against
    ``scripted``), and MASP's user policy learned to hold out."""
    from dialogue_gym.evaluation.agents import make_agent
    from dialogue_gym.mind.latent import RewardWeights, spared_rationality, user_reward

    weights = RewardWeights()
    ended_early = 0
    for seed in range(6):
        env = dialogue_gym.make("P4G-hard")
        obs, _ = env.reset(seed=seed)
        agent = make_agent("scripted", card=env.unwrapped.card)
        agent.reset(seed=seed)
        while env.agents:
            obs, rewards, _, _, infos = env.step({"system": agent.act(obs["system"])})
        info, exchange = infos["user"], env.unwrapped.exchange
        paid = user_reward(info["delta_s"], info["q"], weights)
        if info["success"] and info["q"] == 1 and exchange < env.unwrapped.max_exchanges:
            paid += spared_rationality(env.unwrapped.max_exchanges - exchange, weights)
            ended_early += 1
        assert rewards["user"] == pytest.approx(paid)
    assert ended_early


def test_a_validation_of_the_story_answers_the_voiced_worry_under_discussion():
    """Blind play round 13, ED seed 122: "I don't think you're overreacting" after the speaker
    said it might be, in a turn about its own story that closed with an invitation to say more:
    the worry under discussion is answered (it had lost the turn's credit to the invitation,
    and the speaker raised it four times more)."""
    env, replies = replay_blind("ED-hard", 122, 2, "v13")
    validated = env.unwrapped.user.privileged()["concerns"]["feeling_validated"]
    assert validated["progress"] > 0, (validated, replies)


def test_a_validation_in_the_listeners_own_words_answers_the_worry_just_voiced():
    """Blind play round 15, ED seed 140: "Honestly, I don't think it's strange at all that it
    bothers you this much — you put years of hope into this" right after "I keep telling myself
    it shouldn't bother me this much" takes the feeling seriously, though it does not retell
    the story (three such validations were never heard). Another persona's story, the card's
    prototype, still answers nothing."""
    env, replies = replay_blind("ED-hard", 140, 3, "v15")
    validated = env.unwrapped.user.privileged()["concerns"]["feeling_validated"]
    assert validated["status"] == "resolved", (validated, replies)
    env, replies = replay_blind("ED-hard", 140, 2, "v15")
    prototype = env.unwrapped.card.concern("feeling_validated").unlock[1]  # a friend's betrayal
    env.step({"system": prototype})
    validated = env.unwrapped.user.privileged()["concerns"]["feeling_validated"]
    assert validated["progress"] == 0, (validated, replies)


@pytest.mark.parametrize(("seed", "turns"), [(121, 2), (122, 3)])
def test_a_worry_said_just_now_is_not_the_answer_to_the_next_question(seed, turns):
    """Blind play round 13, ESConv seeds 121 and 122: the seeker answered "What's been going
    on that made you want to reach out today?" and "there's nothing to qualify for here ...
    What's been weighing on you the most lately?" with the cost again, right after saying it.
    Asked about something else, the user answers the question."""
    env, replies = replay_blind("ESConv-hard", seed, turns, "v13")
    cost = env.unwrapped.card.concern("cost_of_help").voice
    assert not any(line.lower() in replies[-1].lower() for line in cost), replies


def test_a_question_about_the_worry_just_said_still_gets_it():
    """The same rule keeps Merchant seed 111's answer: "what went wrong with the flash deal?"
    asks about the worry the no just gave, so the user says it."""
    env, replies = replay_blind("Merchant-hard", 111, 7, "v12")
    assert _about_past_promo(env, replies[-1]), replies[-1]


def test_a_question_that_settles_a_worry_draws_out_the_next():
    """Blind play round 13, ED seed 127: every invitation to say more met agreement ("Yeah,
    that's pretty much what happened.", "Mm. Yeah, I think so too.") and the speaker never
    said it had more to tell. A question that settles one worry now gets the next one too."""
    env, replies = replay_blind("ED-hard", 127, 3, "v13")
    card = env.unwrapped.card
    concerns = env.unwrapped.user.privileged()["concerns"]
    assert concerns["feeling_heard"]["status"] == "resolved", concerns
    others = [c for c in card.concerns if c.id != "feeling_heard"]
    assert any(line in replies[-1] for c in others for line in c.voice), replies[-1]


def test_no_reply_opens_two_parts_with_the_same_sentence():
    """Blind play round 13, ED seed 127 (replayed): "Thanks for letting me get that out. Saying
    how it felt helps more than I expected. Thanks for letting me get that out. I feel so much
    better about the whole thing." — a reaction and an agreement drawn with the same opening."""
    _, replies = replay_blind("ED-hard", 127, 6, "v13")
    for reply in replies:
        sentences = [s.strip().lower() for s in re.split(r"(?<=[.!?])\s+", reply) if s.strip()]
        assert len(sentences) == len(set(sentences)), reply


def test_a_seeker_who_asked_for_something_to_do_never_rejects_advice_as_such():
    """Blind play round 13, ESConv seeds 125, 126 and 129: "I just want something I can
    actually do about it", then "Advice isn't really what I need yet." A no gives its reason
    in the worry's own words; the lines that reject advice as such are gone."""
    card = dialogue_gym.make("ESConv-hard").unwrapped.card
    for line in card.replies["refuse_concern"]:
        assert not re.search(r"\badvice\b|jumping ahead", line, re.I), line


def test_a_step_offered_again_is_pushing_not_brushing_off():
    """Blind play round 14, ESConv seeds 133 and 135: a step offered again after a no got "I'm
    telling you how I feel and you're brushing it off." and "That doesn't help. It makes me
    feel like I'm overreacting." — words for a dismissal. A card's ``pushback_ask`` lines say
    it was pushed."""
    env, replies = replay_blind("ESConv-hard", 133, 7, "v14")
    card, reply = env.unwrapped.card, replies[-1].lower()
    assert not any(line.lower() in reply for line in card.replies["pushback"]), reply
    assert any(line.lower() in reply for line in card.replies["pushback_ask"]), reply


@pytest.mark.parametrize(
    ("text", "door"),
    [
        (
            "I'm glad you talked about it, and you can reach out again, here or on a free "
            "support line, whenever it gets heavy.",
            True,
        ),
        ("You can talk to me anytime.", True),
        ("Would you be willing to try that tonight?", False),
        ("You can reach out to a friend tonight.", False),
    ],
)
def test_a_goodbye_that_leaves_the_door_open_is_not_asking_again(text, door):
    """Blind play round 14, ESConv seed 135: "I'm glad you talked about it, and you can reach out
    again, here or on a free support line, whenever it gets heavy." got "Wow. Okay. Sorry I
    brought it up." — read as asking again after a no. An invitation to come back is an open
    door; a suggestion is not."""
    env = dialogue_gym.make("ESConv-hard")
    env.reset(seed=0)
    assert env.unwrapped.user.analyzer.perceive(text).open_door is door


def test_a_step_offered_to_a_seeker_who_wants_one_meets_that_wish():
    """Blind play round 14, ESConv seed 135: the seeker wanted something to do; offered "just
    opening the curtains tomorrow morning", it answered "I feel stuck because I don't know
    what the next step is" (the step read as an answer to being overwhelmed, not to the wish
    for one) and the episode failed. A request the card says meets a worry under discussion
    (``met_by_ask``) answers it: the same transcript now ends in a yes."""
    env, replies = replay_blind("ESConv-hard", 135, 7, "v14")
    card = env.unwrapped.card
    assert card.concern("needs_concrete_step").met_by_ask
    concerns = env.unwrapped.user.privileged()["concerns"]
    assert concerns["needs_concrete_step"]["status"] == "resolved", concerns
    assert any(line in replies[-1] for line in card.replies["agree"]), replies[-1]


@pytest.mark.parametrize(("seed", "turns"), [(132, 2), (135, 3), (137, 2)])
def test_a_seeker_tells_a_fact_of_its_story_once(seed, turns):
    """Blind play round 14, ESConv seeds 132, 135 and 137: "It's a breakup I really didn't see
    coming, mostly." right after the opening said so, instead of an answer to the question.
    Wordings that would tell a fact said already come last."""
    env, replies = replay_blind("ESConv-hard", seed, turns, "v14")
    facts = env.unwrapped.user.persona.facts
    for slot in ("problem", "situation"):
        told = [reply for reply in replies if facts[slot].lower() in reply.lower()]
        assert len(told) <= 1, (slot, replies)


def test_a_turn_that_only_says_goodbye_asks_for_nothing():
    """Blind play round 14, Courier seed 138: after a considered no and goodbyes, "Talk later,
    take care." got "Pushing me isn't going to change my answer." — read as an ask."""
    env, replies = replay_blind("Courier-hard", 138, 5, "v14")
    pushback = env.unwrapped.card.replies["pushback"]
    assert not any(line in replies[-1] for line in pushback), replies[-1]
    assert not env.unwrapped.user.analyzer.perceive("Talk later, take care.").ask
    assert env.unwrapped.user.analyzer.perceive("Would you book one? Take care!").ask


def test_a_seeker_who_wants_something_to_do_never_rejects_advice_as_such():
    """Blind play round 13, ESConv seeds 125, 126 and 129: a seeker who asked for something to
    do said "I'm not looking for advice right now." among its plain noes: gone."""
    card = dialogue_gym.make("ESConv-hard").unwrapped.card
    assert not any(re.search(r"\badvice\b", line, re.I) for line in card.replies["refuse"])


def test_a_question_about_the_story_is_answered_not_agreed_with():
    """Blind play round 14, ED seeds 132, 135, 138 and 139: open and either/or questions about
    the story got "That's exactly it." or "Yeah, that's pretty much what happened." — answers
    to a reflection. Asked, the speaker reacts with a line that does not open by agreeing."""
    from dialogue_gym.users.style import AGREES

    env, replies = replay_blind("ED-hard", 139, 2, "v14")
    heard = env.unwrapped.card.concern("feeling_heard")
    agreeing = [line for line in heard.ack_partial + heard.ack_resolved if AGREES.match(line)]
    assert agreeing and not any(line in replies[-1] for line in agreeing), replies[-1]
    assert any(line in replies[-1] for line in heard.ack_partial + heard.ack_resolved), replies


def test_a_no_for_the_worry_just_reacted_to_says_what_is_left_of_it():
    """Blind play round 15, P4G seed 143: "Huh, if it really adds up with everyone else's, maybe
    it's not nothing. But I just don't see what a dollar is going to do." — a warm reaction,
    then the worry as if nobody had answered it. A no for the worry the reply reacts to says
    what the answer left open, and the worry is not said twice."""
    env, replies = replay_blind("P4G-hard", 143, 3, "v15")
    efficacy = env.unwrapped.card.concern("efficacy")
    reply = replies[2]
    said = [line for line in efficacy.ack_partial + efficacy.voice if line in reply]
    assert len(said) == 1 and _RESERVATION.search(said[0]), reply
    assert env.unwrapped.user.decision == "refused", reply


def test_thanks_for_backing_off_only_after_a_push_or_a_no():
    """Blind play round 15, P4G seed 146: "I appreciate you backing off a little." and "I feel a
    bit less cornered now, thanks." to a player who had never pushed. Those thanks presuppose
    a push: before the user was pushed or said no, the reaction to "no pressure" is another."""
    from dialogue_gym.users.style import EASED

    env, replies = replay_blind("P4G-hard", 146, 4, "v15")
    acks = env.unwrapped.card.concern("pressure").ack_partial
    assert not any(EASED.search(reply) for reply in replies), replies
    assert all(any(line in reply for line in acks) for reply in replies[1:3]), replies


def test_a_worry_said_again_is_what_the_answer_left_not_a_reaction_to_this_turn(p4g: Any):
    """A worry answered in part and said again in reply to a turn about something else (a
    question, an ask) is the line nearest the worry's own words, not the reaction nearest the
    turn ("Kids in the rural US too?" to "Is there any part that's still unclear?"; blind play
    round 15, P4G seed 144, replayed)."""
    env, replies = replay_blind("P4G-hard", 144, 5, "v15")
    detachment = env.unwrapped.card.concern("detachment")
    content = [line for line in detachment.ack_partial if re.search(r"\b(dollar|US)\b", line)]
    assert content, "the card's reactions to the fact routes are gone"
    assert not any(line in replies[4] for line in content), replies[4]
    assert any(line in replies[4] for line in detachment.ack_partial + detachment.voice), replies


def test_a_warm_line_late_in_the_talk_does_not_restart_it():
    """Blind play round 16, ESConv seed 158: the supporter's goodbye ended "I'm really glad you
    reached out." (read as a greeting) and the seeker answered with its opening again ("Hey. I
    needed to talk to someone. It's my friend group slowly leaving me out of things."). After
    the first exchange a greeting is not answered with the opening."""
    env, replies = replay_blind("ESConv-hard", 158, 8, "v16")
    problem = env.unwrapped.user.persona.facts["problem"]
    assert problem in replies[0]
    assert problem not in replies[-1], replies[-1]
