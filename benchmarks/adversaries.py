"""Can the embedded world be gamed? Every adversary against `scripted` on every registered env.

Runs each adversary of :mod:`dialogue_gym.testing.adversaries` (including the search-based
open-loop attacker, which first searches its fixed script against the env on training seeds
far from the evaluation seeds) and the project's ``scripted`` agent for ``--episodes`` seeded
episodes per env, then prints SR, AT, RCSR (and SL for negotiation) per cell and checks the
integrity targets of issue 13:

* hard envs: every adversary's SR is at most ``--ratio`` (0.5) of ``scripted``'s and never
  above it. On negotiation (CB), where any deal below the listing is a "success", the score
  that ranks buyers is SL (sale-to-list): there the adversary's SL must be at most
  ``--ratio`` of ``scripted``'s and its SR never above ``scripted``'s;
* soft envs: RCSR separates them: the paired-bootstrap 95 % CI of ``scripted``'s RCSR minus
  the adversary's (per-episode RC-success indicators, the same seeds on both sides) lies above
  0. The difference itself is printed, and ``--rcsr-gap`` (default 0) can demand a margin on
  top. Note what RCSR@8 can and cannot see: with the paper's τ_q = 0.70 over the prefix up to
  the success turn, one NOT_RATIONAL exchange is tolerated once τ_s ≥ 7, so an agreement the
  user gives without reason at exchange 7 or 8 after six rational exchanges still counts. The
  ``JSR`` column (successes whose deciding exchange the judge found rational) shows that part.

Each cell that misses is printed as MISS, and the exit status is 1 when any does.

    OMP_NUM_THREADS=1 python benchmarks/adversaries.py                 # 50 episodes, MiniLM
    python benchmarks/adversaries.py --envs P4G-hard CB-hard --episodes 20 --search-episodes 8

Torch runs with one thread (small batches on shared cores; see "Threads" in docs/environments.md).
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from dialogue_gym.env.registry import registry
from dialogue_gym.evaluation.run import evaluate
from dialogue_gym.metrics import paired_bootstrap_diff, rc_success_within
from dialogue_gym.testing.adversaries import ADVERSARIES


def _row(agent: str, env_id: str, args: argparse.Namespace) -> tuple[dict[str, float], list[float]]:
    """The summary of ``agent`` on ``env_id`` and its per-episode RC-success indicators."""
    kwargs = {}
    path = agent
    if agent in ADVERSARIES:
        path = f"dialogue_gym.testing.adversaries:{ADVERSARIES[agent].__name__}"
        if agent == "open_loop_search":
            kwargs = {
                "env_id": env_id,
                "train_episodes": args.search_episodes,
                "rounds": args.search_rounds,
                "candidates": args.search_candidates,
                "encoder": args.encoder,
            }
    result = evaluate(
        [path],
        [env_id],
        episodes=args.episodes,
        seed=args.seed,
        env_kwargs={"encoder": args.encoder},
        agent_kwargs=kwargs,
        progress=False,
    )
    records = sorted(result.records, key=lambda r: r["episode"])
    summary = dict(result.summaries[0])
    summary["jsr"] = sum(_justified(r) for r in records) / max(len(records), 1)
    return summary, [float(rc_success_within(r, 8)) for r in records]


def _justified(record: dict) -> bool:
    """Success whose deciding exchange the rationality judge found rational (q = +1)."""
    turn = record.get("success_turn")
    return bool(record.get("success")) and bool(turn) and record["q"][turn - 1] > 0


def main(argv: list[str] | None = None) -> int:
    """Runs the benchmark; returns 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="*", help="env ids (default: every registered env)")
    parser.add_argument(
        "--agents",
        nargs="*",
        default=list(ADVERSARIES),
        choices=list(ADVERSARIES),
        help="adversaries",
    )
    parser.add_argument("--episodes", type=int, default=50, help="evaluation episodes per cell")
    parser.add_argument("--seed", type=int, default=0, help="seed of evaluation episode 0")
    parser.add_argument("--encoder", default="minilm", help="encoder of every env")
    parser.add_argument("--search-episodes", type=int, default=20, help="attacker's train seeds")
    parser.add_argument("--search-rounds", type=int, default=2, help="coordinate-ascent passes")
    parser.add_argument("--search-candidates", type=int, default=24, help="lines per position")
    parser.add_argument("--ratio", type=float, default=0.5, help="max adversary/scripted SR")
    parser.add_argument(
        "--rcsr-gap", type=float, default=0.0, help="margin the soft RCSR CI must clear"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    envs = args.envs or sorted(registry)
    misses = 0
    header = (
        f"{'env':<18} {'agent':<18} {'SR':>5} {'AT':>5} {'RCSR':>5} {'JSR':>5} {'SL':>6}  check"
    )
    print(header)
    print("-" * len(header))
    for env_id in envs:
        start = time.perf_counter()
        base, base_rc = _row("scripted", env_id, args)
        hard = "-hard" in env_id
        sl_base = base.get("sl")
        print(
            f"{env_id:<18} {'scripted':<18} {base['sr']:5.2f} {base['at']:5.2f} "
            f"{base['rcsr']:5.2f} {base['jsr']:5.2f} {'' if sl_base is None else f'{sl_base:6.3f}'}"
        )
        for agent in args.agents:
            row, row_rc = _row(agent, env_id, args)
            sl = row.get("sl")
            if hard and sl is not None and sl_base is not None:
                ok = sl <= args.ratio * sl_base + 1e-9 and row["sr"] <= base["sr"] + 1e-9
                check = f"SL <= {args.ratio:g}x scripted" + ("" if ok else "  MISS")
            elif hard:
                ok = row["sr"] <= args.ratio * base["sr"] + 1e-9
                check = f"SR <= {args.ratio:g}x scripted" + ("" if ok else "  MISS")
            else:
                diff = paired_bootstrap_diff(base_rc, row_rc, seed=args.seed)
                ok = diff.low > args.rcsr_gap
                check = f"RCSR diff {diff.mean:+.2f} [{diff.low:+.2f}, {diff.high:+.2f}]" + (
                    "" if ok else "  MISS"
                )
            misses += not ok
            print(
                f"{'':<18} {agent:<18} {row['sr']:5.2f} {row['at']:5.2f} {row['rcsr']:5.2f} "
                f"{row['jsr']:5.2f} "
                f"{'' if sl is None else f'{sl:6.3f}'}  {check}"
            )
        print(f"  ({time.perf_counter() - start:.0f} s)", flush=True)
    print(f"\n{misses} cell(s) missed" if misses else "\nevery cell holds")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
