"""What an output folder was run with, so that a resume cannot mix configurations.

Everything that changes an episode's transcript is pinned per (agent, env id) of a folder:

* the env: its resolved spec (and LLM component identities) — the records' ``config_hash``;
* the agent: its name and factory options (``--agent-option``, ``--base-url``) — the
  records' ``agent_hash`` (:func:`agent_hash`).

``DIR/run.json`` (:data:`~dialogue_gym.evaluation.journal.MANIFEST_FILE`) keeps the options
themselves,
written before the first episode, so that a resume with other options is refused with a
message naming each differing option (:func:`check_settings`); the per-record hashes catch a
folder whose manifest is gone. Options that do not change what is played (``--concurrency``,
``--num-envs``, ``--executor``, the number of episodes, progress bars) are not pinned, and
neither is how requests reach the model (:data:`TRANSPORT`: ``--base-url``, the API key's
variable, timeouts, retries, request concurrency), so a run moved to another endpoint of the
same model resumes; the model, its sampling options and the prompts stay pinned.

Records written before transport options left the identity carry hashes that include them;
a resume still accepts those (:func:`earlier_hashes`), from the options the folder's
``run.json`` holds or the same options as now.
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
from dialogue_gym.evaluation.agents import OPENAI_PREFIX, _names_parameter, agent_factory
from dialogue_gym.evaluation.journal import MANIFEST_FILE, JournalError, write_json
from dialogue_gym.version import __version__

if TYPE_CHECKING:
    from dialogue_gym.env.registry import EnvSpec

__all__ = [
    "FORMAT",
    "TRANSPORT",
    "ConfigMismatchError",
    "agent_hash",
    "check_settings",
    "check_stamps",
    "components",
    "config_hash",
    "earlier_hashes",
    "identity_options",
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
                    "agent_hash": agent_hash(agent, identity_options(agent_options)),
                    "env_options": dict(env_options),
                }
            )
            continue
        stored_agent = entry.get("agent_options") or {}
        problems = _diff("agent", identity_options(stored_agent), identity_options(agent_options))
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

TRANSPORT = frozenset(
    {
        "base_url",
        "api_key_env",
        "timeout",
        "max_retries",
        "max_concurrency",
        "base_delay",
        "max_delay",
        "max_retry_after",
    }
)
"""Backend options that say how requests reach the model (endpoint, key, waits, retries, how
many at once), not which model answers or what it is asked: not part of a run's identity,
whether given as agent options or inside an agent's or env's ``backend_options``."""


def identity_options(
    options: Mapping[str, Any], leave_out: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """``options`` without :data:`TRANSPORT` (nor ``leave_out``): what a run's identity holds.

    Transport options are left out at the top level and inside ``backend_options`` (which is
    left out altogether when nothing else is in it).
    """
    kept: dict[str, Any] = {}
    for key, value in options.items():
        if key in TRANSPORT or key in leave_out:
            continue
        if key == "backend_options" and isinstance(value, Mapping):
            value = {k: v for k, v in value.items() if k not in TRANSPORT}
            if not value:
                continue
        kept[key] = value
    return kept


def outcome_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Env ``options`` without :data:`RUNTIME_ONLY` and transport ones: what decides the play."""
    return identity_options(options, RUNTIME_ONLY)


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
    encoder = getattr(base, "encoder", None)
    parts = components(base)
    return {
        "env": json_safe(resolved),
        "config_hash": _env_hash(outcome_options(resolved), parts),
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


def _env_hash(hashed: Mapping[str, Any], parts: Mapping[str, Any]) -> str:
    """``config_hash`` of the env options that decide the play, with an LLM's components."""
    # The prompts are part of an LLM-judged configuration: a new prompt version must not
    # resume into results made with the old one.
    return config_hash({**hashed, "components": parts} if "backend" in parts else dict(hashed))


def earlier_hashes(
    manifest: Mapping[str, Any],
    pair: tuple[str, str],
    config: Mapping[str, Any],
    env_spec: EnvSpec,
    env_options: Mapping[str, Any],
) -> dict[str, set[str]]:
    """The hashes of ``pair``'s records written before transport left a run's identity.

    Those records hashed every option but the env's ``threads``, transport ones included.
    A resume accepts them when they come from the options the folder's ``run.json`` holds
    for the pair (:func:`check_settings` has checked that these differ from this call's in
    transport options at most) or from this call's options.

    Args:
        manifest: The folder's :func:`read_manifest`, as it was before this call.
        pair: The agent and env id.
        config: The pair's stamp (:func:`stamp`, with the agent's ``agent_kwargs``).
        env_spec: The env id's spec.
        env_options: This call's ``make`` overrides.

    Returns:
        ``{"config_hash": {...}, "agent_hash": {...}}``: the extra hashes accepted.
    """
    agent_options = [config["agent_kwargs"]]
    all_env_options = [env_options]
    for entry in manifest.get("pairs", ()):
        if isinstance(entry, dict) and (entry.get("agent"), entry.get("env_id")) == pair:
            agent_options.append(entry.get("agent_options") or {})
            all_env_options.append(entry.get("env_options") or {})
    parts = config["components"]

    def old_env_hash(options: Mapping[str, Any]) -> str:
        resolved = env_spec.resolved(**options)
        return _env_hash({k: v for k, v in resolved.items() if k not in RUNTIME_ONLY}, parts)

    return {
        "config_hash": {old_env_hash(options) for options in all_env_options},
        "agent_hash": {agent_hash(pair[0], options) for options in agent_options},
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


def check_stamps(
    record: Mapping[str, Any],
    config: Mapping[str, Any],
    earlier: Mapping[str, set[str]] | None = None,
) -> None:
    """Refuses a recorded episode whose env or agent stamp differs from ``config``'s.

    Args:
        record: The recorded episode.
        config: The stamp of this call's pair.
        earlier: Other hashes accepted per field (:func:`earlier_hashes`).

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
        if stamped != config[field] and stamped not in (earlier or {}).get(field, ()):
            raise ConfigMismatchError(
                f"{what} from a different {kind} configuration ({field} {stamped} != "
                f"{config[field]}); use another output directory"
            )
