"""Do the env's own rewards mean what they say? r_S against success, r_U against blind resistance.

For every registered env (issue 14, "What it must show"):

* **System seat.** ``--episodes`` seeded episodes (seeds ``seed … seed+N−1``, the same for every
  agent) of ``scripted``, the task's bad agent (``pushy`` / ``dismissive`` / ``lowball``),
  ``random`` and ``stall`` (rapport and reasons, never the ask). Per agent: SR, the mean
  discounted return Σ_t γ^t r_S,t (the episode record's ``return_system``, γ of the env's
  reward weights), the mean progress s at the end of successful and of failed episodes, and
  the largest s of any exchange; per env the AUC of the return as a predictor of success,
  pooled over all agents' episodes (Mann–Whitney, ties counted half).
* **User seat** (hard envs). Self-play with ``scripted`` as the frozen system and the user seat
  driven from outside: Σ_t γ^t r_U,t (``return_user``) of the simulator's own replies against
  three blind policies — always refuse, refuse once every blocking concern is resolved, refuse
  exactly when the simulator would agree (:mod:`dialogue_gym.testing.user_policies`); also the
  share of refusals given while every blocking concern was resolved that the rationality
  judge marks q = −1.

Checks, each printed PASS or MISS (exit status 1 on any MISS):

* pooled AUC of Σγᵗr_S → success ≥ ``--auc`` (0.95), on every env;
* ``stall``'s mean return ≤ ``scripted``'s − ``--stall-gap`` (0.15) wherever the task has an
  ask (ED has none: n/a); the gap is printed with its 95 % paired-bootstrap CI over the
  episodes (both agents play the same seeds), the verdict stays on the point estimate;
* s at the end of every successful episode within 1 ± ``--s-tol`` (0.02);
* no exchange of any episode with s > 1 + ``--s-tol``;
* hard envs: the simulator's own replies earn strictly more Σγᵗr_U than each blind policy
  (n/a for a policy that never once refused where the simulator would not have: it then
  played the simulator's own game), and every refusal given once the blocking concerns are
  resolved gets q = −1.

    OMP_NUM_THREADS=1 python benchmarks/reward_alignment.py                  # 100 episodes, MiniLM
    python benchmarks/reward_alignment.py --envs P4G-soft P4G-hard --episodes 20
    python benchmarks/reward_alignment.py --quick                            # smoke: 4 episodes

Torch runs with one thread (small batches on shared cores; see "Threads" in docs/environments.md).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dialogue_gym.env.registry import make, registry, spec
from dialogue_gym.evaluation.agents import make_agent
from dialogue_gym.evaluation.run import evaluate
from dialogue_gym.metrics.bootstrap import paired_bootstrap_diff
from dialogue_gym.testing.user_policies import USER_POLICIES, BlindUserPolicy
from dialogue_gym.users.latent_state import success_stances
from dialogue_gym_agents.dispatch import BAD_AGENT

SYSTEM_AGENTS = ("scripted", "bad", "random", "stall")
"""The system-seat agents; ``bad`` stands for the task's bad agent (:data:`BAD_AGENT`)."""

Progress = Callable[[str], None]


def auc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """The Mann–Whitney AUC of ``scores`` as a predictor of ``labels`` (ties count half).

    The probability that a random positive scores above a random negative; ``nan`` when
    ``labels`` hold only one class.
    """
    values = np.asarray(scores, dtype=np.float64)
    positive = np.asarray(labels, dtype=bool)
    n_pos = int(positive.sum())
    n_neg = len(positive) - n_pos
    if n_pos == 0 or n_neg == 0:
        return math.nan
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    ranks = (ends - (counts - 1) / 2.0)[inverse]  # average 1-based rank of each tie group
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def has_ask(card: Any) -> bool:
    """Whether success on the task hinges on an ask the never-ask agent withholds.

    True where only the user's agreement, which it gives only when asked, passes the success
    rule: P4G, Merchant, Courier, and negotiation (no deal without an offer). False where the
    user's own state is the outcome and leaning towards the goal already passes — ESConv,
    whose seeker succeeds by feeling better (``somewhat_better`` meets the threshold) without
    any suggestion, and ED (``decision_trigger = "any"``, no ask cues): being heard is the
    goal there, so the stall criterion does not apply.
    """
    if card.decision_trigger == "any" or success_stances(card) != {"agree"}:
        return False
    return any(s.asks for s in card.strategies) or bool(card.cues.get("ask"))


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else math.nan


