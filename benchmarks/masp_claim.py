"""MASP's claim in our embedded worlds, retested over training seeds, with ablations.

The paper's claim (MASP, Table 1 and §4.4): mentalized adversarial self-play puts MASP ahead of
Planner-only ahead of SFT on hard-user RCSR@8, and a system trained only against soft users
drops more from soft to hard users than MASP. This script tests it at the strategy level on
two tasks (default P4G and ESConv) with several training seeds (default five), in one run. Per
task and seed:

* **MASP** — ``dialogue-gym train masp`` (phase 0 mentalizers, phase 1 behaviour-cloned warm
  starts from the corpus, phase 2 alternating GRPO self-play with the user policy on the
  hard simulator's mind);
* **SFT** — MASP's phase-1 system policy (behaviour cloning on the corpus, no self-play);
* **soft-trained** — the same warm start trained by the same GRPO against the *soft* simulator
  only (``--opponent simulator --selfplay-user soft``, same iterations): a system trained only
  against soft users;
* **planner-only** — issue 6's planner (the same corpus pretraining, then SB3 PPO against the
  hard simulator with the success reward) with as many system exchanges as MASP's system
  updates used; **planner-env** — the same planner trained on the env's own reward r_S
  (issue 14: the env's reward must be usable for RL);
* with ``--ablations`` (evaluated on hard users only), MASP with one ingredient removed, from
  the same warm start: **no-user-update** (the user policy stays the warm start),
  **system-only** (self-play against the hard simulator itself: no user policy at all),
  **no-KL** (β = 0) and **no-inference** (w_inf = 0: no inference term in r_S).

Every system samples its strategies (the paper decodes with temperature) and is evaluated on
the same seeded episodes of the soft users, the hard users and the corpus-grounded hard users
(personas from the corpus's test split), raw and with the shared close-injection scaffold
(:mod:`dialogue_gym_agents.scaffold`; the paper evaluates MASP and Planner-only on P4G with an
adaptive close injection).

**Statistics over training seeds.** The claim is about training methods, so the training seed
is the unit of replication (:mod:`dialogue_gym.metrics.seeds`): each seed contributes one
number per cell (its mean over the same evaluation episodes), the tables give the Student-t
interval over seeds, and two systems are compared by the paired t-interval of their per-seed
differences. A part of the claim is called *holds* or *reversed* only where that interval
excludes 0, else *inconclusive*. Soft→hard drops pair each soft episode with the hard episode of
the same episode id (the same seed and opening), per training seed. Printed per task and
condition: one row per seed, the seed-level table (SR@8, AT, RCSR@8 per user type), the worst
case over the ensemble, RCSR@t on hard users, the paired differences, the drops, the ablations
and the verdicts.

Usage::

    python benchmarks/masp_claim.py [--tasks P4G ESConv] [--seeds 0 1 2 3 4] [--episodes 50]
        [--iterations 20] [--ablations] [--workers 2] [--encoder minilm] [--data DIR]
        [--out runs/masp_claim]

A rerun with the same ``--out`` reuses every finished training run and evaluation (and
``per_seed.json`` / ``rows.jsonl`` there hold everything the report is computed from). The
corpora come from ``--data`` (default ``$DIALOGUE_GYM_DATA``, else ``../shared/datasets``).
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

SYSTEMS = ("SFT", "planner-only", "planner-env", "MASP", "soft-trained")
ABLATIONS: dict[str, dict[str, Any]] = {
    # MASP with one ingredient removed, from the same warm start (MASPConfig overrides).
    "no-user-update": {"update_user": False},
    "system-only": {"opponent": "simulator", "selfplay_user": "hard"},
    "no-KL": {"beta": 0.0},
    "no-inference": {"w_inf": 0.0},
}
USERS = ("soft", "hard", "hard-corpus")
CONDITIONS = ("raw", "close")
EVAL_SEED = 100_000  # episode seeds far from anything used in training
KEEP = ("success", "success_turn", "q", "turns", "T", "episode", "errored")
T = 8  # the exchange budget of SR@T and RCSR@T (P4G's and ESConv's T)


def _default_data() -> Path:
    env = os.environ.get("DIALOGUE_GYM_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "datasets"


def _shared_options(args: argparse.Namespace) -> dict[str, Any]:
    """Config fields every trainer of the benchmark gets alike (quiet, same data and encoder)."""
    return {
        "encoder": args.encoder,
        "data": str(args.data),
        "progress": False,
        "tensorboard": False,
        "max_dialogues": args.max_dialogues,
    }


def _masp_config(task: str, seed: int, out: Path, args: argparse.Namespace, **extra: Any) -> Any:
    from dialogue_gym_agents.masp.config import MASPConfig

    return MASPConfig(
        task=task,
        out=out,
        seed=seed,
        silver_episodes=args.silver_episodes,
        mentalizer_epochs=args.mentalizer_epochs,
        bc_epochs=args.bc_epochs,
        iterations=args.iterations,
        **_shared_options(args),
        **extra,
    )


def _warm_started(masp_dir: Path, out: Path) -> Path:
    """Gives ``out`` MASP's phase-0/1 checkpoints, so a variant starts from the same warm start."""
    for phase in ("phase0-mentalizers", "phase1-warmstart"):
        if not (out / phase).exists():
            shutil.copytree(masp_dir / phase, out / phase)
    return out


