"""SI-AVPO: privileged views (never observed), AOPD and STPR by hand, training and reloading."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import dialogue_gym
from dialogue_gym.cards.card import load_card
from dialogue_gym.cards.realize import TemplateRealizer
from dialogue_gym.env.dialogue_env import CONCERN_EVENTS
from dialogue_gym.evaluation.agents import make_agent
from dialogue_gym.metrics import format_table, summarize
from dialogue_gym.mind.encoders import make_encoder
from dialogue_gym_agents.common.checkpoint import (
    CheckpointError,
    CheckpointMismatchError,
    CheckpointNotFoundError,
    CorruptCheckpointError,
)
from dialogue_gym_agents.common.config import parse_config
from dialogue_gym_agents.siavpo.agent import siavpo
from dialogue_gym_agents.siavpo.config import SiavpoConfig
from dialogue_gym_agents.siavpo.losses import (
    aopd_kl,
    outcome_advantages,
    stpr_advantages,
    stpr_credit,
)
from dialogue_gym_agents.siavpo.policy import (
    STUDENT,
    TEACHER,
    PrivilegedFeatures,
    StepInput,
    StrategyViewNet,
    StrategyViewPolicy,
)
from dialogue_gym_agents.siavpo.train import (
    Rollout,
    main,
    make_envs,
    train_siavpo,
    turn_advantages,
)
from dialogue_gym_agents.siavpo.users import user_preset

ENV_IDS = sorted(dialogue_gym.registry)


# -- the privileged channel ------------------------------------------------------------------------


def _strings(value: Any) -> Iterator[str]:
    """Every string and number (as text) inside a nested observation."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, (int, float, np.integer, np.floating)):
        yield repr(value)


def _observed_texts(observation: dict[str, Any], own_turns: set[str], seat: str) -> str:
    """What the env wrote into a seat's observation (not the caller's own utterances)."""
    obs = dict(observation)
    history = [t for t in obs.pop("history") if t["text"] not in own_turns]
    if seat == "user":  # the user seat sees its own state and profile by design
        obs.pop("state", None)
        obs.pop("profile", None)
    return "\n".join(_strings({**obs, "history": history}))


def _secrets(privileged: dict[str, Any]) -> tuple[set[str], set[str]]:
    """(P_int strings hidden from both seats, internals hidden from the system seat)."""
    hidden: set[str] = set()
    for concern in privileged["internal_persona"]["concerns"].values():
        hidden.add(concern.get("description", ""))
        hidden.update(concern.get("unlock", ()))
        hidden.update(concern.get("anti_patterns", ()))
    system_only = {str(privileged["persona"])}
    system_only.update(v for v in privileged["bdi"].values() if isinstance(v, str))
    for key in ("willingness",):
        if isinstance(privileged.get(key), float) and privileged[key] not in (0.0, 1.0):
            system_only.add(f"{privileged[key]:.4f}".rstrip("0"))
    if privileged.get("delta_w"):
        system_only.add(repr(privileged["delta_w"]))
    phases = {p for pair in privileged["transitions"].values() for p in pair}
    system_only.update(phases & {"partially_addressed", "latent"})
    system_only.update(cid for cid in privileged["concerns"] if "_" in cid)
    return {h for h in hidden if len(h) > 12}, {s for s in system_only if len(s) > 3}


