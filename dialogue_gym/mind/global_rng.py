"""Code that must not move the process's global random generators.

``dialogue_gym`` draws only from per-env generators (``reset(seed=...)``), but some of the
third-party code it runs draws from the global ones: model2vec's distillation and the static
head's training (:mod:`dialogue_gym.mind.static`) use torch's and Python's, and importing
sentence-transformers uses Python's (:mod:`dialogue_gym.mind.minilm`). Run inside
:func:`global_rngs_kept`, such code leaves them as it found them, so whatever a caller seeded
draws the same whether a model was loaded or built earlier in the process, or read from the
cache.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator

import numpy as np

__all__ = ["global_rngs_kept"]


@contextlib.contextmanager
def global_rngs_kept() -> Iterator[None]:
    """Restores Python's, NumPy's and torch's global generators after the block.

    On a fresh machine the first planner run, which builds the static model inside its seeded
    block, initialized its policy from other draws than every later run, which reads the model
    from the cache: one seed reached SR 0.88 on P4G-hard in the run that built it and 0.92
    after.
    """
    import torch  # a dependency of every model loaded or built inside such a block

    python_state, numpy_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng(devices=[]):
        try:
            yield
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)
