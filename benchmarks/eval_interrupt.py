"""Seconds from Ctrl-C to exit of ``dialogue-gym eval --concurrency 16`` on a slow endpoint.

A project-written OpenAI-compatible test server on 127.0.0.1 answers every chat completion
after ``--latency`` seconds (30 by default: a slow, overloaded endpoint). The command line
runs P4G-hard with ``--concurrency N`` (or, with ``--num-envs``, on a vector env of N
sub-envs: ``--num-envs N``) as a subprocess, in two set-ups:

* ``agent``: the LLM system agent (``openai:MODEL``): every worker's agent waits on its own
  request;
* ``judges``: the scripted agent with the LLM success and rationality judges: every worker's
  env waits on the pair's shared backend (``max_concurrency`` N), several votes per step.

Once N requests are in flight it sends SIGINT and measures the time until the process has
exited (target: at most 2 s; before issue 36 it waited for every request in flight). With
``--twice`` a second SIGINT follows 0.1 s after the first. Each set-up runs ``--repeats``
times; the exit status and any traceback or retry line on stderr are reported.

Usage: ``python benchmarks/eval_interrupt.py [--concurrency 16] [--latency 30] [--repeats 3]
[--twice] [--num-envs]``
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dialogue_gym.testing.server import TestServer

NOISE = ("Traceback", "Bad file descriptor", "retrying", "Exception ignored")


def command(setup: str, url: str, out: Path, concurrency: int, vector: bool = False) -> list[str]:
    """The ``eval`` command line of one set-up (``vector``: ``--num-envs N``)."""
    argv = [
        sys.executable,
        "-m",
        "dialogue_gym.cli.commands",
        "eval",
        "P4G-hard",
        "--encoder",
        "hashing",
    ]
    argv += ["--episodes", str(4 * concurrency)]
    argv += ["--num-envs" if vector else "--concurrency", str(concurrency)]
    argv += ["--out", str(out), "--no-progress"]
    if setup == "agent":
        return [*argv, "--agent", "openai:bench-model", "--base-url", url]
    options = f'{{"base_url": "{url}", "max_concurrency": {concurrency}}}'
    argv += ["--agent", "scripted", "--agent-option", "encoder=hashing"]
    argv += ["--env-option", "judges=llm", "--env-option", "backend=openai:bench-judge"]
    return [*argv, "--env-option", f"backend_options={options}"]


def stop_once(
    setup: str, concurrency: int, latency: float, twice: bool, vector: bool = False
) -> tuple[float, int, str]:
    """One run: the seconds from SIGINT to exit, the exit status and stderr."""
    with tempfile.TemporaryDirectory() as tmp, TestServer(latency=latency) as server:
        env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "OMP_NUM_THREADS": "1"}
        proc = subprocess.Popen(
            command(setup, server.url, Path(tmp) / "run", concurrency, vector),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        deadline = time.monotonic() + 300
        while server.in_flight < concurrency:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{setup}: the run never had {concurrency} requests in flight")
            time.sleep(0.01)
        signalled = time.monotonic()
        proc.send_signal(signal.SIGINT)
        if twice:
            time.sleep(0.1)
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        _, err = proc.communicate()
        return time.monotonic() - signalled, proc.returncode, err.decode()


def main() -> None:
    """Runs the benchmark and prints one line per set-up."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=30.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--twice", action="store_true", help="a second SIGINT after 0.1 s")
    parser.add_argument("--setups", nargs="+", default=["agent", "judges"])
    parser.add_argument(
        "--num-envs",
        action="store_true",
        help="play on a vector env of N sub-envs (--num-envs N) instead of N worker threads",
    )
    args = parser.parse_args()
    how = "--num-envs" if args.num_envs else "--concurrency"
    print(
        f"SIGINT -> exit, {how} {args.concurrency}, {args.latency:g} s per request"
        + (", second SIGINT after 0.1 s" if args.twice else "")
    )
    for setup in args.setups:
        runs = [
            stop_once(setup, args.concurrency, args.latency, args.twice, args.num_envs)
            for _ in range(args.repeats)
        ]
        times = [seconds for seconds, _, _ in runs]
        statuses = sorted({status for _, status, _ in runs})
        noise = sorted({word for _, _, err in runs for word in NOISE if word in err})
        print(
            f"{setup:<7} median {statistics.median(times):.2f} s, max {max(times):.2f} s "
            f"over {len(runs)} runs; exit status {statuses}; noise on stderr: {noise or 'none'}"
        )


if __name__ == "__main__":
    main()
