"""Tests for dialogue_gym.evaluation.run: records, resume after a crash, errors, validation.

The tests run against a tiny task card written here (two concerns, a four-exchange budget)
and a three-persona pool, with the hashing encoder, so they do not depend on the shipped
cards or on model weights. ``test_cli.py`` reuses the helpers of this module.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

import dialogue_gym
from dialogue_gym.cards.card import TaskCard, load_card
from dialogue_gym.env.dialogue_env import DialogueEnv
from dialogue_gym.env.registry import EnvSpec, RegistryError, registry
from dialogue_gym.evaluation.agents import AgentResolutionError
from dialogue_gym.evaluation.journal import MANIFEST_FILE
from dialogue_gym.evaluation.run import EPISODES_FILE, SUMMARY_FILE, EvalResult, evaluate
from dialogue_gym.judges.base import Judgment
from dialogue_gym.mind.encoders import make_encoder
from dialogue_gym.users.cognitive import CognitiveUser
from dialogue_gym.users.persona import Persona

TINY_CARD = textwrap.dedent(
    r"""
    schema_version = 1

    [task]
    id = "tiny"
    title = "Tiny donation task"
    description = "A minimal card for the evaluation tests."
    system_role = "persuader"
    user_role = "persuadee"
    goal = "Get the user to donate to the charity."
    user_goal = "Decide whether to donate."
    max_exchanges = 4
    domain = ["donate to the charity for children", "the charity helps children"]

    [target]
    belief = "The charity is trustworthy and helps children."
    desire = "I want to help the children."
    intention = "I will donate."
    receptivity = 0.9
    confidence = 0.8
    valence = 0.5

    [judge.success]
    labels = { refused = -1.0, neutral = -0.5, positive = 0.1, agree = 1.0 }
    threshold = 0.6
    n = 3

    # The plumbing tests script a persuader that answers the tiny users' concerns before they
    # voice them: credit proactive answers in full here (the shipped cards give half).
    [presets.hard]
    proactive_credit = 1.0

    [presets.soft]
    proactive_credit = 1.0

    [cues]
    ask = ["\\bdonat", "\\bgive\\b"]
    greeting = ["\\bhello\\b", "\\bhi\\b"]
    pressure = ["\\bmust\\b"]
    reply_refuse = ["\\bno\\b"]
    reply_agree = ["\\bwill donate\\b"]
    reply_positive = ["\\bmaybe\\b"]

    [[strategies]]
    name = "greet"
    templates = ["Hello! How are you today?"]

    [[strategies]]
    name = "ask"
    templates = ["Would you donate to the charity?"]
    asks = true

    [[concerns]]
    id = "trust"
    facet = "psychological"
    resistance = 1
    voice = ["I am not sure the charity is trustworthy."]
    unlock = ["The charity is audited and rated highly for trust."]
    unlock_cues = ["audit"]
    anti = ["You must donate now."]
    ack_partial = ["That helps a bit."]
    ack_resolved = ["OK, I trust them now."]
    belief_unresolved = "The charity may not be trustworthy."
    belief_resolved = "The charity is audited."
    desire_unresolved = "I want proof the charity is trustworthy."

    [[concerns]]
    id = "money"
    facet = "financial"
    resistance = 1
    voice = ["Money is tight for me."]
    unlock = ["Even a small amount like one dollar helps the children."]
    unlock_cues = ["small amount"]
    anti = ["Give everything you have."]
    ack_partial = ["A small amount might work."]
    ack_resolved = ["A small amount is fine."]
    belief_unresolved = "I cannot afford to donate."
    belief_resolved = "A small donation is affordable."
    desire_unresolved = "I want to keep my money."

    [replies]
    greeting = ["Hi there."]
    inquiry_open = ["Tell me more."]
    inquiry_concern = ["Well, {concern_voice}"]
    refuse = ["No, not today."]
    refuse_concern = ["No. {concern_voice}"]
    neutral = ["I see."]
    positive = ["Maybe, that sounds good."]
    agree = ["Yes, I will donate {amount}."]
    pushback = ["Please stop pushing."]
    repetition = ["You said that already."]
    offtopic = ["What does that have to do with anything?"]
    empty = ["Hello?"]

    [[styles]]
    id = "plain"
    tone = "plain"
    openers = ["", "Hmm. "]
    closers = ["", " Anyway."]

    [personas]
    count = 3
    seed = 7
    first_names = ["Ana", "Ben"]
    occupations = ["teacher", "nurse"]
    life_situations = ["lives alone"]
    giving_histories = ["rarely gives"]
    background_templates = ["{name}, {age}, a {occupation} who {situation} and {history}."]

    [mind]
    desire_open = "I want to hear more."
    refused = "I will not donate."
    neutral = "I am undecided."
    positive = "I might donate."
    """
)

TINY_ID = "EvalTiny-hard-v0"
SOFT_ID = "EvalTiny-soft-v0"

PERSUASIVE = (
    "Hello! How are you today?",
    "The charity is audited and rated highly for trust.",
    "Even a small amount like one dollar helps the children.",
    "Would you donate to the charity?",
)


def tiny_personas(card: TaskCard) -> tuple[Persona, ...]:
    """Three hand-written personas (so the tests do not depend on the persona generator)."""
    specs = [
        ("Ana", (("trust", 0.9), ("money", 0.5))),
        ("Ben", (("money", 0.6),)),
        ("Cy", (("trust", 0.5),)),
    ]
    return tuple(
        Persona(
            id=f"tiny-{i:04d}",
            name=name,
            age=30 + i,
            facts={"occupation": "teacher"},
            background=f"{name} is a teacher who rarely gives.",
            style="plain",
            concerns=concerns,
            initial_willingness=0.3,
            capacity=1.0,
        )
        for i, (name, concerns) in enumerate(specs)
    )


def tiny_env(card: str, user: str = "hard", encoder: str = "hashing", **kwargs: Any) -> DialogueEnv:
    """Entry point of the test envs: the real env and CognitiveUser on the tiny card."""
    task = load_card(Path(card))
    enc = make_encoder(encoder)
    simulator = CognitiveUser(task, enc, preset=user, personas=tiny_personas(task))
    return DialogueEnv.from_options(task, user=simulator, encoder=enc, **kwargs)


def tiny_specs(card_path: Path) -> list[EnvSpec]:
    """The specs of the tiny test envs (hard and soft users) for the card at ``card_path``."""
    return [
        EnvSpec(
            id=env_id,
            entry_point=tiny_env,
            kwargs={"card": str(card_path), "user": user, "encoder": "hashing"},
            description=f"tiny test card, {user} users",
        )
        for env_id, user in ((TINY_ID, "hard"), (SOFT_ID, "soft"))
    ]


def install_tiny(monkeypatch: pytest.MonkeyPatch, directory: Path) -> str:
    """Registers the tiny envs for one test (removed afterwards); returns the hard env's id."""
    path = directory / "tiny.toml"
    if not path.exists():
        path.write_text(TINY_CARD, encoding="utf-8")
    for env_spec in tiny_specs(path):
        monkeypatch.setitem(registry, env_spec.id, env_spec)
    return TINY_ID


