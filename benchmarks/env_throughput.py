"""Env throughput on P4G-hard versus raw MiniLM encoding of the same utterances.

The env must add little beyond the one unavoidable encoding per system utterance. This script
measures, side by side in one run:

1. the system utterances of N seeded episodes of the ``scripted`` agent (recorded first), each
   made unique with a numbered suffix so that no utterance is ever a cache hit — the worst
   case, and what an LLM agent's fresh text costs;
2. the env replaying exactly those actions (same seeds) — exchanges per second of the env alone,
   agent excluded (the BDI texts and prototypes it re-encodes are cached, as in real use);
3. raw sentence-transformers MiniLM encoding of the same utterances one at a time (the one
   unavoidable encoding per exchange) and batched;
4. the ratio env / raw one-at-a-time (target ≥ 0.5) and the process's peak RSS.

It runs for every registered ``*-hard`` env (or the ``--env`` ids given).

Usage: ``python benchmarks/env_throughput.py [--episodes 100] [--env P4G-hard ...]``
"""

from __future__ import annotations

import argparse
import resource
import time

import dialogue_gym
from dialogue_gym.agents import make_agent
from dialogue_gym.mind.encoders import MiniLMEncoder


def record_actions(env_id: str, episodes: int) -> list[list[str]]:
    env = dialogue_gym.make(env_id)
    agent = make_agent("scripted", card=env.card)
    runs = []
    for seed in range(episodes):
        obs, _ = env.reset(seed=seed)
        agent.reset(seed=seed)
        actions: list[str] = []
        while env.agents:
            actions.append(agent.act(obs["system"]))
            obs, *_ = env.step({"system": actions[-1]})
        runs.append(actions)
    counter = 0
    unique_runs = []
    for actions in runs:
        unique_runs.append([f"{a} (ref {counter + i})" for i, a in enumerate(actions)])
        counter += len(actions)
    return unique_runs


def replay(env_id: str, runs: list[list[str]]) -> tuple[float, int]:
    env = dialogue_gym.make(env_id)
    exchanges = 0
    start = time.perf_counter()
    for seed, actions in enumerate(runs):
        env.reset(seed=seed)
        for action in actions:
            if not env.agents:  # the suffix may end an episode differently; never step past it
                break
            env.step({"system": action})
            exchanges += 1
    return time.perf_counter() - start, exchanges


def measure(env_id: str, episodes: int, raw: MiniLMEncoder) -> dict[str, float]:
    """Runs the three measurements for one env id; returns rates and the ratio."""
    t0 = time.perf_counter()
    runs = record_actions(env_id, episodes)
    record_s = time.perf_counter() - t0
    env_s, exchanges = replay(env_id, runs)
    utterances = [a for run in runs for a in run]
    start = time.perf_counter()
    for text in utterances:
        raw.encode([text])
    raw_single_s = time.perf_counter() - start
    start = time.perf_counter()
    raw.encode(utterances)
    raw_batch_s = time.perf_counter() - start
    env_rate = exchanges / env_s
    raw_rate = len(utterances) / raw_single_s
    return {
        "exchanges": exchanges,
        "end_to_end_s": record_s,
        "env": env_rate,
        "raw": raw_rate,
        "raw_batched": len(utterances) / raw_batch_s,
        "ratio": env_rate / raw_rate,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument(
        "--env", action="append", help="env id (repeatable); default: every *-hard env"
    )
    args = parser.parse_args()
    env_ids = args.env or sorted(i for i in dialogue_gym.registry if "-hard-" in i)
    raw = MiniLMEncoder()
    raw.encode(["warm-up"])
    print(f"{args.episodes} episodes of the scripted agent per env; novel utterances")
    header = (
        f"{'env':<18} {'exchanges':>9} {'agent+env s':>11} {'env ex/s':>9} "
        f"{'raw/s':>7} {'raw batch/s':>11} {'env/raw':>7}"
    )
    print(header)
    print("-" * len(header))
    for env_id in env_ids:
        m = measure(env_id, args.episodes, raw)
        print(
            f"{env_id:<18} {m['exchanges']:>9.0f} {m['end_to_end_s']:>11.1f} {m['env']:>9.1f} "
            f"{m['raw']:>7.1f} {m['raw_batched']:>11.1f} {m['ratio']:>7.2f}"
        )
    print("target: env/raw >= 0.5 (the env adds little beyond one encoding per utterance)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
