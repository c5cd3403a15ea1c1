"""Exchanges per second of N vectorized envs versus N independent envs, side by side.

For each N (1, 4, 16, 64 by default) this script measures, in one run:

1. **independent**: N lone ``dialogue_gym.make(env)`` envs stepped one after the other (each
   reset again as soon as its episode ends) — what code without vectorization does;
2. **vectorized**: ``dialogue_gym.env.vector.make_vec(env, N, autoreset_mode="same_step")`` stepped
   with the same actions (one batched encoding of the N utterances per step);

and prints both rates and their ratio (target: >= 3x at N = 16 on 2 cores), the encoder and
its engine, torch's thread count, the load average (other processes on the machine skew every
number: run it alone) and the peak RSS. Each side is timed ``--repeats`` times, the sides
interleaved, and the best rate of each is kept.

Actions are cheap and deterministic so that the env is what is measured: sub-env ``i`` says
one of the task card's strategy templates drawn by its own seeded NumPy generator, with a
numbered suffix that makes every utterance new (as an RL policy's or an LLM's fresh text would
be), so each exchange encodes one unseen utterance. Both sides get the same template draws;
episodes are seeded ``seed + i`` on both sides.

``--st-reference`` adds a third measurement: independent envs whose MiniLM encoder runs one
sentence-transformers call per text (the ``"sentence-transformers"`` engine, the cost of an
exchange before the packed engine).

Usage: ``python benchmarks/vector_throughput.py [--env P4G-hard] [--sizes 1 4 16 64]
[--exchanges 384] [--repeats 3] [--encoder minilm] [--st-reference]``
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import dialogue_gym
from dialogue_gym.cards.card import TaskCard
from dialogue_gym.env.vector import make_vec
from dialogue_gym.mind.encoders import CachedEncoder, MiniLMEncoder


def action_streams(card: TaskCard, n: int, seed: int, tag: str) -> Iterator[list[str]]:
    """Yields one list of N fresh utterances per step (templates drawn per sub-env)."""
    templates = [t for s in card.strategies for t in s.templates]
    rngs = [np.random.default_rng([seed, i]) for i in range(n)]
    step = 0
    while True:
        step += 1
        yield [
            f"{templates[int(rng.integers(len(templates)))]} (ref {tag}{step}.{i})"
            for i, rng in enumerate(rngs)
        ]


def independent_player(
    env_id: str, n: int, seed: int, tag: str, **kwargs: Any
) -> Callable[[int], None]:
    """N lone envs, stepped one by one (each reset as soon as its episode ends)."""
    envs = [dialogue_gym.make(env_id, **kwargs) for _ in range(n)]
    for i, env in enumerate(envs):
        env.reset(seed=seed + i)
    actions = action_streams(envs[0].card, n, seed, tag)

    def play(steps: int) -> None:
        for _ in range(steps):
            for env, text in zip(envs, next(actions), strict=True):
                env.step({"system": text})
                if not env.agents:
                    env.reset()

    return play


def vectorized_player(
    env_id: str, n: int, seed: int, tag: str, **kwargs: Any
) -> Callable[[int], None]:
    """One vector env of N sub-envs (same-step autoreset: every step is N exchanges)."""
    vec = make_vec(env_id, n, autoreset_mode="same_step", **kwargs)
    vec.reset(seed=seed)
    actions = action_streams(vec.card, n, seed, tag)

    def play(steps: int) -> None:
        for _ in range(steps):
            vec.step(next(actions))

    return play


def rate(play: Callable[[int], None], n: int, steps: int) -> float:
    """Exchanges per second of ``steps`` steps of ``play``."""
    start = time.perf_counter()
    play(steps)
    return n * steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="P4G-hard")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument(
        "--exchanges", type=int, default=384, help="exchanges per measurement (at least)"
    )
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3, help="interleaved timings; best kept")
    parser.add_argument(
        "--st-reference",
        action="store_true",
        help="also measure independent envs on the one-call-per-text sentence-transformers engine",
    )
    args = parser.parse_args()

    import torch

    probe = dialogue_gym.make(args.env, encoder=args.encoder)
    inner = getattr(probe.encoder, "inner", probe.encoder)
    engine = getattr(inner, "engine", "-")
    st_encoder = None
    if args.st_reference:
        st_encoder = CachedEncoder(MiniLMEncoder(engine="sentence-transformers"))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"{args.env}, encoder {probe.encoder.name} (engine {engine}), torch threads "
        f"{torch.get_num_threads()}, {os.cpu_count()} CPUs, load average {load}"
    )
    columns = ["N", "exchanges", "independent ex/s", "vectorized ex/s", "ratio"]
    if st_encoder is not None:
        columns += ["independent(st) ex/s", "vec/indep(st)"]
    print("  ".join(f"{c:>{max(9, len(c))}}" for c in columns))
    for n in args.sizes:
        steps = max(3, math.ceil(args.exchanges / n))
        players = {
            "independent": independent_player(args.env, n, args.seed, "i", encoder=args.encoder),
            "vectorized": vectorized_player(args.env, n, args.seed, "v", encoder=args.encoder),
        }
        if st_encoder is not None:
            players["st"] = independent_player(args.env, n, args.seed, "s", encoder=st_encoder)
        for play in players.values():
            play(2)  # warm-up: first BDI texts, lazy initialization
        # Interleaved repeats, best of each: bursts of other load hit both sides alike.
        best = dict.fromkeys(players, 0.0)
        for _ in range(args.repeats):
            for name, play in players.items():
                best[name] = max(best[name], rate(play, n, steps))
        row = [n, n * steps, best["independent"], best["vectorized"]]
        row.append(best["vectorized"] / best["independent"])
        if st_encoder is not None:
            row += [best["st"], best["vectorized"] / best["st"]]
        cells = []
        for column, value in zip(columns, row, strict=True):
            width = max(9, len(column))
            text = f"{value:.2f}" if column in ("ratio", "vec/indep(st)") else f"{value:.1f}"
            cells.append(f"{value:>{width}}" if isinstance(value, int) else f"{text:>{width}}")
        print("  ".join(cells), flush=True)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"target: vectorized/independent >= 3x at N = 16 on 2 cores; load average now {load}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
