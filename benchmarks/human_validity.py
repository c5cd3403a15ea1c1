"""Validated against people: human replay of the held-out corpora through the embedded world.

For each env (issue 15, item 1) the held-out real dialogues are replayed with each user pinned
to the persona / listing built from that very dialogue (:mod:`dialogue_gym.validity`):

* P4G-soft / P4G-hard — P4G ``valid,test`` (the 20 % of dialogues P4G's id hash holds out);
  real success = donated (``B6`` > 0), amount = the donation;
* ESConv-soft / ESConv-hard — ESConv HF ``valid,test`` plus ``FailedESConv.json``; real
  success = improved (emotion intensity fell), amount = the fall;
* CB-soft / CB-hard — CraigslistBargain HF ``valid`` (the only split with the offer / accept /
  reject acts; the test export has none); real success = deal, amount = buyer utility.

Every figure is printed with its bootstrap 95 % interval and n, next to a *text-only
reference* (bag-of-words logistic regression on the same inputs: the replayed system turns for
the replay cells, all real user turns for the judge cells) and the issue's target, MET or
MISSED. Next to human replay stand ``scripted`` and ``random`` on the same users, closed loop
and open loop (their turns said to another user in the same situation, replayed as the human
turns are: what replay itself costs an agent that listens; docs/validity.md, "Open loop").
This benchmark is the measuring instrument, not a gate (exit status 0 unless something fails
to run).

    OMP_NUM_THREADS=1 python benchmarks/human_validity.py                  # MiniLM, all 6 envs
    python benchmarks/human_validity.py --envs P4G-hard --limit 50 --out runs/validity
    python benchmarks/human_validity.py --quick                            # smoke: hashing, 8 each

``--limit N`` validates N dialogues per env, a deterministic sample by id hash (the splits stay
mixed). ``--workers 2`` runs envs in parallel processes. Corpora are read from ``--data``
(default ``$DIALOGUE_GYM_DATA``, else ``../shared/datasets``).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

HELD_OUT = {"P4G": "valid,test", "ESConv": "valid,test,failed", "CB": "valid"}
ENVS = ("P4G-soft", "P4G-hard", "ESConv-soft", "ESConv-hard", "CB-soft", "CB-hard")


def _default_data() -> Path:
    env = os.environ.get("DIALOGUE_GYM_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "datasets"


def run_env(env_id: str, args: argparse.Namespace) -> dict[str, Any]:
    """Validates one env (in a worker process with ``--workers`` > 1)."""
    try:  # one torch thread: small batches on shared cores
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover - the hashing encoder needs no torch
        pass
    from dialogue_gym.validity import validate

    task = env_id.split("-")[0]
    started = time.monotonic()
    result = validate(
        env_id,
        args.data,
        split=HELD_OUT[task],
        limit=args.limit,
        encoder=args.encoder,
        seed=args.seed,
        n_resamples=args.resamples,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
    )
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


def main(argv: list[str] | None = None) -> int:
    """Runs the benchmark and prints every cell; 0 when every env ran."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="*", default=list(ENVS), help="env ids (default: all 6)")
    parser.add_argument("--data", type=Path, default=_default_data(), help="data root")
    parser.add_argument("--limit", type=int, default=None, help="dialogues per env (all)")
    parser.add_argument("--encoder", default=None, help="encoder (minilm; hashing with --quick)")
    parser.add_argument("--seed", type=int, default=0, help="seed of episode 0")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples")
    parser.add_argument("--workers", type=int, default=1, help="envs validated in parallel")
    parser.add_argument("--out", type=Path, default=None, help="write <env>.json files here")
    parser.add_argument("--quick", action="store_true", help="smoke: hashing, 8 per env")
    args = parser.parse_args(argv)
    if args.quick:
        args.limit = args.limit or 8
        args.encoder = args.encoder or "hashing"
        args.resamples = min(args.resamples, 200)
    args.encoder = args.encoder or "minilm"
    unknown = [e for e in args.envs if e.split("-")[0] not in HELD_OUT]
    if unknown:
        parser.error(f"no held-out corpus for {unknown}; choose from {list(ENVS)}")
    from dialogue_gym.validity import format_report

    print(
        f"human replay validity: encoder {args.encoder}, "
        f"{'all' if args.limit is None else args.limit} held-out dialogues per env, "
        f"{args.resamples} bootstrap resamples, data {args.data}",
        flush=True,
    )
    results: dict[str, dict[str, Any]] = {}

    def show(env_id: str, result: dict[str, Any]) -> None:
        # Each env is printed (and written) as soon as it is done.
        results[env_id] = result
        print()
        format_report(result)
        print(f"   ({result['seconds']} s)", flush=True)
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"{env_id}.json").write_text(json.dumps(result, indent=1, sort_keys=True))

    if args.workers > 1:
        with concurrent.futures.ProcessPoolExecutor(args.workers) as pool:
            futures = {pool.submit(run_env, env_id, args): env_id for env_id in args.envs}
            for future in concurrent.futures.as_completed(futures):
                show(futures[future], future.result())
    else:
        for env_id in args.envs:
            show(env_id, run_env(env_id, args))
    missed = sum(cell["met"] is False for r in results.values() for cell in r["cells"].values())
    met = sum(cell["met"] is True for r in results.values() for cell in r["cells"].values())
    print(f"\ntargets: {met} met, {missed} missed (docs/validity.md says which and why)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
