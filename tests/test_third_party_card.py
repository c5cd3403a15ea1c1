"""A task is one card TOML; third-party tasks arrive by entry point or ``module:`` id (issue 17).

* a new task from a single TOML in a temporary folder registers, makes and evaluates, and
  every layer (registry description, LLM prompt wording, corpus, agent family, training
  tables) reads it from the card;
* a temporary third-party package (a card, a module that registers it, and a ``.dist-info``
  with ``entry_points.txt`` on ``sys.path``) is reached through the ``dialogue_gym.envs``
  entry points and through ``"module:Task-hard-v0"`` ids, by :func:`dialogue_gym.evaluate`
  and by ``dialogue-gym eval`` / ``list`` in a subprocess; a broken plugin only warns.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import gymnasium
import pytest

import dialogue_gym
from dialogue_gym.cards.card import CardError, load_card
from dialogue_gym.env.gym_views import gymnasium_ids
from dialogue_gym.env.tasks import CORPUS_OF_TASK, register_card, task_card
from dialogue_gym.llm import prompts

# ``dialogue_gym.registry`` the attribute is the registry dict; the module holds the plugin
# state.
registry_module = importlib.import_module("dialogue_gym.env.registry")
ENVS = Path(__file__).resolve().parents[1] / "envs"
PLUGIN = "dg_charity_plugin"


def card_text(task_id: str, title: str) -> str:
    """The P4G card under another id and title, with its own [catalog] and [llm] wording."""
    text = (ENVS / "p4g.toml").read_text("utf-8")
    text = text.replace('id = "P4G"', f'id = "{task_id}"', 1)
    text = text.replace('title = "Persuasion for Good"', f'title = "{title}"', 1)
    text = text.replace('soft = "over-compliant donors"', 'soft = "generous donors"', 1)
    text = text.replace(
        'judge_speakers = ["Persuader", "Persuadee"]', 'judge_speakers = ["Asker", "Giver"]'
    )
    assert f'id = "{task_id}"' in text and 'judge_speakers = ["Asker"' in text
    return text


@pytest.fixture
def restore_registry() -> Iterator[None]:
    """Takes out whatever a test registers (ours and Gymnasium's) and reloads plugins later."""
    before = set(registry_module.registry)
    loaded = registry_module._plugins_loaded
    yield
    for env_id in set(registry_module.registry) - before:
        del registry_module.registry[env_id]
        for gym_id in gymnasium_ids(env_id):
            gymnasium.registry.pop(gym_id, None)
    registry_module._plugins_loaded = loaded
    sys.modules.pop(PLUGIN, None)
    sys.modules.pop("dg_broken_plugin", None)


def test_a_new_task_is_one_toml_file(tmp_path: Path, restore_registry: None) -> None:
    path = tmp_path / "charity.toml"
    path.write_text(card_text("Charity", "Charity drive"), encoding="utf-8")
    specs = register_card(path)
    assert [s.id for s in specs] == ["Charity-soft-v0", "Charity-hard-v0"]
    assert specs[0].description == "Charity drive; soft: generous donors"
    assert register_card(path) == specs  # the same card again: a no-op
    card = task_card("Charity")
    assert card.agent_family == "persuasion" and CORPUS_OF_TASK["Charity"] == "p4g"
    assert prompts.judge_speakers(card) == {"system": "Asker", "user": "Giver"}
    hints = prompts.task_hints(card)
    assert hints.startswith("- The persuadee starts undecided")

    env = dialogue_gym.make("Charity-hard", encoder="hashing")
    assert env.card.id == "Charity" and env.spec is not None
    env.close()
    result = dialogue_gym.evaluate(
        ["scripted", "stall"],
        "Charity-hard",
        episodes=2,
        env_kwargs={"encoder": "hashing"},
        progress=False,
    )
    assert {r["env_id"] for r in result.records} == {"Charity-hard-v0"}
    assert len(result.records) == 4


def test_training_tables_read_the_cards(tmp_path: Path, restore_registry: None) -> None:
    corpora = pytest.importorskip("dialogue_gym_agents.training.corpora")
    dispatch = pytest.importorskip("dialogue_gym_agents.dispatch")
    path = tmp_path / "charity.toml"
    path.write_text(card_text("Charity", "Charity drive"), encoding="utf-8")
    register_card(path)
    assert corpora.TRAIN_SPLITS["CB"] == "valid" and corpora.TRAIN_SPLITS["Charity"] == "train"
    assert corpora.SFT_FORMATS["Charity"] == "full" and corpora.PLANNER_FORMATS["ED"] == "intents"
    assert "Merchant" not in corpora.SFT_FORMATS
    assert corpora.LABEL_ALIASES["P4G"]["ask-donate-more"] == "proposition-of-donation"
    assert corpora.corpus_of("Charity") == "p4g" and corpora.corpus_of(load_card("cb")) == "cb"
    with pytest.raises(ValueError, match="'Merchant' has no dialogue corpus"):
        corpora.corpus_of("Merchant")
    assert dispatch.BAD_AGENT["Charity"] == "pushy" and dispatch.BAD_AGENT["CB"] == "lowball"
    assert dispatch.bad_agent(load_card("ed")) == "dismissive"
    assert type(dispatch.scripted(task_card("Charity"))).__name__ == "ScriptedPersuader"


def test_a_card_without_agents_or_corpus_says_so(tmp_path: Path) -> None:
    dispatch = pytest.importorskip("dialogue_gym_agents.dispatch")
    text = card_text("Bare", "Bare task")
    text = text.replace('[agents]\nfamily = "persuasion"\n', "")
    start, end = text.index("\n[corpus]\n"), text.index("\n[llm]\n")
    path = tmp_path / "bare.toml"
    path.write_text(text[:start] + text[end:], encoding="utf-8")
    card = load_card(path)
    assert card.agent_family is None and card.corpus is None
    with pytest.raises(ValueError, match="names no agent family"):
        dispatch.scripted(card)
    with pytest.raises(ValueError, match="'Bare' has no corpus"):
        dialogue_gym.DialogueEnv.from_options(card, encoder="hashing", data=True)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('name = "p4g"', 'name = "nope"', "corpus.name: no corpus loader 'nope'"),
        ('sft_format = "full"', 'sft_format = "xlsx"', "corpus.sft_format: 'xlsx' is not"),
        ('family = "persuasion"', 'family = "poetry"', "agents.family: must be one of"),
        ('judge_prompt = "stance"', 'judge_prompt = "deal"', "llm.judge_prompt: 'deal'"),
        ("[catalog]\n", '[catalog]\nmedium = "x"\n', "catalog: unknown keys ['medium']"),
    ],
)
def test_bad_sections_name_the_file_and_field(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    text = card_text("Oops", "Oops")
    assert old in text
    path = tmp_path / "oops.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(CardError, match=f"^{re.escape(f'{path}: {message}')}"):
        load_card(path)


def test_a_registered_card_needs_an_id_that_can_start_env_ids(tmp_path: Path) -> None:
    path = tmp_path / "spaced.toml"
    path.write_text(card_text("My Task", "Spaced"), encoding="utf-8")
    with pytest.raises(CardError, match=r"task\.id: 'My Task' starts the env ids"):
        register_card(path)
    assert not any(env_id.startswith("My Task") for env_id in dialogue_gym.registry)


# -- a third-party package -------------------------------------------------------------------------


def make_plugin(root: Path, broken: bool = False) -> Path:
    """A package with a card and a module registering it, and its entry points on ``root``."""
    package = root / PLUGIN
    package.mkdir(parents=True)
    (package / "charity.toml").write_text(card_text("Charity", "Charity drive"), "utf-8")
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """
            from pathlib import Path

            import dialogue_gym

            dialogue_gym.register_card(Path(__file__).with_name("charity.toml"))
            """
        ),
        "utf-8",
    )
    entry_points = f"[dialogue_gym.envs]\ncharity = {PLUGIN}\n"
    if broken:
        (root / "dg_broken_plugin.py").write_text("raise RuntimeError('plugin bug')\n", "utf-8")
        entry_points += "broken = dg_broken_plugin\n"
    info = root / f"{PLUGIN}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {PLUGIN}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points, "utf-8")
    return root