def _train_planner(task: str, seed: int, out: Path, reward: str, steps: int, args: Any) -> None:
    from dialogue_gym_agents.planner.train import PlannerConfig, train_planner

    if (out / "checkpoint.json").is_file():
        return
    train_planner(
        PlannerConfig(
            task=task,
            out=out,
            seed=seed,
            user="hard",
            reward=reward,
            pretrain_epochs=args.bc_epochs,
            ppo_steps=max(steps, 512),
            n_steps=64,
            batch_size=64,
            **_shared_options(args),
        )
    )


def train_systems(
    task: str, seed: int, args: argparse.Namespace
) -> tuple[dict[str, str], dict[str, str], dict[str, float]]:
    """Trains (or reuses) every system of one task and seed.

    Returns:
        The agent spec of each system, of each ablation, and the wall-clock seconds per phase.
    """
    from dialogue_gym_agents.common.checkpoint import load_checkpoint
    from dialogue_gym_agents.masp.train import train_masp

    root = Path(args.out) / f"{task}-seed{seed}"
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[name] = now - clock
        clock = now

    masp_dir = root / "masp"
    last = load_checkpoint(train_masp(_masp_config(task, seed, masp_dir, args)))
    lap("masp_s")
    soft_dir = _warm_started(masp_dir, root / "soft-trained")
    train_masp(_masp_config(task, seed, soft_dir, args, opponent="simulator", selfplay_user="soft"))
    lap("soft_trained_s")
    # The planners get as many system exchanges as MASP's system updates used.
    steps = int(sum(p.get("system_steps", 0.0) for p in last.info.get("curve", [])))
    for reward, name in (("success", "planner"), ("env", "planner-env")):
        _train_planner(task, seed, root / name, reward, steps, args)
        lap(f"{name}_s")
    agents = {
        "SFT": f"masp:{masp_dir / 'phase1-warmstart'}",
        "planner-only": f"planner:{root / 'planner'}",
        "planner-env": f"planner:{root / 'planner-env'}",
        "MASP": f"masp:{masp_dir}",
        "soft-trained": f"masp:{soft_dir}",
    }
    ablations: dict[str, str] = {}
    for name in args.ablations:
        out = _warm_started(masp_dir, root / f"ablation-{name}")
        train_masp(_masp_config(task, seed, out, args, **ABLATIONS[name]))
        ablations[name] = f"masp:{out}"
        lap(f"ablation_{name}_s")
    return agents, ablations, timings


def _evaluate(
    task: str, seed: int, system: str, name: str, condition: str, user: str, args: Any
) -> list[dict[str, Any]]:
    """Plays one system on one user type (same seeded episodes for every system)."""
    import dialogue_gym

    agent, kwargs = name, {"deterministic": False}
    if condition == "close":
        agent, kwargs = "dialogue_gym_agents.scaffold:closing", {**kwargs, "agent": name}
    env_kwargs: dict[str, Any] = {"encoder": args.encoder}
    if user == "hard-corpus":
        env_kwargs["data"] = str(args.data)
    result = dialogue_gym.evaluate(
        agent,
        f"{task}-{'soft' if user == 'soft' else 'hard'}",
        episodes=args.episodes,
        seed=EVAL_SEED,
        out=Path(args.out) / f"{task}-seed{seed}" / "eval" / f"{system}-{condition}-{user}",
        env_kwargs=env_kwargs,
        agent_kwargs=kwargs,
        progress=False,
    )
    rows = []
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
    agents, ablations, timings = train_systems(task, seed, args)
    eval_start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for condition in CONDITIONS:
        for system, name in agents.items():
            for user in USERS:
                rows += _evaluate(task, seed, system, name, condition, user, args)
        for system, name in ablations.items():  # the ablations answer a hard-user question
            rows += _evaluate(task, seed, system, name, condition, "hard", args)
    timings["eval_s"] = time.perf_counter() - eval_start
    timings["total_s"] = time.perf_counter() - start
    print(f"{task} seed {seed} done in {timings['total_s'] / 60:.1f} min", flush=True)
    return {"task": task, "seed": seed, "rows": rows, "timings": timings}


