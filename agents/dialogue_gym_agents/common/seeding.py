"""Per-run random generators, and a sandbox for libraries that insist on the global ones.

A run draws every random number from its own generators, made from the run's seed by
:func:`generators` — never from the process-wide ``random``, ``numpy.random`` or ``torch``
states, which other code in the process (an evaluation, a test, a second trainer) shares.

stable-baselines3 samples actions and shuffles minibatches from the global torch and NumPy
states. :func:`isolated_global_rng` confines that: inside the block the global states are
seeded from the run's seed, and on exit they are restored exactly as they were, so a PPO run
is reproducible and leaves the rest of the process untouched. :func:`torch_threads` does the
same for torch's CPU thread count.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import random
from collections.abc import Iterator

import numpy as np
import torch

from dialogue_gym.mind.global_rng import global_rngs_kept

__all__ = [
    "RunGenerators",
    "derive_seed",
    "generators",
    "isolated_global_rng",
    "torch_threads",
]


@dataclasses.dataclass
class RunGenerators:
    """A run's own generators.

    Attributes:
        seed: The seed they were made from.
        numpy: NumPy generator (shuffling, sampling, env seeds).
        torch: torch CPU generator (weight init, dropout, minibatch order).
    """

    seed: int
    numpy: np.random.Generator
    torch: torch.Generator


def derive_seed(seed: int, *names: str | int) -> int:
    """A 31-bit seed derived from ``seed`` and a path of names (stable across processes).

    Example: ``derive_seed(0, "ppo")`` and ``derive_seed(0, "pretrain")`` are independent.
    """
    key = "/".join([str(int(seed)), *(str(n) for n in names)]).encode("utf-8")
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") >> 1


def generators(seed: int) -> RunGenerators:
    """Fresh NumPy and torch generators seeded from ``seed``.

    Raises:
        ValueError: ``seed`` is negative or not an int.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    torch_generator = torch.Generator(device="cpu")
    torch_generator.manual_seed(derive_seed(seed, "torch"))
    return RunGenerators(
        seed=seed,
        numpy=np.random.default_rng(derive_seed(seed, "numpy")),
        torch=torch_generator,
    )


@contextlib.contextmanager
def isolated_global_rng(seed: int) -> Iterator[None]:
    """Seeds the global ``random``/NumPy/torch states inside the block; restores them after.

    For code that draws from the global states (stable-baselines3). The states seen outside
    the block are exactly those before it, whatever happens inside.
    """
    with global_rngs_kept():
        random.seed(derive_seed(seed, "python"))
        np.random.seed(derive_seed(seed, "numpy-global"))
        torch.manual_seed(derive_seed(seed, "torch-global"))
        yield


@contextlib.contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """Runs the block with ``count`` torch CPU threads (``None``: unchanged), then restores it."""
    previous = torch.get_num_threads()
    if count is not None:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
