"""evaluate() takes names, classes, factories and agent objects; a factory receives ``card``
only if it accepts it, so a plain class with only ``act`` evaluates (by path too)."""

from __future__ import annotations

import functools
import json
import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import pytest
from test_evaluation import PERSUASIVE, Persuader, agent, install_tiny

from dialogue_gym.cards.card import TaskCard, load_card
from dialogue_gym.evaluation.agents import accepts_card, agent_sources, build_agent, make_agent
from dialogue_gym.evaluation.run import evaluate

PLAIN = textwrap.dedent(
    """
    class MyAgent:
        def act(self, observation):
            return "Would you donate to the charity?"
    """
)


@pytest.fixture
def tiny_id(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> str:
    return install_tiny(monkeypatch, tmp_path_factory.getbasetemp())


def transcripts(records: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(r["transcript"]) for r in records]


class Plain:
    """No constructor arguments, no reset: the smallest agent."""

    def act(self, observation: dict[str, Any]) -> str:
        return PERSUASIVE[min(observation["exchange"], len(PERSUASIVE) - 1)]


class Closable(Persuader):
    def __init__(self, card: TaskCard) -> None:
        super().__init__(card)
        self.closed = False

    def close(self) -> None:
        self.closed = True


def with_card(card: TaskCard, tone: str = "") -> Persuader:
    agent = Persuader(card)
    agent.tone = tone  # type: ignore[attr-defined]
    return agent


def without_card(**options: Any) -> Plain:
    return Plain()


def without_anything() -> Plain:
    return Plain()


# -- card only when accepted -------------------------------------------------------------------


def test_accepts_card_reads_the_signature() -> None:
    assert accepts_card(Persuader) and accepts_card(with_card)
    assert accepts_card(without_card)  # **kwargs accepts it
    assert not accepts_card(Plain) and not accepts_card(without_anything)
    assert accepts_card(functools.partial(with_card, tone="warm"))
    assert accepts_card(dict)  # builtins whose signature cannot be read: as before


def test_build_agent_passes_card_only_when_accepted(tiny_id: str) -> None:
    card = TaskCard.__new__(TaskCard)
    assert isinstance(build_agent(Plain, card), Plain)
    built = build_agent(with_card, card, {"tone": "warm"})
    assert built.card is card and built.tone == "warm"  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="without an act"):
        build_agent(lambda: object(), card)
    # base_url reaches only factories that name it; an option called "name" is an option.
    assert isinstance(build_agent(Plain, card, {"base_url": "http://x"}), Plain)
    named = build_agent(lambda name: Plain(), card, {"name": "x"}, name="label")
    assert isinstance(named, Plain)


