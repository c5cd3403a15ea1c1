"""The validator's open-loop arm: each baseline's turns replayed to a user they were not said to.

Replayed human turns were said to someone else, so they cannot answer what the simulated user
says. The open-loop arm puts a baseline in the same position: its turns from a closed-loop
episode with another user in the same situation (:func:`open_loop_donors`) are replayed to
this dialogue's pinned user, so that human replay can be compared with what replay leaves of
an agent that listens (docs/validity.md, "Open loop").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dialogue_gym.data import Dialogue
from dialogue_gym.validity.episodes import play

__all__ = ["OTHER_USER_SEED", "open_loop_donors", "replay_open_loop"]

OTHER_USER_SEED = 1_000_003
"""Added to a dialogue's episode seed for the open-loop episode on the same pinned listing."""


def open_loop_donors(card: Any, dialogues: Sequence[Dialogue]) -> list[int | None]:
    """For each dialogue, the one whose baseline turns its user hears in the open loop.

    The turns must have been said to another user in the same situation: P4G's dialogues all
    share theirs (the charity), so the next dialogue; an ESConv seeker gets the next seeker
    with the same emotion and problem type (else the next dialogue). ``None`` means the same
    pin with another seed: a CB listing is the situation (another dialogue's prices would mean
    nothing here), and another seed draws another seller for it; likewise for one dialogue.
    """
    n = len(dialogues)
    if card.user_model == "seller" or n < 2:
        return [None] * n
    keys = [(d.situation.get("emotion_type"), d.situation.get("problem_type")) for d in dialogues]
    donors: list[int | None] = []
    for k in range(n):
        same = (j for j in ((k + step) % n for step in range(1, n)) if keys[j] == keys[k])
        donors.append(next(same, (k + 1) % n))
    return donors


def replay_open_loop(
    env: Any,
    rows: Sequence[dict[str, Any]],
    played: Sequence[tuple[Dialogue, dict[str, Any], int]],
    said: Mapping[str, Sequence[Sequence[str]]],
    agents: Mapping[str, Any],
    env_id: str = "",
    progress: Callable[[str], None] | None = None,
) -> None:
    """Adds ``open_loop``: each row's user hears what each baseline said to another user.

    See :func:`open_loop_donors`; the row's ``open_loop_donor`` names the dialogue whose turns
    were replayed (its own id when it was the same pin with another seed).
    """
    donors = open_loop_donors(env.card, [dialogue for dialogue, _, _ in played])
    started = time.monotonic()
    for done, (row, (dialogue, pin, episode_seed), donor) in enumerate(
        zip(rows, played, donors, strict=True), start=1
    ):
        row["open_loop"] = {}
        row["open_loop_donor"] = dialogue.id if donor is None else played[donor][0].id
        for name, turns in said.items():
            if donor is None:
                texts: list[str] = []
                play(env, pin, episode_seed + OTHER_USER_SEED, agent=agents[name], said=texts)
            else:
                texts = list(turns[donor])
            row["open_loop"][name] = play(env, pin, episode_seed, texts=texts)
        if progress is not None and (done % 10 == 0 or done == len(rows)):
            elapsed = time.monotonic() - started
            progress(f"[{env_id}] open loop {done}/{len(rows)} dialogues, {elapsed:.0f} s")