# -- analysis: everything over training seeds -------------------------------------------------


def _value(row: dict[str, Any], metric: str, t: int = T) -> float:
    from dialogue_gym import metrics

    if metric == "sr":
        return float(metrics.success_within(row, t))
    if metric == "rcsr":
        return float(metrics.rc_success_within(row, t))
    return float(metrics.turns_to_success(row, T))


def _cell(rows: Sequence[dict[str, Any]], **keys: Any) -> dict[int, dict[int, dict[str, Any]]]:
    """The selected non-errored rows as {training seed: {episode: row}}."""
    out: dict[int, dict[int, dict[str, Any]]] = {}
    for r in rows:
        if not r["errored"] and all(r[k] == v for k, v in keys.items()):
            out.setdefault(r["seed"], {})[r["episode"]] = r
    return out


def per_seed(
    rows: Sequence[dict[str, Any]], metric: str, seeds: Sequence[int], t: int = T, **keys: Any
) -> np.ndarray:
    """One number per training seed: the cell's mean ``metric`` (NaN for a seed with no rows)."""
    cell = _cell(rows, **keys)
    return np.asarray(
        [
            np.mean([_value(r, metric, t) for r in cell[s].values()]) if cell.get(s) else np.nan
            for s in seeds
        ]
    )


def soft_hard_drop(
    rows: Sequence[dict[str, Any]], metric: str, seeds: Sequence[int], **keys: Any
) -> np.ndarray:
    """Per training seed, mean over episode ids played on both of soft − hard ``metric``."""
    soft, hard = _cell(rows, user="soft", **keys), _cell(rows, user="hard", **keys)
    drops = []
    for s in seeds:
        ids = sorted(set(soft.get(s, {})) & set(hard.get(s, {})))
        drops.append(
            np.mean([_value(soft[s][i], metric) - _value(hard[s][i], metric) for i in ids])
            if ids
            else np.nan
        )
    return np.asarray(drops)


def _ci(values: np.ndarray) -> str:
    from dialogue_gym import metrics

    values = values[~np.isnan(values)]
    interval = metrics.seed_level_ci(values)
    return f"{interval.mean:.2f} [{interval.low:.2f}, {interval.high:.2f}]"


def verdict(a: np.ndarray, b: np.ndarray) -> tuple[Any, str]:
    """The paired seed-level difference ``a − b`` and its verdict (seeds missing on a side drop)."""
    from dialogue_gym import metrics

    keep = ~(np.isnan(a) | np.isnan(b))
    diff = metrics.paired_seed_diff(a[keep], b[keep])
    return diff, diff.verdict


def _fmt(diff: Any) -> str:
    return f"{diff.mean:+.2f} [{diff.low:+.2f}, {diff.high:+.2f}] p={diff.p_value:.3f} n={diff.n}"


