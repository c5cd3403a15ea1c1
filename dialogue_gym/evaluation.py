"""Benchmark evaluation: agents × env ids × episodes, resumable, with a summary table.

``evaluate`` plays every requested agent against every requested environment for a fixed
number of seeded episodes. Episode ``i`` resets the env (and the agent, when it has ``reset``)
with ``seed + i``, so the same arguments always give the same records.

Results on disk (``out``):

* ``episodes.jsonl`` — one JSON line per finished episode, appended, flushed and fsync'ed as
  soon as the episode ends: a crash loses at most the episode in flight. Rerunning the same
  call skips the episodes already recorded (keyed by agent, env id, episode index and seed),
  so it neither loses nor duplicates episodes; a truncated last line left by a crash is cut off.
* ``summary.json`` — per (agent, env id) the :func:`dialogue_gym.metrics.summarize` row plus a
  ``config`` stamp (resolved env spec, its hash, package version, encoder, T, τ_q, seeds, time).

On negotiation tasks (a deal judge: CraigslistBargain) every record carries ``sl``, the
sale-to-list ratio of its deal (0 without one), and the summaries and table report the mean SL
with its CI next to SR; the table ranks those agents by SL (:func:`metrics.rank_rows`).

An agent that raises (or whose action the env rejects with ``TypeError``/``ValueError``) is
recorded as an *errored* episode with its partial transcript; the evaluation continues and the
metrics leave errored episodes out of every rate.

Example:
    >>> result = evaluate("scripted", "P4G-hard", episodes=20, out="runs/demo")  # doctest: +SKIP
    >>> print(result.table())  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import itertools
import json
import math
import os
import re
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from tqdm.auto import tqdm

from dialogue_gym import metrics
from dialogue_gym.agents import Agent, agent_factory, make_agent
from dialogue_gym.registry import EnvSpec, make, spec

__all__ = ["EPISODES_FILE", "MAX_EPISODES", "SUMMARY_FILE", "EvalResult", "evaluate"]

EPISODES_FILE = "episodes.jsonl"
"""Per-episode records inside the output directory."""

SUMMARY_FILE = "summary.json"
"""Per-(agent, env) summaries inside the output directory."""

MAX_EPISODES = 1_000_000
"""Upper bound on ``episodes`` per (agent, env) pair."""

SYSTEM = "system"

Key = tuple[str, str, int, int]

EXECUTORS = ("local", "ray")
"""Where :func:`evaluate` plays episodes."""


class Job(NamedTuple):
    """One episode to play: its index within its seed block and its reset seed."""

    episode: int
    seed: int


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


@dataclasses.dataclass
class EvalResult:
    """What :func:`evaluate` returns.

    Attributes:
        records: Episode records of the requested runs (resumed ones included), ordered by
            agent, env id and episode index.
        summaries: One :func:`~dialogue_gym.metrics.summarize` row per (agent, env id), with
            ``agent``, ``env_id`` and ``config`` added.
        out: The output directory, or ``None`` when nothing was written.
    """

    records: list[dict[str, Any]]
    summaries: list[dict[str, Any]]
    out: Path | None = None

    def table(self, columns: Sequence[str] | None = None) -> str:
        """The summaries as a text table with 95% CIs (see :func:`metrics.format_table`).

        Rows in leaderboard order (:func:`metrics.rank_rows`): the agents of a negotiation
        env id (CB) ranked by mean SL, which the table shows next to SR.
        """
        return metrics.format_table(metrics.rank_rows(self.summaries), columns)

    def worst_case(self) -> dict[str, dict[str, dict[str, tuple[str, float]]]]:
        """Per agent and task evaluated with several user types: the worst SR@T and RCSR@T.

        The task of an env id is the part before its user type (``P4G`` of ``P4G-hard-v0``).
        Negotiation tasks (records carrying ``sl``) also get the worst mean SL (``"sl"``).

        Returns:
            ``{agent: {task: {"sr": (env_id, value), "rcsr": (env_id, value)}}}``, plus
            ``"sl": (env_id, value)`` for negotiation tasks.
        """
        out: dict[str, dict[str, dict[str, tuple[str, float]]]] = {}
        groups: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = {}
        for record in self.records:
            task = str(record["env_id"]).split("-", 1)[0]
            by_env = groups.setdefault((record["agent"], task), {})
            by_env.setdefault(record["env_id"], []).append(record)
        for (agent, task), by_env in groups.items():
            if len(by_env) < 2:
                continue
            horizon = max(int(r.get("T", metrics.DEFAULT_T)) for g in by_env.values() for r in g)
            out.setdefault(agent, {})[task] = {
                "sr": metrics.worst_case(by_env, partial(metrics.success_rate, T=horizon)),
                "rcsr": metrics.worst_case(by_env, partial(metrics.rcsr, T=horizon)),
            }
            if any(metrics.episode_sl(r) is not None for g in by_env.values() for r in g):
                out[agent][task]["sl"] = metrics.worst_case(by_env, metrics.sale_to_list)
        return out


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_episodes(episodes: Any) -> int:
    if not _is_int(episodes):
        raise ValueError(
            f"episodes must be an int between 1 and {MAX_EPISODES:,}, "
            f"got {episodes!r} ({type(episodes).__name__})"
        )
    if not 1 <= episodes <= MAX_EPISODES:
        raise ValueError(f"episodes must be between 1 and {MAX_EPISODES:,}, got {episodes:,}")
    return int(episodes)


def _check_seed(seed: Any) -> int:
    if not _is_int(seed) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    return int(seed)


def _check_seeds(seed: Any, seeds: Sequence[int] | None, episodes: int) -> list[int]:
    """The base seeds of the run: ``[seed]``, or ``seeds`` checked for overlapping blocks."""
    if seeds is None:
        return [_check_seed(seed)]
    if seed != 0:
        raise ValueError("pass either seed or seeds, not both")
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence) or not seeds:
        raise ValueError(f"seeds must be a non-empty list of ints, got {seeds!r}")
    bases = sorted(_check_seed(s) for s in seeds)
    for low, high in itertools.pairwise(bases):
        if high - low < episodes:
            raise ValueError(
                f"seeds {low} and {high} overlap: each plays {episodes} episodes seeded "
                f"seed, seed + 1, ...; space the seeds at least {episodes} apart "
                f"(e.g. {', '.join(str(k * episodes) for k in range(len(bases)))})"
            )
    return [int(s) for s in dict.fromkeys(seeds)]


def _per_seed(
    records: Sequence[Mapping[str, Any]], seeds: Sequence[int], config: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """SR, AT and RCSR (and SL on negotiation tasks) of each base seed's block."""
    out = []
    for base in seeds:
        block = [r for r in records if r["seed"] - r["episode"] == base]
        row = metrics.summarize(block, T=config["T"], tau_q=config["tau_q"])
        keys = ("n", "n_errored", "sr", "sl", "at", "rcsr")
        out.append({"seed": base, **{k: row[k] for k in keys if k in row}})
    return out


