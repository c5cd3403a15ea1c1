"""Env throughput on every hard env: the static encoder versus MiniLM, and MiniLM versus raw.

The env must add little beyond the one unavoidable encoding per system utterance, and
``encoder="static"`` (a model2vec table distilled from MiniLM) must make that encoding cheap.
This script measures, side by side in one run:

1. the system utterances of N seeded episodes of the ``scripted`` agent (recorded first, with
   MiniLM), each made unique with a numbered suffix so that no utterance is ever a cache hit —
   the worst case, and what an LLM agent's fresh text costs;
2. the env replaying exactly those actions (same seeds) once per encoder (``--encoders``,
   default MiniLM and static) — exchanges per second of the env alone, agent excluded (the
   BDI texts and prototypes it re-encodes are cached, as in real use). The encoders take
   turns per env (``--repeats`` rounds, best round kept) so a change of machine load hits both;
3. raw sentence-transformers MiniLM encoding of the same utterances one at a time (the one
   unavoidable encoding per exchange) and batched;
4. the ratios env / raw one-at-a-time (target ≥ 0.5) and static / MiniLM env exchanges/s
   (target ≥ 20), and the process's peak RSS.

A replayed episode stops where its env ends it, so the two encoders' users may end an episode
at different exchanges; the rates are per exchange. The first use of ``static`` builds its
cached model (once per machine, before any timing).

Usage: ``OMP_NUM_THREADS=1 python benchmarks/env_throughput.py [--episodes 100] [--env P4G-hard
...] [--encoders minilm static]``
"""

from __future__ import annotations

import argparse
import resource
import time

import dialogue_gym
from dialogue_gym.evaluation.agents import make_agent
from dialogue_gym.mind.encoders import MiniLMEncoder, make_encoder

TARGET_ENV_RAW = 0.5
TARGET_STATIC = 20.0


def record_actions(env_id: str, episodes: int) -> list[list[str]]:
    env = dialogue_gym.make(env_id, encoder="minilm")
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


def replay(env_id: str, runs: list[list[str]], encoder: str, round_: int) -> tuple[float, int]:
    """Seconds and exchanges of the env replaying ``runs`` (suffixed anew per round and encoder)."""
    env = dialogue_gym.make(env_id, encoder=encoder)
    exchanges = 0
    start = time.perf_counter()
    for seed, actions in enumerate(runs):
        env.reset(seed=seed)
        for action in actions:
            if not env.agents:  # the suffix may end an episode differently; never step past it
                break
            # Each replay gets its own suffix: no replay reads text that the recording or
            # another replay left in a cache (the encoders' rows, the parsed prices).
            env.step({"system": f"{action} [{encoder} {round_}]"})
            exchanges += 1
    return time.perf_counter() - start, exchanges


def measure(
    env_id: str, episodes: int, raw: MiniLMEncoder, encoders: list[str], repeats: int
) -> dict[str, float]:
    """Runs the measurements for one env id; returns rates and ratios."""
    t0 = time.perf_counter()
    runs = record_actions(env_id, episodes)
    out: dict[str, float] = {"end_to_end_s": time.perf_counter() - t0}
    best: dict[str, float] = {}
    for round_ in range(repeats):
        for name in encoders:
            env_s, exchanges = replay(env_id, runs, name, round_)
            best[name] = max(best.get(name, 0.0), exchanges / env_s)
            out[f"exchanges_{name}"] = exchanges
    for name in encoders:
        out[name] = best[name]
    utterances = [a for run in runs for a in run]
    start = time.perf_counter()
    for text in utterances:
        raw.encode([text])
    raw_single_s = time.perf_counter() - start
    start = time.perf_counter()
    raw.encode(utterances)
    raw_batch_s = time.perf_counter() - start
    out["raw"] = len(utterances) / raw_single_s
    out["raw_batched"] = len(utterances) / raw_batch_s
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument(
        "--env", action="append", help="env id (repeatable); default: every *-hard env"
    )
    parser.add_argument(
        "--encoders",
        nargs="+",
        default=["minilm", "static"],
        help="encoders to replay with (default: minilm static)",
    )
    parser.add_argument("--repeats", type=int, default=1, help="replay rounds per encoder")
    args = parser.parse_args()
    env_ids = args.env or sorted(i for i in dialogue_gym.registry if "-hard-" in i)
    for name in args.encoders:
        make_encoder(name).encode(["warm-up"])  # builds the static model here, not in a timing
    raw = MiniLMEncoder()
    raw.encode(["warm-up"])
    encoders = list(args.encoders)
    print(
        f"{args.episodes} episodes of the scripted agent per env, replayed; novel utterances; "
        f"best of {args.repeats} round(s)"
    )
    rates = " ".join(f"{name[:10] + ' ex/s':>15}" for name in encoders)
    header = (
        f"{'env':<18} {'exchanges':>9} {'agent+env s':>11} {rates} {'raw/s':>7} {'raw batch/s':>11}"
    )
    if "minilm" in encoders:
        header += f" {'minilm/raw':>10}"
    if {"minilm", "static"} <= set(encoders):
        header += f" {'static/minilm':>13}"
    print(header)
    print("-" * len(header))
    ratios = []
    for env_id in env_ids:
        m = measure(env_id, args.episodes, raw, encoders, args.repeats)
        cells = " ".join(f"{m[name]:>15.1f}" for name in encoders)
        line = (
            f"{env_id:<18} {m[f'exchanges_{encoders[0]}']:>9.0f} {m['end_to_end_s']:>11.1f} "
            f"{cells} {m['raw']:>7.1f} {m['raw_batched']:>11.1f}"
        )
        if "minilm" in encoders:
            line += f" {m['minilm'] / m['raw']:>10.2f}"
        if {"minilm", "static"} <= set(encoders):
            ratios.append(m["static"] / m["minilm"])
            flag = "" if ratios[-1] >= TARGET_STATIC else "  MISS"
            line += f" {ratios[-1]:>12.1f}x{flag}"
        print(line, flush=True)
    print(f"targets: minilm/raw >= {TARGET_ENV_RAW} (the env adds little beyond one encoding)")
    if ratios:
        print(
            f"         static/minilm >= {TARGET_STATIC:.0f}x on every hard env: "
            f"{'met' if min(ratios) >= TARGET_STATIC else 'NOT met'} "
            f"(min {min(ratios):.1f}x, max {max(ratios):.1f}x)"
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
