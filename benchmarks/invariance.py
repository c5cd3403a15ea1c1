"""Did a restructure change behaviour? The same seeded evaluations on two source trees, compared.

Given two checkouts (``--before DIR --after DIR``, each holding ``dialogue_gym/``, ``envs/`` and
``agents/``), it plays, in one subprocess per tree, a fixed set of seeded evaluations: every env
the *before* tree registers × the agents below × ``--episodes`` episodes (seeds ``--seed`` ...),
with the hashing encoder unless ``--encoder minilm`` is given. It then compares the per-episode
records of the two trees field by field (transcripts, events, rewards and returns, q, s, labels,
scores, states, votes, personas, the ``config_hash`` and ``agent_hash`` a resume checks — all of
them except timing, version and host fields, and with each tree's own path written as
``<tree>``), prints one row per (env, agent) cell, ``identical`` or ``DIFFERS: <first
difference>``, and exits with 1 when any cell differs or fails on one side only.

Agents, by class paths valid in both trees (the installed ``dialogue_gym.agents`` entry points
name the *current* tree's modules, which an older tree may not have, so names are never
resolved through them):

* ``random``: ``dialogue_gym_agents.baselines:RandomAgent`` (``baselines`` was a module, it is
  now a package re-exporting the class);
* the task's bad agent: ``dialogue_gym_agents.dispatch:pushy`` / ``dismissive`` / ``lowball``,
  chosen per task by the before tree's ``dispatch.BAD_AGENT``;
* the adversaries ``dialogue_gym.testing.adversaries:ReciteCard``, ``StuffConcerns`` and
  ``InjectJudge`` (``recite``, ``stuff``, ``inject``).

``scripted`` and ``stall`` are left out on purpose: their behaviour may change by design between
trees (:mod:`dialogue_gym_agents.baselines.listening`); pass ``--agents`` to choose others.

Each (env, agent) cell plays in every ``--modes`` (default all), since the executors and the
vector envs were restructured too: ``lone`` (one env in this process), ``threads``
(``concurrency=2``), ``vector`` (``num_envs=2``); and ``strategy`` adds one cell per env that
plays the :class:`~dialogue_gym.env.wrappers.StrategyActions` view (what the planner and PPO train
on) with seeded random strategies, comparing every observation vector, reward and info.

Each subprocess runs with ``PYTHONPATH=<tree>:<tree>/agents`` and ``OMP_NUM_THREADS=1``, and
takes the editable installs' import finders out first, so ``dialogue_gym``, its card catalog
(``dialogue_gym.catalog`` is ``<tree>/envs``) and ``dialogue_gym_agents`` all load from that
tree; it checks that every loaded module of those packages lies under the tree.

    git worktree add /tmp/inv_before bf1d184 && git worktree add /tmp/inv_after HEAD
    python benchmarks/invariance.py --before /tmp/inv_before --after /tmp/inv_after
    git worktree remove /tmp/inv_before && git worktree remove /tmp/inv_after
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

RANDOM = "dialogue_gym_agents.baselines:RandomAgent"
BAD = "bad"
"""Placeholder in ``--agents`` for the task's bad agent (pushy, dismissive or lowball)."""
ADVERSARY_PATHS = {
    "recite": "dialogue_gym.testing.adversaries:ReciteCard",
    "stuff": "dialogue_gym.testing.adversaries:StuffConcerns",
    "inject": "dialogue_gym.testing.adversaries:InjectJudge",
}
DEFAULT_AGENTS = ("random", BAD, *ADVERSARY_PATHS)
AGENT_PATHS = {"random": RANDOM, **ADVERSARY_PATHS}
EVALUATE_MODES = {"lone": (1, 1), "threads": (2, 1), "vector": (1, 2)}
"""Mode → ``evaluate``'s (``concurrency``, ``num_envs``): every executor must give the same
records."""
STRATEGY = "strategy"
STRATEGY_AGENT = "StrategyActions(random strategies)"
MODES = (*EVALUATE_MODES, STRATEGY)

IGNORED_FIELDS = frozenset(
    {
        "created",
        "duration",
        "duration_s",
        "elapsed",
        "elapsed_s",
        "finished",
        "host",
        "hostname",
        "pid",
        "seconds",
        "started",
        "time",
        "time_s",
        "timestamp",
        "version",
        "wall_s",
    }
)
"""Record keys (at any depth) left out of the comparison: when and where it ran, not what."""
TREE_MARK = "<tree>"
PACKAGES = ("dialogue_gym", "dialogue_gym_agents")


