"""Baselines of issue 6: random, scripted, sft-retrieval and the PPO planner on P4G and ESConv.

For each task (default: P4G and ESConv) this script, in one run:

1. builds an ``sft-retrieval`` index of the corpus's system turns (MiniLM);
2. trains the PPDPP-style ``planner``: supervised pretraining on the strategy-annotated corpus,
   then stable-baselines3 PPO against the *hard* user for ``--ppo-steps`` exchanges (capped by
   ``--ppo-minutes`` of wall-clock). The target is to beat ``random`` on hard users
   within 15 minutes of CPU training, pretraining included: the CPU time of every phase is
   printed beside its wall-clock time (on a shared machine the two differ);
3. evaluates random, scripted, sft-retrieval and planner on the soft and hard users with
   :func:`dialogue_gym.evaluate` (same seeded episodes for every agent), and prints

   * one table: agent × env × SR@8, AT, RCSR@8 with 95% bootstrap CIs;
   * the paired bootstrap difference planner − random in SR@8 on the hard users;
   * wall-clock per phase (and the machine's CPU count and load average);
   * the PPO learning curve (rollout SR per PPO update).

Usage::

    python benchmarks/baselines.py [--tasks P4G ESConv] [--episodes 100] [--ppo-steps 400000]
        [--ppo-minutes 12] [--data DIR] [--out runs/baselines] [--encoder minilm] [--reuse]

``--reuse`` evaluates checkpoints already in ``--out`` instead of training them again, and
evaluation episodes already recorded under ``--out/eval`` (per agent and checkpoint) are not
played again.

The corpora are read from ``--data`` (default: ``$DIALOGUE_GYM_DATA``, else ``../shared/datasets``
beside the repository). Needs ``stable-baselines3`` and the MiniLM encoder.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import dialogue_gym
from dialogue_gym import metrics
from dialogue_gym_agents.training.checkpoint import load_checkpoint
from dialogue_gym_agents.training.planner import PlannerConfig, train_planner
from dialogue_gym_agents.training.sft import RetrievalConfig, train_retrieval

EVAL_SEED = 100_000  # episode seeds far from anything used in training


def _default_data() -> Path:
    env = os.environ.get("DIALOGUE_GYM_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "datasets"


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


Phases = dict[str, tuple[float, float | None]]  # phase -> (wall-clock s, CPU s of this process)


def _reusable(folder: Path, args: argparse.Namespace) -> bool:
    if not args.reuse:
        return False
    try:
        load_checkpoint(folder)
    except (ValueError, FileNotFoundError):
        return False
    return True


def train(task: str, args: argparse.Namespace, phases: Phases) -> dict[str, Path]:
    """Trains the sft-retrieval index and the planner of one task; returns their folders."""
    out = Path(args.out)
    sft = out / f"sft-{task}"
    if not _reusable(sft, args):
        train_retrieval(
            RetrievalConfig(
                task=task,
                out=sft,
                encoder=args.encoder,
                data=str(args.data),
                overwrite=True,
                tensorboard=False,
            )
        )
    timings = load_checkpoint(sft).info["timings"]
    phases[f"{task}: sft-retrieval index"] = (timings["index_s"], timings.get("index_cpu_s"))
    planner = out / f"planner-{task}"
    if not _reusable(planner, args):
        train_planner(
            PlannerConfig(
                task=task,
                out=planner,
                encoder=args.encoder,
                data=str(args.data),
                overwrite=True,
                tensorboard=False,
                user="hard",
                ppo_steps=args.ppo_steps,
                max_minutes=args.ppo_minutes,
                seed=args.seed,
            )
        )
    timings = load_checkpoint(planner).info["timings"]
    for phase, key in (
        ("corpus features", "features"),
        ("pretraining", "pretrain"),
        ("PPO", "ppo"),
    ):
        phases[f"{task}: planner {phase}"] = (
            timings.get(f"{key}_s", 0),
            timings.get(f"{key}_cpu_s"),
        )
    return {"sft-retrieval": sft, "planner": planner}


def evaluate(
    task: str, checkpoints: dict[str, Path], args: argparse.Namespace, phases: Phases
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Evaluates the four agents on the task's soft and hard users."""
    summaries: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    for agent in ("random", "scripted", "sft-retrieval", "planner"):
        kwargs, run_name = {}, agent
        if agent in checkpoints:
            kwargs = {"checkpoint": str(checkpoints[agent])}
            content = load_checkpoint(checkpoints[agent]).manifest["content_hash"]
            run_name = f"{agent}-{content[:12]}"  # a retrained agent never resumes old episodes
        start, cpu = time.perf_counter(), time.process_time()
        result = dialogue_gym.evaluate(
            agent,
            [f"{task}-soft", f"{task}-hard"],
            episodes=args.episodes,
            seed=EVAL_SEED,
            out=Path(args.out) / "eval" / task / run_name,
            env_kwargs={"encoder": args.encoder},
            agent_kwargs=kwargs,
            progress=False,
        )
        phases[f"{task}: evaluate {agent}"] = (
            time.perf_counter() - start,
            time.process_time() - cpu,
        )
        summaries += result.summaries
        records += result.records
    return summaries, records