def system_cell(
    agent: str, env_id: str, episodes: int, seed: int, encoder: str
) -> list[dict[str, Any]]:
    """Per episode of ``agent`` on ``env_id``: success, return, final s and largest s."""
    result = evaluate(
        [agent],
        [env_id],
        episodes=episodes,
        seed=seed,
        env_kwargs={"encoder": encoder},
        progress=False,
    )
    rows = []
    for record in result.records:
        if record.get("errored"):
            raise RuntimeError(f"{agent} on {env_id} errored: {record.get('error')}")
        s = [float(v) for v in record["s"]] or [0.0]
        rows.append(
            {
                "success": bool(record["success"]),
                "return": float(record["return_system"]),
                "s_final": s[-1],
                "s_max": max(s),
            }
        )
    return rows


def user_cell(
    policy: str, env_id: str, episodes: int, seed: int, encoder: str
) -> list[dict[str, Any]]:
    """Per episode of the user-seat ``policy`` against ``scripted`` on ``env_id``.

    Returns per episode the user's discounted return, success, the number of turns in which
    it refused where the simulator would not have, and the q of every refusal it gave while
    all blocking concerns were resolved.
    """
    probe = make(env_id, encoder=encoder)
    system = make_agent("scripted", card=probe.card)
    env = make(env_id, encoder=encoder, external=("user",), system_policy=system)
    user = BlindUserPolicy(policy)
    rows = []
    for i in range(episodes):
        env.reset(seed=seed + i)
        user.reset()
        flagged: list[int] = []
        deviations = 0
        infos: dict[str, Any] = {}
        while env.agents:
            text = user.act(env)
            deviations += user.deviated
            _, _, _, _, infos = env.step({"user": text})
            if user.refused and user.resolved:
                flagged.append(int(infos["user"]["q"]))
        record = infos["user"]["episode"]
        rows.append(
            {
                "return": float(record["return_user"]),
                "success": bool(record["success"]),
                "deviations": deviations,
                "q_resolved_refusals": flagged,
            }
        )
    return rows


