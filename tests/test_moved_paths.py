"""The modules' old import paths keep working after the move into folders (issue 36 item 1).

Every old path in :data:`dialogue_gym._moved.MOVED` (and each module of a moved package)
imports as the very module at its new path, with one :class:`DeprecationWarning` naming it;
the folders that took an old module's name re-export that module's public names.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import dialogue_gym
from dialogue_gym import _moved

PACKAGE_DIR = Path(dialogue_gym.__file__).resolve().parent


def _moved_package_modules() -> list[str]:
    """Every module of the moved packages, by its old path."""
    names = []
    for old, new in _moved.MOVED_PACKAGES.items():
        folder = PACKAGE_DIR.joinpath(*new.split(".")[1:])
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            names.append(".".join([old, *(p for p in parts if p != "__init__")]))
    return names


OLD_PATHS = [*_moved.MOVED, *_moved_package_modules()]


def test_the_table_names_only_new_paths_that_exist_and_old_paths_that_are_gone() -> None:
    for old in OLD_PATHS:
        new = _moved.new_name(old)
        assert new is not None and importlib.util.find_spec(new) is not None, old
        relative = old.split(".")[1:]
        assert not PACKAGE_DIR.joinpath(*relative).with_suffix(".py").exists(), old
        assert not PACKAGE_DIR.joinpath(*relative).is_dir(), old
    assert _moved.new_name("dialogue_gym.users") is None
    assert _moved.new_name("dialogue_gym.journalism") is None


@pytest.mark.parametrize("old", OLD_PATHS)
def test_an_old_path_imports_the_same_module_with_a_deprecation_warning(old: str) -> None:
    new = _moved.new_name(old)
    assert new is not None
    module = importlib.import_module(new)
    sys.modules.pop(old, None)  # as in a fresh process: the first import of the old path
    try:
        with pytest.warns(DeprecationWarning, match=rf"{old} moved to {new}") as caught:
            aliased = importlib.import_module(old)
        assert aliased is module
        assert aliased.__name__ == new and aliased.__spec__.name == new  # its own identity
        assert len([w for w in caught if old in str(w.message)]) == 1
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert importlib.import_module(old) is module  # once: no second warning
    finally:
        sys.modules.pop(old, None)


def test_monkeypatching_the_old_path_patches_the_module(monkeypatch: pytest.MonkeyPatch) -> None:
    from dialogue_gym.evaluation import journal

    with pytest.warns(DeprecationWarning):
        sys.modules.pop("dialogue_gym.journal", None)
        old = importlib.import_module("dialogue_gym.journal")
    monkeypatch.setattr(old, "EPISODES_FILE", "patched.jsonl", raising=False)
    assert journal.EPISODES_FILE == "patched.jsonl"
    sys.modules.pop("dialogue_gym.journal", None)


def test_an_old_path_leaves_the_package_attribute_of_its_name() -> None:
    registry = dialogue_gym.registry  # the registry dict, a public name
    sys.modules.pop("dialogue_gym.registry", None)
    try:
        with pytest.warns(DeprecationWarning):
            old = importlib.import_module("dialogue_gym.registry")  # the old module path
        assert old is importlib.import_module("dialogue_gym.env.registry")
        assert dialogue_gym.registry is registry and "P4G-hard-v0" in dialogue_gym.registry
    finally:
        sys.modules.pop("dialogue_gym.registry", None)


def test_the_folders_keep_the_old_modules_public_names() -> None:
    from dialogue_gym.cards import TaskCard, builtin_cards, load_card
    from dialogue_gym.cli import main
    from dialogue_gym.env import CORPORA, DialogueEnv
    from dialogue_gym.evaluation import EvalResult, evaluate
    from dialogue_gym.text import text_view

    assert DialogueEnv is dialogue_gym.DialogueEnv
    assert evaluate is dialogue_gym.evaluate and EvalResult is dialogue_gym.EvalResult
    assert isinstance(load_card("p4g"), TaskCard) and "p4g" in builtin_cards()
    assert CORPORA["P4G"] == "p4g" and text_view("a\u200bb") == "ab"
    assert callable(main)


def test_a_fresh_process_warns_once_per_old_path(tmp_path: Path) -> None:
    script = tmp_path / "old_paths.py"
    script.write_text(
        textwrap.dedent(
            """
            import warnings
            warnings.simplefilter("always")
            with warnings.catch_warnings(record=True) as caught:
                from dialogue_gym.journal import read_episodes
                from dialogue_gym.registry import make
                import dialogue_gym.journal
                from dialogue_gym.wrappers import SingleAgent
            moved = [str(w.message) for w in caught if w.category is DeprecationWarning]
            print(len(moved), make("P4G-hard", encoder="hashing").card.id, SingleAgent.__module__)
            """
        ),
        encoding="utf-8",
    )
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.split() == ["3", "P4G", "dialogue_gym.env.wrappers.single_agent"]