def _names(value: Sequence[str] | str, what: str) -> list[str]:
    names = [value] if isinstance(value, str) else list(value)
    if not names:
        raise ValueError(f"at least one {what} is required")
    for name in names:
        if not isinstance(name, str) or not name:
            raise ValueError(f"{what} names must be non-empty strings, got {name!r}")
    return list(dict.fromkeys(names))  # drop repeats, keep order


# -- JSON helpers ------------------------------------------------------------------------------


def _json_safe(value: Any) -> Any:
    """Plain JSON types as they are; anything else as its ``repr`` without memory addresses."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        try:
            return _json_safe(value.item())
        except (TypeError, ValueError):
            pass
    if hasattr(value, "tolist") and callable(value.tolist):  # numpy arrays
        return _json_safe(value.tolist())
    return _ADDRESS.sub("", repr(value))


def _config_hash(resolved: Mapping[str, Any]) -> str:
    """Hash of the JSON-safe resolved config; equals ``EnvSpec.config_hash`` for plain kwargs."""
    payload = json.dumps(_json_safe(resolved), sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _dumps(record: Mapping[str, Any]) -> str:
    return json.dumps(_json_safe(record), ensure_ascii=False, allow_nan=False)


# -- the episodes file -------------------------------------------------------------------------


def _key(record: Mapping[str, Any]) -> Key:
    return (
        str(record["agent"]),
        str(record["env_id"]),
        int(record["episode"]),
        int(record["seed"]),
    )


def _load_done(path: Path) -> dict[Key, dict[str, Any]]:
    """Reads finished episodes; cuts off a truncated or corrupt last line (a crash mid-write).

    Corrupt lines elsewhere are skipped with a warning; a repeated key keeps its first record.
    """
    if not path.exists():
        return {}
    data = path.read_bytes()
    lines = data.split(b"\n")
    tail = lines.pop()  # after the last newline: b"" unless the last write was cut short
    keep = len(data) - len(tail)
    # A complete-looking but unparseable last line is also the trace of an interrupted write.
    while lines and not lines[-1].strip():
        keep -= len(lines.pop()) + 1
    if lines and not _is_json(lines[-1]):
        keep -= len(lines.pop()) + 1
    if keep != len(data):
        warnings.warn(
            f"{path}: dropped {len(data) - keep} bytes of an incomplete last record "
            "(an interrupted write); that episode will run again",
            RuntimeWarning,
            stacklevel=3,
        )
        with path.open("r+b") as handle:
            handle.truncate(keep)
            handle.flush()
            os.fsync(handle.fileno())
    done: dict[Key, dict[str, Any]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        record = _parse(line)
        if record is None:
            warnings.warn(
                f"{path}:{number}: skipping a corrupt record", RuntimeWarning, stacklevel=3
            )
            continue
        done.setdefault(_key(record), record)
    return done


def _is_json(line: bytes) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
        _key(record)
    except (ValueError, KeyError, TypeError):
        return None
    return record if isinstance(record, dict) else None


def _append(path: Path, line: str) -> None:
    """Appends one JSON line with a single write, then flushes it to disk."""
    data = (line + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_json(path: Path, payload: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(
        json.dumps(_json_safe(payload), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    os.replace(tmp, path)


# -- one episode -------------------------------------------------------------------------------


def _error_text(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def _base_env(env: Any) -> Any:
    return getattr(env, "unwrapped", env)


class _Episode:
    """One episode's bookkeeping for the evaluator: agent calls, step infos and the record.

    The lone-env loop (:func:`_run_episode`) and the vector loop (:func:`_run_vectorized`)
    drive the env differently but keep score through this one class, so both write the same
    record for the same episode.

    Failures end the episode as *errored* instead of propagating: ``error_source`` says whether
    the agent raised (``"agent"``), the env rejected its action with ``TypeError`` or
    ``ValueError`` (``"action"``), or the env failed otherwise, e.g. an LLM backend (``"env"``).

    Args:
        env: The env playing the episode (a wrapper or a :class:`~dialogue_gym.DialogueEnv`).
        agent: The system agent.
        seed: The episode seed (the env was just reset with it).
        observations: The reset observations, keyed by seat.
    """

    def __init__(self, env: Any, agent: Agent, seed: int, observations: Mapping[str, Any]) -> None:
        self.base = _base_env(env)
        self.agent = agent
        self.observation = observations[SYSTEM]
        self.steps: list[dict[str, Any]] = []
        self.error: tuple[str, str] | None = None
        self.episode: dict[str, Any] | None = None
        try:
            if callable(getattr(agent, "reset", None)):
                agent.reset(seed=seed)
        except Exception as exc:  # any agent failure is recorded, never fatal
            self.fail("agent", exc)

    @property
    def done(self) -> bool:
        """Whether the episode ended (normally or by an error)."""
        return self.error is not None or self.episode is not None

    def act(self) -> Any:
        """The agent's next action (``None``, and the episode errored, when the agent raised)."""
        try:
            return self.agent.act(self.observation)
        except Exception as exc:  # any agent failure is recorded, never fatal
            self.fail("agent", exc)
            return None

    def fail(self, source: str, exc: BaseException) -> None:
        """Ends the episode as errored by ``source`` (``"agent"``, ``"action"``, ``"env"``)."""
        self.error = (source, _error_text(exc))

    def fail_step(self, exc: BaseException) -> None:
        """Ends the episode on an exception from ``env.step`` (an action or an env failure)."""
        self.fail("action" if isinstance(exc, (TypeError, ValueError)) else "env", exc)

    def observe(
        self,
        observations: Mapping[str, Any],
        terminations: Mapping[str, Any],
        truncations: Mapping[str, Any],
        infos: Mapping[str, Any],
    ) -> None:
        """Takes one step's result (the env's dicts keyed by seat)."""
        info = infos.get(SYSTEM, {})
        self.steps.append(info)
        if SYSTEM in observations:
            self.observation = observations[SYSTEM]
        if terminations.get(SYSTEM) or truncations.get(SYSTEM):
            self.episode = dict(info.get("episode") or {})

    def record(self) -> dict[str, Any]:
        """The env's episode record plus transcript, events, errors and revealed state."""
        base, steps, error = self.base, self.steps, self.error
        record: dict[str, Any]
        if self.episode is not None:
            record = self.episode
        else:
            record = {
                "env_id": getattr(base, "env_id", None),
                "success": False,
                "success_turn": None,
                "turns": len([s for s in steps if "q" in s]),
                "T": getattr(base, "max_exchanges", None),
                "q": [s["q"] for s in steps if "q" in s],
                "s": [s["s"] for s in steps if "s" in s],
                "labels": [s["success_label"] for s in steps if "success_label" in s],
            }
        record["errored"] = error is not None
        record["error"] = None if error is None else error[1]
        record["error_source"] = None if error is None else error[0]
        record["transcript"] = [
            {"role": role, "text": text} for role, text in getattr(base, "history", ())
        ]
        revealed = dict(base.revealed()) if callable(getattr(base, "revealed", None)) else {}
        # The infos' user events leave out what names a latent concern; the revealed ones (one
        # list per completed exchange) are complete, so the record shows those.
        complete = iter(revealed.pop("user_events", ()))
        record["events"] = []
        for step in steps:
            user = step.get("user_events", [])
            if "q" in step:  # a completed exchange: its complete events, when revealed
                user = next(complete, None) or user
            record["events"].append([*user, *(f"fallback:{f}" for f in step.get("fallbacks", ()))])
        record.update(revealed)
        # Negotiation (a deal judge puts ``utility`` into every exchange's infos): the
        # sale-to-list ratio of the episode's deal, 0 without one (metrics.sl_from_steps).
        sl = metrics.sl_from_steps(steps)
        if sl is not None:
            record["sl"] = sl
        if callable(getattr(self.agent, "episode_info", None)):  # e.g. an LLM agent's fallbacks
            try:
                record["agent_info"] = self.agent.episode_info()
            except Exception as exc:  # reporting must not lose the episode
                record["agent_info"] = {"error": _error_text(exc)}
        persona = getattr(getattr(getattr(base, "user", None), "persona", None), "id", None)
        if persona is not None:
            record["persona"] = persona
        return record


