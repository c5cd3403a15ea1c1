"""Baselines of issues 6, 14 and 15: random, scripted, sft-retrieval and PPO planners, over seeds.

For each task (default: P4G and ESConv) this script, in one run:

1. builds an ``sft-retrieval`` index of the corpus's system turns (MiniLM; a job of its own);
2. trains, for every training seed in ``--seeds`` (default 0-4), one PPDPP-style ``planner``
   per PPO reward in ``--rewards`` (default ``success env``: 1 when the dialogue succeeds, and
   the env's own r_S): supervised pretraining on the strategy-annotated corpus, then
   stable-baselines3 PPO against the *hard* user for ``--ppo-steps`` exchanges (capped by
   ``--ppo-minutes`` of wall-clock). The target of issue 6 is to beat ``random`` on hard users
   within 15 minutes of CPU training, pretraining included: the CPU time of every phase is
   printed beside its wall-clock time (on a shared machine the two differ). ``--workers``
   (task, reward, seed) jobs run at once, one torch thread each;
3. evaluates random, scripted, sft-retrieval and every planner (rows ``planner[REWARD] seed S``)
   on the soft and hard users with :func:`dialogue_gym.evaluate` (the same seeded episodes for
   every agent and training seed), and prints

   * one table: agent × env × SR@8, AT, RCSR@8 with 95% bootstrap CIs over episodes;
   * issue 15's table over training seeds: each planner's SR@8 and RCSR@8 as the mean over
     seeds with a Student-t interval over seeds (not pooled episodes), and the per-seed values;
   * planner − random in hard-user SR@8, per reward, as a seed-level interval with a verdict
     only where it excludes 0 (``random`` does not train: its SR is the same for every seed);
   * per task, the ratio of the mean hard-user SR of each other reward's planner to the
     ``success`` planner's, PASS at :data:`RATIO_TARGET` or above (issue 14: the env's own
     reward is usable for RL), with the difference paired by training seed;
   * wall-clock per phase (and the machine's CPU count and load average);
   * the PPO learning curve of every planner (rollout SR per PPO update).

Usage::

    python benchmarks/baselines.py [--tasks P4G ESConv] [--seeds 0 1 2 3 4] [--workers 2]
        [--episodes 100] [--ppo-steps 400000] [--ppo-minutes 12] [--rewards success env]
        [--data DIR] [--out runs/baselines] [--encoder minilm] [--reuse]

``--reuse`` evaluates checkpoints already in ``--out`` (``sft-TASK``,
``planner-TASK-REWARD-seedS``) instead of training them again, and evaluation episodes already
recorded under ``--out/eval`` (per agent and checkpoint) are not played again: an interrupted
run picks up where it stopped. Everything printed is also written to ``--out/report.json``.

With the defaults the run trains 20 planners of 5-10 minutes each: about 1.5 hours with two
workers on two cores.

The corpora are read from ``--data`` (default: ``$DIALOGUE_GYM_DATA``, else ``../shared/datasets``
beside the repository). Needs ``stable-baselines3`` and the MiniLM encoder.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import multiprocessing
import os
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import dialogue_gym
from dialogue_gym import metrics
from dialogue_gym_agents.common.checkpoint import load_checkpoint
from dialogue_gym_agents.planner.train import REWARDS, PlannerConfig, train_planner
from dialogue_gym_agents.sft.retrieval import RetrievalConfig, train_retrieval

EVAL_SEED = 100_000  # episode seeds far from anything used in training
T = 8  # the exchange budget of SR@T in the paired differences (P4G's and ESConv's T)
RATIO_TARGET = 0.9  # issue 14: hard-user SR of planner[REWARD] >= 0.9 x that of planner[success]
BASELINE_AGENTS = ("random", "scripted", "sft-retrieval")

Phases = dict[str, tuple[float, float | None]]  # phase -> (wall-clock s, CPU s of its process)


def _default_data() -> Path:
    env = os.environ.get("DIALOGUE_GYM_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "datasets"


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def planner_label(reward: str) -> str:
    """The agent label of the planner trained with ``reward``: ``planner[REWARD]``."""
    return f"planner[{reward}]"


def planner_dir(out: Path, task: str, reward: str, seed: int) -> Path:
    """Where the planner of ``task`` trained with ``reward`` and training seed ``seed`` lives."""
    return out / f"planner-{task}-{reward}-seed{seed}"


@dataclasses.dataclass(frozen=True)
class Job:
    """One agent to (train and) evaluate on a task's soft and hard users.

    Attributes:
        task: The task id (``P4G``, ``ESConv``).
        label: The agent's label in every table (``random``, ``planner[success]`` ...).
        agent: The registered agent name.
        checkpoint: Its checkpoint folder (``None`` for agents without one).
        reward: The planner's PPO reward (``None`` for the baselines).
        seed: The planner's training seed (``None`` for the baselines, which do not train).
    """

    task: str
    label: str
    agent: str
    checkpoint: Path | None = None
    reward: str | None = None
    seed: int | None = None

    @property
    def name(self) -> str:
        """How the job is named on the console."""
        return self.label if self.seed is None else f"{self.label} seed {self.seed}"


def _reusable(folder: Path, reuse: bool) -> bool:
    if not reuse:
        return False
    try:
        load_checkpoint(folder)
    except (ValueError, FileNotFoundError):
        return False
    return True


def _options(job: Job, args: argparse.Namespace) -> dict[str, Any]:
    """What every checkpoint of this benchmark is trained with: task, folder, encoder, data."""
    return {
        "task": job.task,
        "out": job.checkpoint,
        "encoder": args.encoder,
        "data": str(args.data),
        "overwrite": True,
        "tensorboard": False,
    }


def _build_sft(job: Job, args: argparse.Namespace, phases: Phases) -> None:
    """Builds ``job``'s sft-retrieval index unless ``--reuse`` finds it; records its phase."""
    assert job.checkpoint is not None
    if not _reusable(job.checkpoint, args.reuse):
        print(f"{job.task}: building the sft-retrieval index ({_load()})", flush=True)
        train_retrieval(RetrievalConfig(**_options(job, args)))
    timings = load_checkpoint(job.checkpoint).info["timings"]
    phases[f"{job.task}: sft-retrieval index"] = (timings["index_s"], timings.get("index_cpu_s"))


