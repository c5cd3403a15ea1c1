"""A run that started Ray shuts it down however the run ends (issue 16, item 9)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from dialogue_gym.evaluation import journal
from dialogue_gym.evaluation.journal import JournalWriteError
from dialogue_gym.evaluation.run import evaluate

ray = pytest.importorskip("ray", reason="the Ray executor's test needs ray (test extra)")


def test_ray_started_by_a_failing_run_is_shut_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if ray.is_initialized():
        ray.shutdown()
    real = journal._write_all

    def full_disk(fd: int, data: bytes) -> None:
        if b'"episode":' in data:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd, data)

    monkeypatch.setattr(journal, "_write_all", full_disk)
    try:
        with pytest.raises(JournalWriteError):
            evaluate(
                "scripted",
                "P4G-hard",
                episodes=3,
                out=tmp_path,
                executor="ray",
                env_kwargs={"encoder": "hashing"},
                progress=False,
            )
        assert not ray.is_initialized()
    finally:
        if ray.is_initialized():
            ray.shutdown()


def test_ray_started_by_the_caller_stays_up(tmp_path: Path) -> None:
    ray.init(num_cpus=1, include_dashboard=False, configure_logging=False)
    try:
        evaluate(
            "scripted",
            "P4G-hard",
            episodes=2,
            executor="ray",
            env_kwargs={"encoder": "hashing"},
            progress=False,
        )
        assert ray.is_initialized()
    finally:
        ray.shutdown()