def report(
    rows: list[dict[str, Any]], tasks: Sequence[str], seeds: Sequence[int], ablations: Sequence[str]
) -> tuple[list[str], dict[str, Any]]:
    """Prints the tables; returns the verdict lines and the per-seed numbers."""
    verdicts: list[str] = []
    numbers: dict[str, Any] = {}
    for task in tasks:
        for condition in CONDITIONS:
            label = "raw policies" if condition == "raw" else "with the close-injection scaffold"
            keys = {"task": task, "condition": condition}
            print(f"\n=== {task}: {label}; training seeds {list(seeds)} ===")

            def seeds_of(
                metric: str, system: str, user: str, t: int = T, keys: dict[str, Any] = keys
            ) -> np.ndarray:
                return per_seed(rows, metric, seeds, t, system=system, user=user, **keys)

            print("\none row per training seed (each the mean over the same evaluation episodes):")
            print(
                f"  {'system':16s} {'seed':>4s}  "
                + "  ".join(f"{u + ' SR/RCSR':>22s}" for u in USERS)
            )
            for system in SYSTEMS:
                for i, s in enumerate(seeds):
                    cells = [
                        f"{seeds_of('sr', system, u)[i]:.2f} / {seeds_of('rcsr', system, u)[i]:.2f}"
                        for u in USERS
                    ]
                    print(f"  {system:16s} {s:4d}  " + "  ".join(f"{c:>22s}" for c in cells))
            print(
                f"\nmean over training seeds [95% t-interval, n = {len(seeds)} seeds]:\n"
                f"  {'system':16s} {'users':12s} {'SR@8':20s} {'AT':20s} {'RCSR@8':20s}"
            )
            for system in SYSTEMS:
                for user in USERS:
                    print(
                        f"  {system:16s} {user:12s} {_ci(seeds_of('sr', system, user)):20s} "
                        f"{_ci(seeds_of('at', system, user)):20s} "
                        f"{_ci(seeds_of('rcsr', system, user)):20s}"
                    )
            print("\nworst case over the ensemble (seed-mean of each user type, lowest):")
            for system in SYSTEMS:
                worst = {
                    m: min((float(np.nanmean(seeds_of(m, system, u))), u) for u in USERS)
                    for m in ("sr", "rcsr")
                }
                print(
                    f"  {system:16s} SR {worst['sr'][0]:.2f} ({worst['sr'][1]})   "
                    f"RCSR {worst['rcsr'][0]:.2f} ({worst['rcsr'][1]})"
                )
            print("\nRCSR@t on hard users, t = 1..8 (mean over seeds):")
            for system in SYSTEMS:
                curve = [
                    float(np.nanmean(seeds_of("rcsr", system, "hard", t))) for t in range(1, 9)
                ]
                print(f"  {system:16s} " + " ".join(f"{v:.2f}" for v in curve))
            print("\npaired differences over training seeds on hard users (95% t-interval):")
            hard = {m: {s: seeds_of(m, s, "hard") for s in SYSTEMS} for m in ("sr", "rcsr")}
            diffs: dict[str, Any] = {}
            words: dict[str, str] = {}
            for a, b in (
                ("MASP", "planner-only"),
                ("MASP", "SFT"),
                ("planner-only", "SFT"),
                ("planner-env", "planner-only"),
            ):
                for m in ("sr", "rcsr"):
                    diff, word = verdict(hard[m][a], hard[m][b])
                    diffs[f"{a} - {b} {m}"], words[f"{a} - {b} {m}"] = diff, word
                    print(f"  {a:>12s} − {b:13s} {m.upper():5s} {_fmt(diff)}  {word}")
            print("\nsoft→hard drop (soft − hard, paired by episode id within each seed):")
            drops = {
                m: {s: soft_hard_drop(rows, m, seeds, system=s, **keys) for s in SYSTEMS}
                for m in ("sr", "rcsr")
            }
            for system in SYSTEMS:
                print(
                    f"  {system:16s} SR drop {_ci(drops['sr'][system]):20s} "
                    f"RCSR drop {_ci(drops['rcsr'][system])}"
                )
            more = {m: verdict(drops[m]["soft-trained"], drops[m]["MASP"]) for m in ("sr", "rcsr")}
            print(
                f"  soft-trained − MASP drop: SR {_fmt(more['sr'][0])} {more['sr'][1]}; "
                f"RCSR {_fmt(more['rcsr'][0])} {more['rcsr'][1]}"
            )
            if ablations:
                print("\nablations on hard users: MASP − (MASP without one ingredient), per seed:")
                for name in ablations:
                    rc = seeds_of("rcsr", name, "hard")
                    diff, word = verdict(hard["rcsr"]["MASP"], rc)
                    diffs[f"MASP - {name} rcsr"] = diff
                    print(
                        f"  {name:16s} RCSR {_ci(rc):20s} per seed "
                        f"{' '.join(f'{v:.2f}' for v in rc)}   MASP − it {_fmt(diff)}  {word}"
                    )
            # The claim, part by part: a verdict only where the seed-level interval excludes 0.
            rc = {s: float(np.nanmean(hard["rcsr"][s])) for s in SYSTEMS}
            parts = []
            for a, b in (("MASP", "planner-only"), ("MASP", "SFT"), ("planner-only", "SFT")):
                key = f"{a} - {b} rcsr"
                parts.append(f"{a} > {b} {words[key]} ({_fmt(diffs[key])})")
            verdicts.append(
                f"{task} ({condition}): hard RCSR@8 MASP {rc['MASP']:.2f} / planner-only "
                f"{rc['planner-only']:.2f} / SFT {rc['SFT']:.2f}; " + "; ".join(parts)
            )
            verdicts.append(
                f"{task} ({condition}): soft-trained drops more soft→hard than MASP: "
                f"SR {more['sr'][1]} ({_fmt(more['sr'][0])}), "
                f"RCSR {more['rcsr'][1]} ({_fmt(more['rcsr'][0])})"
            )
            numbers[f"{task}/{condition}"] = {
                "hard_rcsr_per_seed": {s: hard["rcsr"][s].tolist() for s in SYSTEMS},
                "hard_sr_per_seed": {s: hard["sr"][s].tolist() for s in SYSTEMS},
                "differences": {k: vars(v) for k, v in diffs.items()},
            }
    return verdicts, numbers