# --- worker: runs inside one tree's subprocess --------------------------------------------------


def isolate_imports(tree: Path) -> None:
    """Makes ``dialogue_gym``, its catalog and ``dialogue_gym_agents`` load from ``tree`` only.

    The editable installs add meta-path finders that map ``dialogue_gym.catalog`` (and any
    subpackage a tree lacks) to the installed checkout, past ``PYTHONPATH``; they go, and a
    finder maps the catalog to ``tree/envs``.
    """
    sys.meta_path[:] = [
        finder
        for finder in sys.meta_path
        if not getattr(finder, "__module__", "").startswith("__editable___dialogue_gym")
    ]
    for path in (tree / "agents", tree):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
    sys.meta_path.insert(0, _CatalogFinder(tree / "envs"))


class _CatalogFinder:
    """Finds ``dialogue_gym.catalog`` (the shipped cards) in one tree's ``envs/`` folder."""

    def __init__(self, envs: Path) -> None:
        self.envs = envs

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        """The catalog package's spec; ``None`` for every other module."""
        if fullname != "dialogue_gym.catalog":
            return None
        return importlib.util.spec_from_file_location(
            fullname, self.envs / "__init__.py", submodule_search_locations=[str(self.envs)]
        )


def foreign_modules(tree: Path) -> list[str]:
    """Loaded modules of :data:`PACKAGES` (and the catalog) whose file lies outside ``tree``."""
    root = tree.resolve()
    foreign = []
    for name, module in sorted(sys.modules.items()):
        if name.split(".")[0] not in PACKAGES:
            continue
        file = getattr(module, "__file__", None)
        if file and not Path(file).resolve().is_relative_to(root):
            foreign.append(f"{name} ({file})")
    return foreign


Cell = tuple[str, str, str]
"""(env id, agent path, mode)."""


def plan_cells(agents: Sequence[str], env_ids: Sequence[str], modes: Sequence[str]) -> list[Cell]:
    """Every env × agent × evaluate mode, plus a ``strategy`` cell per env when asked.

    ``bad`` becomes the task's bad agent, read from ``dialogue_gym_agents.dispatch.BAD_AGENT``
    (task id → name) of the tree it runs in; an env whose task has none gets no ``bad`` cell.
    """
    from dialogue_gym_agents import dispatch

    cells: list[Cell] = []
    for env_id in env_ids:
        paths = []
        for agent in agents:
            if agent == BAD:
                name = dispatch.BAD_AGENT.get(env_id.split("-")[0])
                if name is not None:
                    paths.append(f"dialogue_gym_agents.dispatch:{name}")
            else:
                paths.append(AGENT_PATHS.get(agent, agent))
        for mode in modes:
            if mode == STRATEGY:
                cells.append((env_id, STRATEGY_AGENT, mode))
            else:
                cells.extend((env_id, path, mode) for path in paths)
    return cells


def normalize(value: Any, tree: str) -> Any:
    """JSON-ready ``value`` without :data:`IGNORED_FIELDS`, the tree's path as ``<tree>``."""
    if isinstance(value, Mapping):
        return {
            str(k): normalize(v, tree) for k, v in value.items() if str(k) not in IGNORED_FIELDS
        }
    if isinstance(value, list | tuple):
        return [normalize(v, tree) for v in value]
    if isinstance(value, str):
        return value.replace(tree, TREE_MARK)
    if value is None or isinstance(value, bool | int | float):
        return value
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return normalize(value.tolist(), tree)
    return normalize(repr(value), tree)


def play_strategy_view(env_id: str, episodes: int, seed: int, encoder: str) -> list[dict]:
    """Episodes of the env's StrategyActions view under seeded random strategies, every step."""
    import numpy as np

    # The package-level names and this fallback hold in trees from before and after the
    # folders by concept (issue 36), so one worker plays both.
    from dialogue_gym import make

    try:
        from dialogue_gym.env.wrappers import StrategyActions
    except ImportError:  # a tree from before the folders: wrappers/ at the top
        from dialogue_gym.wrappers import StrategyActions  # type: ignore[no-redef]

    env = StrategyActions(make(env_id, encoder=encoder))
    rng = np.random.default_rng(seed)
    records = []
    try:
        for episode in range(episodes):
            observation, info = env.reset(seed=seed + episode)
            steps: list[dict[str, Any]] = [{"observation": observation, "info": info}]
            done = False
            while not done:
                action = int(rng.integers(env.action_space.n))
                observation, reward, terminated, truncated, info = env.step(action)
                steps.append(
                    {
                        "action": action,
                        "observation": observation,
                        "reward": reward,
                        "terminated": terminated,
                        "truncated": truncated,
                        "info": info,
                    }
                )
                done = terminated or truncated
            records.append({"episode": episode, "steps": steps})
    finally:
        env.close()
    return records