def _run_episode(env: Any, agent: Agent, seed: int) -> dict[str, Any]:
    """Plays one episode on a lone env; returns its record (see :class:`_Episode`)."""
    observations, _ = env.reset(seed=seed)
    episode = _Episode(env, agent, seed, observations)
    while not episode.done:
        action = episode.act()
        if episode.done:
            break
        try:
            observations, _, terminations, truncations, infos = env.step({SYSTEM: action})
        except Exception as exc:  # an action or backend failure: recorded, the run goes on
            episode.fail_step(exc)
            break
        episode.observe(observations, terminations, truncations, infos)
    return episode.record()


def _run_vectorized(
    vec: Any,
    agents: Sequence[Agent],
    todo: Sequence[Job],
    finish: Callable[[Job, dict[str, Any]], None],
    pool: ThreadPoolExecutor | None = None,
) -> None:
    """Plays ``todo`` on the sub-envs of ``vec`` (``autoreset_mode="disabled"``), in order.

    Sub-env ``i`` plays with ``agents[i]``; each finished slot takes the next job (reset with
    its seed), so every episode is the one a lone env plays with that seed. One vector step
    moves every running episode (one batched encoding of their utterances; coalesced LLM
    calls). With ``pool`` the agents of a step act on its threads at once (an LLM agent's
    requests overlap; each agent is called by one thread at a time). ``finish`` runs on this
    thread as each episode ends.
    """
    from dialogue_gym.vector import SubEnvError

    jobs = iter(todo)
    slots: list[tuple[Job, _Episode] | None] = [None] * vec.num_envs

    def refill(i: int) -> None:
        """Finishes slot ``i``'s ended episode(s) and starts the next job there (if any)."""
        while True:
            slot = slots[i]
            if slot is not None and not slot[1].done:
                return
            if slot is not None:
                finish(slot[0], slot[1].record())
            job = next(jobs, None)
            if job is None:
                slots[i] = None
                return
            observations, _ = vec.reset_at(i, seed=job.seed)
            slots[i] = (job, _Episode(vec.envs[i], agents[i], job.seed, observations))

    for i in range(vec.num_envs):
        refill(i)
    while any(slot is not None for slot in slots):
        running = [(i, slot[1]) for i, slot in enumerate(slots) if slot is not None]
        if pool is not None and len(running) > 1:
            chosen = list(pool.map(lambda item: item[1].act(), running))
        else:
            chosen = [episode.act() for _, episode in running]
        actions: list[Any] = [None] * vec.num_envs
        for (i, episode), action in zip(running, chosen, strict=True):
            if not episode.done:
                actions[i] = {SYSTEM: action}
        # ``{SYSTEM: action}`` always passes the vector env's own check, so a malformed action
        # fails inside its sub-env's step (a ``SubEnvError`` entry), as it would in a lone env.
        errors: Mapping[int, BaseException] = {}
        if any(action is not None for action in actions):
            try:
                results = vec.step(actions)
            except SubEnvError as exc:  # the other sub-envs stepped: keep their results
                errors, results = exc.errors, exc.results
            observations, _, terminations, truncations, infos = results
            for i, action in enumerate(actions):
                if action is None:
                    continue
                episode = slots[i][1]  # type: ignore[index]
                if i in errors:
                    episode.fail_step(errors[i])
                else:
                    episode.observe(observations[i], terminations[i], truncations[i], infos[i])
        for i in range(vec.num_envs):
            refill(i)


