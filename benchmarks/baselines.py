"""Baselines of issues 6 and 14: random, scripted, sft-retrieval and PPO planners on P4G and ESConv.

For each task (default: P4G and ESConv) this script, in one run:

1. builds an ``sft-retrieval`` index of the corpus's system turns (MiniLM);
2. trains one PPDPP-style ``planner`` per PPO reward in ``--rewards`` (default ``success env``:
   1 when the dialogue succeeds, and the env's own r_S): supervised pretraining on the
   strategy-annotated corpus, then stable-baselines3 PPO against the *hard* user for
   ``--ppo-steps`` exchanges (capped by ``--ppo-minutes`` of wall-clock). The target of issue 6
   is to beat ``random`` on hard users within 15 minutes of CPU training, pretraining included:
   the CPU time of every phase is printed beside its wall-clock time (on a shared machine the two
   differ);
3. evaluates random, scripted, sft-retrieval and every planner (rows ``planner[REWARD]``) on the
   soft and hard users with :func:`dialogue_gym.evaluate` (same seeded episodes for every agent),
   and prints

   * one table: agent × env × SR@8, AT, RCSR@8 with 95% bootstrap CIs;
   * the paired bootstrap difference planner − random in SR@8 on the hard users, per reward;
   * per task, the ratio of hard-user SR of each other reward's planner to the ``success``
     planner's, PASS at :data:`RATIO_TARGET` or above (issue 14: the env's own reward is usable
     for RL), with the paired bootstrap difference of the two;
   * wall-clock per phase (and the machine's CPU count and load average);
   * the PPO learning curve of every planner (rollout SR per PPO update).

Usage::

    python benchmarks/baselines.py [--tasks P4G ESConv] [--episodes 100] [--ppo-steps 400000]
        [--ppo-minutes 12] [--rewards success env] [--data DIR] [--out runs/baselines]
        [--encoder minilm] [--reuse]

``--reuse`` evaluates checkpoints already in ``--out`` (``sft-TASK``, ``planner-TASK-REWARD``)
instead of training them again, and evaluation episodes already recorded under ``--out/eval``
(per agent and checkpoint) are not played again.

The corpora are read from ``--data`` (default: ``$DIALOGUE_GYM_DATA``, else ``../shared/datasets``
beside the repository). Needs ``stable-baselines3`` and the MiniLM encoder.
"""

from __future__ import annotations

import argparse
import math
import os
import time
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


