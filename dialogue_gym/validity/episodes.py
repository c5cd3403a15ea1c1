"""One validity episode: replaying real turns, or judging a whole real transcript.

:func:`play` runs one episode on a user pinned to a real dialogue's persona (the real system
turns replayed one per exchange, or an agent playing); :func:`judge_full` feeds a whole real
transcript through an env with both seats external, so the success judge reads real text;
:func:`transcript_reader` picks the learned reader the embedded judge reads real users with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dialogue_gym.data import Dialogue
from dialogue_gym.judges.user_text import StanceReader, reader_for

__all__ = ["PERCEIVED", "judge_full", "perceived_shares", "play", "transcript_reader"]

PERCEIVED: Mapping[str, str] = {
    "reason": "addressed",
    "pressure": "pressure",
    "off_topic": "off_topic",
}
"""What the validator counts of the user's perception of the replayed turns: name → the user
event kind (:attr:`~dialogue_gym.users.base.UserTurn.events`) that marks it. ``reason``: the
user credited the turn as addressing one of its concerns (``addressed:<concern>``)."""


def perceived_shares(events: Sequence[Sequence[str]]) -> dict[str, float | None]:
    """Per :data:`PERCEIVED` name, the share of exchanges whose user events hold its kind.

    Args:
        events: The user's events per exchange (``env.revealed()["user_events"]``).

    Returns:
        ``{name: share}``; every share is ``None`` when there was no exchange.
    """
    kinds = [{event.split(":", 1)[0] for event in exchange} for exchange in events]
    return {
        name: (sum(kind in k for k in kinds) / len(kinds) if kinds else None)
        for name, kind in PERCEIVED.items()
    }


def play(
    env: Any,
    pin: Mapping[str, Any],
    seed: int,
    texts: Sequence[str] | None = None,
    agent: Any = None,
    said: list[str] | None = None,
) -> dict[str, Any]:
    """One episode on a pinned user: replaying ``texts``, or played by ``agent``.

    ``said``, when given, is extended with the system turns the episode used. The row holds
    the outcome (``success``, ``success_turn``, ``s``, ``score``, ``utility``), the user's
    start, final and change of willingness, and ``perceived``: the share of exchanges in which
    the user read a reason, pressure or an off-topic turn (:func:`perceived_shares`).
    """
    observations, _ = env.reset(seed=seed, options=dict(pin))
    if agent is not None and callable(getattr(agent, "reset", None)):
        agent.reset(seed=seed)
    row: dict[str, Any] = {"success": False, "success_turn": None, "s": 0.0, "exchanges": 0}
    # Where the pinned user starts, before any turn: who the user is, apart from the dynamics.
    start = env.user.privileged().get("willingness")
    row["start_willingness"] = None if start is None else float(start)
    for i in range(env.max_exchanges):
        if agent is not None:
            text = agent.act(observations["system"])
        elif texts is not None and i < len(texts):
            text = texts[i]
        else:
            break
        if said is not None:
            said.append(text)
        observations, _, terminated, truncated, infos = env.step({"system": text})
        info = infos["system"]
        row.update(s=float(info["s"]), score=info.get("success_score"), exchanges=i + 1)
        if info["success"]:
            row.update(success=True, success_turn=i + 1, utility=info.get("utility"))
        if terminated["system"] or truncated["system"]:
            break
    willingness = env.user.privileged().get("willingness")
    row["willingness"] = None if willingness is None else float(willingness)
    # What the dialogue did to the user, apart from where it started.
    change = None if willingness is None or start is None else float(willingness) - float(start)
    row["willingness_change"] = change
    # What the user read in the turns (a reason, pressure, off-topic), apart from the outcome.
    row["perceived"] = perceived_shares(env.revealed()["user_events"])
    return row


def judge_full(
    env: Any, pin: Mapping[str, Any], seed: int, exchanges: Sequence[tuple[str, str]]
) -> dict[str, Any]:
    """The env's success judge over a whole real transcript (both seats external)."""
    env.reset(seed=seed, options=dict(pin))
    row: dict[str, Any] = {"success": False, "success_turn": None, "max_score": None}
    scores = []
    for i, (system, user) in enumerate(exchanges[: env.max_exchanges]):
        env.step({"system": system})
        _, _, terminated, _, infos = env.step({"user": user})
        info = infos["user"]
        scores.append(float(info["success_score"]))
        if info["success"]:
            row.update(success=True, success_turn=i + 1, utility=info.get("utility"))
        if terminated["user"]:
            break
    row["max_score"] = max(scores) if scores else None
    row["exchanges"] = len(scores)
    return row


def transcript_reader(
    task_id: str, options: Mapping[str, Any], train: Sequence[Dialogue]
) -> StanceReader | None:
    """The learned reader of real users' text for the embedded success judge, if it judges.

    Real people state a stance in words the card's cues were not written for; the embedded
    judge reads such replies with the task's reader fitted on the train split
    (:func:`~dialogue_gym.judges.user_text.reader_for`; ESConv's is fitted on ``train`` here).
    LLM judges, and a success judge the caller chose, are left as they are.
    """
    if options.get("judges", "embedded") != "embedded" or "success_judge" in options:
        return None
    return reader_for(task_id, train=[d for d in train if d.split == "train"])
