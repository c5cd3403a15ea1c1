"""``dialogue-gym train planner`` and the ``planner`` agent (tiny budgets, hashing encoder)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

import dialogue_gym
from dialogue_gym.backends import FakeBackend
from dialogue_gym.cards.card import load_card
from dialogue_gym.cli.commands import main
from dialogue_gym.data import load_corpus
from dialogue_gym.env.wrappers import ConcernActions, ListeningMoves, StrategyActions
from dialogue_gym_agents.common.checkpoint import (
    CheckpointMismatchError,
    CheckpointNotFoundError,
    CheckpointWriter,
    load_checkpoint,
)
from dialogue_gym_agents.common.sb3 import sb3_actor
from dialogue_gym_agents.common.seeding import generators
from dialogue_gym_agents.common.tracking import RunLogger, read_scalars
from dialogue_gym_agents.planner import train as planner_training
from dialogue_gym_agents.planner.agent import (
    LLMStrategyRealizer,
    PlannerAgent,
    StrategyFeatures,
    StrategyPolicyNet,
    load_policy,
    planner,
)
from dialogue_gym_agents.planner.train import (
    PlannerConfig,
    copy_actor_weights,
    corpus_examples,
    corpus_labels,
    pretrain,
)
from dialogue_gym_agents.training.corpora import LabelMapper

DATA = Path(
    os.environ.get("DIALOGUE_GYM_DATA")
    or Path(__file__).resolve().parents[2] / "shared" / "datasets"
)
needs_data = pytest.mark.skipif(
    not DATA.is_dir(), reason=f"corpus copies not found at {DATA} (set DIALOGUE_GYM_DATA)"
)

TINY = ["--encoder", "hashing", "--no-progress", "--n-envs", "2", "--n-steps", "64"]
TINY += ["--batch-size", "64", "--n-epochs", "2", "--hidden-sizes", "16", "16"]


def _train(out: Path, *extra: str, task: str = "P4G") -> int:
    argv = ["train", "planner", "--task", task, "--out", str(out), "--data", str(DATA)]
    return main([*argv, *TINY, "--max-dialogues", "20", "--pretrain-epochs", "3", *extra])


@pytest.fixture(scope="module")
def p4g_planner(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("planner") / "p4g"
    if DATA.is_dir():
        assert _train(out, "--ppo-steps", "256") == 0
    return out


def _features_batch(card_name: str = "p4g", n: int = 32) -> torch.Tensor:
    card = load_card(card_name)
    width = StrategyFeatures(card, "hashing").n_features
    return torch.rand(n, width, generator=torch.Generator().manual_seed(0))


@needs_data
def test_smoke_pretrain_then_ppo(p4g_planner: Path) -> None:
    checkpoint = load_checkpoint(p4g_planner, kind="planner", card=load_card("p4g"))
    info = checkpoint.info
    assert info["pretrain"]["dialogues"] == 20 and info["pretrain"]["examples"] > 20
    assert info["pretrain"]["unmapped_by_label"]  # e.g. "other", "acknowledgement"
    assert info["ppo"]["env_id"] == "P4G-hard-v0" and info["ppo"]["updates"] == 2
    assert info["feature_names"][0] == "exchange" and info["hidden_sizes"] == [16, 16]
    tags = {tag for _, tag, _ in read_scalars(p4g_planner)}
    for tag in ("pretrain/loss", "pretrain/accuracy", "ppo/rollout_sr", "ppo/rollout_rcsr"):
        assert tag in tags
    curve = read_scalars(p4g_planner, "ppo/rollout_sr")
    assert [step for step, _, _ in curve] == [128, 256]
    assert checkpoint.manifest["versions"]["stable_baselines3"]


@needs_data
def test_agent_loads_and_evaluates(p4g_planner: Path) -> None:
    result = dialogue_gym.evaluate(
        "planner",
        ["P4G-hard", "P4G-soft"],
        episodes=2,
        env_kwargs={"encoder": "hashing"},
        agent_kwargs={"checkpoint": str(p4g_planner)},
        progress=False,
    )
    assert len(result.records) == 4 and not any(r["errored"] for r in result.records)
    templates = {t for s in load_card("p4g").strategies for t in s.templates}
    said = [t["text"] for r in result.records for t in r["transcript"] if t["role"] == "system"]
    assert said and set(said) <= templates


@needs_data
def test_training_changes_parameters_and_reload_is_identical(tmp_path: Path) -> None:
    """TRL-style: every trained tensor moved; the saved checkpoint gives the same outputs."""
    card = load_card("p4g")
    config = PlannerConfig(task="P4G", out=tmp_path / "ckpt", encoder="hashing")
    config = dataclasses.replace(config, pretrain_epochs=3, progress=False, hidden_sizes=(16,))
    run = generators(config.seed)
    features = StrategyFeatures(card, "hashing")
    net = StrategyPolicyNet(features.n_features, len(card.strategies), (16,), run.torch)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    dialogues = load_corpus("p4g", DATA, split="train", format="annotated")[:15]
    label, _ = corpus_labels(card, None, features.encoder)
    X, Y = corpus_examples(dialogues, features, label, len(card.strategies))
    with RunLogger(tmp_path / "logs", tensorboard=False) as log:
        stats = pretrain(net, X, Y, config, run, log)
    assert stats["loss"] > 0
    for name, tensor in net.state_dict().items():
        assert not torch.equal(tensor, before[name]), f"{name} did not change"
    with CheckpointWriter(config.out) as writer:
        torch.save(net.state_dict(), writer.path / "policy.pt")
        info = {"n_features": net.n_features, "n_actions": net.n_actions, "hidden_sizes": [16]}
        writer.commit("planner", card, {}, ["policy.pt"], info=info)
    reloaded = load_policy(config.out, info)
    batch = _features_batch()
    with torch.no_grad():
        assert torch.equal(net(batch), reloaded(batch))


@needs_data
def test_same_seed_same_checkpoint(p4g_planner: Path, tmp_path: Path) -> None:
    """Seeded runs reproduce: identical weights (PPO included), and identical actions."""
    assert _train(tmp_path / "again", "--ppo-steps", "256") == 0
    first, second = load_checkpoint(p4g_planner), load_checkpoint(tmp_path / "again")
    assert first.manifest["content_hash"] == second.manifest["content_hash"]
    card = load_card("p4g")
    agents = [planner(card=card, checkpoint=c.path) for c in (first, second)]
    env = dialogue_gym.make("P4G-hard", encoder="hashing")
    chosen = []
    for agent in agents:
        obs, _ = env.reset(seed=3)
        agent.reset(seed=3)
        strategies = []
        for _ in range(4):
            obs, *_ = env.step({"system": agent.act(obs["system"])})
            strategies.append(agent.last_strategy)
        chosen.append(strategies)
    assert chosen[0] == chosen[1]
    with torch.no_grad():
        batch = _features_batch()
        assert torch.equal(agents[0].net(batch), agents[1].net(batch))


@needs_data
def test_ppo_changes_the_pretrained_policy(p4g_planner: Path, tmp_path: Path) -> None:
    assert _train(tmp_path / "pretrained-only", "--ppo-steps", "0") == 0
    only = load_checkpoint(tmp_path / "pretrained-only")
    tuned = load_checkpoint(p4g_planner)
    assert "ppo" not in only.info
    assert only.info["pretrain"] == tuned.info["pretrain"]  # same seed, same pretraining
    before = torch.load(only.file("policy.pt"), weights_only=True)
    after = torch.load(tuned.file("policy.pt"), weights_only=True)
    for name, tensor in before.items():
        assert not torch.equal(tensor, after[name]), f"PPO left {name} unchanged"


@needs_data
@pytest.mark.parametrize("task", ["CB", "ESConv"])
def test_pretraining_maps_every_label(task: str, tmp_path: Path) -> None:
    argv = ["--ppo-steps", "0", "--max-dialogues", "10"]
    assert _train(tmp_path / task, *argv, task=task) == 0
    report = load_checkpoint(tmp_path / task).info["pretrain"]
    assert report["unmapped"] == 0 and report["mapped"] == report["labels"] > 10


def test_features_match_the_strategy_actions_view() -> None:
    for task in ("P4G-hard", "ESConv-hard"):
        env = StrategyActions(dialogue_gym.make(task, encoder="hashing"))
        base = env.par_env
        features = StrategyFeatures(env.card, "hashing", env.max_exchanges)
        assert features.feature_names == env.feature_names
        rng = np.random.default_rng(0)
        for episode in range(3):
            x, _ = env.reset(seed=episode)
            features.reset()
            done = False
            while True:
                history = tuple(
                    {"speaker": 0 if role == "system" else 1, "text": text}
                    for role, text in base.history
                )
                observed = features.observe(
                    {"history": history, "role": 0, "exchange": base.exchange}
                )
                assert np.array_equal(x, observed)
                if done:
                    break
                action = int(rng.integers(env.action_space.n))
                x, _, terminated, truncated, _ = env.step(action)
                features.record(action)
                done = terminated or truncated


@pytest.mark.parametrize("reward", ["success", "judge", "env"])
def test_training_env_rewards_and_budget_termination(reward: str) -> None:
    """T ends an episode as a termination (no bootstrapping past it); rewards per mode."""
    env = planner_training.make_training_env("P4G-soft", "hashing", reward=reward)
    env.reset(seed=0)
    steps = []
    for _ in range(8):
        _, r, terminated, truncated, info = env.step(0)  # greetings only: never succeeds
        steps.append((r, info))
        assert truncated is False
        if terminated:
            break
    assert terminated and len(steps) == 8 and not info["is_success"]
    assert info["dialogue_episode"]["turns"] == 8 and set(info["episode"]) >= {"r", "l"}
    for r, step_info in steps:
        expected = {"success": 0.0, "judge": step_info["success_score"]}.get(reward, r)
        assert r == expected
    env.reset(seed=0)
    for _ in range(8):
        _, r, terminated, _, info = env.step(12)  # the soft user agrees to a bare ask
        if terminated:
            break
    assert info["is_success"] and (reward != "success" or r == 1.0)


def test_sb3_weight_copy_round_trip() -> None:
    from stable_baselines3 import PPO

    env = StrategyActions(dialogue_gym.make("P4G-hard", encoder="hashing"))
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=16,
        batch_size=16,
        policy_kwargs={"net_arch": {"pi": [8], "vf": [8]}, "activation_fn": torch.nn.Tanh},
        device="cpu",
    )
    net = StrategyPolicyNet(env.observation_space.shape[0], env.action_space.n, (8,))
    actor = sb3_actor(model.policy)
    copy_actor_weights(net.linears(), actor)
    batch = _features_batch()
    with torch.no_grad():
        distribution = model.policy.get_distribution(batch).distribution
        assert torch.allclose(torch.log_softmax(net(batch), -1), distribution.logits, atol=1e-6)
    with pytest.raises(ValueError):
        copy_actor_weights(net.linears()[:1], actor)


@needs_data
def test_label_mapping_and_corpus_features() -> None:
    card = load_card("p4g")
    mapper = LabelMapper(card)
    target = mapper(("greeting", "ask-donation-amount", "thank"))
    assert target is not None
    names = [card.strategy_names[i] for i in np.flatnonzero(target)]
    assert names == ["greeting", "proposition-of-donation"] and np.isclose(target.sum(), 1.0)
    assert mapper(("other",)) is None
    assert mapper.report()["unmapped_by_label"] == {"thank": 1, "other": 1}
    dialogues = load_corpus("p4g", DATA, split="train", format="annotated")[:5]
    features = StrategyFeatures(card, "hashing")
    label, _ = corpus_labels(card, None, features.encoder)
    X, Y = corpus_examples(dialogues, features, label, len(card.strategies))
    assert X.shape[0] == Y.shape[0] > 5 and np.allclose(Y.sum(axis=1), 1.0)
    assert X[0][0] == 0.0 and X[0][1] == 1.0  # exchange 0, no user reply yet
    esconv = load_card("esconv")
    assert LabelMapper(esconv)(("Question", "Others")) is not None


def test_ppo_only_for_a_task_without_corpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["train", "planner", "--task", "Merchant", "--out", str(tmp_path / "m"), *TINY]
    assert main([*argv, "--ppo-steps", "128"]) == 2
    err = capsys.readouterr().err
    assert "no dialogue corpus" in err and "--pretrain-epochs 0" in err
    assert list(tmp_path.iterdir()) == []
    assert main([*argv, "--ppo-steps", "128", "--pretrain-epochs", "0", "--user", "soft"]) == 0
    checkpoint = load_checkpoint(tmp_path / "m", kind="planner", card=load_card("merchant"))
    assert (
        "pretrain" not in checkpoint.info and checkpoint.info["ppo"]["env_id"] == "Merchant-soft-v0"
    )


def test_llm_realizer_with_the_fake_backend(tmp_path: Path) -> None:
    out = tmp_path / "llm"
    argv = ["train", "planner", "--task", "P4G", "--out", str(out), *TINY]
    argv += [
        "--pretrain-epochs",
        "0",
        "--ppo-steps",
        "128",
        "--realizer",
        "llm",
        "--backend",
        "fake",
    ]
    assert main(argv) == 0
    card = load_card("p4g")
    agent = planner(card=card, checkpoint=str(out))
    assert isinstance(agent.realizer, LLMStrategyRealizer)
    assert agent.realizer.temperature == 0.3
    backend = FakeBackend()
    agent.realizer.backend = backend
    env = dialogue_gym.make("P4G-hard", encoder="hashing")
    obs, _ = env.reset(seed=0)
    agent.reset(seed=0)
    text = agent.act(obs["system"])
    assert text.startswith("Fake reply")
    call = backend.calls_log[-1]
    assert call.params.temperature == 0.3 and call.component == "planner.realizer"
    assert (
        f"Use this strategy in your next turn: {agent.last_strategy}"
        in call.messages[-1]["content"]
    )
    template_agent = planner(card=card, checkpoint=str(out), realizer="template")
    assert template_agent.realizer is None


# -- bad input -------------------------------------------------------------------------------------


def test_nonexistent_model_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["train", "planner", "--task", "P4G", "--out", str(tmp_path / "x"), *TINY]
    argv += ["--pretrain-epochs", "0", "--realizer", "llm"]
    assert main([*argv, "--backend", str("hf:" + str(tmp_path / "no-model"))]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(argv) == 2  # --realizer llm without a backend
    assert "--realizer llm needs --backend" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_interrupted_training_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(planner_training, "train_ppo", interrupted)
    config = PlannerConfig(
        task="P4G", out=tmp_path / "run", encoder="hashing", pretrain_epochs=0, progress=False
    )
    with pytest.raises(KeyboardInterrupt):
        planner_training.train_planner(config)
    assert list(tmp_path.iterdir()) == []


@needs_data
def test_checkpoint_errors(p4g_planner: Path, tmp_path: Path) -> None:
    card = load_card("p4g")
    with pytest.raises(CheckpointNotFoundError, match="planner:DIR"):
        planner(card=card)
    with pytest.raises(CheckpointNotFoundError, match="does not exist"):
        planner(card=card, checkpoint=tmp_path / "missing")
    with pytest.raises(CheckpointMismatchError, match="'P4G', not 'ESConv'"):
        planner(card=load_card("esconv"), checkpoint=p4g_planner)
    renamed = dataclasses.replace(
        card,
        strategies=(
            dataclasses.replace(card.strategies[0], name="hello"),
            *card.strategies[1:],
        ),
    )
    with pytest.raises(CheckpointMismatchError, match=r"\['greeting'\].*\['hello'\]"):
        planner(card=renamed, checkpoint=p4g_planner)
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    for item in p4g_planner.iterdir():
        if item.is_file():
            (corrupt / item.name).write_bytes(item.read_bytes())
    (corrupt / "policy.pt").write_bytes(b"not a torch file")
    with pytest.raises(Exception, match="does not match its SHA-256"):
        planner(card=card, checkpoint=corrupt)
    manifest = json.loads((corrupt / "checkpoint.json").read_text())
    assert manifest["kind"] == "planner"


def test_train_command_lists_trainers(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train"]) == 0
    out = capsys.readouterr().out
    assert "planner" in out and "dialogue_gym_agents.sft.train:main" in out
    assert main(["train", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown trainer 'nope'; registered trainers: " in err
    assert "planner" in err and "sft" in err
    assert main(["train", "planner", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--ppo-steps" in text and "PPO environment steps" in text
    assert main(["train", "planner", "--task", "P4G"]) == 2  # --out is required
    assert "--out" in capsys.readouterr().err


def test_planner_agent_shape_check() -> None:
    card = load_card("p4g")
    features = StrategyFeatures(card, "hashing")
    with pytest.raises(ValueError, match="does not fit the card"):
        PlannerAgent(card, StrategyPolicyNet(features.n_features + 1, 13), features)


def test_a_planner_over_listening_moves_trains_and_plays(tmp_path: Path) -> None:
    """``--view concern``: PPO on ConcernActions (no corpus pretraining), and the agent plays
    the moves through text, computing the view's features from what it observes."""
    out = tmp_path / "concern"
    argv = ["train", "planner", "--task", "P4G", "--out", str(out), "--view", "concern"]
    assert main([*argv, *TINY, "--ppo-steps", "128"]) == 0
    card = load_card("p4g")
    checkpoint = load_checkpoint(out, kind="planner", card=card)
    view = ConcernActions(dialogue_gym.make("P4G-hard", encoder="hashing"))
    assert checkpoint.info["view"] == "concern" and "pretrain" not in checkpoint.info
    assert checkpoint.info["feature_names"] == list(view.feature_names)
    agent = planner(card, checkpoint=out)
    env = dialogue_gym.make("P4G-hard", encoder="hashing")
    observations, _ = env.reset(seed=3)
    agent.reset(3)
    view.tracker.reset()
    for _ in range(4):
        text = agent.act(observations["system"])  # observes, chooses, records the move
        view.tracker.observe(observations["system"])
        view.tracker.record(view.move_names.index(agent.last_strategy or ""))
        seen = observations["system"]  # seen by both: the same vector, move included
        assert np.array_equal(agent.features.observe(seen), view.tracker.observe(seen))
        pool = ListeningMoves(card)._pools.get(agent.last_strategy or "", ())
        assert text in pool or text.startswith("It sounds like") or agent.last_strategy == "reflect"
        observations, _, _, _, _ = env.step({"system": text})
    llm = PlannerConfig(task="P4G", view="concern", realizer="llm", backend="fake", out=str(out))
    with pytest.raises(ValueError, match="realizes its moves itself"):
        planner_training.train_planner(llm)


