"""What an output folder was run with, so that a resume cannot mix configurations.

Everything that changes an episode's transcript is pinned per (agent, env id) of a folder:

* the env: its resolved spec (and LLM component identities) — the records' ``config_hash``;
* the agent: its name and factory options (``--agent-option``, ``--base-url``) — the
  records' ``agent_hash`` (:func:`agent_hash`).

``DIR/run.json`` (:data:`~dialogue_gym.journal.MANIFEST_FILE`) keeps the options themselves,
written before the first episode, so that a resume with other options is refused with a
message naming each differing option (:func:`check_settings`); the per-record hashes catch a
folder whose manifest is gone. Options that do not change what is played (``--concurrency``,
``--num-envs``, ``--executor``, the number of episodes, progress bars) are not pinned.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dialogue_gym import metrics
from dialogue_gym.agents import OPENAI_PREFIX, _names_parameter, agent_factory
from dialogue_gym.journal import MANIFEST_FILE, JournalError, write_json
from dialogue_gym.version import __version__

if TYPE_CHECKING:
    from dialogue_gym.registry import EnvSpec

__all__ = [
    "FORMAT",
    "ConfigMismatchError",
    "agent_hash",
    "check_settings",
    "check_stamps",
    "components",
    "config_hash",
    "json_safe",
    "read_manifest",
    "received_options",
    "stamp",
    "write_manifest",
]

FORMAT = 1
"""Version of the ``run.json`` layout."""

_MISSING = object()
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


class ConfigMismatchError(ValueError):
    """A resume whose settings differ from those the folder's episodes were played with."""


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def agent_hash(name: str, options: Mapping[str, Any]) -> str:
    """Hash of an agent's name and its JSON-safe factory options (16 hex digits)."""
    payload = _canonical({"agent": name, "options": dict(options)})
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def read_manifest(directory: Path) -> dict[str, Any]:
    """The folder's ``run.json`` (``{"format": 1, "pairs": [...]}``; empty when absent).

    Raises:
        JournalError: The file exists but is not a manifest.
    """
    path = directory / MANIFEST_FILE
    if not path.exists():
        return {"format": FORMAT, "pairs": []}
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise JournalError(f"{path}: unreadable run settings ({exc})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("pairs"), list):
        raise JournalError(f"{path}: not a dialogue-gym run settings file")
    return manifest


def _diff(kind: str, stored: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    lines = []
    for key in sorted(set(stored) | set(current)):
        was, now = stored.get(key, _MISSING), current.get(key, _MISSING)
        if was == now:
            continue
        was_text = "not set" if was is _MISSING else f"{_canonical(was)}"
        now_text = "not set" if now is _MISSING else f"{_canonical(now)}"
        line = f"{kind} option {key!r}: {was_text} in the run, {now_text} now"
        if _same_file(was, now):
            # Options are the run's identity as written (every record's hash is of them), so
            # a path spelled otherwise differs; say so, since the file is the same.
            line += " (the same file spelled differently: options are compared as written)"
        lines.append(line)
    return lines


def _same_file(a: Any, b: Any) -> bool:
    """Whether two option values are path strings naming one existing file or folder."""
    if not (isinstance(a, str) and isinstance(b, str)):
        return False
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def check_settings(
    directory: Path,
    manifest: Mapping[str, Any],
    pairs: Mapping[tuple[str, str], Mapping[str, Any]],
    env_options: Mapping[str, Any],
) -> dict[str, Any]:
    """Refuses settings that differ from the folder's; returns the manifest to write.

    Args:
        directory: The output folder (named in the error).
        manifest: Its :func:`read_manifest`.
        pairs: The (agent, env id) pairs of this call, each with the JSON-safe factory
            options its agent receives.
        env_options: JSON-safe ``make`` overrides of this call.

    Returns:
        The manifest with the pairs of this call added.

    Raises:
        ConfigMismatchError: A pair already in the folder was run with other options; the
            message names every differing option.
    """
    entries = {
        (e.get("agent"), e.get("env_id")): e for e in manifest["pairs"] if isinstance(e, dict)
    }
    added = []
    for (agent, env_id), agent_options in pairs.items():
        entry = entries.get((agent, env_id))
        if entry is None:
            added.append(
                {
                    "agent": agent,
                    "env_id": env_id,
                    "agent_options": dict(agent_options),
                    "agent_hash": agent_hash(agent, agent_options),
                    "env_options": dict(env_options),
                }
            )
            continue
        problems = _diff("agent", entry.get("agent_options") or {}, agent_options)
        stored = entry.get("env_options") or {}
        problems += _diff("env", outcome_options(stored), outcome_options(env_options))
        if problems:
            raise ConfigMismatchError(
                f"{directory} holds episodes of {agent} on {env_id} from a different "
                f"configuration: {'; '.join(problems)}. Resume with the same options, or use "
                "another output directory"
            )
    return {**manifest, "format": FORMAT, "pairs": [*manifest["pairs"], *added]}


def write_manifest(directory: Path, manifest: Mapping[str, Any]) -> None:
    """Writes ``run.json`` atomically."""
    write_json(directory / MANIFEST_FILE, dict(manifest))


# -- config stamps -----------------------------------------------------------------------------


def json_safe(value: Any) -> Any:
    """Plain JSON types as they are; anything else as its ``repr`` without memory addresses."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        try:
            return json_safe(value.item())
        except (TypeError, ValueError):
            pass
    if hasattr(value, "tolist") and callable(value.tolist):  # numpy arrays
        return json_safe(value.tolist())
    return _ADDRESS.sub("", repr(value))


RUNTIME_ONLY = frozenset({"threads"})
"""Env options that change how fast episodes run, never what is played (may differ on resume)."""


def outcome_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` without the :data:`RUNTIME_ONLY` ones: what decides the transcripts."""
    return {k: v for k, v in options.items() if k not in RUNTIME_ONLY}


def config_hash(resolved: Mapping[str, Any]) -> str:
    """Hash of the JSON-safe resolved config; equals ``EnvSpec.config_hash`` for plain kwargs."""
    payload = json.dumps(json_safe(resolved), sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def stamp(
    env_spec: EnvSpec,
    env: Any,
    env_kwargs: Mapping[str, Any],
    agent_kwargs: Mapping[str, Any],
    episodes: int,
    seeds: Sequence[int],
    created: str,
) -> dict[str, Any]:
    """The ``config`` stamp of an (agent, env id) summary: what its episodes were played with.

    ``config_hash`` covers the resolved env spec (and, with an LLM backend, the component
    identities and prompt version); :func:`dialogue_gym.evaluate` adds the agent's options
    and ``agent_hash``.
    """
    base = getattr(env, "unwrapped", env)
    resolved = env_spec.resolved(**env_kwargs)
    hashed = outcome_options(resolved)
    encoder = getattr(base, "encoder", None)
    parts = components(base)
    return {
        "env": json_safe(resolved),
        # The prompts are part of an LLM-judged configuration: a new prompt version must not
        # resume into results made with the old one.
        "config_hash": config_hash(
            {**hashed, "components": parts} if "backend" in parts else hashed
        ),
        "components": parts,
        "dialogue_gym_version": __version__,
        "encoder": getattr(encoder, "name", None) or resolved.get("encoder"),
        "agent_kwargs": json_safe(dict(agent_kwargs)),
        "episodes": episodes,
        "seed": seeds[0],
        "seeds": list(seeds),
        "T": int(getattr(base, "max_exchanges", metrics.DEFAULT_T)),
        "tau_q": metrics.TAU_Q,
        "created": created,
    }


def components(base: Any) -> dict[str, Any]:
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


def received_options(
    name: str, options: Mapping[str, Any], factory: Callable[..., Any] | None = None
) -> dict[str, Any]:
    """The options ``make_agent`` passes to the agent ``name`` (``base_url`` only if it uses it).

    Args:
        name: The agent's name.
        options: The agent options of the run.
        factory: The agent's factory (default: ``agent_factory(name)``).
    """
    received = dict(options)
    if (
        "base_url" in received
        and not name.startswith(OPENAI_PREFIX)
        and not _names_parameter(factory or agent_factory(name), "base_url")
    ):
        del received["base_url"]
    return received


def check_stamps(record: Mapping[str, Any], config: Mapping[str, Any]) -> None:
    """Refuses a recorded episode whose env or agent stamp differs from ``config``'s.

    Raises:
        ConfigMismatchError: A differing ``config_hash`` or ``agent_hash``, or a record
            without them (written by an older dialogue-gym).
    """
    what = (
        f"the results file already holds episode {record['episode']} (seed {record['seed']}) "
        f"of {record['agent']} on {record['env_id']}"
    )
    for field, kind in (("config_hash", "env"), ("agent_hash", "agent")):
        stamped = record.get(field)
        if stamped is None:
            raise ConfigMismatchError(
                f"{what} without the {kind} configuration stamp ({field}) that resuming needs "
                "(written by an older dialogue-gym); use another output directory"
            )
        if stamped != config[field]:
            raise ConfigMismatchError(
                f"{what} from a different {kind} configuration ({field} {stamped} != "
                f"{config[field]}); use another output directory"
            )
