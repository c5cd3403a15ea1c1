"""Seeds are checked where they enter the public API (issue 36, item 5).

``seed=True`` used to play as seed 1 and a float seed failed deep inside numpy; every entry
point now refuses a seed that is not an integer with one message naming the argument and what
was given (:func:`dialogue_gym.argtypes.check_seed`), and takes numpy integers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
from test_evaluation import agent, install_tiny

import dialogue_gym
from dialogue_gym.argtypes import SeedError, check_seed
from dialogue_gym.cli.commands import main
from dialogue_gym.env.vector import make_vec
from dialogue_gym.evaluation.run import evaluate

FAST = {"encoder": "hashing"}
NOT_INTS = [
    (True, "bool True"),
    (False, "bool False"),
    (1.0, "float 1.0"),
    (np.float64(2.5), "float64"),
    ("3", "str '3'"),
]


@pytest.mark.parametrize(("seed", "shown"), NOT_INTS)
def test_check_seed_names_the_argument_and_what_was_given(seed: Any, shown: str) -> None:
    with pytest.raises(TypeError, match=f"^seeds\\[2\\] must be an int or None, got {shown}"):
        check_seed(seed, "seeds[2]")
    with pytest.raises(ValueError):  # SeedError is both, as evaluate's old ValueError was
        check_seed(seed)
    with pytest.raises(ValueError, match="seed must be >= 0, got -1"):
        check_seed(-1)
    with pytest.raises(SeedError, match="seed must be an int, got NoneType None"):
        check_seed(None, optional=False)


@pytest.mark.parametrize("seed", [7, np.int64(7), np.uint16(7), np.int32(7)])
def test_check_seed_takes_python_and_numpy_integers(seed: Any) -> None:
    assert check_seed(seed) == 7 and type(check_seed(seed)) is int
    assert check_seed(None) is None


@pytest.mark.parametrize(("seed", "shown"), NOT_INTS)
def test_env_reset_refuses_a_seed_that_is_not_an_int(seed: Any, shown: str) -> None:
    env = dialogue_gym.make("P4G-hard", **FAST)
    with pytest.raises(TypeError, match=f"seed must be an int or None, got {shown}"):
        env.reset(seed=seed)
    with pytest.raises(ValueError, match="seed must be >= 0"):
        env.reset(seed=-3)
    env.close()


def test_a_numpy_seed_plays_the_episode_of_the_same_int() -> None:
    env = dialogue_gym.make("P4G-hard", **FAST)
    first, _ = env.reset(seed=np.int64(11))
    again, _ = env.reset(seed=11)
    assert first["system"] == again["system"] and first["user"] == again["user"]
    env.close()


def test_vector_resets_check_every_seed() -> None:
    vec = make_vec("P4G-hard", 2, **FAST)
    try:
        with pytest.raises(TypeError, match="seed must be an int or None, got bool True"):
            vec.reset(seed=True)
        with pytest.raises(TypeError, match=r"seed\[1\] must be an int or None, got float 1.5"):
            vec.reset(seed=[0, 1.5])
        with pytest.raises(TypeError, match=r"got float 2\.0"):
            vec.reset_at(0, seed=2.0)
        vec.reset(seed=np.int64(4))  # sub-envs get 4 and 5
        vec.reset(seed=np.array([4, 9]))
    finally:
        vec.close()


def test_gymnasium_views_take_numpy_seeds_and_refuse_bools() -> None:
    for view in ("dialogue_gym/P4G-hard-v0", "dialogue_gym/P4G-hard-Strategy-v0"):
        env = gymnasium.make(view, **FAST)
        env.reset(seed=np.int64(5))  # Gymnasium's own check refuses numpy integers
        with pytest.raises(TypeError, match="seed must be an int or None, got bool True"):
            env.reset(seed=True)
        env.close()


@pytest.mark.parametrize(("seed", "shown"), NOT_INTS)
def test_evaluate_refuses_a_seed_that_is_not_an_int(
    seed: Any, shown: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tiny = install_tiny(monkeypatch, tmp_path)
    with pytest.raises(TypeError, match=f"seed must be an int, got {shown}"):
        evaluate(agent("Pushy"), tiny, episodes=1, seed=seed, progress=False)
    with pytest.raises(TypeError, match=rf"seeds\[1\] must be an int, got {shown}"):
        evaluate(agent("Pushy"), tiny, episodes=1, seeds=[0, seed], progress=False)


@pytest.mark.parametrize("seed", ["1.5", "true", "-1"])
def test_cli_seed_must_be_a_whole_number(seed: str, capsys: pytest.CaptureFixture) -> None:
    assert main(["eval", "P4G-hard", "--agent", "scripted", "--seed", seed]) == 2
    assert "--seed" in capsys.readouterr().err
    assert main(["play", "P4G-hard", "--seed", seed]) == 2


_GLOBAL_RNG_PROBE = """
import random, numpy as np, torch
def draws():
    return random.random(), float(np.random.random()), float(torch.rand(1))
def seed():
    random.seed(1); np.random.seed(1); torch.manual_seed(1)
seed(); expected = draws(); seed()
import dialogue_gym
env = dialogue_gym.make("P4G-hard")
env.reset(seed=0)
env.step({"system": "Hi there, how are you?"})
print("UNTOUCHED" if draws() == expected else "MOVED")
"""


def test_an_env_leaves_the_global_generators_alone() -> None:
    """Per-env RNG only: making and stepping the default (MiniLM) env in a fresh process draws
    nothing from Python's, NumPy's or torch's global generators. Importing sentence-transformers
    and loading MiniLM drew from Python's, so a caller's seeded draws depended on whether the
    process had loaded MiniLM yet (a fresh process is needed: both happen once per process)."""
    import importlib.util
    import os
    import subprocess
    import sys

    if importlib.util.find_spec("sentence_transformers") is None:
        pytest.skip("MiniLM not installed (dialogue-gym[minilm])")
    out = subprocess.run(
        [sys.executable, "-c", _GLOBAL_RNG_PROBE],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert out.stdout.strip().splitlines()[-1] == "UNTOUCHED", out.stderr[-2000:]
