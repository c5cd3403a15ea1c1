"""The SI-AVPO claim at strategy level: SI-AVPO vs GRPO vs PPO, and the two ablations.

One run trains, for each task (Merchant, Courier) and each training seed (≥ 3), five
strategy-level policies with the **same budget** against the ``hard`` user:

* ``siavpo`` — L_AOPD + λ_st·L_STPR (``dialogue-gym train siavpo`` defaults);
* ``no-aopd`` — STPR only (student rollouts, no teacher view): the paper expects proactivity
  to drop;
* ``no-stpr`` — AOPD with outcome-only advantages (no Δw turn credit): the paper expects
  over-aggressive behaviour;
* ``grpo`` — outcome-reward GRPO (no AOPD, no turn credit; groups = rollouts of one seed);
* ``ppo`` — stable-baselines3 PPO on ``StrategyActions`` through the planner trainer
  (``dialogue-gym train planner --pretrain-epochs 0 --reward success``: 1 when the user
  accepts, the same outcome signal), given as many env steps (exchanges) as the ``siavpo``
  run of the same task and seed used.

The first four see ``iterations × seeds_per_iteration × group_size`` episodes each.

Each trained policy (deterministic, student view only) is then evaluated on held-out episode
seeds against the ``hard`` user and, for the generalization claim, against ``soft``,
``strict`` and ``lenient`` users (``dialogue_gym_agents.siavpo.users.user_preset``). Reported per
task × method, pooled over the training seeds, with 95% bootstrap CIs
(``dialogue_gym.metrics.bootstrap_ci``):

* **Acc** — acceptance rate = SR@T; **RCSR**; **AT**;
* **CSR** — share of the user's latent concerns resolved at the end;
* **proactivity** — share of the user's latent concerns addressed before the user voiced
  them (the env's ``proactivity``), and **proactive turns** — initiative-taking turns per
  dialogue that address an unvoiced concern or probe one into the open (``proactive_turns``);
* **aggression proxy** — ``pressure`` events per dialogue (the user perceived pressure: a
  pressure cue, or a request right after a refusal) and ``ask`` events (requests to enroll)
  per dialogue.

Paired bootstrap differences (same evaluation episodes) test the claims; the script prints
whether each measured direction agrees with the paper. Everything uses the fast hashing
encoder (the MiniLM encoder is ~60× slower per exchange); results differ from MiniLM runs.

Usage: ``python benchmarks/siavpo_claim.py [--seeds 0 1 2] [--iterations 40] [--out DIR]``
(17 min on 2 shared cores with the defaults, in our run).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

import dialogue_gym
from dialogue_gym import metrics
from dialogue_gym.cards.card import load_card
from dialogue_gym_agents.planner.train import PlannerConfig, train_planner
from dialogue_gym_agents.siavpo.config import SiavpoConfig
from dialogue_gym_agents.siavpo.train import train_siavpo
from dialogue_gym_agents.siavpo.users import user_preset

METHODS: dict[str, dict[str, Any]] = {
    "siavpo": {},
    "grpo": {"aopd": False, "turn_credit": False},
    "ppo": {},
    "no-aopd": {"aopd": False},
    "no-stpr": {"turn_credit": False},
}
PRESETS = ("hard", "soft", "strict", "lenient")
EVAL_SEED = 1_000_000  # evaluation episodes: seeds EVAL_SEED, EVAL_SEED + 1, ...
N_BOOT = 2_000

Record = Mapping[str, Any]


def _count(record: Record, event: str) -> float:
    return float(sum(events.count(event) for events in record.get("events", [])))


PER_EPISODE: dict[str, Callable[[Record, int], float]] = {
    "acc": lambda r, T: float(metrics.success_within(r, T)),
    "csr": lambda r, T: float(r.get("csr", 0.0)),
    "proactivity": lambda r, T: float(r.get("proactivity", 0.0)),
    "proactive_turns": lambda r, T: float(r.get("proactive_turns", 0)),
    "pressure": lambda r, T: _count(r, "pressure"),
    "asks": lambda r, T: _count(r, "ask"),
    "rcsr": lambda r, T: float(metrics.rc_success_within(r, T)),
    "at": lambda r, T: float(metrics.turns_to_success(r, T)),
}


def train_all(
    task: str, seed: int, args: argparse.Namespace, root: Path
) -> tuple[dict[str, str], dict[str, float]]:
    """Trains the five methods for one task and seed; returns agent specs and train seconds."""
    specs: dict[str, str] = {}
    seconds: dict[str, float] = {}
    steps = 0
    for method, overrides in METHODS.items():
        out = root / f"{task}-{method}-s{seed}"
        start = time.perf_counter()
        if method == "ppo":
            config = PlannerConfig(
                task=task,
                out=out,
                seed=seed,
                encoder=args.encoder,
                user="hard",
                pretrain_epochs=0,
                ppo_steps=steps,
                reward="success",
                progress=False,
                tensorboard=False,
                overwrite=True,
            )
            train_planner(config)
            specs[method] = f"planner:{out}"
        else:
            config_sv = SiavpoConfig(
                task=task,
                out=out,
                seed=seed,
                encoder=args.encoder,
                iterations=args.iterations,
                progress=False,
                tensorboard=False,
                overwrite=True,
                **overrides,
            )
            train_siavpo(config_sv)
            info = json.loads((out / "checkpoint.json").read_text())["info"]
            if method == "siavpo":
                steps = int(info["env_steps"])
            specs[method] = f"siavpo:{out}"
        seconds[method] = time.perf_counter() - start
        print(f"  trained {task} {method:8s} seed {seed}: {seconds[method]:.0f} s", flush=True)
    return specs, seconds


def evaluate_all(
    task: str, specs: Mapping[str, str], args: argparse.Namespace
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Records per (method, preset) on the same held-out episode seeds."""
    card = load_card(task)
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for preset in PRESETS:
        episodes = args.episodes if preset == "hard" else args.generalization_episodes
        result = dialogue_gym.evaluate(
            list(specs.values()),
            f"{task}-hard",
            episodes=episodes,
            seed=EVAL_SEED,
            env_kwargs={"encoder": args.encoder, "user": user_preset(card, preset)},
            progress=False,
        )
        by_spec = {spec: method for method, spec in specs.items()}
        for record in result.records:
            out.setdefault((by_spec[record["agent"]], preset), []).append(record)
    return out