def jobs_of(task: str, args: argparse.Namespace) -> list[Job]:
    """Every agent of one task: the baselines once, each planner once per (reward, seed)."""
    out = Path(args.out)
    jobs = [Job(task, agent, agent) for agent in BASELINE_AGENTS if agent != "sft-retrieval"]
    jobs.append(Job(task, "sft-retrieval", "sft-retrieval", out / f"sft-{task}"))
    for seed in args.seeds:
        for reward in args.rewards:
            folder = planner_dir(out, task, reward, seed)
            jobs.append(Job(task, planner_label(reward), "planner", folder, reward, seed))
    return jobs


def _train(job: Job, args: argparse.Namespace, phases: Phases) -> None:
    """Trains ``job``'s planner unless ``--reuse`` finds it; records its phases."""
    assert job.checkpoint is not None and job.reward is not None and job.seed is not None
    if not _reusable(job.checkpoint, args.reuse):
        print(f"{job.task}: training {job.name} ({_load()})", flush=True)
        train_planner(
            PlannerConfig(
                **_options(job, args),
                user="hard",
                reward=job.reward,
                ppo_steps=args.ppo_steps,
                max_minutes=args.ppo_minutes,
                seed=job.seed,
            )
        )
    checkpoint = load_checkpoint(job.checkpoint)
    if checkpoint.config.get("reward", "success") != job.reward:
        raise ValueError(f"{job.checkpoint} was not trained with --reward {job.reward}")
    if checkpoint.config.get("seed", job.seed) != job.seed:
        raise ValueError(f"{job.checkpoint} was not trained with seed {job.seed}")
    timings = checkpoint.info["timings"]
    steps = checkpoint.info.get("ppo", {}).get("steps", 0)
    for phase, key in (
        ("corpus features", "features"),
        ("pretraining", "pretrain"),
        (f"PPO ({steps} steps)", "ppo"),
    ):
        phases[f"{job.task}: {job.name} {phase}"] = (
            timings.get(f"{key}_s", 0),
            timings.get(f"{key}_cpu_s"),
        )