def _assert_no_leak(env: Any, env_id: str) -> int:
    """Plays two short episodes and searches every observation for privileged strings."""
    card = env.card
    asks = [s.name for s in card.strategies if s.asks] or [card.strategies[-1].name]
    plan = [s.name for s in card.strategies[:3]] + asks + [s.name for s in card.strategies[3:5]]
    checked = 0
    for seed in (0, 1):
        realizer = TemplateRealizer(card, seed)
        observations, infos = env.reset(seed=seed)
        said: set[str] = set()
        for turn in range(env.max_exchanges):
            assert "privileged" in infos["system"] and "privileged" in infos["user"]
            hidden, system_only = _secrets(infos["system"]["privileged"])
            for seat in ("system", "user"):
                text = _observed_texts(observations[seat], said, seat)
                secrets = hidden | (system_only if seat == "system" else set())
                leaked = [s for s in secrets if s in text]
                assert not leaked, f"{env_id} {seat} observation shows {leaked[:2]}"
                checked += len(secrets)
            utterance = realizer.realize(plan[turn % len(plan)])
            said.add(utterance)
            observations, _, terms, truncs, infos = env.step({"system": utterance})
            for seat in ("system", "user"):  # the unprivileged events name no concern either
                named = [e for e in infos[seat]["user_events"] if e.split(":")[0] in CONCERN_EVENTS]
                assert not named, f"{env_id} {seat} infos show {named}"
            if terms["system"] or truncs["system"]:
                break
    return checked


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_privileged_channel_never_leaks_into_observations(env_id: str) -> None:
    """Over every registered env: P_int, Δw, transitions and the true state stay in infos."""
    env = dialogue_gym.make(env_id, encoder="hashing", privileged=True, max_exchanges=5)
    assert _assert_no_leak(env, env_id) > 0
    plain = dialogue_gym.make(env_id, encoder="hashing")
    _, infos = plain.reset(seed=0)
    _, _, _, _, step_infos = plain.step({"system": env.card.strategies[0].templates[0]})
    assert all("privileged" not in i for i in (*infos.values(), *step_infos.values()))
    for info in step_infos.values():  # nor do the unprivileged user events name a concern
        assert not [e for e in info["user_events"] if e.split(":")[0] in CONCERN_EVENTS]


@pytest.mark.parametrize("secret", ["description", "willingness"])
def test_the_leak_check_catches_a_leak(secret: str, monkeypatch: pytest.MonkeyPatch) -> None:
    env = dialogue_gym.make("Merchant-hard", encoder="hashing", privileged=True, max_exchanges=2)
    observe = env._observe

    def leaky(seat: str) -> dict[str, Any]:
        obs = observe(seat)
        if seat == "system":
            state = env.user.privileged()
            cid = next(iter(state["concerns"]))
            leak = env.card.concern(cid).description if secret == "description" else ""
            obs["estimate"] = leak or f"w={state['willingness']:.4f}"
        return obs

    monkeypatch.setattr(env, "_observe", leaky)
    with pytest.raises(AssertionError, match="system observation shows"):
        _assert_no_leak(env, "Merchant-hard")


def test_privileged_view_holds_p_int_delta_w_and_transitions() -> None:
    env = dialogue_gym.make("Merchant-hard", encoder="hashing", privileged=True)
    _, infos = env.reset(seed=3)
    view = infos["system"]["privileged"]
    assert view["delta_w"] == 0.0 and view["transitions"] == {}
    concerns = view["internal_persona"]["concerns"]
    first = next(iter(concerns))
    entry = concerns[first]
    card_concern = env.card.concern(first)
    assert entry["description"] == card_concern.description
    assert entry["unlock"] == list(card_concern.unlock)
    assert entry["anti_patterns"] == list(card_concern.anti)
    assert entry["resistance"] == card_concern.resistance and entry["phase"] == "latent"
    assert {"status", "progress", "needed", "strength", "voiced", "facet"} <= set(entry)
    w0 = view["willingness"]
    # Address the strongest concern with its own unlock prototype before it is voiced.
    _, _, _, _, infos = env.step({"system": card_concern.unlock[0]})
    view = infos["system"]["privileged"]
    assert f"proactive:{first}" in infos["system"]["privileged"]["user_events"]
    assert not any(":" in e for e in infos["system"]["user_events"])  # concern ids: privileged
    assert view["transitions"][first][0] == "latent"
    assert view["transitions"][first][1] in ("partially_addressed", "resolved")
    assert view["delta_w"] == pytest.approx(view["willingness"] - w0, abs=1e-6)
    assert view["delta_w"] > 0