@needs_data
def test_sft_over_listening_moves_clones_corpus_turns_labelled_with_moves(tmp_path: Path) -> None:
    """``--view concern --pretrain-epochs N``: each corpus system turn gets its nearest move
    (reflect and story answers included) and the supervised phase clones them; with
    ``--ppo-steps 0`` that is SFT over the moves, played like any planner."""
    out = tmp_path / "sft-moves"
    argv = ["train", "planner", "--task", "ED", "--out", str(out), "--view", "concern"]
    argv += ["--data", str(DATA), "--max-dialogues", "30", "--pretrain-epochs", "2"]
    assert main([*argv, *TINY, "--ppo-steps", "0"]) == 0
    card = load_card("ed")
    checkpoint = load_checkpoint(out, kind="planner", card=card)
    info = checkpoint.info["pretrain"]
    assert info["labels"] == "nearest listening move" and "ppo" not in checkpoint.info
    counts = info["move_counts"]
    assert set(counts) == set(ListeningMoves(card).names)
    assert sum(counts.values()) == info["examples"] > 30
    assert counts["reflect"] > 0 and counts["answer:wants_to_share_more"] > 0
    agent = planner(card, checkpoint=out, deterministic=False)
    env = dialogue_gym.make("ED-hard", encoder="hashing")
    observations, _ = env.reset(seed=0)
    agent.reset(0)
    assert agent.act(observations["system"])
    assert agent.last_strategy in counts


def test_a_negotiation_can_train_on_the_buyers_utility() -> None:
    """``--reward utility``: the buyer utility of the deal at the exchange that closes it (0
    before; SL is what ranks negotiators); a task without deals refuses it."""
    env = planner_training.make_training_env("CB-hard", "hashing", reward="utility")
    names = load_card("cb").strategy_names
    env.reset(seed=0)
    rewards = []
    for name in ["greet", "inquire", "inform", "propose", "counter", "counter", "agree", "agree"]:
        _, r, terminated, _, info = env.step(names.index(name))
        rewards.append(r)
        if terminated:
            break
    record = info["dialogue_episode"]
    assert info["is_success"] and 0.0 < record["utility"] <= 1.0
    assert rewards[-1] == pytest.approx(record["utility"]) and not any(rewards[:-1])
    config = PlannerConfig(task="P4G", reward="utility", out=str(Path("unused")))
    with pytest.raises(ValueError, match="no deal"):
        planner_training.train_planner(config)