def run_cells(
    cells: Sequence[Cell], episodes: int, seed: int, encoder: str, tree: Path
) -> dict[str, Any]:
    """Plays every cell; ``{"env|agent|mode": {"records": [...]}}`` or ``{"error": ...}``."""
    from dialogue_gym import evaluate  # the package-level name: valid in every tree

    results: dict[str, Any] = {}
    for env_id, agent, mode in cells:
        key = cell_key(env_id, agent, mode)
        started = time.perf_counter()
        try:
            if mode == STRATEGY:
                records: Any = play_strategy_view(env_id, episodes, seed, encoder)
            else:
                concurrency, num_envs = EVALUATE_MODES[mode]
                records = evaluate(
                    [agent],
                    [env_id],
                    episodes=episodes,
                    seed=seed,
                    env_kwargs={"encoder": encoder},
                    progress=False,
                    concurrency=concurrency,
                    num_envs=num_envs,
                ).records
            results[key] = {"records": normalize(records, str(tree))}
        except Exception as error:  # a cell that fails is compared by its error message
            results[key] = {"error": normalize(f"{type(error).__name__}: {error}", str(tree))}
        print(f"  {key}: {time.perf_counter() - started:.1f}s", file=sys.stderr, flush=True)
    return results


def worker(args: argparse.Namespace) -> int:
    """Plays the cells in this process (its tree on the path) and writes them to ``--out``."""
    tree = Path(args.worker).resolve()
    isolate_imports(tree)
    from dialogue_gym import registry  # the package-level name: valid in every tree

    env_ids = args.envs or sorted(registry)
    cells = (
        [tuple(cell) for cell in json.loads(Path(args.cells).read_text())]
        if args.cells
        else plan_cells(args.agents, env_ids, args.modes)
    )
    results = run_cells(cells, args.episodes, args.seed, args.encoder, tree)
    foreign = foreign_modules(tree)
    Path(args.out).write_text(
        json.dumps({"cells": cells, "results": results, "foreign_modules": foreign})
    )
    return 0


# --- comparison ---------------------------------------------------------------------------------


def cell_key(env_id: str, agent: str, mode: str) -> str:
    """The key of one (env id, agent, mode) cell in a worker's results."""
    return f"{env_id}|{agent}|{mode}"


def first_difference(before: Any, after: Any, where: str = "") -> str | None:
    """Where ``before`` and ``after`` first differ (``path: before != after``), or ``None``."""
    if isinstance(before, dict) and isinstance(after, dict):
        # In the record's own order (success, turns, q, s, labels, ... transcript), so the
        # first difference named is the first field a reader of the record would see.
        for key in [*before, *(key for key in after if key not in before)]:
            if key not in after:
                return f"{where}.{key}: only before"
            if key not in before:
                return f"{where}.{key}: only after"
            found = first_difference(before[key], after[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(before, list) and isinstance(after, list):
        for index, (old, new) in enumerate(zip(before, after, strict=False)):
            found = first_difference(old, new, f"{where}[{index}]")
            if found:
                return found
        if len(before) != len(after):
            return f"{where}: {len(before)} items before, {len(after)} after"
        return None
    if before != after or type(before) is not type(after):
        return f"{where or '.'}: {_short(before)} != {_short(after)}"
    return None


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def compare_cell(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> str:
    """``identical`` or ``DIFFERS: <first difference>`` for one cell's worker results."""
    if before is None or after is None:
        return f"DIFFERS: missing {'before' if before is None else 'after'}"
    if "error" in before or "error" in after:
        if before.get("error") == after.get("error"):
            return f"identical (both fail: {before['error'][:60]})"
        return f"DIFFERS: error {before.get('error')!r} != {after.get('error')!r}"
    old, new = before["records"], after["records"]
    if len(old) != len(new):
        return f"DIFFERS: {len(old)} episodes before, {len(new)} after"
    for old_record, new_record in zip(old, new, strict=True):
        found = first_difference(old_record, new_record)
        if found:
            return f"DIFFERS: episode {old_record.get('episode')} {found.lstrip('.')}"
    return "identical"


Row = tuple[str, str, str, int, str]
"""(env id, agent, mode, episodes, verdict)."""


def table(rows: Sequence[Row]) -> str:
    """The printed table: env id, agent, mode, episodes, verdict."""
    header = ("env", "agent", "mode", "eps", "result")
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(4)]
    lines = []
    for row in [header, *rows]:
        cells = [str(value).ljust(width) for value, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, str(row[4])]))
    lines.insert(1, "  ".join("-" * width for width in [*widths, 6]))
    return "\n".join(lines)


