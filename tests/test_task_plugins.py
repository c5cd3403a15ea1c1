"""Task plug-ins chosen by the card (issue 36 item 3).

* a card names its plug-in (``[task] plugin``); its hooks replace the generic behaviour, and a
  card without one (or a third party's) gets :data:`dialogue_gym.cards.task_plugin.GENERIC`;
* the shipped P4G and ESConv cards name theirs, and ``reader_for`` reaches their readers
  through them;
* no module of the generic core imports a plug-in, and the core compares no task id or corpus
  name except in the modules listed in :data:`KNOWN_TASK_BRANCHES` (the work left, each with
  where it should go); a module that has been cleaned must come off the list.
"""

from __future__ import annotations

import ast
import importlib
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path

import gymnasium
import pytest

import dialogue_gym
from dialogue_gym.cards.card import CardError, builtin_cards, load_card
from dialogue_gym.cards.task_plugin import (
    CORPUS_CARDS,
    GENERIC,
    TaskPlugin,
    plugin_for_corpus,
    plugin_for_task,
    plugin_of,
)
from dialogue_gym.env.gym_views import gymnasium_ids
from dialogue_gym.env.tasks import register_card
from dialogue_gym.judges.user_text import reader_for
from dialogue_gym.validity import TARGETS

registry_module = importlib.import_module("dialogue_gym.env.registry")
PACKAGE_DIR = Path(dialogue_gym.__file__).resolve().parent
ENVS = PACKAGE_DIR.parent / "envs"
PLUGIN_MODULE = "dg_garden_plugin"

# Core modules that still compare a task id or a corpus name, with where the branch should go
# (none left: ESConv's seeker and 'failed' split, CB's seller, the loaders and the calibration
# fitters all live in their tasks' plug-ins). Only ``plugins/`` is not scanned.
KNOWN_TASK_BRANCHES: dict[str, str] = {}

TASK_IDS = frozenset(load_card(name).id for name in builtin_cards())
TASK_NAMES = frozenset(
    {task.lower() for task in TASK_IDS}
    | {card.corpus.name for card in map(load_card, builtin_cards()) if card.corpus}
)


def _core_modules() -> Iterator[Path]:
    skipped = {"plugins", "catalog"}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if skipped.isdisjoint(path.relative_to(PACKAGE_DIR).parts[:-1]):
            yield path