def interval(values: Sequence[float], seed: int = 0) -> dict[str, float]:
    ci = metrics.bootstrap_ci(values, n_resamples=N_BOOT, seed=seed)
    return {"mean": ci.mean, "low": ci.low, "high": ci.high, "n": ci.n}


def paired(a: Sequence[float], b: Sequence[float]) -> dict[str, float]:
    d = metrics.paired_bootstrap_diff(a, b, n_resamples=N_BOOT, seed=0)
    return {"diff": d.mean, "low": d.low, "high": d.high, "p": d.p_value, "n": d.n}


def fmt(ci: Mapping[str, float]) -> str:
    return f"{ci['mean']:.2f} [{ci['low']:.2f},{ci['high']:.2f}]"


def fmt_diff(d: Mapping[str, float]) -> str:
    return f"{d['diff']:+.3f} [{d['low']:+.3f},{d['high']:+.3f}] p={d['p']:.3f}"


def verdict(d: Mapping[str, float]) -> str:
    """Whether a paired difference that the paper expects to be positive is, at 95%."""
    if d["low"] > 0:
        return "agrees"
    if d["high"] < 0:
        return "DISAGREES"
    if d["diff"] == 0:
        return "no difference"
    return "agrees (n.s.)" if d["diff"] > 0 else "DISAGREES (n.s.)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["Merchant", "Courier"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--iterations", type=int, default=40, help="SI-AVPO/GRPO iterations")
    parser.add_argument("--episodes", type=int, default=100, help="eval episodes, hard users")
    parser.add_argument(
        "--generalization-episodes", type=int, default=40, help="eval episodes per other preset"
    )
    parser.add_argument("--encoder", default="hashing")
    parser.add_argument("--out", type=Path, default=None, help="write results.json here")
    args = parser.parse_args()
    if len(args.seeds) < 3:
        parser.error("the claim needs at least 3 training seeds")
    torch.set_num_threads(1)  # tiny MLPs: extra intra-op threads only contend for the 2 cores
    start = time.perf_counter()
    T = load_card(args.tasks[0]).max_exchanges
    records: dict[tuple[str, str, str], list[dict[str, Any]]] = {}  # (task, method, preset)
    train_seconds: dict[str, list[float]] = {m: [] for m in METHODS}
    with tempfile.TemporaryDirectory(prefix="siavpo-claim-") as tmp:
        for task in args.tasks:
            for seed in args.seeds:
                specs, seconds = train_all(task, seed, args, Path(tmp))
                for method, value in seconds.items():
                    train_seconds[method].append(value)
                for (method, preset), rows in evaluate_all(task, specs, args).items():
                    for row in rows:
                        row["train_seed"] = seed
                    records.setdefault((task, method, preset), []).extend(rows)
                print(f"  evaluated {task} seed {seed} ({time.perf_counter() - start:.0f} s)")

    def values(task: str, method: str, preset: str, key: str) -> list[float]:
        rows = sorted(records[task, method, preset], key=lambda r: (r["train_seed"], r["episode"]))
        return [PER_EPISODE[key](r, T) for r in rows]

    results: dict[str, Any] = {"config": vars(args) | {"out": str(args.out)}, "tasks": {}}
    keys = list(PER_EPISODE)
    for task in args.tasks:
        table: dict[str, Any] = {}
        print(f"\n=== {task}: hard users (trained against), pooled over seeds {args.seeds} ===")
        print(f"{'method':9s} " + " ".join(f"{k:>18s}" for k in keys))
        for method in METHODS:
            row = {k: interval(values(task, method, "hard", k)) for k in keys}
            per_seed = [
                float(
                    np.mean(
                        [
                            PER_EPISODE["acc"](r, T)
                            for r in records[task, method, "hard"]
                            if r["train_seed"] == s
                        ]
                    )
                )
                for s in args.seeds
            ]
            table[method] = {"hard": row, "acc_per_seed": per_seed}
            print(f"{method:9s} " + " ".join(f"{fmt(row[k]):>18s}" for k in keys))
        print(f"\n--- {task}: generalization, Acc (CSR) per user preset ---")
        print(f"{'method':9s} " + " ".join(f"{p:>28s}" for p in PRESETS))
        for method in METHODS:
            cells = []
            for preset in PRESETS:
                acc = interval(values(task, method, preset, "acc"))
                csr = interval(values(task, method, preset, "csr"))
                table[method].setdefault("presets", {})[preset] = {"acc": acc, "csr": csr}
                cells.append(f"{fmt(acc)} ({csr['mean']:.2f})")
            print(f"{method:9s} " + " ".join(f"{c:>28s}" for c in cells))
        comparisons = {
            "siavpo-grpo": ("siavpo", "grpo", ("acc", "csr", "proactivity", "proactive_turns")),
            "siavpo-ppo": ("siavpo", "ppo", ("acc", "csr", "proactivity", "proactive_turns")),
            "siavpo-noaopd": ("siavpo", "no-aopd", ("proactivity", "proactive_turns", "acc")),
            "nostpr-siavpo": ("no-stpr", "siavpo", ("pressure", "asks", "acc")),
            "noaopd-grpo": ("no-aopd", "grpo", ("acc", "csr")),
        }
        diffs: dict[str, Any] = {}
        print(f"\n--- {task}: paired differences on hard users (same episodes) ---")
        for name, (a, b, metric_keys) in comparisons.items():
            for key in metric_keys:
                d = paired(values(task, a, "hard", key), values(task, b, "hard", key))
                diffs[f"{name}:{key}"] = d
                print(f"{a:>8s} − {b:<8s} {key:16s} {fmt_diff(d)}")
        claims = [
            ("SI-AVPO beats GRPO on Acc", "siavpo-grpo:acc"),
            ("SI-AVPO beats GRPO on CSR", "siavpo-grpo:csr"),
            ("SI-AVPO beats PPO on Acc", "siavpo-ppo:acc"),
            ("no AOPD lowers proactivity", "siavpo-noaopd:proactivity"),
            ("no AOPD lowers proactive turns", "siavpo-noaopd:proactive_turns"),
            ("no STPR is more aggressive (pressure)", "nostpr-siavpo:pressure"),
            ("no STPR is more aggressive (asks)", "nostpr-siavpo:asks"),
            ("STPR's Δw credit beats outcome-only GRPO (Acc)", "noaopd-grpo:acc"),
        ]
        print(f"\n--- {task}: the paper's claims (positive difference expected) ---")
        verdicts = {claim: verdict(diffs[key]) for claim, key in claims}
        for claim, key in claims:
            print(f"{verdicts[claim]:17s} {claim:48s} {fmt_diff(diffs[key])}")
        results["tasks"][task] = {
            "methods": table,
            "paired": diffs,
            "claims": verdicts,
        }
    results["train_seconds"] = {m: float(np.mean(v)) for m, v in train_seconds.items()}
    results["wall_s"] = time.perf_counter() - start
    print(f"\nmean training time per run (s): {results['train_seconds']}")
    print(f"total wall time: {results['wall_s'] / 60:.1f} min")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(results, indent=2, default=float))
        print(f"results: {args.out / 'results.json'}")


if __name__ == "__main__":
    main()
