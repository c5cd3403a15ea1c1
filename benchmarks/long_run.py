"""A long evaluation in flat memory with constant open files (issue 16).

Plays ``--episodes`` episodes (default 20,000) of ``scripted`` on ``P4G-hard`` with the
hashing encoder (env and agent), as ``dialogue-gym eval --out DIR`` does (records appended
to ``episodes.jsonl``, metric-only records in memory), and prints the resident memory (RSS)
and the number of open file descriptors at the start, at the end and at their peak (sampled
every second), from ``/proc/self``. The start is measured after a short warm-up run
(``--warmup`` episodes, nothing written) has loaded what every run loads once. PASS when the
end RSS is at most the start RSS + 50 MiB and the open descriptors at the end equal those at
the start.

Run (Linux)::

    OMP_NUM_THREADS=1 python benchmarks/long_run.py                  # 20,000 episodes
    OMP_NUM_THREADS=1 python benchmarks/long_run.py --episodes 500   # a quick check

Exit status 0 on PASS, 1 on FAIL.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from dialogue_gym.evaluation.run import EPISODES_FILE, evaluate

MIB = 1024 * 1024
RSS_BUDGET = 50 * MIB
"""Allowed RSS growth from start to end."""


def rss_bytes() -> int:
    """Resident set size of this process, from ``/proc/self/statm``."""
    with open("/proc/self/statm", encoding="ascii") as handle:
        resident_pages = int(handle.read().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def open_fds() -> int:
    """Open file descriptors of this process, from ``/proc/self/fd``."""
    return len(os.listdir("/proc/self/fd"))


class Sampler:
    """Samples RSS and open descriptors in a background thread; keeps the peaks."""

    def __init__(self, every: float = 1.0) -> None:
        self.every = every
        self.peak_rss = rss_bytes()
        self.peak_fds = open_fds()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.peak_rss = max(self.peak_rss, rss_bytes())
            self.peak_fds = max(self.peak_fds, open_fds())

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the benchmark; returns 0 on PASS, 1 on FAIL."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=20_000, help="episodes to play")
    parser.add_argument("--env", default="P4G-hard", help="env id (default: P4G-hard)")
    parser.add_argument("--agent", default="scripted", help="agent (default: scripted)")
    parser.add_argument("--warmup", type=int, default=50, help="warm-up episodes (default: 50)")
    parser.add_argument("--out", type=Path, default=None, help="run folder (default: a temp one)")
    args = parser.parse_args(argv)
    if not Path("/proc/self/statm").exists():
        print("long_run: needs Linux /proc", file=sys.stderr)
        return 1

    settings = {
        "env_kwargs": {"encoder": "hashing"},
        "agent_kwargs": {"encoder": "hashing"} if args.agent == "scripted" else {},
        "progress": False,
    }
    # Warm up what every run loads once (encoder, card, agent, caches) before measuring.
    if args.warmup:
        evaluate(args.agent, args.env, episodes=args.warmup, seed=10**9, **settings)
    with tempfile.TemporaryDirectory(prefix="dg-long-run-") as scratch:
        out = args.out or Path(scratch) / "run"
        start_rss, start_fds = rss_bytes(), open_fds()
        print(f"start: RSS {start_rss / MIB:.1f} MiB, open fds {start_fds}", flush=True)
        began = time.perf_counter()
        with Sampler() as sampler:
            result = evaluate(
                args.agent,
                args.env,
                episodes=args.episodes,
                out=out,
                keep_records=False,  # what `dialogue-gym eval` does
                **settings,
            )
        seconds = time.perf_counter() - began
        end_rss, end_fds = rss_bytes(), open_fds()
        lines = (out / EPISODES_FILE).read_bytes().count(b"\n")
        (row,) = result.summaries
    print(f"end:   RSS {end_rss / MIB:.1f} MiB, open fds {end_fds}")
    print(f"peak:  RSS {sampler.peak_rss / MIB:.1f} MiB, open fds {sampler.peak_fds}")
    print(
        f"{lines:,} episodes recorded in {seconds:.0f} s ({seconds / max(lines, 1) * 1e3:.1f} ms "
        f"each); SR {row['sr']:.3f}, errored {row['n_errored']}"
    )
    growth = end_rss - start_rss
    ok_rss = growth <= RSS_BUDGET
    ok_fds = end_fds == start_fds
    ok_count = lines == args.episodes
    print(
        f"RSS growth {growth / MIB:+.1f} MiB (budget {RSS_BUDGET / MIB:.0f} MiB): "
        f"{'ok' if ok_rss else 'TOO MUCH'}; open fds {start_fds} -> {end_fds}: "
        f"{'constant' if ok_fds else 'LEAKED'}; records {lines} of {args.episodes}"
    )
    passed = ok_rss and ok_fds and ok_count
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
