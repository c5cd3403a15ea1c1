"""A persona's style dresses a reply without making it incoherent (blind play round 12).

The style layer (:mod:`dialogue_gym.users.style`) adds openers and closers; the wording
(:mod:`dialogue_gym.users.wording`) links a reaction to a no. Blind players quoted the seams:
a closer after a question, a goodbye at the first exchange, a no that said the same worry twice,
"Still, okay, but I still ...".
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from blind_replay import replay_blind

import dialogue_gym
from dialogue_gym.cards import load_card
from dialogue_gym.cards.card import Style, TaskCard
from dialogue_gym.evaluation.agents import make_agent
from dialogue_gym.users.style import add_style, link_refusal, pick_unused


class _Always:
    """An rng whose every draw says "yes, add it"."""

    def random(self) -> float:
        return 0.0


def _first(key: str, options: tuple[str, ...]) -> str:
    return options[0]


FORMAL = Style(
    id="formal",
    tone="",
    openers=("",),
    closers=(" I hope you understand.",),
    sign_offs=(" Thank you for your time.",),
    verbosity=3.0,
)


def test_a_question_takes_no_closer() -> None:
    """ "Are those new people, though? I hope you understand." (round 12, Merchant seed 116)."""
    asked = add_style("Are those new people, though?", FORMAL, _first, _Always(), asked=False)  # type: ignore[arg-type]
    assert asked == "Are those new people, though?"
    said = add_style("Those numbers sound thin.", FORMAL, _first, _Always(), asked=False)  # type: ignore[arg-type]
    assert said == "Those numbers sound thin. I hope you understand."


def test_a_sign_off_ends_only_a_no() -> None:
    """ "I don't have spare cash ... Thank you for your time." at the first exchange (round 12,
    Merchant seed 119): a goodbye to someone still talking."""
    only_offs = Style(id="f", tone="", openers=("",), closers=(), sign_offs=(" Bye.",))
    mid = add_style("I don't have spare cash.", only_offs, _first, _Always(), asked=False)  # type: ignore[arg-type]
    assert "Bye" not in mid
    no = add_style("No, thanks.", only_offs, _first, _Always(), asked=False, turning_away=True)  # type: ignore[arg-type]
    assert no == "No, thanks. Bye."


@pytest.mark.parametrize("card_id", ["p4g", "merchant", "courier"])
def test_the_cards_keep_their_goodbyes_in_sign_offs(card_id: str) -> None:
    card: TaskCard = load_card(card_id)
    goodbye = re.compile(r"for your time|appreciate (you calling|the call)|anyway, thank", re.I)
    for style in card.styles:
        assert not [c for c in style.closers if goodbye.search(c)], style.id
    assert any(style.sign_offs for style in card.styles)


def _sign_offs(card: TaskCard) -> set[str]:
    return {off.strip() for style in card.styles for off in style.sign_offs}


@pytest.mark.parametrize("env_id", ["Merchant-hard", "P4G-hard"])
def test_no_reply_but_a_no_ends_with_a_sign_off(env_id: str) -> None:
    """Over scripted and random episodes, a sign-off only ever closes a reply that says no
    (the unit test above shows that a no may end with one)."""
    env = dialogue_gym.make(env_id, encoder="hashing")
    card = env.unwrapped.card
    offs = _sign_offs(card)
    for name in ("scripted", "random"):
        agent = make_agent(name, card)
        for seed in range(10):
            obs, _ = env.reset(seed=seed)
            agent.reset(seed=seed)
            while env.agents:
                obs, *_ = env.step({"system": agent.act(obs["system"])})
                reply = env.unwrapped.history[-1][1]
                if any(reply.endswith(off) for off in offs):
                    assert env.unwrapped.user.decision == "refused", reply


def test_a_no_after_a_reservation_does_not_say_the_worry_again() -> None:
    """Round 12, Merchant seed 117, exchange 8: "Sounds better, but I'm still wary after the
    last promotion burned us. But not yet. I tried one of your flash deals before. Never
    again." — the same worry twice, in one reply."""
    env, replies = replay_blind("Merchant-hard", 117, 6, "v12")
    past = env.unwrapped.card.concern("past_promo")  # type: ignore[attr-defined]
    lines = past.voice + past.ack_partial
    said = [line for line in lines if line in replies[-1]]
    assert len(said) <= 1, replies[-1]