# -- evaluate ----------------------------------------------------------------------------------


def _stamp(
    env_spec: EnvSpec,
    env: Any,
    env_kwargs: Mapping[str, Any],
    agent_kwargs: Mapping[str, Any],
    episodes: int,
    seeds: Sequence[int],
    created: str,
) -> dict[str, Any]:
    import dialogue_gym  # at call time: dialogue_gym may import this module

    base = _base_env(env)
    resolved = env_spec.resolved(**env_kwargs)
    encoder = getattr(base, "encoder", None)
    components = _components(base)
    return {
        "env": _json_safe(resolved),
        # The prompts are part of an LLM-judged configuration: a new prompt version must not
        # resume into results made with the old one.
        "config_hash": _config_hash(
            {**resolved, "components": components} if "backend" in components else resolved
        ),
        "components": components,
        "dialogue_gym_version": dialogue_gym.__version__,
        "encoder": getattr(encoder, "name", None) or resolved.get("encoder"),
        "agent_kwargs": _json_safe(dict(agent_kwargs)),
        "episodes": episodes,
        "seed": seeds[0],
        "seeds": list(seeds),
        "T": int(getattr(base, "max_exchanges", metrics.DEFAULT_T)),
        "tau_q": metrics.TAU_Q,
        "created": created,
    }


