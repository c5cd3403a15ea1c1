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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dialogue_gym.journal import MANIFEST_FILE, JournalError, write_json

__all__ = [
    "FORMAT",
    "ConfigMismatchError",
    "agent_hash",
    "check_settings",
    "read_manifest",
    "write_manifest",
]

FORMAT = 1
"""Version of the ``run.json`` layout."""

_MISSING = object()


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
        lines.append(f"{kind} option {key!r}: {was_text} in the run, {now_text} now")
    return lines


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
        problems += _diff("env", entry.get("env_options") or {}, env_options)
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