def test_an_open_question_probes_a_latent_concern() -> None:
    env = dialogue_gym.make("Merchant-hard", encoder="hashing", privileged=True, max_exchanges=2)
    env.reset(seed=5)
    question = "What would make you hesitate about a promotion like this?"
    _, _, _, _, infos = env.step({"system": question})
    probed = [e for e in infos["system"]["privileged"]["user_events"] if e.startswith("probed:")]
    assert len(probed) == 1
    cid = probed[0].split(":", 1)[1]
    assert infos["system"]["privileged"]["transitions"][cid] == ["latent", "voiced"]
    _, _, _, _, infos = env.step({"system": question})  # the same concern is voiced now
    events = infos["system"]["privileged"]["user_events"]
    assert not any(e.startswith("probed:") for e in events)
    episode = infos["system"]["episode"]
    assert episode["proactive_turns"] == 1
    row = summarize([episode], T=2, n_resamples=10)
    assert row["proactive_turns"] == 1.0
    assert "proactive turns" in format_table([{**row, "agent": "a", "env_id": "e"}])


def test_user_presets_strict_and_lenient_bracket_hard() -> None:
    card = load_card("merchant")
    hard, strict, lenient = (user_preset(card, n) for n in ("hard", "strict", "lenient"))
    assert hard.unlock_threshold == strict.unlock_threshold == lenient.unlock_threshold == 0.65
    assert lenient.accept_threshold < hard.accept_threshold < strict.accept_threshold
    assert strict.blocking_cutoff < hard.blocking_cutoff < lenient.blocking_cutoff
    assert lenient.concede_prob == 0.0 and lenient.drift == 0.0 and lenient.name == "lenient"
    with pytest.raises(ValueError, match="unknown user preset"):
        user_preset(card, "grumpy")


# -- AOPD and STPR against hand-computed values ----------------------------------------------------


def test_aopd_kl_both_directions_by_hand_with_a_detached_teacher() -> None:
    student = torch.zeros(1, 2, requires_grad=True)  # uniform
    teacher = torch.log(torch.tensor([[0.25, 0.75]])).requires_grad_(True)
    reverse = aopd_kl(student, teacher, "reverse")
    assert reverse.item() == pytest.approx(0.5 * math.log(2.0) + 0.5 * math.log(2.0 / 3.0))
    forward = aopd_kl(student, teacher, "forward")
    assert forward.item() == pytest.approx(0.25 * math.log(0.5) + 0.75 * math.log(1.5))
    (reverse + forward).sum().backward()
    assert teacher.grad is None  # stop-gradient on the teacher side
    # d/ds_0 of KL(S‖T) at uniform S: p0·(log p0 − log t0 − KL) = 0.5·(ln 2 − KL).
    expected_reverse = 0.5 * (math.log(0.5 / 0.25) - reverse.item())
    # d/ds_0 of KL(T‖S) = p0 − t0 = 0.25.
    assert student.grad[0, 0].item() == pytest.approx(expected_reverse + 0.25)
    assert aopd_kl(teacher.detach(), teacher, "reverse").item() == pytest.approx(0.0, abs=1e-7)
    with pytest.raises(ValueError, match="direction"):
        aopd_kl(student, teacher, "sideways")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="differ"):
        aopd_kl(torch.zeros(1, 3), teacher)


def test_one_network_two_views() -> None:
    card = load_card("merchant")
    policy = StrategyViewPolicy(card, "hashing", generator=torch.Generator().manual_seed(0))
    n_f, n_p = policy.net.n_features, policy.net.n_privileged
    a = StepInput(np.full(n_f, 0.3, np.float32), np.full(n_p, 0.7, np.float32))
    b = StepInput(a.features, np.zeros(n_p, np.float32))
    # The student view ignores P_int entirely; the teacher view depends on it.
    assert torch.equal(policy.logits([a], STUDENT), policy.logits([b], STUDENT))
    assert not torch.allclose(policy.logits([a], TEACHER), policy.logits([b], TEACHER))
    kl = policy.view_kl([a, b], None, "reverse")
    expected = aopd_kl(policy.logits([a, b], STUDENT), policy.logits([a, b], TEACHER), "reverse")
    assert torch.allclose(kl, expected) and kl.shape == (2,) and bool((kl > 0).all())
    kl.sum().backward()  # gradients flow through the student pass only
    grads = [p.grad.clone() for p in policy.parameters()]
    policy.net.zero_grad()
    teacher = policy.logits([a, b], TEACHER).detach()
    aopd_kl(policy.logits([a, b], STUDENT), teacher, "reverse").sum().backward()
    assert all(torch.allclose(g, p.grad) for g, p in zip(grads, policy.parameters(), strict=True))
    # Fixed θ_old targets: the KL to them stays put while the current teacher view moves.
    targets = policy.teacher_targets([a, b])
    assert not targets.requires_grad and torch.equal(targets, teacher)
    with torch.no_grad():
        for param in policy.parameters():
            param.add_(0.05)
    moved = policy.view_kl([a, b], None, "forward")
    fixed = policy.view_kl([a, b], None, "forward", targets)
    assert torch.allclose(fixed, aopd_kl(policy.logits([a, b], STUDENT), targets, "forward"))
    assert not torch.allclose(moved, fixed)
    with pytest.raises(ValueError, match="view"):
        policy.logits([a], "oracle")  # type: ignore[arg-type]