def run_job(job: Job, args: argparse.Namespace) -> dict[str, Any]:
    """Trains (planners; sft-retrieval builds its index) and evaluates one job, soft and hard.

    Runs in a worker process when ``--workers`` > 1; torch uses one thread.

    Returns:
        ``summaries`` (each row tagged with the job's ``agent`` label and ``train_seed``;
        the episode records stay in ``--out/eval``), ``phases`` and, for planners, the PPO
        ``curve``.
    """
    import torch

    torch.set_num_threads(1)
    phases: Phases = {}
    if job.reward is not None:
        _train(job, args, phases)
    elif job.agent == "sft-retrieval":
        _build_sft(job, args, phases)
    kwargs, run_name = {}, job.agent
    if job.checkpoint is not None:
        kwargs = {"checkpoint": str(job.checkpoint)}
        content = load_checkpoint(job.checkpoint).manifest["content_hash"]
        run_name = f"{job.checkpoint.name}-{content[:12]}"  # a retrained agent never resumes
    start, cpu = time.perf_counter(), time.process_time()
    result = dialogue_gym.evaluate(
        job.agent,
        [f"{job.task}-soft", f"{job.task}-hard"],
        episodes=args.episodes,
        seed=EVAL_SEED,
        out=Path(args.out) / "eval" / job.task / run_name,
        env_kwargs={"encoder": args.encoder},
        agent_kwargs=kwargs,
        progress=False,
    )
    phases[f"{job.task}: evaluate {job.name}"] = (
        time.perf_counter() - start,
        time.process_time() - cpu,
    )
    tag = {"agent": job.label, "train_seed": job.seed}
    curve = []
    if job.checkpoint is not None and job.reward is not None:
        curve = load_checkpoint(job.checkpoint).info.get("ppo", {}).get("curve", [])
    print(f"{job.task}: {job.name} evaluated ({_load()})", flush=True)
    return {
        "job": job,
        "summaries": [{**row, **tag} for row in result.summaries],
        "phases": phases,
        "curve": curve,
    }


