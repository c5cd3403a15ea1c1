"""Explicit registration in the agent package (issue 17 item 2).

SFT methods and MASP parameterizations are rows of a table, not import side effects, and the
MASP trainer reaches both parameterizations through one interface instead of switching on
``--policy``.
"""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import typing
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType

import pytest

from dialogue_gym_agents.masp import parameterization as masp_parameterization
from dialogue_gym_agents.masp import selfplay as masp_selfplay
from dialogue_gym_agents.masp import train as masp_train
from dialogue_gym_agents.masp.config import MASPConfig


def test_sft_methods_are_listed_without_importing_anything_else() -> None:
    """Importing the SFT trainer alone lists every method (nothing registers on import)."""
    code = (
        "from dialogue_gym_agents.sft.train import SFT_METHODS;"
        "print(sorted(SFT_METHODS), SFT_METHODS['lora'].kind, SFT_METHODS['retrieval'].kind)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    assert result.stdout.split() == ["['lora',", "'retrieval']", "sft-lora", "sft-retrieval"]


def test_every_policy_choice_has_a_parameterization() -> None:
    choices = typing.get_args(typing.get_type_hints(MASPConfig)["policy"])
    assert set(masp_parameterization.PARAMETERIZATIONS) == set(choices)


@pytest.mark.parametrize("name", sorted(masp_parameterization.PARAMETERIZATIONS))
def test_each_parameterization_implements_the_interface(name: str) -> None:
    implementation = masp_parameterization.PARAMETERIZATIONS[name]
    protocol = masp_parameterization.Parameterization
    wanted = {n for n, v in vars(protocol).items() if inspect.isfunction(v) and n[0] != "_"}
    for method in wanted:
        ours = inspect.signature(getattr(implementation, method))
        theirs = inspect.signature(getattr(protocol, method))
        assert list(ours.parameters) == list(theirs.parameters)[1:], method  # minus self


def _compares_with_lm(path: Path) -> list[int]:
    """Lines of ``path`` that compare something with the string ``"lm"``."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Constant) and o.value == "lm" for o in operands):
                lines.append(node.lineno)
    return lines


@pytest.mark.parametrize("module", [masp_train, masp_selfplay], ids=["train", "selfplay"])
def test_the_masp_trainer_never_asks_which_parameterization(module: ModuleType) -> None:
    assert _compares_with_lm(Path(inspect.getfile(module))) == []


def test_entry_points_name_modules_of_the_method_folders() -> None:
    """Every agent and trainer entry point loads, from the folder of its method."""
    for group in ("dialogue_gym.agents", "dialogue_gym.trainers"):
        for entry in entry_points(group=group):
            if not entry.value.startswith("dialogue_gym_agents."):
                continue
            assert callable(entry.load()), entry
            module = entry.value.split(":")[0]
            assert module.split(".")[1] in {
                "baselines", "dispatch", "sft", "planner", "masp", "siavpo", "lm_grpo",
            }, entry  # fmt: skip
