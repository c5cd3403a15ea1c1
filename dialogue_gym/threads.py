"""Torch thread defaults for the small models the embedded world runs on.

The MiniLM encoder (and the small trainers' models) run tiny batches — one utterance per
exchange. With torch's default of one intra-op thread per core, those batches spend more time
synchronizing threads than computing, and on a shared 2-vCPU machine under load a quickstart
evaluation ran 10× slower with the default than with one thread (same numbers). So
``dialogue_gym`` uses **one intra-op thread by default** when it builds a small torch model,
unless the user said otherwise (every env applies it when it is built, and so do the
encoders it builds):

* ``DIALOGUE_GYM_THREADS=N`` in the environment, or ``threads=N`` where an API takes it
  (``make(..., threads=N)``), sets N threads;
* ``OMP_NUM_THREADS`` or ``MKL_NUM_THREADS`` in the environment leaves torch as configured
  (the user chose already);
* otherwise torch gets one intra-op thread.

The setting is process-wide (torch has no per-model thread count); :func:`apply_threads`
returns what is in effect.
"""

from __future__ import annotations

import logging
import os

THREADS_ENV = "DIALOGUE_GYM_THREADS"
_USER_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
_log = logging.getLogger(__name__)


def default_threads() -> int | None:
    """The thread count dialogue_gym applies when none is given; ``None`` = leave torch alone.

    Raises:
        ValueError: ``DIALOGUE_GYM_THREADS`` is not a positive integer.
    """
    value = os.environ.get(THREADS_ENV)
    if value is not None and value.strip():
        return _positive(value.strip(), THREADS_ENV)
    if any(os.environ.get(name, "").strip() for name in _USER_VARS):
        return None
    return 1


def apply_threads(threads: int | None = None) -> int | None:
    """Sets torch's intra-op thread count (see the module docstring); returns it.

    Args:
        threads: An explicit count (≥ 1); ``None`` applies :func:`default_threads`.

    Returns:
        The intra-op thread count now in effect, or ``None`` when torch is not installed.

    Raises:
        ValueError: ``threads`` (or ``DIALOGUE_GYM_THREADS``) is not a positive integer.
    """
    wanted = default_threads() if threads is None else _positive(threads, "threads")
    try:
        import torch
    except ImportError:  # the hashing encoder needs no torch
        return None
    if wanted is not None and torch.get_num_threads() != wanted:
        torch.set_num_threads(wanted)
        _log.debug("torch intra-op threads set to %d", wanted)
    return int(torch.get_num_threads())


def _positive(value: object, name: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    try:
        number = int(str(value)) if not isinstance(value, int) else value
    except ValueError:
        raise ValueError(f"{name} must be a positive integer, got {value!r}") from None
    if number < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return number
