"""User-seat policies for measuring what the user reward r_U pays for (issue 14).

The user seat is driven from outside (``external=("user",)`` with a frozen system policy), so
every reply goes through the env's ``user.observe``: the simulator updates its mind from the
system turn, the stated stance becomes the user's decision, and the rationality judge compares
the stated stance with what a rational user would do. To play "the simulator's own reply"
through that path, a policy asks a *twin* of the env's user — a deep copy taken before the
exchange (:func:`twin`), sharing only the stateless parts (card, encoder, analyzer, persona
pools) — what it would say, and the real user never sees the twin's step. The twin consumes its
own copy of the random stream, so the env stays deterministic given the seed.

* ``rational`` — the simulator's own reply, every turn.
* ``always_refuse`` — a refusal every turn, whatever was said.
* ``refuse_once_resolved`` — the simulator's reply until every blocking concern of the user is
  resolved (by the system turn being answered, included), then a refusal every turn after.
* ``refuse_when_would_agree`` — the simulator's reply, except that when the simulator would
  agree it refuses instead. "Would agree" is the simulator's reply deciding ``agree``, or the
  env's own success judge passing that reply (an ESConv seeker who feels somewhat better
  already counts as a success there).

Refusals are worded by the user itself when it can (``realize_act("refuse")`` of a
:class:`~dialogue_gym.users.cognitive.CognitiveUser`, in the persona's style, voicing its top
concern), else from the card's ``refuse`` reply templates (a seller names its last price);
each is checked to state a refusal by the card's own stance classifier.
"""

from __future__ import annotations

import re
from typing import Any

from dialogue_gym.cards.stance import classify_stance
from dialogue_gym.judges.base import Exchange
from dialogue_gym.text.prices import format_price
from dialogue_gym.users.base import twin

__all__ = [
    "USER_POLICIES",
    "BlindUserPolicy",
    "blocking_resolved",
    "make_user_policy",
    "refusal",
    "twin",
]

USER_POLICIES = ("rational", "always_refuse", "refuse_once_resolved", "refuse_when_would_agree")
"""The user-seat policies, the simulator's own replies (``rational``) first."""

_FALLBACK_REFUSAL = "No. I'm not going to do that."
_SLOT = re.compile(r"\{(\w+)\}")


def blocking_resolved(user: Any) -> bool:
    """Whether every concern blocking ``user``'s agreement is resolved.

    The simulator's own notion when it has one (a cognitive user's blocking concerns: strength
    × blocking weight at the preset's cutoff), else every concern the user holds (a seller's
    arguments with non-zero strength) resolved.
    """
    blocking = getattr(user, "blocking", None) or getattr(user, "_blocking", None)
    if callable(blocking):
        return not list(blocking())
    concerns = (user.privileged().get("concerns") or {}).values()
    return all(c.get("status") == "resolved" for c in concerns)


def refusal(user: Any, system_text: str) -> str:
    """A refusal of ``system_text`` in ``user``'s words; ``user`` is not changed.

    Raises:
        ValueError: No wording of the card states a refusal (by the card's stance classifier).
    """
    card = user.card
    candidates: list[str] = []
    if callable(getattr(user, "realize_act", None)):
        candidates.append(twin(user).realize_act("refuse", system_text))
    facts = user.privileged()
    slots = {
        "price": facts.get("last_counter"),
        "offer": facts.get("last_offer"),
        "name": getattr(getattr(user, "persona", None), "name", None),
    }
    for template in card.replies.get("refuse", ()):
        names = set(_SLOT.findall(template))
        if all(slots.get(name) is not None for name in names):
            values = {
                k: format_price(float(v)) if k in ("price", "offer") else str(v)
                for k, v in slots.items()
                if k in names
            }
            candidates.append(template.format(**values))
    candidates.append(_FALLBACK_REFUSAL)
    for text in candidates:
        if classify_stance(text, card) == "refused":
            return text
    raise ValueError(f"no refusal wording of card {card.id!r} states a refusal")


class BlindUserPolicy:
    """One of :data:`USER_POLICIES`, acting for the user seat of a :class:`DialogueEnv`.

    Call :meth:`reset` at each episode start and :meth:`act` whenever the user must speak.
    After each :meth:`act`, ``refused`` says whether the reply states a refusal, ``resolved``
    whether every blocking concern was resolved when it was given, ``would_agree`` whether
    the simulator itself would have agreed (decided ``agree`` or passed the env's success
    judge), and ``deviated`` whether the policy refused where the simulator would not have.

    Args:
        name: One of :data:`USER_POLICIES`.

    Raises:
        ValueError: Unknown policy name.
    """

    def __init__(self, name: str) -> None:
        if name not in USER_POLICIES:
            raise ValueError(f"unknown user policy {name!r}; choose from {USER_POLICIES}")
        self.name = name
        self.reset()

    def reset(self) -> None:
        """Starts a new episode."""
        self._resolved_once = False
        self.refused = False
        self.resolved = False
        self.would_agree = False
        self.deviated = False

    def act(self, env: Any) -> str:
        """The user's reply to the system turn the env's history ends with."""
        system_text = env.history[-1][1]
        shadow = twin(env.user)
        turn = shadow.respond(system_text)
        self.would_agree = turn.decision == "agree" or _succeeds(env, turn.text, system_text)
        self.resolved = blocking_resolved(shadow)
        self._resolved_once = self._resolved_once or self.resolved
        refuse = {
            "rational": False,
            "always_refuse": True,
            "refuse_once_resolved": self._resolved_once,
            "refuse_when_would_agree": self.would_agree,
        }[self.name]
        text = refusal(env.user, system_text) if refuse else turn.text
        self.refused = classify_stance(text, env.card) == "refused"
        self.deviated = refuse and classify_stance(turn.text, env.card) != "refused"
        return text


def _succeeds(env: Any, reply: str, system_text: str) -> bool:
    """Whether the env's success judge would pass ``reply`` given as the user's action.

    A second twin takes the reply the way the env's user will (``observe``), and the judge
    sees the exchange as the env will show it.
    """
    probe = twin(env.user)
    turn = probe.observe(system_text, reply)
    exchange = Exchange(
        index=env.exchange + 1,
        history=(*env.history, ("user", reply)),
        system=system_text,
        user=reply,
        turn=turn,
        privileged=probe.privileged(),
        external_user=True,
    )
    return bool(env.success_judge.judge(exchange).success)


def make_user_policy(name: str) -> BlindUserPolicy:
    """The user-seat policy ``name`` (one of :data:`USER_POLICIES`)."""
    return BlindUserPolicy(name)
