import functools
import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType

import pytest

import dialogue_gym

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--evaluate-encoder",
        default=None,
        metavar="NAME",
        help="run every dialogue_gym.evaluation.run.evaluate call of the suite with this encoder "
        "unless the call names one (e.g. static: do the discrimination tests hold under it?)",
    )


def with_default_encoder(evaluate, encoder: str):
    """``evaluate`` whose envs use ``encoder`` wherever a call's ``env_kwargs`` names none."""
    signature = inspect.signature(evaluate)

    @functools.wraps(evaluate)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        env_kwargs = dict(bound.arguments.get("env_kwargs") or {})
        env_kwargs.setdefault("encoder", encoder)
        bound.arguments["env_kwargs"] = env_kwargs
        return evaluate(*bound.args, **bound.kwargs)

    return wrapper


def pytest_configure(config: pytest.Config) -> None:
    # Before collection, so that test modules' `from dialogue_gym.evaluation.run import evaluate`
    # already gets the wrapped function.
    encoder = config.getoption("--evaluate-encoder")
    if encoder:
        import dialogue_gym.evaluation.run

        dialogue_gym.evaluation.run.evaluate = with_default_encoder(
            dialogue_gym.evaluation.run.evaluate, encoder
        )


def load_benchmark(name: str) -> ModuleType:
    """Imports ``benchmarks/<name>.py`` (not a package) as a module, without running main."""
    module_spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # dataclasses resolve their annotations through sys.modules
    module_spec.loader.exec_module(module)
    return module


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