def _components(base: Any) -> dict[str, Any]:
    """Judge, user and backend identities (class names, model, prompt version)."""
    out: dict[str, Any] = {
        role: type(getattr(base, attr, None)).__name__
        for role, attr in (
            ("success_judge", "success_judge"),
            ("rationality_judge", "rationality_judge"),
            ("user", "user"),
        )
        if getattr(base, attr, None) is not None
    }
    backend = getattr(base, "backend", None)
    if backend is not None:
        from dialogue_gym.llm.prompts import PROMPT_VERSION

        out["backend"] = getattr(backend, "name", type(backend).__name__)
        out["prompt_version"] = PROMPT_VERSION
    return out


def _usage(env: Any, agent: Any = None) -> dict[str, Any]:
    """Per-component calls, tokens, cost, retries and errors of the env's and agent's backends.

    An LLM agent exposes its own backend's counters as a ``usage`` mapping (``agent.system``);
    they are added unless the agent shares the env's backend (counted once).
    """
    backend = getattr(_base_env(env), "backend", None)
    usage = dict(getattr(backend, "usage", None) or {})
    agent_backend = getattr(agent, "backend", None)
    if agent_backend is None or agent_backend is not backend:
        agent_usage = getattr(agent, "usage", None)
        if isinstance(agent_usage, Mapping):
            usage.update(agent_usage)
    return {
        name: dataclasses.asdict(u) if dataclasses.is_dataclass(u) else dict(u)
        for name, u in usage.items()
    }


