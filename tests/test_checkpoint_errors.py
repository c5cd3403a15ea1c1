"""A weights file holding pickled code is refused plainly (issue 16, item 8).

``torch.load(weights_only=True)`` rejects such a file with an ``UnpicklingError`` whose text
suggests retrying with ``weights_only=False`` — unsafe advice for a file that may run code.
The loaders must say the file is not a valid checkpoint, and nothing else.
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from dialogue_gym_agents.common.checkpoint import (  # noqa: E402
    CorruptCheckpointError,
    load_torch_module,
)
from dialogue_gym_agents.masp.agent import _load_state  # noqa: E402


class _Payload:
    """Any object other than tensors: unpickling it would import and run this module."""

    def __init__(self) -> None:
        self.note = "not weights"


def _pickled_objects(path: Path) -> Path:
    torch.save(collections.OrderedDict(weight=_Payload()), path)
    return path


def _check(message: str, path: Path) -> None:
    assert "not a valid checkpoint" in message and str(path) in message
    assert "weights_only" not in message and "False" not in message


def test_torch_module_loader_refuses_pickled_objects(tmp_path: Path) -> None:
    path = _pickled_objects(tmp_path / "policy.pt")
    with pytest.raises(CorruptCheckpointError) as info:
        load_torch_module(lambda: torch.nn.Linear(2, 2), path, "the planner policy")
    _check(str(info.value), path)


def test_masp_state_loader_refuses_pickled_objects(tmp_path: Path) -> None:
    path = _pickled_objects(tmp_path / "system.pt")
    with pytest.raises(CorruptCheckpointError) as info:
        _load_state(path)
    _check(str(info.value), path)
