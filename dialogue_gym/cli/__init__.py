"""The ``dialogue-gym`` command: list, info, eval, play, train, report, data, annotate, validate.

* :mod:`dialogue_gym.cli.commands` — the command and its subcommands;
* :mod:`dialogue_gym.cli.play` and :mod:`dialogue_gym.cli.play_replay` — the interactive seat
  and the replay of a played session.

The top of the stack. ``python -m dialogue_gym.cli`` runs the command; :func:`main` is
re-exported from :mod:`dialogue_gym.cli.commands` (the former module ``dialogue_gym.cli``).
"""

from __future__ import annotations

from dialogue_gym.cli.commands import (
    main,
)

__all__ = [
    "main",
]