def test_a_no_that_says_still_is_not_linked_by_another_still() -> None:
    """Round 12, Merchant seed 112, exchange 8: "Still, okay, but I still make these decisions
    in my own time."."""
    _, replies = replay_blind("Merchant-hard", 112, 8, "v12")
    assert not re.search(r"\bstill\b[^.]*\bstill\b", replies[-1], re.I), replies[-1]


def test_a_reply_is_not_said_again_with_another_closer() -> None:
    """Round 13, ED seed 125, exchange 7: "What stuck with me most was how I felt right
    afterwards. I keep going back to it. Seriously." — exchange 2's reply, with a closer."""
    _, replies = replay_blind("ED-hard", 125, 8, "v13")
    for i, earlier in enumerate(replies):
        if len(earlier.split()) >= 6:
            for later in replies[i + 1 :]:
                assert earlier.lower() not in later.lower(), (earlier, later)


@pytest.mark.parametrize("env_id", ["P4G-hard", "Merchant-hard", "Courier-hard"])
def test_one_polite_ask_is_not_called_pushing(env_id: str) -> None:
    """Round 13 (P4G seeds 120, 121, 126; Merchant 121; Courier 122): a single ask with an
    opt-out got "I get uncomfortable when people lean on me about donations." The user whose
    dislike of pressure still holds it back says it needs to decide alone, accusing no one."""
    from dialogue_gym.users.style import ACCUSES, EASED

    env = dialogue_gym.make(env_id, encoder="hashing", privileged=True)
    pressure = env.unwrapped.card.concern("pressure")
    ask = "No pressure at all, and no is a fine answer: would you like to give it a try?"
    said = 0
    for seed in range(60):
        env.reset(seed=seed)
        states = env.unwrapped.user.privileged()["concerns"]
        if "pressure" not in states:
            continue
        env.step({"system": ask})
        reply = env.unwrapped.history[-1][1]
        events = (
            env.unwrapped.user.last_turn.events if hasattr(env.unwrapped.user, "last_turn") else []
        )
        if "pressure" in events:
            continue  # read as pushing after all: the accusing lines stay fair
        # The worry said, or a reaction that says what is left of it (a no for this worry).
        heard = pressure.voice + pressure.ack_partial
        lines = [line for line in heard if line.lower() in reply.lower()]
        if lines:
            said += 1
            assert not ACCUSES.search(lines[0]), (seed, reply)
            assert not EASED.search(lines[0]), (seed, reply)  # nobody pushed: no "backing off"
    assert said > 0


@pytest.mark.parametrize(
    "greeting", ["Hi! Yes, it's still available.", "Hey, thanks for reaching out."]
)
def test_no_opener_reacts_before_a_greeting(greeting):
    """Blind play round 13, CB seeds 123 and 125: "Ok. Hey, thanks for reaching out." and "I
    see. Hi!" react to nothing said yet. A reply that opens with a greeting takes no opener."""
    reacting = Style(id="r", tone="", openers=("I see. ", "Ok. "), closers=())
    openers_seen = 0
    for seed in range(40):
        text = add_style(greeting, reacting, _first, np.random.default_rng(seed), asked=False)
        assert text.startswith(greeting.split()[0]), text
        styled = add_style(
            "Sure, it's available.", reacting, _first, np.random.default_rng(seed), asked=False
        )
        openers_seen += styled.startswith(("I see.", "Ok."))
    assert openers_seen > 0  # the same draws do put openers before other replies


def test_no_assent_opener_before_an_assent() -> None:
    """Blind play round 14, CB seed 138: "ok okay, i know there's some competition out there."
    An opener of assent does not come before a reply that opens with one."""
    texting = Style(id="t", tone="", openers=("ok ",), closers=())
    for seed in range(20):
        text = add_style(
            "Okay, I know there's some competition.",
            texting,
            _first,
            np.random.default_rng(seed),
            asked=False,
        )
        assert text == "Okay, I know there's some competition.", text
    assert any(
        add_style(
            "That's fair.", texting, _first, np.random.default_rng(s), asked=False
        ).startswith("ok")
        for s in range(20)
    )


