"""What can a policy over a discrete interface reach? Its floor, fixed-sequence line and ceiling.

For each hard env and each discrete view (``concern``: :class:`ConcernActions`, the listening
moves; ``strategy``: :class:`StrategyActions`, the paper's strategies), on the same evaluation
seeds:

* ``random`` — a uniformly random action each exchange (seeded);
* ``fixed best`` — the best single action sequence found by coordinate ascent on training
  seeds (``--train-seed``), then played on the evaluation seeds: a learner must beat it to show
  it learned to listen rather than found one good action;
* ``ceiling`` — a clairvoyant beam search per evaluation episode (it replays the episode to see
  outcomes): what the interface allows at best;
* ``scripted`` — the hand-written text agent, for scale.

On a negotiation (``CB-hard``: price moves on the concern view) the fixed sequence is searched
for its buyer utility and its SL is printed under the row.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/interface_bounds.py --envs P4G-hard --episodes 20

1 torch thread; the static encoder by default (what the planner trains on); ``--encoder minilm``
for the evaluation encoder (about 3x slower).
"""

from __future__ import annotations

import argparse
import time

import dialogue_gym
from dialogue_gym.env.wrappers import ConcernActions, StrategyActions
from dialogue_gym.testing.move_search import interface_lines, scripted_rate

HARD = ("P4G-hard", "ESConv-hard", "ED-hard", "Merchant-hard", "Courier-hard")
VIEWS = {"concern": ConcernActions, "strategy": StrategyActions}


def _bounds(env_id: str, view: str, args: argparse.Namespace) -> dict[str, float]:
    env = VIEWS[view](dialogue_gym.make(env_id, encoder=args.encoder))
    test = range(args.seed, args.seed + args.episodes)
    train = range(args.train_seed, args.train_seed + args.train_episodes)
    started = time.perf_counter()
    row, fixed = interface_lines(env, test, train, width=args.width, rounds=args.rounds)
    row["seconds"] = time.perf_counter() - started
    names = getattr(env, "strategy_names", ())
    print(f"  {env_id} {view}: fixed sequence {[names[a] for a in fixed]}", flush=True)
    env.close()
    return row


def main() -> int:
    """Prints the bounds table; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--envs", nargs="+", default=list(HARD))
    parser.add_argument("--views", nargs="+", choices=sorted(VIEWS), default=sorted(VIEWS))
    parser.add_argument("--episodes", type=int, default=20, help="evaluation episodes")
    parser.add_argument("--seed", type=int, default=0, help="first evaluation seed")
    parser.add_argument("--train-episodes", type=int, default=20)
    parser.add_argument("--train-seed", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2, help="coordinate-ascent passes")
    parser.add_argument(
        "--width", type=int, default=8, help="beam width of the ceiling (0: leave it out)"
    )
    parser.add_argument("--encoder", default="static")
    args = parser.parse_args()
    print(f"{'env':<15}{'view':<10}{'random':>8}{'fixed':>8}{'ceiling':>9}{'scripted':>10}{'s':>7}")
    for env_id in args.envs:
        rate = scripted_rate(env_id, args.episodes, args.seed, args.encoder)
        for view in args.views:
            try:
                row = _bounds(env_id, view, args)
            except ValueError as error:  # a view the task has no moves for (negotiation)
                print(f"{env_id:<15}{view:<10} skipped: {error}")
                continue
            print(
                f"{env_id:<15}{view:<10}{row['random']:>8.2f}{row['fixed best']:>8.2f}"
                f"{row.get('ceiling', float('nan')):>9.2f}{rate:>10.2f}{row['seconds']:>7.0f}",
                flush=True,
            )
            if "fixed best SL" in row:  # a negotiation: the sequence was searched by SL
                print(f"{'':<25}fixed best SL {row['fixed best SL']:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
