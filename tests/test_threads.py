"""Torch thread defaults (issue 18): one intra-op thread unless the user chose."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import dialogue_gym  # noqa: E402
from dialogue_gym.mind.threads import THREADS_ENV, apply_threads, default_threads  # noqa: E402


@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.fixture
def clean_env(monkeypatch):
    for name in (THREADS_ENV, "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_default_is_one_thread_unless_the_user_chose(clean_env):
    assert default_threads() == 1
    clean_env.setenv("OMP_NUM_THREADS", "2")
    assert default_threads() is None  # the user chose: leave torch alone
    clean_env.setenv(THREADS_ENV, "3")
    assert default_threads() == 3  # ours wins over the generic variables


def test_apply_threads_sets_torch(clean_env, restore_threads):
    torch.set_num_threads(2)
    assert apply_threads() == 1 and torch.get_num_threads() == 1
    assert apply_threads(2) == 2 and torch.get_num_threads() == 2
    clean_env.setenv("OMP_NUM_THREADS", "2")
    torch.set_num_threads(2)
    assert apply_threads() == 2  # left as the user configured it


@pytest.mark.parametrize("bad", [0, -1, "two", True, 1.5])
def test_bad_thread_counts_are_refused(clean_env, bad):
    with pytest.raises(ValueError, match="positive integer"):
        apply_threads(bad)  # type: ignore[arg-type]
    clean_env.setenv(THREADS_ENV, str(bad))
    with pytest.raises(ValueError, match=THREADS_ENV):
        default_threads()


def test_make_applies_the_thread_option(clean_env, restore_threads):
    torch.set_num_threads(2)
    env = dialogue_gym.make("P4G-hard", encoder="hashing")
    assert torch.get_num_threads() == 1
    env.close()
    env = dialogue_gym.make("P4G-hard", encoder="hashing", threads=2)
    assert torch.get_num_threads() == 2
    env.close()
