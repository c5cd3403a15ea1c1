"""``dialogue-gym train sft --method retrieval`` and the ``sft-retrieval`` agent (tiny budgets)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import dialogue_gym
from dialogue_gym.cards.card import load_card
from dialogue_gym.cli.commands import main
from dialogue_gym.data import DataNotFoundError, load_corpus
from dialogue_gym.mind.encoders import make_encoder
from dialogue_gym_agents.common.checkpoint import (
    CheckpointMismatchError,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    load_checkpoint,
)
from dialogue_gym_agents.common.tracking import read_scalars
from dialogue_gym_agents.dispatch import scripted
from dialogue_gym_agents.planner.agent import planner
from dialogue_gym_agents.sft.retrieval import (
    RetrievalAgent,
    RetrievalParams,
    build_index,
    context_keys,
    sft_retrieval,
)

DATA = Path(
    os.environ.get("DIALOGUE_GYM_DATA")
    or Path(__file__).resolve().parents[2] / "shared" / "datasets"
)
needs_data = pytest.mark.skipif(
    not DATA.is_dir(), reason=f"corpus copies not found at {DATA} (set DIALOGUE_GYM_DATA)"
)


def _train(out: Path, *extra: str, task: str = "P4G") -> int:
    argv = ["train", "sft", "--task", task, "--out", str(out), "--encoder", "hashing"]
    return main([*argv, "--data", str(DATA), "--max-dialogues", "20", "--no-progress", *extra])


@pytest.fixture(scope="module")
def p4g_system(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sft") / "p4g-system"
    if DATA.is_dir():
        assert _train(out, "--method", "retrieval", "--seat", "system") == 0
    return out


@needs_data
def test_smoke_train_and_evaluate(p4g_system: Path) -> None:
    checkpoint = load_checkpoint(p4g_system, kind="sft-retrieval")
    assert {"keys.npy", "positions.npy", "responses.json"} <= set(checkpoint.manifest["files"])
    assert checkpoint.info["dialogues"] == 20 and checkpoint.info["responses"] > 20
    assert checkpoint.config["seat"] == "system" and checkpoint.config["encoder"] == "hashing"
    assert [tag for _, tag, _ in read_scalars(p4g_system)][:2] == ["sft/dialogues", "sft/responses"]
    result = dialogue_gym.evaluate(
        "sft-retrieval",
        "P4G-hard",
        episodes=2,
        env_kwargs={"encoder": "hashing"},
        agent_kwargs={"checkpoint": str(p4g_system)},
        progress=False,
    )
    assert len(result.records) == 2 and not any(r["errored"] for r in result.records)
    said = {t["text"] for r in result.records for t in r["transcript"] if t["role"] == "system"}
    responses = {r["text"] for r in sft_retrieval(load_card("p4g"), p4g_system).index.responses}
    assert said and said <= responses


@needs_data
def test_reload_gives_identical_outputs(p4g_system: Path) -> None:
    """The in-memory index and the saved checkpoint answer identically (same seeds)."""
    card = load_card("p4g")
    config = load_checkpoint(p4g_system).config
    dialogues = load_corpus("p4g", DATA, split="train", format="full")
    # The trainer drew its own random subset: rebuild the same one from the indexed ids.
    ids = {r["dialogue_id"] for r in sft_retrieval(card, p4g_system).index.responses}
    params = RetrievalParams(
        context_turns=config["context_turns"],
        decay=config["decay"],
        top_k=config["top_k"],
        position_weight=config["position_weight"],
        max_exchanges=card.max_exchanges,
    )
    encoder = make_encoder("hashing")
    index = build_index([d for d in dialogues if d.id in ids], "system", encoder, params, 64, False)
    fresh = RetrievalAgent(card, index, encoder, "system", params)
    loaded = sft_retrieval(card, p4g_system)
    assert np.array_equal(fresh.index.keys, loaded.index.keys)
    env = dialogue_gym.make("P4G-hard", encoder="hashing")
    for seed in (0, 1):
        transcripts = []
        for agent in (fresh, loaded):
            obs, _ = env.reset(seed=seed)
            agent.reset(seed=seed)
            said = []
            for _ in range(3):
                said.append(agent.act(obs["system"]))
                obs, *_ = env.step({"system": said[-1]})
            transcripts.append(said)
        assert transcripts[0] == transcripts[1]


@needs_data
def test_user_seat_plays_through_the_user_seat(tmp_path: Path) -> None:
    out = tmp_path / "esconv-user"
    assert _train(out, "--seat", "user", task="ESConv") == 0
    card = load_card("esconv")
    agent = sft_retrieval(card=card, checkpoint=str(out))
    assert agent.seat == "user"
    env = dialogue_gym.make(
        "ESConv-hard",
        encoder="hashing",
        external=("user",),
        system_policy=scripted(card=card, encoder="hashing"),
    )
    obs, _ = env.reset(seed=0)
    agent.reset(seed=0)
    responses = {r["text"] for r in agent.index.responses}
    for _ in range(2):
        reply = agent.act(obs["user"])
        assert reply in responses
        obs, *_ = env.step({"user": reply})
        assert obs["user"]["history"][-2]["text"] == reply
    with pytest.raises(ValueError, match="plays the user seat"):
        agent.act(obs["system"] | {"role": 0})


@needs_data
@pytest.mark.parametrize(("task", "split"), [("CB", "valid"), ("ED", "train")])
def test_other_corpora(task: str, split: str, tmp_path: Path) -> None:
    """CB trains on its valid split (the public copies have no train dialogues)."""
    assert _train(tmp_path / task, task=task) == 0
    checkpoint = load_checkpoint(tmp_path / task)
    assert checkpoint.info["split"] == split and checkpoint.info["responses"] > 0


def test_context_keys_decay_and_start() -> None:
    encoder = make_encoder("hashing")
    params = RetrievalParams(context_turns=2, decay=0.5)
    keys = context_keys([[], ["a b c"], ["x y", "a b c"]], encoder, params)
    assert np.allclose(np.linalg.norm(keys, axis=1), 1.0)
    assert np.allclose(keys[1], encoder.encode(["a b c"])[0], atol=1e-6)
    assert keys[2] @ keys[1] > keys[2] @ encoder.encode(["x y"])[0]  # recent turn weighs more
    with pytest.raises(ValueError):
        RetrievalParams(decay=0.0)


# -- bad input -------------------------------------------------------------------------------------


def test_task_without_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _train(tmp_path / "m", task="Merchant") == 2
    assert "task 'Merchant' has no dialogue corpus" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_missing_data_root(tmp_path: Path) -> None:
    from dialogue_gym_agents.sft.retrieval import RetrievalConfig, train_retrieval

    config = RetrievalConfig(task="P4G", out=tmp_path / "x", data=str(tmp_path / "no-data"))
    with pytest.raises(DataNotFoundError, match="does not exist"):
        train_retrieval(config)
    assert list(tmp_path.iterdir()) == []


def test_unknown_method_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "sft", "--method", "nope", "--task", "P4G", "--out", "x"]) == 2
    err = capsys.readouterr().err
    assert "unknown SFT method 'nope'; available: " in err and "retrieval" in err
    assert main(["train", "sft", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--context-turns" in text and "--seat {system,user}" in text and "(required)" in text


def test_factory_needs_a_checkpoint(tmp_path: Path) -> None:
    card = load_card("p4g")
    with pytest.raises(CheckpointNotFoundError, match="sft-retrieval:DIR"):
        sft_retrieval(card=card)
    with pytest.raises(CheckpointNotFoundError, match="does not exist"):
        sft_retrieval(card=card, checkpoint=str(tmp_path / "nothing"))


@needs_data
def test_corrupt_and_mismatched_checkpoints(p4g_system: Path, tmp_path: Path) -> None:
    with pytest.raises(CheckpointMismatchError, match="trained for task 'P4G', not 'ESConv'"):
        sft_retrieval(card=load_card("esconv"), checkpoint=p4g_system)
    with pytest.raises(
        CheckpointMismatchError, match="'sft-retrieval' checkpoint, not a 'planner'"
    ):
        planner(card=load_card("p4g"), checkpoint=p4g_system)
    broken = tmp_path / "broken"
    shutil.copytree(p4g_system, broken)
    keys = broken / "keys.npy"
    keys.write_bytes(keys.read_bytes()[:100])  # truncated
    with pytest.raises(CorruptCheckpointError, match=r"keys\.npy"):
        sft_retrieval(card=load_card("p4g"), checkpoint=broken)
    (broken / "checkpoint.json").unlink()  # an interrupted run
    with pytest.raises(CorruptCheckpointError, match=r"checkpoint\.json is missing"):
        sft_retrieval(card=load_card("p4g"), checkpoint=broken)


def test_existing_output_is_not_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    assert _train(tmp_path / "out") == 2
    assert "not a checkpoint folder" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["keep.txt"]
