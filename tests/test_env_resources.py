"""DialogueEnv releases what it opened and renders without noise (issue 16)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import dialogue_gym


def _open_paths() -> list[str]:
    """Targets of this process's open file descriptors."""
    paths = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # closed while listing
            continue
    return paths


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_close_closes_the_backend_cache_connection(tmp_path: Path) -> None:
    cache = tmp_path / "calls.sqlite"
    env = dialogue_gym.make(
        "P4G-hard", encoder="hashing", judges="llm", backend="fake", backend_cache=str(cache)
    )
    env.reset(seed=0)
    env.step({"system": "Hello! Would you donate to Save the Children?"})
    assert any(p == str(cache) for p in _open_paths())
    env.close()
    assert not [p for p in _open_paths() if p.startswith(str(cache))]


def test_close_leaves_a_backend_passed_in_open(tmp_path: Path) -> None:
    from dialogue_gym.backends import make_backend

    backend = make_backend("fake", cache=tmp_path / "calls.sqlite")
    env = dialogue_gym.make("P4G-hard", encoder="hashing", judges="llm", backend=backend)
    env.close()
    # The caller's backend still has its connection (the env did not own it).
    assert backend.cache._connections


def test_human_render_mode_prints_the_transcript_only(capsys: pytest.CaptureFixture[str]) -> None:
    env = dialogue_gym.make("P4G-hard", encoder="hashing", render_mode="human")
    env.reset(seed=0)
    env.step({"system": "Hello! How are you today?"})
    lines = capsys.readouterr().out.splitlines()
    assert lines and lines[0].startswith("[P4G-hard")
    assert "None" not in lines
    env.close()