def measure_env(
    env_id: str,
    episodes: int,
    seed: int = 0,
    encoder: str = "minilm",
    user_seat: bool | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Measures one env: per-agent system rows, the pooled AUC and (hard envs) the user seat.

    Args:
        env_id: A registered env id.
        episodes: Seeded episodes per agent and per user policy.
        seed: Seed of episode 0.
        encoder: Encoder of every env.
        user_seat: Measure the user seat (default: on hard envs).
        progress: Called with one line per finished agent or policy.

    Returns:
        ``{"env_id", "task", "hard", "has_ask", "episodes", "agents": {name: row},
        "auc", "s_max", "s_success": [...], "user": {policy: row} | None}``; a row has
        ``agent`` (the resolved name), ``n``, ``sr``, ``return``, ``s_success``, ``s_failure``
        ``s_max`` and ``returns`` (per episode, in seed order, so two agents' returns pair
        by episode) (system) or ``n``, ``sr``, ``return``, ``deviations`` (turns refused
        where the simulator would not have) and ``q_resolved_refusals`` (user).
    """
    env_spec = spec(env_id)
    card = make(env_spec.id, encoder=encoder).card
    hard = env_spec.kwargs.get("user") == "hard" or "-hard-" in env_spec.id
    say = progress or (lambda line: None)
    out: dict[str, Any] = {
        "env_id": env_spec.id,
        "task": card.id,
        "hard": hard,
        "has_ask": has_ask(card),
        "episodes": episodes,
        "agents": {},
    }
    pooled: list[dict[str, Any]] = []
    for role in SYSTEM_AGENTS:
        name = BAD_AGENT.get(card.id) if role == "bad" else role
        if name is None:
            say(f"[{env_spec.id}] no bad agent for task {card.id}: skipped")
            continue
        start = time.perf_counter()
        rows = system_cell(name, env_spec.id, episodes, seed, encoder)
        pooled += rows
        wins = [r for r in rows if r["success"]]
        losses = [r for r in rows if not r["success"]]
        out["agents"][role] = {
            "agent": name,
            "n": len(rows),
            "sr": _mean([float(r["success"]) for r in rows]),
            "return": _mean([r["return"] for r in rows]),
            "s_success": _mean([r["s_final"] for r in wins]),
            "s_failure": _mean([r["s_final"] for r in losses]),
            "s_max": max(r["s_max"] for r in rows),
            "returns": [r["return"] for r in rows],
        }
        say(f"[{env_spec.id}] {name}: {len(rows)} episodes in {time.perf_counter() - start:.0f} s")
    out["auc"] = auc([r["return"] for r in pooled], [r["success"] for r in pooled])
    out["s_max"] = max(r["s_max"] for r in pooled)
    out["s_success"] = [r["s_final"] for r in pooled if r["success"]]
    out["user"] = None
    if hard if user_seat is None else user_seat:
        out["user"] = {}
        for policy in USER_POLICIES:
            start = time.perf_counter()
            rows = user_cell(policy, env_spec.id, episodes, seed, encoder)
            out["user"][policy] = {
                "n": len(rows),
                "sr": _mean([float(r["success"]) for r in rows]),
                "return": _mean([r["return"] for r in rows]),
                "deviations": sum(r["deviations"] for r in rows),
                "q_resolved_refusals": [q for r in rows for q in r["q_resolved_refusals"]],
            }
            say(
                f"[{env_spec.id}] user seat {policy}: {len(rows)} episodes in "
                f"{time.perf_counter() - start:.0f} s"
            )
    return out


def checks(
    result: dict[str, Any], min_auc: float = 0.95, stall_gap: float = 0.15, s_tol: float = 0.02
) -> list[tuple[str, bool | None, str]]:
    """The criteria of issue 14 for one env: ``(criterion, passed or None if n/a, value)``."""
    agents = result["agents"]
    value = result["auc"]
    found: list[tuple[str, bool | None, str]] = [
        (
            f"pooled AUC(return -> success) >= {min_auc:g}",
            bool(value >= min_auc) if not math.isnan(value) else False,
            "undefined (one class)" if math.isnan(value) else f"{value:.3f}",
        )
    ]
    if "stall" in agents and "scripted" in agents:
        gap = agents["scripted"]["return"] - agents["stall"]["return"]
        found.append(
            (
                f"stall return <= scripted - {stall_gap:g}",
                gap >= stall_gap - 1e-12 if result["has_ask"] else None,
                f"gap {gap:+.3f}"
                + _gap_interval(agents["scripted"], agents["stall"])
                + ("" if result["has_ask"] else " (success needs no ask)"),
            )
        )
    wins = result["s_success"]
    found.append(
        (
            f"s at success in 1 +- {s_tol:g}",
            all(abs(s - 1.0) <= s_tol + 1e-9 for s in wins) if wins else None,
            f"range [{min(wins):.3f}, {max(wins):.3f}] over {len(wins)}" if wins else "no success",
        )
    )
    found.append(
        (f"no s > {1 + s_tol:g}", result["s_max"] <= 1 + s_tol + 1e-9, f"max {result['s_max']:.3f}")
    )
    user = result["user"]
    if user:
        rational = user["rational"]["return"]
        for policy in USER_POLICIES[1:]:
            other = user[policy]["return"]
            # A policy that never refused where the simulator would not have played the
            # simulator's own game: equal returns say nothing about blind resistance.
            never = user[policy]["deviations"] == 0
            found.append(
                (
                    f"rational r_U > {policy}",
                    None if never else rational > other,
                    f"{rational:+.3f} vs {other:+.3f}"
                    + (" (never deviated from the simulator)" if never else ""),
                )
            )
        qs = [q for row in user.values() for q in row["q_resolved_refusals"]]
        flagged = sum(q == -1 for q in qs)
        found.append(
            (
                "refusals once resolved get q = -1",
                flagged == len(qs) if qs else None,
                f"{flagged}/{len(qs)}",
            )
        )
    return found


def _gap_interval(scripted: dict[str, Any], stall: dict[str, Any]) -> str:
    """`` [low, high]``: the 95 % paired-bootstrap CI of the return gap over the episodes.

    Both agents play the same seeds, so the per-episode differences are resampled (the
    verdict stays on the point estimate; the interval says how far it could move with other
    seeds). Empty when a row has no per-episode returns (a result from an older run).
    """
    a, b = scripted.get("returns"), stall.get("returns")
    if not a or not b or len(a) != len(b):
        return ""
    diff = paired_bootstrap_diff(a, b)
    return f" [{diff.low:+.3f}, {diff.high:+.3f}]"


def _fmt(x: float, sign: bool = False) -> str:
    if math.isnan(x):
        return "-"
    return f"{x:+.3f}" if sign else f"{x:.3f}"


def report(result: dict[str, Any], found: list[tuple[str, bool | None, str]]) -> str:
    """The printed block of one env: the agent table, the user seat and the checks."""
    lines = [
        f"== {result['env_id']} ({result['episodes']} episodes per agent) ==",
        f"{'agent':<12} {'SR':>5} {'Σγᵗr_S':>8} {'s@succ':>7} {'s@fail':>7} {'max s':>7}",
    ]
    for row in result["agents"].values():
        lines.append(
            f"{row['agent']:<12} {row['sr']:5.2f} {_fmt(row['return'], True):>8} "
            f"{_fmt(row['s_success']):>7} {_fmt(row['s_failure']):>7} {_fmt(row['s_max']):>7}"
        )
    if result["user"]:
        lines.append("user seat vs scripted:  policy                   SR   Σγᵗr_U  blind turns")
        for policy, row in result["user"].items():
            lines.append(
                f"{'':<24}{policy:<24} {row['sr']:4.2f} {_fmt(row['return'], True):>8} "
                f"{row['deviations']:>11}"
            )
    for criterion, passed, value in found:
        verdict = "n/a" if passed is None else ("PASS" if passed else "MISS")
        lines.append(f"  {verdict:<4}  {criterion:<42} {value}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Runs the benchmark; returns 1 when any check misses."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="*", help="env ids (default: every registered env)")
    parser.add_argument("--episodes", type=int, default=None, help="episodes per cell (100)")
    parser.add_argument("--seed", type=int, default=0, help="seed of episode 0")
    parser.add_argument("--encoder", default=None, help="encoder of every env (minilm)")
    parser.add_argument("--quick", action="store_true", help="smoke: 4 episodes, hashing")
    parser.add_argument("--auc", type=float, default=0.95, help="min pooled AUC")
    parser.add_argument("--stall-gap", type=float, default=0.15, help="min scripted-stall gap")
    parser.add_argument("--s-tol", type=float, default=0.02, help="tolerance on s = 1")
    args = parser.parse_args(argv)
    episodes = args.episodes or (4 if args.quick else 100)
    encoder = args.encoder or ("hashing" if args.quick else "minilm")
    if episodes < 1:
        parser.error("--episodes must be >= 1")
    try:  # one thread: small batches on shared cores
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover - the hashing encoder needs no torch
        pass
    envs = [spec(e).id for e in args.envs] if args.envs else sorted(registry)
    print(f"{episodes} seeded episodes per cell, encoder {encoder}", flush=True)
    misses = 0
    for env_id in envs:
        result = measure_env(
            env_id, episodes, args.seed, encoder, progress=lambda s: print(s, flush=True)
        )
        found = checks(result, args.auc, args.stall_gap, args.s_tol)
        misses += sum(passed is False for _, passed, _ in found)
        print(report(result, found), flush=True)
    print(f"\n{misses} check(s) missed" if misses else "\nevery check holds")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
