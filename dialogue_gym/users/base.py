"""The user-simulator protocol shared by embedded, LLM and learned users."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dialogue_gym.mind.bdi import BDI

DECISIONS = ("refused", "neutral", "positive", "agree")


@dataclasses.dataclass(frozen=True)
class UserTurn:
    """One user reply and the mental state behind it.

    Attributes:
        text: The reply.
        decision: The user's stance after this exchange (one of :data:`DECISIONS`).
        bdi: The user's mental state after this exchange.
        justified: Whether the stance change was justified by what the system said: a
            concession without a reason is not (read by the embedded rationality judge).
        events: What the user perceived in the system turn (``"ask"``, ``"pressure"``,
            ``"addressed:trust"`` …), for infos and debugging.
        rational: For a reply written by an external user policy, the stance the simulator's
            state machine takes as rational here — the reference the embedded rationality
            judge compares the stated stance with — while ``decision`` is the stance the reply
            states. ``None`` for simulator replies (``decision`` is then both).
        withheld: For a reply written by an external user policy, the concerns the simulator
            would have voiced here that the reply kept to itself (resisting without giving its
            reason when the persona would: blind resistance to the rationality judge).
    """

    text: str
    decision: str
    bdi: BDI
    justified: bool
    events: tuple[str, ...] = ()
    rational: str | None = None
    withheld: tuple[str, ...] = ()


@runtime_checkable
class UserSimulator(Protocol):
    """A user that holds a hidden, evolving mental state and answers system turns."""

    def reset(self, rng: np.random.Generator) -> BDI:
        """Starts a new episode (persona and state drawn from ``rng``); returns z_0's record."""
        ...

    def respond(self, system_text: str) -> UserTurn:
        """Updates the state from the system's utterance and replies."""
        ...

    def observe(self, system_text: str, user_text: str) -> UserTurn:
        """Updates the state when an external user policy wrote the reply ``user_text``."""
        ...

    @property
    def state(self) -> BDI:
        """The current (hidden) mental state."""
        ...

    def profile(self) -> str:
        """The user's visible profile text."""
        ...

    def privileged(self) -> dict[str, Any]:
        """Privileged information (concern statuses, willingness) for teacher views."""
        ...


def twin(user: Any) -> Any:
    """A deep copy of ``user`` to step in its place; card, encoder and pools are shared.

    The copy has its own episode state and its own copy of the random generator, so stepping
    it leaves ``user`` (and the env that holds it) untouched.
    """
    analyzer = getattr(user, "analyzer", None)
    shared = [
        getattr(user, "card", None),
        analyzer,
        getattr(analyzer, "encoder", None),
        getattr(user, "encoder", None),
        getattr(user, "personas", None),
        getattr(user, "listings", None),
        getattr(user, "backend", None),
        getattr(user, "realizer", None),  # an LLM realizer: its client is not copied
    ]
    # Frozen dataclasses (persona, style, preset, listing) are immutable: shared as well.
    shared += [value for value in vars(user).values() if _frozen(value)]
    memo = {id(obj): obj for obj in shared if obj is not None}
    return copy.deepcopy(user, memo)


def _frozen(value: Any) -> bool:
    params = getattr(type(value), "__dataclass_params__", None)
    return bool(params is not None and params.frozen)