def main() -> None:
    """Runs the benchmark (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["P4G", "ESConv"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--episodes", type=int, default=50, help="evaluation episodes per cell")
    parser.add_argument("--iterations", type=int, default=20, help="MASP outer iterations K")
    parser.add_argument("--silver-episodes", type=int, default=160)
    parser.add_argument("--mentalizer-epochs", type=int, default=20)
    parser.add_argument("--bc-epochs", type=int, default=20)
    parser.add_argument("--max-dialogues", type=int, default=100, help="corpus dialogues cloned")
    parser.add_argument(
        "--ablations",
        nargs="*",
        choices=sorted(ABLATIONS),
        default=None,
        help="train and evaluate these MASP ablations too (the flag alone: all of them)",
    )
    parser.add_argument("--workers", type=int, default=2, help="(task, seed) jobs run at once")
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--data", type=Path, default=_default_data())
    parser.add_argument("--out", type=Path, default=Path("runs/masp_claim"))
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="print the report from --out/rows.jsonl without training or evaluating",
    )
    args = parser.parse_args()
    if args.ablations is None:
        args.ablations = []
    elif not args.ablations:
        args.ablations = list(ABLATIONS)
    if len(set(args.seeds)) < 2:
        parser.error("--seeds: name at least two training seeds (the intervals are over seeds)")
    start = time.perf_counter()
    one, five, _ = os.getloadavg()
    if args.report_only:
        print(f"MASP claim benchmark: the report of {args.out / 'rows.jsonl'}")
    else:
        print(
            f"MASP claim benchmark: tasks {args.tasks}, seeds {args.seeds}, {args.episodes} "
            f"episodes per cell, K = {args.iterations}, ablations {args.ablations or 'none'}, "
            f"encoder {args.encoder}, {args.workers} workers "
            f"({os.cpu_count()} CPUs, load {one:.1f} {five:.1f}; torch 1 thread per worker)",
            flush=True,
        )
    args.out.mkdir(parents=True, exist_ok=True)
    rows_file = args.out / "rows.jsonl"
    timings: list[dict[str, Any]] = []
    if args.report_only:
        rows = [json.loads(line) for line in rows_file.read_text().splitlines() if line]
    else:
        jobs = [(task, seed, args) for task in args.tasks for seed in args.seeds]
        context = multiprocessing.get_context("spawn")
        with context.Pool(args.workers) as pool:
            results = pool.starmap(job, jobs)
        rows = [row for result in results for row in result["rows"]]
        rows_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
        for result in results:
            timing = " ".join(f"{k} {v:.0f}" for k, v in result["timings"].items())
            print(f"{result['task']} seed {result['seed']}: {timing}")
            timings.append({"task": result["task"], "seed": result["seed"], **result["timings"]})
    verdicts, numbers = report(rows, args.tasks, args.seeds, args.ablations)
    print("\n=== the paper's claim, over training seeds ===")
    for line in verdicts:
        print(" ", line)
    elapsed = time.perf_counter() - start
    print(f"\nwall-clock {elapsed / 60:.1f} min")
    summary = {"verdicts": verdicts, "per_seed": numbers, "timings": timings, "wall_s": elapsed}
    (args.out / "per_seed.json").write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