def test_privileged_features_read_static_p_int_with_the_dialogue() -> None:
    card = load_card("merchant")
    features = PrivilegedFeatures(card)
    names = list(card.strategy_names)
    # The simulator's own progress is ignored: only P_int and the system's strategy counts.
    record = {"concerns": {"upfront_cost": {"strength": 0.6, "progress": 1, "needed": 2}}}
    x = features(record)
    i = 3 * features.concern_ids.index("upfront_cost")
    assert x[i : i + 3].tolist() == pytest.approx([1.0, 0.6, 1.0])
    unlock = {n: x[3 * len(features.concern_ids) + j] for j, n in enumerate(names)}
    # cost-breakdown and risk-reversal meet upfront_cost's unlock conditions on the card.
    assert unlock["cost-breakdown"] == unlock["risk-reversal"] == pytest.approx(0.6)
    assert sum(unlock.values()) == pytest.approx(1.2)
    used = np.zeros(len(names))
    used[names.index("risk-reversal")] = 1  # one of the two turns it needs
    x = features(record, used)
    assert x[i + 2] == pytest.approx(0.5)
    assert x[3 * len(features.concern_ids) + names.index("cost-breakdown")] == pytest.approx(0.3)
    assert features(None).sum() == 0.0
    assert len(features.feature_names) == features.n_features == 3 * 9 + len(names)


def test_stpr_credit_by_hand() -> None:
    # Accepted: Δw > δ agrees (×1.5), Δw < −δ contradicts (×0.5), |Δw| ≤ δ is neutral.
    credit = stpr_credit(True, [0.1, -0.05, 0.0005, 0.0], reinforce=0.5, suppress=0.5)
    assert credit.tolist() == [1.5, 0.5, 1.0, 1.0]
    assert stpr_advantages(2.0, True, [0.1, -0.05, 0.0005, 0.0]).tolist() == [3.0, 1.0, 2.0, 2.0]
    # Rejected (σ = −1): a willingness drop agrees with the outcome and is blamed more.
    assert stpr_advantages(-1.0, False, [0.1, -0.05], 0.2, 0.4).tolist() == pytest.approx(
        [-0.6, -1.2]
    )
    # α = β = 0: every turn gets the trajectory advantage (plain GRPO).
    assert stpr_advantages(0.7, True, [0.3, -0.3], 0.0, 0.0).tolist() == [0.7, 0.7]
    with pytest.raises(ValueError, match="suppress"):
        stpr_credit(True, [0.1], suppress=1.5)


def test_outcome_advantages_are_group_normalized_per_seed_and_view() -> None:
    adv = outcome_advantages([1, 0, 0, 0, 1, 1], ["a", "a", "a", "a", "b", "b"], eps=0.0)
    std = math.sqrt(0.25 * 0.75)
    assert adv[:4].tolist() == pytest.approx([0.75 / std, -0.25 / std, -0.25 / std, -0.25 / std])
    assert adv[4:].tolist() == [0.0, 0.0]  # one outcome for the whole group: no signal
    config = SiavpoConfig(task="Merchant", out=Path("unused"))
    won = Rollout(seed=1, view=STUDENT, actions=[0, 1], delta_w=[0.2, -0.1])
    won.record = {"success": True}
    lost = Rollout(seed=1, view=STUDENT, actions=[0, 1], delta_w=[0.2, -0.1])
    lost.record = {"success": False}
    credited = turn_advantages([won, lost], config)
    assert credited[0].tolist() == pytest.approx([1.5, 0.5])  # A = +1 for the winner
    assert credited[1].tolist() == pytest.approx([-0.5, -1.5])  # A = −1 for the loser
    plain = turn_advantages([won, lost], dataclasses.replace(config, turn_credit=False))
    assert np.concatenate(plain).tolist() == pytest.approx([1.0, 1.0, -1.0, -1.0])