def run_all(jobs: Sequence[Job], args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    """Runs ``jobs`` (in ``--workers`` processes when more than one), yielding as they finish.

    A worker that dies (killed, out of memory) stops the run with ``BrokenProcessPool``
    instead of leaving it waiting; finished jobs are kept in ``--out`` for ``--reuse``.
    """
    if args.workers <= 1:
        for job in jobs:
            yield run_job(job, args)
        return
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(args.workers, mp_context=context) as pool:
        futures = [pool.submit(run_job, job, args) for job in jobs]
        for future in as_completed(futures):
            yield future.result()


# -- analysis ---------------------------------------------------------------------------------


def _by_seed(rows: Sequence[dict[str, Any]], env_id: str, label: str, metric: str) -> dict:
    """``{train seed: value of metric}`` of ``label``'s summary rows on ``env_id``."""
    return {
        row.get("train_seed"): float(row[metric])
        for row in rows
        if row["env_id"] == env_id and row["agent"] == label
    }


def _interval(values: Sequence[float]) -> str:
    ci = metrics.seed_level_ci(values)
    return f"{ci.mean:.2f} {_bounds(ci.low, ci.high, '.2f')}"


def _bounds(low: float, high: float, spec: str) -> str:
    """``[low, high]``, or ``(one seed)`` where an interval over seeds cannot exist."""
    if math.isinf(low) or math.isinf(high):
        return "(one seed)"
    return f"[{low:{spec}}, {high:{spec}}]"


def seed_table(
    summaries: Sequence[dict[str, Any]], tasks: Sequence[str], rewards: Sequence[str]
) -> str:
    """Each planner's SR@T and RCSR@T over training seeds: mean [t-interval] and per-seed values."""
    lines = [
        f"{'agent':<18} {'env':<16} {'seeds':>5}  {'SR@T over seeds':<20} "
        f"{'RCSR@T over seeds':<20} per-seed SR / RCSR"
    ]
    for task in tasks:
        for user in ("soft", "hard"):
            env_id = f"{task}-{user}-v0"
            for reward in rewards:
                label = planner_label(reward)
                sr = _by_seed(summaries, env_id, label, "sr")
                rcsr = _by_seed(summaries, env_id, label, "rcsr")
                if not sr:
                    continue
                seeds = sorted(sr)
                each = "  ".join(f"{sr[s]:.2f}/{rcsr[s]:.2f}" for s in seeds)
                lines.append(
                    f"{label:<18} {env_id:<16} {len(seeds):>5}  "
                    f"{_interval([sr[s] for s in seeds]):<20} "
                    f"{_interval([rcsr[s] for s in seeds]):<20} {each}"
                )
    return "\n".join(lines)


def planner_vs_random(summaries: Sequence[dict[str, Any]], env_id: str, reward: str) -> str:
    """Planner − random SR@T on ``env_id`` over training seeds, with a verdict.

    ``random`` does not train: each seed's planner SR is paired with its one SR (on the same
    seeded episodes).
    """
    return paired_by_seed(summaries, env_id, planner_label(reward), "random")


def sr_ratio(summaries: Sequence[dict[str, Any]], env_id: str, reward: str) -> tuple[float, str]:
    """Mean hard-user SR of ``planner[reward]`` over that of ``planner[success]``, with the verdict.

    The means are over training seeds (one row per seed; a row without a seed is one seed).

    Returns:
        ``(ratio, line)``: the ratio (``nan`` when neither planner ever succeeds, ``inf`` when
        only ``planner[reward]`` does) and a printable line ending in PASS or MISS (at
        :data:`RATIO_TARGET`).
    """
    num, den = (
        metrics.seed_level_ci(list(_by_seed(summaries, env_id, label, "sr").values())).mean
        for label in (planner_label(reward), planner_label("success"))
    )
    ratio = num / den if den > 0 else (math.inf if num > 0 else math.nan)
    verdict = "PASS" if ratio >= RATIO_TARGET else "MISS"  # nan (both 0) is a MISS
    return ratio, (
        f"{env_id}: SR {planner_label(reward)} / {planner_label('success')} = "
        f"{num:.2f} / {den:.2f} = {ratio:.2f} -> {verdict} (target >= {RATIO_TARGET})"
    )


def paired_by_seed(summaries: Sequence[dict[str, Any]], env_id: str, a: str, b: str) -> str:
    """Agent ``a`` − agent ``b`` SR@T on ``env_id``, paired by training seed, with a verdict.

    An agent that does not train (one row, no seed) is paired with every seed of the other.
    """
    sr_a, sr_b = (_by_seed(summaries, env_id, label, "sr") for label in (a, b))
    if set(sr_b) == {None}:
        sr_b = dict.fromkeys(sr_a, sr_b[None])
    seeds = sorted(set(sr_a) & set(sr_b))
    diff = metrics.paired_seed_diff([sr_a[s] for s in seeds], [sr_b[s] for s in seeds])
    return (
        f"{env_id}: {a} − {b} SR@{T} = {diff.mean:+.2f} {_bounds(diff.low, diff.high, '+.2f')} "
        f"(paired by training seed, p = {diff.p_value:.4f}, n = {diff.n}) -> {diff.verdict}"
    )


def learning_curve(curve: Sequence[dict[str, Any]], every: int | None) -> str:
    """The rollout SR per PPO update, every ``every``-th update (default: ~10 rows), as text."""
    every = every or max(1, len(curve) // 10)
    rows = [
        f"  update {int(p['update']):>4}  steps {int(p['steps']):>7}  rollout SR "
        f"{p['rollout_sr']:.2f}  RCSR {p['rollout_rcsr']:.2f}  return {p['return']:+.2f}"
        for i, p in enumerate(curve)
        if i % every == 0 or i == len(curve) - 1
    ]
    return "\n".join(rows) or "  (no PPO updates)"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line of the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["P4G", "ESConv"])
    parser.add_argument(
        "--seeds",
        nargs="+",
        type=int,
        default=[0, 1, 2, 3, 4],
        help="training seeds of the planners (the intervals are over them)",
    )
    parser.add_argument("--workers", type=int, default=2, help="jobs run at once (processes)")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--ppo-steps", type=int, default=400_000)
    parser.add_argument("--ppo-minutes", type=float, default=12.0, help="wall-clock cap")
    parser.add_argument(
        "--rewards",
        nargs="+",
        choices=REWARDS,
        default=["success", "env"],
        help="train one planner per PPO reward (default: success env)",
    )
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--data", type=Path, default=_default_data())
    parser.add_argument("--out", type=Path, default=Path("runs/baselines"))
    parser.add_argument(
        "--curve-every", type=int, default=None, help="print every n-th update (default: ~10 rows)"
    )
    parser.add_argument("--reuse", action="store_true", help="evaluate existing checkpoints")
    args = parser.parse_args(argv)
    args.rewards = list(dict.fromkeys(args.rewards))  # each reward once, in the given order
    args.seeds = list(dict.fromkeys(args.seeds))
    if args.workers < 1:
        parser.error("--workers: at least 1")
    return args


def main(argv: list[str] | None = None) -> None:
    """Trains, evaluates and prints everything (see the module docstring)."""
    args = parse_args(argv)
    print(
        f"start: seeds {args.seeds}, rewards {args.rewards}, {args.workers} workers "
        f"(torch 1 thread each), {_load()}",
        flush=True,
    )
    start = time.perf_counter()
    phases: Phases = {}
    jobs = [job for task in args.tasks for job in jobs_of(task, args)]
    results = sorted(run_all(jobs, args), key=lambda r: jobs.index(r["job"]))
    summaries = [row for r in results for row in r["summaries"]]
    for r in results:
        phases.update(r["phases"])

    shown = [
        {
            **row,
            "agent": row["agent"]
            + ("" if row["train_seed"] is None else f" seed {row['train_seed']}"),
        }
        for row in summaries
    ]
    print("\n== Results (95% bootstrap CIs over episodes) ==")
    print(metrics.format_table(shown, ["agent", "env_id", "n", "sr", "at", "rcsr"]))
    print("\n== Planners over training seeds (mean [95% Student-t interval over seeds]) ==")
    print(seed_table(summaries, args.tasks, args.rewards))
    verdicts = []
    for task in args.tasks:
        for reward in args.rewards:
            verdicts.append(planner_vs_random(summaries, f"{task}-hard-v0", reward))
    others = [r for r in args.rewards if r != "success"]
    if "success" in args.rewards and others:
        for task in args.tasks:
            for reward in others:
                env_id = f"{task}-hard-v0"
                verdicts.append(sr_ratio(summaries, env_id, reward)[1])
                verdicts.append(
                    "  "
                    + paired_by_seed(
                        summaries, env_id, planner_label(reward), planner_label("success")
                    )
                )
    print(f"\n== Verdicts (hard users; ratio target {RATIO_TARGET}) ==")
    print("\n".join(verdicts))
    print("\n== Time per phase (wall-clock / CPU of its process) ==")
    width = max((len(phase) for phase in phases), default=0)
    for phase, (wall, cpu) in phases.items():
        cpu_text = "n/a" if cpu is None else f"{cpu:8.1f} s"
        print(f"  {phase:<{width}} {wall:8.1f} s / {cpu_text}")
    for task in args.tasks:
        for reward in args.rewards:
            for seed in args.seeds:
                prefix = f"{task}: {planner_label(reward)} seed {seed} "
                training = [v for k, v in phases.items() if k.startswith(prefix)]
                wall, cpu = sum(w for w, _ in training), sum(c or 0.0 for _, c in training)
                print(
                    f"  {prefix}training in all: {wall / 60:.1f} min wall, {cpu / 60:.1f} min CPU"
                )
    elapsed = time.perf_counter() - start
    print(f"  wall-clock of this run {elapsed / 60:.1f} min ({_load()})")
    for r in results:
        if r["job"].reward is not None:
            print(f"\n== PPO learning curve, {r['job'].task}-hard, {r['job'].name} ==")
            print(learning_curve(r["curve"], args.curve_every))
    report = {
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "summaries": summaries,
        "verdicts": verdicts,
        "wall_s": elapsed,
    }
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