def _merge_usage(parts: Sequence[Mapping[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """Sums per-component usage counters over several envs' backends."""
    total: dict[str, dict[str, Any]] = {}
    for part in parts:
        for component, counters in part.items():
            into = total.setdefault(component, {})
            for key, value in counters.items():
                into[key] = into.get(key, 0) + value
    return total


@dataclasses.dataclass
class _Tally:
    """Running SR/RCSR counts for the progress bar (O(1) per episode)."""

    T: int
    n: int = 0
    errored: int = 0
    successes: int = 0
    rc_successes: int = 0
    sl_total: float | None = None  # negotiation tasks only

    def add(self, record: Mapping[str, Any]) -> None:
        if record.get("errored"):
            self.errored += 1
            return
        self.n += 1
        self.successes += metrics.success_within(record, self.T)
        self.rc_successes += metrics.rc_success_within(record, self.T)
        sl = metrics.episode_sl(record)
        if sl is not None:
            self.sl_total = (self.sl_total or 0.0) + sl

    def postfix(self) -> dict[str, str]:
        if not self.n:
            return {"SR": "n/a", "RCSR": "n/a", "err": str(self.errored)}
        out = {"SR": f"{self.successes / self.n:.2f}"}
        if self.sl_total is not None:
            out["SL"] = f"{self.sl_total / self.n:.2f}"
        out["RCSR"] = f"{self.rc_successes / self.n:.2f}"
        out["err"] = str(self.errored)
        return out


def evaluate(
    agents: Sequence[str] | str,
    env_ids: Sequence[str] | str,
    episodes: int = 100,
    seed: int = 0,
    out: str | Path | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    agent_kwargs: Mapping[str, Any] | None = None,
    progress: bool = True,
    concurrency: int = 1,
    seeds: Sequence[int] | None = None,
    executor: str = "local",
    ray_address: str | None = None,
    num_envs: int = 1,
) -> EvalResult:
    """Evaluates each agent on each env for ``episodes`` seeded episodes.

    Episode ``i`` uses ``env.reset(seed=seed + i)`` and ``agent.reset(seed=seed + i)`` (when the
    agent has ``reset``). The env is built once per (agent, env id) with
    ``make(env_id, **env_kwargs)``; the agent with ``make_agent(name, card=env.card,
    **agent_kwargs)``. With ``out``, records are appended to ``out/episodes.jsonl`` as each
    episode ends and episodes already there are skipped (resume), and ``out/summary.json`` is
    written at the end.

    Args:
        agents: Agent name(s): an entry-point name, ``"module:Class"`` or ``"file.py:Class"``.
        env_ids: Registered env id(s); unversioned ids resolve to the latest version.
        episodes: Episodes per (agent, env id), 1 to 1,000,000.
        seed: Seed of episode 0 (a non-negative int).
        out: Output directory (created if missing), or ``None`` to write nothing.
        env_kwargs: Overrides passed to every ``make`` (e.g. ``{"encoder": "hashing"}``).
        agent_kwargs: Extra keyword arguments for every agent factory.
        progress: Show a progress bar per (agent, env id) with the running SR and RCSR.
        concurrency: Episodes run at once. Locally: worker threads, each with its own env
            and agent — for LLM-backed components, whose calls wait on the network; the
            workers share one backend (and its cache), so the backend's ``max_concurrency``
            option caps the requests in flight across all of them. With Ray: the number of
            Ray workers (``1``: one per CPU of the cluster). Results do not depend on it
            (episode ``i`` is seeded by ``seed + i`` whichever worker plays it).
        seeds: Several base seeds instead of ``seed``: each plays ``episodes`` episodes
            seeded ``s, s + 1, ...``, and the summaries pool them (with a ``per_seed``
            breakdown). The blocks must not overlap (e.g. ``[0, 1000, 2000]`` for up to 1,000
            episodes).
        executor: ``"local"`` (this process; threads when ``concurrency > 1``) or ``"ray"``
            (Ray workers; ``pip install "dialogue-gym[ray]"``). Records stream back into the
            same files and summaries; the same seeds give the same records either way.
        ray_address: The Ray cluster to join (``ray.init(address=...)``); ``None`` starts or
            reuses a local Ray instance.
        num_envs: Play the episodes on a :mod:`dialogue_gym.vector` env of this many
            sub-envs (each with its own agent; the agents of a step act at once on worker
            threads): every vector step moves up to ``num_envs`` episodes with one batched
            encoding of their utterances and one coalesced backend call per LLM component.
            Local executor, ``concurrency=1`` only. Results do not depend on it.

    Returns:
        The records and summaries (see :class:`EvalResult`).

    Raises:
        ValueError: Bad ``episodes``/``seed``/names, or ``env_kwargs`` that make an env whose
            system seat is not the only external one.
        RegistryError: An unknown env id (with the closest registered ids).
        AgentResolutionError: An unknown agent name.
    """
    episodes = _check_episodes(episodes)
    base_seeds = _check_seeds(seed, seeds, episodes)
    if not _is_int(concurrency) or concurrency < 1:
        raise ValueError(f"concurrency must be a positive int, got {concurrency!r}")
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    if ray_address is not None and executor != "ray":
        raise ValueError("ray_address is only used with executor='ray'")
    if not _is_int(num_envs) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
    if num_envs > 1 and (concurrency > 1 or executor != "local"):
        raise ValueError(
            "num_envs > 1 (a vector env in this process) cannot be combined with "
            f"concurrency > 1 or executor='ray'; got concurrency={concurrency}, "
            f"executor={executor!r}"
        )
    agent_names = _names(agents, "agent")
    specs = [spec(env_id) for env_id in _names(env_ids, "env id")]
    for name in agent_names:
        agent_factory(name)  # fail fast, before any episode runs
    env_kwargs = dict(env_kwargs or {})
    agent_kwargs = dict(agent_kwargs or {})
    created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")

    out_dir = Path(out) if out is not None else None
    plan = _Plan(
        episodes,
        base_seeds,
        agent_kwargs,
        progress,
        env_kwargs,
        concurrency,
        executor=executor,
        ray_address=ray_address,
        num_envs=int(num_envs),
    )
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        plan.episodes_path = out_dir / EPISODES_FILE
        plan.done = _load_done(plan.episodes_path)

    records: list[dict[str, Any]] = []
    summaries: list[dict[str, Any]] = []
    for name in agent_names:
        for env_spec in specs:
            env = make(env_spec.id, **env_kwargs)
            try:
                config = _stamp(
                    env_spec, env, env_kwargs, agent_kwargs, episodes, base_seeds, created
                )
                pair = _run_pair(plan, name, env_spec.id, env, config)
                usage = _merge_usage([_usage(env), *plan.worker_usage])
                plan.worker_usage.clear()
            finally:
                env.close()
            records.extend(pair)
            summary = metrics.summarize(pair, T=config["T"], tau_q=config["tau_q"])
            if len(base_seeds) > 1:
                summary["per_seed"] = _per_seed(pair, base_seeds, config)
            if usage:
                summary["usage"] = usage
            summaries.append({"agent": name, "env_id": env_spec.id, **summary, "config": config})

    if out_dir is not None:
        _write_json(out_dir / SUMMARY_FILE, {"created": created, "summaries": summaries})
    return EvalResult(records=records, summaries=summaries, out=out_dir)


@dataclasses.dataclass
class _Plan:
    """The settings shared by every (agent, env id) pair of one :func:`evaluate` call."""

    episodes: int
    seeds: Sequence[int]
    agent_kwargs: Mapping[str, Any]
    progress: bool
    env_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    concurrency: int = 1
    executor: str = "local"
    ray_address: str | None = None
    num_envs: int = 1
    episodes_path: Path | None = None
    worker_usage: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    done: Mapping[Key, dict[str, Any]] = dataclasses.field(default_factory=dict)


def _run_pair(
    plan: _Plan, name: str, env_id: str, env: Any, config: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Runs the missing episodes of one (agent, env id) pair; returns all its records."""
    base = _base_env(env)
    if tuple(getattr(base, "external", (SYSTEM,))) != (SYSTEM,):
        raise ValueError(
            f"evaluate() drives the system seat only; {env_id} was built with "
            f"external={getattr(base, 'external', None)!r}"
        )
    jobs = [Job(i, base + i) for base in plan.seeds for i in range(plan.episodes)]
    found = {job: plan.done.get((name, env_id, job.episode, job.seed)) for job in jobs}
    for job, record in found.items():
        stamped = None if record is None else record.get("config_hash")
        if stamped is not None and stamped != config["config_hash"]:
            raise ValueError(
                f"the results file already holds episode {job.episode} (seed {job.seed}) of "
                f"{name} on {env_id} from a different configuration (config_hash {stamped} != "
                f"{config['config_hash']}); use another output directory"
            )
    records: list[dict[str, Any]] = [r for r in found.values() if r is not None]
    todo = [job for job, record in found.items() if record is None]
    bar = tqdm(
        total=len(jobs),
        initial=len(records),
        desc=f"{name} | {env_id}",
        unit="ep",
        disable=None if plan.progress else True,
        dynamic_ncols=True,
    )
    tally = _Tally(int(config["T"]))
    for record in records:
        tally.add(record)
    card = getattr(base, "card", None)

    def finish(job: Job, result: dict[str, Any]) -> None:
        line = _dumps(
            {
                **result,
                "agent": name,
                "env_id": env_id,
                "episode": job.episode,
                "seed": job.seed,
                "config_hash": config["config_hash"],
            }
        )
        if plan.episodes_path is not None:
            _append(plan.episodes_path, line)
        record = json.loads(line)  # exactly what a resumed run reads back
        records.append(record)
        tally.add(record)
        bar.set_postfix(tally.postfix(), refresh=False)
        bar.update(1)

    with bar:
        bar.set_postfix(tally.postfix())
        if todo and plan.executor == "ray":
            from dialogue_gym.executors import run_on_ray

            plan.worker_usage.extend(
                run_on_ray(
                    todo,
                    finish,
                    env_id=env_id,
                    agent=name,
                    env_kwargs=plan.env_kwargs,
                    agent_kwargs=plan.agent_kwargs,
                    workers=plan.concurrency,
                    address=plan.ray_address,
                )
            )
        elif todo and plan.num_envs > 1:
            _play_on_vector(plan, name, env_id, card, todo, finish, getattr(base, "backend", None))
        elif todo and plan.concurrency == 1:
            agent = make_agent(name, card=card, **plan.agent_kwargs)
            for job in todo:
                finish(job, _run_episode(env, agent, job.seed))
            plan.worker_usage.append(_usage(None, agent))
        elif todo:
            _run_concurrently(
                plan, name, env_id, card, todo, finish, getattr(base, "backend", None)
            )
    records.sort(key=lambda r: (r["seed"] - r["episode"], r["episode"]))
    return records


def _shared_backend_kwargs(plan: _Plan, shared_backend: Any) -> dict[str, Any]:
    """``plan.env_kwargs`` for more envs of the pair that use its env's backend.

    They share the pair's backend: one request limit (its ``max_concurrency``), one HTTP
    connection pool, one cache connection and one usage account for the whole pair.
    """
    kwargs = dict(plan.env_kwargs)
    if shared_backend is not None:
        kwargs.update(backend=shared_backend, backend_cache=None, backend_options=None)
    return kwargs


def _play_on_vector(
    plan: _Plan,
    name: str,
    env_id: str,
    card: Any,
    todo: Sequence[Job],
    finish: Callable[[Job, dict[str, Any]], None],
    shared_backend: Any = None,
) -> None:
    """Plays ``todo`` on a vector env of ``plan.num_envs`` sub-envs (:func:`_run_vectorized`)."""
    from dialogue_gym.vector import make_vec

    num_envs = min(plan.num_envs, len(todo))
    agents = [make_agent(name, card=card, **plan.agent_kwargs) for _ in range(num_envs)]
    vec = make_vec(
        env_id,
        num_envs,
        autoreset_mode="disabled",
        **_shared_backend_kwargs(plan, shared_backend),
    )
    try:
        with ThreadPoolExecutor(max_workers=num_envs, thread_name_prefix="agent") as pool:
            _run_vectorized(vec, agents, todo, finish, pool)
    finally:
        vec.close()
        for agent in agents:
            plan.worker_usage.append(_usage(None, agent))


def _run_concurrently(
    plan: _Plan,
    name: str,
    env_id: str,
    card: Any,
    todo: Sequence[Job],
    finish: Callable[[Job, dict[str, Any]], None],
    shared_backend: Any = None,
) -> None:
    """Plays ``todo`` on ``plan.concurrency`` threads, one env and agent per thread.

    ``finish`` (writing, tallying) runs on this thread only, in completion order.
    """
    local = threading.local()
    built: list[Any] = []
    lock = threading.Lock()

    worker_kwargs = _shared_backend_kwargs(plan, shared_backend)

    def play(job: Job) -> tuple[Job, dict[str, Any]]:
        if not hasattr(local, "env"):
            local.env = make(env_id, **worker_kwargs)
            local.agent = make_agent(name, card=card, **plan.agent_kwargs)
            with lock:
                built.append((local.env, local.agent))
        return job, _run_episode(local.env, local.agent, job.seed)

    try:
        with ThreadPoolExecutor(max_workers=plan.concurrency) as pool:
            for future in as_completed([pool.submit(play, job) for job in todo]):
                finish(*future.result())
    finally:
        for env, agent in built:
            plan.worker_usage.append(_usage(env if shared_backend is None else None, agent))
            env.close()