def paired_sr(records: list[dict[str, Any]], env_id: str) -> str:
    """Planner − random SR@8 on the same episodes, with a paired bootstrap CI."""
    by_agent: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        if record["env_id"] == env_id:
            by_agent.setdefault(record["agent"], []).append(record)
    pairs = metrics.pair_records(by_agent["planner"], by_agent["random"], key=("seed",))
    a = [float(metrics.success_within(p, 8)) for p, _ in pairs]
    b = [float(metrics.success_within(r, 8)) for _, r in pairs]
    diff = metrics.paired_bootstrap_diff(a, b)
    return (
        f"{env_id}: planner − random SR@8 = {diff.mean:+.2f} [{diff.low:+.2f}, {diff.high:+.2f}]"
        f" (paired bootstrap, p = {diff.p_value:.4f}, n = {diff.n})"
    )


def learning_curve(planner: Path, every: int | None) -> str:
    """The rollout SR per PPO update, every ``every``-th update (default: ~25 rows), as text."""
    curve = load_checkpoint(planner).info.get("ppo", {}).get("curve", [])
    every = every or max(1, len(curve) // 25)
    rows = [
        f"  update {int(p['update']):>4}  steps {int(p['steps']):>7}  rollout SR "
        f"{p['rollout_sr']:.2f}  RCSR {p['rollout_rcsr']:.2f}  return {p['return']:+.2f}"
        for i, p in enumerate(curve)
        if i % every == 0 or i == len(curve) - 1
    ]
    return "\n".join(rows) or "  (no PPO updates)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["P4G", "ESConv"])
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--ppo-steps", type=int, default=400_000)
    parser.add_argument("--ppo-minutes", type=float, default=12.0, help="wall-clock cap")
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--data", type=Path, default=_default_data())
    parser.add_argument("--out", type=Path, default=Path("runs/baselines"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--curve-every", type=int, default=None, help="print every n-th update (default: ~25 rows)"
    )
    parser.add_argument("--reuse", action="store_true", help="evaluate existing checkpoints")
    args = parser.parse_args()

    print(f"start: {_load()}", flush=True)
    phases: Phases = {}
    summaries: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    curves: dict[str, str] = {}
    for task in args.tasks:
        checkpoints = train(task, args, phases)
        curves[task] = learning_curve(checkpoints["planner"], args.curve_every)
        task_summaries, task_records = evaluate(task, checkpoints, args, phases)
        summaries += task_summaries
        records += task_records
        print(f"{task} done: {_load()}", flush=True)

    print("\n== Results (95% bootstrap CIs over episodes) ==")
    print(metrics.format_table(summaries, ["agent", "env_id", "n", "sr", "at", "rcsr"]))
    print()
    for task in args.tasks:
        print(paired_sr(records, f"{task}-hard-v0"))
    print("\n== Time per phase (wall-clock / CPU of this process) ==")
    for phase, (wall, cpu) in phases.items():
        cpu_text = "n/a" if cpu is None else f"{cpu:8.1f} s"
        print(f"  {phase:<42} {wall:8.1f} s / {cpu_text}")
    for task in args.tasks:
        training = [v for k, v in phases.items() if k.startswith(f"{task}: planner")]
        wall, cpu = sum(w for w, _ in training), sum(c or 0.0 for _, c in training)
        print(f"  {task} planner training in all: {wall / 60:.1f} min wall, {cpu / 60:.1f} min CPU")
    print(f"  ({_load()})")
    for task, curve in curves.items():
        print(f"\n== PPO learning curve, {task}-hard (rollout SR per PPO update) ==")
        print(curve)


if __name__ == "__main__":
    main()
