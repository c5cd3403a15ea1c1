"""LLM-judged evaluation throughput at concurrency 1, 8 and 32, and replay speed.

A project-written OpenAI-compatible test server on 127.0.0.1 answers every chat completion
after an injected latency (100 ms by default), like a remote model. A P4G-hard evaluation of
the scripted agent with the LLM success judge (3 sampled votes) and the LLM rationality judge
runs at each concurrency N — N episodes at once, sharing one backend that keeps at most N
requests in flight (so concurrency 1 is one request at a time, the three votes included); the
speedups over concurrency 1 are printed (target: at least 0.8 × the concurrency, i.e. >= 25×
at 32). These timed runs use no cache; a further run at the highest concurrency records every
call into a SQLite cache, and a replay-only rerun then makes zero requests (target: >= 50×
faster than the live run).

``--num-envs N`` adds a timed run of the same evaluation on one vector env of N sub-envs
(``evaluate(num_envs=N)``: no threads; each step's judge requests of all N episodes go to the
backend as one batch of concurrent requests, at most N in flight).

Usage: ``python benchmarks/llm_eval_concurrency.py [--episodes 99] [--latency 0.1]
[--levels 1 8 32] [--num-envs 32]``
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from dialogue_gym.evaluation.run import evaluate
from dialogue_gym.testing.server import TestServer


def judge_reply(body: dict[str, Any]) -> str:
    """A deterministic stand-in judge: every exchange is rational and undecided.

    Episodes therefore run all 8 exchanges (3 success votes + 1 rationality call each), so
    every concurrency level makes the same calls.
    """
    prompt = "\n".join(m["content"] for m in body["messages"])
    return "RATIONAL" if "NOT_RATIONAL" in prompt else "neutral"


def run(
    episodes: int, concurrency: int, url: str, cache: Path, mode: str, num_envs: int = 1
) -> tuple[float, int]:
    """Returns the wall time and the number of errored episodes."""
    start = time.perf_counter()
    result = evaluate(
        "scripted",
        "P4G-hard",
        episodes=episodes,
        progress=False,
        concurrency=concurrency,
        num_envs=num_envs,
        env_kwargs={
            "judges": "llm",
            "backend": "openai:bench-judge",
            "backend_options": {"base_url": url, "max_concurrency": max(concurrency, num_envs)},
            "backend_cache": str(cache),
            "cache_mode": mode,
        },
    )
    return time.perf_counter() - start, sum(bool(r["errored"]) for r in result.records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=99)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument(
        "--num-envs", type=int, default=None, help="also time a vector-env run of N sub-envs"
    )
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark-not-a-secret")
    server = TestServer(replies=judge_reply, latency=args.latency)
    with server, tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "calls.sqlite"
        run(1, 1, server.url, Path(tmp) / "warmup.sqlite", "off")  # load the encoder once
        times = {}
        # Timed runs without the cache: every level makes every call (a recording run would
        # hit its own entries when two episodes ask the same question, and skip calls).
        for level in args.levels:
            before = server.request_count
            times[level], errored = run(args.episodes, level, server.url, cache, "off")
            calls = server.request_count - before
            print(
                f"concurrency {level:>3}: {times[level]:7.1f} s, {calls} calls, {errored} errored"
            )
        base = times[min(args.levels)]
        for level in args.levels:
            target = 0.8 * level
            print(f"speedup at {level:>3}: {base / times[level]:6.1f}x  (target >= {target:.1f}x)")
        if args.num_envs:
            before = server.request_count
            took, errored = run(args.episodes, 1, server.url, cache, "off", args.num_envs)
            print(
                f"vector env, num_envs {args.num_envs}: {took:7.1f} s, "
                f"{server.request_count - before} calls, {errored} errored; "
                f"{base / took:.1f}x concurrency {min(args.levels)}"
            )
        top = max(args.levels)
        before = server.request_count
        recorded, errored = run(args.episodes, top, server.url, cache, "rw")
        print(
            f"recording run (concurrency {top}, cache rw): {recorded:.1f} s, "
            f"{server.request_count - before} calls, {errored} errored"
        )
        before = server.request_count
        replay, errored = run(args.episodes, 1, server.url, cache, "replay")
        print(
            f"replay-only rerun (concurrency 1): {replay:.2f} s, "
            f"{server.request_count - before} requests, {errored} errored"
        )
        for level in args.levels:
            print(
                f"  {times[level] / replay:6.0f}x faster than the live run at concurrency {level}"
            )
        print("  (target >= 50x faster than live, with zero requests)")


if __name__ == "__main__":
    main()
