"""The command-line entry of a trainer: argv → config dataclass → train → checkpoint.

Trainers register in the entry-point group ``dialogue_gym.trainers`` with a ``main(argv,
prog)`` function; ``dialogue-gym train NAME ARGS...`` calls it with the remaining arguments.
Usage errors raise ``SystemExit`` (argparse) or ``ValueError``/``FileNotFoundError`` (the
``dialogue-gym`` command prints those as one-line errors).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO, TypeVar

from dialogue_gym_agents.common.config import parse_config

__all__ = ["ENTRY_POINT_GROUP", "run_trainer"]

ENTRY_POINT_GROUP = "dialogue_gym.trainers"
"""The entry-point group the ``dialogue-gym train`` command lists and dispatches."""

C = TypeVar("C")


def run_trainer(
    config_cls: type[C],
    train: Callable[[C], Path],
    argv: Sequence[str] | None,
    prog: str,
    stream: TextIO | None = None,
) -> int:
    """Parses ``argv`` into ``config_cls``, trains, and reports the checkpoint.

    Args:
        config_cls: The trainer's config dataclass.
        train: ``train(config) -> checkpoint folder``.
        argv: Arguments (default: ``sys.argv[1:]``).
        prog: Program name for usage lines (``dialogue-gym train sft``).
        stream: Where the final report goes (default: stdout).

    Returns:
        0 on success.
    """
    out: Any = stream or sys.stdout
    config = parse_config(config_cls, list(sys.argv[1:] if argv is None else argv), prog=prog)
    start = time.perf_counter()
    with _sigterm_as_exit():
        checkpoint = train(config)
    print(f"checkpoint: {checkpoint}  ({time.perf_counter() - start:.1f} s)", file=out)
    return 0


@contextlib.contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """Turns SIGTERM into ``SystemExit(143)`` so that a killed run cleans up its partial files."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