def test_an_entry_point_plugin_is_loaded_lazily_and_evaluated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restore_registry: None
) -> None:
    monkeypatch.syspath_prepend(str(make_plugin(tmp_path / "site", broken=True)))
    registry_module._plugins_loaded = False
    assert "Charity-hard-v0" not in dialogue_gym.registry  # nothing loads at import
    assert dialogue_gym.spec("P4G-hard").id == "P4G-hard-v0"  # known ids load no plugin
    assert not registry_module._plugins_loaded
    with pytest.warns(RuntimeWarning, match="skipped the env plugin 'broken'.*plugin bug"):
        assert dialogue_gym.spec("Charity-hard").id == "Charity-hard-v0"
    result = dialogue_gym.evaluate(
        "scripted", "Charity-hard-v0", episodes=1, env_kwargs={"encoder": "hashing"}, progress=False
    )
    assert [r["env_id"] for r in result.records] == ["Charity-hard-v0"]


def test_a_module_id_imports_the_module_that_registers_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restore_registry: None
) -> None:
    site = tmp_path / "site"
    make_plugin(site)
    (site / f"{PLUGIN}-0.1.dist-info" / "entry_points.txt").unlink()  # the module id alone
    monkeypatch.syspath_prepend(str(site))
    env_spec = dialogue_gym.spec(f"{PLUGIN}:Charity-hard-v0")
    assert env_spec.id == "Charity-hard-v0"
    result = dialogue_gym.evaluate(
        "scripted",
        f"{PLUGIN}:Charity-hard-v0",
        episodes=1,
        env_kwargs={"encoder": "hashing"},
        progress=False,
    )
    assert [r["env_id"] for r in result.records] == ["Charity-hard-v0"]
    with pytest.raises(dialogue_gym.RegistryError, match="cannot import 'no_such_plugin'"):
        dialogue_gym.spec("no_such_plugin:Charity-hard-v0")


def _cli(args: list[str], site: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
    }
    env["OMP_NUM_THREADS"] = "1"
    command = [sys.executable, "-m", "dialogue_gym.cli.commands", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def test_the_cli_reaches_a_third_party_task(tmp_path: Path) -> None:
    site = make_plugin(tmp_path / "site")
    listed = _cli(["list"], site, tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "Charity-hard-v0" in listed.stdout and "Charity drive; soft: generous donors" in (
        listed.stdout
    )
    out = tmp_path / "run"
    args = ["eval", f"{PLUGIN}:Charity-hard-v0", "--episodes", "1", "--encoder", "hashing"]
    done = _cli([*args, "--agent", "scripted", "--out", str(out), "--no-progress"], site, tmp_path)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert [r["env_id"] for r in records] == ["Charity-hard-v0"]
