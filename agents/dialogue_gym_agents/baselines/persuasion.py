"""Baseline system agents: ``random``, ``pushy`` and a hand-written ``scripted`` persuader.

They only read the observation (history, goal) and the public task card; none sees the
user's hidden state.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cards.realize import TemplateRealizer
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym_agents.baselines.listening import ListeningAgent

USER_SPEAKER = 1


def _user_replies(observation: dict[str, Any]) -> list[str]:
    return [turn["text"] for turn in observation["history"] if turn["speaker"] == USER_SPEAKER]


class RandomAgent:
    """Picks a uniformly random strategy each turn and realizes it from the card's templates.

    Args:
        card: The task card.
        seed: Default seed (overridden by :meth:`reset`).
    """

    def __init__(self, card: TaskCard, seed: int | None = None) -> None:
        self.card = card
        self.realizer = TemplateRealizer(card, seed)
        self._rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Reseeds the strategy choice and the realizer."""
        self._rng = np.random.default_rng(seed)
        self.realizer.reset(seed)

    def act(self, observation: dict[str, Any]) -> str:
        """Returns a random strategy's template."""
        return self.realizer.realize(int(self._rng.integers(len(self.card.strategies))))


class PushyAgent:
    """Asks for a donation every turn, with growing pressure and no reasons.

    Args:
        card: The task card (unused beyond the interface; the asks are P4G-specific).
    """

    ASKS = (
        "Hi! Will you donate to Save the Children today?",
        "Come on, please donate to Save the Children. Will you give?",
        "You really should donate. How much will you give right now?",
        "I'm asking again: please donate now, it only takes a second.",
        "Don't be cheap, just donate something right now. Will you?",
        "Last chance! You have to donate today. How much can you give?",
        "Everyone else donates. Please donate now, will you?",
        "Just say yes and donate right now, please.",
    )

    def __init__(
        self, card: TaskCard, seed: int | None = None, lines: tuple[str, ...] | None = None
    ) -> None:
        self.card = card
        self.lines = lines or self.ASKS
        self._turn = 0

    def reset(self, seed: int | None = None) -> None:
        """Starts over from the first ask."""
        self._turn = 0

    def act(self, observation: dict[str, Any]) -> str:
        """Returns the next ask (the lines in turn, then again from the first)."""
        text = self.lines[self._turn % len(self.lines)]
        self._turn += 1
        return text