def _default_data() -> Path:
    env = os.environ.get("DIALOGUE_GYM_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "datasets"


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def planner_label(reward: str) -> str:
    """The agent label of the planner trained with ``reward``: ``planner[REWARD]``."""
    return f"planner[{reward}]"


Phases = dict[str, tuple[float, float | None]]  # phase -> (wall-clock s, CPU s of this process)
Agents = dict[str, tuple[str, Path | None]]  # label -> (agent name, checkpoint folder or None)


def _reusable(folder: Path, args: argparse.Namespace) -> bool:
    if not args.reuse:
        return False
    try:
        load_checkpoint(folder)
    except (ValueError, FileNotFoundError):
        return False
    return True


def train(task: str, args: argparse.Namespace, phases: Phases) -> Agents:
    """Trains the sft-retrieval index and one planner per reward of one task.

    Args:
        task: The task id (``P4G``, ``ESConv``).
        args: The parsed command line.
        phases: Filled with the wall-clock and CPU seconds of every training phase.

    Returns:
        Every agent to evaluate, baselines first: label -> (agent name, checkpoint or None).
    """
    out = Path(args.out)
    agents: Agents = {agent: (agent, None) for agent in BASELINE_AGENTS}
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
    agents["sft-retrieval"] = ("sft-retrieval", sft)
    for reward in args.rewards:
        label = planner_label(reward)
        planner = out / f"planner-{task}-{reward}"
        if not _reusable(planner, args):
            print(f"{task}: training {label} ({_load()})", flush=True)
            train_planner(
                PlannerConfig(
                    task=task,
                    out=planner,
                    encoder=args.encoder,
                    data=str(args.data),
                    overwrite=True,
                    tensorboard=False,
                    user="hard",
                    reward=reward,
                    ppo_steps=args.ppo_steps,
                    max_minutes=args.ppo_minutes,
                    seed=args.seed,
                )
            )
        checkpoint = load_checkpoint(planner)
        if checkpoint.config.get("reward", "success") != reward:
            raise ValueError(f"{planner} was not trained with --reward {reward}")
        timings = checkpoint.info["timings"]
        steps = checkpoint.info.get("ppo", {}).get("steps", 0)
        for phase, key in (
            ("corpus features", "features"),
            ("pretraining", "pretrain"),
            (f"PPO ({steps} steps)", "ppo"),
        ):
            phases[f"{task}: {label} {phase}"] = (
                timings.get(f"{key}_s", 0),
                timings.get(f"{key}_cpu_s"),
            )
        agents[label] = ("planner", planner)
    return agents


def evaluate(
    task: str, agents: Agents, args: argparse.Namespace, phases: Phases
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Evaluates every agent on the task's soft and hard users.

    Returns:
        The summary rows and the episode records, their ``agent`` field set to the label.
    """
    summaries: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    for label, (agent, checkpoint) in agents.items():
        kwargs, run_name = {}, agent
        if checkpoint is not None:
            kwargs = {"checkpoint": str(checkpoint)}
            content = load_checkpoint(checkpoint).manifest["content_hash"]
            run_name = f"{checkpoint.name}-{content[:12]}"  # a retrained agent never resumes
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
        phases[f"{task}: evaluate {label}"] = (
            time.perf_counter() - start,
            time.process_time() - cpu,
        )
        summaries += [{**row, "agent": label} for row in result.summaries]
        records += [{**record, "agent": label} for record in result.records]
    return summaries, records


def paired_sr(records: list[dict[str, Any]], env_id: str, a: str, b: str) -> str:
    """Agent ``a`` − agent ``b`` SR@T on the same episodes of ``env_id``, paired bootstrap CI."""
    by_agent: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        if record["env_id"] == env_id:
            by_agent.setdefault(record["agent"], []).append(record)
    pairs = metrics.pair_records(by_agent[a], by_agent[b], key=("seed",))
    diff = metrics.paired_bootstrap_diff(
        [float(metrics.success_within(x, T)) for x, _ in pairs],
        [float(metrics.success_within(y, T)) for _, y in pairs],
    )
    return (
        f"{env_id}: {a} − {b} SR@{T} = {diff.mean:+.2f} [{diff.low:+.2f}, {diff.high:+.2f}]"
        f" (paired bootstrap, p = {diff.p_value:.4f}, n = {diff.n})"
    )


def sr_ratio(summaries: list[dict[str, Any]], env_id: str, reward: str) -> tuple[float, str]:
    """Hard-user SR of ``planner[reward]`` over that of ``planner[success]``, with the verdict.

    Returns:
        ``(ratio, line)``: the ratio (``nan`` when neither planner ever succeeds, ``inf`` when
        only ``planner[reward]`` does) and a printable line ending in PASS or MISS (at
        :data:`RATIO_TARGET`).
    """
    sr = {row["agent"]: row["sr"] for row in summaries if row["env_id"] == env_id}
    num, den = sr[planner_label(reward)], sr[planner_label("success")]
    ratio = num / den if den > 0 else (math.inf if num > 0 else math.nan)
    verdict = "PASS" if ratio >= RATIO_TARGET else "MISS"  # nan (both 0) is a MISS
    return ratio, (
        f"{env_id}: SR {planner_label(reward)} / {planner_label('success')} = "
        f"{num:.2f} / {den:.2f} = {ratio:.2f} -> {verdict} (target >= {RATIO_TARGET})"
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


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line of the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["P4G", "ESConv"])
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
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--curve-every", type=int, default=None, help="print every n-th update (default: ~25 rows)"
    )
    parser.add_argument("--reuse", action="store_true", help="evaluate existing checkpoints")
    args = parser.parse_args(argv)
    args.rewards = list(dict.fromkeys(args.rewards))  # each reward once, in the given order
    return args


def main(argv: list[str] | None = None) -> None:
    """Trains, evaluates and prints everything (see the module docstring)."""
    args = parse_args(argv)
    print(f"start: {_load()}", flush=True)
    phases: Phases = {}
    summaries: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    curves: dict[str, str] = {}
    for task in args.tasks:
        agents = train(task, args, phases)
        for reward in args.rewards:
            checkpoint = agents[planner_label(reward)][1]
            assert checkpoint is not None
            curves[f"{task}-hard, {planner_label(reward)}"] = learning_curve(
                checkpoint, args.curve_every
            )
        task_summaries, task_records = evaluate(task, agents, args, phases)
        summaries += task_summaries
        records += task_records
        print(f"{task} done: {_load()}", flush=True)

    print("\n== Results (95% bootstrap CIs over episodes) ==")
    print(metrics.format_table(summaries, ["agent", "env_id", "n", "sr", "at", "rcsr"]))
    print()
    for task in args.tasks:
        for reward in args.rewards:
            print(paired_sr(records, f"{task}-hard-v0", planner_label(reward), "random"))
    others = [r for r in args.rewards if r != "success"]
    if "success" in args.rewards and others:
        print(f"\n== Hard-user SR of each planner over planner[success] (target {RATIO_TARGET}) ==")
        for task in args.tasks:
            for reward in others:
                env_id = f"{task}-hard-v0"
                print(sr_ratio(summaries, env_id, reward)[1])
                print(
                    "  "
                    + paired_sr(records, env_id, planner_label(reward), planner_label("success"))
                )
    print("\n== Time per phase (wall-clock / CPU of this process) ==")
    width = max((len(phase) for phase in phases), default=0)
    for phase, (wall, cpu) in phases.items():
        cpu_text = "n/a" if cpu is None else f"{cpu:8.1f} s"
        print(f"  {phase:<{width}} {wall:8.1f} s / {cpu_text}")
    for task in args.tasks:
        for reward in args.rewards:
            prefix = f"{task}: {planner_label(reward)} "
            training = [v for k, v in phases.items() if k.startswith(prefix)]
            wall, cpu = sum(w for w, _ in training), sum(c or 0.0 for _, c in training)
            print(f"  {prefix}training in all: {wall / 60:.1f} min wall, {cpu / 60:.1f} min CPU")
    print(f"  ({_load()})")
    for name, curve in curves.items():
        print(f"\n== PPO learning curve, {name} (rollout SR per PPO update) ==")
        print(curve)


if __name__ == "__main__":
    main()
