"""Replays a blind-play transcript (``benchmarks/data/blind_play``) on the current users."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dialogue_gym

BLIND_PLAY = Path(__file__).parents[1] / "benchmarks/data/blind_play"


def replay_blind(
    env_id: str, seed: int, turns: int, round_dir: str = "v10"
) -> tuple[Any, list[str]]:
    """Plays the first ``turns`` system turns of a round's transcript; returns the env (open,
    privileged) and the user's replies."""
    path = BLIND_PLAY / round_dir / env_id / f"seed{seed}.txt"
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    env = dialogue_gym.make(env_id, privileged=True)
    env.reset(seed=seed)
    replies = []
    for turn in lines[:turns]:
        env.step({"system": turn})
        replies.append(env.unwrapped.history[-1][1])
    return env, replies