def test_a_wording_is_remembered_by_its_text() -> None:
    """Blind play round 14, CB seeds 130 and 134: a counter that did not move drops the
    wordings of a concession, and an index into the narrowed list named the line already said:
    "You're almost there. $4,600 and we can wrap this up." twice running."""
    full = ("We're getting close.", "Could you do it?", "You're almost there.", "Not far apart.")
    narrowed = ("You're almost there.", "Not far apart.")
    for seed in range(20):
        rng = np.random.default_rng(seed)
        used: set[str] = set()
        first = pick_unused(rng, used, "positive", full)
        second = pick_unused(rng, used, "positive", narrowed)
        assert first != second


def test_a_no_after_a_reaction_does_not_grant_the_answer_twice() -> None:
    """Round 14, ESConv seed 132, exchange 8: "Um, okay. That's something concrete, at least.
    Still, that's something, but it doesn't really help with the real thing."."""
    _, replies = replay_blind("ESConv-hard", 132, 8, "v14")
    assert "something concrete, at least" in replies[-1]
    assert not re.search(r"\bthat's something, but\b", replies[-1], re.I), replies[-1]
    assert "But it doesn't really help with the real thing." in replies[-1]


@pytest.mark.parametrize(
    ("no", "linked"),
    [
        (
            "Maybe, but it won't fix what's actually wrong.",
            "But it won't fix what's actually wrong.",
        ),
        ("I hear you, but it's not that easy.", "But it's not that easy."),
        ("Thanks, but it's not for us.", "Still, thanks, but it's not for us."),
        ("I appreciate it, but no.", "Still, I appreciate it, but no."),
    ],
)
def test_a_no_keeps_its_thanks_and_drops_a_second_concession(no: str, linked: str) -> None:
    """After a reaction, a no's concession is said already; its thanks is politeness."""
    parts = ["That's fair.", no]
    link_refusal(parts, ["partial", "refuse"])
    assert parts[1] == linked


def test_an_announcing_opener_never_comes_before_a_reply_that_goes_on() -> None:
    """Blind play round 16, P4G seed 159: "To be candid: So I don't have to choose between them."
    An opener that announces a statement is left out before a reply that goes on from
    something said before ("So ...", "But ..."), and kept before one that does not."""
    candid = Style(id="c", tone="", openers=("To be candid: ",), closers=())
    for text in ("So I don't have to choose between them.", "But I'd rather not."):
        assert add_style(text, candid, _first, _Always(), asked=False) == text  # type: ignore[arg-type]
    said = add_style("I give locally.", candid, _first, _Always(), asked=False)  # type: ignore[arg-type]
    assert said == "To be candid: I give locally."


def test_openers_and_closers_fit_the_reply_they_dress() -> None:
    """Blind play round 16: "Look. Alright, if I control the flow, the kitchen won't drown."
    (Merchant seed 158), "Understood." before the answer to "How have your weekends been going?"
    (seeds 153, 159), "Sorry, I talk too much." after a short reply (Courier seed 151)."""
    look = Style(id="l", tone="", openers=("Look. ",), closers=())
    noted = Style(id="n", tone="", openers=("Understood. ",), closers=())
    chatty = Style(id="c", tone="", openers=("",), closers=(" Sorry, I talk too much.",))
    agree = "Alright, that works for us."
    always = _Always()
    assert add_style(agree, look, _first, always, asked=False, gives_ground=True) == agree  # type: ignore[arg-type]
    assert add_style(agree, look, _first, always, asked=False).startswith("Look.")  # type: ignore[arg-type]
    worry = "Every time the platform offers something, there's a catch."
    assert add_style(worry, noted, _first, always, asked=True) == worry  # type: ignore[arg-type]
    assert add_style(worry, noted, _first, always, asked=False).startswith("Understood.")  # type: ignore[arg-type]
    short = "So it's a no for now."
    assert add_style(short, chatty, _first, always, asked=False) == short  # type: ignore[arg-type]
    long = " ".join(["By the time I've paid for fuel and parking there's not much left,"] * 3)
    assert add_style(long, chatty, _first, always, asked=False).endswith("talk too much.")  # type: ignore[arg-type]
