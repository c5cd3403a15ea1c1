"""Bounds of a discrete action interface: the best fixed sequence and a clairvoyant ceiling.

A learned policy over :class:`~dialogue_gym.env.wrappers.ConcernActions` (or
:class:`~dialogue_gym.env.wrappers.StrategyActions`) is judged between two lines:

* **the best fixed sequence** (:func:`best_fixed_sequence`): one sequence of actions, the same
  in every episode, found by coordinate ascent on training seeds. A policy that does no better
  has learned an action, not to listen.
* **the clairvoyant ceiling** (:func:`clairvoyant_search`): per episode, a beam search over
  action prefixes that replays the episode from its seed to see every outcome — what the
  interface allows at best; no policy that sees only the observation can beat it.

Both replay episodes from ``reset(seed)`` (the envs are deterministic per seed), so they work
on any discrete view whose ``step`` takes an action index.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "Outcome",
    "best_fixed_sequence",
    "clairvoyant_search",
    "deal_utility",
    "interface_lines",
    "play_moves",
    "random_rate",
    "random_records",
    "scripted_rate",
    "scripted_records",
]

Outcome = tuple[bool, float, int]
"""``(success, final progress s, exchanges)`` of one episode."""


def play_moves(env: Any, moves: Sequence[int], seed: int) -> Outcome:
    """Plays ``moves`` from ``env.reset(seed=seed)`` until the episode ends or they run out.

    Args:
        env: A discrete view (``ConcernActions``, ``StrategyActions``).
        moves: Action indices, in order.
        seed: The episode seed.

    Returns:
        Whether the episode succeeded, the user's final progress s and the exchanges played.
    """
    info, played = _play(env, moves, seed)
    return bool(info.get("success", False)), float(info.get("s", 0.0)), played


def deal_utility(env: Any, moves: Sequence[int], seed: int) -> float:
    """The buyer utility (SL) of ``moves`` played from ``seed`` on a negotiation.

    0 without a successful deal.
    """
    info, _ = _play(env, moves, seed)
    return float(info.get("utility") or 0.0) if info.get("success") else 0.0


def _play(env: Any, moves: Sequence[int], seed: int) -> tuple[dict[str, Any], int]:
    """The last step's info and the exchanges played."""
    env.reset(seed=seed)
    info: dict[str, Any] = {}
    played = 0
    for action in moves:
        _, _, terminated, truncated, info = env.step(int(action))
        played += 1
        if terminated or truncated:
            break
    return info, played


def _rank(outcome: Outcome) -> tuple[float, float, float]:
    success, s, exchanges = outcome
    return (float(success), s, -float(exchanges) if success else 0.0)


def clairvoyant_search(env: Any, seed: int, width: int = 8) -> tuple[list[int], Outcome]:
    """The best action sequence for episode ``seed`` found by a beam search that sees outcomes.

    Every prefix of the beam is extended by every action and replayed from the seed; the
    ``width`` best (success, then final progress s, then fewer exchanges) are kept. The search
    stops at the first successful sequence (it cannot be beaten on success) or at the budget.

    Args:
        env: A discrete view whose ``action_space.n`` actions are searched.
        seed: The episode seed.
        width: Beam width.

    Returns:
        The best sequence and its outcome.

    Raises:
        ValueError: ``width`` is below 1.
    """
    if width < 1:
        raise ValueError(f"width must be at least 1, got {width}")
    actions = range(int(env.action_space.n))
    budget = int(getattr(env, "max_exchanges", 8))
    beam: list[tuple[list[int], Outcome]] = [([], (False, 0.0, 0))]
    best: tuple[list[int], Outcome] | None = None
    while beam:
        scored = []
        for prefix, _ in beam:
            for action in actions:
                moves = [*prefix, action]
                outcome = play_moves(env, moves, seed)
                if outcome[0]:
                    return moves, outcome
                ended = outcome[2] < len(moves)  # the episode ended before the last move
                if not ended:
                    scored.append((moves, outcome))
                if best is None or _rank(outcome) > _rank(best[1]):
                    best = (moves, outcome)
        scored.sort(key=lambda item: _rank(item[1]), reverse=True)
        beam = [item for item in scored[:width] if len(item[0]) < budget]
    assert best is not None  # the first extension of the empty prefix set it
    return best