# -- training, checkpoints, the agent --------------------------------------------------------------


def _config(tmp_path: Path, task: str = "Merchant", **overrides: Any) -> SiavpoConfig:
    values: dict[str, Any] = {
        "task": task,
        "out": tmp_path / f"{task}-ckpt",
        "encoder": "hashing",
        "iterations": 2,
        "seeds_per_iteration": 2,
        "group_size": 4,
        "max_exchanges": 4,
        "progress": False,
        "tensorboard": False,
        **overrides,
    }
    return SiavpoConfig(**values)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train_siavpo(_config(tmp_path_factory.mktemp("siavpo")))


def test_smoke_run_writes_a_checkpoint_with_logs(trained: Path) -> None:
    manifest = json.loads((trained / "checkpoint.json").read_text())
    assert manifest["kind"] == "siavpo" and manifest["task"] == "Merchant"
    info = manifest["info"]
    assert info["method"] == "siavpo" and info["teachers_per_group"] == 2
    assert info["episodes"] == 2 * 2 * 4 and len(info["curve"]) == 2
    point = info["curve"][-1]
    assert {"student_acc", "teacher_acc", "loss_aopd", "student_proactive_turns"} <= set(point)
    assert point["loss_aopd"] >= 0.0
    assert (trained / "scalars.csv").read_text().count("train/loss_aopd") == 2


def test_checkpoint_reloads_identically(trained: Path) -> None:
    card = load_card("merchant")
    first, second = siavpo(card, checkpoint=str(trained)), siavpo(card, checkpoint=str(trained))
    state = torch.load(trained / "policy.pt", weights_only=True)
    assert all(torch.equal(v, first.policy.net.state_dict()[k]) for k, v in state.items())
    env = dialogue_gym.make("Merchant-hard", encoder="hashing")
    said = []
    for agent in (first, second):
        observations, _ = env.reset(seed=11)
        agent.reset(seed=11)
        lines = []
        for _ in range(4):
            lines.append(agent.act(observations["system"]))
            observations, _, terms, truncs, _ = env.step({"system": lines[-1]})
            if terms["system"] or truncs["system"]:
                break
        said.append(lines)
    assert said[0] == said[1] and said[0]
    by_name = make_agent(f"siavpo:{trained}", card=card)
    assert type(by_name).__name__ == "SiavpoAgent"
    result = dialogue_gym.evaluate(
        f"siavpo:{trained}",
        "Merchant-hard",
        episodes=2,
        env_kwargs={"encoder": "hashing"},
        progress=False,
    )
    assert result.summaries[0]["n"] == 2 and result.summaries[0]["proactive_turns"] is not None


@pytest.mark.parametrize(
    ("task", "overrides", "method"),
    [
        ("Courier", {"aopd": False, "turn_credit": False}, "grpo"),
        ("Courier", {"aopd": False}, "siavpo-no-aopd"),
        (
            "Merchant",
            {"turn_credit": False, "aopd_direction": "reverse", "stpr_views": "both"},
            "siavpo-no-stpr",
        ),
    ],
)
def test_baselines_and_ablations_train(
    tmp_path: Path, task: str, overrides: dict[str, Any], method: str
) -> None:
    out = train_siavpo(_config(tmp_path, task, iterations=1, user="lenient", **overrides))
    info = json.loads((out / "checkpoint.json").read_text())["info"]
    assert info["method"] == method
    assert info["teachers_per_group"] == (0 if "aopd" in overrides else 2)
    if not overrides.get("aopd", True):
        assert "teacher_acc" not in info["curve"][0]


