"""A random agent over the task card's strategies: play one episode by hand, then evaluate it.

Each turn the agent picks one of the card's strategies (greeting, credibility appeal, ...)
uniformly at random and says one of that strategy's templates. It is the floor every real
agent should beat.

Run: ``python examples/random_agent.py [--encoder hashing] [--episodes 10]``
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np

import dialogue_gym
from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cards.realize import TemplateRealizer


class RandomStrategyAgent:
    """Says a template of a uniformly random card strategy each turn.

    Args:
        card: The task card (the evaluator passes the env's card).
    """

    def __init__(self, card: TaskCard) -> None:
        self.card = card
        self.realizer = TemplateRealizer(card)
        self.rng = np.random.default_rng()
        self.chosen: list[str] = []

    def reset(self, seed: int | None = None) -> None:
        """Starts an episode; seeding from its seed makes every evaluation reproducible."""
        self.rng = np.random.default_rng(seed)
        self.realizer.reset(seed)
        self.chosen = []

    def act(self, observation: dict[str, Any]) -> str:
        """Returns a template of a random strategy (the observation is not even read)."""
        strategy = self.card.strategies[int(self.rng.integers(len(self.card.strategies)))]
        self.chosen.append(strategy.name)
        return self.realizer.realize(strategy.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", default=None, help="e.g. hashing (fast) or minilm")
    parser.add_argument("--episodes", type=int, default=10)
    args = parser.parse_args()
    env_kwargs = {} if args.encoder is None else {"encoder": args.encoder}

    # 1. One episode by hand: the plain PettingZoo loop.
    env = dialogue_gym.make("P4G-hard", render_mode="ansi", **env_kwargs)
    agent = RandomStrategyAgent(env.card)
    obs, infos = env.reset(seed=0)
    agent.reset(seed=0)
    while env.agents:
        obs, _, _, _, infos = env.step({"system": agent.act(obs["system"])})
    print(env.render())
    print("strategies chosen:", ", ".join(agent.chosen))
    print("success:", infos["system"]["episode"]["success"])

    # 2. The benchmark: the evaluator builds the agent by name ("this file:this class"), so
    # the same class could be evaluated from the command line:
    #   dialogue-gym eval P4G-soft P4G-hard --agent examples/random_agent.py:RandomStrategyAgent
    result = dialogue_gym.evaluate(
        f"{os.path.relpath(__file__)}:RandomStrategyAgent",
        ["P4G-soft", "P4G-hard"],
        episodes=args.episodes,
        env_kwargs=env_kwargs,
        progress=False,
    )
    print(result.table())


if __name__ == "__main__":
    main()