@pytest.fixture
def tiny_id(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> str:
    return install_tiny(monkeypatch, tmp_path_factory.getbasetemp())


# -- test agents (resolved as "test_evaluation:Name") ----------------------------------------


class Persuader:
    """Greets, resolves both concerns, then asks: the hard tiny users agree at exchange 4."""

    def __init__(self, card: TaskCard) -> None:
        self.card = card
        self.turn = 0
        self.seeds: list[int | None] = []

    def reset(self, seed: int | None = None) -> None:
        self.turn = 0
        self.seeds.append(seed)

    def act(self, observation: dict[str, Any]) -> str:
        assert "goal" in observation and "history" in observation
        text = PERSUASIVE[min(self.turn, len(PERSUASIVE) - 1)]
        self.turn += 1
        return text


class Pushy:
    """Asks every turn (no reset method): fails against hard users."""

    def __init__(self, card: TaskCard) -> None:
        self.card = card

    def act(self, observation: dict[str, Any]) -> str:
        return "Would you donate to the charity?"


class Flaky(Persuader):
    """Raises on its second turn in episodes with an odd seed."""

    def act(self, observation: dict[str, Any]) -> str:
        if self.seeds[-1] % 2 == 1 and self.turn == 1:
            raise RuntimeError("backend timed out\nsecond line")
        return super().act(observation)


class BadAction(Persuader):
    """Returns a non-text action on its second turn: the env rejects it with TypeError."""

    def act(self, observation: dict[str, Any]) -> Any:
        if self.turn == 1:
            return 42
        return super().act(observation)


def agent(name: str) -> str:
    return f"{__name__}:{name}"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def key(record: dict[str, Any]) -> tuple[Any, ...]:
    return (record["agent"], record["env_id"], record["episode"], record["seed"])


# -- tests -----------------------------------------------------------------------------------


def test_records_and_summary(tiny_id: str, tmp_path: Path) -> None:
    result = evaluate(
        [agent("Persuader"), agent("Pushy")],
        tiny_id,
        episodes=3,
        seed=5,
        out=tmp_path,
        progress=False,
    )
    assert isinstance(result, EvalResult)
    assert result.out == tmp_path
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        EPISODES_FILE,
        MANIFEST_FILE,
        SUMMARY_FILE,
    ]
    assert len(result.records) == 6
    assert read_jsonl(tmp_path / EPISODES_FILE) == result.records
    first = result.records[0]
    assert first["agent"] == agent("Persuader") and first["env_id"] == tiny_id
    assert (first["episode"], first["seed"]) == (0, 5)
    assert first["errored"] is False and first["error"] is None
    assert first["error_source"] is None
    assert first["success"] is True and first["success_turn"] == 4
    assert first["persona"].startswith("tiny-")
    assert first["transcript"][0] == {"role": "system", "text": PERSUASIVE[0]}
    assert [t["role"] for t in first["transcript"]] == ["system", "user"] * 4
    assert len(first["events"]) == 4 and len(first["q"]) == 4
    assert any("addressed:" in e for events in first["events"] for e in events)

    by_agent = {s["agent"]: s for s in result.summaries}
    assert by_agent[agent("Persuader")]["sr"] == 1.0
    assert by_agent[agent("Pushy")]["sr"] == 0.0
    summary = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert summary["summaries"] == result.summaries
    config = summary["summaries"][0]["config"]
    spec = dialogue_gym.spec(tiny_id)
    assert config["config_hash"] == spec.config_hash()
    assert config["env"] == json.loads(json.dumps(spec.resolved()))
    assert config["encoder"] == "hashing-256"
    assert (config["T"], config["episodes"], config["seed"]) == (4, 3, 5)
    assert config["tau_q"] == 0.7
    assert config["dialogue_gym_version"] == dialogue_gym.__version__
    assert "created" in config
    table = result.table()
    assert "SR@4" in table and "RCSR@4" in table and "1.00 [1.00, 1.00]" in table