def test_a_run_over_listening_moves_trains_and_plays_its_moves(tmp_path: Path) -> None:
    from dialogue_gym.env.wrappers.concern_actions import ListeningMoves

    out = train_siavpo(_config(tmp_path, "P4G", iterations=1, view="concern"))
    info = json.loads((out / "checkpoint.json").read_text())["info"]
    card = load_card("p4g")
    moves = ListeningMoves(card)
    assert info["view"] == "concern" and info["n_actions"] == len(moves.names)
    # P_int reads an answer move as meeting the unlock conditions of its concern.
    assert "unlock:answer:affordability" in info["privileged_names"]
    agent = siavpo(card, checkpoint=str(out))
    env = dialogue_gym.make("P4G-hard", encoder="hashing")
    observations, _ = env.reset(seed=3)
    agent.reset(seed=3)
    wordings = {w for name in moves.names for w in moves.wordings(name)}
    while env.agents:
        line = agent.act(observations["system"])
        assert agent.last_strategy in moves.names
        assert line in wordings or line.startswith("It sounds like ") or line == "I hear you."
        observations, *_ = env.step({"system": line})
    with pytest.raises(ValueError, match="policy strategy"):
        _config(tmp_path, view="concern", policy="lm")


def test_training_is_reproducible(tmp_path: Path, trained: Path) -> None:
    again = train_siavpo(_config(tmp_path))
    assert (again / "policy.pt").read_bytes() == (trained / "policy.pt").read_bytes()


def test_cli_help_and_bad_input(tmp_path: Path, trained: Path, capsys: Any) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"], prog="dialogue-gym train siavpo")
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    for flag in ("--lambda-st", "--no-aopd", "--teacher-fraction", "--credit-reinforce"):
        assert flag in help_text
    with pytest.raises(SystemExit):
        parse_config(SiavpoConfig, ["--task", "Merchant", "--out", "x", "--user", "grumpy"])
    bad = [
        {"group_size": 0},
        {"teacher_fraction": 1.0},
        {"credit_suppress": 2.0},
        {"lambda_st": -1.0},
        {"torch_threads": 0},
        {"aopd": True, "group_size": 1},
    ]
    for values in bad:
        with pytest.raises(ValueError):
            _config(tmp_path, **values)
    with pytest.raises(ValueError, match="CognitiveUser"):
        make_envs(load_card("cb"), "hard", 1, make_encoder("hashing"))
    with pytest.raises(FileNotFoundError):
        train_siavpo(_config(tmp_path, task="NoSuchTask"))
    with pytest.raises(CheckpointError, match="overwrite"):
        train_siavpo(_config(tmp_path, out=trained))


def test_agent_rejects_bad_checkpoints(tmp_path: Path, trained: Path) -> None:
    merchant, courier = load_card("merchant"), load_card("courier")
    with pytest.raises(CheckpointNotFoundError):
        siavpo(merchant, checkpoint=None)
    with pytest.raises(CheckpointNotFoundError):
        siavpo(merchant, checkpoint=str(tmp_path / "missing"))
    with pytest.raises(CheckpointMismatchError, match="task"):
        siavpo(courier, checkpoint=str(trained))
    broken = tmp_path / "broken"
    broken.mkdir()
    for item in trained.iterdir():
        if item.is_file():
            (broken / item.name).write_bytes(item.read_bytes())
    (broken / "policy.pt").write_bytes(b"not a state dict")
    with pytest.raises(CorruptCheckpointError):
        siavpo(merchant, checkpoint=str(broken))
    manifest = json.loads((trained / "checkpoint.json").read_text())
    manifest["kind"] = "planner"
    (broken / "checkpoint.json").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointMismatchError, match="planner"):
        siavpo(merchant, checkpoint=str(broken))
    episode = StrategyViewPolicy(merchant, "hashing").new_episode(0)
    with pytest.raises(ValueError, match="out of range"):
        episode.act(99)
    net = StrategyViewNet(3, 2, 4)
    with pytest.raises(ValueError, match="does not fit"):
        StrategyViewPolicy(merchant, "hashing", net=net)
