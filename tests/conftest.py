import pytest

import dialogue_gym


@pytest.fixture
def make_env():
    """Builds registered envs with the fast hashing encoder unless told otherwise."""

    def factory(env_id: str = "P4G-hard", **kwargs):
        kwargs.setdefault("encoder", "hashing")
        return dialogue_gym.make(env_id, **kwargs)

    return factory


class FixedSystem:
    """A system policy that always says the same thing."""

    def __init__(self, text: str = "Even a small donation to Save the Children helps a child."):
        self.text = text
        self.resets = 0

    def reset(self, seed=None):
        self.resets += 1

    def act(self, observation):
        return self.text


@pytest.fixture
def fixed_system():
    return FixedSystem()
