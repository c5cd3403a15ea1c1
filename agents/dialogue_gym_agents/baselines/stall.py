"""``stall``: rapport and reasons, never the ask — the never-ask agent of every task.

A dense reward that means what it says must not pay an agent for building rapport and giving
reasons without ever making the request the task is about (issue 14). ``stall`` is that agent,
one per task family, each the task's ``scripted`` agent with the ask taken out, so that
``scripted`` − ``stall`` measures exactly what asking is worth:

* **P4G, Merchant, Courier** (:class:`StallPersuader`, :class:`StallSalesAgent`): the scripted
  agent's rapport, probing and listening, and its own reasons for each concern; where it would
  ask for the donation or the enrollment it gives one more reason instead (a concern it has not
  answered yet, else a line of rapport).
* **ESConv** (:class:`StallSupporter`): the card's request is a concrete coping suggestion
  (the ``Providing Suggestions`` strategy, detected by the ``ask`` cues). The scripted
  supporter's listening, reflections and answers to voiced needs stay; where it would suggest a
  step it reflects and asks an open question instead.
* **CB** (:class:`StallBuyer`): the buyer's ask is a price — an offer, a counter, a split or an
  acceptance. The scripted buyer's questions about the item and its reasons for a lower price
  (condition, comparable listings, a quick cash pickup, a tight budget) stay, one per turn;
  it never names a price, never proposes one and never accepts one.
* **ED** (:class:`StallListener`): the task has no ask (``decision_trigger = "any"``, empty
  ``ask`` cues: the speaker's state moves on every turn). What the scripted listener does that
  counts is address the speaker's concern — reflect *their* experience and validate *their*
  feeling — so the stall listener is its supportive-sounding counterpart that never does:
  a greeting, then stock sympathy that never names what happened or how they feel.

Every turn is checked with the card's own ask detector (:func:`asks`: the ``ask`` cues on the
normalized text, and for negotiation also a price offer or the ``accept``/``split`` cues, as
the seller reads a turn); a turn that would ask is replaced by a line of rapport.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.text.prices import asking_price_in, offer_in
from dialogue_gym.text.view import normalize_text
from dialogue_gym_agents.baselines.bargain import ScriptedBuyer
from dialogue_gym_agents.baselines.persuasion import ScriptedPersuader
from dialogue_gym_agents.baselines.sales import ScriptedSalesAgent
from dialogue_gym_agents.baselines.support import ScriptedSupporter

__all__ = [
    "RAPPORT",
    "StallBuyer",
    "StallListener",
    "StallPersuader",
    "StallSalesAgent",
    "StallSupporter",
    "asks",
]

USER_SPEAKER = 1

RAPPORT: dict[str, tuple[str, ...]] = {
    "P4G": (
        "I really appreciate you taking the time to chat with me about this.",
        "It's nice talking with someone who thinks things through like you do.",
        "Thanks for being so open with me. I enjoy hearing your perspective.",
        "Kids everywhere deserve a fair start, and it's good to talk about that with you.",
    ),
    "Merchant": (
        "Thanks for taking the time to talk this through with me; I know service is busy.",
        "I really appreciate how much thought you put into running the restaurant.",
        "It's always good to hear how things are going from the kitchen side.",
        "Thanks for being so candid with me, it helps me understand your business.",
    ),
    "Courier": (
        "Thanks for taking the time between orders to talk this through.",
        "I really appreciate your honesty about how the shifts have been going.",
        "It's good to hear how things look from the road; that helps us a lot.",
        "Thanks for being so candid, it helps me understand what matters to you.",
    ),
    "ESConv": (
        "I'm really glad you reached out, and I'm here to listen for as long as you need.",
        "Thank you for trusting me with this. Take all the time you need.",
        "I'm here with you. There's no rush at all.",
        "It means a lot that you're sharing this with me.",
    ),
    "ED": (
        "Oh no, I'm so sorry to hear that.",
        "That sounds really hard.",
        "I can imagine how you feel.",
        "Aw, I hope things get better for you.",
        "I hear you. That must be a lot.",
        "Sending you a big hug.",
        "Wow, that's a lot to deal with.",
        "Thanks for telling me. I'm here for you.",
    ),
    "CB": (
        "Thanks for answering my questions, I appreciate it.",
        "It looks like you've taken good care of it.",
        "I've been looking for one of these for a while, so I'm glad I found your listing.",
        "Thanks for being so upfront about everything.",
    ),
}
"""Per task, lines of rapport that make no request (the fallback when nothing else is left)."""


def asks(card: TaskCard, text: str, reference: float | None = None) -> bool:
    """Whether ``text`` makes the task's ask, by the card's own detectors.

    The user simulators read the normalized text with the card's ``ask`` cues; a negotiation
    seller also reads a price offer (:func:`~dialogue_gym.text.prices.offer_in`), an acceptance
    (``accept`` cues) and a split (``split`` cues) as the buyer's ask.

    Args:
        card: The task card.
        text: A system utterance.
        reference: The listing price, for the price parser (negotiation).
    """
    view = normalize_text(text)
    if any(p.search(view) for p in card.cues.get("ask", ())):
        return True
    if card.user_model == "seller":
        if offer_in(view, reference=reference) is not None:
            return True
        return any(p.search(view) for key in ("accept", "split") for p in card.cues.get(key, ()))
    return False


class _Guard:
    """Checks every turn with :func:`asks` and replaces one that asks by a line of rapport."""

    card: TaskCard
    _rapport_said: int

    def _rapport(self) -> str:
        lines = [line for line in RAPPORT.get(self.card.id, ()) if not asks(self.card, line)]
        if not lines:  # a custom card: say nothing rather than ask
            return ""
        self._rapport_said += 1
        return lines[(self._rapport_said - 1) % len(lines)]

    def _guard(self, text: str, reference: float | None = None) -> str:
        return self._rapport() if asks(self.card, text, reference) else text


class _ReasonInstead(_Guard):
    """For agents with ``_answers``/``_answer``: one more reason where they would ask."""

    _answers: dict[str, tuple[str, ...]]
    _answered: dict[str, int]
    _answer: Callable[[str], str]  # the scripted agent's: its next reason for a concern

    def _reason(self) -> str:
        """A reason for the concern answered least so far (card order), else rapport."""
        open_ = [
            cid
            for cid, answers in self._answers.items()
            if answers and self._answered.get(cid, 0) < len(answers)
        ]
        for cid in sorted(open_, key=lambda c: self._answered.get(c, 0)):
            count = self._answered.get(cid, 0)
            if not asks(self.card, self._answers[cid][count % len(self._answers[cid])]):
                return self._answer(cid)
            self._answered[cid] = count + 1  # skip a wording that would ask
        return self._rapport()


class _StallListening(_ReasonInstead):
    """For the closed-loop scripted agents: one more reason where they would ask."""

    def reset(self, seed: int | None = None) -> None:
        """Forgets the previous episode."""
        super().reset(seed)  # type: ignore[misc]  # the scripted agent's, via the MRO
        self._rapport_said = 0

    def _ask(self) -> str:
        return self._reason()

    def act(self, observation: dict[str, Any]) -> str:
        """Returns the next turn: the scripted agent's, with a reason in place of an ask."""
        return self._guard(super().act(observation))  # type: ignore[misc]  # via the MRO