def best_fixed_sequence(
    env: Any,
    seeds: Sequence[int],
    length: int | None = None,
    rounds: int = 2,
    progress: Callable[[str], None] | None = None,
    objective: str = "success",
) -> tuple[list[int], float]:
    """The best single action sequence on ``seeds``, by coordinate ascent.

    Starts from the sequence that repeats the action best on its own, then visits every
    position ``rounds`` times and tries every action there, keeping a change when it raises
    the score: success rate plus a tenth of the mean final progress s, or (``objective=
    "utility"``, a negotiation) the mean buyer utility of the deals (SL).

    Args:
        env: A discrete view.
        seeds: Training episode seeds (keep them apart from the evaluation seeds).
        length: Sequence length (default: the env's exchange budget).
        rounds: Passes over the positions.
        progress: Called with a short status line after each position.
        objective: ``"success"`` or ``"utility"``.

    Returns:
        The sequence and its score on ``seeds``.

    Raises:
        ValueError: Unknown ``objective``.
    """
    if objective not in ("success", "utility"):
        raise ValueError(f"objective must be 'success' or 'utility', got {objective!r}")
    length = int(length) if length else int(getattr(env, "max_exchanges", 8))
    actions = range(int(env.action_space.n))

    def score(moves: Sequence[int]) -> float:
        if objective == "utility":
            return sum(deal_utility(env, moves, s) for s in seeds) / len(seeds)
        outcomes = [play_moves(env, moves, s) for s in seeds]
        return sum(o[0] + 0.1 * o[1] for o in outcomes) / len(outcomes)

    scores = {a: score([a] * length) for a in actions}
    first = max(scores, key=lambda a: scores[a])
    moves, best = [first] * length, scores[first]
    for round_index, position in itertools.product(range(rounds), range(length)):
        for action in actions:
            if action == moves[position]:
                continue
            trial = [*moves[:position], action, *moves[position + 1 :]]
            value = score(trial)
            if value > best:
                moves, best = trial, value
        if progress is not None:
            progress(f"round {round_index + 1} position {position + 1}: score {best:.3f}")
    return moves, best


def random_records(env: Any, seeds: Sequence[int], seed: int = 0) -> list[dict[str, Any]]:
    """The episode records of uniformly random actions (one draw per exchange, from ``seed``).

    An episode the draws did not finish (a view whose budget exceeds ``max_exchanges``) has
    the record ``{"success": False}``.
    """
    rng = np.random.default_rng(seed)
    n, budget = int(env.action_space.n), int(getattr(env, "max_exchanges", 8))
    records: list[dict[str, Any]] = []
    for episode_seed in seeds:
        env.reset(seed=episode_seed)
        record: dict[str, Any] = {"success": False}
        for action in rng.integers(n, size=budget).tolist():
            _, _, terminated, truncated, info = env.step(int(action))
            if terminated or truncated:
                record = dict(info.get("episode") or {"success": bool(info.get("success"))})
                break
        records.append(record)
    return records


def random_rate(env: Any, seeds: Sequence[int], seed: int = 0) -> float:
    """SR of uniformly random actions (one draw per exchange, from ``seed``) on ``seeds``."""
    wins = [bool(r.get("success")) for r in random_records(env, seeds, seed)]
    return sum(wins) / max(len(wins), 1)


def scripted_records(env_id: str, episodes: int, seed: int, encoder: str) -> list[dict[str, Any]]:
    """The episode records of the ``scripted`` text agent on ``episodes`` seeds from ``seed``."""
    from dialogue_gym.evaluation.run import evaluate

    result = evaluate(
        ["scripted"],
        [env_id],
        episodes=episodes,
        seed=seed,
        env_kwargs={"encoder": encoder},
        progress=False,
    )
    return [dict(r) for r in result.records]


def scripted_rate(env_id: str, episodes: int, seed: int, encoder: str) -> float:
    """SR of the ``scripted`` text agent on ``episodes`` seeds from ``seed``."""
    records = scripted_records(env_id, episodes, seed, encoder)
    return sum(bool(r["success"]) for r in records) / max(len(records), 1)


def interface_lines(
    env: Any, test: Sequence[int], train: Sequence[int], width: int = 8, rounds: int = 2
) -> tuple[dict[str, float], list[int]]:
    """``random``, ``fixed best`` (searched on ``train``) and ``ceiling`` SR on ``test``.

    ``width=0`` leaves the ceiling out (the costliest line under a slow encoder). On a
    negotiation (a card with a deal judge) the fixed sequence is searched for, and also
    reported by, its buyer utility: ``fixed best SL``.

    Returns:
        The rates and the fixed sequence.
    """
    card = getattr(env, "card", None)
    deal = card is not None and card.is_negotiation
    objective = "utility" if deal else "success"
    fixed, _ = best_fixed_sequence(env, train, rounds=rounds, objective=objective)
    lines = {
        "random": random_rate(env, test),
        "fixed best": sum(play_moves(env, fixed, s)[0] for s in test) / max(len(test), 1),
    }
    if deal:
        lines["fixed best SL"] = sum(deal_utility(env, fixed, s) for s in test) / max(len(test), 1)
    if width > 0:
        ceiling = [clairvoyant_search(env, s, width)[1][0] for s in test]
        lines["ceiling"] = sum(ceiling) / max(len(ceiling), 1)
    return lines, fixed
