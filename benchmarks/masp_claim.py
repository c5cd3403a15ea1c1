"""MASP's claim in our embedded worlds: SFT vs planner-only vs MASP on soft, hard and mixed users.

The paper's claim (MASP, Table 1 and §4.4): mentalized adversarial self-play puts MASP ahead of
Planner-only ahead of SFT on hard-user RCSR@8, and a system trained only against soft users
drops more from soft to hard users than MASP. This script tests it at the strategy level on
two tasks (default P4G and ESConv) with several training seeds, in one run. Per task and seed:

* **MASP** — ``dialogue-gym train masp`` (phase 0 mentalizers, phase 1 behaviour-cloned warm
  starts from the corpus, phase 2 alternating GRPO self-play with the user policy on the
  hard simulator's mind);
* **SFT** — MASP's phase-1 system policy (behaviour cloning on the corpus, no self-play);
* **soft-trained** — the same warm start trained by the same GRPO against the *soft* simulator
  only (``--opponent simulator --selfplay-user soft``, same iterations): a system trained only
  against soft users;
* **planner-only** — issue 6's planner (the same corpus pretraining, then SB3 PPO against the
  hard simulator with its default success reward) with as many system exchanges as MASP's
  system updates used.

Every system samples its strategies (the paper decodes with temperature) and is evaluated on
the same seeded episodes of the soft users, the hard users and the corpus-grounded hard users
(personas from the corpus's test split): the three form the ensemble whose worst case is
reported. Each is evaluated raw and with the shared close-injection scaffold
(:mod:`dialogue_gym_agents.scaffold`; the paper evaluates MASP and Planner-only on P4G with an
adaptive close injection). Printed per task and condition: SR@8, AT and RCSR@8 with 95%
bootstrap CIs (seeds pooled), hard-user RCSR@8 per seed, the worst case over the ensemble,
RCSR@t on hard users, paired bootstrap differences (paired by seed and episode) and the
soft→hard drops, then a verdict on each part of the claim.

Usage::

    python benchmarks/masp_claim.py [--tasks P4G ESConv] [--seeds 0 1 2] [--episodes 50]
        [--iterations 20] [--workers 2] [--encoder minilm] [--data DIR] [--out runs/masp_claim]

A rerun with the same ``--out`` reuses every finished training run and evaluation. The corpora
come from ``--data`` (default ``$DIALOGUE_GYM_DATA``, else ``../shared/datasets``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

SYSTEMS = ("SFT", "planner-only", "MASP", "soft-trained")
USERS = ("soft", "hard", "hard-corpus")
CONDITIONS = ("raw", "close")
EVAL_SEED = 100_000  # episode seeds far from anything used in training
KEEP = ("success", "success_turn", "q", "turns", "T", "episode", "errored")


def _default_data() -> Path:
    env = os.environ.get("DIALOGUE_GYM_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "datasets"


def _masp_config(task: str, seed: int, out: Path, args: argparse.Namespace, **extra: Any) -> Any:
    from dialogue_gym_agents.masp.config import MASPConfig

    return MASPConfig(
        task=task,
        out=out,
        seed=seed,
        encoder=args.encoder,
        data=str(args.data),
        progress=False,
        tensorboard=False,
        silver_episodes=args.silver_episodes,
        mentalizer_epochs=args.mentalizer_epochs,
        max_dialogues=args.max_dialogues,
        bc_epochs=args.bc_epochs,
        iterations=args.iterations,
        **extra,
    )


def train_systems(
    task: str, seed: int, args: argparse.Namespace
) -> tuple[dict[str, str], dict[str, float]]:
    """Trains (or reuses) the four systems of one task and seed; returns agent names and timings."""
    from dialogue_gym_agents.common.checkpoint import load_checkpoint
    from dialogue_gym_agents.masp.train import train_masp
    from dialogue_gym_agents.planner.train import PlannerConfig, train_planner

    root = Path(args.out) / f"{task}-seed{seed}"
    timings: dict[str, float] = {}
    start = time.perf_counter()
    masp_dir, soft_dir, planner_dir = root / "masp", root / "soft-trained", root / "planner"
    last = load_checkpoint(train_masp(_masp_config(task, seed, masp_dir, args)))
    timings["masp_s"] = time.perf_counter() - start
    start = time.perf_counter()
    for phase in ("phase0-mentalizers", "phase1-warmstart"):  # the same warm start
        if not (soft_dir / phase).exists():
            shutil.copytree(masp_dir / phase, soft_dir / phase)
    train_masp(_masp_config(task, seed, soft_dir, args, opponent="simulator", selfplay_user="soft"))
    timings["soft_trained_s"] = time.perf_counter() - start
    start = time.perf_counter()
    if not (planner_dir / "checkpoint.json").is_file():
        steps = int(sum(p.get("system_steps", 0.0) for p in last.info.get("curve", [])))
        train_planner(
            PlannerConfig(
                task=task,
                out=planner_dir,
                seed=seed,
                encoder=args.encoder,
                data=str(args.data),
                progress=False,
                tensorboard=False,
                user="hard",
                max_dialogues=args.max_dialogues,
                pretrain_epochs=args.bc_epochs,
                ppo_steps=max(steps, 512),
                n_steps=64,
                batch_size=64,
            )
        )
    timings["planner_s"] = time.perf_counter() - start
    agents = {
        "SFT": f"masp:{masp_dir / 'phase1-warmstart'}",
        "planner-only": f"planner:{planner_dir}",
        "MASP": f"masp:{masp_dir}",
        "soft-trained": f"masp:{soft_dir}",
    }
    return agents, timings


def evaluate_systems(
    task: str, seed: int, agents: dict[str, str], args: argparse.Namespace
) -> list[dict[str, Any]]:
    """Plays every system, raw and with the close scaffold, on the three user types."""
    import dialogue_gym

    root = Path(args.out) / f"{task}-seed{seed}" / "eval"
    rows: list[dict[str, Any]] = []
    for system, name in agents.items():
        for condition in CONDITIONS:
            agent, kwargs = name, {"deterministic": False}
            if condition == "close":
                agent, kwargs = "dialogue_gym_agents.scaffold:closing", {**kwargs, "agent": name}
            for user in USERS:
                env_kwargs: dict[str, Any] = {"encoder": args.encoder}
                if user == "hard-corpus":
                    env_kwargs["data"] = str(args.data)
                env_id = f"{task}-{'soft' if user == 'soft' else 'hard'}"
                result = dialogue_gym.evaluate(
                    agent,
                    env_id,
                    episodes=args.episodes,
                    seed=EVAL_SEED,
                    out=root / f"{system}-{condition}-{user}",
                    env_kwargs=env_kwargs,
                    agent_kwargs=kwargs,
                    progress=False,
                )
                for record in result.records:
                    row = {k: record.get(k) for k in KEEP}
                    row.update(task=task, seed=seed, system=system, condition=condition, user=user)
                    rows.append(row)
    return rows


def job(task: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """Trains and evaluates one (task, seed); runs in a worker process."""
    import torch

    torch.set_num_threads(1)
    start = time.perf_counter()
    agents, timings = train_systems(task, seed, args)
    eval_start = time.perf_counter()
    rows = evaluate_systems(task, seed, agents, args)
    timings["eval_s"] = time.perf_counter() - eval_start
    timings["total_s"] = time.perf_counter() - start
    return {"task": task, "seed": seed, "rows": rows, "timings": timings}


# -- analysis ------------------------------------------------------------------------------------


def _values(
    rows: Sequence[dict[str, Any]], metric: str, T: int = 8, t: int | None = None
) -> np.ndarray:
    from dialogue_gym import metrics

    ordered = sorted(rows, key=lambda r: (r["seed"], r["episode"]))
    horizon = T if t is None else t
    if metric == "sr":
        return np.asarray([float(metrics.success_within(r, horizon)) for r in ordered])
    if metric == "rcsr":
        return np.asarray([float(metrics.rc_success_within(r, horizon)) for r in ordered])
    return np.asarray([float(metrics.turns_to_success(r, T)) for r in ordered])


def _select(rows: Sequence[dict[str, Any]], **keys: Any) -> list[dict[str, Any]]:
    return [r for r in rows if all(r[k] == v for k, v in keys.items()) and not r["errored"]]


def _ci(values: np.ndarray) -> str:
    from dialogue_gym import metrics

    interval = metrics.bootstrap_ci(values, seed=0)
    return f"{interval.mean:.2f} [{interval.low:.2f}, {interval.high:.2f}]"


def _diff(a: np.ndarray, b: np.ndarray) -> Any:
    from dialogue_gym import metrics

    return metrics.paired_bootstrap_diff(a, b, seed=0)


def report(rows: list[dict[str, Any]], tasks: Sequence[str], seeds: Sequence[int]) -> list[str]:
    """Prints the tables; returns the claim verdict lines."""
    verdicts: list[str] = []
    for task in tasks:
        for condition in CONDITIONS:
            label = "raw policies" if condition == "raw" else "with the close-injection scaffold"
            print(f"\n=== {task}: {label} (seeds {list(seeds)} pooled) ===")
            print(f"{'system':14s} {'users':12s} {'n':>4s}  {'SR@8':18s} {'AT':18s} {'RCSR@8':18s}")
            for system in SYSTEMS:
                for user in USERS:
                    sel = _select(rows, task=task, condition=condition, system=system, user=user)
                    if not sel:
                        continue
                    print(
                        f"{system:14s} {user:12s} {len(sel):4d}  {_ci(_values(sel, 'sr')):18s} "
                        f"{_ci(_values(sel, 'at')):18s} {_ci(_values(sel, 'rcsr')):18s}"
                    )
            print("\nhard-user RCSR@8 per training seed, and worst case over the ensemble:")
            for system in SYSTEMS:
                per_seed = [
                    _values(
                        _select(
                            rows, task=task, condition=condition, system=system, user="hard", seed=s
                        ),
                        "rcsr",
                    ).mean()
                    for s in seeds
                ]
                worst_sr = min(
                    (
                        _values(
                            _select(rows, task=task, condition=condition, system=system, user=u),
                            "sr",
                        ).mean(),
                        u,
                    )
                    for u in USERS
                )
                worst_rcsr = min(
                    (
                        _values(
                            _select(rows, task=task, condition=condition, system=system, user=u),
                            "rcsr",
                        ).mean(),
                        u,
                    )
                    for u in USERS
                )
                print(
                    f"  {system:14s} per seed {' '.join(f'{v:.2f}' for v in per_seed)}   "
                    f"worst SR {worst_sr[0]:.2f} ({worst_sr[1]})   worst RCSR {worst_rcsr[0]:.2f} "
                    f"({worst_rcsr[1]})"
                )
            print("\nRCSR@t on hard users, t = 1..8:")
            for system in SYSTEMS:
                sel = _select(rows, task=task, condition=condition, system=system, user="hard")
                curve = [_values(sel, "rcsr", t=t).mean() for t in range(1, 9)]
                print(f"  {system:14s} " + " ".join(f"{v:.2f}" for v in curve))
            print("\npaired bootstrap differences on hard users (95% CI, p):")
            hard = {
                s: _select(rows, task=task, condition=condition, system=s, user="hard")
                for s in SYSTEMS
            }
            for a, b in (("MASP", "planner-only"), ("MASP", "SFT"), ("planner-only", "SFT")):
                for metric in ("sr", "rcsr", "at"):
                    d = _diff(_values(hard[a], metric), _values(hard[b], metric))
                    print(f"  {a} − {b:13s} {metric.upper():5s} {d}")
            print("\nsoft→hard drop (soft − hard, paired by seed and episode):")
            drops: dict[str, dict[str, np.ndarray]] = {}
            for system in SYSTEMS:
                soft = _select(rows, task=task, condition=condition, system=system, user="soft")
                drops[system] = {
                    m: _values(soft, m) - _values(hard[system], m) for m in ("sr", "rcsr")
                }
                print(
                    f"  {system:14s} SR drop {drops[system]['sr'].mean():+.2f}   "
                    f"RCSR drop {drops[system]['rcsr'].mean():+.2f}"
                )
            more = {m: _diff(drops["soft-trained"][m], drops["MASP"][m]) for m in ("sr", "rcsr")}
            print(f"  soft-trained − MASP drop: SR {more['sr']}; RCSR {more['rcsr']}")
            # The claim, part by part.
            rc = {s: _values(hard[s], "rcsr").mean() for s in SYSTEMS}
            order = rc["MASP"] > rc["planner-only"] > rc["SFT"]
            masp_vs_planner = _diff(
                _values(hard["MASP"], "rcsr"), _values(hard["planner-only"], "rcsr")
            )
            verdicts.append(
                f"{task} ({condition}): MASP > planner-only > SFT on hard RCSR@8: "
                f"{'holds' if order else 'does NOT hold'} ({rc['MASP']:.2f} / "
                f"{rc['planner-only']:.2f} / {rc['SFT']:.2f}; MASP − planner CI "
                f"[{masp_vs_planner.low:+.2f}, {masp_vs_planner.high:+.2f}])"
            )
            parts = []
            for m in ("sr", "rcsr"):
                soft_drop, masp_drop = drops["soft-trained"][m].mean(), drops["MASP"][m].mean()
                holds = "holds" if more[m].mean > 0 else "does NOT hold"
                parts.append(f"{m.upper()} {holds} ({soft_drop:+.2f} vs {masp_drop:+.2f})")
            verdicts.append(
                f"{task} ({condition}): soft-trained drops more soft→hard than MASP: "
                + ", ".join(parts)
            )
    return verdicts


def main() -> None:
    """Runs the benchmark (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["P4G", "ESConv"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--episodes", type=int, default=50, help="evaluation episodes per cell")
    parser.add_argument("--iterations", type=int, default=20, help="MASP outer iterations K")
    parser.add_argument("--silver-episodes", type=int, default=160)
    parser.add_argument("--mentalizer-epochs", type=int, default=20)
    parser.add_argument("--bc-epochs", type=int, default=20)
    parser.add_argument("--max-dialogues", type=int, default=100, help="corpus dialogues cloned")
    parser.add_argument("--workers", type=int, default=2, help="(task, seed) jobs run at once")
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--data", type=Path, default=_default_data())
    parser.add_argument("--out", type=Path, default=Path("runs/masp_claim"))
    args = parser.parse_args()
    start = time.perf_counter()
    one, five, _ = os.getloadavg()
    print(
        f"MASP claim benchmark: tasks {args.tasks}, seeds {args.seeds}, {args.episodes} episodes "
        f"per cell, K = {args.iterations}, encoder {args.encoder}, {args.workers} workers "
        f"({os.cpu_count()} CPUs, load {one:.1f} {five:.1f})",
        flush=True,
    )
    jobs = [(task, seed, args) for task in args.tasks for seed in args.seeds]
    context = multiprocessing.get_context("spawn")
    with context.Pool(args.workers) as pool:
        results = pool.starmap(job, jobs)
    rows = [row for result in results for row in result["rows"]]
    for result in results:
        timing = " ".join(f"{k} {v:.0f}" for k, v in result["timings"].items())
        print(f"{result['task']} seed {result['seed']}: {timing}")
    verdicts = report(rows, args.tasks, args.seeds)
    print("\n=== the paper's claim ===")
    for line in verdicts:
        print(" ", line)
    elapsed = time.perf_counter() - start
    print(f"\nwall-clock {elapsed / 60:.1f} min")
    args.out.mkdir(parents=True, exist_ok=True)
    summary = {"verdicts": verdicts, "timings": [r["timings"] for r in results], "wall_s": elapsed}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