def run_tree(tree: Path, args: argparse.Namespace, out: Path, cells: Path | None) -> dict:
    """Runs this script's worker for ``tree`` in a subprocess; its parsed output."""
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{tree}{os.pathsep}{tree / 'agents'}"
    env["OMP_NUM_THREADS"] = "1"
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        str(tree),
        "--out",
        str(out),
        "--episodes",
        str(args.episodes),
        "--seed",
        str(args.seed),
        "--encoder",
        args.encoder,
        "--agents",
        *args.agents,
        "--modes",
        *args.modes,
    ]
    if args.envs:
        command += ["--envs", *args.envs]
    if cells is not None:
        command += ["--cells", str(cells)]
    # Run from a neutral folder so neither tree's cwd shadows the other's packages.
    subprocess.run(command, env=env, cwd=tempfile.gettempdir(), check=True)
    return json.loads(out.read_text())


def compare(args: argparse.Namespace) -> int:
    """Runs both trees and prints the table; 1 when any cell differs or a module leaked."""
    before_tree, after_tree = Path(args.before).resolve(), Path(args.after).resolve()
    with tempfile.TemporaryDirectory(prefix="invariance-") as folder:
        work = Path(folder)
        started = time.perf_counter()
        print(f"before: {before_tree}", file=sys.stderr, flush=True)
        before = run_tree(before_tree, args, work / "before.json", None)
        (work / "cells.json").write_text(json.dumps(before["cells"]))
        print(f"after: {after_tree}", file=sys.stderr, flush=True)
        after = run_tree(after_tree, args, work / "after.json", work / "cells.json")
        seconds = time.perf_counter() - started
    rows: list[Row] = []
    for env_id, agent, mode in before["cells"]:
        key = cell_key(env_id, agent, mode)
        verdict = compare_cell(before["results"].get(key), after["results"].get(key))
        rows.append((env_id, agent, mode, args.episodes, verdict))
    print(table(rows))
    failed = False
    for name, run in (("before", before), ("after", after)):
        if run["foreign_modules"]:
            failed = True
            print(f"{name}: modules loaded from outside the tree: {run['foreign_modules']}")
    differing = sum(not row[4].startswith("identical") for row in rows)
    print(
        f"{len(rows) - differing}/{len(rows)} cells identical "
        f"({args.episodes} episodes each, seed {args.seed}, encoder {args.encoder}; {seconds:.0f}s)"
    )
    return 1 if differing or failed else 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (``--worker`` is the per-tree subprocess mode)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--before", help="checkout before the change")
    parser.add_argument("--after", help="checkout after the change")
    parser.add_argument("--episodes", type=int, default=3, help="episodes per cell")
    parser.add_argument("--seed", type=int, default=0, help="seed of episode 0")
    parser.add_argument("--encoder", default="hashing", choices=["hashing", "minilm"])
    parser.add_argument("--envs", nargs="*", help="env ids (default: every env of the before tree)")
    parser.add_argument(
        "--agents",
        nargs="*",
        default=list(DEFAULT_AGENTS),
        help="random, bad (the task's bad agent), recite, stuff, inject, or module:Class paths",
    )
    parser.add_argument(
        "--modes",
        nargs="*",
        default=list(MODES),
        choices=list(MODES),
        help="lone env, threads (concurrency=2), vector (num_envs=2), strategy view",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--cells", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.worker and not (args.before and args.after):
        parser.error("--before and --after are required")
    if args.episodes < 1:
        parser.error("--episodes must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Compares the two trees (or, with ``--worker``, plays one tree's cells)."""
    args = parse_args(argv)
    return worker(args) if args.worker else compare(args)


if __name__ == "__main__":
    sys.exit(main())