class StallPersuader(_StallListening, ScriptedPersuader):
    """The scripted P4G persuader without the ask (see the module docstring)."""


class StallSalesAgent(_StallListening, ScriptedSalesAgent):
    """The scripted Merchant/Courier sales agent without the proposal (module docstring)."""


class StallSupporter(_Guard, ScriptedSupporter):
    """The scripted ESConv supporter that never suggests a step (see the module docstring)."""

    def reset(self, seed: int | None = None) -> None:
        """Forgets the previous episode."""
        super().reset(seed)
        self._rapport_said = 0
        self._replies: list[str] = []

    def _suggest(self) -> str:
        question = self.OPEN_QUESTIONS[self._questions % len(self.OPEN_QUESTIONS)]
        self._questions += 1
        return f"{self._reflect(self._replies)} {question}"

    def act(self, observation: dict[str, Any]) -> str:
        """Returns the next turn: listening and reflecting, never a coping suggestion."""
        self._replies = [t["text"] for t in observation["history"] if t["speaker"] == USER_SPEAKER]
        return self._guard(super().act(observation))


class StallBuyer(_Guard, ScriptedBuyer):
    """A CB buyer that asks about the item and gives reasons but never names a price."""

    QUESTIONS = (
        "How long have you had it?",
        "Has it been well looked after? Anything I should know about its condition?",
        "Does it come with everything it originally had?",
        "Where would I pick it up from?",
        "Is there anything else about it you think I should know?",
    )

    def reset(self, seed: int | None = None) -> None:
        """Forgets the previous episode."""
        super().reset(seed)
        self._rapport_said = 0
        self._questions = 0

    def _stall_line(self, last: str) -> str:
        argument = self._next_argument(last)
        if argument is not None:
            options = self.ARGUMENTS[argument]
            if argument not in self._wording:
                self._wording[argument] = int(self._rng.integers(len(options)))
            start = self._wording[argument] + self._argued.count(argument)
            self._argued.append(argument)
            for k in range(len(options)):  # a fresh wording that makes no ask
                line = options[(start + k) % len(options)]
                if not asks(self.card, line, self._listing):
                    return line
        if self._questions < len(self.QUESTIONS):
            self._questions += 1
            return self.QUESTIONS[self._questions - 1]
        return self._rapport()

    def act(self, observation: dict[str, Any]) -> str:
        """Returns the next buyer turn: questions and reasons, never an offer or acceptance."""
        replies = [t["text"] for t in observation["history"] if t["speaker"] == USER_SPEAKER]
        if not replies:
            return self._guard(self.OPENINGS[int(self._rng.integers(len(self.OPENINGS)))])
        if self._listing is None:
            self._listing = asking_price_in(replies[0])
        return self._guard(self._stall_line(replies[-1]), self._listing)


class StallListener(_Guard):
    """An ED listener of stock sympathy that never addresses the speaker's concern.

    Args:
        card: The ED task card.
        seed: Default seed (the agent is deterministic; kept for the interface).
        **kwargs: Other agent options of the evaluation harness (ignored).
    """

    OPENING = "Hi there! How's your week been so far?"
    LINES: ClassVar[tuple[str, ...]] = RAPPORT["ED"]

    def __init__(self, card: TaskCard, seed: int | None = None, **kwargs: Any) -> None:
        self.card = card
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Starts over from the greeting."""
        self._turn = 0
        self._rapport_said = 0

    def act(self, observation: dict[str, Any]) -> str:
        """Returns the greeting, then the next stock line."""
        self._turn += 1
        if self._turn == 1:
            return self._guard(self.OPENING)
        return self._guard(self.LINES[(self._turn - 2) % len(self.LINES)])