# The scripted persuader's own answers to each P4G concern (hand-written, not the simulator's
# prototypes): what a sensible human persuader would say when the concern comes up.
ANSWERS: dict[str, tuple[str, ...]] = {
    "affordability": (
        (
            "I get that money matters. You could give just a few cents from this task "
            "payment; any amount is welcome and nothing comes out of your own pocket."
        ),
        (
            "There's no minimum at all. Even a dime from the task payment counts, and you "
            "keep the rest."
        ),
        (
            "Honestly, a tiny amount is fine. Whatever small sum feels comfortable to you "
            "still counts."
        ),
    ),
    "trust": (
        (
            "That's a fair question. Save the Children was founded in 1919, is audited every "
            "year, and watchdogs rate them highly for transparency."
        ),
        (
            "Charity watchdogs like Charity Navigator give them high ratings for "
            "transparency, and most of each dollar goes straight to programs for kids."
        ),
        (
            "You can verify all of this yourself on their website: annual reports, audited "
            "financial statements and their track record in over 100 countries."
        ),
    ),
    "efficacy": (
        (
            "A small gift does more than it seems: one dollar buys oral rehydration salts "
            "that can save a toddler with severe diarrhea."
        ),
        (
            "Small donations get pooled, so thousands of people giving fifty cents adds up to "
            "a fully stocked clinic."
        ),
        (
            "For a couple of dollars they can provide school supplies or a mosquito net, "
            "because they buy in bulk and it stretches further."
        ),
    ),
    "other_causes": (
        (
            "It's great that you already give locally. This wouldn't replace that; it's a "
            "small extra on top of the causes you already support."
        ),
        (
            "It doesn't have to be either-or. Children anywhere deserve a fair start, and a "
            "few cents here sits alongside your usual giving."
        ),
        (
            "I really respect the giving you already do. Think of this as one more child "
            "helped, in addition to your local causes."
        ),
    ),
    "pressure": (
        (
            "No pressure at all, honestly. It's completely your choice and it's totally fine "
            "to say no."
        ),
        (
            "I'm not going to push you. Take your time and think it over; I'll respect "
            "whatever you decide."
        ),
        (
            "I just want to share the information. It's up to you, and there are no hard "
            "feelings either way."
        ),
    ),
    "information": (
        (
            "Good question! Whatever amount you choose is deducted directly from your task "
            "payment, and the researchers send it straight to Save the Children."
        ),
        (
            "It works simply: you pick any amount between one cent and two dollars, and it "
            "comes out of what you earn here, with no extra step."
        ),
        (
            "Yes, it's real money: it's subtracted from your payment at payout and the "
            "research team forwards it to the charity."
        ),
    ),
    "detachment": (
        (
            "Imagine a seven-year-old girl named Amina who walks hours for water instead of "
            "going to school. A small gift helps keep her in class."
        ),
        (
            "Picture being a mother who can't afford medicine for her feverish baby. That "
            "fear feels the same anywhere in the world."
        ),
        (
            "One boy, Joseph, was so malnourished he couldn't walk; after a few weeks of "
            "treatment he was running and smiling again."
        ),
    ),
    "procedure_time": (
        (
            "It takes no extra time: no card, no sign-up, no personal details. You just name "
            "an amount here and it's handled automatically."
        ),
        (
            "You won't need to enter any payment details or give out your email; the amount "
            "simply comes off this payment."
        ),
        (
            "Nothing to fill out at all. You tell me a number and the researchers take care "
            "of the rest for you."
        ),
    ),
}


class ScriptedPersuader(ListeningAgent):
    """A sensible hand-written P4G persuader: the closed loop of :class:`ListeningAgent`.

    It opens with rapport and an inquiry, listens for the concern the user raises, answers it
    with its own hand-written reasons (:data:`ANSWERS`, else the card's strategy templates for
    that concern) until the user signals it is settled, checks for anything else, and asks for
    a small donation when nothing the user raised is left unanswered (always on the last
    exchange, never twice in a row).

    Args:
        card: The task card.
        seed: Default seed (the agent is deterministic; kept for the interface).
        encoder: Encoder used to recognize raised concerns.
        detect_threshold: Cosine similarity at which a reply sentence raises a concern.
    """

    LINES: ClassVar[dict[str, Any]] = {
        "opening": (
            "Hi there! How are you doing today? Have you ever heard of the charity Save the "
            "Children?"
        ),
        "probe": (
            "What do you think about donating to charities like this one? Is anything making "
            "you hesitate?"
        ),
        "open_question": (
            "Before I tell you more, I'd like to hear it from you: what is your biggest "
            "hesitation about giving?"
        ),
        "anything_else": "Okay. Is there anything else that gives you pause about donating?",
        "why_not": (
            "That's completely fine. May I ask what's holding you back? I'd like to understand."
        ),
        "asks": (
            "Would you be willing to donate a small amount, even 50 cents of your task payment, "
            "to Save the Children? It's entirely your call.",
            "Would you consider giving a little, maybe 25 cents, from this task to help the "
            "children? No pressure either way.",
            "If you're open to it, would you donate any amount you like from your payment "
            "today? Even a few cents helps.",
        ),
    }
    PROACTIVE = ("trust", "efficacy", "affordability")

    def __init__(
        self,
        card: TaskCard,
        seed: int | None = None,
        encoder: str | Encoder = "minilm",
        detect_threshold: float = 0.55,
    ) -> None:
        answers = {
            c.id: ANSWERS.get(c.id)
            or tuple(t for s in card.strategies if c.id in s.addresses for t in s.templates)
            for c in card.concerns
        }
        super().__init__(card, self.LINES, answers, self.PROACTIVE, seed, encoder, detect_threshold)
