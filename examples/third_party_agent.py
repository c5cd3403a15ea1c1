"""A third-party agent: a plain class in your own file, evaluated by ``path/to/file.py:Class``.

Nothing to install or register: any object with ``act(observation)`` (and optionally
``reset(seed)``) is an agent. This one listens: it matches the user's last reply against the
concerns the task card says users voice (word overlap with their ``voice`` lines), answers the
best match with a strategy that ``addresses`` it, and makes the card's request only once it
has given a few reasons. It works on any card. It also shows the second action form,
``{"utterance": ..., "estimate": ...}``: its own guess of the user's state, which adds the
inference term to the system reward.

The same evaluation from the command line::

    dialogue-gym eval P4G-hard --agent examples/third_party_agent.py:ReasonGiver --episodes 20

Run: ``python examples/third_party_agent.py [--encoder hashing] [--episodes 10]``
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Any

import dialogue_gym
from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cards.realize import TemplateRealizer

USER = 1  # observation["history"] speakers: 0 is the system (this agent), 1 the user


def content_words(text: str) -> set[str]:
    """The lower-cased words of more than three letters in ``text``."""
    return {word for word in re.findall(r"[a-z']+", text.lower()) if len(word) > 3}


class ReasonGiver:
    """Answers the user's voiced concerns with reasons, then asks (see the module docstring).

    Args:
        card: The task card (the evaluator passes the env's card).
        reasons_before_asking: Reasons to give before the first request.
    """

    def __init__(self, card: TaskCard, reasons_before_asking: int = 3) -> None:
        self.card = card
        self.realizer = TemplateRealizer(card)
        self.reasons_before_asking = reasons_before_asking
        self.ask = next(s.name for s in card.strategies if s.asks)
        # concern id -> (the words users voice it with, a strategy giving a reason for it)
        self.concerns = {
            concern.id: (
                content_words(" ".join(concern.voice)),
                next(s.name for s in card.strategies if concern.id in s.addresses),
            )
            for concern in card.concerns
            if any(concern.id in s.addresses for s in card.strategies)
        }
        self.reasons_given = 0

    def reset(self, seed: int | None = None) -> None:
        """Starts an episode (seeds the choice among a strategy's templates)."""
        self.realizer.reset(seed)
        self.reasons_given = 0

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:
        """Returns ``{"utterance": the next turn, "estimate": a guess of the user's state}``."""
        replies = [turn["text"] for turn in observation["history"] if turn["speaker"] == USER]
        if not replies:
            strategy = self.card.strategies[0].name  # the card's opener
        elif self.reasons_given >= self.reasons_before_asking:
            strategy = self.ask
            self.reasons_given = 0  # give more reasons before asking again
        else:
            heard = content_words(replies[-1])
            overlap, strategy = max(
                (len(heard & words), name) for words, name in self.concerns.values()
            )
            if not overlap:  # no concern recognized: give the most common kind of reason
                strategy = self.concerns[self.card.concerns[0].id][1]
            self.reasons_given += 1
        # A crude estimate of the user's state: more open with every reason given.
        openness = min(0.3 + 0.15 * self.reasons_given, 0.9)
        estimate = {
            "belief": "It may help, but I still have doubts.",
            "desire": "I want my concerns answered first.",
            "intention": "I will decide after hearing more.",
            "receptivity": openness,
            "confidence": openness - 0.2,
            "valence": 0.1,
        }
        return {"utterance": self.realizer.realize(strategy), "estimate": estimate}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", default=None, help="e.g. hashing (fast) or minilm")
    parser.add_argument("--episodes", type=int, default=10)
    args = parser.parse_args()

    # The evaluator imports this file by path and builds ReasonGiver(card=<the env's card>);
    # the `if __name__ == "__main__"` guard keeps that import from running main() again.
    result = dialogue_gym.evaluate(
        f"{os.path.relpath(__file__)}:ReasonGiver",
        ["P4G-soft", "P4G-hard"],
        episodes=args.episodes,
        env_kwargs={} if args.encoder is None else {"encoder": args.encoder},
        progress=False,
    )
    print(result.table())
    first = result.records[0]
    print(f"\nfirst episode ({first['env_id']}), success={first['success']}:")
    for turn in first["transcript"][:6]:
        print(f"  {turn['role']:>6}: {turn['text']}")


if __name__ == "__main__":
    main()