def test_same_seed_gives_identical_records(tiny_id: str, tmp_path: Path) -> None:
    kwargs: dict[str, Any] = {"episodes": 4, "seed": 11, "progress": False}
    a = evaluate(agent("Persuader"), "EvalTiny-soft", **kwargs)
    b = evaluate(agent("Persuader"), "EvalTiny-soft", out=tmp_path, **kwargs)
    assert a.out is None
    assert a.records == b.records
    assert [r["seed"] for r in a.records] == [11, 12, 13, 14]
    assert {r["env_id"] for r in a.records} == {SOFT_ID}  # unversioned id resolved
    other = evaluate(agent("Persuader"), SOFT_ID, episodes=4, seed=12, progress=False)
    assert other.records[:3] != a.records[:3]
    assert [r["transcript"] for r in other.records[:3]] == [r["transcript"] for r in a.records[1:]]


def test_resume_after_crash(tiny_id: str, tmp_path: Path) -> None:
    reference = evaluate(agent("Persuader"), tiny_id, episodes=5, progress=False).records
    evaluate(agent("Persuader"), tiny_id, episodes=3, out=tmp_path, progress=False)
    path = tmp_path / EPISODES_FILE
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(lines) == 3
    # A crash in the middle of writing the fourth record leaves a truncated last line.
    crashed = json.dumps({**reference[3], "agent": agent("Persuader")})
    path.write_text("".join(lines) + crashed[: len(crashed) // 2], encoding="utf-8")

    with pytest.warns(RuntimeWarning, match="incomplete last record"):
        result = evaluate(agent("Persuader"), tiny_id, episodes=5, out=tmp_path, progress=False)
    on_disk = read_jsonl(path)
    assert len(on_disk) == 5
    assert len({key(r) for r in on_disk}) == 5
    assert sorted(r["episode"] for r in on_disk) == [0, 1, 2, 3, 4]
    assert result.records == reference

    # Running the same command again adds nothing.
    again = evaluate(agent("Persuader"), tiny_id, episodes=5, out=tmp_path, progress=False)
    assert read_jsonl(path) == on_disk
    assert again.records == reference


def test_resume_drops_corrupt_complete_last_line(tiny_id: str, tmp_path: Path) -> None:
    evaluate(agent("Pushy"), tiny_id, episodes=2, out=tmp_path, progress=False)
    path = tmp_path / EPISODES_FILE
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"agent": "x", "env_i\n')
    with pytest.warns(RuntimeWarning):
        result = evaluate(agent("Pushy"), tiny_id, episodes=3, out=tmp_path, progress=False)
    assert [r["episode"] for r in read_jsonl(path)] == [0, 1, 2]
    assert len(result.records) == 3


def test_resume_refuses_a_different_configuration(tiny_id: str, tmp_path: Path) -> None:
    evaluate(agent("Pushy"), tiny_id, episodes=2, out=tmp_path, progress=False)
    with pytest.raises(ValueError, match="different configuration"):
        evaluate(
            agent("Pushy"),
            tiny_id,
            episodes=2,
            out=tmp_path,
            progress=False,
            env_kwargs={"max_exchanges": 2},
        )


def test_agent_error_is_recorded_and_evaluation_continues(tiny_id: str, tmp_path: Path) -> None:
    result = evaluate(agent("Flaky"), tiny_id, episodes=4, out=tmp_path, progress=False)
    errored = [r for r in result.records if r["errored"]]
    assert [r["episode"] for r in errored] == [1, 3]  # seeds 1 and 3 are odd
    for record in errored:
        assert record["error"] == "RuntimeError: backend timed out"
        assert record["error_source"] == "agent"
        assert record["success"] is False
        assert record["transcript"] == [
            {"role": "system", "text": PERSUASIVE[0]},
            {"role": "user", "text": record["transcript"][1]["text"]},
        ]
        assert len(record["q"]) == 1
    clean = [r for r in result.records if not r["errored"]]
    assert [r["episode"] for r in clean] == [0, 2] and all(r["success"] for r in clean)
    (summary,) = result.summaries
    assert (summary["n"], summary["n_errored"], summary["sr"]) == (2, 2, 1.0)
    assert len(read_jsonl(tmp_path / EPISODES_FILE)) == 4


def test_rejected_action_is_recorded(tiny_id: str) -> None:
    result = evaluate(agent("BadAction"), tiny_id, episodes=2, progress=False)
    for record in result.records:
        assert record["errored"] is True
        assert record["error"].startswith("TypeError: the 'system' action must be a str")
        assert record["error_source"] == "action"
    assert result.summaries[0]["n"] == 0 and result.summaries[0]["sr"] is None


class BrokenJudge:
    """A success judge whose backend fails on the second exchange."""

    def judge(self, exchange: Any) -> Judgment:
        if exchange.index == 2:
            raise RuntimeError("judge backend unreachable")
        return Judgment(
            votes=("neutral",), rewards=(-0.5,), score=-0.5, success=False, label="neutral"
        )


class ResetFails(Persuader):
    def reset(self, seed: int | None = None) -> None:
        raise KeyError("no such persona")


def test_env_and_reset_failures_are_recorded(tiny_id: str) -> None:
    result = evaluate(
        agent("Persuader"),
        tiny_id,
        episodes=2,
        progress=False,
        env_kwargs={"success_judge": BrokenJudge()},
    )
    for record in result.records:
        assert record["errored"] and record["error_source"] == "env"
        assert record["error"] == "RuntimeError: judge backend unreachable"
        assert len(record["transcript"]) == 4 and len(record["q"]) == 1  # partial exchange kept
    config = result.summaries[0]["config"]
    assert config["env"]["success_judge"].startswith("<test_evaluation.BrokenJudge object>")

    result = evaluate(agent("ResetFails"), tiny_id, episodes=1, progress=False)
    (record,) = result.records
    assert record["error_source"] == "agent" and record["transcript"] == []
    assert record["error"] == "KeyError: 'no such persona'"


@pytest.mark.parametrize("episodes", [0, -1, 1_000_001, 10**12, 2.0, 1.5, True, "3", None])
def test_episodes_validation(tiny_id: str, episodes: Any) -> None:
    with pytest.raises(ValueError, match="episodes must be"):
        evaluate(agent("Pushy"), tiny_id, episodes=episodes, progress=False)


@pytest.mark.parametrize("seed", [-1, 1.0, True, "0", None])
def test_seed_validation(tiny_id: str, seed: Any) -> None:
    with pytest.raises(ValueError, match="seed must be"):
        evaluate(agent("Pushy"), tiny_id, episodes=1, seed=seed, progress=False)


def test_unknown_names_fail_before_running(tiny_id: str, tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match="EvalTiny-hard-v0"):
        evaluate(agent("Pushy"), "EvalTiny-hrad-v0", episodes=1, out=tmp_path, progress=False)
    with pytest.raises(AgentResolutionError, match="no-such-agent"):
        evaluate("no-such-agent", tiny_id, episodes=1, out=tmp_path, progress=False)
    with pytest.raises(ValueError, match="at least one agent"):
        evaluate([], tiny_id, episodes=1, progress=False)
    assert not (tmp_path / EPISODES_FILE).exists()


def test_third_party_agent_from_a_file(tiny_id: str, tmp_path: Path) -> None:
    source = tmp_path / "my_agent.py"
    source.write_text(
        textwrap.dedent(
            """
            class Polite:
                def __init__(self, card, greeting="Hello!"):
                    self.card = card
                    self.greeting = greeting

                def act(self, observation):
                    return self.greeting + " " + self.card.goal
            """
        ),
        encoding="utf-8",
    )
    name = f"{source}:Polite"
    result = evaluate(
        name, tiny_id, episodes=2, progress=False, agent_kwargs={"greeting": "Good day."}
    )
    assert [r["agent"] for r in result.records] == [name, name]
    assert result.records[0]["transcript"][0]["text"].startswith("Good day. Get the user")
    assert result.summaries[0]["config"]["agent_kwargs"] == {"greeting": "Good day."}


def test_env_kwargs_reach_make(tiny_id: str) -> None:
    result = evaluate(
        agent("Pushy"), tiny_id, episodes=1, progress=False, env_kwargs={"max_exchanges": 2}
    )
    (record,) = result.records
    assert record["turns"] == 2 and record["T"] == 2
    assert result.summaries[0]["T"] == 2
    assert result.summaries[0]["config"]["env"]["max_exchanges"] == 2


def test_shipped_p4g_smoke() -> None:
    try:
        dialogue_gym.make("P4G-hard", encoder="hashing").close()
    except Exception as exc:  # the shipped card is not loadable yet
        pytest.skip(f"P4G-hard cannot be built: {type(exc).__name__}: {exc}")
    result = evaluate(
        agent("Pushy"), "P4G-hard", episodes=2, progress=False, env_kwargs={"encoder": "hashing"}
    )
    assert len(result.records) == 2
    assert not any(r["errored"] for r in result.records)


def test_concurrency_gives_the_same_records(tmp_path):
    one = evaluate(
        "scripted", "P4G-hard", episodes=6, env_kwargs={"encoder": "hashing"}, progress=False
    )
    four = evaluate(
        "scripted",
        "P4G-hard",
        episodes=6,
        env_kwargs={"encoder": "hashing"},
        progress=False,
        concurrency=4,
        out=tmp_path,
    )
    assert one.records == four.records
    with pytest.raises(ValueError, match="concurrency"):
        evaluate("scripted", "P4G-hard", episodes=1, concurrency=0)


def test_several_seeds_pool_blocks_and_match_single_seed_runs(tmp_path: Path) -> None:
    kwargs: dict[str, Any] = {"env_kwargs": {"encoder": "hashing"}, "progress": False}
    pooled = evaluate("scripted", "P4G-hard", episodes=3, seeds=[0, 100], out=tmp_path, **kwargs)
    first = evaluate("scripted", "P4G-hard", episodes=3, seed=0, **kwargs).records
    second = evaluate("scripted", "P4G-hard", episodes=3, seed=100, **kwargs).records
    assert pooled.records == first + second
    (summary,) = pooled.summaries
    assert summary["n"] + summary["n_errored"] == 6
    assert [row["seed"] for row in summary["per_seed"]] == [0, 100]
    assert summary["config"]["seeds"] == [0, 100]
    # Resuming with the same seeds adds nothing.
    again = evaluate("scripted", "P4G-hard", episodes=3, seeds=[0, 100], out=tmp_path, **kwargs)
    assert len(read_jsonl(tmp_path / EPISODES_FILE)) == 6
    assert again.records == pooled.records


@pytest.mark.parametrize(
    ("seeds", "seed", "match"),
    [([0, 2], 0, "overlap"), ([], 0, "non-empty"), ("0 1", 0, "list"), ([0, 10], 5, "either")],
)
def test_seeds_validation(seeds: Any, seed: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        evaluate("scripted", "P4G-hard", episodes=3, seeds=seeds, seed=seed)


@pytest.mark.parametrize("encoder", ["hashing", "minilm"])
def test_vector_env_gives_the_same_records(encoder: str, tmp_path: Path) -> None:
    kwargs: dict[str, Any] = {"env_kwargs": {"encoder": encoder}, "progress": False}
    episodes = 5 if encoder == "hashing" else 3
    one = evaluate("scripted", "P4G-hard", episodes=episodes, **kwargs)
    vec = evaluate("scripted", "P4G-hard", episodes=episodes, num_envs=2, out=tmp_path, **kwargs)
    assert vec.records == one.records
    written = sorted(read_jsonl(tmp_path / EPISODES_FILE), key=lambda r: r["episode"])
    assert written == one.records
    assert vec.summaries[0]["sr"] == one.summaries[0]["sr"]


@pytest.mark.parametrize("name", ["Flaky", "BadAction", "ResetFails", "Persuader"])
def test_vector_env_records_failures_like_a_lone_env(tiny_id: str, name: str) -> None:
    env_kwargs = {"success_judge": BrokenJudge()} if name == "Persuader" else {}
    kwargs: dict[str, Any] = {"episodes": 5, "progress": False, "env_kwargs": env_kwargs}
    lone = evaluate(agent(name), tiny_id, **kwargs)
    vec = evaluate(agent(name), tiny_id, num_envs=3, **kwargs)
    assert any(r["errored"] for r in lone.records)
    strip = lambda records: [{k: v for k, v in r.items() if k != "config_hash"} for r in records]  # noqa: E731
    assert strip(vec.records) == strip(lone.records)


def test_vector_env_resumes_an_interrupted_run(tmp_path: Path) -> None:
    kwargs: dict[str, Any] = {"env_kwargs": {"encoder": "hashing"}, "progress": False}
    clean = evaluate("scripted", "P4G-hard", episodes=6, num_envs=3, out=tmp_path / "a", **kwargs)
    partial = tmp_path / "b"
    partial.mkdir()
    lines = (tmp_path / "a" / EPISODES_FILE).read_text(encoding="utf-8").splitlines(True)
    (partial / EPISODES_FILE).write_text("".join(lines[:2]), encoding="utf-8")
    resumed = evaluate("scripted", "P4G-hard", episodes=6, num_envs=4, out=partial, **kwargs)
    assert resumed.records == clean.records
    assert len(read_jsonl(partial / EPISODES_FILE)) == 6


def test_num_envs_validation() -> None:
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="num_envs"):
            evaluate("scripted", "P4G-hard", episodes=1, num_envs=bad)
    with pytest.raises(ValueError, match="concurrency"):
        evaluate("scripted", "P4G-hard", episodes=1, num_envs=2, concurrency=2)
    with pytest.raises(ValueError, match="ray"):
        evaluate("scripted", "P4G-hard", episodes=1, num_envs=2, executor="ray")


def test_executor_validation() -> None:
    with pytest.raises(ValueError, match="executor"):
        evaluate("scripted", "P4G-hard", episodes=1, executor="dask")
    with pytest.raises(ValueError, match="ray_address"):
        evaluate("scripted", "P4G-hard", episodes=1, ray_address="auto")


SLOW_AGENT = textwrap.dedent(
    """
    import time

    from dialogue_gym_agents.baselines.persuasion import ScriptedPersuader


    class SlowScripted(ScriptedPersuader):
        # Slow enough that the test can kill the run between two episodes' writes.
        def act(self, observation):
            time.sleep(0.05)
            return super().act(observation)
    """
)


def test_sigkill_mid_run_resumes_to_the_same_file(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    agent_file = tmp_path / "slow_agent.py"
    agent_file.write_text(SLOW_AGENT, encoding="utf-8")
    name = f"{agent_file}:SlowScripted"
    script = (
        "import sys, dialogue_gym; dialogue_gym.evaluate(sys.argv[1], 'P4G-hard', episodes=8, "
        "out=sys.argv[2], env_kwargs={'encoder': 'hashing'}, progress=False)"
    )
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    proc = subprocess.Popen([sys.executable, "-c", script, name, str(killed)])
    path = killed / EPISODES_FILE
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists() and path.read_bytes().count(b"\n") >= 3:
            break
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    written = path.read_bytes().count(b"\n")
    assert 3 <= written < 8

    subprocess.run([sys.executable, "-c", script, name, str(killed)], check=True)
    subprocess.run([sys.executable, "-c", script, name, str(clean)], check=True)
    assert path.read_bytes() == (clean / EPISODES_FILE).read_bytes()