def _task_comparisons(tree: ast.AST) -> list[str]:
    """The task ids / corpus names a module compares with (``==``, ``!=``, ``in``) or keys by."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for operand in operands:
                values = operand.elts if isinstance(operand, ast.Tuple | ast.Set) else [operand]
                for value in values:
                    text = value.value if isinstance(value, ast.Constant) else None
                    if isinstance(text, str) and text.lower() in TASK_NAMES:
                        found.append(text)
        elif isinstance(node, ast.Dict):
            for key in node.keys:  # a table keyed by task id or corpus name
                if isinstance(key, ast.Constant) and str(key.value).lower() in TASK_NAMES:
                    found.append(key.value)
    return found


def test_the_generic_core_compares_no_task_id_outside_the_known_modules() -> None:
    assert {"p4g", "esconv", "cb", "ed"} <= TASK_NAMES
    offenders = {}
    for path in _core_modules():
        tree = ast.parse(path.read_text("utf-8"))
        if found := _task_comparisons(tree):
            offenders[path.relative_to(PACKAGE_DIR.parent).as_posix()] = found
    assert set(offenders) - set(KNOWN_TASK_BRANCHES) == set(), offenders
    assert set(KNOWN_TASK_BRANCHES) - set(offenders) == set(), "cleaned: take it off the list"


def test_the_cleaned_reader_lookup_names_no_task() -> None:
    for module in (
        "judges/user_text.py",
        "cards/task_plugin.py",
        "env/tasks.py",
        "cards/sections.py",
    ):
        tree = ast.parse((PACKAGE_DIR / module).read_text("utf-8"))
        assert _task_comparisons(tree) == [], module


def test_no_core_module_imports_a_plugin() -> None:
    for path in _core_modules():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            assert not any(n.startswith("dialogue_gym.plugins") for n in names), path


def test_the_shipped_cards_name_their_plugins() -> None:
    p4g, esconv = load_card("p4g"), load_card("esconv")
    assert p4g.plugin == "dialogue_gym.plugins.p4g"
    assert esconv.plugin == "dialogue_gym.plugins.esconv"
    assert type(plugin_of(p4g)).__name__ == "P4GPlugin"
    assert plugin_for_task("ESConv") is plugin_of(esconv)
    for name in ("merchant", "courier"):  # no plug-in: the generic hooks
        assert load_card(name).plugin is None and plugin_of(load_card(name)) is GENERIC
    assert plugin_for_task("no-such-task") is GENERIC
    for corpus in ("p4g", "esconv", "cb", "ed"):  # a corpus dialogue finds its task's plug-in
        card = load_card(corpus)
        assert card.plugin == f"dialogue_gym.plugins.{corpus}"
        assert plugin_for_corpus(corpus) is plugin_of(card) is not GENERIC
    assert plugin_for_corpus("no-such-corpus") is GENERIC
    assert set(TARGETS) == {"P4G", "ESConv", "CB"}  # the validity targets: from the plug-ins
    assert TARGETS["CB"] == {"replay_auc": 0.80, "replay_rho": 0.60, "judge_auc": 0.90}
    assert dict(CORPUS_CARDS) == {"p4g": "p4g", "esconv": "esconv", "ed": "ed", "cb": "cb"}
    assert reader_for("no-such-task") is None


@pytest.fixture
def garden(tmp_path: Path) -> Iterator[Path]:
    """A card (ED's, renamed ``Garden``) naming a plug-in written to ``tmp_path`` instead."""
    (tmp_path / f"{PLUGIN_MODULE}.py").write_text(
        textwrap.dedent(
            """
            from dialogue_gym.cards.task_plugin import TaskPlugin

            class Reader:
                def distribution(self, history):
                    return {"agree": 1.0}

            class GardenPlugin(TaskPlugin):
                def stance_reader(self, train=(), table=None):
                    return Reader()

            HOOKS = GardenPlugin()
            NOT_A_PLUGIN = object()
            """
        ),
        encoding="utf-8",
    )
    text = (ENVS / "ed.toml").read_text("utf-8")
    ed_plugin = 'plugin = "dialogue_gym.plugins.ed"'
    assert text.count('id = "ED"') == 1 and text.count(ed_plugin) == 1
    text = text.replace('id = "ED"', 'id = "Garden"')
    text = text.replace(ed_plugin, f'plugin = "{PLUGIN_MODULE}:HOOKS"')
    card = tmp_path / "garden.toml"
    card.write_text(text, encoding="utf-8")
    before = set(registry_module.registry)
    sys.path.insert(0, str(tmp_path))
    yield card
    sys.path.remove(str(tmp_path))
    sys.modules.pop(PLUGIN_MODULE, None)
    for env_id in set(registry_module.registry) - before:
        del registry_module.registry[env_id]
        for gym_id in gymnasium_ids(env_id):
            gymnasium.registry.pop(gym_id, None)


def test_a_card_naming_a_plugin_gets_its_hooks(garden: Path) -> None:
    card = load_card(garden)
    assert card.plugin == f"{PLUGIN_MODULE}:HOOKS"
    plugin = plugin_of(card)
    assert isinstance(plugin, TaskPlugin) and type(plugin).__name__ == "GardenPlugin"
    register_card(garden)
    reader = reader_for("Garden")
    assert reader is not None
    history: Sequence[tuple[str, str]] = [("system", "Will you help?"), ("user", "Sure!")]
    assert reader.distribution(history) == {"agree": 1.0}
    env = dialogue_gym.make("Garden-hard", encoder="hashing")  # the card plays as before
    env.reset(seed=0)
    env.close()


@pytest.mark.parametrize(
    "spec", [f"{PLUGIN_MODULE}:NOT_A_PLUGIN", f"{PLUGIN_MODULE}:MISSING", "dg_no_such_module"]
)
def test_a_plugin_that_cannot_be_loaded_is_a_card_error(garden: Path, spec: str) -> None:
    text = garden.read_text("utf-8").replace(f"{PLUGIN_MODULE}:HOOKS", spec)
    garden.write_text(text, encoding="utf-8")
    card = load_card(garden)
    with pytest.raises(CardError, match=r"task\.plugin"):
        plugin_of(card)


@pytest.mark.parametrize("spec", ["", "not a module", "a..b", "1mod", "mod:", "mod:a:b"])
def test_a_misspelled_plugin_is_refused_with_the_card(garden: Path, spec: str) -> None:
    text = garden.read_text("utf-8").replace(f"{PLUGIN_MODULE}:HOOKS", spec)
    garden.write_text(text, encoding="utf-8")
    with pytest.raises(CardError, match=r"task\.plugin"):
        load_card(garden)


def test_the_persona_hooks_come_with_the_plugin(tmp_path: Path) -> None:
    from dialogue_gym.data import Dialogue, seeds_from
    from dialogue_gym.users.corpus import personas_from_seeds

    profile = {"income.x": 1.0, "care.x": 1.0, "extrovert.x": 5.0, "age.x": 61.0}
    profile |= {"edu.x": "Bachelor", "employment.x": "Retired"}
    seeds = seeds_from([Dialogue("p4g", "p001", "test", (), profile, {})], "goal")
    p4g = load_card("p4g")
    text = (ENVS / "p4g.toml").read_text("utf-8")
    assert text.count(f'plugin = "{p4g.plugin}"') == 1
    bare = tmp_path / "bare.toml"  # P4G's card without its plug-in: the generic layers
    bare.write_text(text.replace(f'plugin = "{p4g.plugin}"', ""), encoding="utf-8")
    (pinned,) = personas_from_seeds(p4g, seeds)
    (generic,) = personas_from_seeds(load_card(bare), seeds)
    assert pinned.id == generic.id == "p4g:p001"
    assert pinned.age == 61 and pinned.background.endswith(": bachelor, retired.")
    assert generic.background != pinned.background
    assert dict(pinned.concerns).get("affordability") == 1.0  # the lowest income


def test_a_corpus_without_a_plugin_gets_the_generic_profile_and_no_outcome() -> None:
    from dialogue_gym.data import Dialogue
    from dialogue_gym.mentalizers.annotate import profile_text
    from dialogue_gym.validity import outcome_of

    dialogue = Dialogue("mycorpus", "d1", "test", (), {"role": "tenant"}, {"place": " Oslo "})
    assert profile_text(dialogue) == "place: Oslo; role: tenant"
    assert outcome_of(dialogue) is None
    assert profile_text(Dialogue("mycorpus", "d2", "test", (), {}, {})) is None
    survey = {"donation": 0.5, "age.x": 30.0}
    p4g = Dialogue("p4g", "d3", "test", (), survey, {})
    assert outcome_of(p4g) is not None and outcome_of(p4g).success  # type: ignore[union-attr]
    assert profile_text(p4g) == "age 30."  # the donation is left out
