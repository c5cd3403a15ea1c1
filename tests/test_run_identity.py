"""How requests travel is not part of a run's identity (issue 36, item 5).

A run moved to another endpoint of the same model (another ``base_url``, timeout, retries or
request concurrency) resumes; another model, temperature or prompt is still refused. Folders
written before this change, whose hashes included those options, still resume.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from test_evaluation import install_tiny, read_jsonl
from test_llm_eval import judge_reply

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.evaluation.journal import MANIFEST_FILE
from dialogue_gym.evaluation.run import EPISODES_FILE, SUMMARY_FILE, evaluate
from dialogue_gym.evaluation.run_config import ConfigMismatchError
from dialogue_gym.testing.server import TestServer

REMOTE = f"{__name__}:Remote"


class Remote:
    """An agent with an LLM agent's transport options and a sampling option (no requests)."""

    def __init__(
        self,
        card: TaskCard,
        base_url: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 5,
        temperature: float = 0.7,
        backend_options: dict[str, Any] | None = None,
    ) -> None:
        self.card = card

    def act(self, observation: dict[str, Any]) -> str:
        return "Would you donate to the charity?"


def _options(url: str, timeout: float, retries: int, concurrency: int) -> dict[str, Any]:
    return {
        "base_url": url,
        "timeout": timeout,
        "max_retries": retries,
        "temperature": 0.2,
        "backend_options": {"max_concurrency": concurrency, "api_key_env": "DG_OTHER_KEY"},
    }


def test_an_agent_moved_to_another_endpoint_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tiny = install_tiny(monkeypatch, tmp_path)
    out = tmp_path / "run"
    kwargs: dict[str, Any] = {"out": out, "progress": False}
    evaluate(REMOTE, tiny, episodes=2, agent_kwargs=_options("http://a/v1", 5, 1, 4), **kwargs)
    before = (out / EPISODES_FILE).read_bytes()

    moved = _options("http://b:8000/v1", 60, 0, 32)
    result = evaluate(REMOTE, tiny, episodes=4, agent_kwargs=moved, **kwargs)
    assert (out / EPISODES_FILE).read_bytes().startswith(before)
    assert sorted(r["episode"] for r in read_jsonl(out / EPISODES_FILE)) == [0, 1, 2, 3]
    assert result.summaries[0]["config"]["agent_kwargs"]["base_url"] == "http://b:8000/v1"

    hotter = {**moved, "temperature": 0.9}
    with pytest.raises(ConfigMismatchError, match=r"agent option 'temperature': 0\.2 in the run"):
        evaluate(REMOTE, tiny, episodes=4, agent_kwargs=hotter, **kwargs)


def _judged(server: TestServer, timeout: float, concurrency: int) -> dict[str, Any]:
    """Env options with the LLM judges on ``server``."""
    return {
        "encoder": "hashing",
        "max_exchanges": 2,
        "judges": "llm",
        "backend": "openai:test-judge",
        "backend_options": {
            "base_url": server.url,
            "api_key_env": "DG_TEST_KEY",
            "timeout": timeout,
            "max_concurrency": concurrency,
        },
    }


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("DG_TEST_KEY", "sk-test-identity")
    with TestServer(replies=judge_reply) as first, TestServer(replies=judge_reply) as second:
        yield first, second


def test_an_env_backend_moved_to_another_endpoint_resumes(servers: Any, tmp_path: Path) -> None:
    first, second = servers
    kwargs: dict[str, Any] = {"out": tmp_path, "progress": False, "agent_kwargs": {}}
    evaluate(REMOTE, "P4G-hard", episodes=1, env_kwargs=_judged(first, 10, 2), **kwargs)
    asked = len(first.chat_requests)
    evaluate(REMOTE, "P4G-hard", episodes=2, env_kwargs=_judged(second, 20, 8), **kwargs)
    assert second.chat_requests and len(first.chat_requests) == asked  # the new endpoint played
    records = read_jsonl(tmp_path / EPISODES_FILE)
    assert [r["episode"] for r in records] == [0, 1]
    assert len({r["config_hash"] for r in records}) == 1

    other_model = {**_judged(second, 20, 8), "backend": "openai:other-judge"}
    with pytest.raises(ConfigMismatchError, match="env option 'backend'"):
        evaluate(REMOTE, "P4G-hard", episodes=3, env_kwargs=other_model, **kwargs)


# -- folders written before transport left the identity ----------------------------------------


def _sha(payload: str) -> str:
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def _old_agent_hash(name: str, options: dict[str, Any]) -> str:
    """An agent hash as dialogue-gym wrote it before issue 36: every option in it."""
    return _sha(json.dumps({"agent": name, "options": options}, sort_keys=True, ensure_ascii=False))


def _old_config_hash(config: dict[str, Any]) -> str:
    """An env hash as dialogue-gym wrote it before issue 36: every option but ``threads``."""
    hashed = {k: v for k, v in config["env"].items() if k != "threads"}
    return _sha(json.dumps({**hashed, "components": config["components"]}, sort_keys=True))


def _to_old_format(out: Path) -> None:
    """Rewrites the folder's hashes the way the evaluator wrote them before issue 36."""
    (row,) = json.loads((out / SUMMARY_FILE).read_text(encoding="utf-8"))["summaries"]
    config = row["config"]
    old = {
        "config_hash": _old_config_hash(config),
        "agent_hash": _old_agent_hash(row["agent"], config["agent_kwargs"]),
    }
    assert old["config_hash"] != config["config_hash"]  # transport options were in them
    assert old["agent_hash"] != config["agent_hash"]
    lines = [json.dumps({**r, **old}) for r in read_jsonl(out / EPISODES_FILE)]
    (out / EPISODES_FILE).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    manifest = json.loads((out / MANIFEST_FILE).read_text(encoding="utf-8"))
    for entry in manifest["pairs"]:
        entry["agent_hash"] = old["agent_hash"]
    (out / MANIFEST_FILE).write_text(json.dumps(manifest), encoding="utf-8")


def test_a_folder_written_before_the_change_resumes(servers: Any, tmp_path: Path) -> None:
    first, second = servers

    def run(episodes: int, server: TestServer, agent_options: dict[str, Any]) -> None:
        env_kwargs = _judged(server, 10 if server is first else 30, 2 if server is first else 8)
        evaluate(
            REMOTE,
            "P4G-hard",
            episodes=episodes,
            out=tmp_path,
            progress=False,
            env_kwargs=env_kwargs,
            agent_kwargs=agent_options,
        )

    old_agent = _options(first.url, 5, 1, 4)
    run(2, first, old_agent)
    _to_old_format(tmp_path)
    old_lines = (tmp_path / EPISODES_FILE).read_bytes()

    run(3, first, old_agent)  # the same options as then: the old hashes are this call's
    new_agent = _options(second.url, 60, 0, 16)
    run(4, second, new_agent)  # another endpoint: the old hashes are of run.json's options

    assert (tmp_path / EPISODES_FILE).read_bytes().startswith(old_lines)
    assert [r["episode"] for r in read_jsonl(tmp_path / EPISODES_FILE)] == [0, 1, 2, 3]
    with pytest.raises(ConfigMismatchError, match="agent option 'temperature'"):
        run(4, second, {**new_agent, "temperature": 1.0})
