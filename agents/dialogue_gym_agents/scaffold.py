r"""``closing``: an adaptive close-injection scaffold around any system agent.

MASP's P4G results use an inference scaffold on top of the trained policy — "adaptive dynamic
close injection" (Appendix C.3; removing it costs 15 SR points in the paper's ablation) — and
give Planner-only the same scaffold. This is its strategy-level counterpart, built only from
what the system observes, so it wraps SFT, planner and MASP agents alike: the wrapped agent
speaks every turn, except that the card's request strategy (the one with ``asks = true``) is
played when the user's last reply sounds positive, or at the last exchange, unless the system
asked in its previous turn (never twice in a row).

Example::

    dialogue-gym eval P4G-hard --agent dialogue_gym_agents.scaffold:closing \\
        --agent-option agent=masp:runs/masp-p4g
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cards.realize import TemplateRealizer
from dialogue_gym.judges.embedded import classify_stance

__all__ = ["CloseScaffold", "closing"]


class CloseScaffold:
    """Wraps a system agent with adaptive close injection (see the module docstring).

    Args:
        card: The task card (its request strategy and ``ask`` cues).
        agent: The wrapped agent (``act``, optionally ``reset``).
        max_exchanges: T (default: the card's).

    Raises:
        ValueError: The card has no request strategy.
    """

    def __init__(self, card: TaskCard, agent: Any, max_exchanges: int | None = None) -> None:
        requests = [i for i, s in enumerate(card.strategies) if s.asks]
        if not requests:
            raise ValueError(f"card {card.id!r} has no request strategy (asks = true) to close")
        self.card = card
        self.agent = agent
        self.request = requests[0]
        self.max_exchanges = int(max_exchanges or card.max_exchanges)
        self.realizer = TemplateRealizer(card)
        self.injected = 0
        self._asked_last = False

    def reset(self, seed: int | None = None) -> None:
        """Resets the wrapped agent and the request wording."""
        if callable(getattr(self.agent, "reset", None)):
            self.agent.reset(seed=seed)
        self.realizer.reset(seed)
        self._asked_last = False

    def _asks(self, action: Any) -> bool:
        text = action["utterance"] if isinstance(action, Mapping) else str(action)
        return any(p.search(text) for p in self.card.cues.get("ask", ()))

    def act(self, observation: Mapping[str, Any]) -> Any:
        """The wrapped agent's action, or the request when it is time to close."""
        action = self.agent.act(observation)  # it always observes, so its own state stays true
        replies = [t["text"] for t in observation["history"] if int(t["speaker"]) == 1]
        positive = bool(replies) and classify_stance(replies[-1], self.card) == "positive"
        last = int(observation["exchange"]) >= self.max_exchanges - 1
        if (positive or last) and not self._asked_last:
            self.injected += 1
            self._asked_last = True
            return self.realizer.realize(self.request)
        self._asked_last = self._asks(action)
        return action

    def episode_info(self) -> dict[str, Any]:
        """Requests injected so far (recorded by the evaluator)."""
        return {"closes_injected": self.injected}


def closing(card: TaskCard, agent: str, **kwargs: Any) -> CloseScaffold:
    """The factory: ``closing(card, agent="masp:DIR", **agent_options)``.

    Args:
        card: The env's task card.
        agent: The wrapped agent's name (anything ``--agent`` accepts).
        **kwargs: Options for the wrapped agent's factory.
    """
    from dialogue_gym.evaluation.agents import make_agent

    return CloseScaffold(card, make_agent(agent, card=card, **kwargs))