@pytest.mark.parametrize("how", ["file", "module"])
def test_plain_class_without_card_evaluates_by_path(
    tiny_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    source = tmp_path / "plain_agent_mod.py"
    source.write_text(PLAIN, encoding="utf-8")
    if how == "module":
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.delitem(sys.modules, "plain_agent_mod", raising=False)
        name = "plain_agent_mod:MyAgent"
    else:
        name = f"{source}:MyAgent"
    result = evaluate(name, tiny_id, episodes=2, progress=False)
    assert [r["agent"] for r in result.records] == [name, name]
    assert not any(r["errored"] for r in result.records)
    assert result.records[0]["transcript"][0]["text"] == "Would you donate to the charity?"
    assert type(make_agent(name, card=None)).__name__ == "MyAgent"


# -- classes, factories, objects ---------------------------------------------------------------


def test_a_class_and_its_name_give_the_same_records(tiny_id: str, tmp_path: Path) -> None:
    by_name = evaluate(agent("Persuader"), tiny_id, episodes=3, seed=2, progress=False)
    by_class = evaluate(Persuader, tiny_id, episodes=3, seed=2, out=tmp_path, progress=False)
    assert transcripts(by_class.records) == transcripts(by_name.records)
    # The class is labelled module:Class, which is also its name: the stamps agree.
    assert {r["agent"] for r in by_class.records} == {agent("Persuader")}
    assert by_class.records[0]["agent_hash"] == by_name.records[0]["agent_hash"]
    resumed = evaluate(agent("Persuader"), tiny_id, episodes=3, seed=2, out=tmp_path)
    assert resumed.records == by_class.records  # resumes: nothing played again


def test_factories_with_and_without_card(tiny_id: str) -> None:
    result = evaluate(
        [functools.partial(with_card, tone="warm"), without_card, without_anything],
        tiny_id,
        episodes=2,
        progress=False,
    )
    labels = [s["agent"] for s in result.summaries]
    assert labels == [
        f"{__name__}:with_card",
        f"{__name__}:without_card",
        f"{__name__}:without_anything",
    ]
    assert not any(r["errored"] for r in result.records)


def test_agent_object_from_a_notebook(tiny_id: str, tmp_path: Path) -> None:
    mine = Closable(card=None)  # type: ignore[arg-type]
    result = evaluate(mine, tiny_id, episodes=3, seed=7, out=tmp_path, progress=False)
    assert mine.seeds == [7, 8, 9]  # played as it is, reset before every episode
    assert not mine.closed  # the caller's object stays open
    assert {r["agent"] for r in result.records} == {f"{__name__}:Closable"}
    assert result.summaries[0]["config"]["agent_kwargs"] == {}
    by_name = evaluate(agent("Persuader"), tiny_id, episodes=3, seed=7, progress=False)
    assert transcripts(result.records) == transcripts(by_name.records)
    # Mixed with names in one call; the object ignores agent options.
    mixed = evaluate([Plain(), agent("Pushy")], tiny_id, episodes=1, progress=False)
    assert [s["agent"] for s in mixed.summaries] == [f"{__name__}:Plain", agent("Pushy")]


def test_built_agents_are_closed_but_objects_are_not(tiny_id: str) -> None:
    built: list[Closable] = []

    def factory(card: TaskCard) -> Closable:
        built.append(Closable(card))
        return built[-1]

    evaluate(factory, tiny_id, episodes=2, progress=False)
    assert built and all(a.closed for a in built)


def test_agent_objects_play_one_episode_at_a_time(tiny_id: str) -> None:
    for options in ({"concurrency": 2}, {"num_envs": 2}):
        with pytest.raises(ValueError, match="one episode at a time"):
            evaluate(Plain(), tiny_id, episodes=2, progress=False, **options)
    with pytest.raises(ValueError, match="Ray workers build agents by name"):
        evaluate(lambda: Plain(), tiny_id, episodes=1, executor="ray", progress=False)


def test_bad_agents_are_refused(tiny_id: str) -> None:
    with pytest.raises(TypeError, match="act"):
        evaluate(3, tiny_id, episodes=1, progress=False)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-empty"):
        evaluate([Plain, ""], tiny_id, episodes=1, progress=False)
    with pytest.raises(ValueError, match="both named"):
        evaluate([Plain(), Plain()], tiny_id, episodes=1, progress=False)


def test_agent_sources_drop_repeats_and_resolve_names() -> None:
    sources = agent_sources([Plain, Plain, agent("Pushy"), agent("Pushy")])
    assert [s.label for s in sources] == [f"{__name__}:Plain", agent("Pushy")]
    assert sources[0].name == f"{__name__}:Plain"  # importable: a Ray worker can build it
    assert agent_sources(Plain())[0].name is None


# -- the env's encoder is shared with agents that encode -----------------------------------------


class Encoding(Persuader):
    """Records the encoder it was built with."""

    built_with: ClassVar[list[Any]] = []

    def __init__(self, card: TaskCard, encoder: Any = "minilm") -> None:
        super().__init__(card)
        Encoding.built_with.append(encoder)


def test_build_agent_shares_the_encoder_only_with_factories_that_take_one() -> None:
    card = load_card("p4g")
    shared = object()
    Encoding.built_with.clear()
    build_agent(Encoding, card, encoder=shared)
    build_agent(Encoding, card, {"encoder": "static"}, encoder=shared)  # the caller's wins
    assert Encoding.built_with == [shared, "static"]
    plain = build_agent(Plain, card, encoder=shared)  # no encoder parameter: nothing passed
    assert isinstance(plain, Plain)


def test_evaluate_gives_agents_the_envs_encoder(tiny_id: str) -> None:
    Encoding.built_with.clear()
    evaluate([Encoding], tiny_id, episodes=1, progress=False, env_kwargs={"encoder": "hashing"})
    assert Encoding.built_with
    assert all(getattr(e, "name", None) == "hashing-256" for e in Encoding.built_with)


def test_scripted_listens_with_the_envs_encoder() -> None:
    from dialogue_gym.mind.encoders import make_encoder

    card = load_card("p4g")
    hashing = make_encoder("hashing")
    agent = make_agent("scripted", card, encoder=hashing)
    assert agent.encoder is hashing
